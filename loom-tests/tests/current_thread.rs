//! Model 8f: a current-thread runtime, whose one worker runs on the thread in `block_on`
//! (`scheduler/current.rs`). Two threads call `block_on` at once, each spawning a task and
//! awaiting it. One takes the worker; the other polls its own future and waits in the slot's
//! list. Whichever order they come in, each task runs once, each future completes, and the
//! worker given back when the first `block_on` returns is taken by the second, which is
//! unparked for it: a lost unpark leaves the second thread asleep with its task queued and
//! nobody to run it, which loom reports as a deadlock.
//!
//! The second model shuts the runtime down while another thread's `block_on` has the worker
//! and awaits a task that never completes: the shutdown waits for that thread to leave the
//! worker, the task is cancelled, and the `block_on`, now polling on its own parker, sees the
//! cancellation and returns.
//!
//! The third runs a paused clock: the future in `block_on` waits on a sleep of 1 ms and a
//! `spawn_blocking` job, which keeps the clock from moving until it has woken the future. The
//! thread may find nothing to do just before the wake, and go to park just after the job has
//! left the count of busy threads; it must see the wake then and poll the future, not jump the
//! clock to the sleep.
//!
//! The fourth shuts the runtime down without waiting (`shutdown_background`) while another
//! thread's `block_on` returns the worker: whichever sees the other, the task left pending
//! is cancelled, by the shutdown (which finds the thread already counted out) or by the
//! returning thread (which sees the shutdown under the slot's lock).
//!
//! The fifth gives the worker back while two other `block_on`s wait for it: the first in
//! the list completes on its own parker just then, and the other needs the worker to run its
//! task. Every waiter is unparked when the worker comes back, or the second sleeps with its
//! task queued.
#![cfg(loom)]

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use loom::sync::atomic::{AtomicBool, Ordering};
use loom::sync::Arc;

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut model = loom::model::Builder::new();
    // Two threads running a whole runtime: bounded as model 8g is.
    model.preemption_bound = Some(2);
    model.check(f);
}

#[test]
fn two_block_ons_take_turns_with_the_worker_and_each_task_runs_once() {
    model(|| {
        let runtime = Arc::new(escapement::Builder::new_current_thread().build().unwrap());
        let other = loom::thread::spawn({
            let runtime = runtime.clone();
            move || runtime.block_on(async { escapement::spawn(async { 6 }).await.unwrap() })
        });
        let seven = runtime.block_on(async { escapement::spawn(async { 7 }).await.unwrap() });
        assert_eq!(other.join().unwrap() * seven, 42);
    });
}

#[test]
fn a_shutdown_cancels_the_tasks_of_a_block_on_that_has_the_worker() {
    model(|| {
        let runtime = escapement::Builder::new_current_thread().build().unwrap();
        let handle = runtime.handle().clone();
        let (started, wait_started) = loom::sync::mpsc::channel();
        let waiting = loom::thread::spawn(move || {
            handle.block_on(async {
                let task = escapement::spawn(std::future::pending::<()>());
                started.send(()).unwrap();
                task.await
            })
        });
        wait_started.recv().unwrap();
        drop(runtime);
        assert!(waiting.join().unwrap().unwrap_err().is_cancelled());
    });
}

#[test]
fn a_paused_clock_does_not_jump_past_a_wake_that_came_while_the_thread_went_idle() {
    model(|| {
        let runtime = escapement::Builder::new_current_thread()
            .start_paused(true)
            .build()
            .unwrap();
        let woken_first = runtime.block_on(async {
            let mut sleep = std::pin::pin!(escapement::time::sleep(Duration::from_millis(1)));
            // Busy (so the clock waits) until it has woken the future.
            let mut job = escapement::task::spawn_blocking(|| ());
            std::future::poll_fn(|cx| {
                if sleep.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(false);
                }
                Pin::new(&mut job).poll(cx).map(|done| {
                    done.unwrap();
                    true
                })
            })
            .await
        });
        // The job's wake counts as work for the thread: had the clock jumped on its way to
        // park, the sleep, polled first, would have been ready.
        assert!(woken_first);
    });
}

#[test]
fn a_shutdown_that_does_not_wait_still_cancels_the_tasks_when_a_block_on_returns() {
    model(|| {
        let runtime = escapement::Builder::new_current_thread().build().unwrap();
        let handle = runtime.handle().clone();
        let dropped = Arc::new(AtomicBool::new(false));
        let _task = runtime.spawn({
            let guard = SetOnDrop(dropped.clone());
            async move {
                let _guard = guard;
                std::future::pending::<()>().await
            }
        });
        let returning = loom::thread::spawn(move || handle.block_on(async {}));
        runtime.shutdown_background();
        returning.join().unwrap();
        assert!(
            dropped.load(Ordering::SeqCst),
            "the task was cancelled, by the shutdown or by the block_on"
        );
    });
}

/// Sets its flag when dropped.
struct SetOnDrop(Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Pending once, waking itself, then ready: a future that completes on its own thread's
/// parker, without the worker.
struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<()> {
        if std::mem::replace(&mut self.0, true) {
            return Poll::Ready(());
        }
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

#[test]
fn a_worker_given_back_unparks_every_waiting_block_on() {
    model(|| {
        let runtime = escapement::Builder::new_current_thread().build().unwrap();
        let on_its_own = loom::thread::spawn({
            let handle = runtime.handle().clone();
            move || handle.block_on(YieldOnce(false))
        });
        let needs_the_worker = loom::thread::spawn({
            let handle = runtime.handle().clone();
            move || handle.block_on(async { escapement::spawn(async { 7 }).await.unwrap() })
        });
        runtime.block_on(YieldOnce(false));
        on_its_own.join().unwrap();
        assert_eq!(needs_the_worker.join().unwrap(), 7);
    });
}
