//! Spawning and the runtime context: `escapement::spawn`, `Runtime::spawn` and
//! `Handle::spawn` from `block_on`, tasks and other threads; tasks spawning tasks; many tasks
//! on 1 and 4 workers, and thousands live at once leaving the count of live tasks as they
//! complete; `Handle::current`, `Handle::try_current` and `Handle::enter` (nested
//! guards restore the previous runtime, guards dropped out of order panic, or restore nothing
//! when a panic drops them); `task::yield_now` letting other tasks run, a task spawned from
//! outside and a current-thread runtime's `block_on` future before the yielding task's next
//! turn, every task queued from outside meanwhile on a multi-threaded runtime (even when the
//! yielding task's polls are long enough to bring the tuned interval down), the yielding
//! task still getting turns beside tasks that keep the queue full, every `event_interval`
//! turns, and taken by an idle worker while its own blocks in a poll; the names of worker
//! and blocking threads; builder chains written for tokio (`new_multi_thread`,
//! `enable_all`, `enable_io`, `enable_time`, `event_interval`, `max_io_events_per_tick`,
//! `max_io_events_per_busy_tick`, `shutdown_background`;
//! `new_current_thread`, `name` and `Handle::name`); `global_queue_interval`.

mod support;

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use escapement::{task, Handle, Runtime};
use futures::task::noop_waker_ref;

use support::{one_worker, running};

#[test]
fn spawn_from_block_on_runs_the_task() {
    for workers in [1, 4] {
        let rt = running(workers);
        let answer = rt.block_on(async { escapement::spawn(async { 6 * 7 }).await });
        assert_eq!(answer.expect("the task completes"), 42);
    }
}

#[test]
fn runtime_and_handle_spawn_from_outside() {
    let rt = running(2);
    let from_runtime = rt.spawn(async { "runtime" });
    let handle = rt.handle().clone();
    let from_thread = std::thread::spawn(move || handle.spawn(async { "thread" }))
        .join()
        .expect("the thread spawned");
    assert_eq!(rt.block_on(from_runtime).expect("completes"), "runtime");
    assert_eq!(rt.block_on(from_thread).expect("completes"), "thread");
}

#[test]
fn tasks_spawn_tasks() {
    let rt = running(3);
    let total = rt.block_on(async {
        let outer: Vec<_> = (0..10u64)
            .map(|i| {
                escapement::spawn(async move {
                    let inner: Vec<_> = (0..10u64)
                        .map(|j| escapement::spawn(async move { i * 10 + j }))
                        .collect();
                    let mut sum = 0;
                    for task in inner {
                        sum += task.await.expect("inner task");
                    }
                    sum
                })
            })
            .collect();
        let mut sum = 0;
        for task in outer {
            sum += task.await.expect("outer task");
        }
        sum
    });
    assert_eq!(total, (0..100).sum::<u64>());
}

#[test]
fn many_tasks_all_run_once() {
    for workers in [1, 4] {
        let rt = running(workers);
        let runs = Arc::new(AtomicUsize::new(0));
        rt.block_on(async {
            let tasks: Vec<_> = (0..10_000)
                .map(|_| {
                    let runs = runs.clone();
                    escapement::spawn(async move {
                        runs.fetch_add(1, Ordering::SeqCst);
                    })
                })
                .collect();
            for task in tasks {
                task.await.expect("the task completes");
            }
        });
        assert_eq!(runs.load(Ordering::SeqCst), 10_000);
    }
}

/// Counts its drops.
struct Guard(Arc<AtomicUsize>);

