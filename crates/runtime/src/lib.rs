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
//! - **Worker 0 owns the timer driver**: a hierarchical timing wheel (`escapement-wheel`)
//!   behind one mutex. It fires due timers each turn and, when idle, parks on its next expiry;
//!   other threads wake it only to register an earlier deadline (`time::driver`).
//! - **Timers are intrusive**: the wheel links nodes that live inside the `Sleep` futures, so
//!   a timer costs no allocation, registers lazily at its first poll, and unlinks in O(1).
//! - **Concurrency primitives** come from one facade (`loom`), so the loom models in
//!   `loom-tests/` check the real protocols.

#![cfg_attr(docsrs, feature(doc_cfg))]

mod loom;
#[cfg(loom)]
#[doc(hidden)]
pub mod loom_api;
mod park;
mod runtime;
mod scheduler;
mod sync;
pub mod task;
pub mod time;
mod util;

pub use runtime::{spawn, Builder, EnterGuard, Handle, Runtime, TryCurrentError};
pub use task::{JoinError, JoinHandle};
