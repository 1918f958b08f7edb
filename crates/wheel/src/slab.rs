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
//!
//! # Deferred cancels
//!
//! Unlinking a cancelled timer writes its two list neighbours. In a slab larger than the cache
//! those are two random lines, and the stores wait for them to arrive: at a million timers
//! that was about a third of an insert+cancel pair (`docs/benchmarks.md`). So once the slab
//! reaches [`DEFER_FROM`] slots (on x86-64, where `core::arch` has a stable prefetch), a
//! cancel takes the value out and makes the key stale at once, asks the CPU to fetch the
//! neighbours' lines for writing, and parks the slot in a queue of [`PENDING`] cancels; the
//! unlink happens when the queue is full, by which time the lines have arrived. Such a slot
//! is *taken*: still linked, but with no value, unknown to every key, and off the free list
//! until its unlink. The wheel unlinks every taken slot before anything walks a list or moves
//! time (see `Wheel::poll`), so the taken state only ever meets inserts, cancels, lookups,
//! and the reads of `Wheel::next_expiration` and the invariant check, which skip it.

use std::num::NonZeroU32;

use crate::key::TimerKey;
use crate::list::{Arena, Header};

/// A slab index plus one, so `Option<Index>` costs no more than an index.
pub(crate) type Index = NonZeroU32;

/// Cancels whose unlink can wait at once. Eight cancels take longer than a memory access even
/// at a fast pace (about 100 ns each at a million timers), so the prefetched lines are in the
/// cache by the time the unlink writes them.
pub(crate) const PENDING: usize = 8;

/// The slab size from which cancels are deferred, by default: 65,536 slots are 2.5 MiB at
/// 40 bytes, more than the L2 caches of most machines. Below it the neighbours of a cancelled
/// timer are usually in the cache already, and deferring would only add work. Other targets
/// than x86-64 never defer, as there is no stable prefetch there.
pub(crate) const DEFER_FROM: usize = if cfg!(target_arch = "x86_64") {
    1 << 16
} else {
    usize::MAX
};

/// One slot: 40 bytes for a `u64` value.
struct Slot<T> {
    header: Header<Index>,
    generation: u32,
    /// The arrival number (`Arena::arrival`), in what would otherwise be padding.
    arrival: u32,
    /// `Some` exactly while the slot holds a timer. A timer in the slab is always in one of
    /// the wheel's lists between operations, so this is also the "linked" flag.
    value: Option<T>,
}

pub(crate) struct Slab<T> {
    slots: Vec<Slot<T>>,
    /// Freed slots, chained through their headers' `next` links.
    free: Option<Index>,
    /// Taken slots waiting for their unlink, each with whether it goes back on the free list
    /// (a slot whose generation reached `u32::MAX` is retired instead), oldest at `cursor`
    /// once the queue is full.
    pending: [Option<(Index, bool)>; PENDING],
    cursor: usize,
    /// Taken slots in `pending`.
    taken: usize,
    /// Cancels are deferred once `slots` holds this many slots.
    defer_from: usize,
}

impl<T> Slab<T> {
    pub(crate) const fn new() -> Self {
        Slab {
            slots: Vec::new(),
            free: None,
            pending: [None; PENDING],
            cursor: 0,
            taken: 0,
            defer_from: DEFER_FROM,
        }
    }

