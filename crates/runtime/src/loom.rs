//! The facade for every concurrency primitive the runtime uses.
//!
//! Concurrent code imports atomics, `Arc`, `Mutex`, `Condvar`, `UnsafeCell`, threads and
//! thread-locals from here and nowhere else (`tests/facade.rs` holds the rest of the crate to
//! it). A normal build gets `std` and `parking_lot`; a build with `--cfg loom` gets
//! loom's models of the same things, so the loom suite explores the real code's
//! interleavings. Under Miri the lock and condition variable are `std`'s, which Miri can run.
//!
//! All of them share one API, shaped after loom's where they differ: `UnsafeCell` is
//! accessed through `with` and `with_mut`, `Mutex::lock` returns the guard directly, and
//! `Condvar::wait` takes the guard and hands it back.

#![allow(clippy::disallowed_types)]

pub(crate) use imp::*;

/// Declares one thread-local with a `const` initializer: with `std`, whose `const` form skips
/// the lazy-initialization check on every access; with loom, whose macro takes a plain
/// initializer.
#[cfg(not(loom))]
macro_rules! thread_local_const {
    ($(#[$attr:meta])* $vis:vis static $name:ident: $t:ty = $init:expr;) => {
        std::thread_local! { $(#[$attr])* $vis static $name: $t = const { $init }; }
    };
}

#[cfg(loom)]
macro_rules! thread_local_const {
    ($(#[$attr:meta])* $vis:vis static $name:ident: $t:ty = $init:expr;) => {
        loom::thread_local! { $(#[$attr])* $vis static $name: $t = $init; }
    };
}

pub(crate) use thread_local_const;

/// The key of the thread-local behind a `task_local!` key: `std`'s in both builds.
///
/// [`__task_local_thread_local!`](crate::__task_local_thread_local) declares that
/// thread-local in the crate that invokes `task_local!`, with `std::thread_local!`, whose key
/// is a `const` that a `static` initializer can hold; loom's is a `static`, and no loom model
/// uses task-locals.
pub(crate) type TaskLocalKey<T> = std::thread::LocalKey<T>;

/// Declares, in the crate that invokes `task_local!`, the thread-local that holds one
/// task-local key's current value (`None` outside every scope), and evaluates to its
/// [`TaskLocalKey`].
///
/// Exported for `task_local!`'s expansion only; it lives here because thread-locals are
/// declared in this facade and nowhere else.
#[doc(hidden)]
#[macro_export]
macro_rules! __task_local_thread_local {
    ($t:ty) => {{
        ::std::thread_local! {
            static __ESCAPEMENT_TASK_LOCAL: ::core::cell::RefCell<::core::option::Option<$t>> =
                const { ::core::cell::RefCell::new(::core::option::Option::None) };
        }
        __ESCAPEMENT_TASK_LOCAL
    }};
}

#[cfg(not(loom))]
mod imp {
    /// std's flag for a hint that is set once and never cleared, and orders nothing: whether
    /// a clock was ever paused, as a wake asks it (`time::clock`).
    pub(crate) use std::sync::atomic::AtomicBool as HintAtomicBool;
    /// std's atomic for a counter in a `static`, whose increments order nothing: the
    /// process-wide counters of task ids and runtime ids.
    pub(crate) use std::sync::atomic::AtomicU64 as StaticAtomicU64;
    pub(crate) use std::sync::atomic::{
        fence, AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering,
    };
    pub(crate) use std::sync::Arc;
    /// std's `Arc` under its own name in both builds: `Waker::from` (for `std::task::Wake`)
    /// takes only std's, and what uses it (`JoinSet`) runs in no loom model.
    pub(crate) use std::sync::Arc as WakeArc;
    /// std's `Arc` for the builder's thread callbacks (`dyn Fn`), in both builds: shared
    /// read-only, with nothing to model.
    pub(crate) use std::sync::Arc as CallbackArc;
    pub(crate) use std::thread;

    /// The number of CPUs the process may use, at least one.
    pub(crate) fn available_parallelism() -> usize {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    }

    /// Whether a thread has finished running.
    pub(crate) fn is_finished<T>(thread: &thread::JoinHandle<T>) -> bool {
        thread.is_finished()
    }

    /// Whether this thread is unwinding from a panic.
    pub(crate) fn panicking() -> bool {
        std::thread::panicking()
    }

    #[cfg(not(miri))]
    pub(crate) use self::parking::{Condvar, Mutex, MutexGuard};
    #[cfg(miri)]
    pub(crate) use self::std_sync::{Condvar, Mutex, MutexGuard};

    /// The lock and condition variable of a normal build.
    #[cfg(not(miri))]
    mod parking {
        /// A mutual-exclusion lock: `parking_lot`'s, which is small and fast when
        /// uncontended.
        pub(crate) type Mutex<T> = parking_lot::Mutex<T>;
        /// A guard of [`Mutex`].
        pub(crate) type MutexGuard<'a, T> = parking_lot::MutexGuard<'a, T>;

        /// A condition variable paired with [`Mutex`].
        #[derive(Debug, Default)]
        pub(crate) struct Condvar(parking_lot::Condvar);

        impl Condvar {
            pub(crate) fn new() -> Self {
                Condvar(parking_lot::Condvar::new())
            }

            pub(crate) fn wait<'a, T>(&self, mut guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
                self.0.wait(&mut guard);
                guard
            }

            /// Waits at most `timeout`. Spurious wakeups happen.
            pub(crate) fn wait_for<'a, T>(
                &self,
                mut guard: MutexGuard<'a, T>,
                timeout: std::time::Duration,
            ) -> MutexGuard<'a, T> {
                self.0.wait_for(&mut guard, timeout);
                guard
            }

            pub(crate) fn notify_one(&self) {
                self.0.notify_one();
            }

            pub(crate) fn notify_all(&self) {
                self.0.notify_all();
            }
        }
    }

    /// Under Miri, `std`'s lock and condition variable with `parking_lot`'s signatures:
    /// `parking_lot` blocks through a raw `futex` syscall that Miri does not run, while
    /// Miri models `std`'s. The rest of the runtime is the same code as in a normal build.
    #[cfg(miri)]
    mod std_sync {
        use std::sync::PoisonError;

        /// `std`'s lock, whose `lock` hands back the guard directly and, like
        /// `parking_lot`'s, ignores poisoning.
        #[derive(Debug, Default)]
        pub(crate) struct Mutex<T>(std::sync::Mutex<T>);

        /// A guard of [`Mutex`].
        pub(crate) type MutexGuard<'a, T> = std::sync::MutexGuard<'a, T>;

        impl<T> Mutex<T> {
            pub(crate) const fn new(data: T) -> Self {
                Mutex(std::sync::Mutex::new(data))
            }

            pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
                self.0.lock().unwrap_or_else(PoisonError::into_inner)
            }

            pub(crate) fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
                match self.0.try_lock() {
                    Ok(guard) => Some(guard),
                    Err(std::sync::TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
                    Err(std::sync::TryLockError::WouldBlock) => None,
                }
            }
        }

        /// A condition variable paired with [`Mutex`].
        #[derive(Debug, Default)]
        pub(crate) struct Condvar(std::sync::Condvar);

        impl Condvar {
            pub(crate) fn new() -> Self {
                Condvar(std::sync::Condvar::new())
            }

            pub(crate) fn wait<'a, T>(&self, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
                self.0.wait(guard).unwrap_or_else(PoisonError::into_inner)
            }

            /// Waits at most `timeout`. Spurious wakeups happen.
            pub(crate) fn wait_for<'a, T>(
                &self,
                guard: MutexGuard<'a, T>,
                timeout: std::time::Duration,
            ) -> MutexGuard<'a, T> {
                self.0
                    .wait_timeout(guard, timeout)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0
            }

            pub(crate) fn notify_one(&self) {
                self.0.notify_one();
            }

            pub(crate) fn notify_all(&self) {
                self.0.notify_all();
            }
        }
    }

    /// `std::cell::UnsafeCell` with loom's closure-based accessors.
    #[derive(Debug, Default)]
    pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

    impl<T> UnsafeCell<T> {
        pub(crate) const fn new(data: T) -> Self {
            UnsafeCell(std::cell::UnsafeCell::new(data))
        }

        #[inline]
        pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
            f(self.0.get())
        }

        #[inline]
        pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
            f(self.0.get())
        }
    }
}

