//! Parking: how a thread with nothing to do sleeps until it is woken, and how the runtime
//! counts such threads so a paused clock can jump ahead once everything is idle.
//!
//! # The park state
//!
//! A parked thread and its unparkers share a [`ParkState`]: `EMPTY`, `PARKED` or `NOTIFIED`.
//! `unpark` stores `NOTIFIED`; if the thread was `PARKED` it also wakes it. An unpark that
//! comes before the park is never lost: the park consumes the token and returns at once.
//!
//! # Activity
//!
//! The timer driver counts the runtime's *active* threads: workers not parked, threads in
//! `block_on` not parked, and blocking sections it knows of. The count reaches zero only when
//! nothing in the runtime can make progress without time passing, which is when a paused
//! clock auto-advances. To keep the count from touching zero while a wake is in flight:
//!
//! - a parking thread sets `PARKED` first, then decrements;
//! - an unparker increments first, then swaps in `NOTIFIED`; if the thread was not `PARKED`
//!   (it never slept, or someone else woke it), the unparker takes its increment back;
//! - a thread that wakes without being unparked (a timeout, a nudge) increments for itself;
//! - a thread that wakes a task, if it may not be counted (not one of the runtime's workers,
//!   nor the thread driving a local task's set), increments before it marks the task woken
//!   and decrements once the task is queued and whoever runs it unparked
//!   (`Driver::hold_clock`, from the task's waker). A task marked woken is in no queue until
//!   then, and a wake of its own timer adds nothing, so the clock must not move meanwhile.
//!   Only on a clock that was ever paused: no other auto-advances.
//!
//! So a thread being woken is counted active before the wake, and so is a task being
//! queued.

use std::fmt;
use std::task::{RawWaker, RawWakerVTable, Waker};
use std::time::Duration;

use crate::loom::{Arc, AtomicUsize, Condvar, Mutex, Ordering};
use crate::time::driver::{Driver, STAND_IN_GRACE};

/// Nobody is parked and no unpark is pending.
const EMPTY: usize = 0;
/// The thread is parked (and was counted inactive).
const PARKED: usize = 1;
/// An unpark is pending; the next park returns at once.
const NOTIFIED: usize = 2;

/// The state a parked thread shares with its unparkers.
pub(crate) struct ParkState(AtomicUsize);

/// How a park attempt began.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ParkStart {
    /// A token was pending: return without sleeping.
    Notified,
    /// The state is `PARKED`: sleep, then call [`ParkState::finish`].
    Parked,
}

impl ParkState {
    pub(crate) fn new() -> ParkState {
        ParkState(AtomicUsize::new(EMPTY))
    }

    /// Consumes a pending token, or moves to `PARKED` and counts the thread inactive.
    pub(crate) fn start(&self, driver: &Driver) -> ParkStart {
        // Acquire pairs with the Release swap in `notify`: whatever the unparker did before
        // is visible once the token is consumed.
        match self
            .0
            .compare_exchange(EMPTY, PARKED, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => {
                driver.deactivate();
                ParkStart::Parked
            }
            Err(actual) => {
                debug_assert_eq!(actual, NOTIFIED);
                self.0.swap(EMPTY, Ordering::Acquire);
                ParkStart::Notified
            }
        }
    }

    /// Whether an unpark arrived (a condvar waiter loops until it did).
    pub(crate) fn is_notified(&self) -> bool {
        self.0.load(Ordering::Acquire) == NOTIFIED
    }

    /// After sleeping: back to `EMPTY`. A thread that woke without an unpark (timeout,
    /// spurious wakeup) counts itself active again; an unparked one was counted by its
    /// unparker.
    ///
    /// Release: whatever the thread did before, such as worker 0 clearing its parked flag, is
    /// visible to a thread whose swap in `notify` then reads `EMPTY` (with Acquire).
    ///
    /// Returns whether it was unparked: an unpark that came after a timeout ended the wait,
    /// and before this, leaves its token here, and the caller must not sleep again as if
    /// nothing had come.
    pub(crate) fn finish(&self, driver: &Driver) -> bool {
        if self.0.swap(EMPTY, Ordering::AcqRel) == PARKED {
            driver.activate();
            false
        } else {
            true
        }
    }

    /// Marks the thread notified. Returns `true` if it was `PARKED` and must be woken.
    pub(crate) fn notify(&self, driver: &Driver) -> bool {
        driver.activate();
        // Release pairs with the Acquire in `start` and `finish`.
        if self.0.swap(NOTIFIED, Ordering::AcqRel) == PARKED {
            true
        } else {
            // It was not asleep: the increment was not ours to make.
            driver.deactivate();
            false
        }
    }
}

/// Parks one thread on a condvar; [`Unparker`]s wake it. Used by workers other than
/// worker 0 and by threads in `block_on`.
pub(crate) struct Parker {
    inner: Arc<Inner>,
}

