//! Tasks spawned in a burst from outside the runtime, while its workers are still awake from
//! the burst before, spread over every worker: each task spins, without yielding, until all
//! of them run, so a task left in the queue of a busy worker while the others sleep would
//! never start. Rounds follow each other at once, as the workers go from running to searching
//! to sleeping, which is when a batch taken from the injector, or work seen by a worker
//! going to sleep, could be left to a worker that then runs something else. On 16 cores,
//! before `scheduler/idle.rs` covered both, one round in four or five left tasks waiting a
//! second (the benchmark's limit) with every other worker asleep; on two cores it happened
//! about once in a few thousand rounds, so there this test catches it only now and then.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use escapement::Builder;

/// How long a task spins for the others before the round counts as failed: far longer than
/// a loaded machine takes to schedule every worker's thread.
const SPIN_LIMIT: Duration = Duration::from_secs(10);

const ROUNDS: usize = 1_000;

#[test]
fn tasks_spawned_in_a_burst_all_run_at_once() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let workers = cpus.max(4);
    let runtime = Builder::new().worker_threads(workers).build().unwrap();
    for round in 0..ROUNDS {
        let started = Arc::new(AtomicUsize::new(0));
        let tasks: Vec<_> = (0..workers)
            .map(|_| {
                let started = started.clone();
                runtime.spawn(async move {
                    started.fetch_add(1, Ordering::SeqCst);
                    let spinning = Instant::now();
                    while started.load(Ordering::SeqCst) < workers {
                        if spinning.elapsed() > SPIN_LIMIT {
                            return false;
                        }
                        std::hint::spin_loop();
                    }
                    true
                })
            })
            .collect();
        let all_ran = runtime.block_on(async move {
            let mut all = true;
            for task in tasks {
                all &= task.await.unwrap();
            }
            all
        });
        assert!(
            all_ran,
            "round {round}: {} of {workers} tasks ran within {SPIN_LIMIT:?}",
            started.load(Ordering::SeqCst)
        );
    }
}
