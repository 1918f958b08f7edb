//! `interval` and `interval_at` on the paused clock: the first tick at once, then exactly
//! every period; `interval_at`'s first tick at its start; `reset`, `reset_immediately`,
//! `reset_after` and `reset_at`; `poll_tick` registering its waker only when it returns
//! `Pending`, and keeping none after it returns `Ready`; the accessors; a period of decades
//! kept as given; a zero period panicking; and ticks never early on the real clock.

mod support;

use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use escapement::time::{
    self, interval, interval_at, Duration, Instant, Interval, MissedTickBehavior,
};

use support::{paused, CountingWaker};

fn poll_tick(ticker: &mut Interval, waker: &Waker) -> Poll<Instant> {
    ticker.poll_tick(&mut Context::from_waker(waker))
}

#[test]
fn ticks_at_zero_then_every_period() {
    for workers in [1, 4] {
        let rt = paused(workers);
        rt.block_on(async {
            let start = Instant::now();
            let mut ticker = interval(Duration::from_millis(300));
            for n in 0..3u32 {
                let due = ticker.tick().await;
                let expected = start + Duration::from_millis(300) * n;
                assert_eq!(due, expected, "tick {n} is due at {n} periods");
                assert_eq!(Instant::now(), expected, "tick {n} completes when due");
            }
        });
    }
}

#[test]
fn the_first_tick_completes_at_the_first_poll() {
    let rt = paused(1);
    rt.block_on(async {
        let (_counter, waker) = CountingWaker::waker();
        let mut ticker = interval(Duration::from_millis(10));
        assert_eq!(poll_tick(&mut ticker, &waker), Poll::Ready(Instant::now()));
        assert!(poll_tick(&mut ticker, &waker).is_pending());
    });
}

#[test]
fn interval_at_first_ticks_at_its_start() {
    let rt = paused(2);
    rt.block_on(async {
        let start = Instant::now() + Duration::from_millis(250);
        let mut ticker = interval_at(start, Duration::from_millis(40));
        assert_eq!(ticker.tick().await, start);
        assert_eq!(Instant::now(), start);
        assert_eq!(ticker.tick().await, start + Duration::from_millis(40));
        assert_eq!(Instant::now(), start + Duration::from_millis(40));
    });
}

#[test]
fn interval_at_a_past_start_ticks_at_once_and_counts_from_the_start() {
    let rt = paused(1);
    rt.block_on(async {
        let start = Instant::now();
        time::advance(Duration::from_millis(3)).await;
        let mut ticker = interval_at(start, Duration::from_millis(10));
        assert_eq!(
            ticker.tick().await,
            start,
            "3 ms late is within the tolerance"
        );
        assert_eq!(ticker.tick().await, start + Duration::from_millis(10));
        assert_eq!(Instant::now(), start + Duration::from_millis(10));
    });
}

#[test]
fn reset_restarts_the_schedule_one_period_from_now() {
    let rt = paused(1);
    rt.block_on(async {
        let start = Instant::now();
        let mut ticker = interval(Duration::from_millis(100));
        ticker.tick().await;
        time::advance(Duration::from_millis(30)).await;
        ticker.reset();
        assert_eq!(ticker.tick().await, start + Duration::from_millis(130));
        assert_eq!(ticker.tick().await, start + Duration::from_millis(230));
        assert_eq!(Instant::now(), start + Duration::from_millis(230));
    });
}

#[test]
fn reset_immediately_ticks_now() {
    let rt = paused(1);
    rt.block_on(async {
        let start = Instant::now();
        let mut ticker = interval(Duration::from_millis(100));
        ticker.tick().await;
        time::advance(Duration::from_millis(30)).await;
        ticker.reset_immediately();
        assert_eq!(ticker.tick().await, start + Duration::from_millis(30));
        assert_eq!(Instant::now(), start + Duration::from_millis(30));
        assert_eq!(ticker.tick().await, start + Duration::from_millis(130));
    });
}

