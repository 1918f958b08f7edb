//! [`ThreadHooks`]: what the builder sets for every thread a runtime starts, its workers and
//! its blocking threads alike: a stack size, and callbacks run first and last on the thread.

use std::fmt;
use std::panic::{self, AssertUnwindSafe};

use crate::loom::{thread, CallbackArc};

/// A callback run on a thread the runtime starts.
pub(crate) type ThreadCallback = CallbackArc<dyn Fn() + Send + Sync>;

/// How the runtime starts its threads, beyond their names.
#[derive(Clone, Default)]
pub(crate) struct ThreadHooks {
    pub(crate) stack_size: Option<usize>,
    pub(crate) on_start: Option<ThreadCallback>,
    pub(crate) on_stop: Option<ThreadCallback>,
}

impl ThreadHooks {
    /// A thread builder for a thread named `name`, with the stack size set.
    pub(crate) fn builder(&self, name: String) -> thread::Builder {
        let builder = thread::Builder::new().name(name);
        match self.stack_size {
            Some(bytes) => builder.stack_size(bytes),
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
}

/// Calls `callback`, if any, containing a panic.
fn call(callback: Option<&ThreadCallback>) {
    if let Some(callback) = callback {
        let _ = panic::catch_unwind(AssertUnwindSafe(|| callback()));
    }
}

impl fmt::Debug for ThreadHooks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadHooks")
            .field("stack_size", &self.stack_size)
            .field("on_start", &self.on_start.is_some())
            .field("on_stop", &self.on_stop.is_some())
            .finish()
    }
}
