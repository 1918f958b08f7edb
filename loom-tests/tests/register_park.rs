//! Model 4: a thread registers a timer earlier than anything worker 0 knows of while worker 0
//! decides to park. Worker 0 must not sleep past it: either it saw the timer and parked with
//! a timeout for it, or the registration woke it. The same for a timer reset to an earlier
//! deadline, which moves it under the lock.
//!
//! loom has no time, so the runtime's loom build lets a park of at most an hour return at
//! once (it stands for "wakes when the timer is due") and makes a longer or untimed park wait
//! to be woken: a lost wakeup then shows as a deadlock. The last model runs the driver with a
//! shard per worker, the registration going into the shard worker 0 looks at first.
#![cfg(loom)]

use escapement::loom_api::{Driver, TimerPoll};
use escapement_loom_tests::{counting_waker, registered_timer};
use loom::thread;

/// Ten minutes in 1 ms ticks: a timed park toward it returns at once under loom.
const SOON: u64 = 600_000;
/// Twenty-three days in ticks: a park toward it waits to be woken under loom.
const FAR: u64 = 2_000_000_000;

#[test]
fn registration_racing_worker0_parking_with_no_timers() {
    loom::model(|| {
        let (driver, mut worker0) = Driver::new(false);
        let parked = thread::spawn(move || worker0.park());

        let mut timer = driver.timer(SOON);
        let (waker, _) = counting_waker();
        assert_eq!(timer.poll(&waker), TimerPoll::Pending);
        parked.join().unwrap();
    });
}

#[test]
fn an_earlier_reset_wakes_worker0_sleeping_toward_the_old_deadline() {
    loom::model(|| {
        let (driver, mut worker0) = Driver::new(false);
        let (mut timer, _waker, _wakes) = registered_timer(&driver, FAR);
        let parked = thread::spawn(move || worker0.park());
        timer.reset(SOON);
        parked.join().unwrap();
    });
}

#[test]
fn an_earlier_registration_wakes_worker0_sleeping_toward_a_later_timer() {
    loom::model(|| {
        let (driver, mut worker0) = Driver::new(false);
        let (waker, _) = counting_waker();
        let mut later = driver.timer(FAR);
        assert_eq!(later.poll(&waker), TimerPoll::Pending);

        let parked = thread::spawn(move || worker0.park());
        let mut earlier = driver.timer(SOON);
        assert_eq!(earlier.poll(&waker), TimerPoll::Pending);
        parked.join().unwrap();
    });
}

/// With a shard per worker, worker 0 computes its next expiry shard by shard while another
/// thread registers: it must hold every shard's lock until it has recorded the tick it sleeps
/// toward, or the registration can land in a shard it has already looked at and released,
/// and still see it awake.
#[test]
fn a_registration_in_a_shard_already_looked_at_wakes_worker0() {
    loom::model(|| {
        let (driver, mut worker0) = Driver::with_shards(false, 2);
        let (waker, _) = counting_waker();
        let shard = driver.enter_shard(1);
        let mut later = driver.timer(FAR);
        assert_eq!(later.poll(&waker), TimerPoll::Pending);
        drop(shard);

        let parked = thread::spawn(move || worker0.park());
        let mut earlier = driver.timer(SOON);
        assert_eq!(earlier.poll(&waker), TimerPoll::Pending);
        parked.join().unwrap();
    });
}

/// Worker 0 marks itself awake without a lock when a park returns. A registration racing two
/// parks in a row, with the mark between them, must still be seen by one of them or wake it.
#[test]
fn a_registration_racing_two_parks_in_a_row_is_never_lost() {
    loom::model(|| {
        let (driver, mut worker0) = Driver::with_shards(false, 2);
        let (waker, _) = counting_waker();
        let mut later = driver.timer(FAR);
        assert_eq!(later.poll(&waker), TimerPoll::Pending);

        let parked = thread::spawn(move || {
            worker0.park();
            worker0.park();
        });
        let shard = driver.enter_shard(1);
        let mut earlier = driver.timer(SOON);
        drop(shard);
        assert_eq!(earlier.poll(&waker), TimerPoll::Pending);
        parked.join().unwrap();
    });
}
