//! A hierarchical timing wheel over abstract `u64` ticks.
//!
//! The wheel never reads a clock: callers say what tick it is when they [`poll`]. It is exact
//! (a timer fires at the first poll at or after its deadline, never before; a poll at a tick
//! before the current one is a poll at the current one), inserts and cancels in O(1), accepts
//! every `u64` deadline, and crosses idle time in work proportional to the occupied slots it
//! passes, not to the ticks. (One exception to O(1): a timer inserted
//! with a deadline already past goes into the due list behind every due timer with an equal
//! or earlier deadline, and finds its place by walking back from the latest; past deadlines
//! inserted in descending order cost one step per due timer each.)
//!
//! # Design
//!
//! A tick is read as eleven 6-bit digits. Level `L` has 64 slots, one per value of digit `L`,
//! and a `u64` bitmap of which slots hold timers. A timer whose deadline is later than the
//! current tick sits at the level of the highest digit in which the two differ (the leading
//! zeros of `now ^ deadline`), in the slot named by its deadline's digit there, and in one of
//! the slot's four lists: above level 0, the one a hash of the deadline picks; in level 0,
//! whose slots each hold one deadline, the next in turn. Timers at or before the current
//! tick wait in a due list, sorted by deadline.
//!
//! | level | slot width (ticks) | level range (ticks) | range at 1 ms ticks |
//! |------:|-------------------:|--------------------:|--------------------:|
//! |     0 |                  1 |                2^6  |             64 ms   |
//! |     1 |                2^6 |               2^12  |            4.1 s    |
//! |     2 |               2^12 |               2^18  |            4.4 min  |
//! |     3 |               2^18 |               2^24  |            4.7 h    |
//! |     4 |               2^24 |               2^30  |           12.4 d    |
//! |     5 |               2^30 |               2^36  |            2.2 y    |
//! |     6 |               2^36 |               2^42  |            139 y    |
//! |     7 |               2^42 |               2^48  |          8,900 y    |
//! |     8 |               2^48 |               2^54  |           571 ky    |
//! |     9 |               2^54 |               2^60  |            37 My    |
//! |    10 |               2^60 |               2^64  |           585 My    |
//!
//! The top level uses 16 of its slots (digit 10 has only the top four bits), and reaches
//! `u64::MAX`: no deadline is beyond the wheel, so there is no overflow list to forget.
//!
//! - **Next expiry** comes from the bitmaps alone: the lowest occupied level (a 16-bit mask of
//!   them), then its lowest occupied slot (trailing zeros). Every occupied slot of a level lies
//!   after the current tick's digit there, so no rotation is needed and no slot is read early.
//! - **Advancing** moves the current tick to the start of that slot and cascades it: its timers
//!   are placed again relative to the new tick, dropping to lower levels or into the due list.
//!   Each timer cascades at most once per level. A cascade walks the slot's four lists side
//!   by side, one node from each in turn: a step of a walk waits for the node it loads, a
//!   cache miss in a large wheel, and four walks wait at the same time instead of one after
//!   the other. When no slot starts at or before the polled
//!   tick, the current tick jumps straight to it, which leaves every timer where it belongs:
//!   a jump of 2^40 ticks over an empty wheel is one comparison.
//! - **Firing**: when time reaches a level-0 slot, its four lists are merged into the due
//!   list by the arrival number each timer got there (the lists are taken in turn, so the
//!   merge nearly always takes the next list's head), four misses in flight again; the due
//!   list is then handed out from the cache. Numbers start from 0 each time a slot empties,
//!   so a slot that has held one timer since it was last empty holds it in its first list,
//!   which becomes the due list as it is.
//! - **Order**: above level 0, timers with the same deadline share one list (the hash is of
//!   the deadline), which is appended to and cascaded in order; in level 0 the merge restores
//!   the order of arrival. So ties fire in insertion order. (Arrival numbers are 32 bits and
//!   wrap; the order holds unless 2^31 timers arrive in one level-0 slot while one waits in
//!   it, billions within 64 ticks.)
//! - **Cancel** is an O(1) unlink: a timer's list follows from its deadline, the current
//!   tick and, in level 0, its arrival number, so nodes store no pointer to their list. In a
//!   keyed wheel past 65,536 slots (on x86-64) the unlink waits for the eighth cancel after
//!   it, so that the neighbours' cache lines it writes can be prefetched meanwhile; the timer
//!   is gone for its key at once (`slab.rs`, "Deferred cancels").
//! - **Deadlines moved outside the wheel**: an intrusive node's owner may move its deadline
//!   later by writing it into the node's value, without the wheel (the runtime does, without
//!   its lock). [`IntrusiveWheel::poll_with`] reads that deadline whenever it walks the node,
//!   in a cascade and before handing it out, and places the node for it at once, so a timer
//!   pushed back again and again is walked once per slot it passes through, not once more
//!   at each old deadline, and nodes still come out in deadline order.
//!
//! # Two APIs, one algorithm
//!
//! [`Wheel`] owns its timers in a slab and names them by generation-checked [`TimerKey`]s:
//! safe, and a stale key never touches another timer. [`IntrusiveWheel`] links [`Node`]s that
//! live in the caller's memory (pinned inside a future, say) and allocates nothing; it is the
//! crate's `unsafe` part. (The only other `unsafe` is a prefetch hint in `slab.rs`, which
//! touches no memory.) Both drive the same `Hierarchy` code (`hierarchy.rs`), which is
//! generic over where nodes live.
//!
//! [`poll`]: Wheel::poll

