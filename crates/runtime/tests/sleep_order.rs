//! Sleeps with distinct deadlines complete in deadline order, whatever order they were
//! created in: on the paused clock across 4 workers (each also exactly on time), and on the
//! real clock on one worker (where the driver wakes them in deadline order and the worker
//! runs them in wake order, even if several fall due in one turn).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use escapement::time::{sleep_until, Instant};
use escapement::Runtime;
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;

fn builder(workers: usize, paused: bool) -> Runtime {
    escapement::Builder::new()
        .worker_threads(workers)
        .start_paused(paused)
        .build()
        .expect("a runtime")
}

/// Spawns one task per offset (in a shuffled order), each sleeping until `start + offset`
/// and recording its offset when it wakes; returns the offsets in the order they woke and
/// whether each woke exactly on time. `start` is `lead` from now: long enough on the real
/// clock for every task to register before the first deadline.
fn completion_order(rt: &Runtime, lead: Duration, offsets_ms: &[u64]) -> (Vec<u64>, Vec<bool>) {
    let mut shuffled = offsets_ms.to_vec();
    shuffled.shuffle(&mut SmallRng::seed_from_u64(3));
    rt.block_on(async {
        let start = Instant::now() + lead;
        let order = Arc::new(Mutex::new(Vec::new()));
        let tasks: Vec<_> = shuffled
            .into_iter()
            .map(|offset| {
                let order = order.clone();
                escapement::spawn(async move {
                    let deadline = start + Duration::from_millis(offset);
                    sleep_until(deadline).await;
                    order.lock().expect("not poisoned").push(offset);
                    Instant::now() == deadline
                })
            })
            .collect();
        let mut exact = Vec::new();
        for task in tasks {
            exact.push(task.await.expect("the task completes"));
        }
        let order = order.lock().expect("not poisoned").clone();
        (order, exact)
    })
}

#[test]
fn distinct_deadlines_complete_in_order_on_the_paused_clock() {
    for workers in [1, 4] {
        let rt = builder(workers, true);
        let offsets: Vec<u64> = (1..=500).map(|i| i * 3).collect();
        let (order, exact) = completion_order(&rt, Duration::from_millis(5), &offsets);
        assert_eq!(order, offsets, "{workers} workers");
        assert!(
            exact.iter().all(|&on_time| on_time),
            "each woke exactly on time"
        );
    }
}

#[test]
fn distinct_deadlines_complete_in_order_on_one_worker_on_the_real_clock() {
    let rt = builder(1, false);
    let offsets: Vec<u64> = (1..=100).map(|i| i * 2).collect();
    let (order, _) = completion_order(&rt, Duration::from_millis(500), &offsets);
    assert_eq!(order, offsets);
}
