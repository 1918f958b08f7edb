//! [`spawn`]: a task onto the current runtime.

use std::future::Future;

use crate::runtime::Handle;
use crate::JoinHandle;

/// Spawns a task onto the current runtime.
///
/// # Examples
///
/// ```
/// # let rt = escapement::Runtime::new().unwrap();
/// rt.block_on(async {
///     let task = escapement::spawn(async { "hello" });
///     assert_eq!(task.await.unwrap(), "hello");
/// });
/// ```
///
/// # Panics
///
/// If called outside a runtime; use [`Handle::spawn`] there.
#[track_caller]
pub fn spawn<F>(future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    Handle::current_for("escapement::spawn").spawn(future)
}
