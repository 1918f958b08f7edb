//! `task::yield_now` and a yielding task's turns: it lets other tasks run, a task spawned from
//! outside and a current-thread runtime's `block_on` future before its next turn, and every
//! task queued from outside meanwhile on a multi-threaded runtime (even when its polls are long
//! enough to bring the tuned interval down); it still gets turns beside tasks that keep the
//! queue full, every `event_interval` turns; and an idle worker takes it while its own blocks
//! in a poll. (Spawning and the runtime context are in `spawn.rs`.)

mod support;

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use escapement::task;
use futures::task::noop_waker_ref;

use support::{one_worker, running};

/// A task that yields in a loop, counting its turns, until `stop`.
async fn yielding_hog(turns: Arc<AtomicUsize>, stop: Arc<AtomicBool>) {
    while !stop.load(Ordering::SeqCst) {
        turns.fetch_add(1, Ordering::SeqCst);
        task::yield_now().await;
    }
}

#[test]
fn a_yielding_task_lets_the_block_on_future_of_a_current_thread_runtime_go_first() {
    let rt = escapement::Builder::new_current_thread().build().unwrap();
    rt.block_on(async {
        let (turns, stop) = (
            Arc::new(AtomicUsize::new(0)),
            Arc::new(AtomicBool::new(false)),
        );
        let hog = escapement::spawn(yielding_hog(turns.clone(), stop.clone()));
        task::yield_now().await;
        for _ in 0..10 {
            let before = turns.load(Ordering::SeqCst);
            task::yield_now().await;
            let taken = turns.load(Ordering::SeqCst) - before;
            assert!(
                taken <= 1,
                "the task took {taken} turns during one yield of the future"
            );
        }
        stop.store(true, Ordering::SeqCst);
        hog.await.unwrap();
    });
}

#[test]
fn a_yielding_task_lets_a_task_spawned_from_outside_go_first() {
    let rt = running(1);
    let (turns, stop) = (
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicBool::new(false)),
    );
    drop(rt.spawn(yielding_hog(turns.clone(), stop.clone())));
    support::wait_until("the task runs", || turns.load(Ordering::SeqCst) > 0);
    for _ in 0..10 {
        let (ran, runs) = std::sync::mpsc::channel();
        let seen = turns.clone();
        // From outside the workers: through the injection queue.
        drop(rt.spawn(async move { ran.send(seen.load(Ordering::SeqCst)).unwrap() }));
        let spawned = turns.load(Ordering::SeqCst);
        let at_run = runs
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("the spawned task runs");
        let taken = at_run.saturating_sub(spawned);
        assert!(
            taken <= 3,
            "the yielding task took {taken} turns before the spawned one ran"
        );
    }
    stop.store(true, Ordering::SeqCst);
}

/// On a multi-threaded runtime a task that yields is held back until its worker has run
/// everything else that is ready, as on tokio: the tasks queued from outside while it held the
/// only worker all run before its next turn, not one between each two of its turns.
#[test]
fn a_yielding_task_runs_again_only_after_the_tasks_queued_from_outside() {
    const OUTSIDE: usize = 10;
    let rt = running(1);
    let (turns, stop) = (
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicBool::new(false)),
    );
    let (open, gate) = std::sync::mpsc::channel::<()>();
    let hog = {
        let (turns, stop) = (turns.clone(), stop.clone());
        rt.spawn(async move {
            // Its first turn holds the worker until the test has queued the others.
            gate.recv().unwrap();
            yielding_hog(turns, stop).await;
        })
    };
    let (ran, runs) = std::sync::mpsc::channel();
    for _ in 0..OUTSIDE {
        let (ran, turns) = (ran.clone(), turns.clone());
        drop(rt.spawn(async move { ran.send(turns.load(Ordering::SeqCst)).unwrap() }));
    }
    open.send(()).unwrap();
    let seen: Vec<usize> = (0..OUTSIDE)
        .map(|_| {
            runs.recv_timeout(std::time::Duration::from_secs(10))
                .expect("the task from outside runs")
        })
        .collect();
    stop.store(true, Ordering::SeqCst);
    rt.block_on(hog).unwrap();
    let (first, last) = (seen.iter().min().unwrap(), seen.iter().max().unwrap());
    // One turn between them at most: the worker's periodic look at what it holds back may
    // come in the middle.
    assert!(
        last - first <= 1,
        "the yielding task took turns {first} to {last} among the tasks from outside"
    );
}