mod hierarchy;
mod intrusive;
mod key;
mod level;
mod list;
mod slab;
mod wheel;

pub use intrusive::{IntrusiveWheel, Node};
pub use key::TimerKey;
pub use wheel::Wheel;

#[cfg(test)]
mod tests {
    use crate::level::{level_range, slot_width, LEVELS};

    /// Reads a power of two as written in the design note's table (`1`, `2^6`).
    fn power(cell: &str) -> u128 {
        match cell.split_once("2^") {
            Some((_, exp)) => 1u128 << exp.parse::<u32>().expect("an exponent"),
            None => cell.parse().expect("a number"),
        }
    }

    #[test]
    fn design_note_table_matches_the_code() {
        let source = include_str!("lib.rs");
        let rows: Vec<Vec<&str>> = source
            .lines()
            .filter_map(|line| line.strip_prefix("//! |"))
            .map(|row| row.split('|').map(str::trim).collect())
            .filter(|cells: &Vec<&str>| cells[0].parse::<usize>().is_ok())
            .collect();
        assert_eq!(rows.len(), LEVELS, "one row per level");
        for (level, cells) in rows.iter().enumerate() {
            assert_eq!(cells[0].parse::<usize>().unwrap(), level);
            assert_eq!(
                power(cells[1]),
                slot_width(level),
                "slot width of level {level}"
            );
            assert_eq!(
                power(cells[2]),
                level_range(level),
                "range of level {level}"
            );
            // The human column: the range in 1 ms ticks, to the precision written.
            let seconds = level_range(level) as f64 / 1e3;
            let (value, unit) = cells[3].rsplit_once(' ').expect("a value and a unit");
            let value: f64 = value.replace(',', "").parse().expect("a number");
            let unit_seconds = match unit {
                "ms" => 1e-3,
                "s" => 1.0,
                "min" => 60.0,
                "h" => 3600.0,
                "d" => 86_400.0,
                "y" => 365.25 * 86_400.0,
                "ky" => 365.25e3 * 86_400.0,
                "My" => 365.25e6 * 86_400.0,
                other => panic!("unknown unit {other}"),
            };
            let written = value * unit_seconds;
            assert!(
                (written - seconds).abs() / seconds < 0.05,
                "level {level}: the note says {} but the range is {seconds} s",
                cells[3]
            );
        }
    }
}
