//! The algorithm: levels, the due list and the current tick, over any [`Arena`].
//!
//! Both public wheels are thin shells around one [`Hierarchy`]: the keyed [`Wheel`] hands it
//! slab indices, the [`IntrusiveWheel`] pointers to caller-owned nodes.
//!
//! The invariant every method keeps between calls: a linked node with deadline `d` sits in
//! the due list when `d <= now`, and otherwise in slot `slot_for(d, L)` of level
//! `L = level_for(now, d)`. The current tick only moves forward to the start of the first
//! occupied slot (which is then emptied and its nodes placed again, "cascaded") or, when no
//! slot starts before it, to the tick a caller polls at; neither move changes where any other
//! node belongs.
//!
//! [`Wheel`]: crate::Wheel
//! [`IntrusiveWheel`]: crate::IntrusiveWheel

use std::fmt;

use crate::level::{
    level_for, slot_for, slot_last, slot_start, way_for, Level, Slot, LEVELS, SLOTS, WAYS,
};
use crate::list::{Arena, List};

pub(crate) struct Hierarchy<H> {
    /// The current tick.
    now: u64,
    /// Linked nodes, in the levels and in `due`.
    len: usize,
    /// Bit `L` is set exactly when level `L` holds a node.
    occupied: u16,
    /// On the heap: eleven levels of 64 slots of four lists are 22 to 45 KiB, too much to
    /// move around.
    levels: Box<[Level<H>; LEVELS]>,
    /// Nodes whose deadline is at or before `now`, sorted by deadline, ties in the order they
    /// were linked.
    due: List<H>,
    /// Slot cascades since the wheel was made.
    cascades: u64,
    /// For each slot of level 0, the arrival number the next node placed there gets. It
    /// goes back to 0 whenever the slot empties, so that a slot's first node is always in
    /// its first list, and it wraps; see `arrived_before`.
    arrivals: [u32; SLOTS],
}

/// Walks a chain of nodes taken out of the wheel, unlinking each and handing it on. Dropped
/// before the end (a callback panicked), it unlinks the rest and hands them to `rest`.
struct Release<'a, A: Arena, R: FnMut(&mut A, A::Handle)> {
    arena: &'a mut A,
    cursor: Option<A::Handle>,
    rest: R,
}

impl<'a, A: Arena, R: FnMut(&mut A, A::Handle)> Release<'a, A, R> {
    fn new(arena: &'a mut A, list: List<A::Handle>, rest: R) -> Self {
        Release {
            arena,
            cursor: list.head,
            rest,
        }
    }

    /// Hands every node to `f`.
    fn run(mut self, mut f: impl FnMut(&mut A, A::Handle)) {
        while let Some(h) = self.next() {
            f(self.arena, h);
        }
    }

    /// Unlinks the node at the cursor and moves past it.
    fn next(&mut self) -> Option<A::Handle> {
        let h = self.cursor?;
        let header = self.arena.header_mut(h);
        self.cursor = header.next.take();
        header.prev = None;
        self.arena.set_linked(h, false);
        Some(h)
    }
}

impl<A: Arena, R: FnMut(&mut A, A::Handle)> Drop for Release<'_, A, R> {
    fn drop(&mut self) {
        while let Some(h) = self.next() {
            (self.rest)(self.arena, h);
        }
    }
}

impl<H: Copy + Eq + fmt::Debug> Hierarchy<H> {
    pub(crate) fn new(now: u64) -> Self {
        let levels: Box<[Level<H>]> = (0..LEVELS).map(|_| Level::new()).collect();
        Hierarchy {
            now,
            len: 0,
            occupied: 0,
            levels: levels
                .try_into()
                .unwrap_or_else(|_| unreachable!("LEVELS levels")),
            due: List::new(),
            cascades: 0,
            arrivals: [0; SLOTS],
        }
    }

