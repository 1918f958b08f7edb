//! A waker that panics when the timer driver wakes it. Wakers are user code, and the driver
//! runs them on worker 0 outside any task, where no task's harness would catch the panic: the
//! driver catches it and goes on. So the runtime's timers keep firing afterwards, on a
//! multi-threaded runtime and on a current-thread one, whose paused clock fires the waker in
//! the middle of the thread's park; and dropping the runtime returns instead of waiting for a
//! worker (`shutdown_timeout` is the control: it gives up waiting). A waker whose `clone`
//! panics as a sleep registers it leaves the sleep as it was: not elapsed when that was its
//! first poll, and still woken at its deadline when a later poll registered its task's waker
//! again. A panic whose payload panics as it drops costs worker 0 nothing either. A
//! `JoinSet` or a `LocalSet` polled with a waker whose `clone` panics, or holding one whose
//! drop panics when the next poll replaces it, lets the panic out of that poll and still
//! wakes the next poll's waker when its task completes. Each test that waits runs under a
//! watchdog, so a hang fails it.

mod support;

use std::future::{poll_fn, Future};
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, RawWaker, RawWakerVTable, Wake, Waker};
use std::time::Duration;

use escapement::task::{JoinSet, LocalSet};
use escapement::time::{sleep, Instant, Sleep};
use escapement::Runtime;
use futures::channel::oneshot;

use support::{running, wait_until, within, CountingWaker, PanicsWhenDropped};

/// Records that it was woken, then panics: with a payload whose drop panics too when the
/// second field says so.
struct PanickingWaker(AtomicBool, bool);

impl Wake for PanickingWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
        if self.1 {
            panic::panic_any(PanicsWhenDropped);
        }
        panic!("a waker panicked");
    }
}

/// Registers a 5 ms sleep on `rt` whose waker panics (with a payload that panics as it drops
/// if `bad_payload`); returns the waker and the sleep.
fn register_a_panicking_waker(
    rt: &Runtime,
    bad_payload: bool,
) -> (Arc<PanickingWaker>, Pin<Box<Sleep>>) {
    let waker = Arc::new(PanickingWaker(AtomicBool::new(false), bad_payload));
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
fn fire_a_panicking_waker(rt: &Runtime, bad_payload: bool) -> Pin<Box<Sleep>> {
    let (waker, delay) = register_a_panicking_waker(rt, bad_payload);
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
            let delay = fire_a_panicking_waker(&rt, false);
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
        let (waker, delay) = register_a_panicking_waker(&rt, false);
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

/// The driver must drop the caught payload with that second panic contained too: else it
/// unwinds out of worker 0, and with one worker nothing runs the task after it.
#[test]
fn a_waker_whose_panic_payload_panics_as_it_drops_costs_worker_0_nothing() {
    within(Duration::from_secs(30), || {
        let rt = running(1);
        let delay = fire_a_panicking_waker(&rt, true);
        let slept = rt.block_on(rt.spawn(async {
            sleep(Duration::from_millis(5)).await;
            3
        }));
        assert_eq!(slept.unwrap(), 3);
        drop(rt);
        drop(delay);
    });
}

#[test]
fn shutdown_timeout_after_a_waker_panicked_on_worker_0_returns() {
    within(Duration::from_secs(30), || {
        let rt = running(2);
        let delay = fire_a_panicking_waker(&rt, false);
        rt.shutdown_timeout(Duration::from_millis(100));
        drop(delay);
    });
}

/// A waker whose `clone` panics; waking or dropping it does nothing.
fn a_waker_whose_clone_panics() -> Waker {
    fn clone(_: *const ()) -> RawWaker {
        panic!("a waker's clone panicked")
    }
    fn nothing(_: *const ()) {}
    static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, nothing, nothing, nothing);
    // SAFETY: no function of the vtable reads the data pointer; waking and dropping do nothing,
    // which keeps the contract, and `clone` unwinds instead of returning.
    unsafe { Waker::from_raw(RawWaker::new(std::ptr::null(), &VTABLE)) }
}

/// Polls `delay` with a waker whose clone panics, and checks that the panic came through.
fn poll_with_a_panicking_clone(delay: Pin<&mut Sleep>) {
    let waker = a_waker_whose_clone_panics();
    let polled = panic::catch_unwind(AssertUnwindSafe(|| {
        delay.poll(&mut Context::from_waker(&waker))
    }));
    assert!(polled.is_err(), "the clone's panic came out of the poll");
}

#[test]
fn a_sleep_whose_first_poll_panicked_in_the_wakers_clone_is_not_elapsed() {
    let rt = running(1);
    let _guard = rt.enter();
    let mut delay = Box::pin(sleep(Duration::from_secs(3600)));
    poll_with_a_panicking_clone(delay.as_mut());
    assert!(!delay.is_elapsed());
    let polled = delay.as_mut().poll(&mut Context::from_waker(Waker::noop()));
    assert_eq!(
        polled,
        Poll::Pending,
        "an hour-long sleep completed at once"
    );
    assert!(!delay.is_elapsed());
}

#[test]
fn a_sleep_whose_later_poll_panicked_in_the_wakers_clone_still_wakes_its_task() {
    within(Duration::from_secs(30), || {
        let rt = running(2);
        rt.block_on(async {
            let start = Instant::now();
            let mut delay = Box::pin(sleep(Duration::from_millis(20)));
            // Registered with the task's waker, then again with the one whose clone panics.
            poll_fn(|cx| {
                assert!(delay.as_mut().poll(cx).is_pending());
                Poll::Ready(())
            })
            .await;
            poll_with_a_panicking_clone(delay.as_mut());
            // The task's waker goes in again, and the fire reaches it.
            delay.as_mut().await;
            assert!(start.elapsed() >= Duration::from_millis(20));
        });
    });
}

/// A waker whose clones panic when they are dropped; waking, and dropping the waker itself,
/// do nothing.
fn a_waker_whose_clones_panic_when_dropped() -> Waker {
    static CLONE: u8 = 0;
    fn clone(_: *const ()) -> RawWaker {
        RawWaker::new(&CLONE as *const u8 as *const (), &VTABLE)
    }
    fn nothing(_: *const ()) {}
    fn drop(data: *const ()) {
        if !data.is_null() {
            panic!("a waker's drop panicked");
        }
    }
    static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, nothing, nothing, drop);
    // SAFETY: no function of the vtable dereferences the data pointer, which only tells a
    // clone from the original; waking does nothing, so there is nothing for it to release.
    unsafe { Waker::from_raw(RawWaker::new(std::ptr::null(), &VTABLE)) }
}

