//! Model 5: the waker of a firing timer drops another registered timer while it is being
//! woken. Wakers run after the driver lock is released, so the drop (which may take the
//! lock) cannot deadlock, whether the other timer is due in the same batch or later. The same
//! holds for the wakers a shutdown wakes: one that resets a timer never polled (which takes
//! the lock, where dropping a timer the shutdown closed does not) must not find it held; and
//! for the waker a reset into the past wakes at once, on the owner's thread.
#![cfg(loom)]

use std::task::{RawWaker, RawWakerVTable, Waker};

use escapement::loom_api::{Driver, Timer, TimerPoll};
use escapement_loom_tests::{counting_waker, process_on_worker0, Wakes};
use loom::sync::{Arc, Mutex};
use loom::thread;

/// Another timer, and what a waker does to it when woken: resets it to `reset_to`, if set,
/// then drops it.
struct Slot {
    timer: Mutex<Option<Timer>>,
    reset_to: Option<u64>,
}

impl Slot {
    fn new(timer: Timer, reset_to: Option<u64>) -> Arc<Slot> {
        Arc::new(Slot {
            timer: Mutex::new(Some(timer)),
            reset_to,
        })
    }

    fn take_and_drop(&self) {
        let timer = self.timer.lock().unwrap().take();
        if let (Some(mut timer), Some(tick)) = (timer, self.reset_to) {
            timer.reset(tick);
        }
    }

    fn is_empty(&self) -> bool {
        self.timer.lock().unwrap().is_none()
    }
}

/// A waker that, when woken, does to the timer in its slot what the slot says.
fn dropping_waker(slot: Arc<Slot>) -> Waker {
    let raw = RawWaker::new(Arc::into_raw(slot).cast(), &VTABLE);
    // SAFETY: the vtable treats the pointer as an `Arc<Slot>` holding one count, which
    // `into_raw` gave it.
    unsafe { Waker::from_raw(raw) }
}

static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, wake, wake_by_ref, drop_waker);

unsafe fn clone(ptr: *const ()) -> RawWaker {
    // SAFETY: the waker holds a count.
    unsafe { Arc::increment_strong_count(ptr.cast::<Slot>()) };
    RawWaker::new(ptr, &VTABLE)
}

unsafe fn wake(ptr: *const ()) {
    // SAFETY: the waker's count passes to this `Arc`.
    let slot = unsafe { Arc::from_raw(ptr.cast::<Slot>()) };
    slot.take_and_drop();
}

unsafe fn wake_by_ref(ptr: *const ()) {
    // SAFETY: the waker holds a count; the slot lives while it does.
    unsafe { &*ptr.cast::<Slot>() }.take_and_drop();
}

unsafe fn drop_waker(ptr: *const ()) {
    // SAFETY: the waker's count is released here.
    drop(unsafe { Arc::from_raw(ptr.cast::<Slot>()) });
}

/// Two registered timers: the other, due at `other_tick`, in a slot, and the first, due at
/// `first_tick`, whose waker drops the other. Returns the first, the slot, and the other's
/// wakes.
fn first_dropping_another(
    driver: &Driver,
    first_tick: u64,
    other_tick: u64,
) -> (Timer, Arc<Slot>, Wakes) {
    let (plain, other_wakes) = counting_waker();
    let mut other = driver.timer(other_tick);
    assert_eq!(other.poll(&plain), TimerPoll::Pending);
    let slot = Slot::new(other, None);
    let mut first = driver.timer(first_tick);
    assert_eq!(
        first.poll(&dropping_waker(slot.clone())),
        TimerPoll::Pending
    );
    (first, slot, other_wakes)
}

fn model(other_tick: u64) {
    loom::model(move || {
        let (driver, _worker0) = Driver::new(true);
        let (first, slot, other_wakes) = first_dropping_another(&driver, 5, other_tick);

        let worker0 = process_on_worker0(&driver, 5);
        // Meanwhile the owner may drop the other timer itself.
        slot.take_and_drop();
        let fired = worker0.join().unwrap();

        assert!(slot.is_empty(), "the other timer was dropped");
        assert!(fired >= 1, "the first timer fired");
        assert!(other_wakes.count() <= 1);
        assert_eq!(driver.process(other_tick), 0);
        assert_eq!(driver.pending(), 0);
        drop(first);
    });
}

#[test]
fn waker_drops_a_timer_due_later() {
    model(9);
}

#[test]
fn waker_drops_a_timer_due_in_the_same_batch() {
    model(5);
}

#[test]
fn a_waker_woken_by_shutdown_resets_a_timer_never_polled() {
    loom::model(|| {
        let (driver, _worker0) = Driver::new(true);
        let slot = Slot::new(driver.timer(9), Some(7));
        let mut first = driver.timer(5);
        assert_eq!(
            first.poll(&dropping_waker(slot.clone())),
            TimerPoll::Pending
        );

        let shutdown = {
            let driver = driver.clone();
            thread::spawn(move || driver.shutdown())
        };
        // Meanwhile the owner may reset and drop the other timer itself.
        slot.take_and_drop();
        shutdown.join().unwrap();

        assert!(slot.is_empty(), "the other timer was dropped");
        assert_eq!(driver.pending(), 0, "shutdown leaves nothing linked");
        drop(first);
    });
}

/// A reset to a tick already passed fires the timer at once, on the owner's thread: its
/// waker, which drops another timer of the same shard, must run after the shard's lock is
/// released, as the driver's wakes do.
#[test]
fn a_reset_into_the_past_wakes_after_the_lock() {
    loom::model(|| {
        let (driver, _worker0) = Driver::new(true);
        let (mut first, slot, _) = first_dropping_another(&driver, 5, 10);
        driver.advance(2);
        first.reset(1);
        assert!(slot.is_empty(), "the waker dropped the other timer");
        assert_eq!(driver.pending(), 0);
    });
}
