//! `task::JoinSet` and `task::AbortHandle`: outputs in the order tasks finish (also when they
//! finished before the first join), an empty set answering `None` at once, aborting through the
//! set or through a handle (in the order the tasks joined the set), dropping the set aborting
//! what is left, `detach_all` letting tasks run on, `shutdown`, `join_all` and the panic it
//! resumes or raises, `try_join_next` (which keeps the wake-up a pending `poll_join_next` asked
//! for), cancel safety of `join_next`, blocking tasks, spawning on a handle from outside,
//! building a set from an iterator and extending it, the joins that return each task's id
//! beside its output, and local tasks whose outputs are not `Send`.

mod support;

use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use escapement::task::{AbortHandle, JoinSet, LocalSet};
use escapement::time::{sleep, timeout, Duration};

use support::{paused, running, wait_until, DropCounter};

/// A task that sleeps `ms` milliseconds of the paused clock, then returns `value`.
async fn after(ms: u64, value: u64) -> u64 {
    sleep(Duration::from_millis(ms)).await;
    value
}

#[test]
fn outputs_come_back_in_the_order_the_tasks_finish() {
    paused(2).block_on(async {
        let mut set = JoinSet::new();
        for (ms, value) in [(30, 3), (10, 1), (20, 2), (40, 4)] {
            set.spawn(after(ms, value));
        }
        assert_eq!(set.len(), 4);
        let mut order = Vec::new();
        while let Some(result) = set.join_next().await {
            order.push(result.expect("no task fails"));
        }
        assert_eq!(order, [1, 2, 3, 4]);
        assert!(set.is_empty());
        assert!(set.join_next().await.is_none(), "an empty set stays empty");
    });
}

#[test]
fn tasks_that_finished_before_the_first_join_still_come_back_in_finishing_order() {
    paused(2).block_on(async {
        let mut set = JoinSet::new();
        for (ms, value) in [(30, 3), (10, 1), (20, 2)] {
            set.spawn(after(ms, value));
        }
        // All three finish before anything asks.
        sleep(Duration::from_millis(50)).await;
        let mut order = Vec::new();
        while let Some(result) = set.join_next().await {
            order.push(result.expect("no task fails"));
        }
        assert_eq!(order, [1, 2, 3]);
    });
}

#[test]
fn an_empty_set_answers_none_at_once() {
    running(1).block_on(async {
        let mut set = JoinSet::<()>::new();
        assert!(set.is_empty());
        assert!(set.join_next().await.is_none());
        assert!(set.try_join_next().is_none());
    });
}

#[test]
fn abort_all_cancels_the_running_tasks_and_keeps_the_finished_outputs() {
    paused(1).block_on(async {
        let mut set = JoinSet::new();
        set.spawn(async { 7 });
        set.spawn(after(3_600_000, 0));
        // The quick task finishes first.
        assert_eq!(set.join_next().await.unwrap().unwrap(), 7);
        set.spawn(async { 8 });
        escapement::task::yield_now().await;
        sleep(Duration::from_millis(1)).await;
        set.abort_all();
        let mut ok = Vec::new();
        let mut cancelled = 0;
        while let Some(result) = set.join_next().await {
            match result {
                Ok(value) => ok.push(value),
                Err(error) => {
                    assert!(error.is_cancelled(), "{error}");
                    cancelled += 1;
                }
            }
        }
        assert_eq!(
            ok,
            [8],
            "the task that finished before the abort keeps its output"
        );
        assert_eq!(cancelled, 1);
    });
}

/// Logs its name when dropped.
struct LogDrop(&'static str, Arc<Mutex<Vec<&'static str>>>);

impl Drop for LogDrop {
    fn drop(&mut self) {
        self.1.lock().unwrap().push(self.0);
    }
}

