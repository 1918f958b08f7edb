//! Model 6: the driver shuts down while a task registers a timer and polls it again. The
//! task either sees the shutdown or, if its last poll was `Pending`, is woken by it; no timer
//! is left linked. And while the owner of a registered timer drops it: the shutdown marks the
//! entry `CLOSING` while it takes the waker and `SHUTDOWN` after its last access, so a drop
//! that sees anything but `SHUTDOWN` (or `FIRED`) must take the lock before the entry is
//! freed.
#![cfg(loom)]

use escapement::loom_api::{Driver, TimerPoll};
use escapement_loom_tests::{counting_waker, registered_timer};
use loom::thread;

#[test]
fn shutdown_racing_registration_and_polling() {
    loom::model(|| {
        let (driver, _worker0) = Driver::new(true);
        let shutdown = {
            let driver = driver.clone();
            thread::spawn(move || driver.shutdown())
        };

        let mut timer = driver.timer(5);
        let (waker, wakes) = counting_waker();
        let first = timer.poll(&waker);
        let second = if first == TimerPoll::Pending {
            timer.poll(&waker)
        } else {
            first
        };
        shutdown.join().unwrap();

        assert_ne!(
            second,
            TimerPoll::Ready,
            "a timer never fires because of a shutdown"
        );
        if second == TimerPoll::Pending {
            assert_eq!(
                wakes.count(),
                1,
                "a task waiting on a timer is woken at shutdown"
            );
            assert_eq!(timer.poll(&waker), TimerPoll::Shutdown);
        }
        assert_eq!(driver.pending(), 0, "shutdown leaves nothing linked");
        drop(timer);
    });
}

#[test]
fn shutdown_racing_the_owner_dropping_its_timer() {
    loom::model(|| {
        let (driver, _worker0) = Driver::new(true);
        let (timer, _waker, wakes) = registered_timer(&driver, 5);
        let owner = thread::spawn(move || drop(timer));
        driver.shutdown();
        owner.join().unwrap();
        assert!(wakes.count() <= 1);
        assert_eq!(driver.pending(), 0, "shutdown leaves nothing linked");
    });
}
