//! Model 9: the overdue hand-off. While worker 0 may be stuck in a long poll, another worker
//! fires overdue timers if the driver's lock is free. When worker 0 processes at the same
//! moment, the timer still fires exactly once and wakes its task once. While worker 0 is
//! awake, one sleeping stand-in at a time is the watch. A thread whose clock reading is
//! behind the wheel's tick fires up to the wheel's tick.
#![cfg(loom)]

use escapement::loom_api::{Driver, TimerPoll};
use escapement_loom_tests::{counting_waker, registered_timer};
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
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

/// A stand-in that finds nothing to fire (the timers it saw pending were cancelled, which
/// leaves `next_due` early) must not make worker 0, parked with no timeout, look awake: a
/// registration after it still has to wake worker 0, or no thread fires the new timer.
///
/// The clock runs here: a timer at tick 1 (1 ms) is registered and cancelled, and after a real
/// 2 ms sleep it is overdue enough for a stand-in. It is made as `sleep(d)` makes one, so its
/// first poll registers it without reading the clock: on a loaded machine that poll may come
/// after tick 1, and one that read the clock would then find the timer due. The new timer is
/// ten minutes ahead, so a park that saw it returns at once under loom; one that did not
/// waits to be woken.
#[test]
fn a_stand_in_that_fires_nothing_leaves_parked_worker0_wakeable() {
    const SOON: u64 = 600_000;
    loom::model(|| {
        let (driver, mut worker0) = Driver::new(false);
        let mut cancelled = driver.timer_from_now(1);
        let (waker, _) = counting_waker();
        assert_eq!(cancelled.poll(&waker), TimerPoll::Pending);
        drop(cancelled);
        std::thread::sleep(std::time::Duration::from_millis(2));

        let parked = thread::spawn(move || worker0.park());
        assert!(
            !driver.try_process_overdue(),
            "the only timer was cancelled"
        );
        let (_timer, _waker, _wakes) = registered_timer(&driver, SOON);
        parked.join().unwrap();
    });
}

/// A thread that has just woken worker 0 (a registration earlier than its wakeup, a spawn)
/// must not then park without a timeout counting on worker 0 for the next timer: worker 0
/// is about to run whatever woke it, perhaps a long poll, and a thread in `block_on` may be
/// the only one left to stand in. However worker 0's park and wake interleave with the
/// unpark, the stand-in sees worker 0 as not parked and sleeps only until the timer.
///
/// The clock runs; the pending timer is two hours ahead, past the span a timed park returns
/// at once for under loom, so worker 0 blocks until the unpark.
#[test]
fn a_stand_in_does_not_count_on_worker0_it_just_woke() {
    const LATER: u64 = 7_200_000;
    loom::model(|| {
        let (driver, mut worker0) = Driver::new(false);
        let (_timer, _waker, _wakes) = registered_timer(&driver, LATER);
        let parked = thread::spawn(move || worker0.park());
        driver.unpark_worker0();
        assert!(
            driver.stand_in_timeout().is_some(),
            "a stand-in counted on worker 0 while waking it"
        );
        parked.join().unwrap();
    });
}

/// While worker 0 is awake, one sleeping stand-in at a time is the watch, which sleeps at most
/// a few milliseconds even with no timer pending, so that a timer registered after it went to
/// sleep (by worker 0 before a long poll, or from outside) is not missed. Two stand-ins racing
/// for it: at most one is the watch at any moment, at least one of them is, and the watch is
/// free again once they are done.
#[test]
fn one_stand_in_at_a_time_is_the_watch() {
    loom::model(|| {
        let (driver, _worker0) = Driver::new(false);
        let inside = Arc::new(AtomicUsize::new(0));
        let stand_in = |driver: Driver, inside: Arc<AtomicUsize>| {
            driver.as_watch(|timeout| {
                assert_eq!(
                    inside.fetch_add(1, Ordering::SeqCst),
                    0,
                    "two watches at once"
                );
                assert!(
                    timeout.is_some(),
                    "the watch sleeps with no timeout and no timer pending"
                );
                inside.fetch_sub(1, Ordering::SeqCst);
            })
        };
        let other = {
            let (driver, inside) = (driver.clone(), inside.clone());
            thread::spawn(move || stand_in(driver, inside))
        };
        let here = stand_in(driver.clone(), inside.clone());
        let there = other.join().unwrap();
        assert!(here.is_some() || there.is_some(), "no stand-in watched");
        assert!(
            driver.as_watch(|_| ()).is_some(),
            "the watch was not given up"
        );
    });
}

/// Far enough ahead that the running clock never reaches it: only `process` fires.
const FAR: u64 = 2_000_000_000;

/// Two threads fire the same shard with different clock readings. The later one fires a
/// batch (two timers under loom) and frees the lock to wake them, leaving the wheel at
/// their tick, past the earlier reading, with a third timer due there. The thread with the
/// earlier reading, taking the lock then, must fire up to the wheel's tick: the wheel hands
/// it that third timer (a poll behind the wheel is a poll at its tick), and below its
/// deadline the thread would link it back into the due list, and take it out again,
/// forever, holding the lock.
#[test]
fn a_thread_behind_the_wheel_fires_up_to_the_wheels_tick() {
    loom::model(|| {
        let (driver, _worker0) = Driver::new(false);
        let timers: Vec<_> = (0..3).map(|_| registered_timer(&driver, FAR + 5)).collect();
        let behind = {
            let driver = driver.clone();
            thread::spawn(move || driver.process(FAR))
        };
        let ahead = driver.process(FAR + 10);
        let fired = ahead + behind.join().unwrap();
        assert_eq!(fired, 3);
        for (_, _, wakes) in &timers {
            assert_eq!(wakes.count(), 1, "a due timer fired once");
        }
    });
}
