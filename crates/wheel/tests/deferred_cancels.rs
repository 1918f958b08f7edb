//! Cancels in a wheel large enough to defer them (see "Deferred cancels" in `slab.rs`), at
//! the default threshold rather than through the testing hook the model test uses.
//!
//! Too large for Miri, which checks the deferred path through the model test's small wheels
//! that defer every cancel.
#![cfg(not(miri))]

use escapement_wheel::Wheel;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// More timers than the 65,536 slots from which an x86-64 wheel defers cancels.
const TIMERS: u64 = 70_000;

#[test]
fn a_large_wheel_cancels_exactly_and_fires_the_rest_in_order() {
    let mut rng = SmallRng::seed_from_u64(0xDEF0_0001);
    let mut wheel = Wheel::with_capacity(TIMERS as usize);
    let mut keys: Vec<_> = (0..TIMERS)
        .map(|value| {
            let deadline = rng.random_range(1..30_000);
            (wheel.insert(deadline, value), deadline, value)
        })
        .collect();

    // Cancel a random half; each cancel is seen at once, whatever its unlink waits for.
    let mut kept = Vec::new();
    for (n, (key, deadline, value)) in keys.drain(..).enumerate() {
        if rng.random_bool(0.5) {
            assert_eq!(wheel.remove(key), Some(value));
            assert!(!wheel.contains(key));
            assert_eq!(wheel.deadline(key), None);
            assert!(!wheel.reschedule(key, 1));
            assert_eq!(wheel.remove(key), None, "a cancelled key stays stale");
        } else {
            kept.push((deadline, value));
        }
        if n % 997 == 0 {
            assert_eq!(wheel.len(), TIMERS as usize - n - 1 + kept.len());
        }
    }
    assert_eq!(wheel.len(), kept.len());
    wheel.check_invariants();
    let earliest = kept.iter().map(|&(deadline, _)| deadline).min();
    assert!(wheel.next_expiration() <= earliest);

    // Reinserting reuses slots, and the rest fire at their deadlines, ties in insertion order.
    kept.sort_by_key(|&(deadline, _)| deadline);
    let mut fired = Vec::new();
    for now in 0..30_000 {
        while let Some((_, deadline, value)) = wheel.poll(now) {
            assert_eq!(deadline, now, "fired at the wrong tick");
            fired.push((deadline, value));
        }
    }
    assert_eq!(fired, kept);
    assert!(wheel.is_empty());
    wheel.check_invariants();
}

#[test]
fn clearing_a_large_wheel_with_cancels_waiting_leaves_it_empty_and_reusable() {
    let mut wheel = Wheel::new();
    let keys: Vec<_> = (0..TIMERS).map(|n| wheel.insert(100 + n % 64, n)).collect();
    for &key in keys.iter().step_by(3) {
        wheel.remove(key);
    }
    wheel.clear();
    assert!(wheel.is_empty());
    assert_eq!(wheel.next_expiration(), None);
    wheel.check_invariants();
    let key = wheel.insert(5, 1);
    assert_eq!(wheel.poll(5), Some((key, 5, 1)));
}
