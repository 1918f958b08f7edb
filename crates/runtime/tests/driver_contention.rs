//! Many short sleeps on two workers, so worker 0 and the stand-in worker fire timers at the
//! same time, each with its own reading of the clock. A regression test: the driver once spun
//! forever, holding its lock, when one thread processed at a tick behind the wheel's.

mod support;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use escapement::time::{sleep, Duration};
use support::{running, within};

#[test]
fn concurrent_processing_never_wedges_the_driver() {
    let tasks = 20_000u64;
    let rounds = 10u64;
    // A wedged driver hangs `block_on`: the bound fails the test instead of the suite.
    let woken = within(Duration::from_secs(120), move || {
        let rt = running(2);
        let woken = Arc::new(AtomicU64::new(0));
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
        woken.load(Ordering::Relaxed)
    });
    assert_eq!(woken, tasks * rounds);
}
