//! [`AccessError`]: a task-local key read outside every scope that sets it.

use std::error::Error;
use std::fmt;

/// The error of [`LocalKey::try_with`](super::LocalKey::try_with) and
/// [`LocalKey::try_get`](super::LocalKey::try_get): no scope around the caller has set the
/// key (or the thread is exiting and its thread-locals are gone).
///
/// # Examples
///
/// ```
/// escapement::task_local! {
///     static NUMBER: u32;
/// }
///
/// let error = NUMBER.try_get().unwrap_err();
/// assert_eq!(error.to_string(), "task-local value not set");
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct AccessError {
    _private: (),
}

impl AccessError {
    pub(super) fn new() -> AccessError {
        AccessError { _private: () }
    }
}

impl fmt::Debug for AccessError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AccessError")
    }
}

impl fmt::Display for AccessError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("task-local value not set")
    }
}

impl Error for AccessError {}
