//! [`Interval`], [`interval`] and [`interval_at`].

use std::fmt;
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use super::{Instant, Sleep};
use crate::runtime::Handle;

/// A tick later than its deadline by more than this counts as missed, at the default 1 ms
/// timer resolution (as in tokio, whose resolution that is); a coarser resolution adds what
/// its rounding adds, so that a tick on time is never counted as missed.
const MISSED_TICK_TOLERANCE: Duration = Duration::from_millis(5);

/// Ticks every `period`, the first tick completing at once.
///
/// # Examples
///
/// ```
/// use escapement::time::{interval, Duration, Instant};
///
/// # escapement::Runtime::new().unwrap().block_on(async {
/// let start = Instant::now();
/// let mut ticker = interval(Duration::from_millis(2));
/// ticker.tick().await; // at once
/// ticker.tick().await; // 2 ms after start
/// ticker.tick().await; // 4 ms after start
/// assert!(start.elapsed() >= Duration::from_millis(4));
/// # });
/// ```
///
/// # Panics
///
/// If `period` is zero, or if called outside an escapement runtime.
#[track_caller]
pub fn interval(period: Duration) -> Interval {
    assert!(
        !period.is_zero(),
        "escapement::time::interval: `period` must be non-zero"
    );
    Interval::new("escapement::time::interval", None, period)
}

/// Ticks every `period`, the first tick completing at `start`.
///
/// # Examples
///
/// ```
/// use escapement::time::{interval_at, Duration, Instant};
///
/// # escapement::Runtime::new().unwrap().block_on(async {
/// let start = Instant::now() + Duration::from_millis(3);
/// let mut ticker = interval_at(start, Duration::from_millis(10));
/// assert_eq!(ticker.tick().await, start);
/// # });
/// ```
///
/// # Panics
///
/// If `period` is zero, or if called outside an escapement runtime.
#[track_caller]
pub fn interval_at(start: Instant, period: Duration) -> Interval {
    assert!(
        !period.is_zero(),
        "escapement::time::interval_at: `period` must be non-zero"
    );
    Interval::new("escapement::time::interval_at", Some(start), period)
}

/// What an [`Interval`] does when ticks were missed (its task was late polling it by more
/// than 5 ms, plus, with a [timer resolution](crate::Builder::timer_resolution) coarser than
/// 1 ms, what the coarser rounding adds).
///
/// With a period of 100 ms, ticks due at 100, 200, 300, ... and a stall that makes the tick
/// due at 200 come out at 350:
///
/// | behaviour | ticks after the stall             |
/// |-----------|-----------------------------------|
/// | `Burst`   | 350 (for 200), 350 (300), 400, 500 |
/// | `Delay`   | 350 (for 200), 450, 550            |
/// | `Skip`    | 350 (for 200), 400, 500            |
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MissedTickBehavior {
    /// Fire the missed ticks at once, as fast as they are polled, then keep the original
    /// schedule. The default.
    #[default]
    Burst,
    /// Restart the schedule: the next tick is a full period after the late one.
    Delay,
    /// Drop the missed ticks: the next tick is the next one of the original schedule.
    Skip,
}

const NANOS_PER_SEC: u128 = 1_000_000_000;

impl MissedTickBehavior {
    /// The deadline after a tick due at `timeout` that was seen at `now`.
    fn next_timeout(self, timeout: Instant, now: Instant, period: Duration) -> Instant {
        match self {
            MissedTickBehavior::Burst => timeout.saturating_add(period),
            MissedTickBehavior::Delay => now.saturating_add(period),
            MissedTickBehavior::Skip => {
                let late = now.saturating_duration_since(timeout).as_nanos();
                let into_period = late % period.as_nanos();
                // Below the period's nanoseconds, so its seconds fit a `Duration`'s, even
                // where the nanoseconds alone would not fit a `u64` (585 years and more).
                let into_period = Duration::new(
                    (into_period / NANOS_PER_SEC) as u64,
                    (into_period % NANOS_PER_SEC) as u32,
                );
                now.saturating_add(period - into_period)
            }
        }
    }
}

/// Ticks at a fixed period; made by [`interval`] and [`interval_at`].
///
/// Also a [`Stream`](futures_core::Stream) of tick instants.
///
/// Like a [`Sleep`](crate::time::Sleep), it runs on the clock of the runtime that made it,
/// wherever it is polled: "now" in its missed-tick check and in its `reset`s is that clock's,
/// so one made in a paused runtime keeps that runtime's schedule even when polled elsewhere.
///
/// # Panics
///
/// Waiting for a tick after its runtime shut down panics, as polling a
/// [`Sleep`](crate::time::Sleep) does. A tick that needs no waiting is still returned: one
/// whose timer already fired, or one already due when first polled, such as the first.
///
/// # Cancel safety
///
/// [`tick`](Interval::tick) is cancel safe: dropping its future loses no tick.
pub struct Interval {
    /// Boxed so that `Interval` is `Unpin` and `tick` can take `&mut self`; one allocation
    /// per interval, none per tick.
    delay: Pin<Box<Sleep>>,
    period: Duration,
    missed_tick_behavior: MissedTickBehavior,
    /// How late a tick may come before it counts as missed: [`MISSED_TICK_TOLERANCE`], plus
    /// what the timer resolution rounds deadlines up by beyond 1 ms.
    tolerance: Duration,
}