/// `abort_all`, `shutdown` and dropping the set cancel the tasks in the order they joined
/// it, as tokio's do, though a task that joined later holds the slot of one that left; on a
/// current-thread runtime their futures are then dropped in that order.
#[test]
fn the_tasks_are_cancelled_in_the_order_they_joined_the_set() {
    for how in ["abort_all", "shutdown", "drop"] {
        let rt = escapement::Builder::new_current_thread()
            .start_paused(true)
            .build()
            .unwrap();
        let dropped = rt.block_on(async {
            let log = Arc::new(Mutex::new(Vec::new()));
            let waiting = |name| {
                let guard = LogDrop(name, log.clone());
                async move {
                    let _guard = guard;
                    sleep(Duration::from_secs(5)).await;
                }
            };
            let mut set = JoinSet::new();
            set.spawn(async {});
            set.spawn(waiting("first"));
            set.spawn(waiting("second"));
            escapement::task::yield_now().await;
            set.join_next().await.unwrap().unwrap();
            // Into the slot the finished task left.
            set.spawn(waiting("third"));
            set.spawn(waiting("fourth"));
            escapement::task::yield_now().await;
            match how {
                "abort_all" => {
                    set.abort_all();
                    while set.join_next().await.is_some() {}
                }
                "shutdown" => set.shutdown().await,
                _ => {
                    drop(set);
                    for _ in 0..10 {
                        escapement::task::yield_now().await;
                    }
                }
            }
            let dropped = log.lock().unwrap().clone();
            dropped
        });
        assert_eq!(dropped, ["first", "second", "third", "fourth"], "{how}");
    }
}

#[test]
fn an_abort_handle_cancels_its_task_and_outlives_the_join() {
    paused(1).block_on(async {
        let mut set = JoinSet::new();
        let long: AbortHandle = set.spawn(after(3_600_000, 0));
        let short = set.spawn(after(1, 1));
        let long_id = long.id();
        long.abort();
        let mut outcomes = Vec::new();
        while let Some(result) = set.join_next().await {
            outcomes.push(result.map_err(|error| (error.is_cancelled(), error.id())));
        }
        outcomes.sort_by_key(|outcome| outcome.is_ok());
        assert_eq!(outcomes, [Err((true, long_id)), Ok(1)]);
        // Both tasks are gone from the set; their handles still answer.
        assert!(long.is_finished() && short.is_finished());
        short.abort();
        assert_ne!(short.id(), long_id);
    });
}

#[test]
fn join_handle_abort_handle_and_id() {
    paused(1).block_on(async {
        let task = escapement::spawn(after(3_600_000, 0));
        let abort = task.abort_handle();
        assert_eq!(abort.id(), task.id());
        assert!(!abort.is_finished());
        // The abort handle works from another thread, after the join handle is gone.
        let id = task.id();
        drop(task);
        std::thread::spawn(move || abort.abort()).join().unwrap();
        let again = escapement::spawn(async { 1 });
        assert_ne!(again.id(), id);
        assert_eq!(again.await.unwrap(), 1);
    });
}

#[test]
fn dropping_the_set_aborts_its_tasks() {
    let rt = running(2);
    let dropped = Arc::new(AtomicUsize::new(0));
    rt.block_on(async {
        let mut set = JoinSet::new();
        for _ in 0..10 {
            let guard = DropCounter(dropped.clone());
            set.spawn(async move {
                let _guard = guard;
                sleep(Duration::from_secs(3600)).await;
            });
        }
        drop(set);
    });
    wait_until("the aborted tasks to drop their futures", || {
        dropped.load(Ordering::SeqCst) == 10
    });
}

#[test]
fn detach_all_lets_the_tasks_run_on() {
    let rt = running(2);
    let finished = Arc::new(AtomicUsize::new(0));
    rt.block_on(async {
        let mut set = JoinSet::new();
        for _ in 0..10 {
            let finished = finished.clone();
            set.spawn(async move {
                sleep(Duration::from_millis(5)).await;
                finished.fetch_add(1, Ordering::SeqCst);
            });
        }
        set.detach_all();
        assert!(set.is_empty());
        drop(set);
    });
    wait_until("the detached tasks to finish", || {
        finished.load(Ordering::SeqCst) == 10
    });
}

