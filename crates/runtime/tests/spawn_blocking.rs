//! `task::spawn_blocking`: runs a closure on a pooled blocking thread, reports panics as
//! `JoinError`s, and holds a paused clock's auto-advance back while it runs. The pool reuses
//! its threads, caps them at `max_blocking_threads`, and lets idle ones go after the
//! keep-alive. At shutdown the closures still queued run all the same, as tokio's do, and
//! those passed after it are cancelled; dropping the runtime waits for the running and the
//! queued ones, on the pool's threads (one waiting for another queued behind it at the
//! cap holds a shutdown up to its timeout), `shutdown_timeout` up to its timeout, and the
//! drop joins the pool's threads; from one of its own closures it waits for none, and from a thread-local of one
//! of its threads, ending, it joins none. An aborted closure that has not started never
//! does.

mod support;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};

use escapement::task::spawn_blocking;
use escapement::time::{sleep, Duration, Instant};

use support::{one_worker, within, HoldsTheRuntime};

#[test]
fn the_closure_runs_off_the_workers_and_returns_its_value() {
    let rt = escapement::Builder::new()
        .worker_threads(1)
        .build()
        .expect("a runtime");
    let (value, thread) = rt.block_on(async {
        spawn_blocking(|| (21 * 2, std::thread::current().name().map(str::to_owned)))
            .await
            .unwrap()
    });
    assert_eq!(value, 42);
    assert_eq!(thread.as_deref(), Some("escapement-blocking"));
}

#[test]
fn a_panic_becomes_a_join_error() {
    let rt = escapement::Runtime::new().expect("a runtime");
    let error = rt
        .block_on(async { spawn_blocking(|| panic!("blocking boom")).await })
        .unwrap_err();
    assert!(error.is_panic());
    assert!(error.to_string().contains("blocking boom"));
}

#[test]
fn blocking_work_holds_auto_advance_back() {
    let rt = escapement::Builder::new()
        .worker_threads(2)
        .start_paused(true)
        .build()
        .expect("a runtime");
    let (slept, seen) = rt.block_on(async {
        let start = Instant::now();
        // The blocking thread reads the clock after real time passes; the runtime is idle
        // meanwhile, with a timer pending, but must not jump while the thread is busy.
        let blocking = spawn_blocking(move || {
            std::thread::sleep(std::time::Duration::from_millis(50));
            Instant::now()
        });
        let timer = escapement::spawn(async move {
            sleep(Duration::from_secs(3600)).await;
            start.elapsed()
        });
        let seen = blocking.await.unwrap();
        (timer.await.unwrap(), seen - start)
    });
    assert_eq!(
        seen,
        Duration::ZERO,
        "the clock moved while the blocking thread ran"
    );
    assert_eq!(slept, Duration::from_secs(3600));
}

#[test]
#[should_panic(expected = "spawn_blocking must be called from inside an escapement runtime")]
fn spawn_blocking_outside_a_runtime_panics() {
    drop(spawn_blocking(|| ()));
}

#[test]
fn sequential_closures_reuse_one_thread() {
    let rt = escapement::Builder::new()
        .worker_threads(1)
        .build()
        .expect("a runtime");
    let threads: HashSet<std::thread::ThreadId> = rt.block_on(async {
        let mut threads = HashSet::new();
        for _ in 0..50 {
            let id = spawn_blocking(|| std::thread::current().id())
                .await
                .unwrap();
            threads.insert(id);
            // Time for the thread to be waiting again before the next closure comes.
            sleep(Duration::from_millis(10)).await;
        }
        threads
    });
    // The thread that ran a closure may still not be waiting again when the next one comes,
    // and a thread just started may not have reached its loop, so a few threads can start in
    // a loaded run; one per closure would be the old thread-per-call behaviour. (The unit
    // tests of `task::pool` pin the reuse down exactly.)
    assert!(
        threads.len() < 10,
        "50 closures, one at a time, ran on {} threads",
        threads.len()
    );
}

