//! `Builder::thread_stack_size`, `on_thread_start`, `on_thread_stop`, `thread_name_fn`,
//! `on_thread_park` and `on_thread_unpark`: every thread the runtime starts (its workers, its
//! blocking threads, the thread a worker is handed to by `block_in_place`) runs the start
//! callback first and the stop callback last, on itself; the stack size reaches workers and
//! blocking threads alike, raised to what a worker needs when too small; the name function
//! names each thread once, and it and `thread_name` replace each other; a worker runs the
//! park callback before each park and the unpark callback after it; a panicking callback
//! (also one whose panic's payload panics as it drops), or a name callback giving a name no
//! thread can have, costs the runtime nothing; a
//! shutdown's timeout covers the workers' stop callbacks.

mod support;

use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use escapement::task;
use escapement::time::sleep;

use support::{wait_until, within, PanicsWhenDropped};

/// Names of the threads that ran a callback, in order.
type Log = Arc<Mutex<Vec<String>>>;

/// Drops the runtime in `slot`, if it is still there, and counts the drop.
fn drop_held(slot: &Mutex<Option<escapement::Runtime>>, dropped: &AtomicUsize) {
    let runtime = slot.lock().unwrap().take();
    if let Some(runtime) = runtime {
        drop(runtime);
        dropped.fetch_add(1, Ordering::SeqCst);
    }
}

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

/// A worker's stop callback is part of its shutdown: `shutdown_timeout` waits for it, but no
/// longer than the timeout, as for a task's poll or a blocking closure.
#[test]
fn shutdown_timeout_waits_no_longer_than_its_timeout_for_a_slow_stop_callback() {
    const SLOW: Duration = Duration::from_secs(5);
    let rt = escapement::Builder::new()
        .worker_threads(2)
        .on_thread_stop(|| thread::sleep(SLOW))
        .build()
        .expect("a runtime");
    rt.block_on(async { escapement::spawn(async {}).await.unwrap() });
    let start = std::time::Instant::now();
    rt.shutdown_timeout(Duration::from_millis(100));
    let took = start.elapsed();
    // Generous for a loaded machine, and still well short of the callback.
    assert!(took < SLOW / 2, "shutdown_timeout(100ms) took {took:?}");
}

/// A worker thread that handed its worker away with `block_in_place` leaves once that poll
/// returns, and runs its stop callback while the runtime goes on. A runtime dropped there
/// waits for its other workers, not for that thread, which is still counted among them
/// until the callback returns.
#[test]
fn a_runtime_dropped_in_the_stop_callback_of_a_worker_thread_returns() {
    within(Duration::from_secs(30), || {
        let slot: Arc<Mutex<Option<escapement::Runtime>>> = Arc::default();
        let dropped = Arc::new(AtomicUsize::new(0));
        let (in_callback, counted) = (slot.clone(), dropped.clone());
        let rt = escapement::Builder::new()
            .worker_threads(1)
            .on_thread_stop(move || {
                drop_held(&in_callback, &counted);
            })
            .build()
            .expect("a runtime");
        let handle = rt.handle().clone();
        *slot.lock().unwrap() = Some(rt);
        // The worker moves to a blocking thread; the worker thread leaves after the poll.
        let (done, finished) = std::sync::mpsc::channel();
        drop(handle.spawn(async move {
            task::block_in_place(|| thread::sleep(Duration::from_millis(50)));
            let _ = done.send(());
        }));
        finished.recv().unwrap();
        wait_until("the runtime dropped in the stop callback", || {
            dropped.load(Ordering::SeqCst) == 1
        });
    });
}

