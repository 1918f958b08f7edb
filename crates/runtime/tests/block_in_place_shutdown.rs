//! `task::block_in_place` and the runtime's shutdown: dropping the runtime waits for a
//! closure that holds a worker, and `shutdown_timeout` does not; a runtime dropped in the
//! closure waits for its blocking closures, on a worker's thread or on a blocking thread; the
//! runtime drops on the thread that handed its worker away; after a shutdown that did not
//! wait, the closure runs in place; a drop while a closure waits on its timer returns; and a
//! runtime dropped under a nested `block_on` waits for its running workers first. (The rest
//! of `block_in_place` is in `block_in_place.rs`.)

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;

mod support;

use escapement::task::block_in_place;
use escapement::time::{sleep, Duration};
use escapement::Handle;

use support::{block_once_the_worker_moved, running, PATIENCE};

#[test]
fn dropping_the_runtime_waits_for_the_closure_and_a_timeout_does_not() {
    for wait in [true, false] {
        let rt = running(1);
        let (started_tx, started) = mpsc::channel();
        let (release, release_rx) = mpsc::channel::<()>();
        let finished = Arc::new(AtomicBool::new(false));
        let flag = finished.clone();
        drop(rt.spawn(async move {
            block_in_place(move || {
                started_tx.send(()).unwrap();
                let _ = release_rx.recv_timeout(PATIENCE);
                flag.store(true, Ordering::SeqCst);
            });
        }));
        started.recv_timeout(PATIENCE).expect("the closure started");
        if wait {
            let releaser = thread::spawn(move || {
                thread::sleep(std::time::Duration::from_millis(20));
                release.send(()).unwrap();
            });
            drop(rt);
            assert!(
                finished.load(Ordering::SeqCst),
                "drop waited for the closure"
            );
            releaser.join().unwrap();
        } else {
            rt.shutdown_timeout(std::time::Duration::from_millis(20));
            assert!(!finished.load(Ordering::SeqCst), "the timeout did not wait");
            release.send(()).unwrap();
        }
    }
}

/// The closure is blocking code: a runtime dropped there waits for its blocking closures,
/// as it does on any thread outside a runtime's async code.
#[test]
fn a_runtime_dropped_in_the_closure_waits_for_its_blocking_closures() {
    let outer = running(1);
    let inner = running(1);
    let (started_tx, started) = mpsc::channel();
    let finished = Arc::new(AtomicBool::new(false));
    let flag = finished.clone();
    drop(inner.spawn_blocking(move || {
        started_tx.send(()).unwrap();
        thread::sleep(std::time::Duration::from_millis(50));
        flag.store(true, Ordering::SeqCst);
    }));
    started
        .recv_timeout(PATIENCE)
        .expect("the blocking closure started");
    let waited = outer
        .block_on(outer.spawn(async move {
            block_in_place(move || {
                drop(inner);
                finished.load(Ordering::SeqCst)
            })
        }))
        .unwrap();
    assert!(waited, "the drop returned before the blocking closure");
}

/// The same on a blocking thread, where the worker went with an earlier `block_in_place`:
/// the drop waits for the pool's other threads, not for the one it runs on.
#[test]
fn a_runtime_dropped_in_the_closure_on_a_blocking_thread_waits_for_its_blocking_closures() {
    let rt = escapement::Builder::new()
        .worker_threads(1)
        .thread_name("mover")
        .build()
        .expect("a runtime");
    // The worker moves to a blocking thread for good.
    rt.block_on(rt.spawn(async { block_once_the_worker_moved(|| ()) }))
        .unwrap();
    let handle = rt.handle().clone();
    let slot = Arc::new(std::sync::Mutex::new(Some(rt)));
    let finished = Arc::new(AtomicBool::new(false));
    let (report, reported) = mpsc::channel();
    drop(handle.spawn({
        let finished = finished.clone();
        async move {
            let on = thread::current().name().map(str::to_owned);
            let (started_tx, started) = mpsc::channel();
            let flag = finished.clone();
            drop(escapement::task::spawn_blocking(move || {
                started_tx.send(()).unwrap();
                thread::sleep(std::time::Duration::from_millis(50));
                flag.store(true, Ordering::SeqCst);
            }));
            started.recv_timeout(PATIENCE).unwrap();
            let waited = block_in_place(|| {
                drop(slot.lock().unwrap().take());
                finished.load(Ordering::SeqCst)
            });
            report.send((on, waited)).unwrap();
        }
    }));
    let (on, waited) = reported.recv_timeout(PATIENCE).expect("the drop returned");
    assert_eq!(
        on.as_deref(),
        Some("mover-blocking"),
        "the task ran on a blocking thread"
    );
    assert!(waited, "the drop returned before the blocking closure");
}