#[test]
fn at_most_max_blocking_threads_run_at_once_and_the_rest_wait_their_turn() {
    let rt = escapement::Builder::new()
        .worker_threads(1)
        .max_blocking_threads(2)
        .build()
        .expect("a runtime");
    let running = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let results = rt.block_on(async {
        let handles: Vec<_> = (0..6)
            .map(|i| {
                let (running, most) = (running.clone(), most.clone());
                spawn_blocking(move || {
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    std::thread::sleep(std::time::Duration::from_millis(20));
                    running.fetch_sub(1, Ordering::SeqCst);
                    i
                })
            })
            .collect();
        let mut results = Vec::new();
        for handle in handles {
            results.push(handle.await.unwrap());
        }
        results
    });
    assert_eq!(results, (0..6).collect::<Vec<_>>());
    assert!(
        most.load(Ordering::SeqCst) <= 2,
        "{} closures ran at once with max_blocking_threads(2)",
        most.load(Ordering::SeqCst)
    );
}

/// The threads of two closures run `pause` apart on a runtime with `keep_alive`.
fn threads_of_two_closures(
    keep_alive: std::time::Duration,
    pause: Duration,
) -> (std::thread::ThreadId, std::thread::ThreadId) {
    let rt = escapement::Builder::new()
        .worker_threads(1)
        .thread_keep_alive(keep_alive)
        .build()
        .expect("a runtime");
    rt.block_on(async {
        let first = spawn_blocking(|| std::thread::current().id())
            .await
            .unwrap();
        sleep(pause).await;
        let second = spawn_blocking(|| std::thread::current().id())
            .await
            .unwrap();
        (first, second)
    })
}

#[test]
fn an_idle_thread_exits_after_the_keep_alive() {
    // A pause far longer than the keep-alive, for a loaded machine.
    let (first, second) = threads_of_two_closures(
        std::time::Duration::from_millis(20),
        Duration::from_millis(500),
    );
    // A `ThreadId` is never reused, so a second thread means the first one had gone.
    assert_ne!(first, second, "the idle thread outlived its keep-alive");
}

#[test]
fn a_keep_alive_of_duration_max_keeps_the_thread() {
    let (first, second) =
        threads_of_two_closures(std::time::Duration::MAX, Duration::from_millis(50));
    assert_eq!(
        first, second,
        "the idle thread should still have been there"
    );
}

/// A runtime with one blocking thread, busy with a closure that waits for the returned
/// sender, and a second closure queued behind it, which counts its runs in `ran` and its
/// drops in `dropped`. Returns the two handles.
fn one_closure_running_one_queued(
    rt: &escapement::Runtime,
    ran: &Arc<AtomicUsize>,
    dropped: &Arc<AtomicUsize>,
) -> (
    mpsc::Sender<()>,
    escapement::JoinHandle<bool>,
    escapement::JoinHandle<()>,
) {
    let (release, blocked) = mpsc::channel::<()>();
    let (started, running) = mpsc::channel();
    let _inside = rt.enter();
    let first = spawn_blocking(move || {
        started.send(()).unwrap();
        blocked.recv().is_ok()
    });
    running.recv().expect("the first closure started");
    let (ran, token) = (ran.clone(), DropCount(dropped.clone()));
    // The only thread is busy with `first`: this one waits in the queue.
    let second = spawn_blocking(move || {
        let _token = token;
        ran.fetch_add(1, Ordering::SeqCst);
    });
    (release, first, second)
}

/// Starts a closure on `rt` that holds a blocking thread (its only one, under a cap of one)
/// until the returned sender sends or drops; returns once it runs.
fn hold_the_only_thread(rt: &escapement::Runtime) -> mpsc::Sender<()> {
    let (release, gate) = mpsc::channel::<()>();
    let (started, running) = mpsc::channel();
    drop(rt.spawn_blocking(move || {
        started.send(()).unwrap();
        let _ = gate.recv();
    }));
    running.recv().expect("the first closure started");
    release
}

