//! `task::block_in_place`: on a worker it hands the worker (its queued tasks, those held back
//! after a yield, and for worker 0 the timers) to another thread while the closure blocks,
//! even on a runtime of one worker; the closure can borrow from the task and wait for a future
//! with `Handle::block_on`; the rest of the poll stays on the calling thread; a panic is the
//! task's; a paused clock holds still meanwhile. The worker goes to a blocking thread, an idle
//! one when there is one, and neither waits for nor takes the place of `spawn_blocking`
//! closures under `max_blocking_threads`. A closure that returns before that thread has taken
//! the worker takes it back, and leaves the runtime's counts as it found them. Anywhere else it
//! just calls the closure, which in `block_on` may block on a future again. Either way the
//! closure runs without the task's cooperative budget. Its shutdowns are in
//! `block_in_place_shutdown.rs`.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;

mod support;

use escapement::task::block_in_place;
use escapement::time::{sleep, Duration, Instant};
use escapement::Handle;

use support::{block_once_the_worker_moved, running, PATIENCE};

/// One worker, and a cap of one thread for `spawn_blocking` closures.
fn one_worker_one_blocking_thread() -> escapement::Runtime {
    escapement::Builder::new()
        .worker_threads(1)
        .max_blocking_threads(1)
        .build()
        .expect("a runtime")
}

#[test]
fn a_task_queued_on_the_worker_runs_while_the_closure_blocks() {
    let rt = running(1);
    let received = rt.block_on(async {
        escapement::spawn(async {
            let (tx, rx) = mpsc::channel();
            // Queued on this worker's own queue, the only one: it runs only if the worker
            // moved to another thread.
            let sender = escapement::spawn(async move { tx.send(7).unwrap() });
            let received = block_in_place(|| rx.recv_timeout(PATIENCE));
            sender.await.unwrap();
            received
        })
        .await
        .unwrap()
    });
    assert_eq!(received, Ok(7));
}

/// A task that yielded is held back on the worker's thread, in no queue; it must travel with
/// the worker, or nothing runs it while the closure blocks the thread that held it.
#[test]
fn a_task_held_back_after_a_yield_moves_with_the_worker() {
    let rt = running(1);
    let received = rt.block_on(async {
        escapement::spawn(async {
            let (tx, rx) = mpsc::channel();
            // Queued first on this worker's own queue: it runs and yields before the closure
            // starts, and its second poll sends. (Not awaited: a held task left behind would
            // never finish.)
            drop(escapement::spawn(async move {
                escapement::task::yield_now().await;
                tx.send(7).unwrap();
            }));
            escapement::spawn(async move { block_in_place(|| rx.recv_timeout(PATIENCE)) })
                .await
                .unwrap()
        })
        .await
        .unwrap()
    });
    assert_eq!(received, Ok(7));
}

/// The tasks held back travel in the worker's core, and the thread that takes it queues them
/// again every 61 turns, those held on the old thread included: here
/// tasks that keep waking each other keep the queue from ever emptying, and nothing else
/// yields, so no other release would come.
#[test]
fn a_task_held_back_at_the_hand_off_gets_its_turn_beside_a_full_queue() {
    let rt = running(1);
    let stop = Arc::new(AtomicBool::new(false));
    let busy = support::keep_waking_each_other(&rt, stop.clone(), Arc::default());
    let (ran, runs) = mpsc::channel();
    drop(rt.spawn(async move {
        // Queued behind this task, which is held back by then: its closure outlasts the
        // hand-off.
        drop(escapement::spawn(async {
            block_in_place(|| thread::sleep(std::time::Duration::from_millis(100)))
        }));
        escapement::task::yield_now().await;
        ran.send(()).unwrap();
    }));
    let ran = runs.recv_timeout(PATIENCE);
    stop.store(true, Ordering::SeqCst);
    for task in busy {
        rt.block_on(task).unwrap();
    }
    assert!(ran.is_ok(), "the held task never ran again");
}

#[test]
fn timers_fire_while_worker_0_blocks() {
    let rt = running(1);
    let received = rt.block_on(async {
        escapement::spawn(async {
            let (tx, rx) = mpsc::channel();
            let sleeper = escapement::spawn(async move {
                sleep(Duration::from_millis(5)).await;
                tx.send(Instant::now()).unwrap();
            });
            // Let the sleeper register its timer before the worker moves.
            escapement::task::yield_now().await;
            let received = block_in_place(|| rx.recv_timeout(PATIENCE));
            sleeper.await.unwrap();
            received
        })
        .await
        .unwrap()
    });
    assert!(received.is_ok(), "the timer never fired: {received:?}");
}