/// A task whose polls are long (a millisecond here) brings its worker's tuned
/// `global_queue_interval` down to two turns; it is still held back after each yield until the
/// tasks spawned from outside during its poll have all run, as tokio defers it: the worker
/// queues its held tasks again every 61 turns, not at each turn that looks at the injector
/// first. (Queued at those, it ran every other turn, and the tasks from outside waited out
/// several of its polls: the lateness benchmark's `long` scenario.)
#[test]
fn a_task_that_yields_from_long_polls_runs_again_only_after_the_tasks_from_outside() {
    const OUTSIDE: usize = 10;
    let rt = running(1);
    let (turns, stop, spawning) = (
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let hog = {
        let (turns, stop, spawning) = (turns.clone(), stop.clone(), spawning.clone());
        rt.spawn(async move {
            while !stop.load(Ordering::SeqCst) {
                turns.fetch_add(1, Ordering::SeqCst);
                std::thread::sleep(std::time::Duration::from_millis(1));
                // A burst is spawned whole while the poll lasts, however slow the test's
                // thread: the poll that saw its first task does not end before its last.
                while spawning.load(Ordering::SeqCst) {
                    std::thread::yield_now();
                }
                task::yield_now().await;
            }
        })
    };
    // Long enough for the worker to time its turns and tune its interval down.
    support::wait_until("the hog's first 200 turns", || {
        turns.load(Ordering::SeqCst) >= 200
    });
    for burst in 0..5 {
        let (ran, runs) = std::sync::mpsc::channel();
        spawning.store(true, Ordering::SeqCst);
        for _ in 0..OUTSIDE {
            let (ran, turns) = (ran.clone(), turns.clone());
            drop(rt.spawn(async move { ran.send(turns.load(Ordering::SeqCst)).unwrap() }));
        }
        spawning.store(false, Ordering::SeqCst);
        let seen: Vec<usize> = (0..OUTSIDE)
            .map(|_| {
                runs.recv_timeout(std::time::Duration::from_secs(10))
                    .expect("the task from outside runs")
            })
            .collect();
        let (first, last) = (seen.iter().min().unwrap(), seen.iter().max().unwrap());
        // One turn between them at most: the worker's periodic release of what it holds back
        // may come in the middle.
        assert!(
            last - first <= 1,
            "burst {burst}: the yielding task took turns {first} to {last} among the tasks \
             from outside"
        );
    }
    stop.store(true, Ordering::SeqCst);
    rt.block_on(hog).unwrap();
}

/// A task held back after its yield is taken by an idle worker while its own worker blocks in
/// a long poll: here that poll waits for the held task, which would otherwise never run.
#[test]
fn a_task_held_back_after_a_yield_is_taken_by_an_idle_worker_while_its_own_blocks() {
    let rt = running(2);
    rt.block_on(async {
        escapement::spawn(async {
            for _ in 0..10 {
                let (tx, rx) = std::sync::mpsc::channel::<()>();
                // Queued on this worker: once this task yields, it runs here and blocks the
                // worker until the send below.
                let blocking = escapement::spawn(async move {
                    rx.recv_timeout(std::time::Duration::from_secs(10))
                });
                task::yield_now().await;
                tx.send(()).unwrap();
                assert_eq!(
                    blocking.await.unwrap(),
                    Ok(()),
                    "the held task waited for the blocked poll"
                );
            }
        })
        .await
        .unwrap();
    });
}

/// Tasks that keep waking each other keep the worker's queue from ever emptying; a task held
/// back after a yield still gets its turns, as the worker queues it again every 61 turns.
#[test]
fn a_yielding_task_gets_turns_beside_tasks_that_keep_waking_each_other() {
    let rt = running(1);
    let stop = Arc::new(AtomicBool::new(false));
    let busy = support::keep_waking_each_other(&rt, stop.clone(), Arc::default());
    let (done, finished) = std::sync::mpsc::channel();
    drop(rt.spawn(async move {
        for _ in 0..10 {
            task::yield_now().await;
        }
        done.send(()).unwrap();
    }));
    let yielded = finished.recv_timeout(std::time::Duration::from_secs(20));
    stop.store(true, Ordering::SeqCst);
    assert!(yielded.is_ok(), "the yielding task never finished");
    for task in busy {
        rt.block_on(task).unwrap();
    }
}

/// `event_interval` sets how often a worker queues the tasks it held back after a yield again
/// while two tasks keep its queue from emptying, as tokio's sets how often its workers wake
/// their deferred tasks: the yielding task runs once every `interval` turns, its own among
/// them.
#[test]
fn event_interval_sets_how_often_a_yielding_task_runs_beside_busy_tasks() {
    for interval in [7, 61] {
        let mut builder = escapement::Builder::new();
        builder.worker_threads(1);
        if interval != 61 {
            builder.event_interval(interval);
        }
        let rt = builder.build().expect("a runtime");
        let (polls, stop) = (
            Arc::new(AtomicUsize::new(0)),
            Arc::new(AtomicBool::new(false)),
        );
        let busy = support::keep_waking_each_other(&rt, stop.clone(), polls.clone());
        let seen = {
            let polls = polls.clone();
            support::join_within(
                &rt,
                rt.spawn(async move {
                    let mut seen = Vec::new();
                    for _ in 0..20 {
                        seen.push(polls.load(Ordering::SeqCst));
                        task::yield_now().await;
                    }
                    seen
                }),
            )
        };
        stop.store(true, Ordering::SeqCst);
        for task in busy {
            support::join_within(&rt, task);
        }
        // The first gaps depend on where the countdown stood when the task started; after
        // them, how long the released task waits depends on where the busy tasks stand in
        // the queue then, so a gap can be a turn or two off, but not the mean.
        let gaps: Vec<usize> = seen.windows(2).skip(2).map(|w| w[1] - w[0]).collect();
        let expected = interval as usize - 1;
        let (total, most) = (gaps.iter().sum::<usize>(), *gaps.iter().max().unwrap());
        assert!(
            total.abs_diff(expected * gaps.len()) <= expected && most <= expected + 3,
            "event_interval {interval}: the busy tasks ran {gaps:?} times between two turns of \
             the yielding task, not {expected} on average"
        );
    }
}

/// Tasks from the injector that each yield do not keep a task of the local queue waiting:
/// each is held back after its yield, and the local queue goes next.
#[test]
fn tasks_from_outside_that_yield_leave_the_local_queue_its_turns() {
    const OUTSIDE: usize = 2_000;
    for current_thread in [true, false] {
        let rt = one_worker(current_thread);
        let handle = rt.handle().clone();
        let polled = Arc::new(AtomicUsize::new(0));
        let seen = rt.block_on(async move {
            escapement::spawn(async move {
                let flood = {
                    let polled = polled.clone();
                    std::thread::spawn(move || {
                        for _ in 0..OUTSIDE {
                            let polled = polled.clone();
                            drop(handle.spawn(async move {
                                polled.fetch_add(1, Ordering::SeqCst);
                                task::yield_now().await;
                            }));
                        }
                    })
                };
                flood.join().unwrap();
                // Spawned on the worker: its local queue.
                let local = escapement::spawn(async move { polled.load(Ordering::SeqCst) });
                task::yield_now().await;
                local.await.unwrap()
            })
            .await
            .unwrap()
        });
        assert!(
            seen <= 5,
            "{seen} tasks from outside went before the local one"
        );
    }
}

#[test]
fn yield_now_is_pending_once_then_ready() {
    let rt = running(1);
    rt.block_on(async {
        let mut cx = Context::from_waker(noop_waker_ref());
        let mut yielding = pin!(task::yield_now());
        assert_eq!(yielding.as_mut().poll(&mut cx), Poll::Pending);
        assert_eq!(yielding.as_mut().poll(&mut cx), Poll::Ready(()));
    });
}

#[test]
fn yield_now_lets_other_tasks_run_on_a_single_worker() {
    let rt = running(1);
    let flag = Arc::new(AtomicBool::new(false));
    let spins = rt.block_on(async {
        let waiting = {
            let flag = flag.clone();
            escapement::spawn(async move {
                let mut spins = 0u64;
                while !flag.load(Ordering::SeqCst) {
                    spins += 1;
                    task::yield_now().await;
                }
                spins
            })
        };
        let setter = {
            let flag = flag.clone();
            escapement::spawn(async move {
                task::yield_now().await;
                flag.store(true, Ordering::SeqCst);
            })
        };
        setter.await.expect("the setter runs");
        waiting.await.expect("the waiter sees the flag")
    });
    assert!(spins >= 1);
}