/// Counts its drops.
struct DropCount(Arc<AtomicUsize>);

impl Drop for DropCount {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn one_blocking_thread() -> escapement::Runtime {
    escapement::Builder::new()
        .worker_threads(1)
        .max_blocking_threads(1)
        .build()
        .expect("a runtime")
}

#[test]
fn a_closure_queued_when_the_runtime_shuts_down_still_runs() {
    let rt = one_blocking_thread();
    let (ran, dropped) = (Arc::default(), Arc::default());
    let (release, first, second) = one_closure_running_one_queued(&rt, &ran, &dropped);
    // Without waiting: `first` waits for the message sent below.
    rt.shutdown_background();
    release.send(()).expect("the first closure is waiting");
    assert!(futures::executor::block_on(first).unwrap());
    // The thread, free again, runs the queued closure: it was passed before the shutdown.
    futures::executor::block_on(second).expect("the queued closure ran");
    assert_eq!(ran.load(Ordering::SeqCst), 1);
    assert_eq!(dropped.load(Ordering::SeqCst), 1, "the closure was dropped");
}

/// A closure passed just before the runtime is dropped runs, as tokio's: a fire-and-forget
/// `spawn_blocking` (a file written, a log flushed) is not lost to the shutdown, on either
/// flavor, whether its thread had started or not when the drop began.
#[test]
fn a_closure_passed_just_before_the_drop_runs() {
    // Fewer under Miri, which interprets each runtime's start and shutdown.
    let rounds = if cfg!(miri) { 6 } else { 20 };
    for current_thread in [true, false] {
        let ran = Arc::new(AtomicUsize::new(0));
        for _ in 0..rounds {
            let rt = one_worker(current_thread);
            let ran = ran.clone();
            rt.block_on(async move {
                drop(spawn_blocking(move || ran.fetch_add(1, Ordering::SeqCst)));
            });
            drop(rt);
        }
        assert_eq!(
            ran.load(Ordering::SeqCst),
            rounds,
            "current-thread: {current_thread}"
        );
    }
}

/// With the one blocking thread the cap allows busy, a queued closure that waits for a
/// closure queued behind it deadlocks the pool, and the shutdown waits for it too, but no
/// longer than its timeout (tokio's workers take the queue as they exit; these do not).
#[test]
fn a_queued_closure_waiting_for_one_queued_behind_it_holds_a_shutdown_to_its_timeout() {
    within(std::time::Duration::from_secs(30), || {
        let rt = one_blocking_thread();
        let release = hold_the_only_thread(&rt);
        let (hand, handed) = mpsc::channel::<escapement::JoinHandle<()>>();
        let waits = rt.spawn_blocking(move || {
            let behind = handed.recv().expect("the closure queued behind");
            let _ = futures::executor::block_on(behind);
        });
        let behind = rt.spawn_blocking(|| ());
        hand.send(behind).unwrap();
        release.send(()).unwrap();
        let start = std::time::Instant::now();
        rt.shutdown_timeout(std::time::Duration::from_millis(100));
        assert!(start.elapsed() < std::time::Duration::from_secs(10));
        assert!(!waits.is_finished(), "the deadlock outlives the shutdown");
    });
}

std::thread_local! {
    static STARTED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Closures still queued at the drop run on the pool's threads, after their start
/// callback, and never on the thread dropping the runtime, which may be anything (a
/// thread-local's destructor, below).
#[test]
fn closures_queued_at_the_drop_run_on_the_runtimes_threads() {
    for current_thread in [true, false] {
        let mut builder = if current_thread {
            escapement::Builder::new_current_thread()
        } else {
            let mut builder = escapement::Builder::new();
            builder.worker_threads(1);
            builder
        };
        let rt = builder
            .max_blocking_threads(1)
            .on_thread_start(|| STARTED.with(|started| started.set(true)))
            .build()
            .expect("a runtime");
        let release = hold_the_only_thread(&rt);
        let queued = rt.spawn_blocking(|| {
            (
                STARTED.with(std::cell::Cell::get),
                std::thread::current().id(),
            )
        });
        let releaser = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(50));
            release.send(()).unwrap();
        });
        drop(rt);
        releaser.join().unwrap();
        let (after_start, thread) = futures::executor::block_on(queued).expect("it ran");
        assert!(after_start, "current-thread: {current_thread}");
        assert_ne!(thread, std::thread::current().id());
    }
}