#[test]
fn reset_immediately_ticks_now_within_the_tick_the_next_one_was_armed_for() {
    let rt = paused(1);
    rt.block_on(async {
        // The paused clock starts on a tick's boundary: the pending tick at 900 µs and the
        // reset's 500 µs share the 1 ms tick.
        let start = Instant::now();
        let mut ticker = interval(Duration::from_micros(900));
        ticker.tick().await;
        let (_counter, waker) = CountingWaker::waker();
        assert_eq!(poll_tick(&mut ticker, &waker), Poll::Pending);
        time::advance(Duration::from_micros(500)).await;
        ticker.reset_immediately();
        let now = start + Duration::from_micros(500);
        assert_eq!(poll_tick(&mut ticker, &waker), Poll::Ready(now));
    });
}

#[test]
fn reset_after_and_reset_at_move_the_next_tick() {
    let rt = paused(2);
    rt.block_on(async {
        let start = Instant::now();
        let mut ticker = interval(Duration::from_millis(100));
        ticker.tick().await;
        ticker.reset_after(Duration::from_millis(7));
        assert_eq!(ticker.tick().await, start + Duration::from_millis(7));
        assert_eq!(Instant::now(), start + Duration::from_millis(7));
        ticker.reset_at(start + Duration::from_millis(500));
        assert_eq!(ticker.tick().await, start + Duration::from_millis(500));
        assert_eq!(ticker.tick().await, start + Duration::from_millis(600));
        assert_eq!(Instant::now(), start + Duration::from_millis(600));
    });
}

#[test]
fn reset_while_a_tick_is_pending_moves_it() {
    let rt = paused(1);
    rt.block_on(async {
        let start = Instant::now();
        let mut ticker = interval(Duration::from_millis(100));
        ticker.tick().await;
        let (counter, waker) = CountingWaker::waker();
        assert!(poll_tick(&mut ticker, &waker).is_pending());
        ticker.reset_at(start + Duration::from_millis(40));
        time::advance(Duration::from_millis(40)).await;
        assert_eq!(counter.wakes(), 1, "woken at the earlier deadline");
        assert_eq!(
            poll_tick(&mut ticker, &waker),
            Poll::Ready(start + Duration::from_millis(40))
        );
        ticker.reset_at(start + Duration::from_millis(400));
        assert!(poll_tick(&mut ticker, &waker).is_pending());
        time::advance(Duration::from_millis(100)).await;
        assert_eq!(counter.wakes(), 1, "not at the old schedule's 140 ms");
    });
}

#[test]
fn poll_tick_registers_its_waker_only_when_pending() {
    let rt = paused(2);
    rt.block_on(async {
        let mut ticker = interval(Duration::from_millis(50));
        let (ready_counter, ready_waker) = CountingWaker::waker();
        assert!(poll_tick(&mut ticker, &ready_waker).is_ready());
        // The tick after the ready one passes with nobody polling.
        time::advance(Duration::from_millis(60)).await;
        assert_eq!(
            ready_counter.wakes(),
            0,
            "the waker of a Ready poll is never woken"
        );

        let (pending_counter, pending_waker) = CountingWaker::waker();
        assert!(poll_tick(&mut ticker, &pending_waker).is_ready(), "50 ms");
        assert!(
            poll_tick(&mut ticker, &pending_waker).is_pending(),
            "100 ms"
        );
        time::advance(Duration::from_millis(40)).await;
        assert_eq!(pending_counter.wakes(), 1, "the waker of a Pending poll is");
        assert!(poll_tick(&mut ticker, &ready_waker).is_ready());
        time::advance(Duration::from_millis(200)).await;
        assert_eq!(pending_counter.wakes(), 1);
        assert_eq!(ready_counter.wakes(), 0);
    });
}

