//! A `LocalSet`'s turns: a yielding local task lets the set's caller run, and runs again
//! after the other tasks and the caller; tasks that yield in one turn run again last first; a
//! set runs 61 tasks between two turns of its caller; a spawn in the set's turn polls its
//! caller no more than its wakes do, and still runs when the future of `run_until` that
//! spawned it completes at once; a local task aborted while held back after a yield is
//! cancelled before its aborter runs again, and one woken by a task of the runtime runs before
//! those that yielded. (The rest of the set is in `local_set.rs` and `local_set_drop.rs`.)

mod support;

use std::cell::{Cell, RefCell};
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use escapement::task::{self, LocalSet};
use escapement::time::sleep;

use support::{one_worker, within};

/// A bound that only catches a hang (a lost wake-up) in the tests that wait on other threads.
const HANG: Duration = Duration::from_secs(30);

/// A local task that yields lets the set's caller run before it runs again, as on tokio: a
/// task spinning on `yield_now` until `run_until`'s future sets a flag spins a few turns,
/// not a whole batch of the set's tasks per turn.
#[test]
fn a_yielding_local_task_lets_the_sets_caller_run() {
    for current_thread in [true, false] {
        let rt = one_worker(current_thread);
        let local = LocalSet::new();
        let (flag, spins) = (Rc::new(Cell::new(false)), Rc::new(Cell::new(0)));
        let (seen, counted) = (flag.clone(), spins.clone());
        local.spawn_local(async move {
            while !seen.get() {
                counted.set(counted.get() + 1);
                task::yield_now().await;
            }
        });
        local.block_on(&rt, async {
            task::yield_now().await;
            task::yield_now().await;
            flag.set(true);
        });
        assert!(
            spins.get() <= 4,
            "current-thread: {current_thread}, {} spins",
            spins.get()
        );
    }
}

/// A local task aborted while it is held back after a yield goes before the others held
/// with it when the set queues them again: a local task that aborts another that yields in
/// a loop, and then yields, finds it finished, as on tokio, on both flavors.
#[test]
fn a_local_task_aborted_while_held_back_after_a_yield_is_cancelled_first() {
    for current_thread in [true, false] {
        let rt = one_worker(current_thread);
        let local = LocalSet::new();
        let finished = local.block_on(
            &rt,
            local.spawn_local(async {
                let spinners: Vec<_> = (0..3)
                    .map(|_| {
                        task::spawn_local(async {
                            loop {
                                task::yield_now().await;
                            }
                        })
                    })
                    .collect();
                task::yield_now().await;
                spinners[1].abort();
                task::yield_now().await;
                let finished = spinners[1].is_finished();
                for spinner in &spinners {
                    spinner.abort();
                }
                finished
            }),
        );
        assert!(
            finished.expect("the aborting task finishes"),
            "current-thread: {current_thread}"
        );
    }
}

/// On a current-thread runtime, a local task that yielded runs again only at the set's next
/// turn, behind a local task that a task of the runtime woke meanwhile, as tokio's deferred
/// wakes come after it: the task of the runtime (S) wakes W between the set's two turns, and
/// W runs before the yielder's second poll (Y1). M and M2 are polls of `run_until`'s future.
#[test]
fn a_local_task_woken_by_a_runtime_task_runs_before_those_that_yielded() {
    let rt = one_worker(true);
    let local = LocalSet::new();
    let log = Arc::new(Mutex::new(Vec::new()));
    let record = log.clone();
    local.block_on(&rt, async move {
        let (tx, rx) = futures::channel::oneshot::channel::<()>();
        let woken = task::spawn_local({
            let log = record.clone();
            async move {
                rx.await.unwrap();
                log.lock().unwrap().push("W".to_string());
            }
        });
        let yielder = task::spawn_local({
            let log = record.clone();
            async move {
                for turn in 0..3 {
                    log.lock().unwrap().push(format!("Y{turn}"));
                    task::yield_now().await;
                }
            }
        });
        let waker = escapement::spawn({
            let log = record.clone();
            async move {
                log.lock().unwrap().push("S".to_string());
                tx.send(()).unwrap();
            }
        });
        record.lock().unwrap().push("M".to_string());
        waker.await.unwrap();
        record.lock().unwrap().push("M2".to_string());
        woken.await.unwrap();
        yielder.await.unwrap();
    });
    assert_eq!(
        *log.lock().unwrap(),
        ["M", "Y0", "S", "M2", "W", "Y1", "Y2"],
        "the order of tokio's current-thread runtime"
    );
}

