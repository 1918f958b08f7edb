//! Model 8g: `block_in_place` hands a runtime's only worker to a new thread of the blocking
//! pool (it has none idle) while a task polls, with another task in the worker's queue. The
//! closure returns at once, so its return races the new thread for the worker: the new thread
//! takes it and runs the queued task (it moved with the queue, and no other thread takes from
//! it), or the old thread takes it back and runs that task itself, and the new thread finds
//! nothing to run. Either way exactly one thread runs the worker, the calling task, woken by
//! the queued one's completion while the old thread may still be in its poll, is neither lost
//! nor run twice, and the shutdown waits for both threads without waiting forever: the live
//! count took the new thread on before it started and gives one back when the old thread
//! leaves its loop or takes the worker back. (A hand-off to an idle thread of the pool is
//! model 14's.)
//!
//! Three threads running the whole runtime make a large model: with two preemptions it
//! explores 35,886 interleavings, with three many times as many, which the mutants'
//! runs would take four times over, so it is bounded at two whatever `LOOM_MAX_PREEMPTIONS`
//! says.
//!
//! Three more, bounded the same way: on a paused clock, the hand-off forced through, after
//! which the old thread counts itself idle as it leaves the worker's loop, or the clock never
//! jumps; the hand-off forced through while the worker holds back a task that yielded, which
//! must travel with it; and the runtime dropped while a closure returns, whose worker, taken
//! back, the shutdown waits for before it stops the timers.
#![cfg(loom)]

use escapement::Runtime;
use loom::sync::atomic::{AtomicBool, Ordering};
use loom::sync::{mpsc, Arc};

/// Checks `model`, given a runtime with one worker (its clock paused if `paused`), at
/// `preemptions` whatever `LOOM_MAX_PREEMPTIONS` says (see the module notes).
fn check_one_worker(preemptions: usize, paused: bool, model: fn(Runtime)) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(preemptions);
    builder.check(move || {
        let runtime = escapement::Builder::new()
            .worker_threads(1)
            .start_paused(paused)
            .build()
            .unwrap();
        model(runtime);
    });
}

#[test]
fn a_queued_task_runs_once_whichever_thread_has_the_worker_and_shutdown_waits_for_both() {
    check_one_worker(2, false, |runtime| {
        let answer = runtime.block_on(async {
            escapement::spawn(async {
                let queued = escapement::spawn(async { 6 });
                let seven = escapement::task::block_in_place(|| 7);
                queued.await.unwrap() * seven
            })
            .await
        });
        assert_eq!(answer.unwrap(), 42);
        drop(runtime);
    });
}

/// The same hand-off on a paused clock, forced through: the closure waits for the queued
/// task, which only the new thread can run, so the old thread never takes the worker back.
/// The old thread was counted active since the hand-off, and leaves the loop once its poll
/// returns; it must count itself idle as it leaves, or the clock never jumps to the sleep
/// the rest of its poll registered, and worker 0, on the new thread, parks without a timeout
/// (loom reports a deadlock).
#[test]
fn a_thread_that_handed_its_worker_off_counts_itself_idle_as_it_leaves() {
    check_one_worker(1, true, |runtime| {
        runtime.block_on(async {
            escapement::spawn(async {
                let (ran, wait) = mpsc::channel();
                let queued = escapement::spawn(async move { ran.send(()).unwrap() });
                escapement::task::block_in_place(|| wait.recv().unwrap());
                escapement::time::sleep(std::time::Duration::from_millis(1)).await;
                queued.await.unwrap();
            })
            .await
            .unwrap();
        });
        drop(runtime);
    });
}

/// The hand-off forced through while the worker holds back a task that yielded, out of its
/// queue: the closure waits for that task's next poll, which only the new thread can run. The
/// held task must travel in the queue, or it stays behind on the old thread, blocked in the
/// closure, and the new thread parks with nothing to run (loom reports the deadlock).
#[test]
fn a_task_held_back_after_a_yield_travels_with_the_worker() {
    check_one_worker(1, false, |runtime| {
        runtime.block_on(async {
            escapement::spawn(async {
                let (ran, wait) = mpsc::channel();
                // Queued ahead of the task below: it yields, and is held back, before the
                // hand-off.
                drop(escapement::spawn(async move {
                    escapement::task::yield_now().await;
                    ran.send(()).unwrap();
                }));
                escapement::spawn(async move {
                    escapement::task::block_in_place(|| wait.recv().unwrap());
                })
                .await
                .unwrap();
            })
            .await
            .unwrap();
        });
        drop(runtime);
    });
}

/// The runtime dropped on the model's thread while a task is in the closure, which returns at
/// once, racing the new thread for the worker. A thread that takes its worker back is a
/// running worker again before it says it left the closure: until it leaves its loop, the
/// shutdown waits for it before it shuts the timers down, as for any worker in a poll, so the
/// rest of the poll still finds them running.
#[test]
fn a_worker_taken_back_during_a_shutdown_is_waited_for_before_the_timers_stop() {
    check_one_worker(2, false, |runtime| {
        let (entered, in_closure) = mpsc::channel();
        // Set by the task, whose panic the runtime would catch.
        let stopped_under_it = Arc::new(AtomicBool::new(false));
        let seen = stopped_under_it.clone();
        drop(runtime.spawn(async move {
            escapement::task::block_in_place(|| entered.send(()).unwrap());
            // Taken back: this thread runs the worker again, in its poll.
            if escapement::runtime::worker_index().is_some()
                && escapement::loom_api::current_runtime_timers_shut_down()
            {
                seen.store(true, Ordering::SeqCst);
            }
        }));
        in_closure.recv().unwrap();
        drop(runtime);
        assert!(
            !stopped_under_it.load(Ordering::SeqCst),
            "the shutdown stopped the timers under a worker taken back, in its poll"
        );
    });
}
