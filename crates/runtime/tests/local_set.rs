//! `LocalSet` and `spawn_local`: tasks that are not `Send` run, on the set's thread only;
//! they use the runtime's timers and wait on work from other threads; a waker fired on
//! another thread reaches them, even by value as the task finishes; awaiting the set waits
//! for all of them; `run_until` leaves the rest pending; `enter` lets `spawn_local` work
//! outside the set's polls; sets nest, and each has an id of its own; driving a set from
//! inside its own task panics there, and leaves the set's driver its waker; `spawn_local`
//! outside a set panics; a paused current-thread runtime jumps its clock from one local sleep
//! to the next; an output that is not `Send` comes back through the join handle, or is
//! dropped on the set's thread when nobody reads it; `block_in_place` in a set driven by
//! `block_on` calls its closure on the set's thread. The set's turns are in
//! `local_set_turns.rs`; its panics, aborts and drops in `local_set_drop.rs`.

mod support;

use std::cell::{Cell, RefCell};
use std::future::{pending, poll_fn, Future};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::thread::{self};
use std::time::Duration;

use escapement::task::{self, LocalSet};
use escapement::time::{sleep, Instant};

use support::{one_worker, paused, running, wait_until, within, DropsOn};

/// A bound that only catches a hang (a lost wake-up) in the tests that wait on other threads.
const HANG: Duration = Duration::from_secs(30);

#[test]
fn tasks_that_are_not_send_run_on_the_sets_thread() {
    let rt = running(2);
    let local = LocalSet::new();
    let here = thread::current().id();
    let seen = Rc::new(RefCell::new(Vec::new()));
    local.block_on(&rt, async {
        let tasks: Vec<_> = (0..10)
            .map(|i| {
                let seen = seen.clone();
                task::spawn_local(async move {
                    task::yield_now().await;
                    seen.borrow_mut().push(i);
                    thread::current().id()
                })
            })
            .collect();
        for task in tasks {
            assert_eq!(task.await.unwrap(), here);
        }
    });
    let mut seen = seen.take();
    seen.sort_unstable();
    assert_eq!(seen, (0..10).collect::<Vec<_>>());
}

/// Where tokio's `block_in_place` panics (a set driven in a multi-threaded runtime's
/// `block_on`), it calls its closure on the set's thread, in a local task and in the future
/// of `run_until` alike, and the closure may block on a future there.
#[test]
fn block_in_place_in_a_set_driven_by_block_on_calls_the_closure_on_its_thread() {
    let rt = running(1);
    let here = thread::current().id();
    let local = LocalSet::new();
    let (in_task, in_future) = local.block_on(&rt, async {
        let not_send = Rc::new(7);
        let task = task::spawn_local(async move {
            task::block_in_place(|| (thread::current().id(), *not_send))
        });
        let in_future = task::block_in_place(|| {
            let slept = escapement::Handle::current().block_on(async {
                sleep(Duration::from_millis(1)).await;
                "slept"
            });
            (thread::current().id(), slept)
        });
        (task.await.unwrap(), in_future)
    });
    assert_eq!(in_task, (here, 7));
    assert_eq!(in_future, (here, "slept"));
}

