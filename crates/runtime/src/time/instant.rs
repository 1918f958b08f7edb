//! [`Instant`]: the runtime's measure of monotonic time.

use std::fmt;
use std::ops::{Add, AddAssign, Sub, SubAssign};
use std::time::Duration;

/// A point in monotonic time, as the runtime sees it.
///
/// It wraps [`std::time::Instant`], with one difference: inside a runtime whose clock is
/// paused, [`Instant::now`] reads the paused clock, so code that measures time with this type
/// sees exactly the time a test advanced. Elsewhere it is the system's monotonic clock.
///
/// Arithmetic with durations panics on overflow like `std`'s, and
/// [`checked_add`](Instant::checked_add) never panics; subtracting instants saturates at
/// zero.
///
/// # Examples
///
/// ```
/// use escapement::time::{Duration, Instant};
///
/// let start = Instant::now();
/// let later = start + Duration::from_millis(5);
/// assert_eq!(later - start, Duration::from_millis(5));
/// assert_eq!(start - later, Duration::ZERO, "saturates");
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant {
    std: std::time::Instant,
}

impl Instant {
    /// The current time: the runtime's clock inside a runtime (paused or not), the system's
    /// monotonic clock outside one.
    pub fn now() -> Instant {
        crate::time::clock::now()
    }

    /// Wraps a `std` instant.
    pub fn from_std(std: std::time::Instant) -> Instant {
        Instant { std }
    }

    /// The `std` instant this one wraps.
    pub fn into_std(self) -> std::time::Instant {
        self.std
    }

    /// Time from `earlier` to `self`, or zero if `earlier` is later.
    pub fn duration_since(&self, earlier: Instant) -> Duration {
        self.std.saturating_duration_since(earlier.std)
    }

    /// Time from `earlier` to `self`, or `None` if `earlier` is later.
    pub fn checked_duration_since(&self, earlier: Instant) -> Option<Duration> {
        self.std.checked_duration_since(earlier.std)
    }

    /// Time from `earlier` to `self`, or zero if `earlier` is later.
    pub fn saturating_duration_since(&self, earlier: Instant) -> Duration {
        self.std.saturating_duration_since(earlier.std)
    }

    /// Time elapsed since `self`, by [`Instant::now`].
    pub fn elapsed(&self) -> Duration {
        Instant::now().saturating_duration_since(*self)
    }

    /// `self + duration`, or `None` if that is not representable.
    pub fn checked_add(&self, duration: Duration) -> Option<Instant> {
        self.std.checked_add(duration).map(Instant::from_std)
    }

    /// `self - duration`, or `None` if that is not representable.
    pub fn checked_sub(&self, duration: Duration) -> Option<Instant> {
        self.std.checked_sub(duration).map(Instant::from_std)
    }

    /// `self + duration`, or an instant about a century later when that overflows: the
    /// deadline the time API gives a timer asked to wait "forever".
    pub(crate) fn saturating_add(self, duration: Duration) -> Instant {
        self.checked_add(duration)
            .unwrap_or_else(|| self.far_future())
    }

    /// About a century from `self`: later than any deadline a program can wait for.
    pub(crate) fn far_future(self) -> Instant {
        const CENTURY: Duration = Duration::from_secs(100 * 365 * 86_400);
        self.checked_add(CENTURY)
            .or_else(|| self.checked_add(CENTURY / 100))
            .unwrap_or(self)
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;

    /// # Panics
    ///
    /// If the result is not representable; use [`Instant::checked_add`] to handle that.
    #[track_caller]
    fn add(self, duration: Duration) -> Instant {
        self.checked_add(duration)
            .expect("overflow when adding duration to instant")
    }
}

impl AddAssign<Duration> for Instant {
    #[track_caller]
    fn add_assign(&mut self, duration: Duration) {
        *self = *self + duration;
    }
}

impl Sub<Duration> for Instant {
    type Output = Instant;

    /// # Panics
    ///
    /// If the result is not representable; use [`Instant::checked_sub`] to handle that.
    #[track_caller]
    fn sub(self, duration: Duration) -> Instant {
        self.checked_sub(duration)
            .expect("overflow when subtracting duration from instant")
    }
}

impl SubAssign<Duration> for Instant {
    #[track_caller]
    fn sub_assign(&mut self, duration: Duration) {
        *self = *self - duration;
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;

    /// Saturates at zero when `other` is later.
    fn sub(self, other: Instant) -> Duration {
        self.saturating_duration_since(other)
    }
}

impl From<std::time::Instant> for Instant {
    fn from(std: std::time::Instant) -> Instant {
        Instant::from_std(std)
    }
}

impl From<Instant> for std::time::Instant {
    fn from(instant: Instant) -> std::time::Instant {
        instant.into_std()
    }
}

impl fmt::Debug for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.std.fmt(f)
    }
}
