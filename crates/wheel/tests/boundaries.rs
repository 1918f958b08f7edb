//! Deadlines at the edges: each level's range, the top level, `u64::MAX`, the past, and
//! jumps of the clock over many full rotations; where `now` stands after a poll; and a
//! `clear` whose value drop panics.

use escapement_wheel::Wheel;

/// Polls at `now` until nothing more is due, returning (deadline, value) in firing order.
fn drain(wheel: &mut Wheel<u64>, now: u64) -> Vec<(u64, u64)> {
    let mut fired = Vec::new();
    while let Some((_, deadline, value)) = wheel.poll(now) {
        fired.push((deadline, value));
    }
    wheel.check_invariants();
    fired
}

/// Inserts one timer at `deadline` into a wheel at `start` and checks that it fires at
/// exactly that tick: not one tick before, and at the first poll at or after it.
fn fires_exactly_at(start: u64, deadline: u64) {
    let mut wheel = Wheel::new();
    if start > 0 {
        assert!(wheel.poll(start).is_none());
    }
    wheel.insert(deadline, 7);
    wheel.check_invariants();
    if deadline > start {
        assert_eq!(
            drain(&mut wheel, deadline - 1),
            [],
            "{deadline} fired early (start {start})"
        );
        assert!(wheel.next_expiration().unwrap() <= deadline);
    }
    assert_eq!(
        drain(&mut wheel, deadline),
        [(deadline, 7)],
        "{deadline} did not fire (start {start})"
    );
    assert!(wheel.is_empty());
}

#[test]
fn just_below_and_at_each_level_range() {
    // Under Miri (which only has the safe keyed wheel to check here) one start suffices.
    let starts = |width: u64| -> Vec<u64> {
        if cfg!(miri) {
            vec![width]
        } else {
            vec![0, 1, 63, 64, 1000, width - 1, width]
        }
    };
    for level in 0..=10u32 {
        let width = 1u64 << (6 * level);
        let range = 1u64.checked_shl(6 * (level + 1)).unwrap_or(u64::MAX);
        for start in starts(width) {
            for deadline in [
                width - 1,
                width,
                width + 1,
                range - 1,
                range,
                range.saturating_add(1),
            ] {
                if deadline > start {
                    fires_exactly_at(start, deadline);
                }
            }
        }
    }
}

#[test]
fn the_top_level_reaches_u64_max() {
    for start in [0, 1, 1 << 60, (1 << 60) - 1, u64::MAX - 64, u64::MAX - 1] {
        fires_exactly_at(start, u64::MAX);
        fires_exactly_at(start, u64::MAX - 1);
    }
    // The largest distance the wheel can be asked for: from 0 to u64::MAX.
    fires_exactly_at(0, u64::MAX);
}

#[test]
fn at_and_before_now_is_due_at_the_next_poll() {
    let mut wheel = Wheel::new();
    assert!(wheel.poll(1_000).is_none());
    wheel.insert(1_000, 1);
    wheel.insert(0, 2);
    wheel.insert(999, 3);
    assert_eq!(wheel.next_expiration(), Some(0));
    // Due timers come out even when polled at an earlier tick: time does not go back.
    assert_eq!(drain(&mut wheel, 5), [(0, 2), (999, 3), (1_000, 1)]);
    assert_eq!(wheel.now(), 1_000);
}

#[test]
fn now_reaches_the_polled_tick_once_a_poll_there_returns_none() {
    let mut wheel = Wheel::new();
    wheel.insert(5, 1);
    wheel.insert(1 << 20, 2);
    assert_eq!(wheel.poll(1_000).map(|(_, deadline, _)| deadline), Some(5));
    // Nothing else is due by 1,000, but the poll that returned a timer stopped at its tick.
    assert_eq!(wheel.now(), 5);
    assert!(wheel.poll(1_000).is_none());
    assert_eq!(wheel.now(), 1_000);
}

#[test]
fn now_stays_put_when_a_poll_returns_a_timer_inserted_in_the_past() {
    let mut wheel = Wheel::new();
    assert!(wheel.poll(50).is_none());
    wheel.insert(10, 1);
    assert_eq!(wheel.poll(1_000).map(|(_, deadline, _)| deadline), Some(10));
    assert_eq!(wheel.now(), 50);
}

#[test]
fn a_past_insert_comes_out_after_a_later_deadline_that_came_out_before_it() {
    let mut wheel = Wheel::new();
    wheel.insert(10, 1);
    assert_eq!(drain(&mut wheel, 10), [(10, 1)]);
    wheel.insert(3, 2);
    assert_eq!(drain(&mut wheel, 10), [(3, 2)]);
}

#[test]
fn past_deadlines_come_out_in_deadline_order_then_insertion_order() {
    let mut wheel = Wheel::new();
    wheel.poll(500);
    for (deadline, value) in [(400, 0), (100, 1), (400, 2), (300, 3), (100, 4), (500, 5)] {
        wheel.insert(deadline, value);
    }
    wheel.check_invariants();
    assert_eq!(
        drain(&mut wheel, 500),
        [(100, 1), (100, 4), (300, 3), (400, 0), (400, 2), (500, 5)]
    );
}

