//! Task panics and `JoinHandle::abort`: a panicking task does not kill its worker (more
//! tasks run afterwards, on 1 and several workers); aborting a task that is idle (waiting on
//! a channel), running (inside its poll), not yet polled, finished (keeps its output), or
//! held back after a yield (cancelled before the aborting task's own yield returns);
//! aborting from another thread and twice; the aborted future is dropped; a panic in the
//! drop of an aborted future, or of one that finished, becomes a panic `JoinError` (the
//! finished one's output is dropped); an output dropped with a panic whose payload panics
//! again as it drops leaves the worker alive; a future whose poll panics is dropped while
//! the panic unwinds (a lock it holds is poisoned). (Aborting a task that holds an armed timer is
//! `task_drop_in_place.rs`.)

mod support;

use std::future::{pending, Future};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;

use escapement::time::sleep;
use futures::FutureExt;

use support::{running, wait_finished, wait_until, DropCounter, PanicsWhenDropped};

#[test]
fn a_panicking_task_does_not_kill_its_worker() {
    for workers in [1, 3] {
        let rt = running(workers);
        // Fewer under Miri, which interprets every unwind.
        let (panics, after) = if cfg!(miri) { (4, 20) } else { (20, 100) };
        for round in 0..panics {
            let boom = rt.spawn(async move { panic!("boom {round}") });
            let error = rt.block_on(boom).expect_err("the task panicked");
            assert!(error.is_panic());
        }
        let tasks: Vec<_> = (0..after).map(|i| rt.spawn(async move { i * 2 })).collect();
        for (i, task) in tasks.into_iter().enumerate() {
            assert_eq!(rt.block_on(task).expect("runs after the panics"), i * 2);
        }
        // Timers still fire on worker 0 after it ran panicking tasks.
        rt.block_on(async {
            escapement::spawn(sleep(Duration::from_millis(2)))
                .await
                .expect("sleeps");
        });
    }
}

/// Panics in its poll; records whether a panic was unwinding when it was dropped.
struct PanicsInPoll(Arc<AtomicBool>);

impl Future for PanicsInPoll {
    type Output = ();

    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        panic!("in the poll");
    }
}

impl Drop for PanicsInPoll {
    fn drop(&mut self) {
        self.0.store(std::thread::panicking(), Ordering::SeqCst);
    }
}

/// A task whose poll panics is dropped while the panic unwinds, as tokio's is, on both
/// flavors: its destructors see `thread::panicking()`.
#[test]
fn a_future_whose_poll_panics_is_dropped_while_the_panic_unwinds() {
    let current = escapement::Builder::new_current_thread().build().unwrap();
    for (flavor, rt) in [running(2), current].into_iter().enumerate() {
        let unwinding = Arc::new(AtomicBool::new(false));
        let task = rt.spawn(PanicsInPoll(unwinding.clone()));
        let error = rt.block_on(task).expect_err("the task panicked");
        assert!(error.is_panic());
        assert!(unwinding.load(Ordering::SeqCst), "flavor {flavor}");
    }
}

/// Holds a lock in its state and writes a half-finished value through it before its poll
/// panics (a hand-written future: an `async` block drops its own locals as a panic leaves
/// its poll).
struct PanicsMidUpdate(MutexGuard<'static, i32>);

impl Future for PanicsMidUpdate {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        *self.0 = -1;
        panic!("in the middle of an update");
    }
}

/// So a lock held in the future's state is poisoned, and nobody reads the value it left
/// half-updated unawares (a local task, as a std guard is not `Send`).
#[test]
fn a_lock_held_by_a_task_whose_poll_panics_is_poisoned() {
    static LOCK: Mutex<i32> = Mutex::new(0);
    let rt = running(1);
    let local = escapement::task::LocalSet::new();
    let error = local
        .block_on(&rt, async {
            escapement::task::spawn_local(PanicsMidUpdate(LOCK.lock().unwrap())).await
        })
        .expect_err("the task panicked");
    assert!(error.is_panic());
    assert!(LOCK.is_poisoned());
}

