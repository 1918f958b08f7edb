//! Model 9: the overdue hand-off. While worker 0 may be stuck in a long poll, another worker
//! fires overdue timers if the driver's lock is free. When worker 0 processes at the same
//! moment, the timer still fires exactly once and wakes its task once.
#![cfg(loom)]

use escapement::loom_api::{Driver, TimerPoll};
use escapement_loom_tests::registered_timer;
use loom::thread;

#[test]
fn worker0_and_a_stand_in_fire_an_overdue_timer_once() {
    loom::model(|| {
        let (driver, _worker0) = Driver::new(true);
        let (mut timer, waker, wakes) = registered_timer(&driver, 5);
        // A tick past the deadline: overdue enough for a stand-in.
        driver.advance(6);

        let stand_in = {
            let driver = driver.clone();
            thread::spawn(move || driver.try_process_overdue())
        };
        let by_worker0 = driver.process(6);
        let by_stand_in = stand_in.join().unwrap();

        assert_eq!(
            by_worker0 + usize::from(by_stand_in),
            1,
            "fired exactly once"
        );
        assert_eq!(wakes.count(), 1);
        assert_eq!(timer.poll(&waker), TimerPoll::Ready);
    });
}
