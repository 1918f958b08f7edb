//! A waker that panics when the timer driver wakes it. Wakers are user code, and the driver
//! runs them on worker 0 outside any task, where no task's harness would catch the panic: the
//! driver catches it and goes on. So the runtime's timers keep firing afterwards, on a
//! multi-threaded runtime and on a current-thread one, whose paused clock fires the waker in
//! the middle of the thread's park; and dropping the runtime returns instead of waiting for a
//! worker (`shutdown_timeout` is the control: it gives up waiting). Each test runs under a
//! watchdog, so a hang fails it.

mod support;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use escapement::time::{sleep, Sleep};
use escapement::Runtime;

use support::{running, within};

/// Records that it was woken, then panics.
struct PanickingWaker(AtomicBool);

impl Wake for PanickingWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
        panic!("a waker panicked");
    }
}

/// Registers a 5 ms sleep on `rt` whose waker panics; returns the waker and the sleep.
fn register_a_panicking_waker(rt: &Runtime) -> (Arc<PanickingWaker>, Pin<Box<Sleep>>) {
    let waker = Arc::new(PanickingWaker(AtomicBool::new(false)));
    let mut delay = {
        let _guard = rt.enter();
        Box::pin(sleep(Duration::from_millis(5)))
    };
    let polled = delay
        .as_mut()
        .poll(&mut Context::from_waker(&Waker::from(waker.clone())));
    assert_eq!(polled, Poll::Pending);
    (waker, delay)
}

/// Registers a short sleep whose waker panics, and waits until the driver woke it.
fn fire_a_panicking_waker(rt: &Runtime) -> Pin<Box<Sleep>> {
    let (waker, delay) = register_a_panicking_waker(rt);
    let begin = std::time::Instant::now();
    while !waker.0.load(Ordering::SeqCst) {
        assert!(begin.elapsed() < Duration::from_secs(10), "never fired");
        std::thread::sleep(Duration::from_millis(1));
    }
    std::thread::sleep(Duration::from_millis(20));
    delay
}

#[test]
fn dropping_the_runtime_after_a_waker_panicked_on_worker_0_returns() {
    for workers in [1, 3] {
        within(Duration::from_secs(30), move || {
            let rt = running(workers);
            let delay = fire_a_panicking_waker(&rt);
            rt.block_on(async { sleep(Duration::from_millis(5)).await });
            drop(rt);
            drop(delay);
        });
    }
}

#[test]
fn a_current_thread_runtime_fires_timers_after_a_waker_panicked_in_its_park() {
    within(Duration::from_secs(30), || {
        let rt = escapement::Builder::new_current_thread()
            .start_paused(true)
            .build()
            .expect("a runtime");
        let (waker, delay) = register_a_panicking_waker(&rt);
        // With nothing else to do, the thread jumps the clock to 5 ms as it parks, and fires
        // the panicking waker there; the later sleep needs the thread to go on driving.
        rt.block_on(async { sleep(Duration::from_millis(50)).await });
        assert!(
            waker.0.load(Ordering::SeqCst),
            "the panicking waker was woken"
        );
        rt.block_on(async { sleep(Duration::from_millis(50)).await });
        drop(delay);
    });
}

#[test]
fn shutdown_timeout_after_a_waker_panicked_on_worker_0_returns() {
    within(Duration::from_secs(30), || {
        let rt = running(2);
        let delay = fire_a_panicking_waker(&rt);
        rt.shutdown_timeout(Duration::from_millis(100));
        drop(delay);
    });
}
