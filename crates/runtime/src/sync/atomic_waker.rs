//! [`AtomicWaker`]: one waker slot that an owner registers into and another thread takes
//! from, without a lock.
//!
//! The slot is guarded by a small state word. `register` claims it (`REGISTERING`), writes,
//! and releases it; `take` marks `WAKING` and empties the slot if nobody is registering. When
//! the two meet, the registering side sees `WAKING` on release and wakes the new waker
//! itself, so a wake racing a registration is never lost: the usual pattern is "the waker's
//! owner sets a flag, then takes; the future registers, then checks the flag".
//!
//! A waker is user code, whose `clone` or `drop` may panic. Neither runs while `register`
//! holds the slot, so a panic there leaves the slot released, never claimed for good.

use std::fmt;
use std::panic::{self, AssertUnwindSafe};
use std::task::Waker;

use crate::loom::{AtomicUsize, Ordering, UnsafeCell};

/// Nobody is touching the slot.
const WAITING: usize = 0;
/// The owner is writing a new waker.
const REGISTERING: usize = 0b01;
/// A wake is in progress: the slot is being emptied, or the registration must wake.
const WAKING: usize = 0b10;

pub(crate) struct AtomicWaker {
    state: AtomicUsize,
    waker: UnsafeCell<Option<Waker>>,
}

// SAFETY: the slot is only written by whoever moved the state from `WAITING` (to
// `REGISTERING`, or to `WAKING` in `take`), so accesses never overlap; `Waker` is `Send`.
unsafe impl Send for AtomicWaker {}
// SAFETY: as above.
unsafe impl Sync for AtomicWaker {}

impl AtomicWaker {
    pub(crate) fn new() -> Self {
        AtomicWaker {
            state: AtomicUsize::new(WAITING),
            waker: UnsafeCell::new(None),
        }
    }

    /// Stores `waker` (unless the stored one would wake the same task). Only one thread may
    /// register at a time: the owner of the future.
    ///
    /// # Panics
    ///
    /// If cloning `waker` panics (the slot is left empty: a `take` finds nothing until the
    /// next registration), or dropping the waker it replaces does (`waker` is in place).
    /// Either way the slot is released first, so the next registration goes through.
    pub(crate) fn register(&self, waker: &Waker) {
        // Acquire pairs with the Release that ended the last `take` or `register`.
        match self.state.compare_exchange(
            WAITING,
            REGISTERING,
            Ordering::Acquire,
            Ordering::Acquire,
        ) {
            Ok(_) => {
                // No code of a waker's runs while the slot is claimed, since a panic there
                // would leave it claimed for good: the new waker's clone runs under
                // `catch_unwind`, and the old waker is dropped after the claim is released.
                let (old, panicked) = self.waker.with_mut(|slot| {
                    // SAFETY: `REGISTERING` gives this thread the slot.
                    let slot = unsafe { &mut *slot };
                    if slot.as_ref().is_some_and(|w| w.will_wake(waker)) {
                        return (None, None);
                    }
                    match panic::catch_unwind(AssertUnwindSafe(|| waker.clone())) {
                        Ok(new) => (slot.replace(new), None),
                        // The slot is left empty, as if the old waker had been taken.
                        Err(payload) => (slot.take(), Some(payload)),
                    }
                });
                // AcqRel: Release publishes the new waker to the next `take`; Acquire, on
                // failure, sees the `take` that set `WAKING` meanwhile.
                if self
                    .state
                    .compare_exchange(REGISTERING, WAITING, Ordering::AcqRel, Ordering::Acquire)
                    .is_err()
                {
                    // A `take` came while we held the slot and left it to us: wake now.
                    // SAFETY: the state is `REGISTERING | WAKING`; nobody else touches the
                    // slot until we store `WAITING`.
                    let waker = self.waker.with_mut(|slot| unsafe { (*slot).take() });
                    self.state.swap(WAITING, Ordering::AcqRel);
                    if let Some(waker) = waker {
                        waker.wake();
                    }
                }
                drop(old);
                if let Some(payload) = panicked {
                    panic::resume_unwind(payload);
                }
            }
            Err(WAKING) => {
                // A `take` is emptying the slot right now; it may take the old waker, so wake
                // the new one directly.
                waker.wake_by_ref();
            }
            Err(state) => {
                debug_assert_eq!(
                    state,
                    REGISTERING | WAKING,
                    "two threads registering at once"
                );
            }
        }
    }

    /// Stores `waker` without the registration protocol: two fewer atomic operations, for an
    /// owner that knows no other thread can reach the slot.
    ///
    /// # Safety
    ///
    /// No other thread may call [`take`](AtomicWaker::take) or touch this slot until the caller
    /// hands it over with a synchronizing operation (for a timer: linking it into the wheel
    /// under its shard's lock).
    pub(crate) unsafe fn register_exclusive(&self, waker: &Waker) {
        self.waker.with_mut(|slot| {
            // SAFETY: the caller guarantees exclusive access to the slot.
            let slot = unsafe { &mut *slot };
            if !slot.as_ref().is_some_and(|w| w.will_wake(waker)) {
                *slot = Some(waker.clone());
            }
        });
    }

    /// Empties the slot, returning the waker if one was there and nobody was registering.
    pub(crate) fn take(&self) -> Option<Waker> {
        // AcqRel: Acquire sees the waker the last `register` published.
        match self.state.fetch_or(WAKING, Ordering::AcqRel) {
            WAITING => {
                // SAFETY: moving `WAITING` to `WAKING` gives this thread the slot.
                let waker = self.waker.with_mut(|slot| unsafe { (*slot).take() });
                // Release: the emptied slot is visible to the next `register`.
                self.state.fetch_and(!WAKING, Ordering::Release);
                waker
            }
            // A registration in progress will see `WAKING` and wake; or another take is
            // already under way.
            _ => None,
        }
    }
}

impl fmt::Debug for AtomicWaker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AtomicWaker").finish_non_exhaustive()
    }
}
