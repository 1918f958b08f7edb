//! Shutting a runtime down: dropping it cancels every task (their futures are dropped, their
//! join handles report cancellation, nothing they held leaks; tasks that keep yielding too,
//! held back by their worker or queued again), and refuses later spawns; `shutdown_timeout`
//! returns after about its timeout when a task is blocked in `std::thread::sleep`, or when a
//! cancelled task's destructor blocks (the workers drop the tasks, as tokio's do); the tasks
//! it cancels are dropped inside its context; dropped on a worker of another runtime, it still
//! waits for its own busy workers, and on one of its own workers for the others; in async code
//! (a task, a `block_on` future) it does not wait for its blocking closures; dropped by a
//! thread-local's destructor as its thread exits, after the runtime's own thread-locals, it
//! still shuts down. (Timers across the shutdown are `shutdown_timers.rs`; tasks holding armed
//! timers at shutdown are `task_drop_in_place.rs` and `shutdown_many_timers.rs`.)

mod support;

use std::future::pending;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Poll, Waker};
use std::time::Duration;

use escapement::time::sleep;
use escapement::{Handle, Runtime};

use support::{running, DropCounter, HoldsTheRuntime};

/// The tasks waiting when the runtime is dropped: fewer under Miri, which interprets every
/// step of each.
const WAITING: usize = if cfg!(miri) { 20 } else { 1_000 };

/// The tasks of the tests that spawn or wake during the shutdown: fewer under Miri too.
const RACING: usize = if cfg!(miri) { 20 } else { 200 };

#[test]
fn dropping_the_runtime_cancels_waiting_tasks_and_drops_their_futures() {
    for workers in [1, 4] {
        let rt = running(workers);
        let drops = Arc::new(AtomicUsize::new(0));
        let shared = Arc::new(());
        let (_tx, rx) = futures::channel::oneshot::channel::<()>();
        let rx = futures::FutureExt::shared(rx);
        let tasks: Vec<_> = (0..WAITING)
            .map(|_| {
                let counter = DropCounter(drops.clone());
                let shared = shared.clone();
                let rx = rx.clone();
                rt.spawn(async move {
                    let _counter = counter;
                    let _shared = shared;
                    let _ = rx.await;
                })
            })
            .collect();
        let start = std::time::Instant::now();
        drop(rt);
        assert!(start.elapsed() < Duration::from_secs(20), "shutdown hung");
        assert_eq!(drops.load(Ordering::SeqCst), WAITING, "{workers} workers");
        assert_eq!(
            Arc::strong_count(&shared),
            1,
            "nothing the tasks held leaked"
        );
        for task in tasks {
            assert!(task.is_finished());
            let error = futures::executor::block_on(task).expect_err("cancelled");
            assert!(error.is_cancelled());
        }
    }
}

/// Tasks that yield without end, each held back by its worker after every turn, or queued
/// again: the shutdown cancels them wherever they are.
#[test]
fn dropping_the_runtime_cancels_tasks_that_keep_yielding() {
    const YIELDING: usize = 8;
    for workers in [1, 2] {
        let rt = running(workers);
        let (drops, turns) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let tasks: Vec<_> = (0..YIELDING)
            .map(|_| {
                let (counter, turns) = (DropCounter(drops.clone()), turns.clone());
                rt.spawn(async move {
                    let _counter = counter;
                    loop {
                        turns.fetch_add(1, Ordering::SeqCst);
                        escapement::task::yield_now().await;
                    }
                })
            })
            .collect();
        support::wait_until("every task has yielded", || {
            turns.load(Ordering::SeqCst) > 2 * YIELDING
        });
        drop(rt);
        assert_eq!(drops.load(Ordering::SeqCst), YIELDING, "{workers} workers");
        for task in tasks {
            let error = futures::executor::block_on(task).expect_err("cancelled");
            assert!(error.is_cancelled());
        }
    }
}

#[test]
fn spawning_after_shutdown_cancels_the_task_at_once() {
    let rt = running(2);
    let handle = rt.handle().clone();
    drop(rt);
    let ran = Arc::new(AtomicBool::new(false));
    let task = {
        let ran = ran.clone();
        handle.spawn(async move { ran.store(true, Ordering::SeqCst) })
    };
    assert!(task.is_finished());
    let error = futures::executor::block_on(task).expect_err("cancelled");
    assert!(error.is_cancelled());
    assert!(!ran.load(Ordering::SeqCst));
}

