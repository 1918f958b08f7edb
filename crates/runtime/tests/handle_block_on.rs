//! `Handle::block_on` and `spawn_blocking` through a handle or the runtime: a thread outside
//! the runtime drives a future with the handle's runtime current (so `spawn`, `sleep` and
//! `spawn_blocking` inside go to it), several threads do so at once, a worker or a nested
//! `block_on` is refused, and once the runtime is gone the future still runs while a task it
//! spawns is cancelled.

mod support;

use std::sync::{Arc, Barrier};

use escapement::time::{sleep, Duration, Instant};
use escapement::Runtime;

use support::running;

/// A runtime whose worker threads are named `name-N`.
fn named(name: &str) -> Runtime {
    escapement::Builder::new()
        .worker_threads(2)
        .thread_name(name)
        .build()
        .expect("a runtime")
}

fn thread_name() -> Option<String> {
    std::thread::current().name().map(str::to_owned)
}

#[test]
fn a_thread_outside_the_runtime_drives_a_future_on_the_handles_runtime() {
    let rt = named("handle-block-on");
    let handle = rt.handle().clone();
    let (elapsed, task_thread, blocking_thread) = std::thread::spawn(move || {
        handle.block_on(async {
            let start = Instant::now();
            sleep(Duration::from_millis(5)).await;
            let elapsed = start.elapsed();
            let task_thread = escapement::spawn(async { thread_name() }).await.unwrap();
            let blocking_thread = escapement::task::spawn_blocking(thread_name).await.unwrap();
            (elapsed, task_thread, blocking_thread)
        })
    })
    .join()
    .expect("block_on returns");
    assert!(elapsed >= Duration::from_millis(5), "{elapsed:?}");
    let task_thread = task_thread.expect("workers are named");
    assert!(task_thread.starts_with("handle-block-on-"), "{task_thread}");
    assert_eq!(blocking_thread.as_deref(), Some("handle-block-on-blocking"));
}

#[test]
fn several_threads_block_on_one_handle_at_once() {
    let rt = running(2);
    let barrier = Arc::new(Barrier::new(4));
    let threads: Vec<_> = (0..4u64)
        .map(|i| {
            let (handle, barrier) = (rt.handle().clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                handle.block_on(async move {
                    sleep(Duration::from_millis(1 + i)).await;
                    escapement::spawn(async move { i * 10 }).await.unwrap()
                })
            })
        })
        .collect();
    let results: Vec<u64> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert_eq!(results, [0, 10, 20, 30]);
}

#[test]
fn runtime_and_handle_spawn_blocking_from_outside() {
    let rt = running(1);
    let from_runtime = rt.spawn_blocking(|| 1 + 1);
    let from_handle = rt.handle().spawn_blocking(|| 2 + 2);
    assert_eq!(rt.block_on(from_runtime).unwrap(), 2);
    assert_eq!(rt.block_on(from_handle).unwrap(), 4);
}

#[test]
#[should_panic(expected = "block_on was called inside another block_on")]
fn a_handle_block_on_inside_a_runtime_block_on() {
    let rt = running(1);
    let handle = rt.handle().clone();
    rt.block_on(async move { handle.block_on(async {}) });
}

#[test]
fn a_handle_block_on_on_a_worker_thread_panics_in_the_task() {
    let rt = running(1);
    let handle = rt.handle().clone();
    let error = rt
        .block_on(rt.spawn(async move { handle.block_on(async {}) }))
        .expect_err("the task panicked");
    assert!(error.is_panic());
    assert!(
        error
            .to_string()
            .contains("block_on was called on a runtime worker thread"),
        "{error}"
    );
}

#[test]
fn after_the_runtime_is_dropped_the_future_runs_and_its_tasks_are_cancelled() {
    let rt = running(1);
    let handle = rt.handle().clone();
    drop(rt);
    let (answer, task) = handle.block_on(async { (6 * 7, escapement::spawn(async { 1 }).await) });
    assert_eq!(answer, 42);
    assert!(task.expect_err("no worker runs it").is_cancelled());
}

/// A future that counts its polls, wakes itself once from another thread after 200 ms, and
/// is ready once woken.
fn woken_once_after_a_while(polls: &mut usize) -> impl std::future::Future<Output = ()> + '_ {
    let woken = Arc::new(std::sync::atomic::AtomicBool::new(false));
    std::future::poll_fn(move |cx| {
        *polls += 1;
        if woken.load(std::sync::atomic::Ordering::SeqCst) {
            return std::task::Poll::Ready(());
        }
        if *polls == 1 {
            let (waker, woken) = (cx.waker().clone(), woken.clone());
            std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(200));
                woken.store(true, std::sync::atomic::Ordering::SeqCst);
                waker.wake();
            });
        }
        std::task::Poll::Pending
    })
}

/// A `Handle::block_on` polls its future only when it is woken: while worker 0 is stuck and
/// the thread is the watch, which wakes up every few milliseconds, and after the runtime was
/// dropped, when there is no timer left to watch.
#[test]
fn the_future_is_polled_only_when_woken_while_watching_and_after_the_drop() {
    let rt = running(1);
    let handle = rt.handle().clone();
    let (stuck, worker0_stuck) = std::sync::mpsc::channel();
    drop(rt.spawn(async move {
        stuck.send(()).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(400));
    }));
    worker0_stuck.recv().unwrap();
    let mut polls = 0;
    handle.block_on(woken_once_after_a_while(&mut polls));
    assert_eq!(
        polls, 2,
        "polled {polls} times for one wake while worker 0 was stuck"
    );
    drop(rt);
    let mut polls = 0;
    handle.block_on(woken_once_after_a_while(&mut polls));
    assert_eq!(polls, 2, "polled {polls} times for one wake after the drop");
}