impl Interval {
    /// An interval whose first tick is at `start` (`None`: now); `what` names the caller in
    /// the panic outside a runtime.
    #[track_caller]
    fn new(what: &str, start: Option<Instant>, period: Duration) -> Interval {
        let driver = Handle::with_current(what, Handle::timer_driver);
        let start = start.unwrap_or_else(|| driver.clock().now());
        let tolerance =
            MISSED_TICK_TOLERANCE + driver.tick().saturating_sub(Duration::from_millis(1));
        let delay = Sleep::until(driver, start);
        Interval {
            delay: Box::pin(delay),
            period,
            missed_tick_behavior: MissedTickBehavior::default(),
            tolerance,
        }
    }

    /// Completes at the next tick, with the instant it was due.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: if the future is dropped before it completes, the tick it was waiting
    /// for is still the next one.
    pub async fn tick(&mut self) -> Instant {
        poll_fn(|cx| self.poll_tick(cx)).await
    }

    /// Polls for the next tick. A waker is registered only when this returns `Pending`.
    pub fn poll_tick(&mut self, cx: &mut Context<'_>) -> Poll<Instant> {
        if self.delay.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        let timeout = self.delay.deadline();
        // The interval's own clock: polled in another runtime, or outside any, the caller's
        // clock may be another one (real beside paused), which would shift the schedule.
        let now = self.delay.now();
        let next = if now.saturating_duration_since(timeout) > self.tolerance {
            self.missed_tick_behavior
                .next_timeout(timeout, now, self.period)
        } else {
            timeout.saturating_add(self.period)
        };
        self.delay.as_mut().reset_without_reregister(next);
        Poll::Ready(timeout)
    }

    /// Restarts the schedule: the next tick is one period from now.
    pub fn reset(&mut self) {
        self.reset_at(self.delay.now().saturating_add(self.period));
    }

    /// Restarts the schedule: the next tick is now.
    pub fn reset_immediately(&mut self) {
        self.reset_at(self.delay.now());
    }

    /// Restarts the schedule: the next tick is `after` from now.
    pub fn reset_after(&mut self, after: Duration) {
        self.reset_at(self.delay.now().saturating_add(after));
    }

    /// Restarts the schedule: the next tick is at `deadline`.
    pub fn reset_at(&mut self, deadline: Instant) {
        self.delay.as_mut().reset(deadline);
    }

    /// The period, as given, however long. A next tick that would overflow [`Instant`] is
    /// put about a century ahead instead, as `sleep(Duration::MAX)`'s deadline is.
    pub fn period(&self) -> Duration {
        self.period
    }

    /// What happens to missed ticks.
    pub fn missed_tick_behavior(&self) -> MissedTickBehavior {
        self.missed_tick_behavior
    }

    /// Sets what happens to missed ticks.
    pub fn set_missed_tick_behavior(&mut self, behavior: MissedTickBehavior) {
        self.missed_tick_behavior = behavior;
    }
}

impl futures_core::Stream for Interval {
    type Item = Instant;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Instant>> {
        self.get_mut().poll_tick(cx).map(Some)
    }

    /// Never ends: `(usize::MAX, None)`, as `tokio-stream`'s `IntervalStream` says.
    fn size_hint(&self) -> (usize, Option<usize>) {
        (usize::MAX, None)
    }
}

impl fmt::Debug for Interval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Interval")
            .field("next", &self.delay.deadline())
            .field("period", &self.period)
            .field("missed_tick_behavior", &self.missed_tick_behavior)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const YEAR: Duration = Duration::from_secs(365 * 24 * 3600);

    #[test]
    fn skip_finds_the_next_tick_of_a_period_too_long_for_u64_nanoseconds() {
        let timeout = Instant::from_std(std::time::Instant::now());
        let period = YEAR * 700;
        let now = timeout + YEAR * 1300;
        // Ticks of the original schedule fall at 0, 700 and 1400 years.
        let next = MissedTickBehavior::Skip.next_timeout(timeout, now, period);
        assert_eq!(next, timeout + YEAR * 1400);
    }

    #[test]
    fn skip_finds_the_next_tick_of_the_original_schedule() {
        let timeout = Instant::from_std(std::time::Instant::now());
        let period = Duration::from_millis(7);
        let now = timeout + Duration::from_millis(1_000_003);
        let next = MissedTickBehavior::Skip.next_timeout(timeout, now, period);
        assert_eq!(next, timeout + Duration::from_millis(1_000_006));
    }
}
