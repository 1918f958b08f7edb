//! [`spawn_blocking`]: run blocking code on the runtime's blocking threads.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::{BlockingPool, Job, Notified, Schedule, Task};
use crate::runtime::Handle;
use crate::JoinHandle;

/// Runs `f` on one of the runtime's blocking threads and returns a handle to await its
/// result.
///
/// Use it for work that blocks (file or DNS calls, heavy computation) instead of blocking a
/// worker thread. The closure counts as busy for the paused clock from this call until it
/// returns: meanwhile a paused runtime does not auto-advance, so a test sees the blocking
/// work finish before time jumps.
///
/// The threads are pooled: a thread that finishes a closure takes the next one, and exits
/// after waiting [`Builder::thread_keep_alive`](crate::Builder::thread_keep_alive) (default
/// 10 s) without one. At most
/// [`Builder::max_blocking_threads`](crate::Builder::max_blocking_threads) (default 512) run
/// at once; more closures wait in a queue, in the order they came. A panic in `f` becomes a
/// [`JoinError`](crate::JoinError). A closure is not cancelled when the runtime shuts down:
/// every closure already passed to `spawn_blocking` runs to the end, and awaiting its handle
/// afterwards still gives the result; the threads exit once the queue is empty.
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
/// If called outside a runtime, or if a new thread was needed and could not be spawned.
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

/// Hands a blocking task to the runtime's blocking pool.
#[derive(Clone)]
struct BlockingSchedule {
    handle: Handle,
}

impl Schedule for BlockingSchedule {
    #[track_caller]
    fn schedule(&self, task: Notified<Self>) {
        let job = BlockingJob {
            handle: self.handle.clone(),
            task,
        };
        BlockingPool::spawn(&self.handle.shared.blocking, job);
    }

    fn release(&self, _task: &Task<Self>) -> Option<Task<Self>> {
        None
    }
}

/// A blocking task waiting for, or running on, a pool thread.
pub(crate) struct BlockingJob {
    handle: Handle,
    task: Notified<BlockingSchedule>,
}

impl Job for BlockingJob {
    /// Runs the task inside the runtime's context (so the closure can spawn tasks and read
    /// the runtime's clock), then counts it idle for the paused clock.
    fn run(self) {
        let _enter = self.handle.enter();
        self.task.run();
        self.handle.driver().deactivate();
    }
}