/// What holds the waker of the code that awaits it: a `JoinSet` or a `LocalSet`, with one
/// task that waits for a message.
trait Waiter {
    /// Polls for the task's completion with `waker`; true once it has completed.
    fn poll_with(&mut self, waker: &Waker) -> bool;
}

impl Waiter for JoinSet<()> {
    fn poll_with(&mut self, waker: &Waker) -> bool {
        match self.poll_join_next(&mut Context::from_waker(waker)) {
            Poll::Ready(Some(outcome)) => {
                outcome.expect("the task completes");
                true
            }
            Poll::Ready(None) => panic!("the set was empty"),
            Poll::Pending => false,
        }
    }
}

impl Waiter for LocalSet {
    fn poll_with(&mut self, waker: &Waker) -> bool {
        Pin::new(self)
            .poll(&mut Context::from_waker(waker))
            .is_ready()
    }
}

/// A `JoinSet` and a `LocalSet` in `rt`, each with one task that waits for a message, and
/// the senders of the messages.
fn waiters(rt: &Runtime) -> Vec<(Box<dyn Waiter>, oneshot::Sender<()>)> {
    let _guard = rt.enter();
    let (to_joined, joined) = oneshot::channel::<()>();
    let mut set = JoinSet::new();
    set.spawn(async move { joined.await.unwrap() });
    let (to_local, local) = oneshot::channel::<()>();
    let local_set = LocalSet::new();
    local_set.spawn_local(async move { local.await.unwrap() });
    vec![
        (Box::new(set) as Box<dyn Waiter>, to_joined),
        (Box::new(local_set), to_local),
    ]
}

/// Registers `counting` with `waiter` (its poll pending), completes the task, and checks that
/// the completion woke it and that the next poll sees the task done.
fn completion_wakes(
    waiter: &mut dyn Waiter,
    counter: &CountingWaker,
    counting: &Waker,
    send: oneshot::Sender<()>,
) {
    send.send(()).unwrap();
    wait_until("the task's completion wakes the waiter", || {
        counter.wakes() > 0
    });
    // The set's task has completed (the `JoinSet`), or runs in this poll (the `LocalSet`).
    assert!(waiter.poll_with(counting), "the task completed");
}

#[test]
fn a_join_set_or_local_set_polled_with_a_waker_whose_clone_panics_registers_the_next_one() {
    within(Duration::from_secs(30), || {
        let rt = running(2);
        let _guard = rt.enter();
        for (mut waiter, send) in waiters(&rt) {
            let bad = a_waker_whose_clone_panics();
            let polled = panic::catch_unwind(AssertUnwindSafe(|| waiter.poll_with(&bad)));
            assert!(polled.is_err(), "the clone's panic came out of the poll");
            let (counter, counting) = CountingWaker::waker();
            assert!(!waiter.poll_with(&counting));
            assert_eq!(counter.wakes(), 0, "woken before the task completed");
            completion_wakes(&mut *waiter, &counter, &counting, send);
        }
    });
}

#[test]
fn a_join_set_or_local_set_whose_old_waker_panics_as_it_drops_keeps_the_new_one() {
    within(Duration::from_secs(30), || {
        let rt = running(2);
        let _guard = rt.enter();
        for (mut waiter, send) in waiters(&rt) {
            assert!(!waiter.poll_with(&a_waker_whose_clones_panic_when_dropped()));
            let (counter, counting) = CountingWaker::waker();
            // Registering the new waker drops the old clone, whose panic comes out.
            let polled = panic::catch_unwind(AssertUnwindSafe(|| waiter.poll_with(&counting)));
            assert!(
                polled.is_err(),
                "the old waker's panic came out of the poll"
            );
            assert_eq!(counter.wakes(), 0, "woken before the task completed");
            completion_wakes(&mut *waiter, &counter, &counting, send);
        }
    });
}
