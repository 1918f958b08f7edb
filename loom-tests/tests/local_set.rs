//! Model 17: a `LocalSet`'s run queue, driven on the model's main thread, and the wakers of
//! its tasks fired on another thread. A wake that races the driver's look at the queue still
//! reaches it, whether the driver is `run_until` or a caller awaiting the set (otherwise
//! `block_on` waits forever: loom reports a deadlock); so does a task spawned in the set's
//! turn, which wakes no one, since the turn's look at the queue comes after it; a wake that
//! races the set's drop leaves the task's future dropped once, on the set's thread, and
//! frees everything (loom reports any `Arc` left alive at the end of an execution).
#![cfg(loom)]

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use escapement::task::LocalSet;
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::sync::{Arc, Mutex};
use loom::thread;

/// A gate another thread opens: `Pending` (with the waker kept) until it is open.
#[derive(Clone)]
struct Gate {
    open: Arc<AtomicBool>,
    waker: Arc<Mutex<Option<Waker>>>,
}

impl Gate {
    fn new() -> Gate {
        Gate {
            open: Arc::new(AtomicBool::new(false)),
            waker: Arc::new(Mutex::new(None)),
        }
    }

    /// Opens the gate and wakes whoever waits on it.
    fn open(&self) {
        self.open.store(true, Ordering::SeqCst);
        let waker = self.waker.lock().unwrap().take();
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

impl Future for Gate {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        *self.waker.lock().unwrap() = Some(cx.waker().clone());
        if self.open.load(Ordering::SeqCst) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

/// `Pending` once (waking itself), then ready: lets a set run its tasks once.
struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// Counts its drops, and checks they happen on the thread that made it.
struct DroppedOnce {
    drops: Arc<AtomicUsize>,
    made_on: thread::ThreadId,
}

impl Drop for DroppedOnce {
    fn drop(&mut self) {
        assert_eq!(
            thread::current().id(),
            self.made_on,
            "a local task's future was dropped off its set's thread"
        );
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn a_wake_from_another_thread_reaches_the_driver() {
    loom::model(|| {
        let set = LocalSet::new();
        let gate = Gate::new();
        let task = set.spawn_local(gate.clone());
        let opener = thread::spawn(move || gate.open());
        loom::future::block_on(set.run_until(task)).expect("the task completes");
        opener.join().unwrap();
    });
}

/// The future `run_until` drives spawns a task and awaits it, while another thread opens
/// the gate the task waits on: the spawn, on the driving thread in the set's turn, wakes no
/// one, so the turn must look at the queue after the future's poll.
#[test]
fn a_task_spawned_in_the_sets_turn_runs_while_a_wake_from_another_thread_races() {
    loom::model(|| {
        let set = LocalSet::new();
        let gate = Gate::new();
        let waiting = gate.clone();
        let opener = thread::spawn(move || gate.open());
        loom::future::block_on(
            set.run_until(async move { escapement::task::spawn_local(waiting).await }),
        )
        .expect("the task completes");
        opener.join().unwrap();
    });
}

#[test]
fn a_wake_racing_the_sets_drop_frees_the_task_once_on_its_thread() {
    loom::model(|| {
        let set = LocalSet::new();
        let gate = Gate::new();
        let drops = Arc::new(AtomicUsize::new(0));
        let guard = DroppedOnce {
            drops: drops.clone(),
            made_on: thread::current().id(),
        };
        let waiting = gate.clone();
        let task = set.spawn_local(async move {
            let _guard = guard;
            waiting.await;
            // Never reached: the set is dropped before it runs the task again.
            std::future::pending::<()>().await;
        });
        // One pass: the task runs and waits on the gate.
        loom::future::block_on(set.run_until(YieldOnce(false)));
        let opener = thread::spawn(move || gate.open());
        drop(set);
        assert_eq!(drops.load(Ordering::SeqCst), 1);
        opener.join().unwrap();
        assert!(loom::future::block_on(task)
            .expect_err("cancelled")
            .is_cancelled());
    });
}

#[test]
fn a_wake_from_another_thread_reaches_a_caller_awaiting_the_set() {
    loom::model(|| {
        let set = LocalSet::new();
        let gate = Gate::new();
        drop(set.spawn_local(gate.clone()));
        let opener = thread::spawn(move || gate.open());
        // Ready once every task of the set has completed.
        loom::future::block_on(set);
        opener.join().unwrap();
    });
}
