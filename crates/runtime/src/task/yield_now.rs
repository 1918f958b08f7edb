//! [`yield_now`]: let other tasks run.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::coop;

/// Yields to the scheduler once, so that other ready tasks run before this one is polled
/// again. As on tokio, the worker holds the task back until it has nothing else to run: its
/// queue is empty and so are the runtime's queue of tasks spawned or woken from outside the
/// workers (on a current-thread runtime, until `block_on`'s future has had its turn too, if it
/// was woken). Tasks held back together run again last first, except that those aborted
/// meanwhile go first (ahead of up to 32 others held by the same worker), as tokio's abort
/// queues a deferred task. So that other tasks cannot keep it waiting for ever, the worker also
/// queues it again, behind the tasks already queued, once every
/// [`event_interval`](crate::Builder::event_interval) turns (61 by default), as tokio's workers
/// wake their deferred tasks (on a current-thread runtime, once the runtime has run that many
/// tasks between two looks at `block_on`'s future). Another worker takes a held task only when
/// it finds nothing else to run, so that a worker blocked in a long poll does not keep it
/// waiting, where tokio's would.
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
