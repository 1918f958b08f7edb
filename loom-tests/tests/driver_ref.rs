//! Model 15: the references timers hold to their driver, counted per shard (`DriverRef`).
//! Timers on two threads are made, registered and dropped while the last other owner of the
//! driver lets go of it. The driver is freed exactly once, after every use through a timer
//! (the runtime's loom build checks that: each reference reads a loom cell of the driver as it
//! lets go, and the driver writes it as it is dropped), and nothing leaks.
#![cfg(loom)]

use escapement::loom_api::{Driver, TimerPoll};
use escapement_loom_tests::counting_waker;
use loom::thread;

/// Far enough that the timers never fire.
const FAR: u64 = 2_000_000_000;

/// Makes a timer (in shard `shard`, or the thread's default, 0), lets go of `driver`,
/// registers the timer and drops it.
fn use_and_let_go(driver: Driver, shard: Option<usize>) {
    let guard = shard.map(|index| driver.enter_shard(index));
    let mut timer = driver.timer(FAR);
    drop(guard);
    drop(driver);
    let (waker, _) = counting_waker();
    assert_eq!(timer.poll(&waker), TimerPoll::Pending);
    drop(timer);
}

#[test]
fn two_threads_counting_in_one_shard() {
    loom::model(|| {
        let (driver, worker0) = Driver::with_shards(false, 2);
        drop(worker0);
        let other = driver.clone();
        let thread = thread::spawn(move || use_and_let_go(other, None));
        use_and_let_go(driver, None);
        thread.join().unwrap();
    });
}

#[test]
fn two_threads_counting_in_two_shards() {
    loom::model(|| {
        let (driver, worker0) = Driver::with_shards(false, 2);
        drop(worker0);
        let other = driver.clone();
        let thread = thread::spawn(move || use_and_let_go(other, Some(1)));
        use_and_let_go(driver, None);
        thread.join().unwrap();
    });
}
