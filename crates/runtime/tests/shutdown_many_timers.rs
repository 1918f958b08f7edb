//! Dropping a runtime with a million timers pending finishes promptly and leaks nothing:
//! 1,000 tasks on 4 workers each hold 1,000 registered sleeps (in a `FuturesUnordered`, so
//! each sleep is pinned in its own allocation), with deadlines spread over the hour after the
//! first ten minutes. Every sleep's future counts its drop and holds a clone of one `Arc`;
//! after the drop all 1M drops are counted and the `Arc` is unique again. The time bound only
//! catches hangs.

mod support;

use std::future::{poll_fn, Future};
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use escapement::time::sleep;
use futures::stream::{FuturesUnordered, StreamExt};

use support::DropCounter;

const TASKS: usize = 1_000;
const TIMERS_PER_TASK: usize = 1_000;
const TIMERS: usize = TASKS * TIMERS_PER_TASK;

#[test]
fn dropping_the_runtime_with_a_million_timers_pending() {
    let rt = escapement::Builder::new()
        .worker_threads(4)
        .build()
        .expect("a runtime");
    let drops = Arc::new(AtomicUsize::new(0));
    let registered = Arc::new(AtomicUsize::new(0));
    let shared = Arc::new(());
    for task in 0..TASKS {
        let drops = drops.clone();
        let registered = registered.clone();
        let shared = shared.clone();
        drop(rt.spawn(async move {
            let timers: FuturesUnordered<_> = (0..TIMERS_PER_TASK)
                .map(|timer| {
                    let counter = DropCounter(drops.clone());
                    let registered = registered.clone();
                    let shared = shared.clone();
                    let spread = (task * TIMERS_PER_TASK + timer) as u64 * 7_919 % 3_600_000;
                    async move {
                        let _counter = counter;
                        let _shared = shared;
                        let mut delay = pin!(sleep(Duration::from_millis(600_000 + spread)));
                        // One poll registers the timer; only then is it counted.
                        poll_fn(|cx| {
                            assert!(delay.as_mut().poll(cx).is_pending());
                            Poll::Ready(())
                        })
                        .await;
                        registered.fetch_add(1, Ordering::Relaxed);
                        delay.await;
                    }
                })
                .collect();
            timers.collect::<Vec<()>>().await;
        }));
    }
    let begin = std::time::Instant::now();
    while registered.load(Ordering::Relaxed) < TIMERS {
        assert!(
            begin.elapsed() < Duration::from_secs(300),
            "only {} timers registered",
            registered.load(Ordering::Relaxed)
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        drops.load(Ordering::Relaxed),
        0,
        "nothing fired or dropped yet"
    );

    let start = std::time::Instant::now();
    drop(rt);
    let took = start.elapsed();
    assert!(took < Duration::from_secs(120), "shutdown hung: {took:?}");
    assert_eq!(
        drops.load(Ordering::Relaxed),
        TIMERS,
        "every timer's future was dropped"
    );
    assert_eq!(Arc::strong_count(&shared), 1, "nothing leaked");
}
