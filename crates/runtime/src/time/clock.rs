//! [`Clock`]: the time source behind [`Instant::now`](crate::time::Instant::now) inside a
//! runtime, which a test can pause, advance and resume.
//!
//! Until it is first paused the clock is the system's monotonic clock, read with no lock: a
//! relaxed check of a flag guards the fast path, and a `SeqCst` one after the reading keeps it
//! from running ahead of a `pause` that came meanwhile. Once paused, readings come from `base`,
//! the clock's reading when it was last paused or resumed, plus the system time elapsed since
//! it was resumed (none while paused); `advance` moves `base`.

use std::fmt;
use std::time::Duration;

use crate::loom::{AtomicBool, HintAtomicBool, Mutex, Ordering};
use crate::time::Instant;

/// Set when a clock of this process is first paused: until then no wake of a task needs to
/// ask whether it must hold its runtime's clock (`Driver::hold_clock`), and a wake pays one
/// relaxed load of this flag for the question. std's atomic even under loom, as
/// `Clock::wakes_hold` is.
static ANY_EVER_PAUSED: HintAtomicBool = HintAtomicBool::new(false);

/// Whether a clock of this process was ever paused.
#[inline]
pub(crate) fn any_ever_paused() -> bool {
    ANY_EVER_PAUSED.load(Ordering::Relaxed)
}

pub(crate) struct Clock {
    /// Set the first time the clock is paused; until then `now` is the system clock.
    ever_paused: AtomicBool,
    /// `ever_paused` again, read by a wake of a task to know whether it must hold the clock
    /// (`Driver::hold_clock`). Set before the clock first pauses and never cleared, so it
    /// orders nothing; std's atomic even under loom, so that the question adds no step to the
    /// wakes of the models whose clock never pauses.
    wakes_hold: HintAtomicBool,
    inner: Mutex<Inner>,
    /// The instant of tick zero and the tick's length: `pause` freezes on a tick boundary.
    origin: std::time::Instant,
    tick: Duration,
}

struct Inner {
    /// The clock's reading when it was last paused or resumed.
    base: std::time::Instant,
    /// The system time at which it was last resumed; `None` while paused.
    running_since: Option<std::time::Instant>,
}

/// Why a clock operation was refused; the public functions turn these into panics.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ClockError {
    AlreadyPaused,
    NotPaused,
}

impl Clock {
    /// A clock reading the system time, or frozen at `origin` when `paused`.
    pub(crate) fn new(origin: std::time::Instant, tick: Duration, paused: bool) -> Clock {
        if paused {
            ANY_EVER_PAUSED.store(true, Ordering::Relaxed);
        }
        Clock {
            ever_paused: AtomicBool::new(paused),
            wakes_hold: HintAtomicBool::new(paused),
            inner: Mutex::new(Inner {
                base: origin,
                running_since: (!paused).then_some(origin),
            }),
            origin,
            tick,
        }
    }

    pub(crate) fn now(&self) -> Instant {
        // Relaxed: the flag only chooses the path; the lock orders everything behind it.
        if !self.ever_paused.load(Ordering::Relaxed) {
            let now = std::time::Instant::now();
            // A first `pause` may have come between the check and the reading, and frozen
            // the clock before `now`: the reading would then run ahead of the paused clock
            // (and a timer fired on it would be early). Read the flag again; if it is still
            // clear, `pause` had not yet set it when the system clock was read here, and it
            // reads the time it freezes at only after setting it: at or after `now`.
            if !self.ever_paused.load(Ordering::SeqCst) {
                return Instant::from_std(now);
            }
        }
        Instant::from_std(self.inner.lock().now())
    }

    /// Whether the clock was ever paused: until then it is the system clock itself, and a
    /// runtime instant is the same system instant at every reading.
    pub(crate) fn ever_paused(&self) -> bool {
        self.ever_paused.load(Ordering::Relaxed)
    }

    /// Whether a wake from a thread the runtime does not count active must hold the clock:
    /// whether it was ever paused.
    pub(crate) fn wakes_hold(&self) -> bool {
        self.wakes_hold.load(Ordering::Relaxed)
    }

    pub(crate) fn is_paused(&self) -> bool {
        self.ever_paused.load(Ordering::Relaxed) && self.inner.lock().running_since.is_none()
    }

