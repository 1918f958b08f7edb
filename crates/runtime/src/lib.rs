//! A multi-threaded async runtime built around an exact, cheap timer driver, with the time
//! API of `tokio::time`.
//!
//! ```
//! use escapement::time::{sleep, timeout, Duration};
//!
//! let rt = escapement::Runtime::new().unwrap();
//! rt.block_on(async {
//!     sleep(Duration::from_millis(5)).await;
//!     let answer = timeout(Duration::from_secs(1), async { 42 }).await;
//!     assert_eq!(answer, Ok(42));
//! });
//! ```
//!
//! # Architecture
//!
//! - **Workers** run tasks from per-worker queues, a global injector, and each other's queues
//!   (stealing); idle workers sleep without spinning (`scheduler`).
//! - **Worker 0 owns the timer driver**: hierarchical timing wheels (`escapement-wheel`), one
//!   shard per worker behind its own mutex, where the worker's timers register. It fires due
//!   timers each turn and, when idle, parks on its next expiry; other threads wake it only to
//!   register an earlier deadline (`time::driver`).
//! - **Timers are intrusive**: the wheel links nodes that live inside the `Sleep` futures, so
//!   a timer costs no allocation, registers lazily at its first poll, and unlinks in O(1).
//! - **Concurrency primitives** come from one facade (`loom`), so the loom models in
//!   `loom-tests/` check the real protocols.

#![cfg_attr(docsrs, feature(doc_cfg))]

mod loom;
#[cfg(loom)]
#[doc(hidden)]
pub mod loom_api;
mod macros;
mod metrics;
mod park;
pub mod runtime;
mod scheduler;
mod sync;
pub mod task;
pub mod time;
mod util;

pub use metrics::{LatenessHistogram, RuntimeMetrics};
pub use runtime::{Builder, EnterGuard, Handle, Runtime, TryCurrentError};
pub use task::spawn;

/// What the crate's macros expand to; not part of its API.
#[doc(hidden)]
pub mod __private {
    pub use crate::macros::{pin_split, select_budget, select_start};
    pub use escapement_macros::{join_inner, select_inner, try_join_inner};
    pub use futures_util::future::maybe_done;
}

/// The README's Rust examples, compiled and run as doctests so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;

/// Runs an `async fn` as the program's entry point, on a new runtime: a multi-threaded one
/// unless `flavor = "current_thread"` asks for a current-thread one.
///
/// The function becomes a plain `fn` with the same attributes, visibility, name and return
/// type. It builds a [`Runtime`] with a [`Builder`], runs the body with
/// [`Runtime::block_on`] on the calling thread, and drops the runtime when the body returns;
/// spawned tasks run on the worker threads (on the calling thread for `"current_thread"`).
/// The function must be `async`. It may return
/// anything `main` may, such as `Result<(), E>`, and need not be named `main`: on another
/// function, a method included, it makes a synchronous entry point that may take
/// arguments, and each call builds a runtime of its own. `main` itself takes none.
///
/// Arguments, comma-separated, in any order, each at most once:
///
/// | argument | value | default |
/// | --- | --- | --- |
/// | `flavor = "F"` | tokio's names, so its attributes port unchanged: `"multi_thread"` (the default) or `"current_thread"` ([`Builder::new_current_thread`]: tasks run on the calling thread, in `block_on`; `worker_threads` is then an error) | `"multi_thread"` |
/// | `worker_threads = N` | a positive integer literal: [`Builder::worker_threads`] | one per available CPU, as [`Builder::new`] |
/// | `start_paused = B` | `true` or `false`: [`Builder::start_paused`] | `false` |
/// | `name = "S"` | a non-empty string literal: [`Builder::name`] | no name |
/// | `crate = "P"` | the path to this crate, in a string literal, for a dependency renamed in `Cargo.toml` (`crate = "my_escapement"`) | `::escapement` |
///
/// Anything else is a compile error at the offending token: an unknown or repeated argument,
/// a value of the wrong kind, a function that is not `async`, a `main` that takes arguments.
///
/// # Examples
///
/// ```
/// use escapement::time::{sleep, Duration};
///
/// #[escapement::main]
/// async fn main() {
///     sleep(Duration::from_millis(1)).await;
/// }
/// ```
///
/// With arguments, returning a `Result`:
///
/// ```
/// use std::error::Error;
/// use escapement::time::{timeout, Duration};
///
/// #[escapement::main(worker_threads = 2)]
/// async fn main() -> Result<(), Box<dyn Error>> {
///     let task = escapement::spawn(async { 6 * 7 });
///     let answer = timeout(Duration::from_secs(10), task).await??;
///     assert_eq!(answer, 42);
///     Ok(())
/// }
/// ```
///
/// # Panics
///
/// If the runtime cannot be built (see [`Builder::build`]), with the message
/// `failed to build the escapement runtime`; and if the body panics, with its panic.
///
/// # Expansion
///
/// `#[escapement::main(worker_threads = 2)] async fn main() -> T { BODY }` becomes
/// `fn main() -> T`, whose body is, with `body` and `runtime` invisible to `BODY` (`crate`
/// replaces `::escapement`, and `name` adds `.name(..)`):
///
/// ```text
/// let body = async { BODY };
/// let runtime = ::escapement::Builder::new()
///     .worker_threads(2)
///     .build()
///     .expect("failed to build the escapement runtime");
/// runtime.block_on(body)
/// ```
#[doc(inline)]
pub use escapement_macros::main;

