//! Small helpers with no better home.

use std::any::Any;
use std::cell::Cell;
use std::mem;
use std::panic::{self, AssertUnwindSafe};

use crate::loom::thread::LocalKey;

/// Runs `f`, which is user code (a destructor, a waker, a hook), containing a panic: `None`
/// if it panicked. The payload is dropped here; one whose own destructor panics too is
/// leaked instead, since that second panic would unwind out past the caller's bookkeeping.
#[inline]
pub(crate) fn contain<R>(f: impl FnOnce() -> R) -> Option<R> {
    match panic::catch_unwind(AssertUnwindSafe(f)) {
        Ok(value) => Some(value),
        Err(payload) => {
            drop_payload(payload);
            None
        }
    }
}

/// Drops a caught panic's payload, leaking the payload of a panic in its destructor.
fn drop_payload(payload: Box<dyn Any + Send>) {
    if let Err(again) = panic::catch_unwind(AssertUnwindSafe(|| drop(payload))) {
        mem::forget(again);
    }
}

/// Sets the thread-local `key` to `value` for the duration of `f`, then puts the previous
/// value back, also when `f` panics. Where the thread-local is gone (a thread exiting), `f`
/// runs without it being set.
#[inline]
pub(crate) fn with_local<T: Copy + 'static, R>(
    key: &'static LocalKey<Cell<T>>,
    value: T,
    f: impl FnOnce() -> R,
) -> R {
    struct Restore<T: Copy + 'static> {
        key: &'static LocalKey<Cell<T>>,
        previous: T,
    }

    impl<T: Copy + 'static> Drop for Restore<T> {
        fn drop(&mut self) {
            let _ = self.key.try_with(|cell| cell.set(self.previous));
        }
    }

    let previous = key.try_with(|cell| cell.replace(value)).ok();
    let _restore = previous.map(|previous| Restore { key, previous });
    f()
}

/// Makes a `Send` value `Sync` by allowing access only through ownership or `&mut`.
///
/// A shared reference to a `SyncWrapper` gives no access to the value, so sharing one across
/// threads can never share the value.
pub(crate) struct SyncWrapper<T>(T);

// SAFETY: `&SyncWrapper<T>` exposes nothing of `T` (there is no `&self` accessor), so it is
// fine to share one between threads whatever `T` is.
unsafe impl<T> Sync for SyncWrapper<T> {}

impl<T> SyncWrapper<T> {
    pub(crate) fn new(value: T) -> Self {
        SyncWrapper(value)
    }

    pub(crate) fn into_inner(self) -> T {
        self.0
    }
}
