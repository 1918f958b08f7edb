//! Timers: [`sleep`], [`timeout`] and [`interval`], with the names and meanings of
//! `tokio::time`.
//!
//! Every timer is an entry in one of the driver's timing wheels (see the `escapement-wheel`
//! crate), the shard of the worker that made it (worker 0's for other threads): embedded in
//! its future, so creating one allocates nothing, registered at its first poll, and unlinked
//! in O(1) when dropped. Worker 0 fires the timers of every shard (the other workers stand in
//! while it is stuck in a poll). A timer fires at or after its deadline, rounded up to the
//! runtime's tick (1 ms by default), never before.

pub(crate) mod clock;
pub(crate) mod driver;
pub(crate) mod driver_ref;
pub(crate) mod entry;
pub mod error;
mod instant;
mod interval;
pub(crate) mod park;
mod pause;
mod sleep;
mod timeout;

pub use instant::Instant;
pub use interval::{interval, interval_at, Interval, MissedTickBehavior};
pub use pause::{advance, pause, resume, Advance};
pub use sleep::{sleep, sleep_until, Sleep};
pub use std::time::Duration;
pub use timeout::{timeout, timeout_at, Timeout};
