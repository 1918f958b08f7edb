//! [`Runtime`]: owns the worker threads (none for a current-thread runtime); runs a future to
//! completion on the calling thread.

use std::fmt;
use std::future::Future;
use std::io;
use std::panic::{RefUnwindSafe, UnwindSafe};
use std::time::Duration;

use super::{context, Builder, EnterGuard, Handle};
use crate::loom::thread::JoinHandle as ThreadHandle;
use crate::scheduler::worker;
use crate::time::driver_ref::DriverRef;
use crate::JoinHandle;

/// An async runtime with a timer driver: multi-threaded, or current-thread when built by
/// [`Builder::new_current_thread`].
///
/// # Examples
///
/// ```
/// use escapement::time::{sleep, Duration};
///
/// let rt = escapement::Runtime::new().unwrap();
/// let answer = rt.block_on(async {
///     let task = escapement::spawn(async {
///         sleep(Duration::from_millis(1)).await;
///         42
///     });
///     task.await.unwrap()
/// });
/// assert_eq!(answer, 42);
/// ```
pub struct Runtime {
    handle: Handle,
    threads: Vec<ThreadHandle<()>>,
    /// A count in every shard of the timer driver while the runtime lives, so that timers
    /// made and dropped on a worker never bring its shard's count to zero (`DriverRef`).
    /// Dropped after the shutdown.
    _timer_holds: Vec<DriverRef>,
}

// As for `Handle`: a panic unwinding out of `block_on` leaves the runtime usable.
impl UnwindSafe for Runtime {}
impl RefUnwindSafe for Runtime {}

impl Runtime {
    /// A runtime with one worker thread per available CPU.
    ///
    /// # Errors
    ///
    /// As [`Builder::build`].
    pub fn new() -> io::Result<Runtime> {
        Builder::new().build()
    }

    pub(crate) fn from_parts(handle: Handle, threads: Vec<ThreadHandle<()>>) -> Runtime {
        let _timer_holds = DriverRef::every_shard(&handle.shared.driver);
        Runtime {
            handle,
            threads,
            _timer_holds,
        }
    }

    /// After a failed build: counts the workers that never started as exited.
    pub(crate) fn abandon_unstarted(&self, count: usize) {
        for _ in 0..count {
            self.handle.shared.worker_exited();
        }
    }

