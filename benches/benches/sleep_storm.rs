//! A sleep storm: a million tasks, each sleeping once for a duration drawn uniformly from
//! 1..1000 ms (to the microsecond, seeded), on escapement and on tokio with the same number
//! of workers (one per CPU). Reports, per runtime, the wall time and the CPU time (user +
//! sys, `getrusage(RUSAGE_SELF)`) from the first spawn until the last task has woken, and the
//! process's peak RSS.
//!
//! Peak RSS belongs to a process, so every run is a child process of its own: the binary
//! re-executes itself with `--child <runtime> <workers>`, the child prints one line of
//! results, and the parent runs each runtime [`RUNS`] times, alternating, and prints one
//! table of medians with the range (min–max) in brackets: first with one worker per CPU (the
//! runtimes' default), then with one worker. A run that has not finished after [`HANG_LIMIT`]
//! is killed and counted as hung, and a runtime's runs stop after [`MAX_HANGS`] hangs. A
//! plain bench binary rather than criterion: each sample is a whole process, and the
//! quantities are CPU time and memory as well as time.
//!
//! The tasks are spawned from `block_on`, which then polls a 1 ms sleep until a shared counter
//! says every task is done: wall time carries up to one such period of slack, on both
//! runtimes alike.
//!
//! ```sh
//! cargo bench -p escapement-benches --bench sleep_storm
//! ```

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

#[allow(
    dead_code,
    reason = "each benchmark binary uses its own part of the shared code"
)]
mod common;

use common::{
    child_args, cpu_time, peak_rss_kib, print_result, started_by_cargo_bench, worker_counts,
    Escapement, Rt, Runs, Tokio,
};

/// Tasks in the storm.
const TASKS: usize = 1_000_000;

/// Runs of each runtime, per worker count.
const RUNS: usize = 5;

/// A run still going after this long is killed and counted as a hang (a run takes a few
/// seconds).
const HANG_LIMIT: Duration = Duration::from_secs(30);

/// After this many hung runs of a runtime, its remaining runs at that worker count are
/// skipped.
const MAX_HANGS: usize = 2;

/// What a child measured.
#[derive(Debug, Clone, Copy)]
struct Sample {
    wall_s: f64,
    cpu_s: f64,
    peak_rss_mib: f64,
}

fn main() {
    if let Some(args) = child_args() {
        let workers: usize = args[1].parse().expect("a worker count");
        let sample = match args[0].as_str() {
            "escapement" => storm(&Escapement::new(workers)),
            "tokio" => storm(&Tokio::new(workers)),
            other => panic!("--child escapement|tokio WORKERS, got {other:?}"),
        };
        print_result(format_args!(
            "{} {} {}",
            sample.wall_s, sample.cpu_s, sample.peak_rss_mib
        ));
        return;
    }
    if !started_by_cargo_bench(module_path!()) {
        return;
    }
    for workers in worker_counts() {
        table(workers);
    }
}

/// Runs the storm `RUNS` times on each runtime with `workers` workers and prints the table.
fn table(workers: usize) {
    println!(
        "sleep storm: {TASKS} tasks, sleeps uniform over 1..1000 ms, workers: {workers}, {RUNS} runs each"
    );
    let runs = Runs::collect(workers, RUNS, HANG_LIMIT, MAX_HANGS, parse, |sample| {
        format!(
            "wall {:.3} s, cpu {:.3} s, peak RSS {:.1} MiB",
            sample.wall_s, sample.cpu_s, sample.peak_rss_mib
        )
    });
    println!();
    println!("| workers: {workers} | escapement | tokio | escapement / tokio |");
    println!("|---|---|---|---|");
    let rows: [Row; 3] = [
        ("wall time (s)", |s| s.wall_s, 3),
        ("CPU time, user+sys (s)", |s| s.cpu_s, 3),
        ("peak RSS (MiB)", |s| s.peak_rss_mib, 1),
    ];
    for (label, quantity, precision) in rows {
        runs.print_row(label, quantity, precision);
    }
    runs.print_completed();
    println!();
}

/// A row of the table: its label, the quantity it reports, and its decimals.
type Row = (&'static str, fn(&Sample) -> f64, usize);

/// A child's result line.
fn parse(line: &str) -> Sample {
    let fields: Vec<f64> = line
        .split_whitespace()
        .map(|f| f.parse().expect("a number"))
        .collect();
    Sample {
        wall_s: fields[0],
        cpu_s: fields[1],
        peak_rss_mib: fields[2],
    }
}

/// The storm, in a child process.
fn storm<R: Rt>(rt: &R) -> Sample {
    let done = Arc::new(AtomicUsize::new(0));
    let mut rng = SmallRng::seed_from_u64(0x5702);
    let cpu_before = cpu_time();
    let start = Instant::now();
    rt.block_on(async {
        for _ in 0..TASKS {
            let duration = Duration::from_micros(rng.random_range(1_000..=1_000_000));
            let done = done.clone();
            drop(rt.spawn(async move {
                R::sleep(duration).await;
                done.fetch_add(1, Ordering::Release);
            }));
        }
        while done.load(Ordering::Acquire) < TASKS {
            R::sleep(Duration::from_millis(1)).await;
        }
    });
    let wall = start.elapsed();
    let cpu = cpu_time() - cpu_before;
    Sample {
        wall_s: wall.as_secs_f64(),
        cpu_s: cpu.as_secs_f64(),
        peak_rss_mib: peak_rss_kib() as f64 / 1024.0,
    }
}