    /// Room for `capacity` timers, plus the slots that deferred cancels hold back when
    /// `capacity` is large enough for cancels to be deferred.
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        let mut slab = Slab::new();
        let extra = if capacity >= slab.defer_from {
            PENDING
        } else {
            0
        };
        slab.slots.reserve_exact(capacity.saturating_add(extra));
        slab
    }

    /// Stores `value` in a free slot and returns the slot's index and key.
    ///
    /// # Panics
    ///
    /// If no slot is free and `u32::MAX - 1` already exist: pending timers, slots taken and
    /// waiting in `pending`, and retired slots all count.
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
            arrival: 0,
            value: Some(value),
        });
        index
    }

    /// Takes the value out of an occupied, unlinked slot and makes every key to it stale.
    #[inline]
    pub(crate) fn free(&mut self, index: Index) -> T {
        let (value, reuse) = self.take(index);
        self.release(index, reuse);
        value
    }

    /// Takes the value out of an occupied slot and makes every key to it stale, leaving its
    /// links alone. Returns the value and whether the slot may be reused.
    #[inline]
    fn take(&mut self, index: Index) -> (T, bool) {
        let slot = &mut self.slots[slot_of(index)];
        let value = slot.value.take().expect("freeing an empty slot");
        let reuse = slot.generation < u32::MAX;
        if reuse {
            slot.generation += 1;
        }
        (value, reuse)
    }

    /// Puts a slot that `take` emptied, and that is now unlinked, on the free list, unless
    /// it is retired for good.
    #[inline]
    fn release(&mut self, index: Index, reuse: bool) {
        if reuse {
            // Unlinking cleared the links; the free list reuses `next`.
            self.slots[slot_of(index)].header.next = self.free;
            self.free = Some(index);
        }
    }

    /// Whether a cancel should be deferred rather than unlink at once.
    #[inline]
    pub(crate) fn defers(&self) -> bool {
        self.slots.len() >= self.defer_from
    }

    pub(crate) fn set_defer_from(&mut self, slots: usize) {
        self.defer_from = slots;
    }

    /// Takes slots waiting for their unlink.
    #[inline]
    pub(crate) fn taken(&self) -> usize {
        self.taken
    }

    /// Cancels the timer in the occupied, linked slot `index` without unlinking it: takes
    /// its value, makes its keys stale, prefetches its neighbours and queues it. When the
    /// queue was full, its oldest slot comes back for the caller to unlink and then hand to
    /// [`release_taken`](Slab::release_taken).
    #[inline]
    pub(crate) fn defer(&mut self, index: Index) -> (T, Option<(Index, bool)>) {
        let header = &self.slots[slot_of(index)].header;
        let (prev, next) = (header.prev, header.next);
        self.prefetch(prev);
        self.prefetch(next);
        let (value, reuse) = self.take(index);
        let oldest = self.pending[self.cursor].replace((index, reuse));
        self.cursor = (self.cursor + 1) % PENDING;
        if oldest.is_none() {
            self.taken += 1;
        }
        (value, oldest)
    }

    /// Removes and returns a queued slot, for the caller to unlink and then hand to
    /// [`release_taken`](Slab::release_taken).
    pub(crate) fn pop_taken(&mut self) -> Option<(Index, bool)> {
        let entry = self.pending.iter_mut().find_map(Option::take)?;
        self.taken -= 1;
        Some(entry)
    }

    /// Hands back a slot from [`defer`](Slab::defer) or [`pop_taken`](Slab::pop_taken)
    /// once it is unlinked.
    #[inline]
    pub(crate) fn release_taken(&mut self, (index, reuse): (Index, bool)) {
        self.release(index, reuse);
    }

    /// Whether the slot holds a timer (rather than being free, retired or taken).
    #[inline]
    pub(crate) fn is_occupied(&self, index: Index) -> bool {
        self.slots[slot_of(index)].value.is_some()
    }

    /// Whether `index` is a taken slot waiting in the queue.
    fn is_taken(&self, index: Index) -> bool {
        self.pending.iter().flatten().any(|&(i, _)| i == index)
    }

    /// Checks the queue of taken slots: its count, and that each is distinct and empty.
    pub(crate) fn check_taken(&self) {
        let queued: Vec<Index> = self.pending.iter().flatten().map(|&(i, _)| i).collect();
        assert_eq!(queued.len(), self.taken, "the taken count is off");
        for (n, &index) in queued.iter().enumerate() {
            assert!(!self.is_occupied(index), "a taken slot holds a value");
            assert!(!queued[..n].contains(&index), "a slot is taken twice");
        }
    }

    /// Asks the CPU to fetch the slot `h` names for writing. A hint only: it changes no
    /// memory and cannot fault, whatever the address.
    #[inline]
    fn prefetch(&self, h: Option<Index>) {
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        if let Some(slot) = h.and_then(|h| self.slots.get(slot_of(h))) {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_ET0};
            // SAFETY: `_mm_prefetch` needs SSE, which every x86-64 CPU has. A prefetch
            // neither reads nor writes memory as far as the program can tell, and the pointer
            // comes from a live reference into the slab anyway.
            unsafe { _mm_prefetch::<_MM_HINT_ET0>(std::ptr::from_ref(slot).cast()) };
        }
        #[cfg(not(all(target_arch = "x86_64", not(miri))))]
        let _ = h;
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
    /// the wheel unlinks it, and nothing asks in between. A taken slot is linked too.
    #[inline]
    fn is_linked(&self, h: Index) -> bool {
        self.is_occupied(h) || self.is_taken(h)
    }

    /// Nothing to record: occupancy stands for linkage (see `is_linked`).
    #[inline]
    fn set_linked(&mut self, _h: Index, _linked: bool) {}

    #[inline]
    fn arrival(&self, h: Index) -> u32 {
        self.slots[slot_of(h)].arrival
    }

    #[inline]
    fn set_arrival(&mut self, h: Index, arrival: u32) {
        self.slots[slot_of(h)].arrival = arrival;
    }
}
