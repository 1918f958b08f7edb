//! Model 2: a timer is dropped (cancelled) while worker 0 fires it. Neither side deadlocks,
//! the waker is woken at most once, nothing is left linked, and the driver never touches the
//! entry after its drop returns (the runtime's loom build checks that last point: the driver
//! reads a loom cell of the entry on every access, and the entry writes it as it dies).
#![cfg(loom)]

use escapement::loom_api::{Driver, TimerPoll};
use escapement_loom_tests::{counting_waker, process_on_worker0, registered_timer};
use loom::thread;

#[test]
fn drop_racing_fire() {
    loom::model(|| {
        let (driver, _worker0) = Driver::new(true);
        let (timer, _waker, wakes) = registered_timer(&driver, 5);

        let worker0 = process_on_worker0(&driver, 5);
        drop(timer);
        let fired = worker0.join().unwrap();

        assert!(fired <= 1);
        assert_eq!(
            wakes.count(),
            fired,
            "a fired timer wakes once; a cancelled one never"
        );
        assert_eq!(
            driver.pending(),
            0,
            "the dropped timer is not left in the wheel"
        );
    });
}

#[test]
fn drop_of_a_never_polled_timer_racing_fire_of_another() {
    loom::model(|| {
        let (driver, _worker0) = Driver::new(true);
        let mut polled = driver.timer(5);
        let unpolled = driver.timer(5);
        let (waker, wakes) = counting_waker();
        assert_eq!(polled.poll(&waker), TimerPoll::Pending);

        let worker0 = process_on_worker0(&driver, 5);
        drop(unpolled);
        drop(polled);
        let fired = worker0.join().unwrap();
        assert_eq!(wakes.count(), fired);
        assert_eq!(driver.pending(), 0);
    });
}

/// As `drop_racing_fire`, with the owner on a thread of its own and worker 0 on the model's
/// main thread. Since a timer's drop also lets go of its counted driver reference (an atomic
/// decrement), loom no longer schedules the fire before the owner's read of the state in the
/// two models above, with or without a preemption bound; in this one it does, and it is the
/// one that catches a driver that publishes `FIRED` too weakly or an owner that skips the lock
/// while the driver fires.
#[test]
fn drop_on_another_thread_racing_fire() {
    loom::model(|| {
        let (driver, _worker0) = Driver::new(true);
        let (timer, _waker, wakes) = registered_timer(&driver, 5);

        let owner = thread::spawn(move || drop(timer));
        let fired = driver.process(5);
        owner.join().unwrap();

        assert!(fired <= 1);
        assert_eq!(wakes.count(), fired);
        assert_eq!(driver.pending(), 0);
    });
}