/// A runtime dropped in a worker's start callback, before the worker's loop, waits for the
/// other workers, not for the thread doing the drop.
#[test]
fn a_runtime_dropped_in_the_start_callback_of_a_worker_thread_returns() {
    within(Duration::from_secs(30), || {
        let slot: Arc<Mutex<Option<escapement::Runtime>>> = Arc::default();
        let dropped = Arc::new(AtomicUsize::new(0));
        let first = Arc::new(AtomicUsize::new(0));
        let (in_callback, counted) = (slot.clone(), dropped.clone());
        let rt = escapement::Builder::new()
            .worker_threads(2)
            .on_thread_start(move || {
                if first.fetch_add(1, Ordering::SeqCst) != 0 {
                    return;
                }
                // The first thread to start waits for the runtime, then drops it.
                let runtime = loop {
                    if let Some(runtime) = in_callback.lock().unwrap().take() {
                        break runtime;
                    }
                    thread::sleep(Duration::from_millis(1));
                };
                drop(runtime);
                counted.fetch_add(1, Ordering::SeqCst);
            })
            .build()
            .expect("a runtime");
        *slot.lock().unwrap() = Some(rt);
        wait_until("the runtime dropped in the start callback", || {
            dropped.load(Ordering::SeqCst) == 1
        });
    });
}

