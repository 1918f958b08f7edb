//! Spawning and the runtime context: `escapement::spawn`, `Runtime::spawn` and
//! `Handle::spawn` from `block_on`, tasks and other threads; tasks spawning tasks; many tasks
//! on 1 and 4 workers, and thousands live at once leaving the count of live tasks as they
//! complete; `Handle::current`, `Handle::try_current` and `Handle::enter` (nested
//! guards restore the previous runtime, guards dropped out of order panic, or restore nothing
//! when a panic drops them); the names of worker and blocking threads; builder chains written
//! for tokio (`new_multi_thread`, `enable_all`, `enable_io`, `enable_time`, `event_interval`,
//! `max_io_events_per_tick`, `max_io_events_per_busy_tick`, `shutdown_background`;
//! `new_current_thread`, `name` and `Handle::name`); `global_queue_interval`. (`yield_now`
//! and a yielding task's turns are in `yield_now.rs`.)

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use escapement::{task, Handle, Runtime};

use support::running;

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
