//! One level of the wheel, and the arithmetic that places a deadline in a level and a slot.
//!
//! A tick is read as eleven 6-bit digits; digit `L` is the slot index at level `L`. A deadline
//! later than the current tick lives at the level of the highest digit in which the two
//! differ, in the slot its own digit names there. Because the digits above that level are the
//! same as the current tick's, and its digit at that level is larger, a level's occupied slots
//! all lie after the current tick's slot: the lowest set bit of the occupancy bitmap is the
//! next slot to expire, with no rotation and no wrap-around.

use crate::list::{Arena, List};

/// Bits of a tick per level: each level has `1 << LEVEL_BITS` slots.
pub(crate) const LEVEL_BITS: u32 = 6;

/// Slots per level.
pub(crate) const SLOTS: usize = 1 << LEVEL_BITS;

/// Levels in the wheel: enough 6-bit digits to cover all 64 bits of a tick, so the top level
/// reaches `u64::MAX` and no deadline is ever beyond the wheel.
pub(crate) const LEVELS: usize = (u64::BITS as usize).div_ceil(LEVEL_BITS as usize);

/// The level a deadline later than `now` belongs to: the highest 6-bit digit in which the two
/// differ.
#[inline]
pub(crate) fn level_for(now: u64, deadline: u64) -> usize {
    debug_assert!(deadline > now, "only a future deadline has a level");
    let highest_bit = u64::BITS - 1 - (now ^ deadline).leading_zeros();
    (highest_bit / LEVEL_BITS) as usize
}

/// The slot a deadline occupies at `level`: its digit there.
#[inline]
pub(crate) fn slot_for(deadline: u64, level: usize) -> usize {
    ((deadline >> (LEVEL_BITS as usize * level)) & (SLOTS as u64 - 1)) as usize
}

/// The first tick that slot `slot` of `level` covers, given that the current tick is `now`:
/// `now`'s digits above `level`, then `slot`, then zeros.
#[inline]
pub(crate) fn slot_start(now: u64, level: usize, slot: usize) -> u64 {
    let shift = LEVEL_BITS * level as u32;
    let above = now.checked_shr(shift + LEVEL_BITS).unwrap_or(0);
    let above = above.checked_shl(shift + LEVEL_BITS).unwrap_or(0);
    above | ((slot as u64) << shift)
}

/// The last tick of the slot of `level` that starts at `start`.
#[inline]
pub(crate) fn slot_last(start: u64, level: usize) -> u64 {
    start | ((1u64 << (LEVEL_BITS as usize * level)) - 1)
}

/// Ticks one slot of `level` spans: `64^level`.
#[cfg(test)]
pub(crate) fn slot_width(level: usize) -> u128 {
    1u128 << (LEVEL_BITS as usize * level)
}

/// Ticks the whole of `level` spans, the farthest a deadline at that level can be from the
/// start of the current tick's slot one level up: `64^(level + 1)`, capped by the width of a
/// tick (`2^64`) at the top level.
#[cfg(test)]
pub(crate) fn level_range(level: usize) -> u128 {
    (slot_width(level) * SLOTS as u128).min(1u128 << u64::BITS)
}

/// Lists per slot. A slot's timers are spread over its lists, so that a cascade can walk them
/// side by side: each step of a walk waits for the node it loads (at a million timers, a
/// cache miss), and walks through separate lists wait at the same time. Above level 0 the
/// deadline picks the list, so timers with the same deadline share one, which keeps their
/// order; level 0 deals its timers out in turn (`hierarchy.rs`).
pub(crate) const WAYS: usize = 4;

/// The list of its slot a deadline is linked into: a multiplicative hash of the whole
/// deadline, which spreads a slot's timers evenly even when their deadlines share low bits.
/// Level 0 does not use it: a level-0 slot holds a single deadline.
#[inline]
pub(crate) fn way_for(deadline: u64) -> usize {
    (deadline.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (u64::BITS - WAYS.ilog2())) as usize
}

/// One slot's lists.
pub(crate) type Slot<H> = [List<H>; WAYS];

/// One level: 64 slots and a bitmap of which are non-empty.
#[derive(Debug)]
pub(crate) struct Level<H> {
    /// Bit `s` is set exactly when a list of `slots[s]` is non-empty.
    pub(crate) occupied: u64,
    pub(crate) slots: [Slot<H>; SLOTS],
}

impl<H: Copy + Eq + std::fmt::Debug> Level<H> {
    pub(crate) const fn new() -> Self {
        Level {
            occupied: 0,
            slots: [const { [const { List::new() }; WAYS] }; SLOTS],
        }
    }

    /// Links `h` at the back of list `way` of `slot`.
    #[inline]
    pub(crate) fn push<A: Arena<Handle = H>>(
        &mut self,
        arena: &mut A,
        slot: usize,
        way: usize,
        h: H,
    ) {
        self.slots[slot][way].push_back(arena, h);
        self.occupied |= 1 << slot;
    }

