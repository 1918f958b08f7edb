//! Model 6: the driver shuts down while a task registers a timer and polls it again. The
//! task either sees the shutdown or, if its last poll was `Pending`, is woken by it; no timer
//! is left linked. And while the owner of a registered timer drops it: the shutdown marks the
//! entry `CLOSING` while it takes the waker and `SHUTDOWN` after its last access, so a drop
//! that sees anything but `SHUTDOWN` (or `FIRED`) must take the lock before the entry is
//! freed. And while worker 0 fires due timers, or the owner moves its timer earlier and drops
//! it, between the shutdown's batches: neither fires nor frees what the shutdown has yet to
//! close. And while the owner moves its timer later without the lock and polls it: the timer
//! is closed whichever goes first. A timer shut down before its deadline is never elapsed.
#![cfg(loom)]

use escapement::loom_api::{Driver, TimerPoll};
use escapement_loom_tests::{counting_waker, process_on_worker0, registered_timer};
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
        assert!(wakes.count() <= 1, "a timer woken twice");
        assert_eq!(driver.pending(), 0, "shutdown leaves nothing linked");
    });
}

/// Worker 0 fires due timers while the driver shuts down. Both work in batches (two wakers
/// under loom) and release the shard's lock between them; the shutdown closes what is left by
/// polling the wheel at the end of time, which moves the wheel's tick up to the timers it hands
/// out. So a firing thread that takes the lock back after a shutdown batch must find the
/// shutdown and stop, or it fires the timers still linked, before their deadline.
#[test]
fn shutdown_racing_worker0_firing_in_batches() {
    loom::model(|| {
        let (driver, _worker0) = Driver::new(true);
        let _due: Vec<_> = (0..2).map(|_| registered_timer(&driver, 5)).collect();
        let mut later: Vec<_> = (0..3).map(|_| registered_timer(&driver, 9)).collect();

        let worker0 = process_on_worker0(&driver, 5);
        driver.shutdown();
        let fired = worker0.join().unwrap();

        assert!(fired <= 2, "worker 0 fired a timer not due");
        for (timer, waker, wakes) in &mut later {
            assert_eq!(
                timer.poll(waker),
                TimerPoll::Shutdown,
                "a timer fired before its deadline"
            );
            assert_eq!(
                wakes.count(),
                1,
                "a task waiting on a timer is woken at shutdown"
            );
        }
        assert_eq!(driver.pending(), 0, "shutdown leaves nothing linked");
    });
}

/// The owner resets a timer to an earlier deadline (a move under the lock) and drops it while
/// the driver shuts down. The shutdown closes a shard in batches (two wakers under loom) and
/// releases the lock between them, so the reset may find the shutdown begun with its timer
/// still linked, left for a later batch: it must unlink the timer before it marks it
/// `SHUTDOWN`, or the drop that follows frees it without the lock while the shutdown's next
/// batch still reaches it.
#[test]
fn shutdown_racing_an_earlier_reset_and_drop() {
    loom::model(|| {
        let (driver, _worker0) = Driver::new(true);
        let _first: Vec<_> = (0..2).map(|_| registered_timer(&driver, 5)).collect();
        let (mut timer, _waker, wakes) = registered_timer(&driver, 9);
        let owner = thread::spawn(move || {
            timer.reset(7);
            drop(timer);
        });
        driver.shutdown();
        owner.join().unwrap();
        assert!(wakes.count() <= 1, "a timer woken twice");
        assert_eq!(driver.pending(), 0, "shutdown leaves nothing linked");
    });
}

/// The owner moves its registered timer later without the lock (a compare-exchange on the
/// entry's state) and polls it again while the driver shuts down, which marks the entry
/// `CLOSING`, then `SHUTDOWN`, under the lock. A reset that comes first is overwritten, and the
/// shutdown wakes the task; one that comes after reads the closed state, or fails its
/// compare-exchange on it, and finds the shutdown, through the lock if the state was still
/// `CLOSING`. Either way the timer never fires, its task is woken (twice when its poll
/// registers the waker while the shutdown takes it), and its next poll sees the shutdown.
#[test]
fn shutdown_racing_a_later_reset_and_a_poll() {
    loom::model(|| {
        let (driver, _worker0) = Driver::new(true);
        let (mut timer, waker, wakes) = registered_timer(&driver, 5);
        let owner = thread::spawn(move || {
            timer.reset(9);
            let poll = timer.poll(&waker);
            (timer, waker, poll)
        });
        driver.shutdown();
        let (mut timer, waker, poll) = owner.join().unwrap();

        assert_ne!(
            poll,
            TimerPoll::Ready,
            "a timer never fires because of a shutdown"
        );
        // A registration that meets the shutdown taking the waker wakes its own waker too.
        let woken = wakes.count();
        assert!(woken >= 1, "the shutdown wakes the task");
        assert!(woken <= 2, "woken {woken} times");
        assert_eq!(timer.poll(&waker), TimerPoll::Shutdown);
        assert_eq!(driver.pending(), 0, "shutdown leaves nothing linked");
    });
}

/// A pending timer shut down before its deadline has come is never elapsed: not before the
/// shutdown, not while it takes the timer's waker (`CLOSING`), not after.
#[test]
fn a_timer_shut_down_before_its_deadline_is_never_elapsed() {
    loom::model(|| {
        let (driver, _worker0) = Driver::new(true);
        let (timer, _waker, _wakes) = registered_timer(&driver, 5);
        let shutdown = {
            let driver = driver.clone();
            thread::spawn(move || driver.shutdown())
        };
        assert!(!timer.is_elapsed(), "elapsed while the shutdown closes it");
        shutdown.join().unwrap();
        assert!(!timer.is_elapsed(), "elapsed after the shutdown");
    });
}