std::thread_local! {
    static HELD: std::cell::RefCell<Option<escapement::Runtime>> =
        const { std::cell::RefCell::new(None) };
}

/// A runtime held by a thread-local, dropped as its thread exits with a closure queued
/// behind the cap: the drop waits for it and the process lives on.
#[test]
fn a_runtime_in_a_thread_local_dropped_with_a_closure_queued() {
    let ran = Arc::new(AtomicBool::new(false));
    let flag = ran.clone();
    std::thread::spawn(move || {
        let rt = escapement::Builder::new_current_thread()
            .max_blocking_threads(1)
            .build()
            .expect("a runtime");
        drop(rt.spawn_blocking(|| std::thread::sleep(std::time::Duration::from_millis(100))));
        drop(rt.spawn_blocking(move || flag.store(true, Ordering::SeqCst)));
        HELD.with(|held| *held.borrow_mut() = Some(rt));
    })
    .join()
    .expect("the thread exits cleanly");
    assert!(
        ran.load(Ordering::SeqCst),
        "the queued closure ran before the drop returned"
    );
}

/// A runtime dropped in a closure of another runtime leaves that closure marked as one of
/// its own runtime's: a drop of that runtime there still waits for none of its closures,
/// one of which waits for this one.
#[test]
fn dropping_another_runtime_in_a_closure_keeps_it_one_of_its_runtimes() {
    within(std::time::Duration::from_secs(30), || {
        let outer = Arc::new(std::sync::Mutex::new(Some(one_blocking_thread())));
        let handle = outer.lock().unwrap().as_ref().unwrap().handle().clone();
        let (done, waiting) = mpsc::channel::<()>();
        // Queued behind the first: it waits for the first to finish.
        let slot = outer.clone();
        let first = handle.spawn_blocking(move || {
            let inner = one_blocking_thread();
            drop(inner.spawn_blocking(|| std::thread::sleep(std::time::Duration::from_millis(20))));
            drop(inner.spawn_blocking(|| ()));
            drop(inner);
            let outer = slot.lock().unwrap().take().expect("the outer runtime");
            drop(outer);
            done.send(()).unwrap();
        });
        let second = handle.spawn_blocking(move || waiting.recv().is_ok());
        futures::executor::block_on(first).expect("the first closure returned");
        assert!(futures::executor::block_on(second).expect("the second closure ran"));
    });
}

/// A queued closure runs, and is dropped, on the pool's thread, not on the thread shutting
/// the runtime down: a slow destructor holds up no shutdown beyond its timeout.
#[test]
fn a_queued_closure_dropped_slowly_holds_no_shutdown_up_past_its_timeout() {
    const SLOW: std::time::Duration = std::time::Duration::from_secs(5);
    struct SlowDrop;
    impl Drop for SlowDrop {
        fn drop(&mut self) {
            std::thread::sleep(SLOW);
        }
    }
    let rt = one_blocking_thread();
    let release = hold_the_only_thread(&rt);
    let slow = SlowDrop;
    let _second = rt.spawn_blocking(move || drop(slow));
    // Released once the shutdown has begun (and returned, unless a drop holds it up), with
    // the second closure still queued.
    let releaser = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(300));
        release.send(()).expect("the first closure is waiting");
    });
    let start = std::time::Instant::now();
    rt.shutdown_timeout(std::time::Duration::from_millis(100));
    let took = start.elapsed();
    assert!(took < SLOW / 2, "shutdown_timeout(100ms) took {took:?}");
    releaser.join().unwrap();
}

