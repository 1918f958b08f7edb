//! [`Wheel`], the safe keyed wheel: timers carry a value, are named by a [`TimerKey`], and
//! live in the wheel's own slab.

use std::fmt;

use crate::hierarchy::Hierarchy;
use crate::key::TimerKey;
use crate::list::Arena;
use crate::slab::{Index, Slab};

/// A hierarchical timing wheel that owns its timers, each carrying a value of type `T`.
///
/// Ticks are plain `u64`s; the wheel never reads a clock. Time moves forward only through
/// [`poll`](Wheel::poll), which hands out one due timer per call, earliest deadline first.
///
/// # Examples
///
/// ```
/// use escapement_wheel::Wheel;
///
/// let mut wheel = Wheel::new();
/// let late = wheel.insert(300, "late");
/// wheel.insert(20, "early");
/// assert_eq!(wheel.next_expiration(), Some(20));
///
/// assert_eq!(wheel.poll(10), None, "nothing is due at tick 10");
/// assert_eq!(wheel.poll(1_000).map(|(_, at, v)| (at, v)), Some((20, "early")));
/// assert_eq!(wheel.remove(late), Some("late"));
/// assert!(wheel.is_empty());
/// ```
pub struct Wheel<T> {
    hierarchy: Hierarchy<Index>,
    slab: Slab<T>,
}

impl<T> Wheel<T> {
    /// An empty wheel whose current tick is 0.
    pub fn new() -> Self {
        Wheel {
            hierarchy: Hierarchy::new(0),
            slab: Slab::new(),
        }
    }

    /// An empty wheel with room for `capacity` timers before it allocates.
    ///
    /// # Panics
    ///
    /// If the room asked for exceeds `isize::MAX` bytes, as `Vec::with_capacity` does.
    pub fn with_capacity(capacity: usize) -> Self {
        Wheel {
            hierarchy: Hierarchy::new(0),
            slab: Slab::with_capacity(capacity),
        }
    }

    /// The current tick: never more than the greatest tick given to [`poll`](Wheel::poll), and
    /// equal to it once a poll at that tick has returned `None`. A poll that returns a timer
    /// stops at that timer's tick, even when nothing else is due before the tick asked for;
    /// for a timer inserted with a deadline already passed, it stays where it was (time
    /// never goes back).
    pub fn now(&self) -> u64 {
        self.hierarchy.now()
    }

    /// The number of pending timers.
    pub fn len(&self) -> usize {
        self.hierarchy.len() - self.slab.taken()
    }

    /// Whether no timer is pending.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds a timer due at tick `deadline` and returns its key.
    ///
    /// Any deadline is accepted. One at or before [`now`](Wheel::now) is due at the next poll.
    ///
    /// # Panics
    ///
    /// If the wheel needs a new slot and already has `u32::MAX - 1`. The slots count the
    /// pending timers, up to 8 removed ones still waiting for their unlink, and every slot
    /// retired because 2^32 timers have used it (its keys' generations ran out).
    #[inline]
    pub fn insert(&mut self, deadline: u64, value: T) -> TimerKey {
        let (index, key) = self.slab.alloc(value);
        self.hierarchy.insert(&mut self.slab, index, deadline);
        key
    }

    /// Removes a pending timer and returns its value, or `None` if `key` is stale.
    ///
    /// The timer is gone at once for every method. In a wheel of 65,536 slots or more (on
    /// x86-64), the unlink from its slot list waits for a later cancel or poll, so that the
    /// memory it writes can be fetched meanwhile; its storage is reused only after that.
    #[inline]
    pub fn remove(&mut self, key: TimerKey) -> Option<T> {
        let index = self.slab.lookup(key)?;
        if self.slab.defers() {
            return Some(self.remove_deferred(index));
        }
        // A timer in the slab is always linked.
        self.hierarchy.unlink(&mut self.slab, index);
        Some(self.slab.free(index))
    }

    /// `remove` in a large wheel: the unlink waits in the slab's queue (see "Deferred
    /// cancels" in `slab.rs`). Out of line, so the common path of a small wheel stays short.
    #[inline(never)]
    fn remove_deferred(&mut self, index: Index) -> T {
        if self.slab.header(index).deadline <= self.now() {
            // The due list stays exact: it is walked to keep its order, and read by
            // `next_expiration` and `poll` without further checks.
            self.hierarchy.unlink(&mut self.slab, index);
            return self.slab.free(index);
        }
        let (value, oldest) = self.slab.defer(index);
        if let Some(oldest) = oldest {
            self.finish_taken(oldest);
        }
        value
    }

    /// Unlinks a slot that left the slab's queue of taken slots, and lets the slab reuse it.
    #[inline]
    fn finish_taken(&mut self, taken: (Index, bool)) {
        self.hierarchy.unlink(&mut self.slab, taken.0);
        self.slab.release_taken(taken);
    }

