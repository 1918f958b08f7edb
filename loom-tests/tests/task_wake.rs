//! Model 8e: the task state machine. A task hands its waker to another thread, which wakes it
//! while the task may still be running on a worker. The wake is neither lost (the task is
//! polled again and completes) nor doubled (it is never polled on two threads at once, and
//! exactly twice in all). And two threads waking an idle task by reference at once: it is
//! queued once.
#![cfg(loom)]

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use escapement::loom_api::Tasks;
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::sync::{Arc, Mutex};
use loom::thread;

struct HandsOffItsWaker {
    slot: Arc<Mutex<Option<Waker>>>,
    polls: Arc<AtomicUsize>,
    polling: Arc<AtomicBool>,
}

impl Future for HandsOffItsWaker {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        assert!(
            !self.polling.swap(true, Ordering::SeqCst),
            "polled on two threads at once"
        );
        let polls = self.polls.fetch_add(1, Ordering::SeqCst) + 1;
        let result = if polls == 1 {
            *self.slot.lock().unwrap() = Some(cx.waker().clone());
            Poll::Pending
        } else {
            Poll::Ready(())
        };
        self.polling.store(false, Ordering::SeqCst);
        result
    }
}

/// Spawns a [`HandsOffItsWaker`]: its handle, the slot its first poll leaves its waker in,
/// and its count of polls.
fn spawn_handing_off(
    tasks: &Tasks,
) -> (
    escapement::JoinHandle<()>,
    Arc<Mutex<Option<Waker>>>,
    Arc<AtomicUsize>,
) {
    let slot = Arc::new(Mutex::new(None));
    let polls = Arc::new(AtomicUsize::new(0));
    let handle = tasks.spawn(HandsOffItsWaker {
        slot: slot.clone(),
        polls: polls.clone(),
        polling: Arc::new(AtomicBool::new(false)),
    });
    (handle, slot, polls)
}

/// A thread that runs what is queued until the queue is empty.
fn spawn_runner(tasks: &Tasks) -> thread::JoinHandle<()> {
    let tasks = tasks.clone();
    thread::spawn(move || while tasks.run_one() {})
}

/// Runs what is left, then checks that the task was polled exactly twice and finished.
fn finish(tasks: &Tasks, handle: escapement::JoinHandle<()>, polls: &AtomicUsize, why: &str) {
    while tasks.run_one() {}
    assert_eq!(polls.load(Ordering::SeqCst), 2, "{why}");
    assert!(handle.is_finished());
    drop(handle);
    tasks.shutdown();
}

#[test]
fn a_wake_from_another_thread_while_running_is_neither_lost_nor_doubled() {
    loom::model(|| {
        let tasks = Tasks::new();
        let (handle, slot, polls) = spawn_handing_off(&tasks);

        let waker_thread = thread::spawn(move || loop {
            if let Some(waker) = slot.lock().unwrap().take() {
                waker.wake();
                return;
            }
            loom::thread::yield_now();
        });
        let runner = spawn_runner(&tasks);
        runner.join().unwrap();
        waker_thread.join().unwrap();
        finish(&tasks, handle, &polls, "woken once, polled once more");
    });
}

/// Two threads wake an idle task by reference at once (two wakers of one task, say a timer
/// and a channel), while a runner runs what is queued. Only the first wake queues the task:
/// the second finds it `NOTIFIED` (or running, or complete) and does nothing, so the task is
/// queued once and polled exactly twice in all. (A second `Notified` in the queue would run a
/// task that is no longer notified: the state machine's `debug_assert!` says so.)
#[test]
fn two_wakes_by_ref_of_an_idle_task_queue_it_once() {
    loom::model(|| {
        let tasks = Tasks::new();
        let (handle, slot, polls) = spawn_handing_off(&tasks);
        assert!(tasks.run_one(), "the first poll");
        let waker = slot
            .lock()
            .unwrap()
            .take()
            .expect("the first poll left its waker");

        let wakers: Vec<_> = (0..2)
            .map(|_| {
                let waker = waker.clone();
                thread::spawn(move || waker.wake_by_ref())
            })
            .collect();
        drop(waker);
        let runner = spawn_runner(&tasks);
        for waker in wakers {
            waker.join().unwrap();
        }
        runner.join().unwrap();
        finish(&tasks, handle, &polls, "queued once, polled once more");
    });
}