#[test]
fn local_tasks_sleep_on_the_runtimes_timers() {
    let rt = paused(1);
    let local = LocalSet::new();
    let elapsed = local.block_on(&rt, async {
        let start = Instant::now();
        let order = Rc::new(RefCell::new(Vec::new()));
        let tasks: Vec<_> = [30u64, 10, 20]
            .into_iter()
            .map(|ms| {
                let order = order.clone();
                task::spawn_local(async move {
                    sleep(Duration::from_millis(ms)).await;
                    order.borrow_mut().push(ms);
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        assert_eq!(*order.borrow(), [10, 20, 30]);
        start.elapsed()
    });
    assert!(elapsed >= Duration::from_millis(30), "{elapsed:?}");
}

/// The shape of many tokio test suites: a paused current-thread runtime (the test macro's
/// default) whose test body drives a set. The clock jumps from one local sleep to the next,
/// and each task sees exactly its own deadline.
#[escapement::test(start_paused = true)]
async fn a_paused_current_thread_runtime_jumps_through_the_sleeps_of_local_tasks() {
    let local = LocalSet::new();
    let start = Instant::now();
    let woke = Rc::new(RefCell::new(Vec::new()));
    local
        .run_until(async {
            for ms in [3_600_000u64, 10, 250] {
                let woke = woke.clone();
                task::spawn_local(async move {
                    sleep(Duration::from_millis(ms)).await;
                    woke.borrow_mut().push((ms, start.elapsed()));
                });
            }
            sleep(Duration::from_millis(500)).await;
        })
        .await;
    assert_eq!(start.elapsed(), Duration::from_millis(500));
    // The hour-long sleep is still pending; awaiting the set runs it to its end.
    local.await;
    assert_eq!(start.elapsed(), Duration::from_secs(3600));
    let woke = woke.borrow();
    let expected: Vec<_> = [10u64, 250, 3_600_000]
        .into_iter()
        .map(|ms| (ms, Duration::from_millis(ms)))
        .collect();
    assert_eq!(*woke, expected);
}

#[test]
fn a_local_task_waits_on_a_task_of_the_workers() {
    within(HANG, || {
        let rt = running(2);
        let local = LocalSet::new();
        local.block_on(&rt, async {
            let counter = Rc::new(Cell::new(0));
            let tasks: Vec<_> = (0..50u64)
                .map(|i| {
                    let counter = counter.clone();
                    task::spawn_local(async move {
                        // On a worker, so its completion wakes this task from another thread.
                        let doubled = escapement::spawn(async move {
                            sleep(Duration::from_millis(i % 5)).await;
                            i * 2
                        })
                        .await
                        .unwrap();
                        counter.set(counter.get() + 1);
                        doubled
                    })
                })
                .collect();
            for (i, task) in tasks.into_iter().enumerate() {
                assert_eq!(task.await.unwrap(), i as u64 * 2);
            }
            assert_eq!(counter.get(), 50);
        });
    });
}

#[test]
fn a_waker_fired_on_another_thread_reaches_a_local_task() {
    within(HANG, || {
        let rt = running(1);
        let local = LocalSet::new();
        let (send, recv) = mpsc::channel::<Waker>();
        let woken = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let waker_thread = thread::spawn({
            let woken = woken.clone();
            move || {
                let waker = recv.recv().unwrap();
                thread::sleep(Duration::from_millis(5));
                woken.store(true, std::sync::atomic::Ordering::SeqCst);
                waker.wake();
            }
        });
        local.block_on(&rt, async {
            let task = task::spawn_local(poll_fn(move |cx| {
                if woken.load(std::sync::atomic::Ordering::SeqCst) {
                    return Poll::Ready(());
                }
                send.send(cx.waker().clone()).ok();
                Poll::Pending
            }));
            task.await.unwrap();
        });
        waker_thread.join().unwrap();
    });
}

/// A waker woken by value keeps its reference until the task is queued: the set's thread may
/// run the task to completion and free it as soon as it is, while the waking thread is still
/// in the set's `schedule`, which lives in the task's memory. (A use after free that Miri
/// reports, with several seeds, when the waker's reference is what the queue gets.)
#[test]
fn a_task_woken_by_value_may_finish_before_its_waker_returns() {
    for _ in 0..10 {
        let mut set = LocalSet::new();
        let parked = Arc::new(Mutex::new(None::<Waker>));
        let mut polled = false;
        drop(set.spawn_local(poll_fn({
            let parked = parked.clone();
            move |cx| {
                if polled {
                    return Poll::Ready(());
                }
                polled = true;
                *parked.lock().unwrap() = Some(cx.waker().clone());
                Poll::Pending
            }
        })));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(Pin::new(&mut set).poll(&mut cx).is_pending());
        let waker = parked.lock().unwrap().take().expect("the task parked");
        let waking = thread::spawn(move || waker.wake());
        while Pin::new(&mut set).poll(&mut cx).is_pending() {
            thread::yield_now();
        }
        waking.join().unwrap();
    }
}

#[test]
fn awaiting_the_set_waits_for_every_task() {
    let rt = paused(1);
    let local = LocalSet::new();
    let done = Rc::new(Cell::new(0));
    for ms in [5u64, 1, 3] {
        let done = done.clone();
        drop(local.spawn_local(async move {
            sleep(Duration::from_millis(ms)).await;
            // A task spawned by a task is awaited too.
            let inner = done.clone();
            drop(task::spawn_local(async move { inner.set(inner.get() + 1) }));
            done.set(done.get() + 1);
        }));
    }
    rt.block_on(local);
    assert_eq!(done.get(), 6);
}

#[test]
fn run_until_returns_with_its_future_and_leaves_the_rest_pending() {
    let rt = paused(1);
    let local = LocalSet::new();
    let slow_done = Rc::new(Cell::new(false));
    let slow = local.spawn_local({
        let slow_done = slow_done.clone();
        async move {
            sleep(Duration::from_secs(10)).await;
            slow_done.set(true);
        }
    });
    rt.block_on(local.run_until(async { sleep(Duration::from_millis(1)).await }));
    assert!(!slow_done.get() && !slow.is_finished());
    // Driven again, it finishes.
    local.block_on(&rt, slow).unwrap();
    assert!(slow_done.get());
}

#[test]
fn enter_lets_spawn_local_work_outside_the_sets_polls() {
    let rt = running(1);
    let local = LocalSet::new();
    let task = {
        let _guard = local.enter();
        task::spawn_local(async { Rc::new(7) == Rc::new(7) })
    };
    assert!(!task.is_finished(), "runs only when the set is driven");
    assert!(local.block_on(&rt, task).unwrap());
    // The guard is gone: outside the set again.
    assert!(std::panic::catch_unwind(|| task::spawn_local(async {})).is_err());
}

/// An output that is not `Send` (it holds an `Rc`) and records the thread it is dropped on.
struct LocalOutput {
    _drops_on: DropsOn,
    rc: Rc<()>,
}

#[test]
fn a_local_tasks_output_need_not_be_send_and_is_dropped_on_the_sets_thread() {
    within(HANG, || {
        let rt = running(2);
        let local = LocalSet::new();
        let here = thread::current().id();
        let read = Arc::new(Mutex::new(None));
        let unread_after = Arc::new(Mutex::new(None));
        let unread_before = Arc::new(Mutex::new(None));
        local.block_on(&rt, async {
            // Read through the join handle; the task completes after a worker wakes it.
            let task = task::spawn_local({
                let read = read.clone();
                async move {
                    escapement::spawn(task::yield_now()).await.unwrap();
                    LocalOutput {
                        _drops_on: DropsOn(read),
                        rc: Rc::new(()),
                    }
                }
            });
            let output = task.await.unwrap();
            assert_eq!(Rc::strong_count(&output.rc), 1);
            drop(output);
            // Completed, then its handle dropped unread: the handle drops the output.
            let task = task::spawn_local({
                let unread_after = unread_after.clone();
                async move {
                    LocalOutput {
                        _drops_on: DropsOn(unread_after),
                        rc: Rc::new(()),
                    }
                }
            });
            while !task.is_finished() {
                task::yield_now().await;
            }
            drop(task);
            // The handle dropped before the task completes: the task drops its output.
            drop(task::spawn_local({
                let unread_before = unread_before.clone();
                async move {
                    escapement::spawn(task::yield_now()).await.unwrap();
                    LocalOutput {
                        _drops_on: DropsOn(unread_before),
                        rc: Rc::new(()),
                    }
                }
            }));
            while unread_before.lock().unwrap().is_none() {
                task::yield_now().await;
            }
        });
        for (what, dropped_on) in [
            ("read", read),
            ("completed, then unread", unread_after),
            ("unread before completing", unread_before),
        ] {
            assert_eq!(*dropped_on.lock().unwrap(), Some(here), "{what}");
        }
    });
}

#[test]
fn a_set_can_be_driven_from_a_task_of_another_set_and_nested() {
    let rt = paused(1);
    let outer = LocalSet::new();
    let value = outer.block_on(&rt, async {
        let inner = LocalSet::new();
        let from_inner = inner
            .run_until(async {
                // Goes to the inner set, the current one here.
                task::spawn_local(async { 5 }).await.unwrap()
            })
            .await;
        // The outer set is current again.
        from_inner + task::spawn_local(async { 1 }).await.unwrap()
    });
    assert_eq!(value, 6);
}

#[test]
fn spawn_local_outside_a_set_panics_with_a_clear_message() {
    let panic = std::panic::catch_unwind(|| task::spawn_local(async {})).unwrap_err();
    let message = panic.downcast_ref::<&str>().copied().unwrap_or_default();
    assert!(message.contains("LocalSet"), "{message}");
    // Inside a runtime but outside a set, too.
    let rt = running(1);
    let inside =
        rt.block_on(async { std::panic::catch_unwind(|| task::spawn_local(async {})).is_err() });
    assert!(inside);
}

#[test]
fn many_local_tasks_woken_from_the_workers_all_complete() {
    within(HANG, || {
        let rt = running(2);
        let local = LocalSet::new();
        let completed = Rc::new(Cell::new(0usize));
        local.block_on(&rt, async {
            let tasks: Vec<_> = (0..2_000u64)
                .map(|i| {
                    let completed = completed.clone();
                    task::spawn_local(async move {
                        for _ in 0..3 {
                            escapement::spawn(async move { i }).await.unwrap();
                        }
                        completed.set(completed.get() + 1);
                    })
                })
                .collect();
            for task in tasks {
                task.await.unwrap();
            }
        });
        assert_eq!(completed.get(), 2_000);
        wait_until("the set's tasks are all released", || {
            Rc::strong_count(&completed) == 1
        });
    });
}

#[test]
fn driving_a_set_from_inside_one_of_its_own_tasks_panics_in_that_task() {
    let rt = running(1);
    let local = Rc::new(LocalSet::new());
    let inner = local.clone();
    let error = local.block_on(&rt, async move {
        let nested = task::spawn_local(async move {
            inner.run_until(task::yield_now()).await;
        });
        nested.await.unwrap_err()
    });
    assert!(error.is_panic());
    let message = error.into_panic();
    let message = message.downcast_ref::<&str>().copied().unwrap_or_default();
    assert!(message.contains("inside one of its own tasks"), "{message}");
    // The set runs on.
    assert_eq!(
        local.block_on(&rt, async { task::spawn_local(async { 2 }).await.unwrap() }),
        2
    );
}

/// The check comes before the set takes the caller's waker, and before `run_until` polls
/// its future: a future ready at once panics too, and the set's real driver, left with its
/// own waker, is still woken by the set's other tasks (it slept for good before, as the
/// inner call had put its own task's waker in its place). On both flavors.
#[test]
fn a_set_driven_from_its_own_task_keeps_its_drivers_waker() {
    for current_thread in [true, false] {
        let value = within(HANG, move || {
            let rt = one_worker(current_thread);
            let local = Rc::new(LocalSet::new());
            let (ready, waiting) = (local.clone(), local.clone());
            let at_once = local.spawn_local(async move { ready.run_until(async {}).await });
            let pending =
                local.spawn_local(async move { waiting.run_until(pending::<()>()).await });
            let later = local.spawn_local(async {
                sleep(Duration::from_millis(20)).await;
                7
            });
            local.block_on(&rt, async move {
                for nested in [at_once, pending] {
                    assert!(
                        nested.await.unwrap_err().is_panic(),
                        "the nested drive panics"
                    );
                }
                later.await.unwrap()
            })
        });
        assert_eq!(value, 7, "current-thread: {current_thread}");
    }
}

/// As tokio's, `LocalSet::id` is a `runtime::Id`, from the sequence that numbers runtimes:
/// no two sets, and no set and runtime, share one.
#[test]
fn a_set_has_an_id_no_runtime_or_other_set_shares() {
    let rt = running(1);
    let sets: Vec<LocalSet> = (0..3).map(|_| LocalSet::new()).collect();
    let mut ids: Vec<escapement::runtime::Id> = sets.iter().map(LocalSet::id).collect();
    ids.push(rt.handle().id());
    let distinct: std::collections::HashSet<_> = ids.iter().copied().collect();
    assert_eq!(distinct.len(), 4, "{ids:?}");
    assert_eq!(sets[0].id(), sets[0].id(), "the same each time");
}