#[test]
fn a_panic_after_a_sleep_is_reported() {
    let rt = running(2);
    let task = rt.spawn(async {
        sleep(Duration::from_millis(3)).await;
        panic!("late");
    });
    let error = rt.block_on(task).expect_err("the task panicked");
    assert!(error.is_panic());
    assert!(error.to_string().contains("late"));
}

#[test]
fn aborting_an_idle_task_cancels_it_and_drops_its_future() {
    for workers in [1, 3] {
        let rt = running(workers);
        let drops = Arc::new(AtomicUsize::new(0));
        let started = Arc::new(AtomicBool::new(false));
        let (_tx, rx) = futures::channel::oneshot::channel::<()>();
        let task = {
            let counter = DropCounter(drops.clone());
            let started = started.clone();
            rt.spawn(async move {
                let _counter = counter;
                started.store(true, Ordering::SeqCst);
                let _ = rx.await;
            })
        };
        wait_until("the task to start", || started.load(Ordering::SeqCst));
        task.abort();
        wait_finished(&task);
        assert_eq!(drops.load(Ordering::SeqCst), 1, "the future was dropped");
        let error = rt.block_on(task).expect_err("aborted");
        assert!(error.is_cancelled());
    }
}

/// A task that yields is held back by its worker, already queued, so the wake of an abort
/// cannot move it forward; instead, when the worker queues its held tasks again, those aborted
/// go first. So a task that aborts one held beside it and then yields finds it finished, as
/// on tokio (whose deferred tasks are not queued, so that the abort queues them), on both
/// flavors, whether it aborts the last or the first of those held (up to 32 others held with
/// it), one or two of them; the others keep their order, last held first.
#[test]
fn a_task_aborted_while_held_back_after_a_yield_is_cancelled_before_the_aborter_runs_again() {
    for current_thread in [true, false] {
        let rt = support::one_worker(current_thread);
        let cases: &[(usize, &[usize])] =
            &[(1, &[0]), (3, &[1]), (10, &[0, 7]), (31, &[0]), (32, &[31])];
        // Under Miri, which interprets every turn of every spinner, the short cases only.
        let cases = if cfg!(miri) { &cases[..3] } else { cases };
        for &(spinners, aborted) in cases {
            let order = Arc::new(Mutex::new(Vec::new()));
            let finished = rt
                .block_on(rt.spawn(async move {
                    let handles: Vec<_> = (0..spinners)
                        .map(|i| {
                            let order = order.clone();
                            escapement::spawn(async move {
                                loop {
                                    order.lock().unwrap().push(i);
                                    escapement::task::yield_now().await;
                                }
                            })
                        })
                        .collect();
                    // Each spinner runs once and is held back behind this task.
                    escapement::task::yield_now().await;
                    for &i in aborted {
                        handles[i].abort();
                    }
                    // The spinners' last turns, in the order they were held back.
                    let held: Vec<usize> = {
                        let mut order = order.lock().unwrap();
                        let held = order[order.len() - spinners..].to_vec();
                        order.clear();
                        held
                    };
                    escapement::task::yield_now().await;
                    let finished: Vec<bool> =
                        aborted.iter().map(|&i| handles[i].is_finished()).collect();
                    // This task was queued before the others it was held with: they have their
                    // turns while it yields once more.
                    escapement::task::yield_now().await;
                    let turns = std::mem::take(&mut *order.lock().unwrap());
                    for handle in &handles {
                        handle.abort();
                    }
                    (finished, held, turns)
                }))
                .expect("the aborting task finishes");
            let (finished, held, turns) = finished;
            assert!(
                finished.iter().all(|&done| done),
                "current_thread {current_thread}, {spinners} spinners, aborted {aborted:?}: \
                 finished {finished:?}"
            );
            assert!(
                !turns.iter().any(|i| aborted.contains(i)),
                "an aborted task ran again: {turns:?}"
            );
            if current_thread {
                // The others ran once each, last held first. (A multi-threaded worker also
                // queues what it holds every 61 turns, behind its queue, so the spinners may
                // have more turns there.)
                let expected: Vec<usize> = held
                    .into_iter()
                    .rev()
                    .filter(|i| !aborted.contains(i))
                    .collect();
                assert_eq!(
                    turns[..expected.len()],
                    expected,
                    "{spinners} spinners, aborted {aborted:?}"
                );
            }
        }
    }
}