/// After a local task yields, the other tasks still run in that turn, one spawned during it
/// (D, by B) included, then the set's caller does, then the yielder: the order of tokio's
/// current-thread runtime, on both flavors (M is a poll of `run_until`'s future).
#[test]
fn a_yielding_task_runs_again_after_the_others_and_the_sets_caller() {
    for current_thread in [true, false] {
        let rt = one_worker(current_thread);
        let local = LocalSet::new();
        let log = Rc::new(RefCell::new(Vec::new()));
        let yielder = log.clone();
        local.spawn_local(async move {
            yielder.borrow_mut().push("A1");
            task::yield_now().await;
            yielder.borrow_mut().push("A2");
        });
        let spawner = log.clone();
        local.spawn_local(async move {
            spawner.borrow_mut().push("B");
            let log = spawner.clone();
            task::spawn_local(async move { log.borrow_mut().push("D") });
        });
        let last = log.clone();
        local.spawn_local(async move { last.borrow_mut().push("C") });
        local.block_on(
            &rt,
            poll_fn(|cx| {
                log.borrow_mut().push("M");
                if log.borrow().contains(&"A2") {
                    Poll::Ready(())
                } else {
                    cx.waker().wake_by_ref();
                    Poll::Pending
                }
            }),
        );
        assert_eq!(
            *log.borrow(),
            ["M", "A1", "B", "C", "D", "M", "A2", "M"],
            "current-thread: {current_thread}"
        );
    }
}

/// Counts the polls of the future it wraps.
struct Polls<F> {
    polls: Rc<Cell<usize>>,
    future: Pin<Box<F>>,
}

impl<F: Future> Future for Polls<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        self.polls.set(self.polls.get() + 1);
        self.future.as_mut().poll(cx)
    }
}

/// A task spawned on the thread driving the set, in the set's turn, wakes no one: the turn
/// runs it (or, its share spent, wakes its caller again to). So the future `run_until`
/// drives is polled only when it is woken (twice: at the start, and when its sleep fires),
/// and so is the task that awaited the set, as on tokio; a wake of the set's caller there
/// polled each once more for nothing.
#[test]
fn a_spawn_in_the_sets_turn_polls_its_caller_no_more_than_its_wakes() {
    let rt = escapement::Builder::new_current_thread()
        .start_paused(true)
        .build()
        .unwrap();
    let local = LocalSet::new();
    let driven = Rc::new(Cell::new(0));
    let ran = Rc::new(Cell::new(false));
    let spawned = ran.clone();
    rt.block_on(local.run_until(Polls {
        polls: driven.clone(),
        future: Box::pin(async move {
            task::spawn_local(async move { spawned.set(true) });
            sleep(Duration::from_millis(2)).await;
        }),
    }));
    assert!(ran.get(), "the local task ran");
    assert_eq!(driven.get(), 2, "polls of the future run_until drives");

    let awaiting = Rc::new(Cell::new(0));
    rt.block_on(Polls {
        polls: awaiting.clone(),
        future: Box::pin(async {
            let local = LocalSet::new();
            local.spawn_local(async {
                task::spawn_local(async {});
            });
            local.await;
            sleep(Duration::from_millis(3)).await;
        }),
    });
    // The first poll runs the set to its end and registers the sleep; its firing, the second.
    assert_eq!(awaiting.get(), 2, "polls of the task that awaited the set");
}

/// Two drivers of one set in one `join!`: the second's future spawns a task, which wakes no
/// one in the set's turn, and completes, so that turn never looks at the queue; it must wake
/// the set's driver as it ends, or the first, waiting for the task, waits for ever.
#[test]
fn a_task_spawned_by_a_run_until_future_that_then_completes_still_runs() {
    within(HANG, || {
        let rt = escapement::Builder::new_current_thread().build().unwrap();
        let local = LocalSet::new();
        let (sent, received) = futures::channel::oneshot::channel();
        let waiter = local.run_until(async { received.await.unwrap() });
        let spawner = local.run_until(async move {
            task::spawn_local(async move { sent.send(7).unwrap() });
        });
        let (seven, ()) = rt.block_on(async { escapement::join!(waiter, spawner) });
        assert_eq!(seven, 7);
    });
}

/// Tasks that yield in the same turn run again last one first, as tokio wakes the tasks it
/// deferred.
#[test]
fn tasks_that_yield_in_one_turn_run_again_last_first() {
    let rt = escapement::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    let local = LocalSet::new();
    let log = Rc::new(RefCell::new(Vec::new()));
    for name in ["A", "B"] {
        let log = log.clone();
        local.spawn_local(async move {
            log.borrow_mut().push(format!("{name}1"));
            task::yield_now().await;
            log.borrow_mut().push(format!("{name}2"));
        });
    }
    let last = log.clone();
    local.spawn_local(async move { last.borrow_mut().push("C".to_string()) });
    local.block_on(&rt, async {
        while log.borrow().len() < 5 {
            task::yield_now().await;
        }
    });
    assert_eq!(*log.borrow(), ["A1", "B1", "C", "B2", "A2"]);
}

/// A set runs at most 61 of its tasks before its caller's next turn, as tokio's does.
#[test]
fn a_set_runs_61_tasks_between_two_turns_of_its_caller() {
    let rt = escapement::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    let local = LocalSet::new();
    let ran = Rc::new(Cell::new(0));
    let seen = local.block_on(&rt, async {
        for _ in 0..100 {
            let ran = ran.clone();
            task::spawn_local(async move { ran.set(ran.get() + 1) });
        }
        let mut seen = Vec::new();
        for _ in 0..2 {
            task::yield_now().await;
            seen.push(ran.get());
        }
        seen
    });
    assert_eq!(seen, [61, 100]);
}