impl Drop for Guard {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// With thousands of tasks live, a task that completes leaves the owned list in a batch with
/// others, later. It still leaves the count of live tasks at once, and its future is dropped
/// when it completes, not when its batch leaves.
///
/// One worker's list has four shards, here of 1,250 waiting tasks each, enough for every
/// completion to be batched (from 1,024 tasks a shard), and 1,000 quick ones each: not a
/// whole number of batches, so some completed tasks are still waiting for theirs.
#[test]
fn thousands_of_live_tasks_leave_the_alive_count_as_they_complete() {
    const GATED: usize = 5_000;
    const QUICK: usize = 4_000;
    let rt = running(1);
    let dropped = Arc::new(AtomicUsize::new(0));
    let (gates, gated): (Vec<_>, Vec<_>) = (0..GATED)
        .map(|_| {
            let (open, gate) = futures::channel::oneshot::channel::<()>();
            let guard = Guard(dropped.clone());
            let task = rt.spawn(async move {
                let _guard = guard;
                gate.await.expect("the gate opens");
            });
            (open, task)
        })
        .unzip();
    let quick: Vec<_> = (0..QUICK)
        .map(|i| {
            let guard = Guard(dropped.clone());
            rt.spawn(async move {
                let _guard = guard;
                task::yield_now().await;
                i
            })
        })
        .collect();
    rt.block_on(async {
        for (i, task) in quick.into_iter().enumerate() {
            assert_eq!(task.await.expect("the task completes"), i);
        }
    });
    assert_eq!(dropped.load(Ordering::SeqCst), QUICK);
    support::wait_until("the completed tasks have left the count", || {
        rt.metrics().num_alive_tasks() == GATED
    });
    for open in gates {
        open.send(()).expect("the task waits");
    }
    rt.block_on(async {
        for task in gated {
            task.await.expect("the task completes");
        }
    });
    assert_eq!(dropped.load(Ordering::SeqCst), GATED + QUICK);
    support::wait_until("every task has left the count", || {
        rt.metrics().num_alive_tasks() == 0
    });
}

#[test]
fn detached_tasks_still_run() {
    let rt = running(2);
    let (tx, rx) = std::sync::mpsc::channel();
    for i in 0..100 {
        let tx = tx.clone();
        drop(rt.spawn(async move { tx.send(i).expect("the receiver lives") }));
    }
    drop(tx);
    let mut got: Vec<i32> = rx.iter().collect();
    got.sort_unstable();
    assert_eq!(got, (0..100).collect::<Vec<_>>());
}

#[test]
fn handle_current_is_the_runtime_of_block_on_and_of_its_tasks() {
    let rt = running(2);
    rt.block_on(async {
        let handle = Handle::current();
        let answer = handle
            .spawn(async { Handle::current().spawn(async { 5 }).await })
            .await;
        assert_eq!(answer.expect("outer").expect("inner"), 5);
    });
}

#[test]
fn try_current_fails_outside_and_succeeds_inside() {
    let error = Handle::try_current().expect_err("no runtime here");
    assert_eq!(
        error.to_string(),
        "this thread is not in an escapement runtime"
    );
    let as_error: &dyn std::error::Error = &error;
    assert!(as_error.source().is_none());
    let rt = running(1);
    rt.block_on(async {
        assert!(Handle::try_current().is_ok());
        let in_task = escapement::spawn(async { Handle::try_current().is_ok() }).await;
        assert!(in_task.expect("the task completes"));
    });
    assert!(
        Handle::try_current().is_err(),
        "block_on leaves the context"
    );
}

#[test]
fn enter_makes_a_runtime_current_until_the_guard_drops() {
    let rt = running(1);
    {
        let _guard = rt.handle().enter();
        let task = escapement::spawn(async { 9 });
        assert!(Handle::try_current().is_ok());
        assert_eq!(rt.block_on(task).expect("completes"), 9);
        assert!(
            Handle::try_current().is_ok(),
            "block_on restores the guard's runtime"
        );
    }
    assert!(Handle::try_current().is_err());
    let _guard = rt.enter();
    let sleep = escapement::time::sleep(std::time::Duration::from_millis(1));
    assert!(format!("{_guard:?}").contains("EnterGuard"));
    drop(sleep);
}

/// The name prefix of the worker threads of the runtime current on this thread.
fn current_runtime_name() -> String {
    let handle = Handle::current();
    let task = handle.spawn(async {
        let name = std::thread::current().name().map(str::to_owned);
        name.expect("worker threads are named")
    });
    let name = futures::executor::block_on(task).expect("the task completes");
    name.rsplit_once('-').expect("name-N").0.to_owned()
}

/// A runtime with one worker, whose threads take `name`.
fn named(name: &str) -> escapement::Runtime {
    escapement::Builder::new()
        .worker_threads(1)
        .thread_name(name)
        .build()
        .expect("a runtime")
}

#[test]
fn nested_enter_guards_restore_the_previous_runtime() {
    let outer = named("outer");
    let inner = named("inner");
    let _outer_guard = outer.enter();
    assert_eq!(current_runtime_name(), "outer");
    {
        let _inner_guard = inner.enter();
        assert_eq!(current_runtime_name(), "inner");
    }
    assert_eq!(current_runtime_name(), "outer", "the outer one is back");
}

#[test]
#[should_panic(expected = "EnterGuard values dropped out of order")]
fn enter_guards_dropped_out_of_order_panic() {
    let (first, second) = (running(1), running(1));
    let first_guard = first.enter();
    let _second_guard = second.enter();
    drop(first_guard);
}

/// Out of order while a panic unwinds (a guard kept in a value that the panic drops), a
/// guard restores nothing, as tokio's: the context it would bring back is stale, and the
/// guard made after it stays in force.
#[test]
fn an_enter_guard_dropped_out_of_order_by_a_panic_restores_nothing() {
    let (first, second, third) = (named("first"), named("second"), named("third"));
    let first_guard = first.enter();
    let stale = second.enter();
    let third_guard = third.enter();
    let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
        let _kept = stale;
        panic!("dropping the kept guard as it unwinds");
    }));
    assert!(unwound.is_err());
    assert_eq!(
        current_runtime_name(),
        "third",
        "the innermost guard still holds"
    );
    // The guards left are out of step now, as tokio's are after the same misuse.
    std::mem::forget(third_guard);
    std::mem::forget(first_guard);
}

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

