//! [`ThreadHooks`]: what the builder sets for every thread a runtime starts, its workers and
//! its blocking threads alike: names, a stack size, callbacks run first and last on the
//! thread, and callbacks a worker runs around each park.

use std::fmt;

use crate::loom::{thread, CallbackArc};

/// A callback run on a thread the runtime starts.
pub(crate) type ThreadCallback = CallbackArc<dyn Fn() + Send + Sync>;

/// A callback that names a thread the runtime starts.
pub(crate) type NameCallback = CallbackArc<dyn Fn() -> String + Send + Sync>;

/// How the runtime names its threads.
#[derive(Clone, Default)]
pub(crate) enum ThreadNames {
    /// `escapement-worker-N` and `escapement-blocking`.
    #[default]
    Default,
    /// `{name}-N` and `{name}-blocking`, from
    /// [`Builder::thread_name`](crate::Builder::thread_name).
    Given(CallbackArc<str>),
    /// Whatever the callback returns, for every thread.
    Callback(NameCallback),
}

impl ThreadNames {
    /// The name of worker `index`'s thread.
    fn worker(&self, index: usize) -> String {
        match self {
            ThreadNames::Default => format!("escapement-worker-{index}"),
            ThreadNames::Given(name) => format!("{name}-{index}"),
            ThreadNames::Callback(name) => named(name, || ThreadNames::Default.worker(index)),
        }
    }

    /// The name of a blocking thread.
    fn blocking(&self) -> String {
        match self {
            ThreadNames::Default => "escapement-blocking".to_owned(),
            ThreadNames::Given(name) => format!("{name}-blocking"),
            ThreadNames::Callback(name) => named(name, || ThreadNames::Default.blocking()),
        }
    }
}

/// How the runtime starts its threads, and what its workers do around a park.
#[derive(Clone, Default)]
pub(crate) struct ThreadHooks {
    pub(crate) names: ThreadNames,
    pub(crate) stack_size: Option<usize>,
    pub(crate) on_start: Option<ThreadCallback>,
    pub(crate) on_stop: Option<ThreadCallback>,
    pub(crate) on_park: Option<ThreadCallback>,
    pub(crate) on_unpark: Option<ThreadCallback>,
}

/// The smallest stack a runtime thread gets, whatever `Builder::thread_stack_size` says: a
/// worker's first steal sets up the work-stealing queues' shared state, which in a debug
/// build overflows a stack of 16 KiB (the system's least).
const MIN_STACK_SIZE: usize = 64 * 1024;

impl ThreadHooks {
    /// A thread builder for worker `index`'s thread.
    pub(crate) fn worker_builder(&self, index: usize) -> thread::Builder {
        self.builder(self.names.worker(index))
    }

    /// A thread builder for a blocking thread.
    pub(crate) fn blocking_builder(&self) -> thread::Builder {
        self.builder(self.names.blocking())
    }

    /// A thread builder for a thread named `name`, with the stack size set (at least
    /// [`MIN_STACK_SIZE`]).
    fn builder(&self, name: String) -> thread::Builder {
        let builder = thread::Builder::new().name(name);
        match self.stack_size {
            Some(bytes) => builder.stack_size(bytes.max(MIN_STACK_SIZE)),
            None => builder,
        }
    }

    /// Runs `body`, a worker thread's work, after the start callback and before the stop
    /// callback, which runs even if `body` panics. (A blocking thread runs the callbacks
    /// itself, so that a shutdown waits for its stop callback, `pool.rs`.)
    pub(crate) fn run<R>(&self, body: impl FnOnce() -> R) -> R {
        /// Runs the stop callback when dropped, unwinding or not.
        struct Stop<'a>(&'a ThreadHooks);

        impl Drop for Stop<'_> {
            fn drop(&mut self) {
                self.0.stop();
            }
        }

        self.start();
        let _stop = Stop(self);
        body()
    }

    /// Runs the start callback, if any. A panic in a callback is reported by the panic
    /// hook and otherwise ignored: the thread goes on, so a runtime never loses a worker to
    /// one.
    pub(crate) fn start(&self) {
        call(self.on_start.as_ref());
    }

    /// Runs the stop callback, if any, containing a panic as [`start`](Self::start) does.
    pub(crate) fn stop(&self) {
        call(self.on_stop.as_ref());
    }

    /// Runs the park callback, if any, as a worker is about to park; a panic is contained.
    pub(crate) fn park(&self) {
        call(self.on_park.as_ref());
    }

    /// Runs the unpark callback, if any, as a worker is back from a park; a panic is
    /// contained.
    pub(crate) fn unpark(&self) {
        call(self.on_unpark.as_ref());
    }
}

/// Calls the name callback, containing a panic as [`call`] does: the thread then gets the
/// default name, as it does for a name with a NUL byte, at which the standard library's
/// thread start panics. A panic here or there would leave the thread counted but never
/// started (a blocking pool's shutdown would wait for it forever), or lose the worker being
/// handed off.
fn named(name: &NameCallback, default: impl FnOnce() -> String) -> String {
    crate::util::contain(|| name())
        .filter(|name| !name.contains('\0'))
        .unwrap_or_else(default)
}

/// Calls `callback`, if any, containing a panic.
fn call(callback: Option<&ThreadCallback>) {
    if let Some(callback) = callback {
        crate::util::contain(|| callback());
    }
}

impl fmt::Debug for ThreadHooks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadHooks")
            .field("names", &self.names)
            .field("stack_size", &self.stack_size)
            .field("on_start", &self.on_start.is_some())
            .field("on_stop", &self.on_stop.is_some())
            .field("on_park", &self.on_park.is_some())
            .field("on_unpark", &self.on_unpark.is_some())
            .finish()
    }
}

impl fmt::Debug for ThreadNames {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ThreadNames::Default => f.write_str("Default"),
            ThreadNames::Given(name) => f.debug_tuple("Given").field(name).finish(),
            ThreadNames::Callback(_) => f.write_str("Callback(..)"),
        }
    }
}
