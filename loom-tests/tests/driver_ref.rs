//! Model 15: the references timers hold to their driver, counted per shard (`DriverRef`).
//! Timers on two threads are made, registered and dropped while the last other owner of the
//! driver lets go of it. Threads in a shard make timers from their credit and return it as
//! they leave, while another thread drops a timer made from it, or while another thread in
//! the same shard takes those timers back into its own credit and returns a batch, or while
//! a thread in another shard drops one (its count goes back to its own shard). The
//! driver is freed exactly once, after every use through a timer (the runtime's loom build
//! checks that: each reference reads a loom cell of the driver as it lets go, and the driver
//! writes it as it is dropped), and nothing leaks.
#![cfg(loom)]

use escapement::loom_api::{Driver, TimerPoll};
use escapement_loom_tests::counting_waker;
use loom::sync::{Arc, Mutex};
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

/// A thread in shard 1 makes two timers from its credit (a batch is two under loom, so the
/// second takes a new one) and hands the first to the main thread, which drops it before or
/// after the thread leaves the shard. The thread registers the second and drops it into its
/// credit, which it returns as it leaves. Both threads let go of the driver first, so the
/// shard's count is all that keeps it alive.
#[test]
fn a_thread_returns_its_credit_while_another_drops_a_timer_made_from_it() {
    loom::model(|| {
        let (driver, worker0) = Driver::with_shards(false, 2);
        drop(worker0);
        let slot = Arc::new(Mutex::new(None));
        let (other, handoff) = (driver.clone(), slot.clone());
        let thread = thread::spawn(move || {
            let guard = other.enter_shard(1);
            let given = other.timer(FAR);
            let mut kept = other.timer(FAR);
            drop(other);
            *handoff.lock().unwrap() = Some(given);
            let (waker, _) = counting_waker();
            assert_eq!(kept.poll(&waker), TimerPoll::Pending);
            drop(kept);
            drop(guard);
        });
        drop(driver);
        let given = slot.lock().unwrap().take();
        if let Some(mut timer) = given {
            let (waker, _) = counting_waker();
            assert_eq!(timer.poll(&waker), TimerPoll::Pending);
        }
        thread.join().unwrap();
    });
}

/// Two threads in shard 1, as worker 0 and a thread in `block_on` share shard 0. The first
/// makes three timers from its credit (taking a second batch), hands them over and leaves;
/// the second, if it finds them, registers one and drops all three into its own credit,
/// which passes two batches (two under loom) so it returns one, and leaves. Whatever the
/// second does not find, the main thread drops last, outside any shard.
#[test]
fn two_threads_in_one_shard_pass_timers_between_their_credits() {
    loom::model(|| {
        let (driver, worker0) = Driver::with_shards(false, 2);
        drop(worker0);
        let slot = Arc::new(Mutex::new(Vec::new()));
        let (maker, made) = (driver.clone(), slot.clone());
        let first = thread::spawn(move || {
            let guard = maker.enter_shard(1);
            let timers: Vec<_> = (0..3).map(|_| maker.timer(FAR)).collect();
            drop(maker);
            *made.lock().unwrap() = timers;
            drop(guard);
        });
        let (taker, found) = (driver.clone(), slot.clone());
        let second = thread::spawn(move || {
            let guard = taker.enter_shard(1);
            drop(taker);
            let mut timers = std::mem::take(&mut *found.lock().unwrap());
            if let Some(timer) = timers.first_mut() {
                let (waker, _) = counting_waker();
                assert_eq!(timer.poll(&waker), TimerPoll::Pending);
            }
            drop(timers);
            drop(guard);
        });
        drop(driver);
        first.join().unwrap();
        second.join().unwrap();
        drop(slot);
    });
}

/// A timer made in shard 1 is dropped on a thread in shard 0 of the same driver (a timer
/// made on one worker and dropped on another): its count goes back to shard 1, not into
/// the dropping thread's credit, which belongs to shard 0. Meanwhile the making thread
/// leaves shard 1 and returns its own credit.
#[test]
fn a_timer_from_one_shard_dropped_on_a_thread_in_another() {
    loom::model(|| {
        let (driver, worker0) = Driver::with_shards(false, 2);
        drop(worker0);
        let slot = Arc::new(Mutex::new(None));
        let (maker, handoff) = (driver.clone(), slot.clone());
        let thread = thread::spawn(move || {
            let guard = maker.enter_shard(1);
            let timer = maker.timer(FAR);
            drop(maker);
            *handoff.lock().unwrap() = Some(timer);
            drop(guard);
        });
        let guard = driver.enter_shard(0);
        drop(driver);
        let given = slot.lock().unwrap().take();
        if let Some(mut timer) = given {
            let (waker, _) = counting_waker();
            assert_eq!(timer.poll(&waker), TimerPoll::Pending);
        }
        drop(guard);
        thread.join().unwrap();
    });
}
