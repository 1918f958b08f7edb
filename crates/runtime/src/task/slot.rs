//! [`Slot`]: room for one scheduled task, which one thread puts in and any thread may take.
//!
//! A worker's LIFO slot (`scheduler/worker.rs`) is one: the worker puts the first task that
//! the task it polls wakes there, to run it next, and takes it back; another worker takes it
//! when it finds nothing else, so a task in the slot of a worker blocked in a long poll is
//! not stuck there.
//!
//! The slot holds the task's `Notified` reference as a raw pointer in one atomic word. Only
//! the slot's owner puts, and only into an empty slot, which no other thread can fill: a
//! load that reads null, then a `Release` store of the task, which publishes it to whichever
//! thread takes it. A take swaps null in with `AcqRel`: its `Acquire` pairs with that store,
//! and its `Release` with the `Acquire` of [`Slot::is_empty`], so a thread that sees the task
//! gone sees what its taker did before (a worker going to sleep relies on it, see
//! `Shared::work_seen_by`). Exactly one swap gets each pointer out, so each reference is
//! given back once. (Two threads putting at once could both read null, and one task's
//! reference would be lost: leaked, never run. The owner is the thread that has the worker's
//! core, which moves only under a lock.)
//!
//! Under loom the put is a compare-exchange from null instead of the load and the store. With
//! one putter the two fill the same slots, but loom 0.7 can let a plain store land between
//! the read and the write of another thread's swap (tokio-rs/loom#254, also #282 and #389;
//! the fix, tokio-rs/loom#391, is not released), and the models then lose tasks that no C11
//! execution loses. With every write a read-modify-write, the models run the slot with the
//! orderings of a normal build; Miri runs the load and the store.

use std::fmt;
use std::marker::PhantomData;
use std::ptr::{self, NonNull};

use crate::loom::{AtomicPtr, Ordering};
use crate::task::raw::Header;
use crate::task::Notified;

/// Room for one task of scheduler `S`.
pub(crate) struct Slot<S: 'static> {
    /// The task's header, whose reference the slot holds; null when empty.
    task: AtomicPtr<Header>,
    _task: PhantomData<Notified<S>>,
}

impl<S: 'static> Slot<S> {
    pub(crate) fn new() -> Slot<S> {
        Slot {
            task: AtomicPtr::new(ptr::null_mut()),
            _task: PhantomData,
        }
    }

    /// Puts `task` in the slot if it is empty; gives the task back otherwise. Only the slot's
    /// owner puts (see the module's notes).
    pub(crate) fn put(&self, task: Notified<S>) -> Result<(), Notified<S>> {
        // Relaxed: only this thread fills the slot, and a task that a taker has just taken
        // only sends this one to the queue.
        if !self.task.load(Ordering::Relaxed).is_null() {
            return Err(task);
        }
        let raw = task.into_raw();
        #[cfg(not(loom))]
        self.task.store(raw.as_ptr(), Ordering::Release);
        #[cfg(loom)]
        if self
            .task
            .compare_exchange(
                ptr::null_mut(),
                raw.as_ptr(),
                Ordering::Release,
                Ordering::Relaxed,
            )
            .is_err()
        {
            // Never with one putter: the slot read empty above, and only this thread fills it.
            // SAFETY: the slot did not take `raw`, so it is still the reference that
            // `into_raw` gave up just above.
            return Err(unsafe { Notified::from_raw(raw) });
        }
        Ok(())
    }

    /// Takes the task out of the slot, if it holds one.
    pub(crate) fn take(&self) -> Option<Notified<S>> {
        // Most looks find it empty, and a load costs less than a swap. Relaxed: a task seen
        // here is taken by the swap, which orders the rest.
        if self.task.load(Ordering::Relaxed).is_null() {
            return None;
        }
        let old = self.task.swap(ptr::null_mut(), Ordering::AcqRel);
        // SAFETY: a non-null pointer in the slot is a `Notified<S>` reference that `put` gave
        // up with `into_raw`, and the swap took it out of the slot for this thread alone.
        NonNull::new(old).map(|old| unsafe { Notified::from_raw(old) })
    }

    /// Whether the slot is empty. The idle protocol's fences order this check after a
    /// worker's announcement (`scheduler/idle.rs`); `Acquire` pairs with a take's `Release`.
    pub(crate) fn is_empty(&self) -> bool {
        self.task.load(Ordering::Acquire).is_null()
    }
}

impl<S: 'static> Drop for Slot<S> {
    fn drop(&mut self) {
        drop(self.take());
    }
}

impl<S: 'static> fmt::Debug for Slot<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Slot")
            .field("empty", &self.is_empty())
            .finish()
    }
}