#[test]
fn the_closure_borrows_from_the_task_and_blocks_on_a_future() {
    let rt = escapement::Runtime::new().expect("a runtime");
    let (sum, words) = rt.block_on(async {
        escapement::spawn(async {
            let mut words = vec!["a".to_owned()];
            let sum = block_in_place(|| {
                words.push("b".to_owned());
                Handle::current().block_on(async {
                    sleep(Duration::from_millis(2)).await;
                    escapement::spawn(async { 40 }).await.unwrap() + 2
                })
            });
            (sum, words)
        })
        .await
        .unwrap()
    });
    assert_eq!(sum, 42);
    assert_eq!(words, ["a", "b"]);
}

#[test]
fn the_rest_of_the_poll_stays_on_the_thread_and_the_worker_moves_to_a_blocking_thread() {
    let rt = escapement::Builder::new()
        .worker_threads(1)
        .thread_name("bip")
        .build()
        .expect("a runtime");
    let (before, during, after, later, name) = rt.block_on(async {
        escapement::spawn(async {
            let before = thread::current().id();
            let during = block_once_the_worker_moved(|| thread::current().id());
            let after = thread::current().id();
            // The next poll runs on the worker's new thread.
            escapement::task::yield_now().await;
            let current = thread::current();
            (
                before,
                during,
                after,
                current.id(),
                current.name().map(str::to_owned),
            )
        })
        .await
        .unwrap()
    });
    assert_eq!(before, during);
    assert_eq!(before, after);
    assert_ne!(before, later, "the worker moved to another thread");
    assert_eq!(name.as_deref(), Some("bip-blocking"));
}

#[test]
fn hand_offs_in_turn_reuse_idle_blocking_threads() {
    let rt = running(1);
    let threads = rt.block_on(rt.spawn(async {
        let mut threads = vec![thread::current().id()];
        for _ in 0..20 {
            block_once_the_worker_moved(|| ());
            // The next poll runs on the thread the worker went to; meanwhile the thread it
            // left goes back to the pool, idle.
            sleep(Duration::from_millis(5)).await;
            threads.push(thread::current().id());
        }
        threads
    }));
    let mut distinct = threads.unwrap();
    distinct.sort_by_key(|id| format!("{id:?}"));
    distinct.dedup();
    // The first worker thread, then two blocking threads taking turns; a thread started for
    // each hand-off would make 21. A loaded machine may keep a thread from going idle in
    // time now and then.
    assert!(
        distinct.len() <= 11,
        "21 polls ran on {} threads",
        distinct.len()
    );
}

#[test]
fn the_worker_does_not_wait_behind_blocking_closures_at_the_cap() {
    let rt = one_worker_one_blocking_thread();
    let outcome = rt.block_on(rt.spawn(async {
        // The only blocking thread runs a closure that waits until the task releases it.
        let (started, started_rx) = mpsc::channel::<()>();
        let (release, released) = mpsc::channel::<()>();
        let busy = escapement::task::spawn_blocking(move || {
            started.send(()).unwrap();
            released.recv_timeout(PATIENCE).is_ok()
        });
        started_rx.recv_timeout(PATIENCE).unwrap();
        // Queued on the worker, to run while the closure below blocks this thread.
        let (ran, ran_rx) = mpsc::channel::<()>();
        let queued = escapement::spawn(async move {
            let _ = ran.send(());
        });
        let queued_ran = block_in_place(|| ran_rx.recv_timeout(PATIENCE).is_ok());
        let _ = release.send(());
        queued.await.unwrap();
        (queued_ran, busy.await.unwrap())
    }));
    let (queued_ran, busy_released) = outcome.unwrap();
    assert!(queued_ran, "the worker waited for the busy blocking thread");
    assert!(busy_released);
}

#[test]
fn a_worker_on_a_blocking_thread_leaves_the_cap_to_the_closures() {
    let rt = one_worker_one_blocking_thread();
    let answer = rt.block_on(rt.spawn(async {
        block_once_the_worker_moved(|| ());
        // Now on the blocking thread that holds the worker, until shutdown.
        escapement::task::yield_now().await;
        escapement::time::timeout(PATIENCE, escapement::task::spawn_blocking(|| 7)).await
    }));
    let answer = answer
        .unwrap()
        .expect("a spawn_blocking closure waited behind the worker");
    assert_eq!(answer.unwrap(), 7);
}

#[test]
fn a_short_closure_takes_the_worker_back() {
    // Whether the closure returns before the pool's thread has taken the worker is a race,
    // so each trial gets a fresh runtime: its worker starts on a thread of its own, which
    // exits once it has handed the worker away for good, and a thread id is never reused.
    // So the next poll runs on that same thread only if the worker was taken back.
    let trials = 200;
    let stayed = (0..trials)
        .filter(|_| {
            let rt = running(1);
            let stayed = rt.block_on(rt.spawn(async {
                let first = thread::current().id();
                block_in_place(|| ());
                escapement::task::yield_now().await;
                thread::current().id() == first
            }));
            stayed.unwrap()
        })
        .count();
    eprintln!("taken back in {stayed} of {trials}");
    assert!(
        stayed > 0,
        "the worker was never taken back in {trials} trials"
    );
}