#[test]
fn equal_deadlines_fire_in_insertion_order_across_cascades() {
    let mut wheel = Wheel::new();
    // The first timer is inserted while its deadline is three levels up; the others join
    // as time approaches, at levels 2, 1 and 0. They must still fire in insertion order.
    let deadline = 3 * 4096 * 64 + 5 * 4096 + 7 * 64 + 9;
    wheel.insert(deadline, 0);
    let approaches = [3 * 4096 * 64, 3 * 4096 * 64 + 5 * 4096, deadline - 9];
    for (value, now) in (1..).zip(approaches) {
        assert_eq!(drain(&mut wheel, now), []);
        wheel.insert(deadline, value);
    }
    let fired: Vec<u64> = drain(&mut wheel, deadline)
        .into_iter()
        .map(|(_, v)| v)
        .collect();
    assert_eq!(fired, [0, 1, 2, 3]);
}

#[test]
fn jumps_over_many_rotations_fire_everything_in_order() {
    let mut wheel = Wheel::new();
    let deadlines = [5, 64, 4_097, 1 << 20, (1 << 36) + 3, 1 << 50, u64::MAX - 7];
    for (value, &deadline) in deadlines.iter().enumerate().rev() {
        wheel.insert(deadline, value as u64);
    }
    let fired = drain(&mut wheel, u64::MAX);
    let expected: Vec<(u64, u64)> = deadlines
        .iter()
        .enumerate()
        .map(|(v, &d)| (d, v as u64))
        .collect();
    assert_eq!(fired, expected);
}

#[test]
fn a_huge_jump_over_a_sparse_wheel_costs_only_its_occupied_slots() {
    let mut wheel = Wheel::new();
    let far = 1u64 << 40;
    wheel.insert(far + 12_345, 1);
    wheel.insert(far / 2, 2);
    // Nothing is due before `far / 2`: a jump of 2^39 ticks cascades nothing.
    assert_eq!(drain(&mut wheel, far / 2 - 1), []);
    assert_eq!(wheel.cascades(), 0);
    assert_eq!(wheel.now(), far / 2 - 1);
    // Firing both crosses a handful of slots, one cascade per level at most per timer, not
    // one step per tick.
    assert_eq!(
        drain(&mut wheel, far * 4),
        [(far / 2, 2), (far + 12_345, 1)]
    );
    assert!(wheel.cascades() <= 2 * 11, "{} cascades", wheel.cascades());
    // An empty wheel jumps anywhere in one step.
    assert_eq!(drain(&mut wheel, u64::MAX - 1), []);
    assert_eq!(wheel.now(), u64::MAX - 1);
}

#[test]
fn polling_at_next_expiration_always_makes_progress() {
    let mut wheel = Wheel::new();
    for (i, deadline) in [70u64, 4_200, 300_000, 1 << 33, u64::MAX]
        .into_iter()
        .enumerate()
    {
        wheel.insert(deadline, i as u64);
    }
    let mut fired = 0;
    while let Some(next) = wheel.next_expiration() {
        let before = (wheel.len(), wheel.cascades());
        if wheel.poll(next).is_some() {
            fired += 1;
        }
        assert_ne!(
            (wheel.len(), wheel.cascades()),
            before,
            "no progress at {next}"
        );
        wheel.check_invariants();
    }
    assert_eq!(fired, 5);
}

#[test]
fn stale_keys_stay_stale_after_their_slot_is_reused() {
    let mut wheel = Wheel::new();
    let first = wheel.insert(10, 1);
    assert_eq!(wheel.remove(first), Some(1));
    // The next insert reuses the freed slot under a new generation.
    let second = wheel.insert(20, 2);
    assert_ne!(first, second);
    assert!(!wheel.contains(first));
    assert_eq!(wheel.deadline(first), None);
    assert!(!wheel.reschedule(first, 5));
    assert_eq!(wheel.remove(first), None);
    assert_eq!(
        wheel.deadline(second),
        Some(20),
        "the stale key left the new timer alone"
    );
    // A fired timer's key is stale too.
    let (fired, _, _) = wheel.poll(20).unwrap();
    assert_eq!(fired, second);
    let third = wheel.insert(30, 3);
    assert!(!wheel.contains(second));
    assert!(wheel.contains(third));
    // So are the keys of cleared timers.
    wheel.clear();
    assert!(!wheel.contains(third));
    assert!(wheel.is_empty());
}

/// A value whose drop panics when it is the chosen one, counting the drops of the others.
struct Bomb {
    armed: bool,
    dropped: std::rc::Rc<std::cell::Cell<usize>>,
}

impl Drop for Bomb {
    fn drop(&mut self) {
        self.dropped.set(self.dropped.get() + 1);
        if self.armed {
            panic!("a value's drop panics");
        }
    }
}

#[test]
fn a_clear_whose_value_drop_panics_still_empties_the_wheel() {
    let dropped = std::rc::Rc::new(std::cell::Cell::new(0));
    let bomb = |armed| Bomb {
        armed,
        dropped: dropped.clone(),
    };
    let mut wheel = Wheel::new();
    let keys = [
        wheel.insert(5, bomb(true)),
        wheel.insert(5, bomb(false)),
        wheel.insert(5, bomb(false)),
        wheel.insert(900, bomb(false)),
    ];
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| wheel.clear()));
    assert!(outcome.is_err());
    assert_eq!(dropped.get(), 4, "every value was dropped");
    assert!(wheel.is_empty());
    wheel.check_invariants();
    assert!(
        keys.iter().all(|&key| !wheel.contains(key)),
        "every key is stale"
    );
    // The wheel works on: a new timer fires alone, and the old keys touch nothing.
    let fresh = wheel.insert(7, bomb(false));
    for key in keys {
        assert!(wheel.remove(key).is_none());
    }
    let fired: Vec<_> = std::iter::from_fn(|| wheel.poll(100))
        .map(|(key, deadline, _)| (key, deadline))
        .collect();
    assert_eq!(fired, [(fresh, 7)]);
    wheel.check_invariants();
}
