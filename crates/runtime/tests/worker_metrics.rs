//! The per-worker metrics that tokio has stable: `worker_park_count`,
//! `worker_park_unpark_count` (odd while the worker is parked) and
//! `worker_total_busy_duration`, on a multi-threaded runtime and a current-thread one: idle
//! time is not busy time, and busy time survives a `block_in_place` hand-off; an index past
//! the last worker panics; a runtime built with `metrics(false)` counts nothing.

mod support;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use escapement::time::sleep;
use escapement::{Builder, RuntimeMetrics};

use support::running;

/// Waits until `done` holds, failing after ten seconds (a bound that only catches a hang).
fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let begin = Instant::now();
    while !done() {
        assert!(begin.elapsed() < Duration::from_secs(10), "never: {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn all_parked(metrics: &RuntimeMetrics) -> bool {
    (0..metrics.num_workers()).all(|w| metrics.worker_park_unpark_count(w) % 2 == 1)
}

#[test]
fn idle_workers_are_parked_and_a_woken_one_counts_another_park() {
    let rt = running(2);
    let metrics = rt.metrics();
    eventually("both workers parked", || all_parked(&metrics));
    let mut parks = [0; 2];
    for (w, parks) in parks.iter_mut().enumerate() {
        // One park and one unpark per park, but for the one it is in (read again if the
        // worker moved between the two reads).
        eventually("two readings agree", || {
            *parks = metrics.worker_park_count(w);
            let both = metrics.worker_park_unpark_count(w);
            *parks == metrics.worker_park_count(w) && both + 1 == 2 * *parks
        });
        assert!(*parks >= 1);
    }
    // A task wakes a worker, which parks again once it is done.
    rt.block_on(async { escapement::spawn(async {}).await.unwrap() });
    eventually("a worker parked again", || {
        all_parked(&metrics) && (0..2).any(|w| metrics.worker_park_count(w) > parks[w])
    });
}

#[test]
fn a_task_that_keeps_its_worker_busy_counts_as_busy_time() {
    let rt = running(1);
    let metrics = rt.metrics();
    eventually("the worker parked", || all_parked(&metrics));
    let before = metrics.worker_total_busy_duration(0);
    rt.block_on(async {
        escapement::spawn(async { std::thread::sleep(Duration::from_millis(50)) })
            .await
            .unwrap()
    });
    // Counted at the worker's next park.
    eventually("the busy time counted", || {
        metrics.worker_total_busy_duration(0) - before >= Duration::from_millis(50)
    });
}

#[test]
fn an_idle_worker_is_not_busy() {
    let rt = running(1);
    let metrics = rt.metrics();
    eventually("the worker parked", || all_parked(&metrics));
    let before = metrics.worker_total_busy_duration(0);
    let parks = metrics.worker_park_count(0);
    std::thread::sleep(Duration::from_millis(300));
    // Wake it, so that its next park counts whatever it counts for the idle time.
    rt.block_on(async { escapement::spawn(async {}).await.unwrap() });
    eventually("the worker parked again", || {
        all_parked(&metrics) && metrics.worker_park_count(0) > parks
    });
    let busy = metrics.worker_total_busy_duration(0) - before;
    assert!(
        busy < Duration::from_millis(150),
        "busy {busy:?} of 300 ms idle"
    );
}

#[test]
fn busy_time_before_block_in_place_is_counted_and_the_new_thread_goes_on() {
    let rt = running(1);
    let metrics = rt.metrics();
    eventually("the worker parked", || all_parked(&metrics));
    let before = metrics.worker_total_busy_duration(0);
    rt.block_on(async {
        escapement::spawn(async {
            let begin = Instant::now();
            while begin.elapsed() < Duration::from_millis(40) {}
            // The worker goes to another thread, which has it by the time the closure returns
            // (or, if that thread was slow to start, this one takes it back).
            escapement::task::block_in_place(|| std::thread::sleep(Duration::from_millis(50)));
        })
        .await
        .unwrap();
        // On whichever thread now has the worker.
        escapement::spawn(async {
            let begin = Instant::now();
            while begin.elapsed() < Duration::from_millis(40) {}
        })
        .await
        .unwrap()
    });
    eventually("both spins counted", || {
        metrics.worker_total_busy_duration(0) - before >= Duration::from_millis(80)
    });
}

#[test]
fn a_current_thread_runtime_counts_the_parks_of_the_thread_in_block_on() {
    let rt = Builder::new_current_thread().build().expect("a runtime");
    let metrics = rt.metrics();
    assert_eq!(metrics.num_workers(), 1);
    assert_eq!(metrics.worker_park_count(0), 0, "no block_on yet");
    rt.block_on(async {
        sleep(Duration::from_millis(5)).await;
        let begin = Instant::now();
        while begin.elapsed() < Duration::from_millis(20) {}
    });
    assert!(metrics.worker_park_count(0) >= 1, "parked for the sleep");
    assert_eq!(
        metrics.worker_park_unpark_count(0) % 2,
        0,
        "not parked once block_on returned"
    );
    // The spin after the last park is counted when block_on returns.
    assert!(metrics.worker_total_busy_duration(0) >= Duration::from_millis(20));
}

#[test]
fn a_worker_index_past_the_last_panics() {
    let rt = running(2);
    let metrics = rt.metrics();
    for read in [
        |m: &RuntimeMetrics| {
            m.worker_park_count(2);
        },
        |m: &RuntimeMetrics| {
            m.worker_park_unpark_count(2);
        },
        |m: &RuntimeMetrics| {
            m.worker_total_busy_duration(2);
        },
    ] {
        let panic = catch_unwind(AssertUnwindSafe(|| read(&metrics))).unwrap_err();
        let message = panic.downcast_ref::<String>().expect("a formatted message");
        assert_eq!(
            message,
            "worker index 2 out of range: the runtime has 2 workers"
        );
    }
}

#[test]
fn a_runtime_without_metrics_counts_no_parks() {
    let rt = Builder::new()
        .worker_threads(1)
        .metrics(false)
        .build()
        .expect("a runtime");
    rt.block_on(async {
        escapement::spawn(async { sleep(Duration::from_millis(5)).await })
            .await
            .unwrap()
    });
    let metrics = rt.metrics();
    assert_eq!(metrics.worker_park_count(0), 0);
    assert_eq!(metrics.worker_park_unpark_count(0), 0);
    assert_eq!(metrics.worker_total_busy_duration(0), Duration::ZERO);
}