    /// Runs `future` to completion on this thread, which sleeps whenever the future is
    /// pending. Tasks spawned meanwhile run on the worker threads, or on this thread for a
    /// runtime from [`Builder::new_current_thread`]. While it sleeps, the thread also fires
    /// timers that come due while worker 0 is busy elsewhere. See [`Handle::block_on`],
    /// which this calls.
    ///
    /// # Panics
    ///
    /// If called on a worker thread of a runtime, or inside another `block_on`: blocking
    /// there would stall the tasks that thread should run. Inside the closure of
    /// [`block_in_place`](crate::task::block_in_place) the worker has moved to another
    /// thread, and it works.
    #[track_caller]
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        self.handle.block_on(future)
    }

    /// Spawns a task; see [`Handle::spawn`].
    pub fn spawn<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        crate::task::boxed_if_large!(Box::pin, future => self.handle.spawn(future))
    }

    /// Runs a blocking closure on the runtime's blocking threads; see
    /// [`Handle::spawn_blocking`].
    ///
    /// # Panics
    ///
    /// If a new blocking thread was needed, the system refused to start it, and no blocking
    /// thread is left to run the closure.
    #[track_caller]
    pub fn spawn_blocking<F, R>(&self, f: F) -> JoinHandle<R>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        crate::task::boxed_if_large!(Box::new, f => self.handle.spawn_blocking(f))
    }

    /// A view of the runtime's metrics, read when its methods are called; see
    /// [`RuntimeMetrics`].
    ///
    /// [`RuntimeMetrics`]: crate::RuntimeMetrics
    pub fn metrics(&self) -> crate::RuntimeMetrics {
        self.handle.metrics()
    }

    /// The runtime's handle.
    pub fn handle(&self) -> &Handle {
        &self.handle
    }

    /// Makes this runtime current on this thread; see [`Handle::enter`].
    #[track_caller]
    pub fn enter(&self) -> EnterGuard<'_> {
        self.handle.enter()
    }

    /// Shuts the runtime down, waiting at most `timeout` in all for worker threads busy in a
    /// task poll to come back, for `spawn_blocking` closures to return, and for the threads'
    /// stop callbacks ([`Builder::on_thread_stop`](crate::Builder::on_thread_stop)); threads
    /// still busy then are left to finish on their own.
    ///
    /// Every task is cancelled (its future dropped, by the workers as they leave, so a slow
    /// destructor delays a worker rather than this call) and every pending timer of the
    /// runtime is woken, never to fire: after the workers running their loop have left, and
    /// before the wait for a thread in the closure of a
    /// [`block_in_place`](crate::task::block_in_place), which may be waiting on one of those
    /// timers (its poll then panics). Blocking closures that have started run to the end,
    /// and so do those still queued, as tokio's; those passed after the shutdown are
    /// cancelled.
    ///
    /// Called from async code (a task of any runtime, a future in any `block_on`) or from
    /// one of the runtime's own blocking closures, it does not wait for the blocking
    /// closures: one of them may be waiting for the very future or closure that shuts the
    /// runtime down. On one of the runtime's own workers it waits for the other workers.
    ///
    /// A current-thread runtime's worker is the thread in `block_on` that drives it, which
    /// may be another thread's [`Handle::block_on`]: the shutdown waits for that thread's
    /// poll of its own future to return, as for a worker busy in a task's poll.
    pub fn shutdown_timeout(mut self, timeout: Duration) {
        self.shutdown(Some(timeout));
    }

    /// Shuts the runtime down without waiting for busy worker threads or blocking
    /// closures: [`shutdown_timeout`](Runtime::shutdown_timeout) with a zero timeout.
    pub fn shutdown_background(self) {
        self.shutdown_timeout(Duration::ZERO);
    }

    /// Shuts down: stop the workers, cancel every task, wake every timer, wait for the
    /// threads in closures of `block_in_place`, then for the blocking closures (not from
    /// async code or one of them), all within `timeout` (`None`: as long as they take).
    fn shutdown(&mut self, timeout: Option<Duration>) {
        let shared = &self.handle.shared;
        if shared.is_shutdown() && self.threads.is_empty() {
            return;
        }
        let deadline = timeout.and_then(|t| std::time::Instant::now().checked_add(t));
        shared.begin_shutdown();
        // A `block_on` that took a current-thread runtime's worker before the shutdown began
        // is counted live once the slot's lock has been taken since.
        if let Some(slot) = &shared.core_slot {
            slot.barrier();
        }
        // A runtime dropped on one of its own workers cannot wait for that worker, which is
        // in the poll doing the drop; it waits for the others. First for those running a
        // worker's loop: they cancel the tasks as they leave.
        let on_own_worker = worker::is_worker_of(shared);
        let in_own_closure = on_own_worker && worker::is_in_handed_off_closure(shared);
        let running = usize::from(on_own_worker && !in_own_closure);
        let running_exited = shared.wait_for_workers(running, false, deadline);
        // A current-thread runtime's worker left in its slot leaves here, as a worker thread
        // does at shutdown: what its queue holds is dropped.
        if let Some(core) = shared.core_slot.as_ref().and_then(|slot| slot.take()) {
            core.clear();
        }
        {
            // Inside the runtime's context, so what a task's future does as it is dropped
            // (spawn, read the handle, make a timer) finds its runtime, as on a worker.
            // Unless the thread is exiting and its context is gone (a runtime held by a
            // thread-local, dropped by its destructor).
            let _context = context::try_enter(self.handle.clone());
            // The workers that exited cancelled the tasks (`worker.rs`, `Exit`). Once they
            // all have, this finds none left, unless this thread is the only worker; a
            // worker still busy past the timeout cancels them when it exits, not this thread.
            // Before the timers are woken, so a future's drop still finds them working.
            if running_exited {
                shared.owned.close_and_shutdown_all();
            }
            shared.drain_injector();
            shared.drain_lifo_slots();
            shared.driver.shutdown();
        }
        // Then for the threads in the closure of a `block_in_place` that handed their worker
        // off, with the timers woken: one may be waiting on a timer of the runtime
        // (`Handle::block_on(sleep(d))`), whose poll now panics, as tokio's does.
        let others_exited = shared.wait_for_workers(usize::from(on_own_worker), true, deadline);
        // The threads a worker was handed to belong to the blocking pool, waited for below.
        // A thread cannot join itself: one the runtime started as a worker is left alone when
        // a thread-local's destructor drops the runtime there, after the worker's loop.
        let own_thread = worker::started_as_worker_of(shared);
        for (index, thread) in std::mem::take(&mut self.threads).into_iter().enumerate() {
            if own_thread == Some(index) {
                continue;
            }
            if (others_exited && !on_own_worker) || crate::loom::is_finished(&thread) {
                let _ = thread.join();
            }
        }
        // What the threads in closures woke as they left.
        shared.drain_injector();
        // Idle blocking threads exit now, busy ones once their closure returns and the queue
        // is empty; the queued closures run, those a future's drop passed to
        // `spawn_blocking` just above among them.
        shared.blocking.shutdown();
        // Not from async code or one of the closures: a closure may be waiting for the very
        // future or closure that is dropping the runtime. The closure of `block_in_place`
        // is blocking code, not async code, and waits as any thread outside a runtime does,
        // even on a blocking thread (one that ran a handed-off worker), which waits for the
        // pool's other threads.
        let in_async_code = worker::is_nonblocking_worker_thread() || context::is_blocking();
        if !in_async_code && !shared.blocking.runs_own_closure() {
            shared.blocking.wait_for_exit(deadline);
        }
    }
}

impl Drop for Runtime {
    /// Shuts down like [`shutdown_timeout`](Runtime::shutdown_timeout), waiting as long as
    /// worker threads take to finish their current poll and blocking closures take to
    /// return; then joins the blocking threads, as tokio does, so their thread-locals have
    /// been dropped.
    fn drop(&mut self) {
        self.shutdown(None);
    }
}

impl fmt::Debug for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runtime")
            .field("handle", &self.handle)
            .finish_non_exhaustive()
    }
}
