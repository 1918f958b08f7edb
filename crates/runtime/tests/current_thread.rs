//! The current-thread runtime (`Builder::new_current_thread`): its tasks and timers run on
//! the thread in `block_on`, in an order that is the same from run to run, and nothing runs
//! outside `block_on`; two threads in `block_on` take turns with the tasks; shutdown drops
//! the tasks left queued, and waits for a `Handle::block_on` driving the runtime to come back
//! from its poll; `block_in_place` panics there, as on tokio's; the `block_on` future is
//! polled again after at most `event_interval` tasks.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;

use escapement::time::{sleep, Duration, Instant};
use escapement::{task, Builder, Runtime};

fn current_thread() -> Runtime {
    Builder::new_current_thread().build().expect("a runtime")
}

/// Sets its flag when dropped.
struct SetOnDrop(Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[test]
fn tasks_run_on_the_block_on_thread_in_the_order_they_were_spawned() {
    let rt = current_thread();
    let order = Arc::new(Mutex::new(Vec::new()));
    let tasks = rt.block_on(async {
        let tasks: Vec<_> = (0..5)
            .map(|i| {
                let order = order.clone();
                escapement::spawn(async move {
                    order.lock().unwrap().push(i);
                    task::yield_now().await;
                    order.lock().unwrap().push(10 + i);
                    thread::current().id()
                })
            })
            .collect();
        assert!(
            order.lock().unwrap().is_empty(),
            "nothing ran before a yield"
        );
        let mut threads = Vec::new();
        for task in tasks {
            threads.push(task.await.unwrap());
        }
        threads
    });
    assert!(tasks.iter().all(|&id| id == thread::current().id()));
    // Each task yields once and is held back until the queue is empty; the five then run
    // again last first, as on tokio.
    assert_eq!(*order.lock().unwrap(), [0, 1, 2, 3, 4, 14, 13, 12, 11, 10]);
}

/// Tasks that yield wait until every other queued task has run, and the `block_on` future,
/// woken by its own yield, goes before them: each of the future's yields sees every task
/// take one turn, as on tokio, not one task.
#[test]
fn tasks_that_yield_wait_until_the_queue_is_empty() {
    let rt = current_thread();
    let seen = rt.block_on(async {
        let turns = Arc::new(AtomicUsize::new(0));
        for _ in 0..10 {
            let turns = turns.clone();
            drop(escapement::spawn(async move {
                for _ in 0..3 {
                    turns.fetch_add(1, Ordering::SeqCst);
                    task::yield_now().await;
                }
            }));
        }
        let mut seen = Vec::new();
        for _ in 0..6 {
            task::yield_now().await;
            seen.push(turns.load(Ordering::SeqCst));
        }
        seen
    });
    assert_eq!(seen, [10, 20, 30, 30, 30, 30]);
}

/// Tasks held back together run again last first, each time: three tasks that yield in a
/// loop alternate their order from turn to turn, as on tokio.
#[test]
fn tasks_held_back_together_run_again_last_first() {
    let rt = current_thread();
    let order = Arc::new(Mutex::new(Vec::new()));
    rt.block_on(async {
        let tasks: Vec<_> = ['a', 'b', 'c']
            .into_iter()
            .map(|name| {
                let order = order.clone();
                escapement::spawn(async move {
                    for turn in 0..3 {
                        order.lock().unwrap().push(format!("{name}{turn}"));
                        task::yield_now().await;
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
    });
    assert_eq!(
        *order.lock().unwrap(),
        ["a0", "b0", "c0", "c1", "b1", "a1", "a2", "b2", "c2"]
    );
}

#[test]
fn no_task_runs_outside_block_on() {
    let rt = current_thread();
    let ran = Arc::new(AtomicBool::new(false));
    let task = rt.spawn({
        let ran = ran.clone();
        async move { ran.store(true, Ordering::SeqCst) }
    });
    thread::sleep(std::time::Duration::from_millis(50));
    assert!(!ran.load(Ordering::SeqCst), "ran with no block_on");
    rt.block_on(task).unwrap();
    assert!(ran.load(Ordering::SeqCst));
    // A task spawned by another task while in block_on and left behind waits for the next.
    let second = rt
        .block_on(async { Some(escapement::spawn(async { thread::current().id() })) })
        .unwrap();
    let here = thread::current().id();
    let elsewhere = thread::spawn(move || rt.block_on(second).unwrap())
        .join()
        .unwrap();
    assert_ne!(
        elsewhere, here,
        "it ran in the second block_on, on its thread"
    );
}

#[test]
fn timers_fire_in_tasks_and_in_the_future() {
    let rt = current_thread();
    let start = std::time::Instant::now();
    let fired = rt.block_on(async {
        let tasks: Vec<_> = (1..=20u64)
            .map(|ms| {
                escapement::spawn(async move {
                    let deadline = Instant::now() + Duration::from_millis(ms);
                    sleep(Duration::from_millis(ms)).await;
                    Instant::now() >= deadline
                })
            })
            .collect();
        sleep(Duration::from_millis(5)).await;
        let mut never_early = true;
        for task in tasks {
            never_early &= task.await.unwrap();
        }
        never_early
    });
    assert!(fired, "no timer fired early");
    assert!(start.elapsed() >= std::time::Duration::from_millis(20));
}

#[test]
fn a_paused_clock_jumps_when_the_thread_has_nothing_else_to_do() {
    let rt = Builder::new_current_thread()
        .start_paused(true)
        .build()
        .unwrap();
    let wall = std::time::Instant::now();
    let order = rt.block_on(async {
        let order = Arc::new(Mutex::new(Vec::new()));
        let tasks: Vec<_> = [3u64, 1, 2]
            .into_iter()
            .map(|hours| {
                let order = order.clone();
                escapement::spawn(async move {
                    sleep(Duration::from_secs(3600 * hours)).await;
                    order.lock().unwrap().push(hours);
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        let order = order.lock().unwrap().clone();
        order
    });
    assert_eq!(order, [1, 2, 3]);
    assert!(wall.elapsed() < std::time::Duration::from_secs(60));
}

#[test]
fn a_wake_from_another_thread_reaches_the_parked_block_on() {
    let rt = current_thread();
    let (sender, receiver) = futures::channel::oneshot::channel();
    let waker = thread::spawn(move || {
        thread::sleep(std::time::Duration::from_millis(30));
        sender.send(7).unwrap();
    });
    assert_eq!(rt.block_on(receiver).unwrap(), 7);
    waker.join().unwrap();
    // And a task woken from another thread, awaited by the future.
    let (sender, receiver) = futures::channel::oneshot::channel();
    let task = rt.spawn(async move { receiver.await.unwrap() * 6 });
    let waker = thread::spawn(move || {
        thread::sleep(std::time::Duration::from_millis(30));
        sender.send(7).unwrap();
    });
    assert_eq!(rt.block_on(task).unwrap(), 42);
    waker.join().unwrap();
}

#[test]
fn two_threads_in_block_on_take_turns_with_the_tasks() {
    let rt = Arc::new(current_thread());
    let (started, wait_started) = mpsc::channel();
    let (release, released) = futures::channel::oneshot::channel::<()>();
    // The first thread holds the tasks until `release` fires.
    let first = thread::spawn({
        let rt = rt.clone();
        move || {
            rt.block_on(async move {
                started.send(thread::current().id()).unwrap();
                released.await.unwrap();
            });
        }
    });
    let first_id = wait_started.recv().unwrap();
    // The second thread spawns a task: the first thread's block_on runs it.
    let ran_on = rt.block_on(async { escapement::spawn(async { thread::current().id() }).await });
    assert_eq!(ran_on.unwrap(), first_id);
    // The second thread waits on a timer and a task while the first returns: it takes the
    // tasks over and runs them itself.
    let rt2 = rt.clone();
    let second = thread::spawn(move || {
        rt2.block_on(async {
            let task = escapement::spawn(async {
                sleep(Duration::from_millis(30)).await;
                thread::current().id()
            });
            sleep(Duration::from_millis(10)).await;
            (task.await.unwrap(), thread::current().id())
        })
    });
    thread::sleep(std::time::Duration::from_millis(5));
    release.send(()).unwrap();
    first.join().unwrap();
    let (task_thread, second_thread) = second.join().unwrap();
    assert_ne!(second_thread, first_id);
    assert_eq!(
        task_thread, second_thread,
        "the second thread took the tasks over"
    );
}

#[test]
fn dropping_the_runtime_drops_the_tasks_left_queued() {
    let rt = current_thread();
    let dropped = Arc::new(AtomicBool::new(false));
    let guard = SetOnDrop(dropped.clone());
    let _never = rt.spawn(async move {
        let _guard = guard;
        std::future::pending::<()>().await;
    });
    // And one that ran once and is parked on a timer.
    let parked = Arc::new(AtomicBool::new(false));
    let guard = SetOnDrop(parked.clone());
    rt.block_on(async {
        escapement::spawn(async move {
            let _guard = guard;
            sleep(Duration::from_secs(3600)).await;
        });
        task::yield_now().await;
    });
    assert!(!dropped.load(Ordering::SeqCst) && !parked.load(Ordering::SeqCst));
    drop(rt);
    assert!(
        dropped.load(Ordering::SeqCst),
        "the queued task was dropped"
    );
    assert!(
        parked.load(Ordering::SeqCst),
        "the sleeping task was dropped"
    );
}

#[test]
fn a_runtime_shut_down_while_another_thread_runs_its_tasks_cancels_them() {
    let rt = current_thread();
    let handle = rt.handle().clone();
    let (started, wait_started) = mpsc::channel();
    let waiting = thread::spawn(move || {
        handle.block_on(async {
            let task = escapement::spawn(std::future::pending::<()>());
            started.send(()).unwrap();
            task.await
        })
    });
    wait_started.recv().unwrap();
    drop(rt);
    let joined = waiting.join().unwrap();
    assert!(joined.unwrap_err().is_cancelled());
}

/// The thread in `Handle::block_on` drives the runtime, so it is its worker, and a shutdown
/// waits for the poll of its future under way to return, as for a worker busy in a task.
#[test]
fn dropping_the_runtime_waits_for_the_poll_of_a_handle_block_on_that_drives_it() {
    let rt = current_thread();
    let handle = rt.handle().clone();
    let (polling, is_polling) = mpsc::channel();
    let returned = Arc::new(AtomicBool::new(false));
    let driving = {
        let returned = returned.clone();
        thread::spawn(move || {
            handle.block_on(async move {
                polling.send(()).unwrap();
                thread::sleep(Duration::from_millis(200));
                returned.store(true, Ordering::SeqCst);
            })
        })
    };
    is_polling.recv().unwrap();
    drop(rt);
    assert!(
        returned.load(Ordering::SeqCst),
        "the drop returned while the worker was in its poll"
    );
    driving.join().unwrap();
}

#[test]
fn block_in_place_panics_in_the_future_and_in_a_task() {
    let rt = current_thread();
    let in_future = catch_unwind(AssertUnwindSafe(|| {
        rt.block_on(async { task::block_in_place(|| 1) })
    }));
    let payload = in_future.unwrap_err();
    let message = payload
        .downcast_ref::<&str>()
        .copied()
        .or(payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or_default();
    assert!(message.contains("current-thread runtime"), "{message}");
    let in_task = rt.block_on(rt.spawn(async { task::block_in_place(|| 1) }));
    assert!(in_task.unwrap_err().is_panic());
    // The runtime goes on after both.
    assert_eq!(rt.block_on(rt.spawn(async { 5 })).unwrap(), 5);
    // So it does in a task under another runtime's context: the worker would otherwise go to
    // a thread of the blocking pool, and never come back to a block_on.
    let multi = Runtime::new().unwrap();
    let multi_handle = multi.handle().clone();
    let under_other = rt.block_on(rt.spawn(async move {
        let _other = multi_handle.enter();
        task::block_in_place(|| 1)
    }));
    assert!(under_other.unwrap_err().is_panic());
    assert_eq!(rt.block_on(rt.spawn(async { 4 })).unwrap(), 4);
    // In a spawn_blocking closure it runs the closure, as anywhere outside a runtime.
    let blocking = rt.block_on(rt.spawn_blocking(|| task::block_in_place(|| 6)));
    assert_eq!(blocking.unwrap(), 6);
    // And in another runtime's block_on under this one's context, as tokio's: what counts
    // is whose block_on the thread is in.
    let handle = rt.handle().clone();
    let under_this = multi.block_on(async move {
        let _this = handle.enter();
        task::block_in_place(|| 7)
    });
    assert_eq!(under_this, 7);
}

#[test]
fn a_panic_in_the_future_gives_the_tasks_back() {
    let rt = current_thread();
    let task = rt.spawn(async { 3 });
    let panicked = catch_unwind(AssertUnwindSafe(|| {
        rt.block_on(async { panic!("in the future") })
    }));
    assert!(panicked.is_err());
    assert_eq!(
        rt.block_on(task).unwrap(),
        3,
        "the next block_on runs the tasks"
    );
}

#[test]
fn spawn_blocking_wakes_the_block_on_thread() {
    let rt = current_thread();
    let count = Arc::new(AtomicUsize::new(0));
    let total = rt.block_on(async {
        let mut total = 0;
        for i in 0..10 {
            let count = count.clone();
            total += escapement::task::spawn_blocking(move || {
                thread::sleep(std::time::Duration::from_millis(2));
                count.fetch_add(1, Ordering::SeqCst);
                i
            })
            .await
            .unwrap();
        }
        total
    });
    assert_eq!(total, 45);
    assert_eq!(count.load(Ordering::SeqCst), 10);
}

#[test]
fn a_current_thread_runtime_runs_inside_block_in_place_on_a_worker() {
    within_a_minute(a_current_thread_runtime_inside_block_in_place);
}

fn a_current_thread_runtime_inside_block_in_place() {
    let multi = Builder::new().worker_threads(1).build().unwrap();
    for _ in 0..20 {
        let answer = multi.block_on(multi.spawn(async {
            let queued = escapement::spawn(async { 6 });
            // The worker's thread, its core handed off, becomes a current-thread runtime's
            // worker for a while, and then the multi-threaded runtime's again.
            let seven = task::block_in_place(|| {
                current_thread().block_on(async { escapement::spawn(async { 7 }).await.unwrap() })
            });
            queued.await.unwrap() * seven
        }));
        assert_eq!(answer.unwrap(), 42);
    }
    assert_eq!(multi.block_on(multi.spawn(async { 1 })).unwrap(), 1);
}

#[test]
fn a_runtime_dropped_in_a_current_thread_block_on_inside_its_block_in_place_returns() {
    within_a_minute(|| {
        let multi = Builder::new().worker_threads(2).build().unwrap();
        let handle = multi.handle().clone();
        let owner = Arc::new(Mutex::new(Some(multi)));
        let task = handle.spawn({
            let owner = owner.clone();
            async move {
                task::block_in_place(|| {
                    let multi = owner.lock().unwrap().take().expect("the runtime");
                    // This thread, under the current-thread runtime's worker, is still one of
                    // `multi`'s: the drop waits for the other workers, not for itself.
                    current_thread().block_on(async move { drop(multi) });
                });
            }
        });
        // Completed or cancelled by the shutdown, the task's handle resolves.
        let _ = futures::executor::block_on(task);
    });
}

/// Runs `f` on a thread of its own and fails if it takes more than a minute (ten under
/// Miri, which interprets): a hang.
fn within_a_minute<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let limit = if cfg!(miri) { 600 } else { 60 };
    let (done, finished) = mpsc::channel();
    thread::spawn(move || done.send(f()).unwrap());
    finished
        .recv_timeout(std::time::Duration::from_secs(limit))
        .expect("it hung")
}

#[test]
fn a_block_on_that_returns_when_a_spawn_woke_it_leaves_later_wakes_working() {
    within_a_minute(|| {
        let rt = current_thread();
        let handle = rt.handle().clone();
        let (sender, receiver) = futures::channel::oneshot::channel();
        // While the block_on is parked, another thread spawns a task (which wakes the parked
        // worker to look for it) and completes the future.
        let other = thread::spawn(move || {
            thread::sleep(std::time::Duration::from_millis(50));
            drop(handle.spawn(async {}));
            sender.send(()).unwrap();
        });
        rt.block_on(receiver).unwrap();
        other.join().unwrap();
        // A task woken from a blocking thread must still wake the next block_on.
        let task = rt.spawn(async {
            escapement::task::spawn_blocking(|| {
                thread::sleep(std::time::Duration::from_millis(20));
                5
            })
            .await
            .unwrap()
        });
        assert_eq!(rt.block_on(task).unwrap(), 5);
    });
}

/// Where, among `local` tasks spawned by `block_on`'s future, a task spawned from another
/// thread right after them runs.
fn position_of_a_task_from_outside(rt: &Runtime, local: usize) -> usize {
    let handle = rt.handle().clone();
    rt.block_on(async move {
        let order = Arc::new(Mutex::new(Vec::new()));
        let tasks: Vec<_> = (0..local)
            .map(|i| {
                let order = order.clone();
                escapement::spawn(async move { order.lock().unwrap().push(i) })
            })
            .collect();
        let outside = thread::spawn({
            let order = order.clone();
            move || handle.spawn(async move { order.lock().unwrap().push(usize::MAX) })
        })
        .join()
        .unwrap();
        for task in tasks {
            task.await.unwrap();
        }
        outside.await.unwrap();
        let order = order.lock().unwrap();
        order.iter().position(|&i| i == usize::MAX).unwrap()
    })
}

#[test]
fn a_task_from_outside_waits_at_most_31_turns_by_default_as_on_tokio() {
    // Tokio's current-thread runtime looks at its shared queue first every 31 turns.
    let position = position_of_a_task_from_outside(&current_thread(), 200);
    assert!(position < 31, "ran after {position} local tasks");
    // A set interval still holds.
    let rt = Builder::new_current_thread()
        .global_queue_interval(100)
        .build()
        .expect("a runtime");
    let position = position_of_a_task_from_outside(&rt, 200);
    assert!(
        (31..100).contains(&position),
        "ran after {position} local tasks"
    );
}

/// The thread runs at most `event_interval` tasks between two polls of its `block_on` future,
/// 61 by default, as tokio's.
#[test]
fn the_future_in_block_on_waits_for_at_most_event_interval_tasks() {
    for (interval, expected) in [(None, vec![61, 100]), (Some(25), vec![25, 50, 75, 100])] {
        let mut builder = Builder::new_current_thread();
        if let Some(interval) = interval {
            builder.event_interval(interval);
        }
        let rt = builder.build().expect("a runtime");
        let ran = Arc::new(AtomicUsize::new(0));
        let seen = rt.block_on(async {
            for _ in 0..100 {
                let ran = ran.clone();
                drop(escapement::spawn(async move {
                    ran.fetch_add(1, Ordering::SeqCst);
                }));
            }
            let mut seen = Vec::new();
            while seen.last() != Some(&100) {
                task::yield_now().await;
                seen.push(ran.load(Ordering::SeqCst));
            }
            seen
        });
        assert_eq!(seen, expected, "event_interval {interval:?}");
    }
}
