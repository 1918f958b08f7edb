//! Many timers at once: 100,000 tasks each sleeping, first at deadlines spread over a second,
//! then all at the same deadline (a thundering herd). Prints how long each round took, how
//! many timers fired, and how late the tasks woke.
//!
//! Timers are cheap: a sleep allocates nothing beyond its task, and the driver fires a tick's
//! worth of timers in one pass over a wheel slot.
//!
//! ```text
//! cargo run --release --example many_timers
//! ```

use escapement::time::{sleep_until, Duration, Instant};

/// Tasks, each with one sleep, in each round.
const TASKS: u64 = 100_000;

#[escapement::main]
async fn main() {
    // 1. Deadlines spread evenly over one second: about a hundred per 1 ms tick.
    let start = Instant::now();
    let spread = (0..TASKS).map(|i| start + Duration::from_micros(1 + i * 1_000_000 / TASKS));
    report("spread over 1 s", start, run(spread).await);

    // 2. A herd: every deadline the same instant, 100 ms from now.
    let start = Instant::now();
    let deadline = start + Duration::from_millis(100);
    report(
        "all at 100 ms",
        start,
        run((0..TASKS).map(|_| deadline)).await,
    );

    // 3. The runtime's own count: every timer registered fired, none is left.
    let metrics = escapement::Handle::current().metrics();
    println!(
        "runtime: {} timers registered, {} fired, {} live; worker 0 woke {} times",
        metrics.timers_registered(),
        metrics.timers_fired(),
        metrics.live_timers(),
        metrics.driver_wakeups()
    );
}

/// Spawns one task per deadline, each sleeping until it; returns how late each woke, sorted.
async fn run(deadlines: impl Iterator<Item = Instant>) -> Vec<Duration> {
    let tasks: Vec<_> = deadlines
        .map(|deadline| {
            escapement::spawn(async move {
                sleep_until(deadline).await;
                Instant::now() - deadline
            })
        })
        .collect();
    let mut lateness = Vec::with_capacity(tasks.len());
    for task in tasks {
        lateness.push(task.await.expect("a sleeping task panicked"));
    }
    lateness.sort();
    lateness
}

/// Prints one round: how many woke, when the last did, and the spread of their lateness.
fn report(name: &str, start: Instant, lateness: Vec<Duration>) {
    let at = |q: f64| lateness[((lateness.len() - 1) as f64 * q) as usize];
    println!(
        "{name:<16} {} timers fired, all done {:>9.1?} after start; late by p50 {:?}, p99 {:?}, max {:?}",
        lateness.len(),
        start.elapsed(),
        at(0.5),
        at(0.99),
        at(1.0)
    );
}
