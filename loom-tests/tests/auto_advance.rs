//! Model 8c: the activity count behind auto-advance. A thread registers a timer on a paused
//! clock and parks, as `block_on` does, while worker 0 goes idle. Once both are idle the clock
//! must jump to the timer and fire it, waking the parked thread; the count must never read zero
//! while a thread is about to run, or the clock would jump under it: neither one entering
//! `block_on`, nor one woken from outside the runtime, which an unpark counts before its token
//! can be seen. And `time::advance` racing worker 0, which has just taken the due timer out of
//! the wheel, or racing another `advance`: the advance completes only once that timer's waker
//! was woken. And with auto-advance held back (a blocking closure runs), a timer registered
//! already due on a clock that ran ahead of the wheel still fires: worker 0 catches the wheel
//! up before it blocks. And the whole runtime with one worker, whose task awaits a sleep while
//! a plain thread wakes it: the clock must not move past the sleep between the thread marking
//! the task woken and queueing it (mutant 98); and the same with the task aborted, which must
//! be dropped by its sleep's deadline (mutant 99).
#![cfg(loom)]

use std::task::{RawWaker, RawWakerVTable, Waker};

use escapement::loom_api::{Driver, Parker, TimerPoll, Unparker};
use escapement_loom_tests::{process_on_worker0, registered_timer};
use loom::sync::atomic::{AtomicBool, Ordering};
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

/// A thread parked in `block_on`, woken from outside the runtime (a thread the count does not
/// hold) while worker 0 decides whether to advance. The woken thread is counted active before
/// it can run, so what it reads is what worker 0 decided: the jump if worker 0 advanced (it
/// did so while the thread slept), the old time if not. The unparker must count it active
/// before its token can be seen: a thread that takes the token before its condvar wait would
/// otherwise run while the count still reads idle.
#[test]
fn a_thread_woken_from_outside_is_counted_before_it_runs() {
    loom::model(|| {
        let (driver, worker0) = Driver::new(true);
        let (_timer, _waker, _wakes) = registered_timer(&driver, 5);
        // This thread runs a `block_on`: active until its park.
        driver.activate();
        let (parker, unparker) = Parker::new(&driver);
        let outside = thread::spawn(move || unparker.unpark());
        let worker0 = thread::spawn(move || worker0.try_auto_advance());
        parker.park();
        // Active again, and it stays so: worker 0 may not advance from here on.
        let read = driver.now_tick();
        let advanced = worker0.join().unwrap();
        outside.join().unwrap();
        assert_eq!(
            read,
            if advanced { 5 } else { 0 },
            "the clock jumped under a woken thread"
        );
        driver.deactivate();
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

/// Two `advance`s at once (tasks on two workers): the one that finds the timer already taken
/// out of the wheel waits for the other's wake of it.
#[test]
fn advance_waits_for_the_wakes_of_another_advance() {
    loom::model(|| {
        let (driver, _worker0) = Driver::new(true);
        let (_timer, _waker, wakes) = registered_timer(&driver, 5);
        let other = {
            let driver = driver.clone();
            thread::spawn(move || driver.advance_and_fire(5))
        };
        driver.advance_and_fire(5);
        assert_eq!(
            wakes.count(),
            1,
            "advance completed before the due timer's waker was woken"
        );
        other.join().unwrap();
    });
}

/// The clock ran to tick 90 while nothing came due, so the wheel is still at tick 0, with a
/// timer for tick 100 in the 64-tick slot that starts at 64. Worker 0 must not block toward
/// that slot's start, which the clock has passed: a timer then registered for tick 70 (due,
/// but later than the slot's start) would wake no one, and auto-advance, held back by an
/// active thread, would never come.
#[test]
fn a_due_timer_fires_while_auto_advance_is_held_back_and_the_wheel_lags() {
    loom::model(|| {
        let (driver, mut worker0) = Driver::new(true);
        // This thread is active, as a `block_on` thread is while it runs (its park below
        // counts it idle), and so is a blocking closure, throughout.
        driver.activate();
        driver.activate();
        let (_later, _waker, _wakes) = registered_timer(&driver, 100);
        driver.advance(90);
        let stop = Arc::new(AtomicBool::new(false));
        let worker0 = {
            let stop = stop.clone();
            thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    worker0.fire_due();
                    worker0.park();
                }
            })
        };
        let (parker, unparker) = Parker::new(&driver);
        // Made before the clock passed it, as `sleep(70 ms)` at tick 0: its poll registers.
        let mut due = driver.timer_from_now(70);
        if due.poll(&unparking_waker(unparker)) == TimerPoll::Pending {
            parker.park();
        }
        assert!(due.is_elapsed());
        stop.store(true, Ordering::SeqCst);
        driver.unpark_worker0();
        worker0.join().unwrap();
        driver.deactivate();
        driver.deactivate();
    });
}

