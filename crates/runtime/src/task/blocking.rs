//! [`spawn_blocking`]: run blocking code on a thread of its own.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::{Notified, Schedule, Task};
use crate::loom::thread;
use crate::runtime::Handle;
use crate::JoinHandle;

/// Runs `f` on a new thread and returns a handle to await its result.
///
/// Use it for work that blocks (file or DNS calls, heavy computation) instead of blocking a
/// worker thread. The thread counts as busy for the paused clock: while it runs, a paused
/// runtime does not auto-advance, so a test sees the blocking work finish before time jumps.
///
/// Each call starts one thread, which ends with `f`. A panic in `f` becomes a
/// [`JoinError`](crate::JoinError). The thread is not cancelled when the runtime shuts down:
/// it runs `f` to the end; awaiting the handle afterwards still gives the result.
///
/// # Examples
///
/// ```
/// # escapement::Runtime::new().unwrap().block_on(async {
/// let sum = escapement::task::spawn_blocking(|| (1..=100u64).sum::<u64>()).await.unwrap();
/// assert_eq!(sum, 5050);
/// # });
/// ```
///
/// # Panics
///
/// If called outside a runtime, or if the thread cannot be spawned.
#[track_caller]
pub fn spawn_blocking<F, R>(f: F) -> JoinHandle<R>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    let handle = Handle::current_for("escapement::task::spawn_blocking");
    let id = handle.shared.owned.next_id();
    let scheduler = BlockingSchedule { handle };
    // Busy from now until `f` returns, so a paused clock waits for it.
    scheduler.handle.driver().activate();
    let (task, notified, join) = super::new(BlockingTask { f: Some(f) }, scheduler.clone(), id);
    // No owned list holds blocking tasks: shutdown does not cancel them.
    drop(task);
    scheduler.schedule(notified);
    join
}

/// The future that runs the closure when first polled.
struct BlockingTask<F> {
    f: Option<F>,
}

impl<F> Unpin for BlockingTask<F> {}

impl<F: FnOnce() -> R, R> Future for BlockingTask<F> {
    type Output = R;

    fn poll(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<R> {
        let f = self.f.take().expect("a blocking task runs once");
        Poll::Ready(f())
    }
}

/// Runs a blocking task on a new thread, inside the runtime's context (so the closure can
/// spawn tasks and read the runtime's clock).
#[derive(Clone)]
struct BlockingSchedule {
    handle: Handle,
}

impl Schedule for BlockingSchedule {
    #[track_caller]
    fn schedule(&self, task: Notified<Self>) {
        let handle = self.handle.clone();
        thread::Builder::new()
            .name("escapement-blocking".to_owned())
            .spawn(move || {
                let _enter = handle.enter();
                task.run();
                handle.driver().deactivate();
            })
            .expect("failed to spawn a thread for spawn_blocking");
    }

    fn release(&self, _task: &Task<Self>) -> Option<Task<Self>> {
        None
    }
}