/// Wakes a [`Parker`]'s thread from anywhere.
#[derive(Clone)]
pub(crate) struct Unparker {
    inner: Arc<Inner>,
}

struct Inner {
    state: ParkState,
    lock: Mutex<()>,
    condvar: Condvar,
    driver: Arc<Driver>,
}

impl Parker {
    pub(crate) fn new(driver: Arc<Driver>) -> Parker {
        Parker {
            inner: Arc::new(Inner {
                state: ParkState::new(),
                lock: Mutex::new(()),
                condvar: Condvar::new(),
                driver,
            }),
        }
    }

    pub(crate) fn unparker(&self) -> Unparker {
        Unparker {
            inner: self.inner.clone(),
        }
    }

    /// Blocks until unparked (or returns at once if an unpark is pending).
    pub(crate) fn park(&self) {
        let _ = self.park_until(None);
    }

    /// Blocks until unparked or `timeout` passes.
    /// Returns whether it was unparked (rather than timed out).
    pub(crate) fn park_timeout(&self, timeout: Duration) -> bool {
        self.park_until(Some(timeout))
    }

    /// Parks a thread other than worker 0 (another worker, or a thread in `block_on`). While
    /// worker 0 is not parked on the next timer it may be stuck in a long poll, so the thread
    /// sleeps only until that timer and then fires what is overdue in each shard whose lock
    /// is free: it stands in for worker 0. Worker 0 with an unpark on its way counts as not
    /// parked: it is about to run whatever woke it, which may be that long poll. One such
    /// thread at a time, the watch, sleeps at most `STAND_IN_WATCH` (`time/driver/idle.rs`)
    /// even with no timer pending or a later one, so that a timer registered after it went to
    /// sleep is not missed.
    ///
    /// If the wheel is overdue already and the thread fires nothing (the locks are held:
    /// typically worker 0 working through a backlog, or a worker registering), it sleeps
    /// [`STAND_IN_GRACE`] before it looks again, instead of coming straight back to find the
    /// same: its caller would otherwise spin on the check for as long as the backlog lasts.
    pub(crate) fn park_standing_in(&self) {
        let driver = &self.inner.driver;
        // While worker 0 is awake, one of the sleeping stand-ins is the watch, which wakes up
        // every `STAND_IN_WATCH`: the others would not hear of a timer registered after they
        // went to sleep. Not under loom, which has no time: the watch's park would return at
        // once, and the thread would spin (`loom-tests/tests/overdue_handoff.rs` models the
        // watch's claim).
        loop {
            let mut watch = driver.try_watch().filter(|_| !cfg!(loom));
            let timeout = driver.stand_in_timeout(watch.is_some());
            if timeout.is_none() {
                // A thread that sleeps until woken (the clock was paused meanwhile) leaves the
                // watching to another.
                watch = None;
            }
            // Whether the thread goes back to its caller: it was unparked, it fired timers (a
            // worker then finds the tasks they woke in its queue), or it found the wheel
            // overdue and locked, and slept the grace (as before it parked).
            let done = match timeout {
                Some(timeout) if timeout.is_zero() => {
                    if !driver.try_process_overdue() {
                        self.park_timeout(STAND_IN_GRACE);
                    }
                    true
                }
                Some(timeout) => {
                    let unparked = self.park_timeout(timeout);
                    driver.try_process_overdue() || unparked
                }
                None => {
                    self.park();
                    true
                }
            };
            drop(watch);
            // Otherwise it goes back to sleep here, not through its caller's loop: a
            // `block_on` would poll its future again though nothing woke it, and a worker
            // would run its park callbacks again.
            if done {
                return;
            }
        }
    }

    /// Returns whether it was unparked (rather than timed out).
    fn park_until(&self, timeout: Option<Duration>) -> bool {
        let inner = &*self.inner;
        let deadline = timeout.and_then(|t| std::time::Instant::now().checked_add(t));
        // Taking the lock before `PARKED` is visible means an unparker that sees `PARKED`
        // and then takes the lock finds us inside `wait`.
        let mut guard = inner.lock.lock();
        if inner.state.start(&inner.driver) == ParkStart::Notified {
            return true;
        }
        while !inner.state.is_notified() {
            match (timeout, deadline) {
                (None, _) => guard = inner.condvar.wait(guard),
                // loom has no time: a short timed park stands for "the timeout came".
                #[cfg(loom)]
                (Some(t), _) if t <= crate::time::park::LOOM_SHORT_PARK => break,
                (Some(_), Some(deadline)) => {
                    let now = std::time::Instant::now();
                    if now >= deadline {
                        break;
                    }
                    guard = inner.condvar.wait_for(guard, deadline - now);
                }
                (Some(_), None) => guard = inner.condvar.wait(guard),
            }
        }
        drop(guard);
        // Whatever ended the wait, an unpark that came before this counts.
        inner.state.finish(&inner.driver)
    }
}

