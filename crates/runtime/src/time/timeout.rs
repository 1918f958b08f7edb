//! [`Timeout`], [`timeout`] and [`timeout_at`].

use std::fmt;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use pin_project_lite::pin_project;

use super::error::Elapsed;
use super::{Instant, Sleep};
use crate::runtime::Handle;
use crate::task::coop;

/// Requires `future` to complete within `duration`.
///
/// The output is `Ok` with the future's output, or `Err(Elapsed)` if the time ran out
/// first. The future is polled before the timer on every poll, so a future that is ready is
/// `Ok` even with a zero or past deadline; and a future that completes before the timer was
/// ever needed never touches the timer driver.
///
/// # Examples
///
/// ```
/// use escapement::time::{sleep, timeout, Duration};
///
/// # escapement::Runtime::new().unwrap().block_on(async {
/// let quick = timeout(Duration::from_secs(1), async { 7 }).await;
/// assert_eq!(quick, Ok(7));
/// let slow = timeout(Duration::from_millis(5), sleep(Duration::from_secs(60))).await;
/// assert!(slow.is_err());
/// # });
/// ```
///
/// # Panics
///
/// If called outside an escapement runtime.
///
/// # Cancel safety
///
/// Dropping the `Timeout` drops the inner future and cancels the timer.
#[inline]
#[track_caller]
pub fn timeout<F: IntoFuture>(duration: Duration, future: F) -> Timeout<F::IntoFuture> {
    let driver = Handle::with_current("escapement::time::timeout", Handle::timer_driver);
    let delay = Sleep::after(driver, duration);
    Timeout::new(future.into_future(), delay)
}

/// Requires `future` to complete before `deadline`; see [`timeout`].
///
/// # Examples
///
/// ```
/// use escapement::time::{timeout_at, Duration, Instant};
///
/// # escapement::Runtime::new().unwrap().block_on(async {
/// let deadline = Instant::now() + Duration::from_millis(50);
/// assert_eq!(timeout_at(deadline, async { "done" }).await, Ok("done"));
/// # });
/// ```
///
/// # Panics
///
/// If called outside an escapement runtime.
///
/// # Cancel safety
///
/// Dropping the `Timeout` drops the inner future and cancels the timer.
#[inline]
#[track_caller]
pub fn timeout_at<F: IntoFuture>(deadline: Instant, future: F) -> Timeout<F::IntoFuture> {
    let driver = Handle::with_current("escapement::time::timeout_at", Handle::timer_driver);
    let delay = Sleep::until(driver, deadline);
    Timeout::new(future.into_future(), delay)
}

pin_project! {
    /// The future of [`timeout`] and [`timeout_at`].
    ///
    /// # Panics
    ///
    /// Polled after its runtime shut down while the inner future is still pending, it
    /// panics, as polling a [`Sleep`] does.
    ///
    /// # Cancel safety
    ///
    /// Dropping it drops the inner future and cancels the timer.
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct Timeout<T> {
        #[pin]
        value: T,
        #[pin]
        delay: Sleep,
    }
}

impl<T> Timeout<T> {
    fn new(value: T, delay: Sleep) -> Timeout<T> {
        Timeout { value, delay }
    }

    /// The inner future.
    pub fn get_ref(&self) -> &T {
        &self.value
    }

    /// The inner future, mutably.
    pub fn get_mut(&mut self) -> &mut T {
        &mut self.value
    }

    /// The inner future, dropping the timer.
    pub fn into_inner(self) -> T {
        self.value
    }
}

impl<T: Future> Future for Timeout<T> {
    type Output = Result<T::Output, Elapsed>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let had_budget = coop::has_budget_remaining();
        if let Poll::Ready(output) = this.value.poll(cx) {
            return Poll::Ready(Ok(output));
        }
        let elapsed = if had_budget && !coop::has_budget_remaining() {
            // The inner future spent the last unit: the deadline is still looked at.
            this.delay.poll_unconstrained(cx)
        } else {
            this.delay.poll(cx)
        };
        elapsed.map(|()| Err(Elapsed::new()))
    }
}

impl<T: fmt::Debug> fmt::Debug for Timeout<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Timeout")
            .field("value", &self.value)
            .field("delay", &self.delay)
            .finish()
    }
}
