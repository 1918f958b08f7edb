//! Deterministic time for tests: [`pause`], [`resume`] and [`advance`].
//!
//! A paused clock moves only when told to, by [`advance`], or by itself when the runtime is
//! idle: once every worker, every `block_on` thread and every blocking section the runtime
//! knows of is idle and a timer is pending, worker 0 moves the clock straight to that timer
//! and fires it (auto-advance; the accounting is in `crate::park`). A test of a day-long
//! sleep finishes at once, and a program whose tasks are parked when it moves the clock
//! observes the same instants on every run. (On a multi-threaded runtime, tasks run on worker
//! threads beside the caller: a task spawned just before an `advance` may not have reached its
//! first timer yet, so wait for it, with a channel say, rather than yield. On a current-thread
//! runtime they run on the caller's thread whenever it yields, as on tokio's.)

use std::fmt;
use std::future::Future;
use std::panic::Location;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use super::clock::ClockError;
use crate::runtime::Handle;

/// Pauses the current runtime's clock.
///
/// From now on [`Instant::now`](crate::time::Instant::now) inside the runtime returns the
/// paused time, timers fire only as [`advance`] or auto-advance move it, and the clock stays
/// put until [`resume`]. The clock freezes at its current reading rounded up to the next
/// timer tick, so durations that are whole ticks line up exactly.
///
/// Works on the current-thread runtime and on the multi-threaded one with any number of
/// workers.
///
/// # Examples
///
/// ```
/// use escapement::time::{self, Duration, Instant};
///
/// # escapement::Runtime::new().unwrap().block_on(async {
/// time::pause();
/// let start = Instant::now();
/// time::sleep(Duration::from_secs(3600)).await; // auto-advance: returns at once
/// assert_eq!(start.elapsed(), Duration::from_secs(3600));
/// time::resume();
/// # });
/// ```
///
/// # Panics
///
/// If the clock is already paused, or if called outside a runtime.
#[track_caller]
pub fn pause() {
    let handle = Handle::current_for("escapement::time::pause");
    if let Err(ClockError::AlreadyPaused) = handle.driver().clock().pause() {
        panic!("escapement::time::pause: the clock is already paused");
    }
    // With every thread of the runtime idle, no thread goes idle after this to nudge worker 0
    // (the caller may be outside `block_on`, which the count does not hold), and worker 0 may
    // be parked toward a far timer on the real clock: wake it to look for a jump.
    handle.driver().unpark();
}

/// Lets the current runtime's paused clock run again, from the time it shows.
///
/// # Panics
///
/// If the clock is not paused, or if called outside a runtime.
#[track_caller]
pub fn resume() {
    let handle = Handle::current_for("escapement::time::resume");
    if let Err(ClockError::NotPaused) = handle.driver().clock().resume() {
        panic!("escapement::time::resume: the clock is not paused");
    }
    // Worker 0 may be parked with no timeout while the clock was paused.
    handle.driver().unpark();
}

/// Moves the current runtime's paused clock forward by exactly `duration`.
///
/// When the returned future completes, the clock reads exactly `duration` later (to the
/// nanosecond), and every timer due at or before that time (its deadline rounded up to the
/// tick) has fired and its task has been woken. Nothing happens until the future is first
/// polled: it then finds the runtime it is polled in, checks that its clock is paused, and
/// moves it. So, as with tokio, it may be made outside the runtime and handed to
/// [`Runtime::block_on`](crate::Runtime::block_on), or before the clock is paused.
///
/// A `duration` that would overflow [`Instant`](crate::time::Instant) moves the clock about a
/// century. A clock moved past the driver's last tick (548 million years after the runtime
/// started, at the default 1 ms tick) fires no timer armed after that, as none could fire
/// without coming early (see "The largest duration" in `docs/guarantees.md`).
///
/// Having moved the clock and fired what is due, it yields once before it completes, as
/// [`yield_now`](crate::task::yield_now) does (a task is held back behind the other ready
/// tasks, those that yielded before included): on a current-thread runtime the tasks already
/// woken (those the advance woke included) run once, on the new time, before the code after
/// `advance(d).await` does, up to 61 of them (the thread polls its `block_on` future again
/// after every 61 tasks it runs; yield again for more). Tokio's yields too, but fires its
/// timers only at its next park, after the body has gone on (see "Where tokio code behaves
/// differently" in `docs/guarantees.md`).
///
/// # Examples
///
/// ```
/// use escapement::time::{self, Duration, Instant};
///
/// let rt = escapement::Builder::new().start_paused(true).build().unwrap();
/// rt.block_on(async {
///     let start = Instant::now();
///     time::advance(Duration::from_millis(1_500)).await;
///     assert_eq!(Instant::now() - start, Duration::from_millis(1_500));
/// });
/// let start = rt.block_on(async { Instant::now() });
/// rt.block_on(time::advance(Duration::from_secs(2)));
/// assert_eq!(rt.block_on(async { Instant::now() }) - start, Duration::from_secs(2));
/// ```
///
/// # Panics
///
/// The first poll of the returned future panics if it is polled outside a runtime, or if
/// that runtime's clock is not paused. The message names where `advance` was called.
#[track_caller]
pub fn advance(duration: Duration) -> Advance {
    Advance {
        caller: Some(Location::caller()),
        duration,
    }
}

/// The future of [`advance`].
///
/// # Cancel safety
///
/// Dropping it before its first poll leaves the clock where it was; once polled it has
/// already moved the clock and fired the timers.
#[must_use = "the clock moves only when the future is polled"]
pub struct Advance {
    /// Where `advance` was called, for the panics; `None` once the advance is done.
    caller: Option<&'static Location<'static>>,
    duration: Duration,
}

impl Advance {
    /// Moves the clock and fires what it makes due.
    fn advance(&self, caller: &'static Location<'static>) {
        let Ok(handle) = Handle::try_current() else {
            panic!(
                "escapement::time::advance must be polled from inside an escapement runtime \
                 (advance called at {caller}): in Runtime::block_on, in a spawned task, or \
                 under Handle::enter"
            )
        };
        if handle.driver().advance_paused(self.duration).is_err() {
            panic!(
                "escapement::time::advance: the clock is not paused (advance called at \
                 {caller}; call time::pause first, or build the runtime with start_paused)"
            )
        }
    }
}

impl Future for Advance {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let Some(caller) = self.caller.take() else {
            return Poll::Ready(());
        };
        self.advance(caller);
        // Yields once, as tokio's does (with `yield_now`), so that the tasks the advance woke
        // run first, and so do those that yielded before: the task is held back as a
        // `yield_now` holds it, not queued again at once, or a task advancing in a loop would
        // keep them waiting for most of the `global_queue_interval`.
        crate::task::coop::note_yield();
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

impl fmt::Debug for Advance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Advance")
            .field("duration", &self.duration)
            .finish_non_exhaustive()
    }
}
