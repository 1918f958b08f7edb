//! Timers and tasks crossing runtimes: a `Sleep` belongs to the runtime that created it and
//! may be polled inside another (in its `block_on` or its tasks), firing by its own
//! runtime's clock (real or paused, auto-advancing); `timeout` across runtimes; join handles
//! of one runtime awaited in another; an interval keeping its own runtime's schedule; a task
//! of one runtime spawning onto another; and a `Sleep` polled in another runtime after its
//! own shut down panics.

mod support;

use std::future::pending;
use std::time::Duration;

use escapement::time::{interval, sleep, timeout, Instant, MissedTickBehavior};

use support::{paused, running};

#[test]
fn a_sleep_from_one_runtime_completes_in_another_block_on() {
    for workers in [1, 3] {
        let first = running(workers);
        let second = running(workers);
        let delay = {
            let _guard = first.enter();
            sleep(Duration::from_millis(30))
        };
        let start = std::time::Instant::now();
        second.block_on(delay);
        let elapsed = start.elapsed();
        assert!(elapsed >= Duration::from_millis(30), "early: {elapsed:?}");
        assert!(elapsed < Duration::from_secs(10), "hung: {elapsed:?}");
    }
}

#[test]
fn a_sleep_from_one_runtime_completes_in_a_task_of_another() {
    let first = running(2);
    let second = running(2);
    let start = std::time::Instant::now();
    let delay = {
        let _guard = first.enter();
        sleep(Duration::from_millis(20))
    };
    let task = second.spawn(async move {
        delay.await;
        start.elapsed()
    });
    let elapsed = second.block_on(task).expect("the task completes");
    assert!(elapsed >= Duration::from_millis(20), "early: {elapsed:?}");
    assert!(elapsed < Duration::from_secs(10), "hung: {elapsed:?}");
}

#[test]
fn a_paused_runtimes_sleep_fires_by_its_own_clock_inside_a_running_one() {
    let first = paused(2);
    let second = running(2);
    let (delay, start) = {
        let _guard = first.enter();
        (sleep(Duration::from_secs(3_600)), Instant::now())
    };
    let real = std::time::Instant::now();
    second.block_on(delay);
    assert!(
        real.elapsed() < Duration::from_secs(10),
        "the paused clock jumped"
    );
    let _guard = first.enter();
    assert_eq!(start.elapsed(), Duration::from_secs(3_600));
}

#[test]
fn a_paused_runtimes_interval_keeps_its_own_schedule_polled_outside_it() {
    let paused = paused(1);
    let (mut ticker, start) = {
        let _guard = paused.enter();
        let mut ticker = interval(Duration::from_millis(100));
        ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
        (ticker, Instant::now())
    };
    // Real time passes while the paused clock stands still: by the caller's clock (the real
    // one, outside any runtime) the first tick would look 50 ms late and so missed.
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(futures::executor::block_on(ticker.tick()), start);
    let second = futures::executor::block_on(ticker.tick());
    assert_eq!(second - start, Duration::from_millis(100));
    // A reset reads the paused clock too: the next tick is one period after the paused now.
    std::thread::sleep(Duration::from_millis(20));
    ticker.reset();
    let third = futures::executor::block_on(ticker.tick());
    assert_eq!(third - start, Duration::from_millis(200));
}

#[test]
fn a_timeout_from_one_runtime_wraps_a_future_of_another() {
    // A paused runtime auto-advances as soon as its own threads are idle: its timeout runs
    // out at once, whatever the other runtime is doing.
    let frozen = paused(1);
    let second = running(2);
    let limited = {
        let _guard = frozen.enter();
        timeout(Duration::from_secs(5), pending::<()>())
    };
    assert!(second.block_on(limited).is_err());
    let live = running(1);
    let quick = {
        let _guard = live.enter();
        timeout(Duration::from_secs(30), second.spawn(async { 8 }))
    };
    assert_eq!(
        second
            .block_on(quick)
            .expect("in time")
            .expect("the task completes"),
        8
    );
}

#[test]
fn a_join_handle_of_one_runtime_is_awaited_in_another() {
    let first = running(2);
    let second = running(1);
    let on_first = first.spawn(async {
        sleep(Duration::from_millis(5)).await;
        std::thread::current().name().map(str::to_owned)
    });
    let name = second
        .block_on(async { escapement::spawn(on_first).await })
        .expect("the outer task completes")
        .expect("the inner task completes")
        .expect("workers are named");
    assert!(name.starts_with("escapement-worker"), "{name}");
}

#[test]
fn a_task_spawns_onto_another_runtime_through_its_handle() {
    let named = |name: &str| {
        escapement::Builder::new()
            .worker_threads(2)
            .thread_name(name)
            .build()
            .expect("a runtime")
    };
    let here = named("here");
    let there = named("there");
    let remote = there.handle().clone();
    let name = here
        .block_on(here.spawn(async move {
            remote
                .spawn(async { std::thread::current().name().map(str::to_owned) })
                .await
        }))
        .expect("the outer task completes")
        .expect("the inner task completes")
        .expect("workers are named");
    assert!(name.starts_with("there-"), "ran on {name}");
}

#[test]
fn each_block_on_reads_its_own_runtimes_clock() {
    let frozen = paused(1);
    let live = running(1);
    let paused_now = frozen.block_on(async { Instant::now() });
    let _guard = frozen.enter();
    std::thread::sleep(Duration::from_millis(5));
    let live_now = live.block_on(async { Instant::now() });
    assert!(
        live_now >= paused_now + Duration::from_millis(5),
        "the live clock"
    );
    assert_eq!(
        Instant::now(),
        paused_now,
        "the entered runtime's clock is back"
    );
}

#[test]
#[should_panic(expected = "polled after the escapement runtime that created it shut down")]
fn a_sleep_polled_in_another_runtime_after_its_own_shut_down_panics() {
    let first = running(1);
    let second = running(1);
    let delay = {
        let _guard = first.enter();
        sleep(Duration::from_secs(60))
    };
    drop(first);
    second.block_on(delay);
}
