//! A runtime's timer driver lives as long as the runtime or any of its timers, and is freed
//! when the last of them goes, whichever that is: timers count their references to it per
//! worker, and the runtime holds one in each worker's count while it lives. Observed through
//! the file descriptor the driver holds (the waker of worker 0's poll), on Linux.
#![cfg(target_os = "linux")]

use std::future::Future;
use std::pin::Pin;
use std::sync::{Mutex, MutexGuard};
use std::task::{Context, Waker};

use escapement::time::{sleep, Duration, Sleep};

/// Held by each test: they count the process's file descriptors, so they run one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").expect("procfs").count()
}

fn registered(mut sleep: Pin<Box<Sleep>>) -> Pin<Box<Sleep>> {
    let polled = sleep.as_mut().poll(&mut Context::from_waker(Waker::noop()));
    assert!(polled.is_pending());
    sleep
}

/// Takes the lock the tests share, counts the open descriptors, then builds a runtime of two
/// workers.
fn start() -> (MutexGuard<'static, ()>, usize, escapement::Runtime) {
    let serial = SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let before = open_fds();
    let rt = escapement::Builder::new()
        .worker_threads(2)
        .build()
        .expect("a runtime");
    (serial, before, rt)
}

#[test]
fn the_driver_is_freed_after_the_runtime_and_its_last_timer() {
    let (_serial, before, rt) = start();
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
    let kept = {
        let _context = rt.enter();
        registered(Box::pin(sleep(Duration::from_secs(3600))))
    };
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

/// A worker and a thread in `block_on` make their timers from credit, counts they took from
/// their shard in advance and return as they leave it; timers that outlive those threads
/// still keep the driver, and the last one frees it.
#[test]
fn timers_made_from_a_threads_credit_keep_the_driver_after_it_leaves() {
    let (_serial, before, rt) = start();
    let (from_block_on, from_workers) = rt.block_on(async {
        let mut from_workers = Vec::new();
        for _ in 0..4 {
            #[allow(
                clippy::async_yields_async,
                reason = "the task makes a timer, to be kept after its worker has gone"
            )]
            let task = escapement::spawn(async { Box::pin(sleep(Duration::from_secs(3600))) });
            from_workers.push(registered(task.await.expect("a sleep")));
        }
        (
            registered(Box::pin(sleep(Duration::from_secs(3600)))),
            from_workers,
        )
    });
    drop(rt);
    drop(from_workers);
    assert!(
        open_fds() > before,
        "the timer made in block_on outlives its runtime and its workers' timers"
    );
    drop(from_block_on);
    assert_eq!(open_fds(), before, "freed with the last timer");
}