    /// Unlinks `h` from list `way` of `slot`; returns whether the level is now empty.
    #[inline]
    pub(crate) fn unlink<A: Arena<Handle = H>>(
        &mut self,
        arena: &mut A,
        slot: usize,
        way: usize,
        h: H,
    ) -> bool {
        let lists = &mut self.slots[slot];
        lists[way].unlink(arena, h);
        if lists[way].is_empty() && lists.iter().all(List::is_empty) {
            self.occupied &= !(1 << slot);
        }
        self.occupied == 0
    }

    /// Empties `slot` and returns its lists; the second value says whether the level is now
    /// empty.
    #[inline]
    pub(crate) fn take(&mut self, slot: usize) -> (Slot<H>, bool) {
        self.occupied &= !(1 << slot);
        let lists = self.slots[slot].each_mut().map(|list| list.take());
        (lists, self.occupied == 0)
    }

    /// The first non-empty slot.
    #[inline]
    pub(crate) fn first_occupied(&self) -> Option<usize> {
        (self.occupied != 0).then(|| self.occupied.trailing_zeros() as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eleven_levels_cover_every_bit() {
        assert_eq!(LEVELS, 11);
        assert_eq!(SLOTS, 64);
        assert_eq!(level_for(0, u64::MAX), LEVELS - 1);
        assert_eq!(
            slot_for(u64::MAX, LEVELS - 1),
            15,
            "the top level uses 16 of its slots"
        );
    }

    #[test]
    fn level_is_the_highest_differing_digit() {
        assert_eq!(level_for(0, 1), 0);
        assert_eq!(level_for(0, 63), 0);
        assert_eq!(level_for(0, 64), 1);
        assert_eq!(level_for(0, 4095), 1);
        assert_eq!(level_for(0, 4096), 2);
        // Near a slot boundary the digits decide, not the distance: 63 -> 64 is one tick but
        // crosses a level-1 digit.
        assert_eq!(level_for(63, 64), 1);
        assert_eq!(level_for(64, 127), 0);
        for level in 0..LEVELS {
            let first = 1u64 << (LEVEL_BITS as usize * level);
            assert_eq!(level_for(0, first), level, "first tick of level {level}");
            let last = (level_range(level) - 1) as u64;
            assert_eq!(level_for(0, last), level, "last tick of level {level}");
        }
    }

    #[test]
    fn slot_is_the_deadlines_digit() {
        assert_eq!(slot_for(0b000011_000101, 0), 0b000101);
        assert_eq!(slot_for(0b000011_000101, 1), 0b000011);
        assert_eq!(slot_for(u64::MAX, 0), 63);
        assert_eq!(slot_for(1 << 60, 10), 1);
    }

    #[test]
    fn slot_start_keeps_the_upper_digits_of_now() {
        // now = 5 * 4096 + 7 * 64 + 9: level 1, slot 10 starts at 5 * 4096 + 10 * 64.
        let now = 5 * 4096 + 7 * 64 + 9;
        assert_eq!(slot_start(now, 1, 10), 5 * 4096 + 10 * 64);
        assert_eq!(slot_start(now, 0, 12), 5 * 4096 + 7 * 64 + 12);
        assert_eq!(slot_start(now, 2, 6), 6 * 4096);
        assert_eq!(slot_start(u64::MAX - 5, 10, 15), 15 << 60);
        assert_eq!(slot_start(3, 10, 1), 1 << 60);
    }

    #[test]
    fn a_slots_deadlines_spread_over_its_lists() {
        let level_1_slot: Vec<u64> = (64..128).collect();
        let same_low_digit: Vec<u64> = (0..64).map(|i| 4096 + i * 64).collect();
        let whole_seconds: Vec<u64> = (1..=64).map(|i| i * 1000).collect();
        for deadlines in [level_1_slot, same_low_digit, whole_seconds] {
            let mut per_list = [0; WAYS];
            for &d in &deadlines {
                per_list[way_for(d)] += 1;
            }
            assert!(
                per_list.iter().all(|&n| (8..=24).contains(&n)),
                "64 deadlines from {} spread as {per_list:?}",
                deadlines[0]
            );
        }
    }

    #[test]
    fn a_deadline_lies_in_the_slot_it_is_placed_in() {
        let samples = [
            0u64,
            1,
            63,
            64,
            65,
            4095,
            4096,
            1 << 40,
            (1 << 60) - 1,
            u64::MAX - 1,
        ];
        for &now in &samples {
            for &d in &samples {
                if d <= now {
                    continue;
                }
                let level = level_for(now, d);
                let start = slot_start(now, level, slot_for(d, level));
                assert!(start > now, "slot of {d} starts after now {now}");
                assert!(u128::from(start) <= u128::from(d));
                assert!(u128::from(d) < u128::from(start) + slot_width(level));
            }
        }
    }
}
