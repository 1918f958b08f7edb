//! How fast a burst of tasks spawned from outside the runtime spreads over its workers, on
//! escapement and on tokio with the same number of workers: 2, and one per CPU where there
//! are more.
//!
//! Each round spawns one task per worker from the main thread (`Runtime::spawn`, so they go
//! to the injector) and awaits them. Each task spins, without yielding, until all of them
//! run, so each needs a worker of its own: a task left in the queue of a busy worker waits
//! until another worker takes it. A round's time is from before the first spawn until the
//! last task saw all of them run; a task gives up after [`SPIN_LIMIT`], and such a round
//! counts as stuck. The rounds follow each other at once, while the workers of the round
//! before still go from running to searching to sleeping: that is where a wake-up can be
//! lost (`crates/runtime/src/scheduler/idle.rs`). Each run is a child process, [`RUNS`] runs
//! per runtime, alternating, of [`ROUNDS`] rounds each.
//!
//! ```sh
//! cargo bench -p escapement-benches --bench spread
//! ```
//!
//! On two cores the workers' threads share the CPUs, so a round's time there is mostly the
//! kernel's time slices; the figure that matters is the stuck rounds, and the times on a
//! machine with a core per worker.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[allow(
    dead_code,
    reason = "each benchmark binary uses its own part of the shared code"
)]
mod common;

use common::{child_args, print_result, started_by_cargo_bench, Escapement, Rt, Runs, Tokio};

/// Rounds per run.
const ROUNDS: usize = 300;

/// Runs per runtime.
const RUNS: usize = 3;

/// How long a task spins for the others before its round counts as stuck.
const SPIN_LIMIT: Duration = Duration::from_secs(1);

/// A run still going after this long is killed and reported as hung.
const HANG_LIMIT: Duration = Duration::from_secs(120);

/// A runtime's runs stop after this many hangs.
const MAX_HANGS: usize = 1;

fn main() {
    if let Some(args) = child_args() {
        let workers: usize = args[1].parse().expect("a worker count");
        let sample = match args[0].as_str() {
            "escapement" => spread(&Escapement::new(workers), workers),
            "tokio" => spread(&Tokio::new(workers), workers),
            other => panic!("--child escapement|tokio WORKERS, got {other:?}"),
        };
        print_result(format_args!(
            "{} {} {} {} {}",
            sample.p50_ms, sample.p99_ms, sample.max_ms, sample.over_10ms, sample.stuck
        ));
        return;
    }
    if !started_by_cargo_bench(module_path!()) {
        return;
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut counts = vec![2];
    if cpus > 2 {
        counts.push(cpus);
    }
    for workers in counts {
        table(workers);
    }
}

/// What a run measured over its rounds: round times in milliseconds (median, 99th
/// percentile, slowest), how many rounds took over 10 ms, and how many were stuck.
#[derive(Debug, Clone, Copy)]
struct Sample {
    p50_ms: f64,
    p99_ms: f64,
    max_ms: f64,
    over_10ms: u32,
    stuck: u32,
}

/// Runs every child with `workers` workers and prints the table.
fn table(workers: usize) {
    println!(
        "spread: {workers} tasks spawned from outside per round, workers: {workers}, \
         {ROUNDS} rounds per run, {RUNS} runs each"
    );
    let runs = Runs::collect(workers, RUNS, HANG_LIMIT, MAX_HANGS, parse, |s| {
        format!(
            "round p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms; {} over 10 ms, {} stuck",
            s.p50_ms, s.p99_ms, s.max_ms, s.over_10ms, s.stuck
        )
    });
    println!();
    println!("| workers: {workers} | escapement | tokio | escapement / tokio |");
    println!("|---|---|---|---|");
    runs.print_row("round, median (ms)", |s| s.p50_ms, 3);
    runs.print_row("round, 99th percentile (ms)", |s| s.p99_ms, 3);
    runs.print_row("round, slowest (ms)", |s| s.max_ms, 3);
    // Counts, summed over the runs: a ratio of two zeros says nothing.
    let total =
        |i: usize, count: fn(&Sample) -> u32| -> u32 { runs.samples[i].iter().map(count).sum() };
    for (label, count) in [
        (
            "rounds over 10 ms, all runs",
            (|s| s.over_10ms) as fn(&Sample) -> u32,
        ),
        ("rounds stuck, all runs", |s| s.stuck),
    ] {
        println!("| {label} | {} | {} | |", total(0, count), total(1, count));
    }
    runs.print_completed();
    println!();
}

/// A child's result line.
fn parse(line: &str) -> Sample {
    let fields: Vec<&str> = line.split_whitespace().collect();
    let ms = |i: usize| fields[i].parse::<f64>().expect("milliseconds");
    let count = |i: usize| fields[i].parse::<u32>().expect("a count");
    Sample {
        p50_ms: ms(0),
        p99_ms: ms(1),
        max_ms: ms(2),
        over_10ms: count(3),
        stuck: count(4),
    }
}

/// One run, in a child process.
fn spread<R: Rt>(rt: &R, workers: usize) -> Sample {
    let mut times = Vec::with_capacity(ROUNDS);
    let mut stuck = 0;
    for _ in 0..ROUNDS {
        let started = Arc::new(AtomicUsize::new(0));
        let start = Instant::now();
        let tasks: Vec<_> = (0..workers)
            .map(|_| {
                let started = started.clone();
                rt.spawn(async move {
                    started.fetch_add(1, Ordering::SeqCst);
                    while started.load(Ordering::SeqCst) < workers {
                        if start.elapsed() > SPIN_LIMIT {
                            return (start.elapsed(), false);
                        }
                        std::hint::spin_loop();
                    }
                    (start.elapsed(), true)
                })
            })
            .collect();
        let (time, all_ran) = rt.block_on(async move {
            let mut last = Duration::ZERO;
            let mut all = true;
            for task in tasks {
                let (seen, ran) = task.await;
                last = last.max(seen);
                all &= ran;
            }
            (last, all)
        });
        if !all_ran {
            stuck += 1;
        }
        times.push(time.as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    Sample {
        p50_ms: at(0.5),
        p99_ms: at(0.99),
        max_ms: times[times.len() - 1],
        over_10ms: times.iter().filter(|&&t| t > 10.0).count() as u32,
        stuck,
    }
}
