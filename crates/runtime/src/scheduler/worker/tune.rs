//! A worker's tuning of how often it looks at the injector first.
//!
//! Unless the builder sets the interval, a worker of a multi-threaded runtime times its turns
//! in stretches of one interval, with a clock reading at each look at the injector (none while
//! it parks), keeps a moving average of their length, and sets the next interval to about
//! [`TARGET_INTERVAL`] of turns, between [`MIN_TUNED_INTERVAL`] and [`MAX_TUNED_INTERVAL`], as
//! tokio's workers do. With a fixed interval of 61, a task that spun 20 µs a poll left a task
//! spawned from outside every millisecond waiting longer and longer.

use std::time::{Duration, Instant};

/// How many turns a multi-threaded runtime's worker takes between two looks at the injector
/// first until it has timed its turns, and always under loom, which has no time.
pub(crate) const DEFAULT_GLOBAL_QUEUE_INTERVAL: u32 = 61;

/// How long a tuned interval's turns take, by the moving average of a turn's length.
const TARGET_INTERVAL: Duration = Duration::from_micros(200);

/// The bounds of a tuned interval: at 2 the worker's own queue still has every other turn.
const MIN_TUNED_INTERVAL: u32 = 2;
const MAX_TUNED_INTERVAL: u32 = 127;

/// How much one turn's length moves the average; a stretch of `n` turns moves it by
/// `1 - (1 - TURN_WEIGHT)^n`.
const TURN_WEIGHT: f64 = 0.1;

/// How many turns a worker takes between two looks at the injector first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum QueueInterval {
    /// Always this many: the builder's, or a current-thread runtime's.
    Fixed(u32),
    /// Tuned by each worker to its turns' length (the module's note).
    Tuned,
}

/// A worker's timing of its turns, for a tuned [`QueueInterval`].
pub(super) struct IntervalTuner {
    /// When the stretch of turns being timed began: at the last look at the injector, unless
    /// the worker parked since.
    since: Option<Instant>,
    /// The turns of that stretch: the interval it set.
    interval: u32,
    /// The moving average of a turn's length, in nanoseconds.
    mean_turn_nanos: f64,
}

impl IntervalTuner {
    pub(super) fn new() -> IntervalTuner {
        IntervalTuner {
            since: None,
            interval: DEFAULT_GLOBAL_QUEUE_INTERVAL,
            // As if the turns took what the default interval is tuned for.
            mean_turn_nanos: TARGET_INTERVAL.as_nanos() as f64
                / f64::from(DEFAULT_GLOBAL_QUEUE_INTERVAL),
        }
    }

    /// Ends the stretch of turns being timed, if one was, starts the next, and returns the
    /// interval for it. A turn is one look for a task and its poll, with those of the tasks
    /// that then ran from the LIFO slot, which take no turn of the interval; so the interval
    /// spans about [`TARGET_INTERVAL`] of polls however many of them the slot runs.
    pub(super) fn next_interval(&mut self) -> u32 {
        let now = Instant::now();
        if let Some(since) = self.since.replace(now) {
            let turns = self.interval;
            let mean = now.saturating_duration_since(since).as_nanos() as f64 / f64::from(turns);
            let exponent = i32::try_from(turns).unwrap_or(i32::MAX);
            let weight = 1.0 - (1.0 - TURN_WEIGHT).powi(exponent);
            self.mean_turn_nanos += weight * (mean - self.mean_turn_nanos);
        }
        // A float-to-integer cast saturates: an average of zero gives the largest interval.
        let turns = (TARGET_INTERVAL.as_nanos() as f64 / self.mean_turn_nanos) as u32;
        self.interval = turns.clamp(MIN_TUNED_INTERVAL, MAX_TUNED_INTERVAL);
        self.interval
    }

    /// The worker parks: the time until it runs again is no turn's.
    pub(super) fn stop(&mut self) {
        self.since = None;
    }
}