/// A runtime dropped in a blocking thread's start callback waits for the pool's other
/// threads, not for the thread doing the drop, already counted among them.
#[test]
fn a_runtime_dropped_in_the_start_callback_of_a_blocking_thread_returns() {
    within(Duration::from_secs(30), || {
        let slot: Arc<Mutex<Option<escapement::Runtime>>> = Arc::default();
        let dropped = Arc::new(AtomicUsize::new(0));
        let (in_callback, counted) = (slot.clone(), dropped.clone());
        let rt = escapement::Builder::new()
            .worker_threads(1)
            .thread_name("dropper")
            .on_thread_start(move || {
                if current_name() != "dropper-blocking" {
                    return;
                }
                drop_held(&in_callback, &counted);
            })
            .build()
            .expect("a runtime");
        let handle = rt.handle().clone();
        *slot.lock().unwrap() = Some(rt);
        let closure = handle.spawn_blocking(|| ());
        wait_until("the runtime dropped in the start callback", || {
            dropped.load(Ordering::SeqCst) == 1
        });
        // The closure, queued when the runtime shut down, still ran, on the thread whose
        // callback dropped the runtime.
        futures::executor::block_on(closure).expect("the queued closure ran");
    });
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
fn a_stack_size_too_small_for_a_worker_is_raised() {
    for bytes in [0, 1, 16 * 1024] {
        let rt = escapement::Builder::new()
            .worker_threads(2)
            .thread_stack_size(bytes)
            .build()
            .expect("a runtime");
        // Tasks spread over both workers, which steal from each other, and a blocking thread.
        let sum: u32 = rt.block_on(async {
            let tasks: Vec<_> = (0..64u32)
                .map(|i| escapement::spawn(async move { i }))
                .collect();
            let mut sum = 0;
            for task in tasks {
                sum += task.await.unwrap();
            }
            sum + escapement::task::spawn_blocking(|| 1).await.unwrap()
        });
        assert_eq!(sum, 2017);
    }
}

/// The name callback runs outside the blocking pool's lock: one that spawns a blocking
/// closure itself does not deadlock.
#[test]
fn a_name_callback_may_spawn_a_blocking_closure() {
    within(Duration::from_secs(30), || {
        let armed = Arc::new(AtomicUsize::new(0));
        let slot: Arc<Mutex<Option<escapement::Handle>>> = Arc::default();
        let (in_callback, handle_slot) = (armed.clone(), slot.clone());
        let rt = escapement::Builder::new()
            .worker_threads(1)
            .thread_name_fn(move || {
                if in_callback.swap(0, Ordering::SeqCst) == 1 {
                    let handle = handle_slot.lock().unwrap().clone();
                    drop(handle.expect("set").spawn_blocking(|| ()));
                }
                "named".to_owned()
            })
            .build()
            .expect("a runtime");
        *slot.lock().unwrap() = Some(rt.handle().clone());
        armed.store(1, Ordering::SeqCst);
        assert_eq!(rt.block_on(rt.spawn_blocking(|| 7)).unwrap(), 7);
    });
}

#[test]
fn a_panicking_callback_costs_the_runtime_nothing() {
    let rt = escapement::Builder::new()
        .worker_threads(1)
        .on_thread_start(|| panic!("a start callback that panics"))
        .on_thread_stop(|| panic!("a stop callback that panics"))
        .on_thread_park(|| panic!("a park callback that panics"))
        .on_thread_unpark(|| panic!("an unpark callback that panics"))
        .build()
        .expect("a runtime");
    let spawned = rt.block_on(rt.spawn(async { 1 })).unwrap();
    let blocking = rt.block_on(rt.spawn_blocking(|| 2)).unwrap();
    // The worker parks and wakes again around the sleep.
    let slept = rt.block_on(rt.spawn(async {
        sleep(Duration::from_millis(5)).await;
        3
    }));
    assert_eq!(spawned + blocking + slept.unwrap(), 6);
    drop(rt);
}

/// A callback that panics with a payload whose drop panics too: the runtime must drop that
/// payload with the second panic contained, or the worker that ran the park callback dies,
/// and the task below never runs.
#[test]
fn a_callback_whose_panic_payload_panics_as_it_drops_costs_the_runtime_nothing() {
    within(Duration::from_secs(30), || {
        let bad = || std::panic::panic_any(PanicsWhenDropped);
        let rt = escapement::Builder::new()
            .worker_threads(1)
            .on_thread_start(bad)
            .on_thread_stop(bad)
            .on_thread_park(bad)
            .on_thread_unpark(bad)
            .build()
            .expect("a runtime");
        let slept = rt.block_on(rt.spawn(async {
            sleep(Duration::from_millis(5)).await;
            3
        }));
        let blocking = rt.block_on(rt.spawn_blocking(|| 2)).unwrap();
        assert_eq!(slept.unwrap() + blocking, 5);
        drop(rt);
    });
}

#[test]
fn start_and_stop_callbacks_see_the_runtime() {
    let seen = Log::default();
    let (on_start, on_stop) = (seen.clone(), seen.clone());
    let rt = escapement::Builder::new()
        .worker_threads(2)
        .thread_name("seen")
        .on_thread_start(move || {
            let current = escapement::Handle::try_current().is_ok();
            on_start.lock().unwrap().push(format!("start {current}"));
        })
        .on_thread_stop(move || {
            let current = escapement::Handle::try_current().is_ok();
            on_stop.lock().unwrap().push(format!("stop {current}"));
        })
        .build()
        .expect("a runtime");
    // A blocking thread, and one a `block_in_place` hands a worker to.
    rt.block_on(rt.spawn_blocking(|| ())).unwrap();
    rt.block_on(rt.spawn(async { task::block_in_place(|| ()) }))
        .unwrap();
    drop(rt);
    let seen = seen.lock().unwrap().clone();
    assert!(
        seen.len() >= 6,
        "two workers and at least one blocking thread: {seen:?}"
    );
    assert!(seen.iter().all(|s| s.ends_with("true")), "{seen:?}");
}

/// A name callback that names the one worker, then calls `later` for every later thread: the
/// blocking threads, and the one a `block_in_place` hands the worker to. Each of those gets
/// the default name, and the runtime goes on and drops. (A hang here was a thread counted
/// that never started, which the drop waited for, or a worker lost in its hand-off.)
fn later_threads_named_by(later: fn() -> String) {
    within(Duration::from_secs(30), move || {
        let named = Arc::new(AtomicUsize::new(0));
        let rt = escapement::Builder::new()
            .worker_threads(1)
            .thread_name_fn(move || match named.fetch_add(1, Ordering::SeqCst) {
                0 => "worker".to_owned(),
                _ => later(),
            })
            .build()
            .expect("a runtime");
        let blocking = rt.block_on(rt.spawn_blocking(current_name)).unwrap();
        assert_eq!(blocking, "escapement-blocking");
        let handed_off = rt.block_on(rt.spawn(async {
            task::block_in_place(|| ());
            // The worker's loop went on, on a thread that got the default name.
            escapement::spawn(async { 5 }).await.unwrap()
        }));
        assert_eq!(handed_off.unwrap(), 5);
        drop(rt);
    });
}

#[test]
fn a_panicking_name_callback_leaves_the_default_name_and_costs_nothing() {
    later_threads_named_by(|| panic!("a name callback that panics"));
}

#[test]
fn a_name_callback_whose_panic_payload_panics_as_it_drops_leaves_the_default_name() {
    later_threads_named_by(|| std::panic::panic_any(PanicsWhenDropped));
}

#[test]
fn a_name_with_a_nul_byte_from_the_callback_leaves_the_default_name() {
    // The standard library panics as it starts a thread so named.
    later_threads_named_by(|| "no\0thread".to_owned());
}

#[test]
fn thread_name_fn_names_every_thread_and_a_later_thread_name_replaces_it() {
    let started = Log::default();
    let on_start = started.clone();
    let count = Arc::new(AtomicUsize::new(0));
    let rt = escapement::Builder::new()
        .worker_threads(2)
        .thread_name("replaced")
        .thread_name_fn(move || format!("named-{}", count.fetch_add(1, Ordering::SeqCst)))
        .on_thread_start(move || on_start.lock().unwrap().push(current_name()))
        .build()
        .expect("a runtime");
    let in_blocking = rt.block_on(rt.spawn_blocking(current_name)).unwrap();
    drop(rt);
    let mut started = started.lock().unwrap().clone();
    started.sort();
    assert_eq!(
        started,
        ["named-0", "named-1", "named-2"],
        "called once per thread"
    );
    assert_eq!(in_blocking, "named-2");

    let rt = escapement::Builder::new()
        .worker_threads(1)
        .thread_name_fn(|| "replaced".to_owned())
        .thread_name("later")
        .build()
        .expect("a runtime");
    assert_eq!(
        rt.block_on(rt.spawn(async { current_name() })).unwrap(),
        "later-0"
    );
    assert_eq!(
        rt.block_on(rt.spawn_blocking(current_name)).unwrap(),
        "later-blocking"
    );
}

#[test]
fn workers_run_the_park_callback_before_each_park_and_the_unpark_callback_after() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let (on_park, on_unpark) = (log.clone(), log.clone());
    let rt = escapement::Builder::new()
        .worker_threads(2)
        .thread_name("parking")
        .on_thread_park(move || on_park.lock().unwrap().push((current_name(), "park")))
        .on_thread_unpark(move || on_unpark.lock().unwrap().push((current_name(), "unpark")))
        .build()
        .expect("a runtime");
    for _ in 0..3 {
        rt.block_on(rt.spawn(async { sleep(Duration::from_millis(5)).await }))
            .unwrap();
    }
    rt.block_on(rt.spawn_blocking(|| ())).unwrap();
    // Worker 1 may start late on a loaded machine; wait until both have parked once.
    wait_until("both workers to park", || {
        let log = log.lock().unwrap();
        ["parking-0", "parking-1"].iter().all(|worker| {
            log.iter()
                .any(|(name, call)| name == worker && *call == "park")
        })
    });
    drop(rt);
    let log = log.lock().unwrap().clone();
    for worker in ["parking-0", "parking-1"] {
        let calls: Vec<_> = log
            .iter()
            .filter(|(name, _)| name == worker)
            .map(|&(_, call)| call)
            .collect();
        // Each park is followed by its unpark, the shutdown's last among them.
        let expected: Vec<_> = (0..calls.len() / 2)
            .flat_map(|_| ["park", "unpark"])
            .collect();
        assert_eq!(calls, expected, "{worker}");
    }
    // Only workers park: the blocking thread ran neither callback.
    assert!(
        log.iter()
            .all(|(name, _)| name.starts_with("parking-") && name != "parking-blocking"),
        "{log:?}"
    );
}