#[cfg(loom)]
mod imp {
    pub(crate) use loom::cell::UnsafeCell;
    pub(crate) use loom::sync::atomic::{
        fence, AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering,
    };
    pub(crate) use loom::sync::Arc;
    pub(crate) use loom::thread;
    /// std's flag for a hint set once and never cleared (whether a clock was ever paused, as a
    /// wake asks it, in `time::clock`): a loom atomic cannot be a `static`, and this one must
    /// add no step to the wakes of the models whose clock never pauses.
    pub(crate) use std::sync::atomic::AtomicBool as HintAtomicBool;
    /// std's atomic for a counter in a `static` (a loom atomic cannot be one): the runtime
    /// ids, which no model's path depends on. Task ids do (a list picks a task's shard by
    /// its id), so under loom each task list counts its own (`task::id::IdSource`).
    pub(crate) use std::sync::atomic::AtomicU64 as StaticAtomicU64;
    /// std's `Arc`: `Waker::from` takes only std's, and what uses it (`JoinSet`) runs in no
    /// loom model.
    pub(crate) use std::sync::Arc as WakeArc;
    /// std's `Arc` for the builder's thread callbacks (`dyn Fn`): shared read-only, with
    /// nothing to model.
    pub(crate) use std::sync::Arc as CallbackArc;

