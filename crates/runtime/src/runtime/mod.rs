//! The runtime: [`Runtime`], its [`Builder`], its [`Handle`], and [`spawn`].

mod builder;
pub(crate) mod context;
mod handle;
#[allow(clippy::module_inception)]
mod runtime;

use std::future::Future;

pub use builder::Builder;
pub use handle::{EnterGuard, Handle, TryCurrentError};
pub use runtime::Runtime;

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
