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
/// work finish before time jumps (as with tokio, a closure that waits for one of the
/// runtime's timers then waits until another thread calls
/// [`time::advance`](crate::time::advance)).
///
/// The threads are pooled: a thread that finishes a closure takes the next one, and exits
/// after waiting [`Builder::thread_keep_alive`](crate::Builder::thread_keep_alive) (default
/// 10 s) without one. At most
/// [`Builder::max_blocking_threads`](crate::Builder::max_blocking_threads) (default 512) run
/// at once; more closures wait in a queue, in the order they came. A panic in `f` becomes a
/// [`JoinError`](crate::JoinError).
///
/// A closure cannot be stopped once it has started: neither
/// [`JoinHandle::abort`](crate::JoinHandle::abort) nor the runtime's shutdown stops it, and
/// awaiting its handle afterwards still gives the result. A closure still queued when the
/// runtime shuts down runs all the same, as tokio's do. Dropping the runtime waits for the
/// closures that have started or are queued
/// ([`Runtime::shutdown_timeout`](crate::Runtime::shutdown_timeout) up to its timeout; neither
/// waits in async code or in one of these closures), then the threads exit. A closure
/// aborted before a thread takes it, or passed after the shutdown, never runs: it is
/// dropped, and its handle gives a cancelled [`JoinError`](crate::JoinError), as with tokio.
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
/// If called outside a runtime, or if a new thread was needed, the system refused to start
/// it, and no blocking thread is left to run the closure (then every closure still queued is
/// cancelled: its handle gives a cancelled [`JoinError`](crate::JoinError)). With a blocking
/// thread left, the closure waits for it instead.
#[track_caller]
pub fn spawn_blocking<F, R>(f: F) -> JoinHandle<R>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    let handle = Handle::current_for("escapement::task::spawn_blocking");
    super::boxed_if_large!(Box::new, f => spawn_blocking_on(handle, f))
}

/// [`spawn_blocking`] on the runtime `handle` names.
#[track_caller]
pub(crate) fn spawn_blocking_on<F, R>(handle: Handle, f: F) -> JoinHandle<R>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
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
        // The closure is this task's one poll, however long: no budget (see `task::coop`).
        Poll::Ready(super::coop::without_budget(f))
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

    /// Cancels the task (its handle sees a cancelled `JoinError`) and counts it idle.
    fn cancel(self) {
        self.task.cancel();
        self.handle.driver().deactivate();
    }

    fn runtime(&self) -> Option<Handle> {
        Some(self.handle.clone())
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::time::{sleep, Duration, Instant};

    /// What the pool does with a queued job when it has no thread left to run it.
    #[test]
    fn a_cancelled_job_cancels_its_handle_and_lets_the_clock_advance() {
        let rt = crate::Builder::new()
            .worker_threads(1)
            .start_paused(true)
            .build()
            .expect("a runtime");
        let handle = rt.handle().clone();
        let id = handle.shared.owned.next_id();
        let scheduler = BlockingSchedule {
            handle: handle.clone(),
        };
        // As `spawn_blocking` does, up to the pool.
        handle.driver().activate();
        let (task, notified, join) = super::super::new(
            BlockingTask {
                f: Some(|| panic!("a cancelled job ran")),
            },
            scheduler,
            id,
        );
        drop(task);
        BlockingJob {
            handle,
            task: notified,
        }
        .cancel();
        // On its own thread, so a clock stuck for an hour fails the test instead of hanging it.
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            rt.block_on(async {
                let error: crate::JoinError = join.await.unwrap_err();
                assert!(error.is_cancelled());
                // Counted idle again: the paused clock jumps over an hour at once.
                let start = Instant::now();
                sleep(Duration::from_secs(3600)).await;
                assert!(start.elapsed() >= Duration::from_secs(3600));
            });
            done.send(()).unwrap();
        });
        finished
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("the handle and the paused clock both moved on");
    }
}
