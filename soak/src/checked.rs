//! Task futures under watch: never polled after they complete nor by two threads at once,
//! and counted until they are dropped, so that a round can tell that its shutdown dropped
//! them all.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::Arc;
use std::task::{Context, Poll};

use escapement::JoinHandle;

use crate::round::{fail, Round};

/// Counts a task future alive until it drops.
struct Alive(Arc<Round>);

impl Drop for Alive {
    fn drop(&mut self) {
        self.0.alive.fetch_sub(1, SeqCst);
    }
}

/// Counts a detached child until it finishes.
pub(crate) struct Detached(Arc<Round>);

impl Detached {
    pub(crate) fn new(round: &Arc<Round>) -> Detached {
        round.detached.fetch_add(1, SeqCst);
        Detached(round.clone())
    }
}

impl Drop for Detached {
    fn drop(&mut self) {
        self.0.detached.fetch_sub(1, SeqCst);
    }
}

/// A task's future, checked: never polled after it completed, nor by two threads at once,
/// and counted alive until dropped.
pub(crate) struct Checked<F> {
    inner: Pin<Box<F>>,
    in_poll: AtomicBool,
    done: bool,
    alive: Alive,
}

pub(crate) fn checked<F: Future>(round: &Arc<Round>, future: F) -> Checked<F> {
    round.alive.fetch_add(1, SeqCst);
    Checked {
        inner: Box::pin(future),
        in_poll: AtomicBool::new(false),
        done: false,
        alive: Alive(round.clone()),
    }
}

pub(crate) fn spawn_checked<F>(round: &Arc<Round>, future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    escapement::spawn(checked(round, future))
}

impl<F: Future> Future for Checked<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // `Checked` is `Unpin`: its future is pinned in its own box.
        let this = self.get_mut();
        let round = &this.alive.0;
        if this.done {
            fail!(round, "a task was polled after it completed");
        }
        if this.in_poll.swap(true, SeqCst) {
            fail!(round, "a task was polled by two threads at once");
        }
        let poll = this.inner.as_mut().poll(cx);
        this.in_poll.store(false, SeqCst);
        this.done = poll.is_ready();
        poll
    }
}