#[test]
fn a_ready_tick_lets_go_of_its_waker() {
    let rt = paused(1);
    rt.block_on(async {
        let mut ticker = interval(Duration::from_millis(10));
        let (counter, waker) = CountingWaker::waker();
        assert!(poll_tick(&mut ticker, &waker).is_ready(), "the first tick");
        assert_eq!(
            Arc::strong_count(&counter),
            2,
            "the Ready poll kept no clone"
        );
        assert!(poll_tick(&mut ticker, &waker).is_pending());
        assert_eq!(Arc::strong_count(&counter), 3, "the Pending poll keeps one");
        time::advance(Duration::from_millis(10)).await;
        assert_eq!(counter.wakes(), 1);
        assert_eq!(
            Arc::strong_count(&counter),
            2,
            "the fire woke and dropped it"
        );
        // Polled after the fire: the poll stores a clone of its waker before it sees the
        // fire, and the Ready tick disarms the timer and drops the clone.
        let (other, other_waker) = CountingWaker::waker();
        assert!(poll_tick(&mut ticker, &other_waker).is_ready(), "10 ms");
        assert_eq!(Arc::strong_count(&other), 2, "the Ready poll kept no clone");
        drop(other_waker);
        assert_eq!(Arc::strong_count(&other), 1);
    });
}

#[test]
fn the_tick_future_is_cancel_safe() {
    let rt = paused(1);
    rt.block_on(async {
        let start = Instant::now();
        let mut ticker = interval(Duration::from_millis(100));
        ticker.tick().await;
        {
            let tick = pin!(ticker.tick());
            let mut cx = Context::from_waker(futures::task::noop_waker_ref());
            assert!(std::future::Future::poll(tick, &mut cx).is_pending());
        }
        time::advance(Duration::from_millis(20)).await;
        assert_eq!(ticker.tick().await, start + Duration::from_millis(100));
    });
}

#[test]
fn a_period_of_decades_is_kept_and_ticks_on_time() {
    const FORTY_YEARS: Duration = Duration::from_secs(40 * 365 * 86_400);
    let rt = paused(1);
    rt.block_on(async {
        let start = Instant::now();
        let mut ticker = interval(FORTY_YEARS);
        assert_eq!(ticker.period(), FORTY_YEARS);
        assert_eq!(ticker.tick().await, start);
        assert_eq!(ticker.tick().await, start + FORTY_YEARS);
        assert_eq!(
            start.elapsed(),
            FORTY_YEARS,
            "auto-advance ran to the second tick"
        );
    });
}

#[test]
fn accessors_report_the_configuration() {
    let rt = paused(1);
    rt.block_on(async {
        let mut ticker = interval(Duration::from_millis(15));
        assert_eq!(ticker.period(), Duration::from_millis(15));
        assert_eq!(ticker.missed_tick_behavior(), MissedTickBehavior::Burst);
        assert_eq!(MissedTickBehavior::default(), MissedTickBehavior::Burst);
        ticker.set_missed_tick_behavior(MissedTickBehavior::Skip);
        assert_eq!(ticker.missed_tick_behavior(), MissedTickBehavior::Skip);
        let debug = format!("{ticker:?}");
        assert!(
            debug.contains("Interval") && debug.contains("Skip"),
            "{debug}"
        );
    });
}

#[test]
#[should_panic(expected = "`period` must be non-zero")]
fn a_zero_period_panics() {
    let rt = paused(1);
    let _guard = rt.enter();
    let _ = interval(Duration::ZERO);
}

#[test]
#[should_panic(expected = "`period` must be non-zero")]
fn a_zero_period_panics_in_interval_at() {
    let rt = paused(1);
    let _guard = rt.enter();
    let _ = interval_at(Instant::now(), Duration::ZERO);
}

#[test]
fn ticks_are_never_early_on_the_real_clock() {
    let rt = escapement::Builder::new()
        .worker_threads(2)
        .build()
        .expect("a runtime");
    rt.block_on(async {
        let period = Duration::from_millis(10);
        let start = Instant::now();
        let mut ticker = interval_at(start, period);
        for n in 0..5u32 {
            let due = ticker.tick().await;
            assert!(due >= start + period * n, "tick {n} due early");
            assert!(
                Instant::now() >= due,
                "tick {n} completed before it was due"
            );
        }
        assert!(start.elapsed() < Duration::from_secs(10), "hung");
    });
}
