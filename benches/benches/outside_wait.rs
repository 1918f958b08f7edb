//! How long a task spawned from outside the runtime waits for its first poll while every
//! worker is busy, on escapement and on tokio with the same number of workers: 1, and one
//! per CPU.
//!
//! A plain thread spawns a task every millisecond ([`SPAWNS`] of them, through the
//! runtime's handle, so they go to the injector); each records the time from its spawn to
//! its first poll. Meanwhile the workers run tasks that never park, each poll spinning for
//! [`POLL`]:
//! - `one`: one task that wakes itself (`wake_by_ref`) and returns `Pending`;
//! - `pair`: two tasks that wake each other, one running while the other waits;
//! - `many`: 64 tasks that wake themselves.
//!
//! A busy worker looks at the injector only once every so many turns (the global queue
//! interval, which both runtimes tune to about 200 µs of polls), so the wait is about half
//! of that interval, less where several workers look. The table also counts the spawned
//! tasks that ran by the end of the run: a worker that never looks leaves them in the
//! injector. Each run is a child process, [`RUNS`] runs per runtime, alternating.
//!
//! ```sh
//! cargo bench -p escapement-benches --bench outside_wait
//! ```
//!
//! `OUTSIDE_WAIT_INTERVAL=N` fixes both runtimes' global queue interval at `N` turns
//! (`Builder::global_queue_interval`), which shows the wait a given interval gives.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

#[allow(
    dead_code,
    reason = "each benchmark binary uses its own part of the shared code"
)]
mod common;

use common::{
    child_args, print_result, run_child, started_by_cargo_bench, ChildOutcome, Escapement, Rt,
    Spread, Tokio,
};

/// How long each poll of a busy task spins.
const POLL: Duration = Duration::from_micros(20);

/// Tasks spawned from outside per run, one a millisecond.
const SPAWNS: usize = 2000;

/// Runs per runtime.
const RUNS: usize = 3;

/// A run still going after this long is killed and reported as hung.
const HANG_LIMIT: Duration = Duration::from_secs(60);

/// The busy tasks of each scenario.
const SCENARIOS: [&str; 3] = ["one", "pair", "many"];