#[test]
fn the_runtime_drops_on_the_thread_that_handed_its_worker_away() {
    for inside_the_closure in [true, false] {
        let rt = running(1);
        let handle = rt.handle().clone();
        let slot = Arc::new(std::sync::Mutex::new(Some(rt)));
        let (report, dropped) = mpsc::channel();
        drop(handle.spawn(async move {
            let take = || slot.lock().unwrap().take();
            if inside_the_closure {
                // Outside the workers here: the drop waits for every worker thread.
                block_in_place(|| drop(take()));
            } else {
                block_once_the_worker_moved(|| ());
                // Back on a worker thread without a core: the drop waits for the others.
                drop(take());
            }
            report.send(()).unwrap();
        }));
        dropped
            .recv_timeout(PATIENCE)
            .unwrap_or_else(|_| panic!("the drop returned ({inside_the_closure})"));
    }
}

#[test]
fn after_a_shutdown_that_did_not_wait_the_closure_runs_in_place() {
    let rt = running(1);
    let other = running(1);
    let other_handle = other.handle().clone();
    let (started, started_rx) = mpsc::channel::<()>();
    let (go, go_rx) = mpsc::channel::<()>();
    let (report, reported) = mpsc::channel();
    drop(rt.spawn(async move {
        started.send(()).unwrap();
        // Blocks the worker until the runtime has shut down without waiting for it.
        go_rx.recv_timeout(PATIENCE).unwrap();
        // The blocking pool is shut down: the worker stays, and the closure runs here, where
        // it may still block on a future as any closure of `block_in_place` may.
        let value = block_in_place(|| other_handle.block_on(async { 7 }));
        report.send(value).unwrap();
    }));
    started_rx.recv_timeout(PATIENCE).unwrap();
    rt.shutdown_timeout(std::time::Duration::from_millis(10));
    go.send(()).unwrap();
    assert_eq!(reported.recv_timeout(PATIENCE), Ok(7));
}

/// Dropping the runtime while a closure waits on one of its timers returns at once: the
/// shutdown wakes the timers before it waits for the threads in closures, and the closure's
/// sleep then panics, as tokio's does, where the drop waited an hour.
#[test]
fn dropping_the_runtime_while_a_closure_waits_on_its_timer_returns() {
    let rt = running(1);
    let (waiting, closure_waits) = mpsc::channel();
    drop(rt.spawn(async move {
        block_once_the_worker_moved(move || {
            waiting.send(()).unwrap();
            Handle::current().block_on(sleep(Duration::from_secs(3600)));
        });
    }));
    closure_waits
        .recv_timeout(PATIENCE)
        .expect("the closure runs");
    let (dropped, was_dropped) = mpsc::channel();
    thread::spawn(move || {
        drop(rt);
        let _ = dropped.send(());
    });
    was_dropped
        .recv_timeout(PATIENCE)
        .expect("the drop returned without waiting for the hour");
}

/// A runtime dropped in a current-thread `block_on` inside its own `block_in_place` closure
/// still waits for its workers running a poll before it wakes the timers: a task there that
/// polls a sleep after the drop began does not panic.
#[test]
fn a_runtime_dropped_under_a_nested_block_on_waits_for_its_running_workers_first() {
    let rt = escapement::Builder::new()
        .worker_threads(2)
        .build()
        .expect("a runtime");
    let (running, task_runs) = mpsc::channel();
    let (polled, did_it_panic) = mpsc::channel();
    drop(rt.spawn(async move {
        running.send(()).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(200));
        let panicked = std::panic::catch_unwind(|| {
            let (_wakes, waker) = support::CountingWaker::waker();
            let timer = std::pin::pin!(sleep(Duration::from_millis(1)));
            support::poll_once(timer, &waker)
        })
        .is_err();
        polled.send(panicked).unwrap();
    }));
    task_runs.recv_timeout(PATIENCE).expect("the task runs");
    let held = Arc::new(std::sync::Mutex::new(Some(rt)));
    let handle = held.lock().unwrap().as_ref().unwrap().handle().clone();
    let (dropped, was_dropped) = mpsc::channel();
    drop(handle.spawn(async move {
        block_in_place(|| {
            let inner = escapement::Builder::new_current_thread()
                .build()
                .expect("a runtime");
            inner.block_on(async { drop(held.lock().unwrap().take()) });
            dropped.send(()).unwrap();
        });
    }));
    was_dropped
        .recv_timeout(PATIENCE)
        .expect("the drop returned");
    assert!(
        !did_it_panic.recv_timeout(PATIENCE).unwrap(),
        "the running task's sleep panicked: the timers were woken before its poll returned"
    );
}
