//! Model 8c: the activity count behind auto-advance. A thread registers a timer on a paused
//! clock and parks, as `block_on` does, while worker 0 goes idle. Once both are idle the
//! clock must jump to the timer and fire it, waking the parked thread; the count must never
//! read zero while a thread is about to run, or the clock would jump under it. And
//! `time::advance` racing worker 0, which has just taken the due timer out of the wheel: the
//! advance completes only once that timer's waker was woken.
#![cfg(loom)]

use std::task::{RawWaker, RawWakerVTable, Waker};

use escapement::loom_api::{Driver, Parker, TimerPoll, Unparker};
use escapement_loom_tests::{process_on_worker0, registered_timer};
use loom::sync::Arc;
use loom::thread;

fn unparking_waker(unparker: Unparker) -> Waker {
    let raw = RawWaker::new(Arc::into_raw(Arc::new(unparker)).cast(), &VTABLE);
    // SAFETY: the vtable treats the pointer as an `Arc<Unparker>` holding one count.
    unsafe { Waker::from_raw(raw) }
}

static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, wake, wake_by_ref, drop_waker);

unsafe fn clone(ptr: *const ()) -> RawWaker {
    // SAFETY: the waker holds a count.
    unsafe { Arc::increment_strong_count(ptr.cast::<Unparker>()) };
    RawWaker::new(ptr, &VTABLE)
}

unsafe fn wake(ptr: *const ()) {
    // SAFETY: the waker's count passes to this `Arc`.
    unsafe { Arc::from_raw(ptr.cast::<Unparker>()) }.unpark();
}

unsafe fn wake_by_ref(ptr: *const ()) {
    // SAFETY: the waker holds a count.
    unsafe { &*ptr.cast::<Unparker>() }.unpark();
}

unsafe fn drop_waker(ptr: *const ()) {
    // SAFETY: the waker's count is released here.
    drop(unsafe { Arc::from_raw(ptr.cast::<Unparker>()) });
}

#[test]
fn the_clock_jumps_once_everything_is_idle() {
    loom::model(|| {
        let (driver, mut worker0) = Driver::new(true);
        // The `block_on` thread is active while it runs.
        driver.activate();
        let (parker, unparker) = Parker::new(&driver);
        let mut timer = driver.timer(5);
        assert_eq!(timer.poll(&unparking_waker(unparker)), TimerPoll::Pending);

        let worker0 = thread::spawn(move || {
            // Worker 0's idle loop: advance if it is the only active thread, else park.
            while !worker0.try_auto_advance() {
                worker0.park();
            }
        });
        // `block_on` parks until the timer's waker unparks it.
        parker.park();
        assert_eq!(
            driver.now_tick(),
            5,
            "the clock jumped exactly to the timer"
        );
        assert!(timer.is_elapsed());
        driver.deactivate();
        worker0.join().unwrap();
    });
}

/// A thread that becomes active while worker 0 is deciding to advance (a thread entering
/// `block_on`) reads one time for as long as it stays active: either worker 0 saw it and did
/// not advance, or the clock moved before the thread went on.
#[test]
fn the_clock_does_not_jump_under_a_thread_that_became_active() {
    loom::model(|| {
        let (driver, worker0) = Driver::new(true);
        let _timer = {
            let (parker, unparker) = Parker::new(&driver);
            drop(parker);
            let mut timer = driver.timer(5);
            assert_eq!(timer.poll(&unparking_waker(unparker)), TimerPoll::Pending);
            timer
        };
        let entering = {
            let driver = driver.clone();
            thread::spawn(move || {
                driver.activate();
                let first = driver.now_tick();
                let second = driver.now_tick();
                driver.deactivate();
                (first, second)
            })
        };
        let advanced = worker0.try_auto_advance();
        let (first, second) = entering.join().unwrap();
        assert_eq!(first, second, "the clock moved while the thread was active");
        assert_eq!(driver.now_tick(), if advanced { 5 } else { 0 });
    });
}

#[test]
fn advance_waits_for_the_wakes_of_a_batch_another_thread_took() {
    loom::model(|| {
        let (driver, _worker0) = Driver::new(true);
        let (_timer, _waker, wakes) = registered_timer(&driver, 5);
        let worker0 = process_on_worker0(&driver, 5);
        driver.advance_and_fire(5);
        assert_eq!(
            wakes.count(),
            1,
            "advance completed before the due timer's waker was woken"
        );
        worker0.join().unwrap();
    });
}
