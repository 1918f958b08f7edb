//! `Duration::MAX` and the latest representable `Instant` through every constructor and
//! reset: `sleep`, `sleep_until`, `timeout`, `timeout_at`, `interval`, `interval_at`,
//! `Sleep::reset`, and `Interval::reset`, `reset_after` and `reset_at`. None panics or
//! overflows, none fires (raced against a one-second timer on the paused clock, the timer
//! wins at exactly one second), and each stays pending on the real clock. A deadline past
//! the driver's last tick never fires, nor does any timer once a paused clock is past it.

mod support;

use std::future::{pending, ready, Future};
use std::pin::{pin, Pin};
use std::task::{Context, Poll};

use escapement::time::{
    self, interval, interval_at, sleep, sleep_until, timeout, timeout_at, Duration, Instant,
};
use futures::task::noop_waker_ref;

use support::{far_from, paused};

const FIFTY_YEARS: Duration = Duration::from_secs(50 * 365 * 86_400);

/// Races `future` against a one-second sleep on the paused clock: the sleep must win, at
/// exactly one second.
async fn never_within_a_second<F: Future>(what: &str, future: F) {
    let start = Instant::now();
    let outcome = timeout(Duration::from_secs(1), future).await;
    assert!(outcome.is_err(), "{what} completed");
    assert_eq!(start.elapsed(), Duration::from_secs(1), "{what}");
}

#[test]
fn sleep_and_sleep_until_never_fire() {
    for workers in [1, 3] {
        paused(workers).block_on(async {
            let now = Instant::now();
            let forever = sleep(Duration::MAX);
            assert!(
                forever.deadline() > now + FIFTY_YEARS,
                "saturates far ahead"
            );
            never_within_a_second("sleep(MAX)", forever).await;
            let far = far_from(Instant::now());
            let until = sleep_until(far);
            assert_eq!(until.deadline(), far);
            never_within_a_second("sleep_until(far)", until).await;
        });
    }
}

#[test]
fn timeout_and_timeout_at_never_elapse() {
    paused(2).block_on(async {
        never_within_a_second("timeout(MAX)", timeout(Duration::MAX, pending::<()>())).await;
        let far = far_from(Instant::now());
        never_within_a_second("timeout_at(far)", timeout_at(far, pending::<()>())).await;
        assert_eq!(timeout(Duration::MAX, ready(1)).await, Ok(1));
        assert_eq!(timeout_at(far, ready(2)).await, Ok(2));
    });
}

#[test]
fn intervals_with_huge_periods_or_starts_tick_at_most_once() {
    paused(2).block_on(async {
        let start = Instant::now();
        let mut ticker = interval(Duration::MAX);
        // Kept as given (tokio's `period` returns it capped at about 30 years).
        assert_eq!(ticker.period(), Duration::MAX);
        assert_eq!(ticker.tick().await, start, "the first tick is at once");
        never_within_a_second("interval(MAX)'s second tick", ticker.tick()).await;

        let mut ticker = interval_at(Instant::now(), Duration::MAX);
        ticker.tick().await;
        never_within_a_second("interval_at(now, MAX)'s second tick", ticker.tick()).await;

        let far = far_from(Instant::now());
        let mut ticker = interval_at(far, Duration::from_millis(1));
        never_within_a_second("interval_at(far)'s first tick", ticker.tick()).await;
        let mut ticker = interval_at(far, Duration::MAX);
        never_within_a_second("interval_at(far, MAX)'s first tick", ticker.tick()).await;
    });
}

#[test]
fn sleep_reset_to_the_far_future_never_fires() {
    paused(2).block_on(async {
        let far = far_from(Instant::now());
        let mut cx = Context::from_waker(noop_waker_ref());

        // Before the first poll.
        let mut unregistered = pin!(sleep(Duration::from_millis(5)));
        unregistered.as_mut().reset(far);
        never_within_a_second("reset before registering", unregistered).await;

        // While armed: the later, lock-free path.
        let mut armed = pin!(sleep(Duration::from_millis(5)));
        assert!(armed.as_mut().poll(&mut cx).is_pending());
        armed.as_mut().reset(far);
        never_within_a_second("reset while armed", armed.as_mut()).await;
        // And back to something near, which still works.
        armed
            .as_mut()
            .reset(Instant::now() + Duration::from_millis(3));
        let start = Instant::now();
        armed.as_mut().await;
        assert_eq!(start.elapsed(), Duration::from_millis(3));

        // After it fired.
        armed.as_mut().reset(far);
        never_within_a_second("reset after firing", armed).await;
    });
}

