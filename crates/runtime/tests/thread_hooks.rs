//! `Builder::thread_stack_size`, `on_thread_start` and `on_thread_stop`: every thread the
//! runtime starts (its workers, its blocking threads, the thread a worker is handed to by
//! `block_in_place`) runs the start callback first and the stop callback last, on itself;
//! the stack size reaches workers and blocking threads alike; a panicking callback costs
//! the runtime nothing.

use std::hint::black_box;
use std::sync::{Arc, Mutex};
use std::thread;

use escapement::task;

/// Names of the threads that ran a callback, in order.
type Log = Arc<Mutex<Vec<String>>>;

fn current_name() -> String {
    thread::current().name().unwrap_or("?").to_owned()
}

#[test]
fn every_thread_runs_the_start_callback_first_and_the_stop_callback_last() {
    let started = Log::default();
    let stopped = Log::default();
    let (on_start, on_stop) = (started.clone(), stopped.clone());
    let rt = escapement::Builder::new()
        .worker_threads(2)
        .thread_name("hooked")
        .on_thread_start(move || on_start.lock().unwrap().push(current_name()))
        .on_thread_stop(move || on_stop.lock().unwrap().push(current_name()))
        .build()
        .expect("a runtime");
    let in_blocking = rt.block_on(rt.spawn_blocking(current_name)).unwrap();
    assert_eq!(in_blocking, "hooked-blocking");
    // A worker handed to a blocking thread by `block_in_place`: that thread started too.
    rt.block_on(rt.spawn(async {
        task::block_in_place(|| thread::sleep(std::time::Duration::from_millis(20)));
    }))
    .unwrap();
    drop(rt);

    let mut started = started.lock().unwrap().clone();
    let mut stopped = stopped.lock().unwrap().clone();
    started.sort();
    stopped.sort();
    assert_eq!(started, stopped, "each thread that started stopped, once");
    // The two workers, then one or two blocking threads (the `block_in_place` hand-off
    // may reuse the thread of `spawn_blocking`, or start another).
    assert_eq!(started[..2], ["hooked-0", "hooked-1"], "{started:?}");
    assert!(
        matches!(started.len(), 3 | 4) && started[2..].iter().all(|n| n == "hooked-blocking"),
        "{started:?}"
    );
}

/// Recurses `depth` times through frames of 64 KiB.
fn deep(depth: usize) -> u8 {
    let frame = black_box([depth as u8; 64 * 1024]);
    if depth == 0 {
        frame[0]
    } else {
        deep(depth - 1).wrapping_add(black_box(frame)[100])
    }
}

#[test]
fn the_stack_size_reaches_workers_and_blocking_threads() {
    // 8 MiB of frames, four times the standard library's default stack.
    const DEPTH: usize = 128;
    let rt = escapement::Builder::new()
        .worker_threads(1)
        .thread_stack_size(64 * 1024 * 1024)
        .build()
        .expect("a runtime");
    let on_worker = rt.block_on(rt.spawn(async { deep(DEPTH) })).unwrap();
    let on_blocking = rt.block_on(rt.spawn_blocking(|| deep(DEPTH))).unwrap();
    assert_eq!(on_worker, on_blocking);
}

#[test]
fn a_panicking_callback_costs_the_runtime_nothing() {
    let rt = escapement::Builder::new()
        .worker_threads(1)
        .on_thread_start(|| panic!("a start callback that panics"))
        .on_thread_stop(|| panic!("a stop callback that panics"))
        .build()
        .expect("a runtime");
    let spawned = rt.block_on(rt.spawn(async { 1 })).unwrap();
    let blocking = rt.block_on(rt.spawn_blocking(|| 2)).unwrap();
    assert_eq!(spawned + blocking, 3);
    drop(rt);
}
