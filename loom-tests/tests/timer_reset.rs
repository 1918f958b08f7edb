//! Model 3: the owner resets a timer while worker 0 fires it, to a later deadline (the
//! lock-free path: a compare-and-swap on the state) and to an earlier one (under the lock).
//! The timer then fires at its new deadline, never at the old one, and exactly once, also
//! when worker 0 reaches the old deadline through a cascade that reads the moved one.
#![cfg(loom)]

use escapement::loom_api::{Driver, TimerPoll};
use escapement_loom_tests::{process_on_worker0, registered_timer};

/// A timer armed for `armed` is reset to `moved` while worker 0 processes `armed`; `other`,
/// if given, is a second timer due after `armed`, left alone. Whoever wins, the timer then
/// waits for `moved` and fires there once; `other` fires at its own deadline.
fn reset_later_racing_worker0(armed: u64, moved: u64, other: Option<u64>) {
    loom::model(move || {
        let (driver, _worker0) = Driver::new(true);
        let (mut timer, waker, wakes) = registered_timer(&driver, armed);
        let mut other = other.map(|tick| (tick, registered_timer(&driver, tick)));

        let worker0 = process_on_worker0(&driver, armed);
        timer.reset(moved);
        worker0.join().unwrap();

        assert_eq!(
            timer.poll(&waker),
            TimerPoll::Pending,
            "fired at the old deadline"
        );
        let early = wakes.count();
        if let Some((tick, (other, other_waker, _))) = &mut other {
            assert_eq!(
                driver.process(*tick),
                1,
                "the other timer, at its own deadline"
            );
            assert_eq!(other.poll(other_waker), TimerPoll::Ready);
        }
        assert_eq!(
            driver.process(moved - 1),
            0,
            "fired before the new deadline"
        );
        assert_eq!(driver.process(moved), 1, "fires once, at the new deadline");
        assert_eq!(wakes.count(), early + 1);
        assert_eq!(timer.poll(&waker), TimerPoll::Ready);
    });
}

#[test]
fn reset_later_racing_fire() {
    reset_later_racing_worker0(5, 9, None);
}

#[test]
fn reset_later_racing_a_cascade() {
    // Tick 100 is in level 1, so worker 0 reaches it through a cascade, which reads the
    // moved deadline with the node in hand and may place it for tick 300 there. A second
    // timer in the same slot makes the cascade walk its list.
    reset_later_racing_worker0(100, 300, Some(101));
}

#[test]
fn reset_earlier_racing_fire() {
    loom::model(|| {
        let (driver, _worker0) = Driver::new(true);
        let (mut timer, waker, wakes) = registered_timer(&driver, 9);

        let worker0 = process_on_worker0(&driver, 5);
        timer.reset(5);
        let fired_by_worker0 = worker0.join().unwrap();

        // Worker 0 fired it after the reset, or the reset found tick 5 already processed
        // and fired it at once, or it is still linked at tick 5.
        let fired_after = driver.process(5);
        assert!(fired_by_worker0 + fired_after <= 1);
        assert_eq!(wakes.count(), 1, "fires exactly once, at tick 5");
        assert_eq!(timer.poll(&waker), TimerPoll::Ready);
        assert_eq!(driver.process(9), 0, "nothing is left at the old deadline");
    });
}
