//! [`Handle`]: a cheap, clonable reference to a runtime.

use std::error::Error;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::panic::{RefUnwindSafe, UnwindSafe};
use std::pin::pin;
use std::task::{Context, Poll};

use super::context::{self, BlockOn, ContextGuard};
use crate::loom::Arc;
use crate::park::Parker;
use crate::scheduler::{current, worker, Shared};
use crate::task::{coop, Schedule};
use crate::time::driver::Driver;
use crate::time::driver_ref::{DriverRef, InShard};
use crate::JoinHandle;

/// A handle to a runtime: spawns tasks onto it and enters its context from any thread.
///
/// Clones are cheap (one reference count). A handle keeps the runtime's shared state alive,
/// not its threads: once the [`Runtime`](crate::Runtime) is dropped, tasks spawned through a
/// handle are cancelled at once.
#[derive(Clone)]
pub struct Handle {
    pub(crate) shared: Arc<Shared>,
}

// A panic that unwinds past a handle (out of `block_on`, or out of code that spawned) leaves
// the runtime consistent: its state sits behind locks that do not poison and atomics, each
// update of which completes before any user code runs, and a panicking task is caught and
// becomes a `JoinError`. So a handle may be used again after one, as in tokio.
impl UnwindSafe for Handle {}
impl RefUnwindSafe for Handle {}

impl Handle {
    /// The handle of the runtime this thread is in.
    ///
    /// # Examples
    ///
    /// ```
    /// # let rt = escapement::Runtime::new().unwrap();
    /// rt.block_on(async {
    ///     let handle = escapement::Handle::current();
    ///     let answer = handle.spawn(async { 42 }).await.unwrap();
    ///     assert_eq!(answer, 42);
    /// });
    /// ```
    ///
    /// # Panics
    ///
    /// If the thread is not in a runtime; [`try_current`](Handle::try_current) does not.
    #[track_caller]
    pub fn current() -> Handle {
        Handle::current_for("escapement::Handle::current")
    }

    /// The handle of the runtime this thread is in, if any.
    ///
    /// # Errors
    ///
    /// [`TryCurrentError`] when the thread is not in a runtime: not a worker, not inside
    /// `block_on`, and under no [`enter`](Handle::enter) guard.
    pub fn try_current() -> Result<Handle, TryCurrentError> {
        match context::try_with_handle(Handle::clone) {
            Ok(Some(handle)) => Ok(handle),
            Ok(None) => Err(TryCurrentError { destroyed: false }),
            Err(context::Destroyed) => Err(TryCurrentError { destroyed: true }),
        }
    }

    /// The current handle, or a panic naming `what` needed it.
    #[track_caller]
    pub(crate) fn current_for(what: &str) -> Handle {
        Handle::with_current(what, Handle::clone)
    }

    /// Runs `f` with the current handle, without cloning it; panics naming `what` needed it
    /// if the thread is in no runtime.
    #[track_caller]
    pub(crate) fn with_current<R>(what: &str, f: impl FnOnce(&Handle) -> R) -> R {
        match context::with_handle(f) {
            Some(result) => result,
            None => outside_runtime(what),
        }
    }

