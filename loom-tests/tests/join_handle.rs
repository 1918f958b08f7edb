//! Model 7: a task's completion, `abort` (through its `JoinHandle` or an `AbortHandle`), and
//! its `JoinHandle`'s poll and drop race each other. The output is read or dropped exactly
//! once, the future is dropped exactly once, a joiner waiting on `Pending` is woken, and
//! nothing leaks (loom reports any `Arc` left alive at the end of an execution, and the task
//! holds one). An `abort` that finds the task idle queues it, with a reference of its own.
#![cfg(loom)]

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use escapement::loom_api::Tasks;
use escapement_loom_tests::counting_waker;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;

/// Counts its drops.
struct Tracked(Arc<AtomicUsize>);

impl Drop for Tracked {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A future that yields once (waking itself) and then returns a tracked output.
struct YieldThenReturn {
    yielded: bool,
    _future: Tracked,
    output: Option<Tracked>,
}

impl Future for YieldThenReturn {
    type Output = Tracked;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Tracked> {
        if !self.yielded {
            self.yielded = true;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        Poll::Ready(self.output.take().expect("polled after completion"))
    }
}

struct Counts {
    future: Arc<AtomicUsize>,
    output: Arc<AtomicUsize>,
}

fn spawn(tasks: &Tasks) -> (escapement::JoinHandle<Tracked>, Counts) {
    let counts = Counts {
        future: Arc::new(AtomicUsize::new(0)),
        output: Arc::new(AtomicUsize::new(0)),
    };
    let handle = tasks.spawn(YieldThenReturn {
        yielded: false,
        _future: Tracked(counts.future.clone()),
        output: Some(Tracked(counts.output.clone())),
    });
    (handle, counts)
}

fn run_all(tasks: &Tasks) {
    while tasks.run_one() {}
}

/// A new thread (the runner) that runs the tasks until none is left to run.
fn spawn_runner(tasks: &Tasks) -> thread::JoinHandle<()> {
    let tasks = tasks.clone();
    thread::spawn(move || run_all(&tasks))
}

/// After an abort raced the runner: joins the runner, runs what is left, checks the future
/// was dropped once and the output at most once, and shuts down.
fn finish_after_abort(tasks: &Tasks, runner: thread::JoinHandle<()>, counts: &Counts) {
    runner.join().unwrap();
    run_all(tasks);
    assert_eq!(counts.future.load(Ordering::SeqCst), 1);
    assert!(counts.output.load(Ordering::SeqCst) <= 1);
    tasks.shutdown();
}

fn poll_handle(
    handle: &mut escapement::JoinHandle<Tracked>,
    waker: &std::task::Waker,
) -> Poll<Result<Tracked, escapement::JoinError>> {
    Pin::new(handle).poll(&mut Context::from_waker(waker))
}

/// A task spawned and run by a runner thread, whose handle was polled once meanwhile with a
/// counting waker.
struct Polled {
    handle: escapement::JoinHandle<Tracked>,
    counts: Counts,
    runner: thread::JoinHandle<()>,
    waker: std::task::Waker,
    wakes: escapement_loom_tests::Wakes,
    first: Poll<Result<Tracked, escapement::JoinError>>,
}

fn spawn_run_and_poll(tasks: &Tasks) -> Polled {
    let (mut handle, counts) = spawn(tasks);
    let runner = spawn_runner(tasks);
    let (waker, wakes) = counting_waker();
    let first = poll_handle(&mut handle, &waker);
    Polled {
        handle,
        counts,
        runner,
        waker,
        wakes,
        first,
    }
}

#[test]
fn completion_racing_abort() {
    loom::model(|| {
        let tasks = Tasks::new();
        let (mut handle, counts) = spawn(&tasks);
        let runner = spawn_runner(&tasks);
        handle.abort();
        runner.join().unwrap();
        run_all(&tasks);

        let (waker, _) = counting_waker();
        match poll_handle(&mut handle, &waker) {
            Poll::Ready(Ok(output)) => drop(output),
            Poll::Ready(Err(error)) => assert!(error.is_cancelled()),
            Poll::Pending => panic!("the task finished, so the handle is ready"),
        }
        assert_eq!(
            counts.future.load(Ordering::SeqCst),
            1,
            "the future is dropped once"
        );
        assert!(counts.output.load(Ordering::SeqCst) <= 1);
        drop(handle);
        tasks.shutdown();
    });
}

#[test]
fn completion_racing_join_handle_drop() {
    loom::model(|| {
        let tasks = Tasks::new();
        let (handle, counts) = spawn(&tasks);
        let runner = spawn_runner(&tasks);
        drop(handle);
        runner.join().unwrap();
        assert_eq!(counts.future.load(Ordering::SeqCst), 1);
        assert_eq!(
            counts.output.load(Ordering::SeqCst),
            1,
            "the unread output is dropped once"
        );
        tasks.shutdown();
    });
}

#[test]
fn completion_racing_a_join_poll_wakes_the_joiner() {
    loom::model(|| {
        let tasks = Tasks::new();
        let polled = spawn_run_and_poll(&tasks);
        polled.runner.join().unwrap();
        if polled.first.is_pending() {
            assert_eq!(polled.wakes.count(), 1, "the joiner was not woken");
        }
        let (mut handle, counts) = (polled.handle, polled.counts);
        let output = match polled.first {
            Poll::Ready(result) => result,
            Poll::Pending => match poll_handle(&mut handle, &polled.waker) {
                Poll::Ready(result) => result,
                Poll::Pending => panic!("the task finished, so the handle is ready"),
            },
        };
        drop(output.expect("neither aborted nor panicked"));
        assert_eq!(counts.output.load(Ordering::SeqCst), 1);
        drop(handle);
        tasks.shutdown();
    });
}

/// The joiner polls, so its waker is in the task's slot, then drops the handle while the task
/// completes and wakes through that slot: whichever side empties the slot, the waker is
/// dropped once, never while the other side reads it, and the unread output is dropped once.
#[test]
fn completion_racing_the_drop_of_a_polled_join_handle() {
    loom::model(|| {
        let tasks = Tasks::new();
        let polled = spawn_run_and_poll(&tasks);
        drop(polled.handle);
        polled.runner.join().unwrap();
        drop(polled.waker);
        if let Poll::Ready(output) = polled.first {
            drop(output.expect("neither aborted nor panicked"));
        }
        assert_eq!(polled.wakes.held(), 0, "the join waker was kept");
        assert_eq!(polled.counts.future.load(Ordering::SeqCst), 1);
        assert_eq!(polled.counts.output.load(Ordering::SeqCst), 1);
        tasks.shutdown();
    });
}

/// The joiner polls with one waker and then, while the task completes, with another: taking
/// the slot back to swap wakers races the task side waking the first and clearing the slot.
/// The handle ends up ready, the output is read once, and a joiner left with `Pending` is
/// woken through the waker it gave last.
#[test]
fn completion_racing_a_join_poll_with_a_new_waker() {
    loom::model(|| {
        let tasks = Tasks::new();
        let (mut handle, counts) = spawn(&tasks);
        let runner = spawn_runner(&tasks);
        let (first_waker, _) = counting_waker();
        let (second_waker, second_wakes) = counting_waker();
        let mut result = match poll_handle(&mut handle, &first_waker) {
            Poll::Ready(result) => Some(result),
            Poll::Pending => match poll_handle(&mut handle, &second_waker) {
                Poll::Ready(result) => Some(result),
                Poll::Pending => None,
            },
        };
        runner.join().unwrap();
        if result.is_none() {
            assert_eq!(
                second_wakes.count(),
                1,
                "the joiner's new waker was not woken"
            );
            match poll_handle(&mut handle, &second_waker) {
                Poll::Ready(ready) => result = Some(ready),
                Poll::Pending => panic!("the task finished, so the handle is ready"),
            }
        }
        let output = result.expect("ready by now");
        drop(output.expect("neither aborted nor panicked"));
        assert_eq!(counts.output.load(Ordering::SeqCst), 1);
        drop(handle);
        tasks.shutdown();
    });
}

#[test]
fn abort_racing_join_handle_drop_racing_completion() {
    loom::model(|| {
        let tasks = Tasks::new();
        let (handle, counts) = spawn(&tasks);
        let runner = spawn_runner(&tasks);
        let aborter = thread::spawn(move || {
            handle.abort();
            drop(handle);
        });
        aborter.join().unwrap();
        finish_after_abort(&tasks, runner, &counts);
    });
}

/// An `AbortHandle` holds its own reference: aborting through it and dropping it on one
/// thread, while the `JoinHandle` is dropped on another and the task completes, frees the task
/// once, after its last user.
#[test]
fn abort_handle_racing_join_handle_drop_racing_completion() {
    loom::model(|| {
        let tasks = Tasks::new();
        let (handle, counts) = spawn(&tasks);
        let abort = handle.abort_handle();
        let runner = spawn_runner(&tasks);
        let aborter = thread::spawn(move || {
            abort.abort();
            let _ = abort.is_finished();
            drop(abort);
        });
        drop(handle);
        aborter.join().unwrap();
        finish_after_abort(&tasks, runner, &counts);
    });
}

/// A future that never completes and never wakes itself: after its first poll the task is
/// idle, neither running nor queued.
struct PendingForever {
    _future: Tracked,
}

impl Future for PendingForever {
    type Output = Tracked;

    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Tracked> {
        Poll::Pending
    }
}

/// `abort` races the runner's first poll of a task that then goes idle: the abort finds the
/// task queued, running, or idle. Idle, nobody else will run it, so the abort queues it
/// itself, with a reference of its own for the queued `Notified`; the task is cancelled,
/// its future dropped once, and freed once, after its last user.
#[test]
fn abort_racing_a_task_going_idle() {
    loom::model(|| {
        let tasks = Tasks::new();
        let future = Arc::new(AtomicUsize::new(0));
        let mut handle = tasks.spawn(PendingForever {
            _future: Tracked(future.clone()),
        });
        let runner = spawn_runner(&tasks);
        handle.abort();
        runner.join().unwrap();
        run_all(&tasks);
        assert_eq!(
            future.load(Ordering::SeqCst),
            1,
            "the future is dropped once"
        );
        let (waker, _) = counting_waker();
        match poll_handle(&mut handle, &waker) {
            Poll::Ready(Err(error)) => assert!(error.is_cancelled()),
            _ => panic!("the aborted task is ready, cancelled"),
        }
        drop(handle);
        // Under loom the owned list keeps a completed task until its batch of two leaves, or
        // shutdown takes it: its reference must still be there. (A list holding a freed task
        // would crash the model as it is dropped, so it is leaked first.)
        if tasks.cells() != 1 {
            std::mem::forget(tasks);
            panic!("the task was freed while the owned list held it");
        }
        assert_eq!(tasks.alive(), 0);
        tasks.shutdown();
    });
}

#[test]
fn shutdown_racing_completion() {
    loom::model(|| {
        let tasks = Tasks::new();
        let (handle, counts) = spawn(&tasks);
        let runner = spawn_runner(&tasks);
        tasks.shutdown();
        runner.join().unwrap();
        drop(handle);
        assert_eq!(
            counts.future.load(Ordering::SeqCst),
            1,
            "dropped once, by shutdown or completion"
        );
        assert!(counts.output.load(Ordering::SeqCst) <= 1);
    });
}

/// As `completion_racing_the_drop_of_a_polled_join_handle`, with a second poll of the handle,
/// with the same waker, before its drop: that poll reads the waker in the slot (`will_wake`)
/// while `JOIN_WAKER` gives the slot to the task side. The task side, which finds the handle
/// gone once it has woken the waker, then empties the slot: its `fetch_and` must acquire the
/// handle's release of its interest, or the two accesses to the slot race (mutant 94).
#[test]
fn completion_racing_the_drop_of_a_join_handle_polled_twice_with_one_waker() {
    loom::model(|| {
        let tasks = Tasks::new();
        let Polled {
            mut handle,
            counts,
            runner,
            waker,
            wakes,
            first,
        } = spawn_run_and_poll(&tasks);
        let second = if first.is_pending() {
            poll_handle(&mut handle, &waker)
        } else {
            Poll::Pending
        };
        drop(handle);
        runner.join().unwrap();
        drop(waker);
        for result in [first, second] {
            if let Poll::Ready(output) = result {
                drop(output.expect("neither aborted nor panicked"));
            }
        }
        assert_eq!(wakes.held(), 0, "the join waker was kept");
        assert_eq!(counts.future.load(Ordering::SeqCst), 1);
        assert_eq!(counts.output.load(Ordering::SeqCst), 1);
        tasks.shutdown();
    });
}