fn main() {
    if let Some(args) = child_args() {
        let workers: usize = args[2].parse().expect("a worker count");
        let interval = std::env::var("OUTSIDE_WAIT_INTERVAL").ok().map(|n| {
            n.parse::<u32>()
                .expect("OUTSIDE_WAIT_INTERVAL: a number of turns")
        });
        let sample = match args[0].as_str() {
            "escapement" => {
                let mut builder = escapement::Builder::new();
                builder.worker_threads(workers);
                if let Some(n) = interval {
                    builder.global_queue_interval(n);
                }
                wait(
                    &Escapement(builder.build().expect("escapement runtime")),
                    &args[1],
                )
            }
            "tokio" => {
                let mut builder = tokio::runtime::Builder::new_multi_thread();
                builder.worker_threads(workers);
                if let Some(n) = interval {
                    builder.global_queue_interval(n);
                }
                wait(&Tokio(builder.build().expect("tokio runtime")), &args[1])
            }
            other => panic!("--child escapement|tokio SCENARIO WORKERS, got {other:?}"),
        };
        print_result(format_args!(
            "{} {} {}",
            sample.ran, sample.p50_us, sample.p99_us
        ));
        // The busy tasks never end: leave without the runtime's shutdown.
        std::process::exit(0);
    }
    if !started_by_cargo_bench(module_path!()) {
        return;
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    for workers in [1, cpus] {
        for scenario in SCENARIOS {
            table(scenario, workers);
        }
    }
}

/// What a run measured: how many of the spawned tasks ran, and their waits for a first poll
/// in microseconds (median and 99th percentile).
#[derive(Debug, Clone, Copy)]
struct Sample {
    ran: usize,
    p50_us: f64,
    p99_us: f64,
}

/// Runs both runtimes' children for `scenario` on `workers` workers, alternating which goes
/// first, and prints the table.
fn table(scenario: &str, workers: usize) {
    println!(
        "outside_wait: {scenario}, workers: {workers}, {SPAWNS} spawns a millisecond apart, \
         {RUNS} runs each"
    );
    let names = [Escapement::NAME, Tokio::NAME];
    let mut samples: [Vec<Sample>; 2] = [Vec::new(), Vec::new()];
    for run in 0..RUNS {
        for i in [run % 2, 1 - run % 2] {
            let args = [names[i], scenario, &workers.to_string()];
            match run_child(&args, HANG_LIMIT) {
                ChildOutcome::Done(line) => {
                    let s = parse(&line);
                    println!(
                        "  run {run} {:<10} ran {}/{SPAWNS}, wait p50 {:.0} µs, p99 {:.0} µs",
                        names[i], s.ran, s.p50_us, s.p99_us
                    );
                    samples[i].push(s);
                }
                ChildOutcome::Hung => println!("  run {run} {:<10} HUNG", names[i]),
                ChildOutcome::Failed(why) => panic!("{} failed: {why}", names[i]),
            }
        }
    }
    println!();
    println!("| {scenario}, workers: {workers} | escapement | tokio | escapement / tokio |");
    println!("|---|---|---|---|");
    for (label, quantity) in [
        ("wait, median (µs)", (|s| s.p50_us) as fn(&Sample) -> f64),
        ("wait, 99th percentile (µs)", |s| s.p99_us),
        ("tasks that ran, of each run's spawns", |s| s.ran as f64),
    ] {
        let spread = |i: usize| {
            (!samples[i].is_empty())
                .then(|| Spread::of(&samples[i].iter().map(quantity).collect::<Vec<_>>()))
        };
        let cell = |s: Option<Spread>| s.map_or("–".to_owned(), |s| format!("{s:.0}"));
        let ratio = match (spread(0), spread(1)) {
            (Some(e), Some(t)) => format!("{:.2}", e.median / t.median),
            _ => "–".to_owned(),
        };
        println!(
            "| {label} | {} | {} | {ratio} |",
            cell(spread(0)),
            cell(spread(1))
        );
    }
    println!();
}

/// A child's result line.
fn parse(line: &str) -> Sample {
    let fields: Vec<&str> = line.split_whitespace().collect();
    let number = |i: usize| fields[i].parse::<f64>().expect("a number");
    Sample {
        ran: number(0) as usize,
        p50_us: number(1),
        p99_us: number(2),
    }
}

/// One run, in a child process: starts the busy tasks of `scenario`, then spawns from this
/// thread and collects the waits.
fn wait<R: Rt>(rt: &R, scenario: &str) -> Sample {
    let stop = Arc::new(AtomicBool::new(false));
    match scenario {
        "one" | "many" => {
            let tasks = if scenario == "one" { 1 } else { 64 };
            for _ in 0..tasks {
                drop(rt.spawn(SelfWaking(stop.clone())));
            }
        }
        "pair" => {
            let pair = Arc::new(Mutex::new(Turn {
                next: 0,
                wakers: [None, None],
            }));
            for me in 0..2 {
                drop(rt.spawn(Pairing {
                    me,
                    pair: pair.clone(),
                    stop: stop.clone(),
                }));
            }
        }
        other => panic!("a scenario of {SCENARIOS:?}, got {other:?}"),
    }
    // Let the workers settle into the busy tasks (and tune their intervals to them).
    std::thread::sleep(Duration::from_millis(50));
    let waits = Arc::new(Mutex::new(Vec::with_capacity(SPAWNS)));
    for _ in 0..SPAWNS {
        let spawned = Instant::now();
        let waits = waits.clone();
        drop(rt.spawn(async move {
            waits.lock().unwrap().push(spawned.elapsed());
        }));
        std::thread::sleep(Duration::from_millis(1));
    }
    // Time for the last spawns to run.
    std::thread::sleep(Duration::from_millis(200));
    stop.store(true, Ordering::Relaxed);
    let mut waits = waits.lock().unwrap().clone();
    waits.sort();
    let us = |q: f64| {
        if waits.is_empty() {
            f64::NAN
        } else {
            common::micros(common::quantile(&waits, q))
        }
    };
    Sample {
        ran: waits.len(),
        p50_us: us(0.5),
        p99_us: us(0.99),
    }
}

/// Spins for [`POLL`] at each poll, wakes itself and returns `Pending`, until `stop`.
struct SelfWaking(Arc<AtomicBool>);

impl Future for SelfWaking {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0.load(Ordering::Relaxed) {
            return Poll::Ready(());
        }
        spin(POLL);
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// Whose turn it is of two [`Pairing`] tasks, and the wakers they left.
struct Turn {
    next: usize,
    wakers: [Option<Waker>; 2],
}

/// One of two tasks that take turns: a poll in its turn spins for [`POLL`], hands the turn
/// over and wakes the other; out of turn it leaves its waker and waits.
struct Pairing {
    me: usize,
    pair: Arc<Mutex<Turn>>,
    stop: Arc<AtomicBool>,
}

impl Future for Pairing {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut turn = self.pair.lock().unwrap();
        if self.stop.load(Ordering::Relaxed) {
            let other = turn.wakers[1 - self.me].take();
            drop(turn);
            if let Some(other) = other {
                other.wake();
            }
            return Poll::Ready(());
        }
        turn.wakers[self.me] = Some(cx.waker().clone());
        if turn.next != self.me {
            return Poll::Pending;
        }
        drop(turn);
        spin(POLL);
        let mut turn = self.pair.lock().unwrap();
        turn.next = 1 - self.me;
        let other = turn.wakers[1 - self.me].take();
        drop(turn);
        if let Some(other) = other {
            other.wake();
        }
        Poll::Pending
    }
}

fn spin(duration: Duration) {
    let start = Instant::now();
    while start.elapsed() < duration {
        std::hint::spin_loop();
    }
}
