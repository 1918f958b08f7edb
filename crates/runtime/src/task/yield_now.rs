//! [`yield_now`]: let other tasks run.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::coop;

/// Yields to the scheduler once, so that other ready tasks run before this one is polled
/// again. On a multi-threaded runtime the task goes to the back of its worker's queue, behind
/// those already in it and the next task spawned or woken from outside the workers. On a
/// current-thread runtime it is held back until the queue is empty (or the runtime has run
/// its most tasks between two looks at `block_on`'s future), behind every task queued
/// meanwhile and the future in `block_on` if it was woken; tasks held back together run
/// again last first, as on tokio.
///
/// # Examples
///
/// ```
/// # escapement::Runtime::new().unwrap().block_on(async {
/// escapement::task::yield_now().await;
/// # });
/// ```
pub async fn yield_now() {
    YieldNow { yielded: false }.await
}

struct YieldNow {
    yielded: bool,
}

impl Future for YieldNow {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.yielded {
            return Poll::Ready(());
        }
        self.yielded = true;
        coop::note_yield();
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}