/// Signals that it is inside its poll, then spins there until told the abort happened.
struct Running {
    polling: Arc<AtomicBool>,
    aborted: Arc<AtomicBool>,
    _counter: DropCounter,
}

impl Future for Running {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.polling.store(true, Ordering::SeqCst);
        while !self.aborted.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

#[test]
fn aborting_a_running_task_cancels_it_when_its_poll_returns() {
    for workers in [1, 2] {
        let rt = running(workers);
        let drops = Arc::new(AtomicUsize::new(0));
        let polling = Arc::new(AtomicBool::new(false));
        let aborted = Arc::new(AtomicBool::new(false));
        let task = rt.spawn(Running {
            polling: polling.clone(),
            aborted: aborted.clone(),
            _counter: DropCounter(drops.clone()),
        });
        wait_until("the poll to start", || polling.load(Ordering::SeqCst));
        task.abort();
        assert!(!task.is_finished(), "the poll is still running");
        assert_eq!(
            drops.load(Ordering::SeqCst),
            0,
            "not dropped under its poll"
        );
        aborted.store(true, Ordering::SeqCst);
        wait_finished(&task);
        assert_eq!(drops.load(Ordering::SeqCst), 1);
        assert!(rt.block_on(task).expect_err("aborted").is_cancelled());
    }
}

#[test]
fn aborting_a_task_before_its_first_poll_never_polls_it() {
    let rt = running(1);
    let polled = Arc::new(AtomicBool::new(false));
    let release = Arc::new(AtomicBool::new(false));
    // Keep the only worker busy so the second task cannot start before the abort.
    let blocker = {
        let release = release.clone();
        rt.spawn(async move {
            while !release.load(Ordering::SeqCst) {
                std::thread::yield_now();
            }
        })
    };
    let task = {
        let polled = polled.clone();
        rt.spawn(async move { polled.store(true, Ordering::SeqCst) })
    };
    task.abort();
    release.store(true, Ordering::SeqCst);
    assert!(rt.block_on(task).expect_err("aborted").is_cancelled());
    rt.block_on(blocker).expect("the blocker completes");
    assert!(
        !polled.load(Ordering::SeqCst),
        "an aborted task is never polled"
    );
}

#[test]
fn aborting_a_finished_task_keeps_its_output() {
    let rt = running(2);
    let task = rt.spawn(async { "kept" });
    wait_finished(&task);
    task.abort();
    task.abort();
    assert_eq!(
        rt.block_on(task).expect("finished before the abort"),
        "kept"
    );
}

#[test]
fn aborting_twice_and_from_another_thread() {
    let rt = running(2);
    let task = Arc::new(rt.spawn(pending::<()>()));
    let aborters: Vec<_> = (0..4)
        .map(|_| {
            let task = task.clone();
            std::thread::spawn(move || {
                task.abort();
                task.abort();
            })
        })
        .collect();
    for aborter in aborters {
        aborter.join().expect("the aborter ran");
    }
    let task = Arc::into_inner(task).expect("the only handle left");
    assert!(rt.block_on(task).expect_err("aborted").is_cancelled());
}

#[test]
fn aborting_many_waiting_tasks_cancels_them_all() {
    let rt = running(4);
    let drops = Arc::new(AtomicUsize::new(0));
    let (_tx, rx) = futures::channel::oneshot::channel::<()>();
    let rx = rx.shared();
    let tasks: Vec<_> = (0..1_000u64)
        .map(|i| {
            let counter = DropCounter(drops.clone());
            let rx = rx.clone();
            rt.spawn(async move {
                let _counter = counter;
                for _ in 0..i % 5 {
                    escapement::task::yield_now().await;
                }
                let _ = rx.await;
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(20));
    for task in &tasks {
        task.abort();
    }
    for task in tasks {
        assert!(rt.block_on(task).expect_err("aborted").is_cancelled());
    }
    assert_eq!(drops.load(Ordering::SeqCst), 1_000);
}

/// Panics when dropped.
struct PanicOnDrop;

impl Drop for PanicOnDrop {
    fn drop(&mut self) {
        panic!("dropped");
    }
}

#[test]
fn a_panic_while_dropping_an_aborted_future_is_a_panic_error() {
    let rt = running(1);
    let (started, polled) = std::sync::mpsc::channel();
    let task = rt.spawn(async move {
        let _bomb = PanicOnDrop;
        started.send(()).expect("the test waits");
        pending::<()>().await;
    });
    // Aborted before its first poll, the future would drop without the bomb in it.
    polled
        .recv_timeout(Duration::from_secs(10))
        .expect("the task is polled");
    task.abort();
    let error = rt.block_on(task).expect_err("aborted");
    assert!(error.is_panic(), "{error:?}");
    // The worker survived it.
    assert_eq!(rt.block_on(rt.spawn(async { 1 })).expect("runs"), 1);
}

/// Ready at its first poll with its output; panics when dropped afterwards.
struct ReadyThenPanicOnDrop(Option<DropCounter>);

impl Future for ReadyThenPanicOnDrop {
    type Output = DropCounter;

    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<DropCounter> {
        Poll::Ready(self.0.take().expect("polled once"))
    }
}

impl Drop for ReadyThenPanicOnDrop {
    fn drop(&mut self) {
        panic!("dropped after it finished");
    }
}

#[test]
fn a_panic_while_dropping_a_finished_future_is_a_panic_error() {
    let rt = running(1);
    let outputs = Arc::new(AtomicUsize::new(0));
    let task = rt.spawn(ReadyThenPanicOnDrop(Some(DropCounter(outputs.clone()))));
    let error = rt.block_on(task).expect_err("its destructor panicked");
    assert!(error.is_panic(), "{error:?}");
    assert_eq!(outputs.load(Ordering::SeqCst), 1, "the output was dropped");
    assert_eq!(rt.block_on(rt.spawn(async { 1 })).expect("runs"), 1);
}

/// An output whose drop panics with that payload.
#[derive(Debug)]
struct DropPanicsWithABadPayload;

impl Drop for DropPanicsWithABadPayload {
    fn drop(&mut self) {
        std::panic::panic_any(PanicsWhenDropped);
    }
}

#[test]
fn an_output_dropped_with_a_payload_that_panics_too_costs_the_worker_nothing() {
    let rt = running(1);
    let (release, released) = futures::channel::oneshot::channel::<()>();
    // No one will read the output: the task drops it as it completes.
    drop(rt.spawn(async move {
        released.await.expect("released");
        DropPanicsWithABadPayload
    }));
    release.send(()).expect("the task waits");
    // The one worker is still there to run the next task.
    let (ran, runs) = std::sync::mpsc::channel();
    drop(rt.spawn(async move { ran.send(()).expect("the test waits") }));
    runs.recv_timeout(Duration::from_secs(10))
        .expect("the worker survived the payload");
    // And a future whose destructor panics once finished, beside such an output.
    let task = rt.spawn(ReadyThenPanicWithABadPayload);
    let error = rt.block_on(task).expect_err("its destructor panicked");
    assert!(error.is_panic(), "{error:?}");
    assert_eq!(rt.block_on(rt.spawn(async { 1 })).expect("runs"), 1);
}

/// Ready at once with an output whose drop panics with a bad payload; panics when dropped.
struct ReadyThenPanicWithABadPayload;

impl Future for ReadyThenPanicWithABadPayload {
    type Output = DropPanicsWithABadPayload;

    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<DropPanicsWithABadPayload> {
        Poll::Ready(DropPanicsWithABadPayload)
    }
}

impl Drop for ReadyThenPanicWithABadPayload {
    fn drop(&mut self) {
        panic!("dropped after it finished");
    }
}
