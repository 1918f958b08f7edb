//! [`Handle`]: a cheap, clonable reference to a runtime.

use std::error::Error;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;

use super::context::{self, ContextGuard};
use crate::loom::Arc;
use crate::scheduler::Shared;
use crate::task::Schedule;
use crate::time::driver::Driver;
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
        context::with_handle(Handle::clone).ok_or(TryCurrentError(()))
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
    /// The task starts on some worker thread right away. If the runtime has shut down, the
    /// task is cancelled at once: awaiting its handle gives a cancelled [`JoinError`].
    ///
    /// [`JoinError`]: crate::JoinError
    pub fn spawn<F>(&self, future: F) -> JoinHandle<F::Output>
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
    pub fn enter(&self) -> EnterGuard<'_> {
        EnterGuard {
            _context: context::enter(self.clone()),
            _handle: PhantomData,
        }
    }

    /// A snapshot of the runtime's timer metrics; see [`RuntimeMetrics`].
    ///
    /// [`RuntimeMetrics`]: crate::RuntimeMetrics
    pub fn metrics(&self) -> crate::RuntimeMetrics {
        self.driver().metrics_snapshot(self.shared.remotes.len())
    }

    pub(crate) fn driver(&self) -> &Driver {
        &self.shared.driver
    }

    pub(crate) fn driver_arc(&self) -> Arc<Driver> {
        self.shared.driver.clone()
    }
}

impl fmt::Debug for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handle")
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
pub struct TryCurrentError(());

impl fmt::Display for TryCurrentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("this thread is not in an escapement runtime")
    }
}

impl Error for TryCurrentError {}