    pub(crate) fn now(&self) -> u64 {
        self.now
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn cascades(&self) -> u64 {
        self.cascades
    }

    /// Links `h`, which must not be linked, to fire at `deadline`. (The keyed slab counts
    /// an occupied slot as linked from the moment it is allocated, so this cannot assert it.)
    #[inline]
    pub(crate) fn insert<A: Arena<Handle = H>>(&mut self, arena: &mut A, h: H, deadline: u64) {
        arena.header_mut(h).deadline = deadline;
        arena.set_linked(h, true);
        self.len += 1;
        self.place(arena, h, deadline);
    }

    /// Unlinks `h` if it is linked; returns whether it was.
    #[inline]
    pub(crate) fn remove<A: Arena<Handle = H>>(&mut self, arena: &mut A, h: H) -> bool {
        if !arena.is_linked(h) {
            return false;
        }
        self.unlink(arena, h);
        true
    }

    /// Unlinks `h`, which the caller knows is linked. (The keyed wheel hands over taken slots
    /// after removing them from its queue, when the arena no longer reports them as linked,
    /// so this cannot assert it.)
    #[inline]
    pub(crate) fn unlink<A: Arena<Handle = H>>(&mut self, arena: &mut A, h: H) {
        let deadline = arena.header(h).deadline;
        if deadline <= self.now {
            self.due.unlink(arena, h);
        } else {
            let level = level_for(self.now, deadline);
            let (slot, way) = (
                slot_for(deadline, level),
                Self::way(arena, h, level, deadline),
            );
            if self.levels[level].unlink(arena, slot, way, h) {
                self.occupied &= !(1 << level);
            }
            if level == 0 && self.levels[0].occupied & (1 << slot) == 0 {
                self.arrivals[slot] = 0;
            }
        }
        arena.set_linked(h, false);
        self.len -= 1;
    }

    /// The tick of the next event: the earliest due deadline, or else the start of the first
    /// occupied slot (the exact deadline when that slot is in level 0).
    #[inline]
    pub(crate) fn next_expiration<A: Arena<Handle = H>>(&self, arena: &A) -> Option<u64> {
        match self.due.head {
            Some(h) => Some(arena.header(h).deadline),
            None => self.next_slot().map(|(start, _, _)| start),
        }
    }

    /// `next_expiration` for a wheel where some linked nodes do not count: the first slot
    /// holding a node `counts` accepts. Every node in `due` must count. The cost grows with
    /// the nodes that do not count, which the caller keeps few.
    pub(crate) fn next_expiration_among<A: Arena<Handle = H>>(
        &self,
        arena: &A,
        counts: impl Fn(&A, H) -> bool,
    ) -> Option<u64> {
        if let Some(h) = self.due.head {
            debug_assert!(counts(arena, h), "a due node does not count");
            return Some(arena.header(h).deadline);
        }
        let mut levels = self.occupied;
        while levels != 0 {
            let level = levels.trailing_zeros() as usize;
            let mut slots = self.levels[level].occupied;
            while slots != 0 {
                let slot = slots.trailing_zeros() as usize;
                for list in &self.levels[level].slots[slot] {
                    let mut cursor = list.head;
                    while let Some(h) = cursor {
                        if counts(arena, h) {
                            return Some(slot_start(self.now, level, slot));
                        }
                        cursor = arena.header(h).next;
                    }
                }
                slots &= slots - 1;
            }
            levels &= levels - 1;
        }
        None
    }

    /// Advances toward `now` until a node is due, and unlinks and returns the earliest one.
    ///
    /// `later(arena, h)` is a deadline the owner of `h` moved it to without telling the wheel,
    /// or any value not after its linked one when there is none. It is read whenever the
    /// wheel walks a node: in a cascade, so the node is placed for the later deadline at once,
    /// and before a due node is handed out, which is placed again instead if it was moved:
    /// into a level, or back into the due list behind what is due before it. The keyed wheel
    /// passes a function that returns 0.
    ///
    /// Work is proportional to the occupied slots crossed, never to the ticks elapsed.
    #[inline]
    pub(crate) fn poll<A: Arena<Handle = H>>(
        &mut self,
        arena: &mut A,
        now: u64,
        mut later: impl FnMut(&A, H) -> u64,
    ) -> Option<H> {
        loop {
            if let Some(h) = self.due.pop_front(arena) {
                let linked = arena.header(h).deadline;
                let deadline = Self::refresh(arena, h, &mut later);
                if deadline != linked {
                    // Into a level, or back into `due` behind what is due before it.
                    self.place(arena, h, deadline);
                    continue;
                }
                arena.set_linked(h, false);
                self.len -= 1;
                return Some(h);
            }
            match self.next_slot() {
                Some((start, level, slot)) if start <= now => {
                    self.cascade(arena, start, level, slot, now, &mut later);
                }
                _ => {
                    self.now = self.now.max(now);
                    return None;
                }
            }
        }
    }

    /// Unlinks every node, calling `f` with each after it is unlinked.
    ///
    /// Every list is emptied into one chain before `f` sees a node, so the wheel is empty and
    /// consistent from the first call. If `f` panics, the nodes not yet handed to it are still
    /// unlinked, each then passed to `rest` instead, and the panic goes on.
    pub(crate) fn drain<A: Arena<Handle = H>>(
        &mut self,
        arena: &mut A,
        f: impl FnMut(&mut A, H),
        rest: impl FnMut(&mut A, H),
    ) {
        let mut all = self.due.take();
        for level in self.levels.iter_mut() {
            while let Some(slot) = level.first_occupied() {
                let (lists, _) = level.take(slot);
                for list in lists {
                    all.append(arena, list);
                }
            }
        }
        self.occupied = 0;
        self.len = 0;
        self.arrivals = [0; SLOTS];
        Release::new(arena, all, rest).run(f);
    }

    /// The first occupied slot: its start, level and index.
    #[inline]
    fn next_slot(&self) -> Option<(u64, usize, usize)> {
        if self.occupied == 0 {
            return None;
        }
        let level = self.occupied.trailing_zeros() as usize;
        let slot = self.levels[level].first_occupied()?;
        Some((slot_start(self.now, level, slot), level, slot))
    }

    /// Puts a linked node into the list its deadline and the current tick call for.
    #[inline(always)]
    fn place<A: Arena<Handle = H>>(&mut self, arena: &mut A, h: H, deadline: u64) {
        if deadline <= self.now {
            self.place_due(arena, h, deadline);
        } else {
            let level = level_for(self.now, deadline);
            let slot = slot_for(deadline, level);
            let way = if level == 0 {
                let arrival = self.arrivals[slot];
                self.arrivals[slot] = arrival.wrapping_add(1);
                arena.set_arrival(h, arrival);
                arrival as usize % WAYS
            } else {
                way_for(deadline)
            };
            self.levels[level].push(arena, slot, way, h);
            self.occupied |= 1 << level;
        }
    }

    /// Which of its slot's lists a node placed in `level` for `deadline` is in. Above level 0
    /// a hash of the deadline picks it, so ties share a list. A level-0 slot holds a single
    /// deadline, so there the nodes take the lists in turn by arrival number instead, and a
    /// cascade puts them back in arrival order (`merge_into_due`).
    #[inline]
    fn way<A: Arena<Handle = H>>(arena: &A, h: H, level: usize, deadline: u64) -> usize {
        if level == 0 {
            arena.arrival(h) as usize % WAYS
        } else {
            way_for(deadline)
        }
    }

    /// Whether arrival number `a` was given out before `b`. Numbers wrap, so this holds for
    /// nodes that arrived in one slot fewer than 2^31 placements apart, which nodes sharing a
    /// level-0 slot do unless billions of timers are set within the 64 ticks before it.
    #[inline]
    fn arrived_before(a: u32, b: u32) -> bool {
        (a.wrapping_sub(b) as i32) < 0
    }

    /// Links a due node into `due` after every node whose deadline is not later. Nodes reach
    /// `due` in deadline order from cascades, so the walk back from the tail stops at once
    /// except for nodes inserted with a deadline already in the past.
    fn place_due<A: Arena<Handle = H>>(&mut self, arena: &mut A, h: H, deadline: u64) {
        let mut after = self.due.tail;
        while let Some(a) = after {
            let header = arena.header(a);
            if header.deadline <= deadline {
                break;
            }
            after = header.prev;
        }
        self.due.insert_after(arena, after, h);
    }

    /// Empties the first occupied slot (which starts at `start`, at or before the polled tick
    /// `target`), moving the current tick up to it, and places each of its nodes again. It
    /// takes one node from each of the slot's lists in turn, so that the loads of the next
    /// nodes of different lists do not wait for each other; each list is walked in order, and
    /// nodes with equal deadlines share a list, so they keep their relative order. The due
    /// list is empty (`poll` drains it first).
    ///
    /// Each node walked is placed for its later deadline, if `later` reports one (see
    /// `poll`), which is then its linked deadline.
    ///
    /// A level-0 slot holds one deadline, `start` itself, so its nodes go to the due list
    /// without a look at their deadlines, merged into arrival order (`merge_into_due`; `poll`
    /// asks `later` as it hands each node out).
    ///
    /// A slot higher up that holds a single node lets time jump past `start`, to the node's
    /// deadline, to `target` or to the slot's last tick, whichever is earliest: nothing else
    /// lies before the slot's end. (Only a later deadline can be past the slot.) The node
    /// then lands in the due list or as low as it can, instead of cascading one level per
    /// step, so it is not walked more often than needed.
    fn cascade<A: Arena<Handle = H>>(
        &mut self,
        arena: &mut A,
        start: u64,
        level: usize,
        slot: usize,
        target: u64,
        later: &mut impl FnMut(&A, H) -> u64,
    ) {
        debug_assert!(self.due.is_empty(), "cascading with due nodes waiting");
        self.cascades += 1;
        let (lists, level_empty) = self.levels[level].take(slot);
        if level_empty {
            self.occupied &= !(1 << level);
        }
        if level == 0 {
            self.now = start;
            self.arrivals[slot] = 0;
            self.merge_into_due(arena, lists);
            return;
        }
        if let Some(only) = Self::single(&lists) {
            let deadline = Self::refresh(arena, only, later);
            self.now = deadline.min(target).min(slot_last(start, level)).max(start);
            self.place(arena, only, deadline);
            return;
        }
        self.now = start;
        let mut cursors = lists.map(|list| list.head);
        // One node from each list in turn.
        while cursors.iter().any(Option::is_some) {
            for cursor in &mut cursors {
                if let Some(h) = *cursor {
                    *cursor = arena.header(h).next;
                    let deadline = Self::refresh(arena, h, later);
                    self.place(arena, h, deadline);
                }
            }
        }
    }

    /// Links the nodes of a level-0 slot's lists into the (empty) due list in arrival order.
    /// A slot whose nodes all sit in its first list, as they do in a slot that has held one
    /// node since it was last empty, becomes the due list whole, in O(1). (Which lists are in
    /// use is the same in most slots, so these tests cost no mispredicted branches, where a
    /// search for the one list in use cost about a twentieth of a sparse wheel's firing.)
    ///
    /// Nodes take a slot's lists in turn as they arrive, so the next node is nearly always
    /// the head of the list after the last one's, with the next arrival number; only after a
    /// removal left a gap does the merge compare all four heads. Each list's next head is read
    /// as its previous one leaves, three steps before it is needed, so the four lists' cache
    /// misses overlap as in a cascade (few instructions a step keep three steps within the
    /// processor's window), and the due list is then walked from the cache.
    fn merge_into_due<A: Arena<Handle = H>>(&mut self, arena: &mut A, lists: Slot<H>) {
        debug_assert!(
            self.due.is_empty(),
            "merging into a due list that is not empty"
        );
        if lists[1..].iter().all(List::is_empty) {
            self.due = lists[0];
            return;
        }
        let mut heads = lists.map(|list| list.head.map(|h| (h, arena.arrival(h))));
        let mut way = Self::first_arrival(&heads);
        while let Some(w) = way {
            let Some((h, arrival)) = heads[w] else {
                unreachable!("the chosen list has a head");
            };
            heads[w] = arena.header(h).next.map(|n| (n, arena.arrival(n)));
            self.due.push_back(arena, h);
            let turn = (w + 1) % WAYS;
            way = match heads[turn] {
                Some((_, next)) if next == arrival.wrapping_add(1) => Some(turn),
                _ => Self::first_arrival(&heads),
            };
        }
    }

    /// The list whose head arrived first, if any list has a head.
    #[inline]
    fn first_arrival(heads: &[Option<(H, u32)>; WAYS]) -> Option<usize> {
        let mut first: Option<(usize, u32)> = None;
        for (way, head) in heads.iter().enumerate() {
            if let Some((_, arrival)) = *head {
                if first.is_none_or(|(_, best)| Self::arrived_before(arrival, best)) {
                    first = Some((way, arrival));
                }
            }
        }
        first.map(|(way, _)| way)
    }

    /// The node of a slot's lists when they hold exactly one.
    #[inline]
    fn single(lists: &Slot<H>) -> Option<H> {
        let mut occupied = lists.iter().filter(|list| !list.is_empty());
        match (occupied.next(), occupied.next()) {
            (Some(list), None) if list.head == list.tail => list.head,
            _ => None,
        }
    }

    /// The deadline `h` is to be placed for: its linked one, or the later one `later`
    /// reports, which then becomes its linked one.
    #[inline]
    fn refresh<A: Arena<Handle = H>>(
        arena: &mut A,
        h: H,
        later: &mut impl FnMut(&A, H) -> u64,
    ) -> u64 {
        let linked = arena.header(h).deadline;
        let moved = later(arena, h);
        if moved > linked {
            arena.header_mut(h).deadline = moved;
            moved
        } else {
            linked
        }
    }

    /// Checks every structural invariant, panicking with a description of the first broken.
    pub(crate) fn check_invariants<A: Arena<Handle = H>>(&self, arena: &A) {
        let mut count = 0;
        let mut previous_deadline = 0;
        self.check_list(arena, &self.due, "due list", |h, deadline| {
            assert!(
                deadline <= self.now,
                "{h:?} in the due list has deadline {deadline} after now {}",
                self.now
            );
            assert!(
                deadline >= previous_deadline,
                "due list out of order at {h:?}"
            );
            previous_deadline = deadline;
            count += 1;
        });
        for (level_index, level) in self.levels.iter().enumerate() {
            assert_eq!(
                self.occupied & (1 << level_index) != 0,
                level.occupied != 0,
                "level mask disagrees with level {level_index}"
            );
            // Only the slots the bitmap marks are walked: a node in an unmarked one is missing
            // from `count` below. (Reading all 2,816 lists made this check most of the cost of
            // the model tests.)
            let mut marked = level.occupied;
            while marked != 0 {
                let slot_index = marked.trailing_zeros() as usize;
                marked &= marked - 1;
                let lists = &level.slots[slot_index];
                assert!(
                    lists.iter().any(|list| !list.is_empty()),
                    "slot {slot_index} of level {level_index} is marked but empty"
                );
                for (way_index, list) in lists.iter().enumerate() {
                    let mut last_arrival = None;
                    self.check_list(arena, list, "slot", |h, deadline| {
                        assert!(
                            deadline > self.now,
                            "{h:?} in level {level_index} is not in the future"
                        );
                        assert_eq!(
                            level_for(self.now, deadline),
                            level_index,
                            "{h:?} is in the wrong level"
                        );
                        assert_eq!(
                            slot_for(deadline, level_index),
                            slot_index,
                            "{h:?} is in the wrong slot"
                        );
                        assert_eq!(
                            Self::way(arena, h, level_index, deadline),
                            way_index,
                            "{h:?} is in the wrong list of its slot"
                        );
                        if level_index == 0 {
                            let arrival = arena.arrival(h);
                            assert!(
                                last_arrival.is_none_or(|a| Self::arrived_before(a, arrival)),
                                "{h:?} is out of arrival order in its list"
                            );
                            last_arrival = Some(arrival);
                        }
                        count += 1;
                    });
                }
            }
        }
        assert_eq!(count, self.len, "linked nodes do not match the count");
    }

    fn check_list<A: Arena<Handle = H>>(
        &self,
        arena: &A,
        list: &List<H>,
        what: &str,
        mut f: impl FnMut(H, u64),
    ) {
        let mut prev = None;
        let mut cursor = list.head;
        while let Some(h) = cursor {
            assert!(arena.is_linked(h), "{h:?} in a {what} is not marked linked");
            let header = arena.header(h);
            assert_eq!(
                header.prev, prev,
                "{h:?} has a broken back link in a {what}"
            );
            f(h, header.deadline);
            prev = Some(h);
            cursor = header.next;
        }
        assert_eq!(list.tail, prev, "a {what} has a wrong tail");
    }
}

impl<H> fmt::Debug for Hierarchy<H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hierarchy")
            .field("now", &self.now)
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
