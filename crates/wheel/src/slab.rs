//! Storage for the keyed wheel: a slab of nodes with generation counters.
//!
//! A node's index is its handle in the [`Hierarchy`](crate::hierarchy::Hierarchy); the
//! generation, bumped every time the node is freed, makes the keys of freed nodes stale. A
//! node whose generation would wrap is retired rather than reused, so a stale key can never
//! match again.
//!
//! A slot keeps its value beside its links, deadline and generation, and the value's presence
//! is the slot's occupancy. An insert or a cancel touches the slot's header anyway, so the
//! value comes in the same cache line rather than from a second array. The price is a wider
//! slot for the list walks of a cascade, which read headers only: with a million timers,
//! firing them all costs about a fifth more than with the values kept apart
//! (`docs/benchmarks.md`).

use std::num::NonZeroU32;

use crate::key::TimerKey;
use crate::list::{Arena, Header};

/// A slab index plus one, so `Option<Index>` costs no more than an index.
pub(crate) type Index = NonZeroU32;

/// One slot: 40 bytes for a `u64` value.
struct Slot<T> {
    header: Header<Index>,
    generation: u32,
    /// `Some` exactly while the slot holds a timer. A timer in the slab is always in one of
    /// the wheel's lists between operations, so this is also the "linked" flag.
    value: Option<T>,
}

pub(crate) struct Slab<T> {
    slots: Vec<Slot<T>>,
    /// Freed slots, chained through their headers' `next` links.
    free: Option<Index>,
}

impl<T> Slab<T> {
    pub(crate) const fn new() -> Self {
        Slab {
            slots: Vec::new(),
            free: None,
        }
    }

    pub(crate) fn with_capacity(capacity: usize) -> Self {
        Slab {
            slots: Vec::with_capacity(capacity),
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
                let slot = &mut self.slots[slot_of(index)];
                // The stale link is left in place: linking the timer overwrites both links.
                self.free = slot.header.next;
                slot.value = Some(value);
                let generation = slot.generation;
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
        let index = u32::try_from(self.slots.len() + 1)
            .ok()
            .and_then(NonZeroU32::new)
            .filter(|i| i.get() < u32::MAX)
            .expect("a keyed wheel holds at most u32::MAX - 1 timers");
        self.slots.push(Slot {
            header: Header::new(),
            generation: 0,
            value: Some(value),
        });
        index
    }

    /// Takes the value out of an occupied, unlinked slot and makes every key to it stale.
    #[inline]
    pub(crate) fn free(&mut self, index: Index) -> T {
        let slot = &mut self.slots[slot_of(index)];
        let value = slot.value.take().expect("freeing an empty slot");
        // Unlinking cleared the links; a retired slot stays off the free list for good.
        if slot.generation < u32::MAX {
            slot.generation += 1;
            slot.header.next = self.free;
            self.free = Some(index);
        }
        value
    }

    /// The index `key` names, if its timer is still in the slab.
    #[inline]
    pub(crate) fn lookup(&self, key: TimerKey) -> Option<Index> {
        let index = NonZeroU32::new(key.index)?;
        let slot = self.slots.get(slot_of(index))?;
        (slot.generation == key.generation && slot.value.is_some()).then_some(index)
    }

    /// The current key of an occupied slot.
    #[inline]
    pub(crate) fn key(&self, index: Index) -> TimerKey {
        TimerKey {
            index: index.get(),
            generation: self.slots[slot_of(index)].generation,
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
        &self.slots[slot_of(h)].header
    }

    #[inline]
    fn header_mut(&mut self, h: Index) -> &mut Header<Index> {
        &mut self.slots[slot_of(h)].header
    }

    /// Occupancy: `alloc` sets it before the wheel links the timer, `free` clears it after
    /// the wheel unlinks it, and nothing asks in between.
    #[inline]
    fn is_linked(&self, h: Index) -> bool {
        self.slots[slot_of(h)].value.is_some()
    }

    /// Nothing to record: occupancy stands for linkage (see `is_linked`).
    #[inline]
    fn set_linked(&mut self, _h: Index, _linked: bool) {}
}
