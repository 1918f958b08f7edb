//! [`yield_now`]: let other tasks run.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::coop;

/// Yields to the scheduler once: the task goes to the back of its worker's queue, and other
/// ready tasks run before it is polled again: those already in that queue, the next task
/// spawned or woken from outside the workers, and, on a current-thread runtime, the future
/// in `block_on` if it was woken.
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
