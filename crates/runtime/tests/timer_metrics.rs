//! `Runtime::metrics`: the timer counters (resets included: a registered timer ends fired or
//! cancelled, a shutdown cancelling those left), the lateness histogram, and `metrics(false)`.

use std::pin::pin;

use escapement::time::{sleep, Duration, Instant};
use escapement::{Builder, Runtime};

fn paused(workers: usize, metrics: bool) -> Runtime {
    Builder::new()
        .worker_threads(workers)
        .start_paused(true)
        .metrics(metrics)
        .build()
        .expect("a runtime")
}

#[test]
fn counters_follow_what_timers_do() {
    let rt = paused(2, true);
    rt.block_on(async {
        // Three sleeps that fire, registered from block_on and from tasks.
        sleep(Duration::from_millis(5)).await;
        let tasks: Vec<_> = (0..2)
            .map(|i| escapement::spawn(sleep(Duration::from_millis(10 + i))))
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        // One registered and cancelled.
        let mut cancelled = pin!(sleep(Duration::from_secs(60)));
        assert!(futures::poll!(cancelled.as_mut()).is_pending());
        // One reset twice before it fires (later, then earlier).
        let mut reset = pin!(sleep(Duration::from_millis(50)));
        assert!(futures::poll!(reset.as_mut()).is_pending());
        reset
            .as_mut()
            .reset(Instant::now() + Duration::from_millis(80));
        reset
            .as_mut()
            .reset(Instant::now() + Duration::from_millis(20));
        // A sleep never polled is never registered.
        let _unpolled = sleep(Duration::from_millis(1));
        let live = escapement::Handle::current().metrics().live_timers();
        assert_eq!(
            live, 2,
            "the cancelled-to-be and the reset timers are linked"
        );
        reset.await;
    });
    let metrics = rt.metrics();
    assert_eq!(metrics.workers(), 2);
    // Registrations: 3 sleeps + 1 cancelled + the reset one, registered once at its first
    // poll (the resets move it: the later one without the lock, the earlier one under it).
    assert_eq!(metrics.timers_registered(), 5);
    assert_eq!(metrics.timers_fired(), 4);
    assert_eq!(metrics.timers_cancelled(), 1);
    assert_eq!(metrics.timer_resets(), 2);
    assert_eq!(metrics.live_timers(), 0);
    assert_eq!(metrics.lateness().count(), metrics.timers_fired());
    // On the paused clock timers fire exactly at their tick.
    assert_eq!(
        metrics.lateness().quantile_upper_bound(1.0),
        Some(Duration::from_micros(1))
    );
}

/// What `reset` does to the counters, one timer at a time: a registered timer ends fired or
/// cancelled, so `registered == fired + cancelled` once none is live.
#[test]
fn resets_keep_registered_equal_to_fired_plus_cancelled() {
    /// `(registered, fired, cancelled, resets)` after `scenario` ran on a runtime of its own.
    fn counts(scenario: impl std::future::Future<Output = ()>) -> (u64, u64, u64, u64) {
        let rt = paused(1, true);
        rt.block_on(scenario);
        let m = rt.metrics();
        assert_eq!(m.live_timers(), 0);
        assert_eq!(
            m.timers_registered(),
            m.timers_fired() + m.timers_cancelled(),
            "{m:?}"
        );
        (
            m.timers_registered(),
            m.timers_fired(),
            m.timers_cancelled(),
            m.timer_resets(),
        )
    }
    let in_ms = |ms| Instant::now() + Duration::from_millis(ms);

    // Reset later, then dropped: one registration, cancelled.
    let later = counts(async move {
        let mut timer = pin!(sleep(Duration::from_secs(5)));
        assert!(futures::poll!(timer.as_mut()).is_pending());
        timer.as_mut().reset(in_ms(10_000));
    });
    assert_eq!(later, (1, 0, 1, 1));

    // Reset earlier, then fired: one registration, one fire.
    let earlier = counts(async move {
        let mut timer = pin!(sleep(Duration::from_secs(5)));
        assert!(futures::poll!(timer.as_mut()).is_pending());
        timer.as_mut().reset(in_ms(2));
        timer.await;
    });
    assert_eq!(earlier, (1, 1, 0, 1));

    // Reset to now: fired at once by the reset, not by the driver, so not in the lateness.
    let rt = paused(1, true);
    rt.block_on(async {
        let mut timer = pin!(sleep(Duration::from_secs(5)));
        assert!(futures::poll!(timer.as_mut()).is_pending());
        timer.as_mut().reset(Instant::now());
        timer.await;
    });
    let m = rt.metrics();
    assert_eq!((m.timers_registered(), m.timers_fired()), (1, 1));
    assert_eq!(m.lateness().count(), 0);

    // Reset earlier ten times, then dropped.
    let ten = counts(async move {
        let mut timer = pin!(sleep(Duration::from_secs(60)));
        assert!(futures::poll!(timer.as_mut()).is_pending());
        for i in 0..10 {
            timer.as_mut().reset(in_ms(50_000 - 1_000 * i));
        }
    });
    assert_eq!(ten, (1, 0, 1, 10));

    // Fired, then re-armed by a reset: a second registration, and a second fire.
    let rearmed = counts(async move {
        let mut timer = pin!(sleep(Duration::from_millis(1)));
        timer.as_mut().await;
        timer.as_mut().reset(in_ms(3));
        timer.await;
    });
    assert_eq!(rearmed, (2, 2, 0, 1));
}