#[test]
fn spawning_while_a_stuck_worker_holds_up_the_shutdown_cancels_the_task_at_once() {
    let rt = running(1);
    let handle = rt.handle().clone();
    let (started, stuck) = std::sync::mpsc::channel();
    let (release, released) = std::sync::mpsc::channel::<()>();
    drop(rt.spawn(async move {
        started.send(()).unwrap();
        // The only worker is stuck in this poll until the end of the test.
        let _ = released.recv();
    }));
    stuck.recv().unwrap();
    rt.shutdown_timeout(Duration::from_millis(10));
    let dropped = Arc::new(AtomicUsize::new(0));
    let guard = DropCounter(dropped.clone());
    let task = handle.spawn(async move {
        let _guard = guard;
        pending::<()>().await;
    });
    assert_eq!(
        dropped.load(Ordering::SeqCst),
        1,
        "the future was dropped in spawn"
    );
    assert!(task.is_finished());
    let error = futures::executor::block_on(task).expect_err("cancelled");
    assert!(error.is_cancelled());
    release.send(()).unwrap();
}

/// Spawns a task from its destructor, as cleanup code might.
struct SpawnOnDrop(Handle);

impl Drop for SpawnOnDrop {
    fn drop(&mut self) {
        drop(self.0.spawn(async {}));
    }
}

#[test]
fn a_task_spawned_during_shutdown_does_not_hang_it() {
    for workers in [1, 3] {
        let rt = running(workers);
        for _ in 0..RACING / 2 {
            let spawner = SpawnOnDrop(rt.handle().clone());
            drop(rt.spawn(async move {
                let _spawner = spawner;
                pending::<()>().await;
            }));
        }
        let start = std::time::Instant::now();
        drop(rt);
        assert!(start.elapsed() < Duration::from_secs(20), "shutdown hung");
    }
}

/// On drop, records what the runtime context offered: a handle, and a spawn through it.
struct ContextProbe(Arc<Mutex<Option<(bool, bool)>>>);

impl Drop for ContextProbe {
    fn drop(&mut self) {
        let current = Handle::try_current().is_ok();
        // A spawn during shutdown is cancelled at once; it must not panic.
        let cancelled = futures::executor::block_on(escapement::spawn(async {}))
            .is_err_and(|error| error.is_cancelled());
        *self.0.lock().unwrap() = Some((current, cancelled));
    }
}

#[test]
fn tasks_cancelled_by_the_drop_of_the_runtime_drop_inside_its_context() {
    for workers in [1, 2] {
        let rt = running(workers);
        let seen = Arc::new(Mutex::new(None));
        let probe = ContextProbe(seen.clone());
        let (started, running_now) = std::sync::mpsc::channel();
        drop(rt.spawn(async move {
            let _probe = probe;
            started.send(()).unwrap();
            pending::<()>().await;
        }));
        running_now.recv().unwrap();
        drop(rt);
        assert_eq!(
            *seen.lock().unwrap(),
            Some((true, true)),
            "(a runtime was current, a spawn there was cancelled)"
        );
    }
}

/// Spawns on `rt` a task that stays busy in its first poll for 200 ms, then pends forever,
/// and returns once it is busy; the count goes to 1 when its future is dropped.
fn spawn_busy_task(rt: &Runtime) -> Arc<AtomicUsize> {
    let dropped = Arc::new(AtomicUsize::new(0));
    let guard = DropCounter(dropped.clone());
    let (started, busy) = std::sync::mpsc::channel();
    drop(rt.spawn(async move {
        let _guard = guard;
        started.send(()).unwrap();
        // Busy in one poll while the runtime is dropped elsewhere.
        std::thread::sleep(Duration::from_millis(200));
        pending::<()>().await;
    }));
    busy.recv().unwrap();
    dropped
}

#[test]
fn dropping_a_runtime_on_another_runtimes_worker_waits_for_its_busy_workers() {
    let (outer, inner) = (running(1), running(1));
    let dropped = spawn_busy_task(&inner);
    let seen = outer
        .block_on(outer.spawn(async move {
            drop(inner);
            dropped.load(Ordering::SeqCst)
        }))
        .expect("the task returns");
    assert_eq!(
        seen, 1,
        "the drop waited for the busy worker and cancelled its task"
    );
}

#[test]
fn dropping_a_runtime_on_its_own_worker_waits_for_its_other_busy_workers() {
    let rt = running(2);
    // Busy on one worker while a task on the other drops the runtime.
    let dropped = spawn_busy_task(&rt);
    let handle = rt.handle().clone();
    let slot = Arc::new(Mutex::new(Some(rt)));
    let (report, seen) = std::sync::mpsc::channel();
    drop(handle.spawn(async move {
        drop(slot.lock().unwrap().take());
        report.send(dropped.load(Ordering::SeqCst)).unwrap();
    }));
    let seen = seen
        .recv_timeout(Duration::from_secs(60))
        .expect("the drop returned");
    assert_eq!(
        seen, 1,
        "the drop waited for the other busy worker and cancelled its task"
    );
}

