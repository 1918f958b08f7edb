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