#[test]
fn shutdown_aborts_and_waits_for_every_task() {
    paused(2).block_on(async {
        let dropped = Arc::new(AtomicUsize::new(0));
        let mut set = JoinSet::new();
        for _ in 0..5 {
            let guard = DropCounter(dropped.clone());
            set.spawn(async move {
                let _guard = guard;
                sleep(Duration::from_secs(3600)).await;
            });
        }
        set.shutdown().await;
        assert!(set.is_empty());
        assert_eq!(
            dropped.load(Ordering::SeqCst),
            5,
            "every future was dropped"
        );
    });
}

#[test]
fn join_all_returns_the_outputs_in_finishing_order() {
    paused(2).block_on(async {
        let set: JoinSet<u64> = [after(20, 2), after(10, 1), after(30, 3)]
            .into_iter()
            .collect();
        assert_eq!(set.join_all().await, [1, 2, 3]);
    });
}

#[test]
fn join_all_resumes_a_tasks_panic_and_aborts_the_rest() {
    let rt = paused(1);
    let dropped = Arc::new(AtomicUsize::new(0));
    let guard = DropCounter(dropped.clone());
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        rt.block_on(async move {
            let mut set = JoinSet::new();
            set.spawn(async move {
                let _guard = guard;
                sleep(Duration::from_secs(3600)).await;
            });
            set.spawn(async { panic!("a task of the set panicked") });
            set.join_all().await;
        })
    }));
    let payload = outcome.expect_err("join_all resumes the panic");
    assert_eq!(
        payload.downcast_ref::<&str>().copied(),
        Some("a task of the set panicked")
    );
    wait_until("the other task to be aborted", || {
        dropped.load(Ordering::SeqCst) == 1
    });
}

#[test]
fn try_join_next_returns_only_finished_tasks() {
    running(1).block_on(async {
        let mut set = JoinSet::new();
        let (release, gate) = futures::channel::oneshot::channel::<()>();
        set.spawn(async move {
            gate.await.unwrap();
            5
        });
        assert!(set.try_join_next().is_none(), "the task waits on the gate");
        release.send(()).unwrap();
        let value = loop {
            if let Some(result) = set.try_join_next() {
                break result.unwrap();
            }
            sleep(Duration::from_millis(1)).await;
        };
        assert_eq!(value, 5);
        assert!(set.is_empty());
    });
}

#[test]
fn join_next_is_cancel_safe() {
    paused(1).block_on(async {
        let mut set = JoinSet::new();
        set.spawn(after(50, 9));
        // Give up waiting before the task finishes: the task stays in the set.
        assert!(timeout(Duration::from_millis(10), set.join_next())
            .await
            .is_err());
        assert_eq!(set.len(), 1);
        assert_eq!(set.join_next().await.unwrap().unwrap(), 9);
    });
}

#[test]
fn blocking_tasks_and_tasks_on_a_handle_from_outside() {
    let rt = running(1);
    let mut set = JoinSet::new();
    set.spawn_on(async { 1 }, rt.handle());
    set.spawn_blocking_on(|| 2, rt.handle());
    let mut values = rt.block_on(async move {
        set.spawn_blocking(|| 3);
        set.join_all().await
    });
    values.sort_unstable();
    assert_eq!(values, [1, 2, 3]);
}

#[test]
fn try_join_next_keeps_the_wake_up_a_pending_poll_join_next_asked_for() {
    let rt = running(1);
    let (done, finished) = std::sync::mpsc::channel();
    let (waiting, pending) = std::sync::mpsc::channel();
    let (release, released) = std::sync::mpsc::channel::<()>();
    let joined = rt.spawn(async move {
        let mut set = JoinSet::new();
        set.spawn_blocking(move || {
            let _ = released.recv();
            7
        });
        // Pending, with this task's waker registered; then a look that must not replace it.
        let output = std::future::poll_fn(|cx| match set.poll_join_next(cx) {
            std::task::Poll::Pending => {
                assert!(set.try_join_next().is_none(), "nothing has finished yet");
                let _ = waiting.send(());
                std::task::Poll::Pending
            }
            ready => ready,
        })
        .await;
        done.send(output.map(Result::unwrap)).unwrap();
    });
    pending.recv().expect("the task waits for its set");
    release.send(()).unwrap();
    let output = finished.recv_timeout(std::time::Duration::from_secs(60));
    assert_eq!(
        output,
        Ok(Some(7)),
        "the task was woken when its set's task finished"
    );
    drop(joined);
}