#[test]
fn dropping_the_runtime_waits_for_the_running_closure_and_the_queued_one() {
    let rt = one_blocking_thread();
    let (ran, dropped) = (Arc::default(), Arc::default());
    let (release, first, second) = one_closure_running_one_queued(&rt, &ran, &dropped);
    let releaser = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(50));
        release.send(()).expect("the first closure is waiting");
    });
    drop(rt);
    // The drop waited for `first`, which returned once released.
    assert!(
        first.is_finished(),
        "the drop returned before the running closure"
    );
    assert!(futures::executor::block_on(first).unwrap());
    // And for `second`, queued behind it, which the thread ran next.
    assert!(
        second.is_finished(),
        "the drop returned before the queued closure"
    );
    futures::executor::block_on(second).expect("the queued closure ran");
    assert_eq!(ran.load(Ordering::SeqCst), 1);
    assert_eq!(dropped.load(Ordering::SeqCst), 1);
    releaser.join().unwrap();
}

/// Sets its flag when the thread that holds it ends, a little after its last closure.
struct SetAsTheThreadEnds(Arc<AtomicBool>);

impl Drop for SetAsTheThreadEnds {
    fn drop(&mut self) {
        std::thread::sleep(std::time::Duration::from_millis(50));
        self.0.store(true, Ordering::SeqCst);
    }
}

std::thread_local! {
    static ENDING: std::cell::RefCell<Option<SetAsTheThreadEnds>> =
        const { std::cell::RefCell::new(None) };
}

/// As tokio joins its blocking threads: once the drop returns, they have ended, their
/// thread-locals dropped, and with them the runtime's handle they held.
#[test]
fn dropping_the_runtime_joins_its_blocking_threads() {
    let rt = one_blocking_thread();
    let ended = Arc::new(AtomicBool::new(false));
    let flag = ended.clone();
    rt.block_on(rt.spawn_blocking(move || {
        ENDING.with(|ending| *ending.borrow_mut() = Some(SetAsTheThreadEnds(flag)));
    }))
    .unwrap();
    drop(rt);
    assert!(
        ended.load(Ordering::SeqCst),
        "a blocking thread outlived the drop"
    );
}

#[test]
fn an_aborted_closure_that_has_not_started_never_runs_and_one_running_goes_on() {
    let rt = one_blocking_thread();
    let (ran, dropped) = (Arc::default(), Arc::default());
    let (release, first, second) = one_closure_running_one_queued(&rt, &ran, &dropped);
    second.abort();
    first.abort();
    release.send(()).expect("the first closure is waiting");
    rt.block_on(async {
        assert!(first.await.unwrap());
        assert!(second.await.unwrap_err().is_cancelled());
    });
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    assert_eq!(dropped.load(Ordering::SeqCst), 1);
}

#[test]
fn shutdown_timeout_waits_for_a_closure_up_to_the_timeout() {
    let rt = escapement::Builder::new()
        .worker_threads(1)
        .build()
        .expect("a runtime");
    let (release, blocked) = mpsc::channel::<()>();
    let (started, running) = mpsc::channel();
    let closure = {
        let _inside = rt.enter();
        spawn_blocking(move || {
            started.send(()).unwrap();
            blocked.recv().is_ok()
        })
    };
    running.recv().expect("the closure started");
    let timeout = std::time::Duration::from_millis(100);
    let start = std::time::Instant::now();
    rt.shutdown_timeout(timeout);
    let took = start.elapsed();
    assert!(took >= timeout, "returned before the timeout: {took:?}");
    assert!(
        took < std::time::Duration::from_secs(20),
        "waited past the timeout: {took:?}"
    );
    release.send(()).expect("the closure is still waiting");
    assert!(futures::executor::block_on(closure).unwrap());
}

