//! Model 5: the waker of a firing timer drops another registered timer while it is being
//! woken. Wakers run after the driver lock is released, so the drop (which may take the
//! lock) cannot deadlock, whether the other timer is due in the same batch or later.
#![cfg(loom)]

use std::task::{RawWaker, RawWakerVTable, Waker};

use escapement::loom_api::{Driver, Timer, TimerPoll};
use escapement_loom_tests::{counting_waker, process_on_worker0};
use loom::sync::{Arc, Mutex};

/// A waker that, when woken, drops the timer in its slot.
fn dropping_waker(slot: Arc<Mutex<Option<Timer>>>) -> Waker {
    let raw = RawWaker::new(Arc::into_raw(slot).cast(), &VTABLE);
    // SAFETY: the vtable treats the pointer as an `Arc<Mutex<Option<Timer>>>` holding one
    // count, which `into_raw` gave it.
    unsafe { Waker::from_raw(raw) }
}

type Slot = Mutex<Option<Timer>>;

static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, wake, wake_by_ref, drop_waker);

unsafe fn clone(ptr: *const ()) -> RawWaker {
    // SAFETY: the waker holds a count.
    unsafe { Arc::increment_strong_count(ptr.cast::<Slot>()) };
    RawWaker::new(ptr, &VTABLE)
}

unsafe fn wake(ptr: *const ()) {
    // SAFETY: the waker's count passes to this `Arc`.
    let slot = unsafe { Arc::from_raw(ptr.cast::<Slot>()) };
    let timer = slot.lock().unwrap().take();
    drop(timer);
}

unsafe fn wake_by_ref(ptr: *const ()) {
    // SAFETY: the waker holds a count; the slot lives while it does.
    let timer = unsafe { &*ptr.cast::<Slot>() }.lock().unwrap().take();
    drop(timer);
}

unsafe fn drop_waker(ptr: *const ()) {
    // SAFETY: the waker's count is released here.
    drop(unsafe { Arc::from_raw(ptr.cast::<Slot>()) });
}

fn model(other_tick: u64) {
    loom::model(move || {
        let (driver, _worker0) = Driver::new(true);
        let (plain, other_wakes) = counting_waker();
        let mut other = driver.timer(other_tick);
        assert_eq!(other.poll(&plain), TimerPoll::Pending);
        let slot = Arc::new(Mutex::new(Some(other)));

        let mut first = driver.timer(5);
        assert_eq!(
            first.poll(&dropping_waker(slot.clone())),
            TimerPoll::Pending
        );

        let worker0 = process_on_worker0(&driver, 5);
        // Meanwhile the owner may drop the other timer itself.
        let mine = slot.lock().unwrap().take();
        drop(mine);
        let fired = worker0.join().unwrap();

        assert!(
            slot.lock().unwrap().is_none(),
            "the other timer was dropped"
        );
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
