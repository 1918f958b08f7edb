//! The driver's own tests: processing racing other threads' clock readings and shutdown.

use std::pin::Pin;
use std::sync::{Arc as StdArc, Mutex as StdMutex};
use std::task::{Context, Wake, Waker};

use super::*;
use crate::loom::Arc;
use crate::time::driver_ref::DriverRef;
use crate::time::entry::TimerEntry;
use crate::time::park::DriverParker;

/// A driver of `shards` shards with 1 ms ticks on a paused clock, its parker dropped.
pub(crate) fn paused_driver(shards: usize) -> Arc<Driver> {
    driver_with(shards, true)
}

/// A driver of `shards` shards with 1 ms ticks on a clock paused at first or running, its
/// parker dropped.
pub(crate) fn driver_with(shards: usize, paused: bool) -> Arc<Driver> {
    let origin = std::time::Instant::now();
    let tick = Duration::from_millis(1);
    let (_parker, unparker) = DriverParker::new(tick).expect("a poll");
    let clock = Clock::new(origin, tick, paused);
    Driver::new(clock, origin, tick, unparker, shards, shards, true)
}

/// A waker that, the first time it is woken, has the driver process at an older tick,
/// as a thread with a stale clock reading would.
struct ProcessesAtAStaleTick {
    driver: StdMutex<Option<(Arc<Driver>, u64)>>,
}

impl Wake for ProcessesAtAStaleTick {
    fn wake(self: StdArc<Self>) {
        if let Some((driver, tick)) = self.driver.lock().unwrap().take() {
            driver.process(driver.tick_instant(tick));
        }
    }
}

/// Two batches of timers registered for `tick`; the first one's waker, when woken, has
/// the driver process at tick 5, as a thread with a stale clock reading would.
fn two_batches_with_a_stale_processor(
    driver: &Arc<Driver>,
    tick: u64,
) -> Vec<Pin<Box<TimerEntry>>> {
    let stale = Waker::from(StdArc::new(ProcessesAtAStaleTick {
        driver: StdMutex::new(Some((driver.clone(), 5))),
    }));
    let mut timers: Vec<Pin<Box<TimerEntry>>> = (0..2 * WAKE_BATCH)
        .map(|_| {
            Box::pin(TimerEntry::new(
                DriverRef::new(driver),
                driver.tick_instant(tick),
                true,
            ))
        })
        .collect();
    for (i, timer) in timers.iter_mut().enumerate() {
        let waker = if i == 0 { &stale } else { Waker::noop() };
        assert!(timer
            .as_mut()
            .poll_elapsed(&mut Context::from_waker(waker))
            .is_pending());
    }
    timers
}

#[test]
fn processing_during_shutdown_fires_nothing_early() {
    let driver = paused_driver(1);
    // Shutdown releases the lock between batches, and a waker of the first batch then
    // processes at tick 5, long before the timers' tick 1000.
    let timers = two_batches_with_a_stale_processor(&driver, 1000);
    driver.shutdown();
    // None fired: every one was shut down, so none reads as elapsed.
    assert_eq!(timers.iter().filter(|timer| timer.is_elapsed()).count(), 0);
}

#[test]
fn processing_behind_the_wheel_still_fires_what_is_due() {
    let driver = paused_driver(1);
    // The first processing releases the lock with timers still due at tick 10; a waker of
    // that batch then processes at tick 5.
    let mut timers = two_batches_with_a_stale_processor(&driver, 10);
    let plain = Waker::noop();
    // Without clamping to the wheel's tick the stale processing relinks the rest forever.
    driver.process(driver.tick_instant(10));
    for timer in &mut timers {
        assert!(timer
            .as_mut()
            .poll_elapsed(&mut Context::from_waker(plain))
            .is_ready());
    }
}

#[test]
fn a_timer_clamped_to_the_last_tick_is_never_the_next_expiration() {
    let driver = paused_driver(1);
    let far = driver.tick_instant(MAX_TICK) + Duration::from_secs(86_400);
    let mut clamped = Box::pin(TimerEntry::new(DriverRef::new(&driver), far, true));
    let mut cx = Context::from_waker(Waker::noop());
    assert!(clamped.as_mut().poll_elapsed(&mut cx).is_pending());
    // Processing refreshes `next_due` from the wheel, which reports a far timer by the start
    // of its slot: for the clamped one, the last tick itself.
    driver.process(driver.tick_instant(5));
    assert_eq!(driver.next_due(), None);
    let soon = driver.tick_instant(10);
    let mut armed = Box::pin(TimerEntry::new(DriverRef::new(&driver), soon, true));
    assert!(armed.as_mut().poll_elapsed(&mut cx).is_pending());
    driver.process(driver.tick_instant(6));
    assert_eq!(driver.next_due(), Some(10));
    driver.process(driver.tick_instant(10));
    assert!(armed.is_elapsed());
    assert_eq!(driver.next_due(), None);
    assert!(!clamped.is_elapsed());
}