    /// Spawns a task onto the runtime, returning a handle to await its output.
    ///
    /// The task starts on some worker thread right away; on a current-thread runtime, on the
    /// thread in `block_on`, once its future yields, or at the next `block_on` if none is
    /// running. If the runtime has shut down, the
    /// task is cancelled at once: awaiting its handle gives a cancelled [`JoinError`].
    ///
    /// [`JoinError`]: crate::JoinError
    pub fn spawn<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        crate::task::boxed_if_large!(Box::pin, future => self.spawn_task(future))
    }

    /// [`spawn`](Self::spawn), once a large future is boxed.
    fn spawn_task<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        // Relaxed: a counter for metrics.
        self.shared
            .spawned
            .fetch_add(1, crate::loom::Ordering::Relaxed);
        let (join, notified) = self.shared.owned.bind(future, self.clone());
        if let Some(notified) = notified {
            self.schedule(notified);
        }
        join
    }

    /// Runs a blocking closure on the runtime's blocking threads and returns a handle to await
    /// its result; see [`task::spawn_blocking`](crate::task::spawn_blocking), which calls this
    /// with the current runtime's handle.
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
        crate::task::boxed_if_large!(Box::new, f => crate::task::spawn_blocking_on(self.clone(), f))
    }

    /// Runs `future` to completion on this thread, which sleeps whenever the future is
    /// pending, with this runtime as the thread's current one. Tasks spawned meanwhile run on
    /// the worker threads. While it sleeps, the thread also fires timers that come due while
    /// worker 0 is busy elsewhere.
    ///
    /// On a runtime from [`Builder::new_current_thread`](crate::Builder::new_current_thread)
    /// this thread runs the runtime's tasks and timers too, between polls of the future,
    /// unless another thread's `block_on` is running them; it then takes them over when that
    /// one returns. Unlike tokio's, this method drives such a runtime as
    /// [`Runtime::block_on`](crate::Runtime::block_on) does.
    ///
    /// It works from any thread that is not one of a runtime's workers, for as long as the
    /// handle lives. Once the [`Runtime`](crate::Runtime) is dropped, tasks spawned from the
    /// future are cancelled at once and its timers panic when polled, as for any handle.
    ///
    /// # Examples
    ///
    /// ```
    /// let rt = escapement::Runtime::new().unwrap();
    /// let handle = rt.handle().clone();
    /// let answer = std::thread::spawn(move || handle.block_on(async { 6 * 7 }))
    ///     .join()
    ///     .unwrap();
    /// assert_eq!(answer, 42);
    /// ```
    ///
    /// # Panics
    ///
    /// If called on a worker thread of a runtime, or inside another `block_on`: blocking
    /// there would stall the tasks that thread should run. Inside the closure of
    /// [`block_in_place`](crate::task::block_in_place) the worker has moved to another
    /// thread, and it works.
    #[track_caller]
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        if worker::is_nonblocking_worker_thread() {
            // A current-thread runtime's worker is the thread in its `block_on`: say so, as
            // its user never started a worker.
            if worker::is_current_thread_worker() {
                panic!(
                    "block_on was called inside another block_on, that of a current-thread \
                     runtime, which runs its tasks on this thread; await the future instead"
                );
            }
            panic!(
                "block_on was called on a runtime worker thread; \
                 await the future instead of blocking the worker"
            );
        }
        let flavor = if self.shared.core_slot.is_some() {
            BlockOn::CurrentThread
        } else {
            BlockOn::MultiThread
        };
        let Some(_blocking) = context::enter_blocking(flavor) else {
            panic!("block_on was called inside another block_on");
        };
        let _context = context::enter(self.clone());
        // The future's timers count in shard 0, as they would from any thread outside the
        // runtime, but from this thread's credit (`time::driver_ref`).
        let _shard = InShard::enter(&self.shared.driver, 0);
        let _active = Active::new(self.driver_arc());
        let mut future = pin!(future);
        if let Some(slot) = &self.shared.core_slot {
            return current::block_on(self, slot, future);
        }
        let parker = Parker::new(self.driver_arc());
        let waker = parker.unparker().into_waker();
        let mut cx = Context::from_waker(&waker);
        loop {
            if let Poll::Ready(output) = coop::budget(|| future.as_mut().poll(&mut cx)) {
                return output;
            }
            parker.park_standing_in();
        }
    }

    /// Makes this runtime the current one on this thread until the guard is dropped, so
    /// [`spawn`](crate::spawn), [`sleep`](crate::time::sleep) and the rest work outside the
    /// runtime's own threads.
    ///
    /// # Examples
    ///
    /// ```
    /// # let rt = escapement::Runtime::new().unwrap();
    /// let _guard = rt.handle().enter();
    /// let sleep = escapement::time::sleep(std::time::Duration::from_millis(1));
    /// drop(sleep);
    /// ```
    ///
    /// # Panics
    ///
    /// If the thread is exiting and its runtime context is already gone (a thread-local's
    /// destructor that runs after the runtime's own).
    #[track_caller]
    pub fn enter(&self) -> EnterGuard<'_> {
        EnterGuard {
            _context: context::enter(self.clone()),
            _handle: PhantomData,
        }
    }

    /// The name [`Builder::name`](crate::Builder::name) gave the runtime, if any.
    ///
    /// # Examples
    ///
    /// ```
    /// let rt = escapement::Builder::new().name("ingest").build().unwrap();
    /// assert_eq!(rt.handle().name(), Some("ingest"));
    /// assert_eq!(escapement::Runtime::new().unwrap().handle().name(), None);
    /// ```
    pub fn name(&self) -> Option<&str> {
        self.shared.name.as_deref()
    }

    /// The runtime's [`Id`](super::Id): the same through every handle to it, and no other
    /// runtime of the process has it.
    pub fn id(&self) -> super::Id {
        self.shared.id
    }

    /// The kind of runtime this is: [`RuntimeFlavor::CurrentThread`] for one from
    /// [`Builder::new_current_thread`](crate::Builder::new_current_thread), whose tasks run
    /// on the thread in `block_on`, and [`RuntimeFlavor::MultiThread`] for one with worker
    /// threads of its own.
    ///
    /// # Examples
    ///
    /// ```
    /// use escapement::runtime::{Builder, RuntimeFlavor};
    ///
    /// let rt = Builder::new_current_thread().build().unwrap();
    /// assert_eq!(rt.handle().runtime_flavor(), RuntimeFlavor::CurrentThread);
    /// let rt = Builder::new().build().unwrap();
    /// assert_eq!(rt.handle().runtime_flavor(), RuntimeFlavor::MultiThread);
    /// ```
    pub fn runtime_flavor(&self) -> RuntimeFlavor {
        if self.shared.core_slot.is_some() {
            RuntimeFlavor::CurrentThread
        } else {
            RuntimeFlavor::MultiThread
        }
    }

    /// A view of the runtime's metrics, read when its methods are called; see
    /// [`RuntimeMetrics`].
    ///
    /// [`RuntimeMetrics`]: crate::RuntimeMetrics
    pub fn metrics(&self) -> crate::RuntimeMetrics {
        crate::RuntimeMetrics::new(self.clone())
    }

    pub(crate) fn driver(&self) -> &Driver {
        &self.shared.driver
    }

    pub(crate) fn driver_arc(&self) -> Arc<Driver> {
        self.shared.driver.clone()
    }

    /// A reference to the timer driver for a timer made on this thread.
    #[inline]
    pub(crate) fn timer_driver(&self) -> DriverRef {
        DriverRef::new(&self.shared.driver)
    }
}