impl Unparker {
    /// Whether `other` wakes the same thread's parker.
    pub(crate) fn is_same(&self, other: &Unparker) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Wakes the parked thread, or makes its next park return at once.
    pub(crate) fn unpark(&self) {
        let inner = &*self.inner;
        if inner.state.notify(&inner.driver) {
            drop(inner.lock.lock());
            inner.condvar.notify_one();
        }
    }

    /// A `Waker` that unparks this thread.
    pub(crate) fn into_waker(self) -> Waker {
        let ptr = Arc::into_raw(self.inner).cast::<()>();
        // SAFETY: the vtable below treats the pointer as an `Arc<Inner>` it owns one count of,
        // which `into_raw` just gave it.
        unsafe { Waker::from_raw(RawWaker::new(ptr, &WAKER_VTABLE)) }
    }
}

static WAKER_VTABLE: RawWakerVTable =
    RawWakerVTable::new(waker_clone, waker_wake, waker_wake_by_ref, waker_drop);

/// The unparker a waker's pointer stands for, without taking over its count.
///
/// # Safety
///
/// `ptr` came from `Arc::<Inner>::into_raw` and its count is still held.
unsafe fn unparker_of(ptr: *const ()) -> std::mem::ManuallyDrop<Unparker> {
    // SAFETY: the caller's contract; `ManuallyDrop` leaves the count alone.
    let inner = unsafe { Arc::from_raw(ptr.cast::<Inner>()) };
    std::mem::ManuallyDrop::new(Unparker { inner })
}

unsafe fn waker_clone(ptr: *const ()) -> RawWaker {
    // SAFETY: the waker holds one count, so the `Arc` is alive to increment.
    unsafe { Arc::increment_strong_count(ptr.cast::<Inner>()) };
    RawWaker::new(ptr, &WAKER_VTABLE)
}

unsafe fn waker_wake(ptr: *const ()) {
    // SAFETY: the waker's count passes to this `Arc`, dropped at the end.
    let inner = unsafe { Arc::from_raw(ptr.cast::<Inner>()) };
    Unparker { inner }.unpark();
}

unsafe fn waker_wake_by_ref(ptr: *const ()) {
    // SAFETY: the waker is alive and keeps its count.
    unsafe { unparker_of(ptr) }.unpark();
}

unsafe fn waker_drop(ptr: *const ()) {
    // SAFETY: the waker's count is released here.
    drop(unsafe { Arc::from_raw(ptr.cast::<Inner>()) });
}

impl fmt::Debug for ParkState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ParkState")
            .field(&self.0.load(Ordering::Relaxed))
            .finish()
    }
}

impl fmt::Debug for Parker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Parker").finish_non_exhaustive()
    }
}

impl fmt::Debug for Unparker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Unparker").finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::pin::pin;
    use std::task::Context;
    use std::time::Instant;

    use super::*;
    use crate::time::clock::Clock;
    use crate::time::driver_ref::DriverRef;
    use crate::time::entry::TimerEntry;
    use crate::time::park::DriverParker;

    #[test]
    fn a_stand_in_that_finds_the_lock_held_sleeps_instead_of_spinning() {
        let origin = Instant::now();
        let tick = Duration::from_millis(1);
        let (_worker0, unparker) = DriverParker::new(tick).expect("a poll");
        let driver = Driver::new(
            Clock::new(origin, tick, false),
            origin,
            tick,
            unparker,
            2,
            2,
            false,
        );
        // Made as `sleep(lead)` makes it: its first poll registers it without reading the
        // clock, and is pending even on a loaded machine that comes to it after the deadline.
        let lead = Duration::from_millis(2);
        let deadline = crate::time::Instant::from_std(Instant::now() + lead);
        let mut timer = pin!(TimerEntry::new(DriverRef::new(&driver), deadline, false));
        assert!(timer
            .as_mut()
            .poll_elapsed(&mut Context::from_waker(std::task::Waker::noop()))
            .is_pending());
        // Overdue by well over the grace, with worker 0 not parked (as when it is busy) and
        // another thread firing, holding the lock.
        std::thread::sleep(lead + Duration::from_millis(3));
        let parker = Parker::new(driver.clone());
        let firing = driver.hold_lock();
        let start = Instant::now();
        parker.park_standing_in();
        let slept = start.elapsed();
        drop(firing);
        assert!(
            slept >= STAND_IN_GRACE,
            "came back after {slept:?}: its caller would spin"
        );
        // With the lock free, the stand-in fires the timer at once.
        let start = Instant::now();
        parker.park_standing_in();
        assert!(start.elapsed() < Duration::from_secs(10));
        assert!(timer
            .as_mut()
            .poll_elapsed(&mut Context::from_waker(std::task::Waker::noop()))
            .is_ready());
    }
}