/// Starts on `rt` a blocking closure that waits for the code dropping the runtime to go on
/// after the drop, through the returned sender.
fn closure_waiting_for_the_drop(rt: &Runtime) -> std::sync::mpsc::Sender<()> {
    let (after_drop, dropped) = std::sync::mpsc::channel::<()>();
    drop(rt.spawn_blocking(move || {
        let _ = dropped.recv();
    }));
    after_drop
}

#[test]
fn a_runtime_dropped_by_its_own_task_does_not_wait_for_its_blocking_closures() {
    let rt = running(1);
    let after_drop = closure_waiting_for_the_drop(&rt);
    let handle = rt.handle().clone();
    let slot = Arc::new(Mutex::new(Some(rt)));
    let (report, done) = std::sync::mpsc::channel();
    drop(handle.spawn(async move {
        let rt = slot.lock().unwrap().take();
        drop(rt);
        let _ = after_drop.send(());
        report.send(()).unwrap();
    }));
    done.recv_timeout(Duration::from_secs(60))
        .expect("the drop returned without waiting for the closure");
}

#[test]
fn a_runtime_dropped_in_a_block_on_future_does_not_wait_for_its_blocking_closures() {
    let rt = running(1);
    let after_drop = closure_waiting_for_the_drop(&rt);
    let handle = rt.handle().clone();
    let (report, done) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        handle.block_on(async move {
            drop(rt);
            let _ = after_drop.send(());
        });
        report.send(()).unwrap();
    });
    done.recv_timeout(Duration::from_secs(60))
        .expect("the drop returned without waiting for the closure");
}

#[test]
fn the_runtime_can_be_dropped_on_another_thread() {
    let rt = running(2);
    let task = rt.spawn(pending::<()>());
    std::thread::spawn(move || drop(rt))
        .join()
        .expect("the runtime was dropped there");
    assert!(futures::executor::block_on(task)
        .expect_err("cancelled")
        .is_cancelled());
}

#[test]
fn shutdown_timeout_with_a_blocked_task_returns_after_about_the_timeout() {
    let rt = running(2);
    let blocking = Arc::new(AtomicBool::new(false));
    {
        let blocking = blocking.clone();
        drop(rt.spawn(async move {
            blocking.store(true, Ordering::SeqCst);
            std::thread::sleep(Duration::from_secs(30));
        }));
    }
    let begin = std::time::Instant::now();
    while !blocking.load(Ordering::SeqCst) {
        assert!(
            begin.elapsed() < Duration::from_secs(10),
            "the task never started"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    let timeout = Duration::from_millis(200);
    let start = std::time::Instant::now();
    rt.shutdown_timeout(timeout);
    let took = start.elapsed();
    assert!(took >= timeout, "returned before the timeout: {took:?}");
    assert!(
        took < Duration::from_secs(15),
        "waited for the blocked task: {took:?}"
    );
}

/// A future whose destructor blocks for `DROP_TAKES`, then records the thread it ran on.
struct SlowDrop(Arc<Mutex<Option<String>>>);

const DROP_TAKES: Duration = Duration::from_secs(3);

impl std::future::Future for SlowDrop {
    type Output = ();

    fn poll(self: Pin<&mut Self>, _: &mut std::task::Context<'_>) -> Poll<()> {
        Poll::Pending
    }
}

impl Drop for SlowDrop {
    fn drop(&mut self) {
        std::thread::sleep(DROP_TAKES);
        let thread = std::thread::current().name().unwrap_or("?").to_owned();
        *self.0.lock().unwrap() = Some(thread);
    }
}

#[test]
fn a_timeout_bounds_the_drop_of_the_waiting_tasks_which_the_workers_do() {
    for background in [true, false] {
        let rt = running(2);
        let dropped_on = Arc::new(Mutex::new(None));
        let task = rt.spawn(SlowDrop(dropped_on.clone()));
        // Polled once, so the task waits in the owned list, not in a queue.
        support::wait_until("the task's first poll", || {
            rt.metrics().num_alive_tasks() == 1 && !task.is_finished()
        });
        std::thread::sleep(Duration::from_millis(20));
        let start = std::time::Instant::now();
        if background {
            rt.shutdown_background();
        } else {
            rt.shutdown_timeout(Duration::from_millis(100));
        }
        let took = start.elapsed();
        assert!(took < DROP_TAKES / 2, "waited for the destructor: {took:?}");
        support::wait_until("the future to be dropped", || {
            dropped_on.lock().unwrap().is_some()
        });
        let thread = dropped_on.lock().unwrap().clone().unwrap();
        assert!(
            thread.starts_with("escapement-worker-"),
            "dropped on {thread}"
        );
        drop(task);
    }
}

#[test]
fn shutdown_timeout_with_idle_workers_returns() {
    let rt = running(3);
    rt.block_on(async { sleep(Duration::from_millis(1)).await });
    let start = std::time::Instant::now();
    rt.shutdown_timeout(Duration::from_secs(30));
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "idle workers should exit without using the whole timeout"
    );
}

#[test]
fn tasks_woken_during_shutdown_do_not_crash_it() {
    let rt = running(4);
    let slots: Arc<Vec<Mutex<Option<Waker>>>> =
        Arc::new((0..RACING).map(|_| Mutex::new(None)).collect());
    for i in 0..RACING {
        let slots = slots.clone();
        drop(rt.spawn(std::future::poll_fn(move |cx| {
            *slots[i].lock().expect("not poisoned") = Some(cx.waker().clone());
            Poll::<()>::Pending
        })));
    }
    std::thread::sleep(Duration::from_millis(20));
    let stop = Arc::new(AtomicBool::new(false));
    let waking = {
        let slots = slots.clone();
        let stop = stop.clone();
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                for slot in slots.iter() {
                    let waker = slot.lock().expect("not poisoned").clone();
                    if let Some(waker) = waker {
                        waker.wake();
                    }
                }
            }
        })
    };
    std::thread::sleep(Duration::from_millis(5));
    drop(rt);
    stop.store(true, Ordering::SeqCst);
    waking.join().expect("the waking thread ran");
    // The wakers outlive the runtime; waking and dropping them now is harmless.
    for slot in slots.iter() {
        if let Some(waker) = slot.lock().expect("not poisoned").take() {
            waker.wake();
        }
    }
}