#[test]
fn joins_with_ids_name_the_task_each_output_came_from() {
    paused(2).block_on(async {
        let mut set = JoinSet::new();
        let slow = set.spawn(after(20, 2)).id();
        let fast = set.spawn(after(10, 1)).id();
        let failing = set
            .spawn(async {
                sleep(Duration::from_millis(30)).await;
                panic!("on purpose")
            })
            .id();
        assert_eq!(set.join_next_with_id().await.unwrap().unwrap(), (fast, 1));
        assert_eq!(set.join_next_with_id().await.unwrap().unwrap(), (slow, 2));
        let error = set.join_next_with_id().await.unwrap().unwrap_err();
        assert!(error.is_panic());
        assert_eq!(error.id(), failing);
        assert!(set.join_next_with_id().await.is_none());
    });
}

#[test]
fn try_join_next_with_id_takes_only_what_has_finished() {
    paused(1).block_on(async {
        let mut set = JoinSet::new();
        let quick = set.spawn(async { 1 }).id();
        set.spawn(after(50, 2));
        // The body keeps polling, so the paused clock stays where it is and `after` sleeps.
        let first = loop {
            if let Some(joined) = set.try_join_next_with_id() {
                break joined;
            }
            escapement::task::yield_now().await;
        };
        assert_eq!(first.unwrap(), (quick, 1));
        assert!(
            set.try_join_next_with_id().is_none(),
            "the other still sleeps"
        );
        assert_eq!(set.len(), 1);
    });
}

#[test]
fn a_set_extends_with_more_futures() {
    paused(2).block_on(async {
        let mut set: JoinSet<u64> = [after(30, 3), after(10, 1)].into_iter().collect();
        set.extend([after(20, 2), after(40, 4)]);
        assert_eq!(set.len(), 4);
        assert_eq!(set.join_all().await, [1, 2, 3, 4]);
    });
}

#[test]
fn join_all_panics_with_the_error_of_a_cancelled_task() {
    let rt = paused(1);
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        rt.block_on(async {
            let mut set = JoinSet::new();
            let aborted = set.spawn(std::future::pending::<()>());
            let id = aborted.id();
            aborted.abort();
            (id, set.join_all().await)
        })
    }));
    let payload = outcome.expect_err("join_all panics");
    let message = payload
        .downcast_ref::<String>()
        .expect("a formatted message");
    let id = message
        .strip_prefix("task ")
        .and_then(|rest| rest.strip_suffix(" was cancelled"));
    assert!(id.is_some(), "the error's own words, as tokio's: {message}");
}

#[test]
fn local_tasks_join_a_set_with_outputs_that_are_not_send() {
    let rt = paused(1);
    let local = LocalSet::new();
    let dropped = Arc::new(AtomicUsize::new(0));
    let guard = DropCounter(dropped.clone());
    let mut set = JoinSet::new();
    // Spawned onto the set from outside it: they run once it is driven.
    for (ms, value) in [(20, 2), (10, 1)] {
        set.spawn_local_on(async move { Rc::new(after(ms, value).await) }, &local);
    }
    let finished = local.block_on(&rt, async move {
        // And from inside it.
        set.spawn_local(async { Rc::new(after(30, 3).await) });
        let pending = set.spawn_local(async move {
            let _guard = guard;
            Rc::new(after(1_000, 4).await)
        });
        let mut finished = Vec::new();
        while finished.len() < 3 {
            finished.push(*set.join_next().await.unwrap().unwrap());
        }
        // Dropping the set aborts the local task left in it.
        drop(set);
        for _ in 0..10 {
            if pending.is_finished() {
                break;
            }
            escapement::task::yield_now().await;
        }
        assert!(pending.is_finished(), "the set's drop aborted it");
        finished
    });
    assert_eq!(finished, [1, 2, 3]);
    assert_eq!(dropped.load(Ordering::SeqCst), 1, "its future was dropped");
}
