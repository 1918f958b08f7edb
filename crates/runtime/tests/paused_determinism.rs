//! Determinism under `start_paused`: a program of 10,000 seeded random sleeps (100 tasks of
//! 100 sleeps each, sub-millisecond parts included) observes the same instants on every
//! run. Each task records `Instant::now()` after each of its sleeps, as an offset from the
//! start; two runs on 4 workers, and one on 1 worker, must record the same sequences, and
//! each instant must be the sleep's deadline rounded up to the 1 ms tick (nothing late).

mod support;

use std::time::Duration;

use escapement::time::{sleep, Instant};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use support::paused;

const TASKS: u64 = 100;
const SLEEPS_PER_TASK: usize = 100;

/// The durations task `task` sleeps, in order.
fn durations(task: u64) -> Vec<Duration> {
    let mut rng = SmallRng::seed_from_u64(0xE5CA_9E00 + task);
    (0..SLEEPS_PER_TASK)
        .map(|_| match rng.random_range(0..4) {
            0 => Duration::ZERO,
            1 => Duration::from_nanos(rng.random_range(1..5_000_000)),
            2 => Duration::from_millis(rng.random_range(1..50)),
            _ => Duration::from_millis(rng.random_range(50..2_000)),
        })
        .collect()
}

/// Runs the program; returns, per task, the offsets it observed after each sleep.
fn run(workers: usize) -> Vec<Vec<Duration>> {
    let rt = paused(workers);
    let real = std::time::Instant::now();
    let observed = rt.block_on(async {
        let start = Instant::now();
        let tasks: Vec<_> = (0..TASKS)
            .map(|task| {
                escapement::spawn(async move {
                    let mut seen = Vec::with_capacity(SLEEPS_PER_TASK);
                    for duration in durations(task) {
                        sleep(duration).await;
                        seen.push(start.elapsed());
                    }
                    seen
                })
            })
            .collect();
        let mut observed = Vec::new();
        for task in tasks {
            observed.push(task.await.expect("the task completes"));
        }
        observed
    });
    assert!(real.elapsed() < Duration::from_secs(120), "hung");
    observed
}

/// What each task must observe: every sleep ends at its deadline rounded up to the tick.
fn expected() -> Vec<Vec<Duration>> {
    (0..TASKS)
        .map(|task| {
            let mut now_ns: u128 = 0;
            durations(task)
                .into_iter()
                .map(|duration| {
                    let deadline = now_ns + duration.as_nanos();
                    now_ns = deadline.div_ceil(1_000_000) * 1_000_000;
                    Duration::from_nanos(u64::try_from(now_ns).expect("a short run"))
                })
                .collect()
        })
        .collect()
}

#[test]
fn two_runs_observe_the_same_instants() {
    let first = run(4);
    let second = run(4);
    for (task, (a, b)) in first.iter().zip(&second).enumerate() {
        assert_eq!(a, b, "task {task} observed different instants");
    }
    assert_eq!(first.len(), TASKS as usize);
    assert!(first.iter().all(|seen| seen.len() == SLEEPS_PER_TASK));
}

#[test]
fn every_sleep_ends_exactly_at_its_rounded_deadline() {
    let expected = expected();
    for workers in [1, 4] {
        let observed = run(workers);
        for (task, (seen, want)) in observed.iter().zip(&expected).enumerate() {
            if let Some(k) = (0..SLEEPS_PER_TASK).find(|&k| seen[k] != want[k]) {
                panic!(
                    "{workers} workers, task {task}, sleep {k}: observed {:?}, deadline tick {:?}",
                    seen[k], want[k]
                );
            }
        }
    }
}
