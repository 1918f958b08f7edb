//! [`Sleep`], [`sleep`] and [`sleep_until`].

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use pin_project_lite::pin_project;

use super::driver_ref::DriverRef;
use super::entry::TimerEntry;
use super::Instant;
use crate::runtime::Handle;
use crate::task::coop;

/// Waits until `duration` has elapsed.
///
/// The timer fires at or after `now + duration`, rounded up to the runtime's timer tick
/// (1 ms by default); never before. A huge duration (up to `Duration::MAX`) waits
/// "forever": the deadline saturates about a century ahead instead of overflowing.
///
/// The sleep registers with the runtime's timer driver when it is first polled, not when it
/// is created, and allocates nothing.
///
/// # Examples
///
/// ```
/// use escapement::time::{sleep, Duration, Instant};
///
/// # escapement::Runtime::new().unwrap().block_on(async {
/// let start = Instant::now();
/// sleep(Duration::from_millis(10)).await;
/// assert!(start.elapsed() >= Duration::from_millis(10));
/// # });
/// ```
///
/// # Panics
///
/// If called outside an escapement runtime (outside `block_on`, a spawned task, or a
/// [`Handle::enter`] guard).
///
/// # Cancel safety
///
/// Dropping the `Sleep` before it completes cancels the timer (an O(1) unlink).
#[inline]
#[track_caller]
pub fn sleep(duration: Duration) -> Sleep {
    Sleep::after(
        Handle::with_current("escapement::time::sleep", Handle::timer_driver),
        duration,
    )
}

/// Waits until `deadline`.
///
/// A deadline in the past completes at the first poll.
///
/// # Examples
///
/// ```
/// use escapement::time::{sleep_until, Duration, Instant};
///
/// # escapement::Runtime::new().unwrap().block_on(async {
/// let deadline = Instant::now() + Duration::from_millis(5);
/// sleep_until(deadline).await;
/// assert!(Instant::now() >= deadline);
/// # });
/// ```
///
/// # Panics
///
/// If called outside an escapement runtime.
///
/// # Cancel safety
///
/// Dropping the `Sleep` early cancels the timer.
#[inline]
#[track_caller]
pub fn sleep_until(deadline: Instant) -> Sleep {
    Sleep::until(
        Handle::with_current("escapement::time::sleep_until", Handle::timer_driver),
        deadline,
    )
}

pin_project! {
    /// The future of [`sleep`] and [`sleep_until`].
    ///
    /// It belongs to the runtime it was created in, and may be polled from any thread or
    /// runtime while that runtime lives.
    ///
    /// # Panics
    ///
    /// Polling it after its runtime has shut down panics: the runtime's timers are gone, and
    /// completing early would break the guarantee that a timer never fires before its
    /// deadline. A sleep that has elapsed completes instead: one that fired before the
    /// shutdown, or one polled after its deadline (tokio panics for these too). A task of
    /// the runtime whose poll outlived `shutdown_timeout` finds its sleeps pending instead:
    /// the worker cancels it once that poll returns. (Pending sleeps are woken at shutdown, so
    /// a task awaiting one is not left hanging; in a runtime that is shutting down, such tasks
    /// are cancelled anyway.)
    ///
    /// # Cancel safety
    ///
    /// Dropping it cancels the timer.
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct Sleep {
        #[pin]
        entry: TimerEntry,
    }
}

// The constructors take the driver, not the `Handle`: only a reference to the driver comes out of
// the thread-local access, and the timer is built after it, in place. Building the timer (96
// bytes then) inside `Handle::with_current`'s closure moved it through the closure's result and
// an `Option`, which made `timeout` around a ready future 1.2x tokio's cost instead of 0.94x
// (docs/benchmarks.md, (a)).
impl Sleep {
    /// Polls the timer without the cooperative budget (see `task::coop`).
    #[inline]
    #[track_caller]
    pub(crate) fn poll_unconstrained(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.project().entry.poll_elapsed(cx)
    }

    /// A sleep until `deadline`, which may already have passed.
    pub(crate) fn until(driver: DriverRef, deadline: Instant) -> Sleep {
        Sleep {
            entry: TimerEntry::new(driver, deadline, true),
        }
    }

    /// A sleep for `duration` from now.
    pub(crate) fn after(driver: DriverRef, duration: Duration) -> Sleep {
        let deadline = driver.clock().now().saturating_add(duration);
        // A deadline a tick or more ahead is still ahead at a first poll that follows soon;
        // one that is polled late registers and fires at the driver's next turn.
        let may_be_past = duration < driver.tick();
        Sleep {
            entry: TimerEntry::new(driver, deadline, may_be_past),
        }
    }

    /// The instant the sleep completes at (before rounding up to the tick).
    pub fn deadline(&self) -> Instant {
        self.entry.deadline()
    }

    /// Now, by the clock of the runtime the sleep belongs to, wherever it is polled.
    pub(crate) fn now(&self) -> Instant {
        self.entry.now()
    }

    /// Whether the timer has fired. A sleep fires once it is registered, by its first poll or
    /// a [`reset`](Sleep::reset), and its deadline has come; one never polled nor reset is
    /// not elapsed, as in tokio. After its runtime shut down, a registered sleep is elapsed
    /// once its deadline has passed, as its poll then completes.
    pub fn is_elapsed(&self) -> bool {
        self.entry.is_elapsed()
    }

    /// Moves the deadline, before or after the sleep completed. A deadline in the past
    /// completes at the next poll; the one exception is a sleep whose old deadline has come
    /// but which the driver has not fired yet, moved later but still into the past: it stays
    /// armed and completes when the driver fires it, at the end of the new deadline's tick
    /// (the driver rounds deadlines up to the tick), or at the driver's next turn if that
    /// has passed (as in tokio).
    /// Moving the deadline later than it was takes no lock. A sleep never polled is armed by
    /// its reset (as in tokio), so it fires at the new deadline, and reports
    /// [`is_elapsed`](Sleep::is_elapsed), whether or not it is polled.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::pin::pin;
    /// use escapement::time::{sleep, Duration, Instant};
    ///
    /// # escapement::Runtime::new().unwrap().block_on(async {
    /// let mut delay = pin!(sleep(Duration::from_secs(3600)));
    /// delay.as_mut().reset(Instant::now() + Duration::from_millis(1));
    /// delay.await;
    /// # });
    /// ```
    pub fn reset(self: Pin<&mut Self>, deadline: Instant) {
        self.project().entry.reset(deadline, true);
    }

    /// Moves the deadline without arming the timer: a sleep that has fired is armed again at
    /// its next poll, so no waker is woken before then.
    pub(crate) fn reset_without_reregister(self: Pin<&mut Self>, deadline: Instant) {
        self.project().entry.reset(deadline, false);
    }
}

impl Future for Sleep {
    type Output = ();

    #[track_caller]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        std::task::ready!(coop::poll_budget(cx));
        let elapsed = self.poll_unconstrained(cx);
        if elapsed.is_ready() {
            coop::made_progress();
        }
        elapsed
    }
}

impl fmt::Debug for Sleep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sleep")
            .field("deadline", &self.deadline())
            .field("elapsed", &self.is_elapsed())
            .finish()
    }
}
