//! [`RunUntil`], the future of [`LocalSet::run_until`]: one turn of the set per poll, its
//! future first, and the [`Turn`] that wakes the set's driver if the turn ends without its
//! look at the queue.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::LocalSet;

pin_project_lite::pin_project! {
    /// The future returned by [`LocalSet::run_until`]. Dropping it drops `F` and leaves the
    /// set's tasks in the set.
    #[must_use = "futures do nothing unless polled"]
    pub struct RunUntil<'a, F> {
        pub(super) set: &'a LocalSet,
        #[pin]
        pub(super) future: F,
    }
}

impl<F: Future> Future for RunUntil<'_, F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let set = *this.set;
        set.assert_not_running();
        let _enter = set.enter();
        // Before the queue is looked at, as in `LocalSet::poll`.
        set.shared.driver.register(cx.waker());
        let future = this.future;
        let mut turn = Turn { set, looked: false };
        set.driving(|| {
            // The future first: it may complete without waiting for the tasks.
            let polled = future.poll(cx);
            if polled.is_pending() {
                turn.looked = true;
                if set.run_ready() {
                    cx.waker().wake_by_ref();
                }
            }
            polled
        })
    }
}

/// A turn of `run_until`, which ends without a look at the queue when its future completes
/// or panics: a task that future spawned or woke on the way woke no one
/// (`Scheduler::schedule`), so the set's driver is woken here if tasks are queued. Another
/// driver of the set, polled earlier with the same waker (a `join!` of two `run_until`s), may
/// be waiting for them.
struct Turn<'a> {
    set: &'a LocalSet,
    looked: bool,
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        if self.looked || self.set.shared.queue.lock().is_empty() {
            return;
        }
        if let Some(waker) = self.set.shared.driver.take() {
            // Contained: this may run while the future's panic unwinds.
            crate::util::contain(|| waker.wake());
        }
    }
}

impl<F> fmt::Debug for RunUntil<'_, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunUntil").finish_non_exhaustive()
    }
}