/// The whole runtime with one worker on a paused clock: a task awaits a sleep of 1 ms (and
/// holds one of 3 ms, so the clock has somewhere to go after it) while a plain thread, which
/// the runtime does not count, wakes the task. Whatever the order, the task must see its
/// sleep complete at 1 ms. If the thread marks the idle task woken and is held up before it
/// queues it, worker 0 fires the sleep (whose wake finds the task marked and adds nothing),
/// finds no work, and must not move the clock to 3 ms: the waking thread holds it until the
/// task is queued.
#[test]
fn a_task_woken_from_outside_sees_its_sleep_complete_on_time() {
    let mut model = loom::model::Builder::new();
    // The whole runtime: bounded as the other whole-runtime models are.
    model.preemption_bound = Some(2);
    model.check(|| {
        use std::future::Future;

        use escapement::time::{sleep, Duration, Instant};

        let runtime = escapement::Builder::new()
            .worker_threads(1)
            .start_paused(true)
            .build()
            .unwrap();
        let waited = runtime.block_on(async {
            escapement::spawn(async {
                let start = Instant::now();
                let mut due = std::pin::pin!(sleep(Duration::from_millis(1)));
                let mut later = std::pin::pin!(sleep(Duration::from_millis(3)));
                let mut outside = None;
                std::future::poll_fn(|cx| {
                    let waker = cx.waker().clone();
                    outside.get_or_insert_with(|| thread::spawn(move || waker.wake()));
                    let _ = later.as_mut().poll(cx);
                    due.as_mut().poll(cx)
                })
                .await;
                let waited = start.elapsed();
                outside.take().unwrap().join().unwrap();
                waited
            })
            .await
            .unwrap()
        });
        assert_eq!(
            waited,
            Duration::from_millis(1),
            "the clock moved past the sleep before its task ran"
        );
    });
}

/// As the model above, but the plain thread aborts the task: the abort marks the task
/// cancelled before it queues it, and the clock must not move past the task's sleep of 1 ms
/// in between, so the task's future is dropped (by the abort or on completion) at 1 ms at the
/// latest.
#[test]
fn a_task_aborted_from_outside_is_dropped_before_its_sleep_is_due() {
    let mut model = loom::model::Builder::new();
    // The whole runtime: bounded as the other whole-runtime models are.
    model.preemption_bound = Some(2);
    model.check(|| {
        use std::future::Future;
        use std::sync::Mutex;

        use escapement::time::{sleep, Duration, Instant};

        /// Leaves in its cell how long after its instant it was dropped.
        struct DropTime(Instant, std::sync::Arc<Mutex<Option<Duration>>>);

        impl Drop for DropTime {
            fn drop(&mut self) {
                *self.1.lock().unwrap() = Some(self.0.elapsed());
            }
        }

        let runtime = escapement::Builder::new()
            .worker_threads(1)
            .start_paused(true)
            .build()
            .unwrap();
        // A std lock: held only for a store or a load, with no loom step inside.
        let dropped = std::sync::Arc::new(Mutex::new(None));
        runtime.block_on(async {
            let guard = DropTime(Instant::now(), dropped.clone());
            let task = escapement::spawn(async move {
                let _guard = guard;
                let mut due = std::pin::pin!(sleep(Duration::from_millis(1)));
                let mut later = std::pin::pin!(sleep(Duration::from_millis(3)));
                std::future::poll_fn(|cx| {
                    let _ = later.as_mut().poll(cx);
                    due.as_mut().poll(cx)
                })
                .await;
            });
            let abort = task.abort_handle();
            let outside = thread::spawn(move || abort.abort());
            let _ = task.await;
            outside.join().unwrap();
        });
        let dropped = dropped.lock().unwrap().take().unwrap();
        assert!(
            dropped <= Duration::from_millis(1),
            "the clock moved past the sleep before the aborted task was dropped ({dropped:?})"
        );
    });
}
