//! Timers keep firing while worker 0, which drives them, is stuck in a long poll: another
//! worker, or a thread in `block_on` when every worker is stuck, notices the overdue wheel
//! and fires what is due.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use escapement::time::{sleep, Duration, Instant};

/// How long worker 0 stays blocked.
const BLOCKED: Duration = Duration::from_millis(400);

#[test]
fn a_timer_fires_on_time_while_worker0_is_blocked() {
    let rt = escapement::Builder::new()
        .worker_threads(2)
        .build()
        .expect("a runtime");
    let took = rt.block_on(async {
        // Spawn until a task lands on worker 0; that one blocks its thread.
        let blocking = Arc::new(AtomicBool::new(false));
        while !blocking.load(Ordering::SeqCst) {
            let flag = blocking.clone();
            let probe = escapement::spawn(async move {
                if std::thread::current().name() == Some("escapement-worker-0") {
                    flag.store(true, Ordering::SeqCst);
                    std::thread::sleep(BLOCKED);
                }
            });
            while !blocking.load(Ordering::SeqCst) && !probe.is_finished() {
                std::thread::sleep(std::time::Duration::from_micros(200));
            }
        }
        // Worker 0 is blocked now: this sleep runs on the other worker.
        escapement::spawn(async {
            let start = Instant::now();
            sleep(Duration::from_millis(10)).await;
            start.elapsed()
        })
        .await
        .unwrap()
    });
    assert!(took >= Duration::from_millis(10));
    // Without a stand-in the sleep would last until worker 0 came back, 400 ms. The bound is
    // generous so a loaded machine does not fail it; the benchmark measures the real figure.
    assert!(
        took < BLOCKED / 2,
        "sleep(10ms) took {took:?} with worker 0 blocked"
    );
}

/// A thread in `block_on` is the only one left to stand in when every worker is stuck: it
/// must not count on worker 0 for its timer just because worker 0 was still parked when
/// the thread looked, with the spawn that will keep it busy already on its way to it.
#[test]
fn block_on_stands_in_when_the_spawn_it_just_made_blocks_worker0() {
    let rt = escapement::Builder::new()
        .worker_threads(1)
        .build()
        .expect("a runtime");
    for round in 0..8 {
        // Worker 0 parks with nothing to do, then this spawn wakes it into a long poll.
        std::thread::sleep(std::time::Duration::from_millis(5));
        let blocker = rt.spawn(async { std::thread::sleep(STUCK) });
        let took = rt.block_on(async {
            let start = Instant::now();
            sleep(Duration::from_millis(5)).await;
            start.elapsed()
        });
        rt.block_on(blocker).expect("the blocker returns");
        // Without a stand-in the sleep lasts until the blocker returns, 200 ms.
        assert!(
            took < STUCK / 2,
            "round {round}: sleep(5ms) in block_on took {took:?} with worker 0 stuck"
        );
    }
}

/// How long the blocker above keeps worker 0.
const STUCK: Duration = Duration::from_millis(200);
