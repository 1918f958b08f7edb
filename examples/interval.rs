//! `interval`: tick at a fixed period, and the three `MissedTickBehavior`s, which decide what
//! happens after a stall made the ticker miss ticks.
//!
//! Runs on a paused clock (`start_paused = true`), so time moves only when the program says
//! and the output is exact and the same on every run: a stall is `time::advance`, and every
//! other wait jumps the clock straight to the next timer.
//!
//! ```text
//! cargo run --example interval
//! ```

use escapement::time::{self, interval, Duration, Instant, MissedTickBehavior};

/// The period of every ticker here.
const PERIOD: Duration = Duration::from_millis(100);

#[escapement::main(start_paused = true)]
async fn main() {
    // 1. A plain interval: the first tick completes at once, then one every period.
    let start = Instant::now();
    let mut ticker = interval(PERIOD);
    let mut seen = Vec::new();
    for _ in 0..4 {
        ticker.tick().await;
        seen.push(ms_since(start, Instant::now()));
    }
    println!("interval(100ms) ticks at {seen:?} ms\n");

    // 2. The same schedule, broken by a stall: the task is busy for 250 ms after the tick
    //    due at 100 ms, so the tick due at 200 comes out only at 350.
    println!("after a 250 ms stall at 100 ms (ticks due at 0, 100, 200, ...):");
    for behavior in [
        MissedTickBehavior::Burst,
        MissedTickBehavior::Delay,
        MissedTickBehavior::Skip,
    ] {
        let ticks = stalled_schedule(behavior).await;
        let shown: Vec<String> = ticks
            .iter()
            .map(|(due, seen)| format!("{due}@{seen}"))
            .collect();
        println!("  {:<6} {}", format!("{behavior:?}"), shown.join("  "));
    }
    println!("  (due@seen, in ms from the first tick)");
    println!("  Burst fires the missed ticks at once, then keeps the original schedule;");
    println!("  Delay restarts the schedule a full period after the late tick;");
    println!("  Skip drops the missed ticks and goes on with the original schedule.");
}

/// Ticks six times with a 250 ms stall after the second tick; returns each tick as (the
/// instant it was due, the instant it completed), in milliseconds from the first.
async fn stalled_schedule(behavior: MissedTickBehavior) -> Vec<(u128, u128)> {
    let start = Instant::now();
    let mut ticker = interval(PERIOD);
    ticker.set_missed_tick_behavior(behavior);
    let mut ticks = Vec::new();
    for n in 0..6 {
        let due = ticker.tick().await;
        ticks.push((ms_since(start, due), ms_since(start, Instant::now())));
        if n == 1 {
            // The stall: on a paused clock, advancing it stands for 250 ms of busy work.
            time::advance(Duration::from_millis(250)).await;
        }
    }
    ticks
}

/// Whole milliseconds from `start` to `instant`.
fn ms_since(start: Instant, instant: Instant) -> u128 {
    (instant - start).as_millis()
}