impl fmt::Debug for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handle")
            .field("name", &self.name())
            .field("shared", &self.shared)
            .finish()
    }
}

#[track_caller]
#[cold]
fn outside_runtime(what: &str) -> ! {
    panic!(
        "{what} must be called from inside an escapement runtime: \
         in Runtime::block_on, in a spawned task, or under Handle::enter"
    )
}

/// The kinds of runtime, as tokio names them; see [`Handle::runtime_flavor`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RuntimeFlavor {
    /// Tasks run on the thread that calls `block_on`, while it is in `block_on`: a runtime
    /// from [`Builder::new_current_thread`](crate::Builder::new_current_thread).
    CurrentThread,
    /// Tasks run on worker threads of the runtime's own.
    MultiThread,
}

/// Keeps a runtime current on this thread; see [`Handle::enter`]. Guards must be dropped in
/// the reverse order they were made.
#[must_use = "the runtime is current only while the guard lives"]
pub struct EnterGuard<'a> {
    _context: ContextGuard,
    _handle: PhantomData<&'a Handle>,
}

impl fmt::Debug for EnterGuard<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EnterGuard").finish_non_exhaustive()
    }
}

/// The thread is in no runtime; returned by [`Handle::try_current`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TryCurrentError {
    /// The thread is exiting and its thread-locals are gone, so whether it was in a runtime
    /// cannot be read.
    destroyed: bool,
}

impl TryCurrentError {
    /// Whether the thread is simply in no runtime: not a worker, not inside `block_on`, and
    /// under no [`Handle::enter`] guard.
    pub fn is_missing_context(&self) -> bool {
        !self.destroyed
    }

    /// Whether the question was asked while the thread was exiting, from the destructor of a
    /// thread-local, after the runtime's own thread-locals were gone.
    pub fn is_thread_local_destroyed(&self) -> bool {
        self.destroyed
    }
}

impl fmt::Display for TryCurrentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.destroyed {
            f.write_str(
                "the current escapement runtime cannot be read: the thread is exiting and \
                 its thread-locals are gone",
            )
        } else {
            f.write_str("this thread is not in an escapement runtime")
        }
    }
}

impl Error for TryCurrentError {}

/// Counts a `block_on` thread active while it runs (see `crate::park`).
struct Active(Arc<Driver>);

impl Active {
    fn new(driver: Arc<Driver>) -> Active {
        driver.activate();
        Active(driver)
    }
}

impl Drop for Active {
    fn drop(&mut self) {
        self.0.deactivate();
    }
}
