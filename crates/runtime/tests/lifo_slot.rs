//! A worker's LIFO slot: the first task that the task a worker polls wakes or spawns runs
//! next, ahead of the queue; no more than three such tasks in a row, so two tasks that wake
//! each other cannot keep the queue waiting; a task that wakes itself goes behind the queue
//! instead; another worker takes the task from the slot of a worker blocked in a long poll;
//! a current-thread runtime keeps FIFO order.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use escapement::{Builder, Runtime};

mod support;

use support::join_within;

/// A future that is pending until it has been woken (through the waker it registered).
#[derive(Default)]
struct Gate {
    open: AtomicBool,
    waker: Mutex<Option<Waker>>,
}

impl Gate {
    fn open(&self) {
        self.open.store(true, Ordering::SeqCst);
        if let Some(waker) = self.waker.lock().unwrap().take() {
            waker.wake();
        }
    }

    fn wait(self: Arc<Self>) -> impl Future<Output = ()> {
        std::future::poll_fn(move |cx| {
            *self.waker.lock().unwrap() = Some(cx.waker().clone());
            if self.open.load(Ordering::SeqCst) {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
    }
}

/// On one worker, a task queued behind two others and woken by the first of them runs
/// before the second: the order the tasks record is returned.
fn order_of_a_wake(rt: &Runtime) -> Vec<&'static str> {
    let order = Arc::new(Mutex::new(Vec::new()));
    let gate = Arc::new(Gate::default());
    let task = rt.spawn({
        let (order, gate) = (order.clone(), gate.clone());
        async move {
            let woken = escapement::spawn({
                let (order, gate) = (order.clone(), gate.clone());
                async move {
                    gate.wait().await;
                    order.lock().unwrap().push("woken");
                }
            });
            // Lets the woken task register with the gate, then queues two tasks, the first
            // of which opens it.
            escapement::task::yield_now().await;
            let opener = escapement::spawn({
                let (order, gate) = (order.clone(), gate.clone());
                async move {
                    order.lock().unwrap().push("opener");
                    gate.open();
                }
            });
            let second = escapement::spawn({
                let order = order.clone();
                async move { order.lock().unwrap().push("second") }
            });
            opener.await.unwrap();
            second.await.unwrap();
            woken.await.unwrap();
        }
    });
    join_within(rt, task);
    let order = order.lock().unwrap().clone();
    order
}

#[test]
fn a_task_woken_by_the_running_task_runs_next() {
    let rt = Builder::new().worker_threads(1).build().unwrap();
    assert_eq!(order_of_a_wake(&rt), ["opener", "woken", "second"]);
}

#[test]
fn a_current_thread_runtime_runs_a_woken_task_in_queue_order() {
    let rt = Builder::new_current_thread().build().unwrap();
    assert_eq!(order_of_a_wake(&rt), ["opener", "second", "woken"]);
}

/// A future that wakes `other` and waits to be woken, for as long as `stop` is clear.
struct PingPong {
    me: Arc<Mutex<Option<Waker>>>,
    other: Arc<Mutex<Option<Waker>>>,
    stop: Arc<AtomicBool>,
    polls: usize,
}

impl Future for PingPong {
    type Output = usize;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<usize> {
        self.polls += 1;
        if self.stop.load(Ordering::SeqCst) {
            if let Some(other) = self.other.lock().unwrap().take() {
                other.wake();
            }
            return Poll::Ready(self.polls);
        }
        *self.me.lock().unwrap() = Some(cx.waker().clone());
        if let Some(other) = self.other.lock().unwrap().take() {
            other.wake();
        }
        Poll::Pending
    }
}

#[test]
fn two_tasks_that_wake_each_other_do_not_keep_the_queue_waiting() {
    let rt = Builder::new().worker_threads(1).build().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let task = rt.spawn({
        let stop = stop.clone();
        async move {
            let (a, b) = (Arc::default(), Arc::default());
            let ping = escapement::spawn(PingPong {
                me: Arc::clone(&a),
                other: Arc::clone(&b),
                stop: stop.clone(),
                polls: 0,
            });
            let pong = escapement::spawn(PingPong {
                me: b,
                other: a,
                stop: stop.clone(),
                polls: 0,
            });
            // Queued behind the two, which then wake each other through the slot: the
            // worker must come back to its queue for this one to stop them.
            let stopper = escapement::spawn(async move { stop.store(true, Ordering::SeqCst) });
            stopper.await.unwrap();
            (ping.await.unwrap(), pong.await.unwrap())
        }
    });
    let (ping, pong) = join_within(&rt, task);
    // Each polled a handful of times, not for as long as the bound above.
    assert!(ping < 20 && pong < 20, "polled {ping} and {pong} times");
}

/// A future that records `name` at every poll and wakes itself `polls` times before it
/// completes, with no `yield_now`: as tokio does, the wake queues it behind the others.
fn waking_itself(
    name: &'static str,
    polls: usize,
    order: Arc<Mutex<Vec<&'static str>>>,
) -> impl Future<Output = ()> {
    let mut left = polls;
    std::future::poll_fn(move |cx| {
        order.lock().unwrap().push(name);
        left -= 1;
        if left == 0 {
            return Poll::Ready(());
        }
        cx.waker().wake_by_ref();
        Poll::Pending
    })
}

#[test]
fn a_task_that_wakes_itself_goes_behind_the_queue_not_into_the_slot() {
    let rt = Builder::new().worker_threads(1).build().unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let task = rt.spawn({
        let order = order.clone();
        async move {
            // The first into the slot, the second into the queue: each poll of either
            // must let the other run before it runs again.
            let a = escapement::spawn(waking_itself("a", 4, order.clone()));
            let b = escapement::spawn(waking_itself("b", 4, order));
            a.await.unwrap();
            b.await.unwrap();
        }
    });
    join_within(&rt, task);
    assert_eq!(
        *order.lock().unwrap(),
        ["a", "b", "a", "b", "a", "b", "a", "b"]
    );
}

#[test]
fn a_task_in_the_slot_of_a_blocked_worker_is_taken_by_another() {
    let rt = Builder::new().worker_threads(2).build().unwrap();
    // Fewer under Miri, which interprets every round's two threads.
    let rounds = if cfg!(miri) { 3 } else { 100 };
    for _ in 0..rounds {
        let task = rt.spawn(async {
            let (ran, done) = mpsc::channel();
            // Into this worker's slot, which it does not come back to while it blocks below.
            let child = escapement::spawn(async move { ran.send(()).unwrap() });
            let waited = done.recv_timeout(Duration::from_secs(20));
            assert!(
                waited.is_ok(),
                "the spawned task stayed in the blocked worker's slot"
            );
            child.await.unwrap();
        });
        join_within(&rt, task);
    }
}
