//! Many timers at once. On the real clock, 10,000 random sleeps spread over 4 workers (and
//! 2,000 on one) are never early, checked against both `std` and the runtime's `Instant`.
//! On the paused clock, 10,000 sleeps sharing one deadline all fire exactly then, and
//! sleeps spread over every level of the wheel (milliseconds to years) each end exactly at
//! their rounded-up deadline.

mod support;

use std::time::Duration;

use escapement::time::{sleep, sleep_until, Instant};
use futures::stream::{FuturesUnordered, StreamExt};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use support::{paused, running};

/// `count` tasks each sleep a random duration under 50 ms; none may finish early.
fn random_sleeps_are_never_early(workers: usize, count: u64) {
    let rt = running(workers);
    let real = std::time::Instant::now();
    rt.block_on(async {
        let tasks: Vec<_> = (0..count)
            .map(|seed| {
                escapement::spawn(async move {
                    let mut rng = SmallRng::seed_from_u64(seed);
                    let duration = Duration::from_nanos(rng.random_range(0..50_000_000));
                    let start = std::time::Instant::now();
                    let delay = sleep(duration);
                    let deadline = delay.deadline();
                    delay.await;
                    let elapsed = start.elapsed();
                    assert!(elapsed >= duration, "early: {elapsed:?} < {duration:?}");
                    assert!(Instant::now() >= deadline, "before its deadline");
                })
            })
            .collect();
        for task in tasks {
            task.await.expect("no sleep was early");
        }
    });
    assert!(real.elapsed() < Duration::from_secs(120), "hung");
}

#[test]
fn ten_thousand_random_sleeps_across_workers_are_never_early() {
    random_sleeps_are_never_early(4, 10_000);
}

#[test]
fn random_sleeps_on_one_worker_are_never_early() {
    random_sleeps_are_never_early(1, 2_000);
}

#[test]
fn ten_thousand_sleeps_sharing_a_deadline_fire_together() {
    let rt = paused(4);
    rt.block_on(async {
        let deadline = Instant::now() + Duration::from_millis(250);
        let sleeps: FuturesUnordered<_> = (0..10_000)
            .map(|_| async move {
                sleep_until(deadline).await;
                Instant::now()
            })
            .collect();
        let woke: Vec<Instant> = sleeps.collect().await;
        assert_eq!(woke.len(), 10_000);
        assert!(woke.iter().all(|&at| at == deadline));
    });
}

#[test]
fn sleeps_spread_over_every_wheel_level_end_exactly_on_time() {
    let rt = paused(3);
    rt.block_on(async {
        let start = Instant::now();
        let mut rng = SmallRng::seed_from_u64(7);
        let tasks: Vec<_> = (0..3_000)
            .map(|_| {
                // Up to 2^40 ns .. 2^66 ns: from about a millisecond to about two years.
                let scale = rng.random_range(20..56u32);
                let nanos = rng.random_range(1..(1u64 << scale));
                let duration = Duration::from_nanos(nanos);
                escapement::spawn(async move {
                    sleep(duration).await;
                    (duration, start.elapsed())
                })
            })
            .collect();
        for task in tasks {
            let (duration, elapsed) = task.await.expect("the task completes");
            let tick_ns = duration.as_nanos().div_ceil(1_000_000) * 1_000_000;
            assert_eq!(elapsed.as_nanos(), tick_ns, "slept {duration:?}");
        }
    });
}