#[test]
fn interval_resets_to_the_far_future_never_tick() {
    paused(1).block_on(async {
        let far = far_from(Instant::now());
        let mut ticker = interval(Duration::from_millis(10));
        ticker.tick().await;
        ticker.reset_after(Duration::MAX);
        never_within_a_second("reset_after(MAX)", ticker.tick()).await;
        ticker.reset_at(far);
        never_within_a_second("reset_at(far)", ticker.tick()).await;

        let mut forever = interval(Duration::MAX);
        forever.tick().await;
        forever.reset();
        never_within_a_second("reset() with period MAX", forever.tick()).await;
        forever.reset_immediately();
        let now = Instant::now();
        assert_eq!(
            forever.tick().await,
            now,
            "reset_immediately still ticks now"
        );
    });
}

#[test]
fn advancing_the_clock_by_duration_max_saturates() {
    paused(2).block_on(async {
        let start = Instant::now();
        let mut hour = pin!(sleep(Duration::from_secs(3_600)));
        let mut cx = Context::from_waker(noop_waker_ref());
        assert!(hour.as_mut().poll(&mut cx).is_pending());
        time::advance(Duration::MAX).await;
        assert!(Instant::now() > start + FIFTY_YEARS);
        assert_eq!(hour.as_mut().poll(&mut cx), Poll::Ready(()));
        // The clock still moves and timers still fire from there.
        let later = Instant::now();
        time::advance(Duration::from_millis(5)).await;
        assert_eq!(later.elapsed(), Duration::from_millis(5));
    });
}

/// Far past the driver's last tick (548 million years at the default 1 ms tick).
const A_BILLION_YEARS: Duration = Duration::from_secs(1_000_000_000 * 365 * 86_400);

#[test]
fn a_deadline_past_the_last_tick_is_no_target_for_auto_advance() {
    let rt = paused(1);
    let (release, released) = futures::channel::oneshot::channel::<()>();
    let waiting = std::thread::spawn(move || {
        // The runtime idles on the far sleep meanwhile, free to auto-advance.
        std::thread::sleep(std::time::Duration::from_millis(300));
        release.send(()).unwrap();
    });
    rt.block_on(async {
        let start = Instant::now();
        let far = escapement::spawn(sleep_until(start + A_BILLION_YEARS));
        released.await.unwrap();
        assert_eq!(start.elapsed(), Duration::ZERO, "the clock jumped");
        assert!(!far.is_finished());
    });
    waiting.join().unwrap();
}

#[test]
fn past_the_last_tick_no_timer_completes_early() {
    paused(1).block_on(async {
        for _ in 0..6 {
            time::advance(A_BILLION_YEARS / 5).await;
        }
        let start = Instant::now();
        let mut hour = pin!(sleep(Duration::from_secs(3_600)));
        let mut cx = Context::from_waker(noop_waker_ref());
        assert!(hour.as_mut().poll(&mut cx).is_pending());
        time::advance(Duration::from_secs(60)).await;
        assert!(hour.as_mut().poll(&mut cx).is_pending());
        assert_eq!(start.elapsed(), Duration::from_secs(60));
    });
}

#[test]
fn huge_timers_stay_pending_on_the_real_clock() {
    let rt = escapement::Builder::new()
        .worker_threads(2)
        .build()
        .expect("a runtime");
    rt.block_on(async {
        let far = far_from(Instant::now());
        let mut cx = Context::from_waker(noop_waker_ref());
        let mut futures: Vec<Pin<Box<dyn Future<Output = ()> + Send>>> = vec![
            Box::pin(sleep(Duration::MAX)),
            Box::pin(sleep_until(far)),
            Box::pin(async { timeout(Duration::MAX, pending::<()>()).await.unwrap() }),
            Box::pin(async { timeout_at(far, pending::<()>()).await.unwrap() }),
            Box::pin(async {
                let mut ticker = interval(Duration::MAX);
                ticker.tick().await;
                ticker.tick().await;
            }),
            Box::pin(async {
                interval_at(far, Duration::MAX).tick().await;
            }),
        ];
        for future in &mut futures {
            assert!(future.as_mut().poll(&mut cx).is_pending());
        }
        escapement::time::sleep(Duration::from_millis(20)).await;
        for future in &mut futures {
            assert!(future.as_mut().poll(&mut cx).is_pending());
        }
    });
}
