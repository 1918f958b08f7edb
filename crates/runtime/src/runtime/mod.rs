//! The runtime: [`Runtime`], its [`Builder`] and its [`Handle`], at the paths tokio's
//! `runtime` module gives them, so `use tokio::runtime::Runtime` ports by changing the crate's
//! name. All but [`RuntimeFlavor`] and [`Id`] are also at the crate root.

mod builder;
pub(crate) mod context;
mod handle;
mod id;
#[allow(clippy::module_inception)]
mod runtime;
pub(crate) mod thread_hooks;

pub use builder::Builder;
pub use handle::{EnterGuard, Handle, RuntimeFlavor, TryCurrentError};
pub use id::Id;
pub use runtime::Runtime;

pub use crate::metrics::{LatenessHistogram, RuntimeMetrics};

/// The index of the worker running on this thread, below the runtime's worker count, as
/// [`RuntimeMetrics`] numbers them; `None` on any other thread.
///
/// As tokio's: a multi-threaded runtime's worker threads have their index; a current-thread
/// runtime's worker is 0, on the thread in `block_on` that holds it. A multi-threaded
/// runtime's `block_on` thread, a blocking thread, a thread in the closure of
/// `block_in_place` (its worker went to another thread) and threads outside any runtime get
/// `None`. A task may move between workers at an `.await`, so the index may change there.
///
/// Two differences: after `block_in_place` returns, the rest of that poll gets `None`
/// unless the thread took its worker back (tokio's gives the worker's index), as the worker
/// went on elsewhere; and `Handle::block_on` of a current-thread runtime, on a thread that
/// drives the runtime's worker there, gets 0 (tokio's gives `None`).
///
/// # Examples
///
/// ```
/// let rt = escapement::Builder::new().worker_threads(2).build().unwrap();
/// let index = rt.block_on(async {
///     escapement::spawn(async { escapement::runtime::worker_index() }).await
/// });
/// assert!(matches!(index.unwrap(), Some(0 | 1)));
/// assert_eq!(escapement::runtime::worker_index(), None);
/// ```
pub fn worker_index() -> Option<usize> {
    crate::scheduler::worker::current_index()
}