    /// A fixed two: loom models are small.
    pub(crate) fn available_parallelism() -> usize {
        2
    }

    /// loom cannot tell; models always wait for their threads.
    pub(crate) fn is_finished<T>(_thread: &thread::JoinHandle<T>) -> bool {
        false
    }

    /// Whether this thread is unwinding from a panic (loom runs a model on one OS thread).
    pub(crate) fn panicking() -> bool {
        std::thread::panicking()
    }

    /// loom's mutex with `parking_lot`'s signature.
    #[derive(Debug)]
    pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);

    /// A guard of [`Mutex`].
    pub(crate) type MutexGuard<'a, T> = loom::sync::MutexGuard<'a, T>;

    impl<T> Mutex<T> {
        pub(crate) fn new(data: T) -> Self {
            Mutex(loom::sync::Mutex::new(data))
        }

        #[track_caller]
        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            self.0.lock().expect("a runtime lock is never poisoned")
        }

        #[track_caller]
        pub(crate) fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
            self.0.try_lock().ok()
        }
    }

    /// loom's condition variable with `parking_lot`'s signature. loom has no time, so a timed
    /// wait is an untimed one that never times out.
    #[derive(Debug)]
    pub(crate) struct Condvar(loom::sync::Condvar);

    impl Condvar {
        pub(crate) fn new() -> Self {
            Condvar(loom::sync::Condvar::new())
        }

        pub(crate) fn wait<'a, T>(&self, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
            self.0
                .wait(guard)
                .expect("a runtime lock is never poisoned")
        }

        pub(crate) fn wait_for<'a, T>(
            &self,
            guard: MutexGuard<'a, T>,
            _timeout: std::time::Duration,
        ) -> MutexGuard<'a, T> {
            self.wait(guard)
        }

        pub(crate) fn notify_one(&self) {
            self.0.notify_one();
        }

        pub(crate) fn notify_all(&self) {
            self.0.notify_all();
        }
    }
}
