//! The timing wheel on its own: a million timers inserted at random deadlines, a third of
//! them cancelled, the rest fired in order by advancing one tick at a time.
//!
//! ```text
//! cargo run --release --example wheel
//! ```

use std::time::Instant;

use escapement_wheel::Wheel;

/// A small xorshift generator, so the example needs no dependencies.
struct Rng(u64);

impl Rng {
    fn below(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % bound
    }
}

fn main() {
    const TIMERS: u64 = 1_000_000;
    const HORIZON: u64 = 30_000; // ticks: 30 s of 1 ms ticks
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let mut wheel = Wheel::with_capacity(TIMERS as usize);

    let start = Instant::now();
    let keys: Vec<_> = (0..TIMERS)
        .map(|i| wheel.insert(1 + rng.below(HORIZON), i))
        .collect();
    let inserted = start.elapsed();

    let start = Instant::now();
    let mut cancelled = 0;
    for key in keys.iter().step_by(3) {
        if wheel.remove(*key).is_some() {
            cancelled += 1;
        }
    }
    let removed = start.elapsed();

    let start = Instant::now();
    let (mut fired, mut last_deadline, mut early) = (0u64, 0, 0);
    for now in 0..=HORIZON {
        while let Some((_, deadline, _)) = wheel.poll(now) {
            early += u64::from(deadline > now);
            assert!(deadline >= last_deadline, "fired out of order");
            last_deadline = deadline;
            fired += 1;
        }
    }
    let drained = start.elapsed();

    let per = |n: u64, d: std::time::Duration| d.as_nanos() as f64 / n as f64;
    println!(
        "inserted  {TIMERS} timers in {inserted:?} ({:.1} ns each)",
        per(TIMERS, inserted)
    );
    println!(
        "cancelled {cancelled} timers in {removed:?} ({:.1} ns each)",
        per(cancelled, removed)
    );
    println!(
        "fired     {fired} timers over {HORIZON} ticks in {drained:?} ({:.1} ns each), {early} early",
        per(fired, drained)
    );
    assert_eq!(
        fired + cancelled,
        TIMERS,
        "every timer either fired or was cancelled"
    );
    assert!(wheel.is_empty());
}