std::thread_local! {
    /// A runtime kept by a thread, dropped by this thread-local's destructor as it exits.
    static HELD: std::cell::RefCell<Option<Runtime>> = const { std::cell::RefCell::new(None) };
}

#[test]
fn a_runtime_dropped_by_a_thread_locals_destructor_shuts_down() {
    for current_thread in [true, false] {
        let rt = if current_thread {
            escapement::Builder::new_current_thread().build()
        } else {
            escapement::Builder::new().worker_threads(2).build()
        }
        .expect("a runtime");
        let dropped = Arc::new(AtomicUsize::new(0));
        let counter = DropCounter(dropped.clone());
        std::thread::spawn(move || {
            // Set before the runtime's own thread-locals are first used on this thread, so
            // they are destroyed before it, and its shutdown finds no context to enter.
            HELD.with(|held| *held.borrow_mut() = Some(rt));
            HELD.with(|held| {
                let held = held.borrow();
                let rt = held.as_ref().expect("held");
                drop(rt.spawn(async move {
                    let _counter = counter;
                    pending::<()>().await;
                }));
                assert_eq!(
                    rt.block_on(async { escapement::spawn(async { 5 }).await })
                        .unwrap(),
                    5
                );
            });
        })
        .join()
        .expect("the thread exits cleanly");
        assert_eq!(
            dropped.load(Ordering::SeqCst),
            1,
            "the waiting task was cancelled"
        );
    }
}

std::thread_local! {
    /// A runtime kept by one of its own worker threads, dropped as that thread exits.
    static HELD_BY_WORKER: std::cell::RefCell<Option<HoldsTheRuntime>> =
        const { std::cell::RefCell::new(None) };
}

/// A thread the runtime started as its worker, which handed the worker off in
/// `block_in_place` and so left its loop and exited, drops the runtime from a thread-local's
/// destructor: the shutdown joins the runtime's other threads, not this one, which would
/// fail, inside a destructor, and abort the process.
#[test]
fn a_runtime_dropped_by_a_thread_local_of_its_own_worker_thread_shuts_down() {
    let rt = escapement::Builder::new()
        .worker_threads(1)
        .build()
        .expect("a runtime");
    let handle = rt.handle().clone();
    let (dropped, was_dropped) = std::sync::mpsc::channel();
    let held = Arc::new(Mutex::new(Some(HoldsTheRuntime(Some(rt), dropped))));
    drop(handle.spawn(async move {
        let (moved, worker_moved) = std::sync::mpsc::channel();
        // Runs once the worker is on another thread, so this one leaves the loop after the
        // poll, and exits.
        drop(escapement::spawn(async move {
            let _ = moved.send(());
        }));
        escapement::task::block_in_place(|| {
            worker_moved
                .recv_timeout(Duration::from_secs(20))
                .expect("the worker moved to another thread");
            let runtime = held.lock().expect("not poisoned").take();
            HELD_BY_WORKER.with(|slot| *slot.borrow_mut() = runtime);
        });
    }));
    drop(handle);
    was_dropped
        .recv_timeout(Duration::from_secs(20))
        .expect("the runtime was dropped, and its drop returned");
}