#[test]
fn taking_the_worker_back_leaves_the_counts_as_they_were() {
    // On a paused clock a sleep completes only once every thread counted active is idle, and
    // the drop returns only once every thread counted live has left: a count the take-back
    // did not give back would hang one or the other.
    let (report, reported) = mpsc::channel();
    let checker = thread::spawn(move || {
        let rt = escapement::Builder::new()
            .worker_threads(1)
            .start_paused(true)
            .build()
            .expect("a runtime");
        let slept = rt.block_on(rt.spawn(async {
            for _ in 0..20 {
                block_in_place(|| ());
                escapement::task::yield_now().await;
            }
            let start = Instant::now();
            sleep(Duration::from_secs(3600)).await;
            start.elapsed()
        }));
        report.send(slept.unwrap()).unwrap();
        drop(rt);
        report.send(Duration::ZERO).unwrap();
    });
    let slept = reported
        .recv_timeout(PATIENCE)
        .expect("the paused clock moved on to the sleep");
    assert_eq!(slept, Duration::from_secs(3600));
    reported
        .recv_timeout(PATIENCE)
        .expect("the runtime's drop returned");
    checker.join().unwrap();
}

#[test]
fn a_panic_in_the_closure_is_the_tasks_and_the_runtime_goes_on() {
    let rt = running(1);
    let error = rt
        .block_on(rt.spawn(async {
            block_in_place(|| panic!("blocked boom"));
        }))
        .unwrap_err();
    assert!(error.is_panic());
    assert!(error.to_string().contains("blocked boom"));
    let after = rt.block_on(rt.spawn(async {
        sleep(Duration::from_millis(1)).await;
        "still here"
    }));
    assert_eq!(after.unwrap(), "still here");
}

#[test]
fn many_hand_offs_lose_no_task() {
    // Fewer under Miri, where each hand-off starts or wakes a blocking thread it interprets.
    let tasks = if cfg!(miri) { 8 } else { 64 };
    let rt = escapement::Builder::new()
        .worker_threads(2)
        .build()
        .expect("a runtime");
    let done = Arc::new(AtomicUsize::new(0));
    rt.block_on(async {
        let handles: Vec<_> = (0..tasks)
            .map(|i| {
                let done = done.clone();
                escapement::spawn(async move {
                    for _ in 0..4 {
                        let value = block_in_place(|| i * 2);
                        assert_eq!(value, i * 2);
                        escapement::task::yield_now().await;
                    }
                    sleep(Duration::from_millis(1)).await;
                    done.fetch_add(1, Ordering::Relaxed);
                })
            })
            .collect();
        for handle in handles {
            handle.await.unwrap();
        }
    });
    assert_eq!(done.load(Ordering::Relaxed), tasks);
    assert_eq!(rt.metrics().num_workers(), 2);
}

#[test]
fn a_paused_clock_holds_still_while_the_closure_runs() {
    let rt = escapement::Builder::new()
        .worker_threads(1)
        .start_paused(true)
        .build()
        .expect("a runtime");
    let (during, timer) = rt.block_on(async {
        escapement::spawn(async {
            let start = Instant::now();
            let timer = escapement::spawn(async move {
                sleep(Duration::from_secs(3600)).await;
                start.elapsed()
            });
            escapement::task::yield_now().await;
            // The worker's new thread has nothing to run but the timer; it must not jump to
            // it while this thread is busy.
            let during = block_in_place(|| {
                thread::sleep(std::time::Duration::from_millis(50));
                start.elapsed()
            });
            (during, timer.await.unwrap())
        })
        .await
        .unwrap()
    });
    assert_eq!(
        during,
        Duration::ZERO,
        "the clock moved while the closure ran"
    );
    assert_eq!(timer, Duration::from_secs(3600));
}

#[test]
fn off_the_workers_it_just_calls_the_closure() {
    let here = thread::current().id();
    assert_eq!(block_in_place(|| thread::current().id()), here);

    let rt = running(1);
    let in_block_on = rt.block_on(async { block_in_place(|| thread::current().id()) });
    assert_eq!(in_block_on, here);

    let (blocking, nested) = rt.block_on(async {
        let blocking = escapement::task::spawn_blocking(|| {
            let thread = thread::current().id();
            (thread, block_in_place(|| thread::current().id()))
        })
        .await
        .unwrap();
        let nested = escapement::spawn(async {
            block_in_place(|| {
                let outer = thread::current().id();
                (outer, block_in_place(|| thread::current().id()))
            })
        })
        .await
        .unwrap();
        (blocking, nested)
    });
    assert_eq!(blocking.0, blocking.1);
    assert_eq!(nested.0, nested.1);
}