/// Runs an `async fn` as a test, on a new runtime of its own.
///
/// Like [`main`](macro@main), plus `#[test]`: the function becomes a plain `#[test] fn`
/// with the same other attributes (`#[should_panic]`, `#[ignore]`...), visibility, name and
/// return type, whose body runs with [`Runtime::block_on`] on the test's thread. The
/// function must be `async`, take no arguments and carry no `#[test]` of its own (nor
/// `#[escapement::test]` or `#[tokio::test]`; another crate's attribute named `test`, such as
/// `#[test_log::test]`, is left in place); it may return `()` or a `Result`. Each test builds, and then drops, its own runtime.
/// `name` and `crate` are as for [`main`](macro@main).
///
/// Arguments, comma-separated, in any order, each at most once:
///
/// | argument | value | default |
/// | --- | --- | --- |
/// | `flavor = "F"` | as for [`main`](macro@main); `"multi_thread"` without `worker_threads` gives one worker per available CPU | `"current_thread"`: the tasks run on the test's thread, as with tokio's |
/// | `worker_threads = N` | a positive integer literal: [`Builder::worker_threads`], on a multi-threaded runtime | none: a current-thread runtime per test |
/// | `start_paused = B` | `true` or `false`: [`Builder::start_paused`] | `false` |
///
/// Anything else is a compile error at the offending token, as for [`main`](macro@main).
///
/// # Examples
///
/// A test on a paused clock, where a day-long sleep returns at once and time moves by
/// exactly the day:
///
/// ```
/// use escapement::time::{sleep, Duration, Instant};
///
/// #[escapement::test(start_paused = true)]
/// async fn a_day_passes_at_once() {
///     let start = Instant::now();
///     sleep(Duration::from_secs(86_400)).await;
///     assert_eq!(start.elapsed(), Duration::from_secs(86_400));
/// }
/// ```
///
/// A test on two worker threads that returns a `Result`:
///
/// ```
/// use escapement::task::JoinError;
///
/// #[escapement::test(worker_threads = 2)]
/// async fn tasks_run_on_the_workers() -> Result<(), JoinError> {
///     let answer = escapement::spawn(async { 6 * 7 }).await?;
///     assert_eq!(answer, 42);
///     Ok(())
/// }
/// ```
///
/// # Panics
///
/// The test fails if the runtime cannot be built (see [`Builder::build`]) or if the body
/// panics; add `#[should_panic]` to expect the latter.
///
/// # Expansion
///
/// As for [`main`](macro@main), with `#[::core::prelude::v1::test]` added before the
/// function's attributes and `Builder::new_current_thread()` in place of `Builder::new()`
/// unless told otherwise.
//
// Rustdoc builds examples without `--test`, which strips `#[test]` functions: the examples
// above check that the attribute expands; tests/macros.rs runs the same tests.
#[doc(inline)]
pub use escapement_macros::test;
pub use task::{JoinError, JoinHandle};
