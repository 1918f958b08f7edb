//! `Runtime::metrics`: the timer counters, the lateness histogram, and `metrics(false)`.

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
    // Registrations: 3 sleeps + 1 cancelled + the reset one (linked once at its first poll;
    // the later reset moves it without re-linking, the earlier one re-links it).
    assert_eq!(metrics.timers_registered(), 6);
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