#[test]
fn a_closure_passed_after_the_shutdown_is_cancelled_without_running() {
    let rt = escapement::Runtime::new().expect("a runtime");
    let handle = rt.handle().clone();
    drop(rt);
    let ran = Arc::new(AtomicUsize::new(0));
    let closure = {
        let ran = ran.clone();
        handle.spawn_blocking(move || ran.fetch_add(1, Ordering::SeqCst))
    };
    let error = futures::executor::block_on(closure).expect_err("cancelled");
    assert!(error.is_cancelled());
    assert_eq!(ran.load(Ordering::SeqCst), 0);
}

#[test]
fn a_runtime_dropped_inside_one_of_its_closures_does_not_wait_for_that_closure() {
    let rt = escapement::Runtime::new().expect("a runtime");
    let handle = rt.handle().clone();
    let slot = Arc::new(std::sync::Mutex::new(Some(rt)));
    let (done, finished) = mpsc::channel();
    drop(handle.spawn_blocking(move || {
        drop(slot.lock().unwrap().take());
        done.send(()).unwrap();
    }));
    finished
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("the drop returned inside the closure");
}

#[test]
#[should_panic(expected = "max_blocking_threads must be at least 1")]
fn zero_max_blocking_threads_panics() {
    escapement::Builder::new().max_blocking_threads(0);
}

/// From one of its own blocking closures the drop does not wait for the others: one may be
/// waiting for this one.
#[test]
fn a_runtime_dropped_in_its_own_blocking_closure_does_not_wait_for_the_others() {
    let rt = escapement::Builder::new()
        .worker_threads(1)
        .build()
        .expect("a runtime");
    let (after_tx, after) = mpsc::channel::<()>();
    let (started_tx, started) = mpsc::channel();
    drop(rt.spawn_blocking(move || {
        started_tx.send(()).unwrap();
        // Waits for the closure that drops the runtime.
        let _ = after.recv();
    }));
    started.recv().unwrap();
    let handle = rt.handle().clone();
    let slot = Arc::new(std::sync::Mutex::new(Some(rt)));
    let (done_tx, done) = mpsc::channel();
    drop(handle.spawn_blocking(move || {
        drop(slot.lock().unwrap().take());
        let _ = after_tx.send(());
        done_tx.send(()).unwrap();
    }));
    done.recv_timeout(std::time::Duration::from_secs(20))
        .expect("the drop returned");
}

std::thread_local! {
    static HOLDER: std::cell::RefCell<Option<HoldsTheRuntime>> =
        const { std::cell::RefCell::new(None) };
}

/// A runtime handed to a thread-local of one of its own blocking threads is dropped when that
/// thread's keep-alive runs out: the thread, ending, waits for the pool's other threads but
/// joins none, since the last to end may be itself or one that joins it.
#[test]
fn a_runtime_dropped_by_a_thread_local_of_its_own_blocking_thread_shuts_down() {
    for second_thread in [false, true] {
        let rt = escapement::Builder::new()
            .worker_threads(1)
            .thread_keep_alive(std::time::Duration::from_millis(50))
            .build()
            .expect("a runtime");
        let handle = rt.handle().clone();
        let release = second_thread.then(|| {
            // Another blocking thread, busy until released, that ends after the first.
            let (busy_tx, busy) = mpsc::channel();
            let (release, gate) = mpsc::channel::<()>();
            drop(rt.spawn_blocking(move || {
                busy_tx.send(()).unwrap();
                let _ = gate.recv();
            }));
            busy.recv().unwrap();
            release
        });
        let slot = Arc::new(std::sync::Mutex::new(Some(rt)));
        let (dropped_tx, dropped) = mpsc::channel();
        drop(handle.spawn_blocking(move || {
            let rt = slot.lock().unwrap().take();
            HOLDER.with(|holder| *holder.borrow_mut() = Some(HoldsTheRuntime(rt, dropped_tx)));
        }));
        if let Some(release) = release {
            std::thread::sleep(std::time::Duration::from_millis(100));
            release.send(()).unwrap();
        }
        dropped
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("the drop returned");
    }
}
