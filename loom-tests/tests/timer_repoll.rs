//! Model 1: worker 0 fires a timer while its task polls it again with a new waker. The task
//! is woken exactly when it must be: if its last poll saw `Pending`, the waker of that poll
//! is woken; and nothing fires before the deadline. The same for the first poll, which
//! registers the timer: its waker is in the entry before the node is linked. And an
//! interval's tick: a `Ready` poll that disarms the timer leaves it unarmed and holding no
//! waker. A poll that saw the fire leaves the timer elapsed, even while the fire finishes.
#![cfg(loom)]

use std::task::Waker;

use escapement::loom_api::{Driver, Timer, TimerPoll};
use escapement_loom_tests::{counting_waker, process_on_worker0, Wakes};
use loom::thread::JoinHandle;

/// A timer due at tick 5, polled `Pending` with a first waker, then polled again with a
/// second waker while worker 0 processes tick 5 on a thread of its own.
struct Repoll {
    timer: Timer,
    /// Kept alive, as a task keeps its waker, until the model ends.
    _first: Waker,
    second: Waker,
    second_wakes: Wakes,
    worker0: JoinHandle<usize>,
    /// What the second poll saw.
    seen: TimerPoll,
}

fn repoll_racing_the_fire(driver: &Driver) -> Repoll {
    let mut timer = driver.timer(5);
    let (first, _) = counting_waker();
    let (second, second_wakes) = counting_waker();
    assert_eq!(timer.poll(&first), TimerPoll::Pending);

    let worker0 = process_on_worker0(driver, 5);
    let seen = timer.poll(&second);
    Repoll {
        timer,
        _first: first,
        second,
        second_wakes,
        worker0,
        seen,
    }
}

#[test]
fn fire_racing_a_repoll_with_a_new_waker_wakes_the_new_waker() {
    loom::model(|| {
        let (driver, _worker0) = Driver::new(true);
        let mut r = repoll_racing_the_fire(&driver);
        assert_eq!(r.worker0.join().unwrap(), 1, "the timer fires exactly once");

        if r.seen == TimerPoll::Pending {
            assert_eq!(
                r.second_wakes.count(),
                1,
                "the waker of the last Pending poll was lost"
            );
        }
        assert_eq!(r.timer.poll(&r.second), TimerPoll::Ready);
    });
}

/// The first poll registers the timer while worker 0 processes its tick: if the fire came
/// between the link and the waker's store, it would find no waker to wake.
#[test]
fn fire_racing_the_first_poll_wakes_its_waker() {
    loom::model(|| {
        let (driver, _worker0) = Driver::new(true);
        let mut timer = driver.timer(5);
        let (waker, wakes) = counting_waker();
        let worker0 = process_on_worker0(&driver, 5);
        let seen = timer.poll(&waker);
        let fired = worker0.join().unwrap() + driver.process(5);
        assert_eq!(
            fired,
            usize::from(seen == TimerPoll::Pending),
            "fired once if linked"
        );
        if seen == TimerPoll::Pending {
            assert_eq!(wakes.count(), 1, "the first poll's waker was lost");
        }
        assert_eq!(timer.poll(&waker), TimerPoll::Ready);
    });
}

#[test]
fn processing_before_the_deadline_neither_fires_nor_wakes() {
    loom::model(|| {
        let (driver, _worker0) = Driver::new(true);
        let mut timer = driver.timer(5);
        let (first, first_wakes) = counting_waker();
        let (second, second_wakes) = counting_waker();
        assert_eq!(timer.poll(&first), TimerPoll::Pending);

        let worker0 = process_on_worker0(&driver, 4);
        assert_eq!(timer.poll(&second), TimerPoll::Pending);
        assert_eq!(worker0.join().unwrap(), 0);
        assert_eq!(
            first_wakes.count() + second_wakes.count(),
            0,
            "woken before the deadline"
        );
        assert_eq!(driver.process(5), 1);
        assert_eq!(second_wakes.count(), 1);
    });
}

/// An interval's tick: the task polls the timer while worker 0 fires it and, when the poll is
/// `Ready`, moves the deadline on without arming the timer, as `Interval::poll_tick` does. The
/// timer is then unarmed and holds no waker, even when the poll saw the fire in progress:
/// nothing fires at the new deadline, and the waker of the `Ready` poll is never woken
/// after it nor kept alive.
#[test]
fn a_tick_racing_the_fire_leaves_the_timer_unarmed_without_a_waker() {
    loom::model(|| {
        let (driver, _worker0) = Driver::new(true);
        let mut r = repoll_racing_the_fire(&driver);
        if r.seen == TimerPoll::Ready {
            r.timer.reset_unarmed(9);
        }
        assert_eq!(r.worker0.join().unwrap(), 1, "the timer fires exactly once");
        if r.seen == TimerPoll::Ready {
            let woken = r.second_wakes.count();
            drop(r.second);
            assert_eq!(r.second_wakes.held(), 0, "the unarmed timer keeps a waker");
            assert_eq!(driver.process(9), 0, "the unarmed timer fired");
            assert_eq!(r.second_wakes.count(), woken, "woken after a Ready poll");
        }
    });
}

/// `is_elapsed` agrees with the poll that saw the fire: once a poll is `Ready`, the timer is
/// elapsed, also while worker 0 is still firing it (`FIRING`, which the poll counts as fired).
#[test]
fn a_timer_polled_ready_is_elapsed_while_the_fire_finishes() {
    loom::model(|| {
        let (driver, _worker0) = Driver::new(true);
        let r = repoll_racing_the_fire(&driver);
        if r.seen == TimerPoll::Ready {
            assert!(r.timer.is_elapsed(), "a timer polled Ready is not elapsed");
        }
        assert_eq!(r.worker0.join().unwrap(), 1, "the timer fires exactly once");
        assert!(r.timer.is_elapsed(), "a fired timer is not elapsed");
    });
}

/// An interval's tick that disarms the timer after its fire (it read `FIRED`), and then the
/// owner frees the timer while worker 0 may still be finishing that fire's batch. A disarmed
/// entry is freed without the lock (its drop returns early, as an unregistered one), so the
/// load that read `FIRED` must acquire the driver's last access (mutant 95).
#[test]
fn a_timer_disarmed_by_a_tick_is_freed_after_the_fires_last_access() {
    loom::model(|| {
        let (driver, _worker0) = Driver::new(true);
        let mut r = repoll_racing_the_fire(&driver);
        if r.seen == TimerPoll::Ready {
            r.timer.reset_unarmed(9);
        }
        drop(r.timer);
        let fired = r.worker0.join().unwrap();
        if r.seen == TimerPoll::Ready {
            assert_eq!(fired, 1, "the timer fires exactly once");
        }
    });
}
