//! Helpers shared by the runtime's integration tests: runtimes on the paused and the real
//! clock, a waker that counts its wakes, polling a future once by hand, values that count
//! their drops or log them by name or by thread, a panic payload whose drop panics too,
//! real-time waits and watchdogs whose bounds only catch hangs, a `block_in_place` that waits
//! for its worker to move, and the latest representable `Instant`.
//!
//! Each test file includes it with `mod support;` and imports what it needs.

#![allow(
    dead_code,
    reason = "each test crate compiles this module and uses only some of its helpers"
)]

use std::cell::RefCell;
use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::ThreadId;
use std::time::Duration;

use escapement::time::Instant;
use escapement::{JoinHandle, Runtime};

/// A runtime with `workers` worker threads whose clock starts paused (and auto-advances).
pub(crate) fn paused(workers: usize) -> Runtime {
    escapement::Builder::new()
        .worker_threads(workers)
        .start_paused(true)
        .build()
        .expect("a paused runtime")
}

/// A runtime with `workers` worker threads on the real clock.
pub(crate) fn running(workers: usize) -> Runtime {
    escapement::Builder::new()
        .worker_threads(workers)
        .build()
        .expect("a runtime")
}

/// A current-thread runtime, or else a multi-threaded one with one worker: for the tests
/// that check a behaviour on both flavors.
pub(crate) fn one_worker(current_thread: bool) -> Runtime {
    if current_thread {
        escapement::Builder::new_current_thread().build()
    } else {
        escapement::Builder::new().worker_threads(1).build()
    }
    .expect("a runtime")
}

/// A waker that counts its wakes.
#[derive(Debug, Default)]
pub(crate) struct CountingWaker(AtomicUsize);

impl CountingWaker {
    /// A new counter and a waker that counts into it.
    pub(crate) fn waker() -> (Arc<CountingWaker>, Waker) {
        let counter = Arc::new(CountingWaker::default());
        (counter.clone(), Waker::from(counter))
    }

    /// How many times a waker of this counter was woken.
    pub(crate) fn wakes(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Polls `future` once with `waker`.
pub(crate) fn poll_once<F: Future + ?Sized>(future: Pin<&mut F>, waker: &Waker) -> Poll<F::Output> {
    future.poll(&mut Context::from_waker(waker))
}

/// Counts its drops.
#[derive(Debug)]
pub(crate) struct DropCounter(pub(crate) Arc<AtomicUsize>);

impl Drop for DropCounter {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A panic payload that panics again when it is dropped (`std::panic::panic_any` with it):
/// code that catches a panic of user code must not drop the payload unguarded.
pub(crate) struct PanicsWhenDropped;

impl Drop for PanicsWhenDropped {
    fn drop(&mut self) {
        panic!("the payload's own drop");
    }
}

/// Pushes its name to a shared log when dropped, so a test can check the order of drops.
pub(crate) struct Named<'a>(
    pub(crate) &'static str,
    pub(crate) &'a RefCell<Vec<&'static str>>,
);

impl Drop for Named<'_> {
    fn drop(&mut self) {
        self.1.borrow_mut().push(self.0);
    }
}

/// Spawns on `rt` two tasks that wake each other in turn through a channel until `stop`, so
/// that a worker running them always has one of them queued, each poll of either counted in
/// `polls`; returns their handles.
pub(crate) fn keep_waking_each_other(
    rt: &Runtime,
    stop: Arc<AtomicBool>,
    polls: Arc<AtomicUsize>,
) -> [JoinHandle<()>; 2] {
    use futures::channel::mpsc::unbounded;
    use futures::StreamExt;

    let (to_pong, mut pongs) = unbounded::<()>();
    let (to_ping, mut pings) = unbounded::<()>();
    let ping = {
        let polls = polls.clone();
        rt.spawn(async move {
            while !stop.load(Ordering::SeqCst) {
                polls.fetch_add(1, Ordering::SeqCst);
                to_pong.unbounded_send(()).unwrap();
                pings.next().await.unwrap();
            }
        })
    };
    let pong = rt.spawn(async move {
        while pongs.next().await.is_some() {
            polls.fetch_add(1, Ordering::SeqCst);
            // Gone once the ping task has stopped.
            let _ = to_ping.unbounded_send(());
        }
    });
    [ping, pong]
}

/// Awaits a task in `rt` with a generous real-time bound, so a task never run (a lost wake,
/// a task left where no worker takes it) fails the test instead of hanging it.
pub(crate) fn join_within<T: Send + 'static>(rt: &Runtime, task: JoinHandle<T>) -> T {
    let outcome =
        rt.block_on(async { escapement::time::timeout(Duration::from_secs(20), task).await });
    outcome
        .expect("the awaited task never finished: a wake was lost or a task left behind")
        .expect("the task did not panic")
}

/// Waits (really) until `done` holds, with a bound that only catches hangs.
pub(crate) fn wait_until(what: &str, done: impl Fn() -> bool) {
    let start = std::time::Instant::now();
    while !done() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "hung waiting: {what}"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Waits (really) until the task finished, with a bound that only catches hangs.
pub(crate) fn wait_finished<T>(handle: &JoinHandle<T>) {
    wait_until("the task to finish", || handle.is_finished());
}

/// Runs `body` on its own thread and fails if it takes longer than `limit` (a hang).
pub(crate) fn within<T: Send + 'static>(
    limit: Duration,
    body: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (done, outcome) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(panic::catch_unwind(AssertUnwindSafe(body)));
    });
    match outcome.recv_timeout(limit) {
        Ok(Ok(value)) => value,
        Ok(Err(payload)) => panic::resume_unwind(payload),
        Err(_) => panic!("hung for more than {limit:?}"),
    }
}

/// Records the thread it is dropped on.
pub(crate) struct DropsOn(pub(crate) Arc<Mutex<Option<ThreadId>>>);

impl Drop for DropsOn {
    fn drop(&mut self) {
        *self.0.lock().unwrap() = Some(std::thread::current().id());
    }
}

/// Long enough to mean "never" for a `block_in_place` closure waiting on the rest of the
/// runtime.
pub(crate) const PATIENCE: Duration = Duration::from_secs(20);

/// Called from a task on a runtime of one worker: `block_in_place` around `f`, which starts
/// only once the worker runs on another thread (a task queued on it has run), so that it is
/// never taken back.
pub(crate) fn block_once_the_worker_moved<R>(f: impl FnOnce() -> R) -> R {
    let (tx, rx) = mpsc::channel();
    drop(escapement::spawn(async move {
        let _ = tx.send(());
    }));
    escapement::task::block_in_place(|| {
        rx.recv_timeout(PATIENCE)
            .expect("the worker moved to another thread");
        f()
    })
}

/// The latest representable instant at or after `from` (halving the step each time).
pub(crate) fn far_from(from: Instant) -> Instant {
    let mut far = from;
    let mut step = Duration::MAX;
    while !step.is_zero() {
        match far.checked_add(step) {
            Some(later) => far = later,
            None => step /= 2,
        }
    }
    far
}

/// A future that never completes: its output is `!`.
pub(crate) async fn forever() -> ! {
    loop {
        std::future::pending::<()>().await;
    }
}

/// Holds a runtime; once dropped, it has dropped the runtime and sent on its channel (for a
/// runtime dropped by a thread-local's destructor).
pub(crate) struct HoldsTheRuntime(
    pub(crate) Option<Runtime>,
    pub(crate) std::sync::mpsc::Sender<()>,
);

impl Drop for HoldsTheRuntime {
    fn drop(&mut self) {
        drop(self.0.take());
        let _ = self.1.send(());
    }
}