    /// Freezes the clock at its current reading, rounded up to the next tick boundary so
    /// whole-tick sleeps line up with whole-tick advances.
    pub(crate) fn pause(&self) -> Result<(), ClockError> {
        let mut inner = self.inner.lock();
        if inner.running_since.is_none() {
            return Err(ClockError::AlreadyPaused);
        }
        // From here on, a wake from outside the runtime holds the clock (`Driver::hold_clock`).
        ANY_EVER_PAUSED.store(true, Ordering::Relaxed);
        self.wakes_hold.store(true, Ordering::Relaxed);
        // Set before the reading below, so that a lock-free reader that misses it read the
        // system clock before this reading (see `now`); `SeqCst` keeps the store from
        // waiting in this thread's store buffer past it. Readers that see it take the lock
        // and wait for the pause to finish.
        self.ever_paused.store(true, Ordering::SeqCst);
        let now = inner.now();
        inner.base = self.round_up_to_tick(now);
        inner.running_since = None;
        Ok(())
    }

    /// Lets the clock run again from where it stands.
    pub(crate) fn resume(&self) -> Result<(), ClockError> {
        let mut inner = self.inner.lock();
        if inner.running_since.is_some() {
            return Err(ClockError::NotPaused);
        }
        inner.running_since = Some(std::time::Instant::now());
        Ok(())
    }

    /// Moves a paused clock forward by exactly `duration` (saturating far in the future).
    pub(crate) fn advance(&self, duration: Duration) -> Result<Instant, ClockError> {
        let mut inner = self.inner.lock();
        if inner.running_since.is_some() {
            return Err(ClockError::NotPaused);
        }
        inner.base = Instant::from_std(inner.base)
            .saturating_add(duration)
            .into_std();
        Ok(Instant::from_std(inner.base))
    }

    /// Moves a paused clock forward to `to`, if that is later; for auto-advance.
    pub(crate) fn advance_to(&self, to: Instant) -> Result<(), ClockError> {
        let mut inner = self.inner.lock();
        if inner.running_since.is_some() {
            return Err(ClockError::NotPaused);
        }
        inner.base = inner.base.max(to.into_std());
        Ok(())
    }

    fn round_up_to_tick(&self, at: std::time::Instant) -> std::time::Instant {
        let since = at.saturating_duration_since(self.origin).as_nanos();
        let tick = self.tick.as_nanos().max(1);
        let rounded = since.div_ceil(tick) * tick;
        let extra = u64::try_from(rounded - since).unwrap_or(0);
        at + Duration::from_nanos(extra)
    }
}

impl Inner {
    fn now(&self) -> std::time::Instant {
        match self.running_since {
            None => self.base,
            Some(since) => self.base + since.elapsed(),
        }
    }
}

/// The current time: the clock of the runtime this thread is in, or the system clock.
pub(crate) fn now() -> Instant {
    crate::runtime::context::with_handle(|handle| handle.driver().clock().now())
        .unwrap_or_else(|| Instant::from_std(std::time::Instant::now()))
}

impl fmt::Debug for Clock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Clock")
            .field("paused", &self.is_paused())
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_paused_clock_moves_only_when_advanced() {
        let origin = std::time::Instant::now();
        let clock = Clock::new(origin, Duration::from_millis(1), true);
        assert_eq!(clock.now().into_std(), origin);
        assert_eq!(
            clock.advance(Duration::from_nanos(1_500)),
            Ok(Instant::from_std(origin + Duration::from_nanos(1_500)))
        );
        assert_eq!(clock.pause(), Err(ClockError::AlreadyPaused));
        assert_eq!(clock.resume(), Ok(()));
        assert!(clock.now().into_std() >= origin + Duration::from_nanos(1_500));
        assert_eq!(
            clock.advance(Duration::from_secs(1)),
            Err(ClockError::NotPaused)
        );
    }

    #[test]
    fn pause_freezes_on_a_tick_boundary() {
        let origin = std::time::Instant::now();
        let clock = Clock::new(origin, Duration::from_millis(1), false);
        std::thread::sleep(Duration::from_micros(300));
        clock.pause().unwrap();
        let since = clock.now().into_std().duration_since(origin);
        assert_eq!(
            since.as_nanos() % 1_000_000,
            0,
            "{since:?} is not a whole tick"
        );
    }
}