    /// Unlinks every taken slot, so that every linked node holds a timer again.
    #[cold]
    #[inline(never)]
    fn unlink_taken(&mut self) {
        while let Some(taken) = self.slab.pop_taken() {
            self.finish_taken(taken);
        }
    }

    /// Moves a pending timer to `deadline`, keeping its key. Returns `false`, and changes
    /// nothing, if `key` is stale.
    ///
    /// Among timers with equal deadlines, a rescheduled timer counts as inserted now.
    #[inline]
    pub fn reschedule(&mut self, key: TimerKey, deadline: u64) -> bool {
        let Some(index) = self.slab.lookup(key) else {
            return false;
        };
        self.hierarchy.unlink(&mut self.slab, index);
        self.hierarchy.insert(&mut self.slab, index, deadline);
        true
    }

    /// The deadline of a pending timer, or `None` if `key` is stale.
    pub fn deadline(&self, key: TimerKey) -> Option<u64> {
        let index = self.slab.lookup(key)?;
        Some(self.slab.header(index).deadline)
    }

    /// Whether `key` names a pending timer.
    pub fn contains(&self, key: TimerKey) -> bool {
        self.slab.lookup(key).is_some()
    }

    /// The tick at which the next poll can make progress, or `None` when the wheel is empty.
    ///
    /// It is never later than the earliest deadline, and equal to it when that timer is due
    /// within the current 64-tick block. Otherwise it is the start of the slot holding the
    /// earliest timer: polling at it moves that slot's timers closer (a cascade) without
    /// firing any due later than that start, and a caller loops until [`poll`](Wheel::poll)
    /// returns a timer.
    pub fn next_expiration(&self) -> Option<u64> {
        if self.slab.taken() == 0 {
            self.hierarchy.next_expiration(&self.slab)
        } else {
            // A slot may hold only taken nodes; skip it. There are at most `PENDING` of them,
            // so this looks at a bounded number of nodes.
            self.hierarchy
                .next_expiration_among(&self.slab, |slab, index| slab.is_occupied(index))
        }
    }

    /// Advances the wheel toward tick `now` and removes the earliest timer due at or before
    /// it, returning its key, deadline and value.
    ///
    /// Timers come out in nondecreasing deadline order, ties in insertion order. The one
    /// exception: a timer inserted at a tick already passed is due at once, so it can come
    /// out after a timer with a later deadline that came out before it was inserted. Each call
    /// fires at most one timer; call again until it returns `None` to drain everything due.
    /// Advancing costs work proportional to the occupied slots crossed, not to the ticks
    /// elapsed, so a jump over a long idle stretch is immediate. A `now` earlier than the
    /// current tick does not move time back: the poll is one at the current tick, so a timer
    /// due at or before that tick still comes out.
    #[inline]
    pub fn poll(&mut self, now: u64) -> Option<(TimerKey, u64, T)> {
        if self.slab.taken() != 0 {
            self.unlink_taken();
        }
        let index = self.hierarchy.poll(&mut self.slab, now, |_, _| 0)?;
        let key = self.slab.key(index);
        let deadline = self.slab.header(index).deadline;
        Some((key, deadline, self.slab.free(index)))
    }

    /// Removes every pending timer, keeping the current tick. Their keys become stale.
    ///
    /// If dropping a value panics, the other values are still dropped (a second panic then
    /// aborts, as with `Vec`), and the wheel is left empty.
    pub fn clear(&mut self) {
        self.unlink_taken();
        let free = |slab: &mut Slab<T>, index| {
            slab.free(index);
        };
        self.hierarchy.drain(&mut self.slab, free, free);
    }

    /// Slots emptied so far as time reached them: a slot of a higher level emptied into lower
    /// levels (a cascade proper), or a slot of level 0 into the due list.
    pub fn cascades(&self) -> u64 {
        self.hierarchy.cascades()
    }

    /// Checks every structural invariant of the wheel. A testing aid: it walks every timer.
    ///
    /// # Panics
    ///
    /// If an invariant does not hold (a bug in this crate): a bitmap disagrees with its slot,
    /// a timer sits in a level or slot other than the one its deadline and the current tick
    /// call for, a due timer is out of order, a link is broken, or the count is off.
    pub fn check_invariants(&self) {
        self.hierarchy.check_invariants(&self.slab);
        self.slab.check_taken();
    }

    /// Testing aid: defer cancels once the wheel's storage holds `slots` slots, instead of
    /// the default (65,536 on x86-64, never elsewhere), so that tests can reach the deferred
    /// path with few timers. Not part of the stable API.
    #[doc(hidden)]
    pub fn defer_cancels_from(&mut self, slots: usize) {
        self.slab.set_defer_from(slots);
    }
}

impl<T> Default for Wheel<T> {
    fn default() -> Self {
        Wheel::new()
    }
}

impl<T> fmt::Debug for Wheel<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Wheel")
            .field("now", &self.now())
            .field("len", &self.len())
            .finish_non_exhaustive()
    }
}