#[test]
fn workers_carry_the_configured_thread_name() {
    let rt = escapement::Builder::new()
        .worker_threads(2)
        .thread_name("probe")
        .build()
        .expect("a runtime");
    let name = rt
        .block_on(rt.spawn(async { std::thread::current().name().map(str::to_owned) }))
        .expect("the task completes")
        .expect("worker threads are named");
    assert!(name == "probe-0" || name == "probe-1", "{name}");
    let blocking = rt
        .block_on(rt.spawn_blocking(|| std::thread::current().name().map(str::to_owned)))
        .expect("the closure returns");
    assert_eq!(blocking.as_deref(), Some("probe-blocking"));
    assert!(format!("{:?}", escapement::Builder::new()).contains("Builder"));
}

#[test]
fn the_default_runtime_runs_tasks() {
    let rt = Runtime::new().expect("a runtime");
    assert_eq!(rt.block_on(rt.spawn(async { 3 })).expect("completes"), 3);
    assert!(format!("{rt:?}").contains("Runtime"));
}

#[test]
fn a_builder_chain_written_for_tokio_builds_a_runtime() {
    let rt = escapement::Builder::new_multi_thread()
        .enable_all()
        .enable_io()
        .enable_time()
        .event_interval(31)
        .max_io_events_per_tick(1024)
        .max_io_events_per_busy_tick(128)
        .worker_threads(2)
        .build()
        .expect("a runtime");
    let value = rt.block_on(async {
        escapement::time::sleep(std::time::Duration::from_millis(1)).await;
        rt.spawn(async { 7 }).await.expect("the task completes")
    });
    assert_eq!(value, 7);
    rt.shutdown_background();
}

#[test]
fn a_current_thread_builder_gives_one_worker_and_names_the_runtime() {
    let rt = escapement::Builder::new_current_thread()
        .enable_all()
        .name("one")
        .build()
        .expect("a runtime");
    assert_eq!(rt.metrics().workers(), 1);
    assert_eq!(rt.handle().name(), Some("one"));
    assert!(format!("{:?}", rt.handle()).contains("\"one\""));
    assert_eq!(rt.block_on(rt.spawn(async { 5 })).expect("completes"), 5);
    // As tokio's, a current-thread builder keeps its one worker.
    let rt = escapement::Builder::new_current_thread()
        .worker_threads(4)
        .build()
        .expect("a runtime");
    assert_eq!(rt.metrics().workers(), 1);
}

/// The order in which a worker runs ten tasks it spawned itself and one spawned from another
/// thread just after them, with `global_queue_interval` set to `interval`.
fn order_with_global_queue_interval(interval: u32) -> Vec<usize> {
    let rt = escapement::Builder::new()
        .worker_threads(1)
        .global_queue_interval(interval)
        .build()
        .expect("a runtime");
    let order = Arc::new(std::sync::Mutex::new(Vec::new()));
    let handle = rt.handle().clone();
    let first = {
        let order = order.clone();
        rt.spawn(async move {
            // Onto the worker's own queue.
            let local: Vec<_> = (0..10)
                .map(|i| {
                    let order = order.clone();
                    escapement::spawn(async move { order.lock().unwrap().push(i) })
                })
                .collect();
            // Onto the shared queue, from outside the workers, while this task runs.
            let outside = std::thread::spawn({
                let order = order.clone();
                move || handle.spawn(async move { order.lock().unwrap().push(99) })
            })
            .join()
            .unwrap();
            (local, outside)
        })
    };
    rt.block_on(async {
        let (local, outside) = first.await.unwrap();
        for task in local {
            task.await.unwrap();
        }
        outside.await.unwrap();
    });
    let order = order.lock().unwrap().clone();
    order
}

#[test]
fn global_queue_interval_sets_how_often_a_worker_looks_outside_its_own_queue_first() {
    // The first task spawned is in the worker's LIFO slot and runs next whatever the
    // interval (as in tokio, whose slot holds the last one spawned instead). Then, looking
    // outside every turn, the worker runs the task from outside.
    assert_eq!(
        order_with_global_queue_interval(1),
        [0, 99, 1, 2, 3, 4, 5, 6, 7, 8, 9]
    );
    // Almost never: the worker's own ten run first.
    let late = order_with_global_queue_interval(u32::MAX);
    assert_eq!(late, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 99]);
}
