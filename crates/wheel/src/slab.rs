//! Storage for the keyed wheel: a slab of nodes with generation counters.
//!
//! A node's index is its handle in the [`Hierarchy`](crate::hierarchy::Hierarchy); the
//! generation, bumped every time the node is freed, makes the keys of freed nodes stale. A
//! node whose generation would wrap is retired rather than reused, so a stale key can never
//! match again.
//!
//! What the wheel touches on every operation (links, deadline, generation, linked flag) sits in
//! one compact array; the values, touched only when a timer is added or leaves, in another.

use std::num::NonZeroU32;

use crate::key::TimerKey;
use crate::list::{Arena, Header};

/// A slab index plus one, so `Option<Index>` costs no more than an index.
pub(crate) type Index = NonZeroU32;

/// The part of a slot the wheel works with: 24 bytes.
struct Hot {
    header: Header<Index>,
    generation: u32,
    /// Whether the slot holds a timer. A timer in the slab is always in one of the wheel's
    /// lists between operations, so this is also the "linked" flag the wheel asks about.
    occupied: bool,
}

pub(crate) struct Slab<T> {
    hot: Vec<Hot>,
    /// `Some` exactly while the slot is occupied.
    values: Vec<Option<T>>,
    /// Freed slots, chained through their headers' `next` links.
    free: Option<Index>,
}

impl<T> Slab<T> {
    pub(crate) const fn new() -> Self {
        Slab {
            hot: Vec::new(),
            values: Vec::new(),
            free: None,
        }
    }

    pub(crate) fn with_capacity(capacity: usize) -> Self {
        Slab {
            hot: Vec::with_capacity(capacity),
            values: Vec::with_capacity(capacity),
            free: None,
        }
    }

    /// Stores `value` in a free slot and returns the slot's index and key.
    ///
    /// # Panics
    ///
    /// If `u32::MAX - 1` slots are already in use.
    #[inline]
    pub(crate) fn alloc(&mut self, value: T) -> (Index, TimerKey) {
        let (index, generation) = match self.free {
            Some(index) => {
                let hot = &mut self.hot[slot_of(index)];
                // The stale link is left in place: linking the timer overwrites both links.
                self.free = hot.header.next;
                hot.occupied = true;
                let generation = hot.generation;
                self.values[slot_of(index)] = Some(value);
                (index, generation)
            }
            None => (self.grow(value), 0),
        };
        let key = TimerKey {
            index: index.get(),
            generation,
        };
        (index, key)
    }

    /// Stores `value` in a new slot at the end: the slow path of `alloc`, kept out of line so
    /// the common path (reusing a freed slot) stays small.
    #[cold]
    #[inline(never)]
    fn grow(&mut self, value: T) -> Index {
        let index = u32::try_from(self.hot.len() + 1)
            .ok()
            .and_then(NonZeroU32::new)
            .filter(|i| i.get() < u32::MAX)
            .expect("a keyed wheel holds at most u32::MAX - 1 timers");
        self.hot.push(Hot {
            header: Header::new(),
            generation: 0,
            occupied: true,
        });
        self.values.push(Some(value));
        index
    }

    /// Takes the value out of an occupied, unlinked slot and makes every key to it stale.
    #[inline]
    pub(crate) fn free(&mut self, index: Index) -> T {
        let hot = &mut self.hot[slot_of(index)];
        debug_assert!(hot.occupied, "freeing an empty slot");
        hot.occupied = false;
        // Unlinking cleared the links; a retired slot stays off the free list for good.
        if hot.generation < u32::MAX {
            hot.generation += 1;
            hot.header.next = self.free;
            self.free = Some(index);
        }
        self.values[slot_of(index)]
            .take()
            .expect("an occupied slot holds a value")
    }

    /// The index `key` names, if its timer is still in the slab.
    #[inline]
    pub(crate) fn lookup(&self, key: TimerKey) -> Option<Index> {
        let index = NonZeroU32::new(key.index)?;
        let hot = self.hot.get(slot_of(index))?;
        (hot.generation == key.generation && hot.occupied).then_some(index)
    }

    /// The current key of an occupied slot.
    #[inline]
    pub(crate) fn key(&self, index: Index) -> TimerKey {
        TimerKey {
            index: index.get(),
            generation: self.hot[slot_of(index)].generation,
        }
    }
}

fn slot_of(index: Index) -> usize {
    index.get() as usize - 1
}

impl<T> Arena for Slab<T> {
    type Handle = Index;

    #[inline]
    fn header(&self, h: Index) -> &Header<Index> {
        &self.hot[slot_of(h)].header
    }

    #[inline]
    fn header_mut(&mut self, h: Index) -> &mut Header<Index> {
        &mut self.hot[slot_of(h)].header
    }

    /// Occupancy: `alloc` sets it before the wheel links the timer, `free` clears it after
    /// the wheel unlinks it, and nothing asks in between.
    #[inline]
    fn is_linked(&self, h: Index) -> bool {
        self.hot[slot_of(h)].occupied
    }

    /// Nothing to record: occupancy stands for linkage (see `is_linked`).
    #[inline]
    fn set_linked(&mut self, _h: Index, _linked: bool) {}
}