#[test]
fn in_block_on_the_closure_may_block_on_a_future_again() {
    let rt = running(1);
    let (nested, refused) = rt.block_on(async {
        let nested = block_in_place(|| Handle::current().block_on(async { 7 }));
        // Outside the closure, `block_on` is refused again, and a refusal leaves the thread
        // inside the outer `block_on` for the next attempt.
        let refused = [(); 2]
            .map(|()| std::panic::catch_unwind(|| Handle::current().block_on(async {})).is_err());
        (nested, refused)
    });
    assert_eq!(nested, 7);
    assert_eq!(
        refused,
        [true, true],
        "a block_on nested in block_on panics"
    );
}

/// After one `block_in_place` handed the worker away, the rest of the poll runs on a thread
/// that is no worker any more: a second closure, and one nested in it, may block on a future
/// too, and once each returns the thread is as it was before it.
#[test]
fn a_second_closure_in_the_poll_that_handed_the_worker_away_may_block_on_a_future() {
    let rt = running(1);
    let (first, second, nested) = rt.block_on(async {
        escapement::spawn(async {
            let first = block_once_the_worker_moved(|| Handle::current().block_on(async { 1 }));
            let (second, nested) = block_in_place(|| {
                let nested = block_in_place(|| Handle::current().block_on(async { 3 }));
                // Still in the outer closure after the inner one returned.
                (Handle::current().block_on(async { 2 }), nested)
            });
            (first, second, nested)
        })
        .await
        .unwrap()
    });
    assert_eq!((first, second, nested), (1, 2, 3));
}

/// Another executor, driven inside the closure, polls more of the runtime's futures than a
/// task's cooperative budget allows in one poll: it must find no budget spent, or each poll
/// past the budget returns `Pending` and that executor polls again at once, forever.
#[test]
fn the_closure_runs_without_the_tasks_budget() {
    const TASKS: u64 = 300;
    let sums = support::within(PATIENCE, || {
        let rt = running(1);
        let sum_in_place = |handles: Vec<escapement::JoinHandle<u64>>| {
            block_in_place(move || {
                futures::executor::block_on(async move {
                    let mut sum = 0;
                    for handle in handles {
                        sum += handle.await.unwrap();
                    }
                    sum
                })
            })
        };
        let spawn_all = || -> Vec<_> {
            (0..TASKS)
                .map(|i| escapement::spawn(async move { i }))
                .collect()
        };
        let wait_finished = |handles: &[escapement::JoinHandle<u64>]| {
            support::wait_until("the tasks finished", || {
                handles.iter().all(|h| h.is_finished())
            })
        };
        let in_block_on = rt.block_on(async {
            let handles = spawn_all();
            wait_finished(&handles);
            sum_in_place(handles)
        });
        let in_a_task = rt
            .block_on(rt.spawn(async move {
                let handles = spawn_all();
                while !handles.iter().all(|h| h.is_finished()) {
                    escapement::task::yield_now().await;
                }
                sum_in_place(handles)
            }))
            .unwrap();
        (in_block_on, in_a_task)
    });
    let expected = TASKS * (TASKS - 1) / 2;
    assert_eq!(sums, (expected, expected));
}

/// The blocking threads run their closures with the timer slack of the thread that built the
/// runtime, not worker 0's 1 ns: neither a thread that ran worker 0 and went back to the pool,
/// nor one that worker 0 started, which starts with its slack (Linux; `prctl`).
#[cfg(all(target_os = "linux", not(miri)))]
#[test]
fn blocking_closures_run_with_the_timer_slack_of_the_thread_that_built_the_runtime() {
    fn slack() -> libc::c_int {
        // SAFETY: `PR_GET_TIMERSLACK` takes no argument and only reads this thread's slack.
        unsafe { libc::prctl(libc::PR_GET_TIMERSLACK) }
    }
    let outside = slack();
    let rt = running(1);
    let seen = rt
        .block_on(rt.spawn(async {
            let mut seen = Vec::new();
            for _ in 0..3 {
                // Worker 0 moves on to a blocking thread, and the thread it leaves goes back
                // to the pool, idle; the closure runs there, or on a thread started for it.
                block_once_the_worker_moved(|| ());
                sleep(Duration::from_millis(5)).await;
                seen.push(escapement::task::spawn_blocking(slack).await.unwrap());
            }
            seen
        }))
        .unwrap();
    assert!(
        seen.iter().all(|&s| s == outside),
        "closures ran with timer slacks {seen:?}, the thread outside the runtime {outside}"
    );
}
