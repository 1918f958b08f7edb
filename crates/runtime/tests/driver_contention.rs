//! Many short sleeps on two workers, so worker 0 and the stand-in worker fire timers at the
//! same time, each with its own reading of the clock. A regression test: the driver once spun
//! forever, holding its lock, when one thread processed at a tick behind the wheel's.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use escapement::time::{sleep, Duration};

#[test]
fn concurrent_processing_never_wedges_the_driver() {
    let rt = escapement::Builder::new()
        .worker_threads(2)
        .build()
        .expect("a runtime");
    let woken = Arc::new(AtomicU64::new(0));
    let tasks = 20_000u64;
    let rounds = 10u64;
    let progress = woken.clone();
    // A hang shows as no progress for seconds; fail instead of hanging the suite.
    let watchdog = std::thread::spawn(move || {
        let mut last = u64::MAX;
        loop {
            std::thread::sleep(std::time::Duration::from_secs(10));
            let now = progress.load(Ordering::Relaxed);
            if now == tasks * rounds {
                return true;
            }
            if now == last {
                return false;
            }
            last = now;
        }
    });
    rt.block_on(async {
        let handles: Vec<_> = (0..tasks)
            .map(|i| {
                let woken = woken.clone();
                escapement::spawn(async move {
                    for round in 0..rounds {
                        let millis = 1 + (i * 7919 + round * 104_729) % 20;
                        sleep(Duration::from_millis(millis)).await;
                        woken.fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        for handle in handles {
            handle.await.unwrap();
        }
    });
    assert_eq!(woken.load(Ordering::Relaxed), tasks * rounds);
    assert!(watchdog.join().unwrap(), "no sleep completed for 10 s");
}
