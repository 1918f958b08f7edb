//! A runtime's timer driver lives as long as the runtime or any of its timers, and is freed
//! when the last of them goes, whichever that is: timers count their references to it per
//! worker, and the runtime holds one in each worker's count while it lives. Observed through
//! the file descriptor the driver holds (the waker of worker 0's poll), on Linux.
#![cfg(target_os = "linux")]

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Waker};

use escapement::time::{sleep, Duration, Sleep};

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").expect("procfs").count()
}

#[test]
fn the_driver_is_freed_after_the_runtime_and_its_last_timer() {
    let before = open_fds();
    let rt = escapement::Builder::new()
        .worker_threads(2)
        .build()
        .expect("a runtime");
    rt.block_on(async {
        // Timers made, fired and dropped on the workers and on this thread.
        let tasks: Vec<_> = (0..16)
            .map(|_| escapement::spawn(sleep(Duration::from_millis(1))))
            .collect();
        for task in tasks {
            task.await.expect("a sleep");
        }
        sleep(Duration::from_millis(1)).await;
    });
    // One more, registered and kept past the runtime.
    let mut kept: Pin<Box<Sleep>> = {
        let _context = rt.enter();
        Box::pin(sleep(Duration::from_secs(3600)))
    };
    let polled = kept.as_mut().poll(&mut Context::from_waker(Waker::noop()));
    assert!(polled.is_pending());
    drop(rt);
    assert!(
        open_fds() > before,
        "the timer kept alive outlives its runtime, and keeps the driver"
    );
    drop(kept);
    assert_eq!(
        open_fds(),
        before,
        "the driver was freed with its last timer"
    );
}