/// A timer still in the wheel when the runtime shuts down will never fire: it counts as
/// cancelled, whether its owner drops it before or after the shutdown, or never polls it
/// again.
#[test]
fn timers_pending_at_shutdown_count_as_cancelled() {
    // On the real clock: a paused one would jump to the timers once the runtime idles.
    let rt = Builder::new()
        .worker_threads(1)
        .metrics(true)
        .build()
        .expect("a runtime");
    let metrics = rt.metrics();
    let mut held = {
        let _guard = rt.enter();
        Box::pin(sleep(Duration::from_secs(3600)))
    };
    rt.block_on(async {
        assert!(futures::poll!(held.as_mut()).is_pending());
        let mut dropped_later = Box::pin(sleep(Duration::from_secs(60)));
        assert!(futures::poll!(dropped_later.as_mut()).is_pending());
        // Held by a task that never runs again.
        escapement::spawn(async move {
            dropped_later.as_mut().await;
        });
    });
    assert_eq!(metrics.timers_registered(), 2);
    drop(rt);
    drop(held);
    assert_eq!(metrics.live_timers(), 0);
    assert_eq!(metrics.timers_fired(), 0);
    assert_eq!(metrics.timers_cancelled(), 2, "{metrics:?}");
}

#[test]
fn long_sleeps_cascade_and_worker0_wakes() {
    let rt = Builder::new().worker_threads(1).build().expect("a runtime");
    rt.block_on(async {
        sleep(Duration::from_millis(70)).await;
    });
    let metrics = rt.metrics();
    assert!(
        metrics.wheel_cascades() >= 1,
        "a 70 ms sleep starts above level 0"
    );
    assert!(
        metrics.driver_wakeups() >= 1,
        "worker 0 parked on the timer and woke"
    );
    assert!(metrics.lateness().quantile_upper_bound(0.5).is_some());
}

#[test]
fn a_runtime_without_metrics_counts_nothing() {
    let rt = paused(1, false);
    rt.block_on(async {
        sleep(Duration::from_millis(5)).await;
        let mut cancelled = pin!(sleep(Duration::from_secs(60)));
        assert!(futures::poll!(cancelled.as_mut()).is_pending());
    });
    let metrics = rt.metrics();
    assert_eq!(metrics.timers_registered(), 0);
    assert_eq!(metrics.timers_fired(), 0);
    assert_eq!(metrics.timers_cancelled(), 0);
    assert_eq!(metrics.lateness().count(), 0);
    assert_eq!(
        metrics.live_timers(),
        0,
        "the wheel's own count is always there"
    );
}

#[test]
fn metrics_are_readable_from_a_handle_inside_the_runtime() {
    let rt = paused(2, true);
    let fired = rt.block_on(async {
        sleep(Duration::from_millis(1)).await;
        escapement::Handle::current().metrics().timers_fired()
    });
    assert_eq!(fired, 1);
    assert!(format!("{:?}", rt.metrics()).contains("timers_fired: 1"));
}
