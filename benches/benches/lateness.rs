//! How late sleeps fire: the distribution (p50, p99, max) of the time a task observes
//! between creating a `sleep(d)` and resuming after it, minus `d`, for `d` drawn uniformly
//! from 1..50 ms to the microsecond (seeded), on escapement at its default 1 ms timer
//! resolution, on escapement at 100 µs (`Builder::timer_resolution`), and on tokio (whose
//! timer works in milliseconds), all with 2 worker threads (1 in the `long` scenario). The
//! lateness includes rounding the deadline up to the runtime's tick and the time from the
//! timer firing to the task running again: what a program sees.
//!
//! Each round runs [`TASKS`] tasks, each doing [`SLEEPS_PER_TASK`] sleeps in a row, so the
//! deadlines are staggered; [`ROUNDS`] rounds per runtime and scenario, each in a child
//! process of its own (the binary re-executes itself with `--child`), interleaved across the
//! runtimes. Four scenarios:
//!
//! - `idle`: nothing else runs on the runtime.
//! - `blocked`: one more task blocks its thread with `std::thread::sleep(200 ms)` whenever it
//!   finds itself on thread 0, then awaits a 1 ms sleep and checks again, until the round
//!   ends. On escapement thread 0 is worker 0 (`escapement-worker-0`), the timer driver's
//!   owner: the worst thread to block. Tokio has no such thread (whichever worker parks
//!   drives its timers), so there the task blocks the thread its runtime started first (named
//!   `tokio-worker-0` by the benchmark's `thread_name_fn`) the same way. Where the blocking
//!   task runs is up to each scheduler, so the table gives the share of each round during
//!   which thread 0 was blocked.
//! - `busy`: [`SPINNERS`] more tasks keep every worker busy in short turns, each doing about
//!   a microsecond of arithmetic then yielding, until the round ends: the sleeps fire while
//!   no worker parks, between other tasks' turns. Escapement's worker 0 then reads the clock
//!   only every few turns while the next deadline is far (`time/driver/fire.rs`); tokio's
//!   workers look at their timer every 61 turns.
//! - `long`: on one worker, one more task spins for [`LONG_TURN`] in each turn and yields,
//!   until the round ends, so the sleepers' short turns come between long ones: what
//!   worker 0's pacing of its clock readings must not mistake for short turns.
//!
//! A round still running after [`HANG_LIMIT`] is killed and reported as hung.
//!
//! ```sh
//! cargo bench -p escapement-benches --bench lateness
//! ```

use std::sync::atomic::{AtomicBool, Ordering};
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
    child_args, micros, print_result, quantile, run_child, started_by_cargo_bench, ChildOutcome,
    Escapement, Rt, Spread, Tokio,
};

/// Tasks per round.
const TASKS: u64 = 40;

/// Sleeps per task, one after the other.
const SLEEPS_PER_TASK: u64 = 50;

/// Rounds per runtime and scenario.
const ROUNDS: u64 = 5;

/// Worker threads, for every runtime, but in the `long` scenario.
const WORKERS: usize = 2;

/// How long the spinning task of the `long` scenario spins in each turn.
const LONG_TURN: Duration = Duration::from_millis(1);

/// Worker threads in `scenario`.
fn workers(scenario: &str) -> usize {
    if scenario == "long" {
        1
    } else {
        WORKERS
    }
}

/// How long the blocking task blocks thread 0 at a time.
const BLOCK: Duration = Duration::from_millis(200);

/// Tasks that keep the workers busy in the `busy` scenario.
const SPINNERS: usize = 4;

/// Rounds of arithmetic a spinner does in each turn (about a microsecond here).
const SPIN: u32 = 1_000;

/// A round still running after this long is killed (a round takes about 1.5 s).
const HANG_LIMIT: Duration = Duration::from_secs(20);

/// The runtimes compared: name, and timer resolution for the table.
const CONFIGS: [(&str, &str); 3] = [
    ("escapement", "1 ms"),
    ("escapement", "100 µs"),
    ("tokio", "1 ms"),
];

/// What one round measured.
#[derive(Debug, Default)]
struct Round {
    /// Lateness of every sleep (zero for an early one).
    lateness: Vec<Duration>,
    /// Sleeps that completed before their duration had passed.
    early: u64,
    /// The share of the blocking task's life (the round, and 20 ms before it) during which
    /// it blocked thread 0.
    blocked_share: f64,
}

fn main() {
    if let Some(args) = child_args() {
        let config: usize = args[0].parse().expect("a config index");
        let scenario = args[1].as_str();
        let round: u64 = args[2].parse().expect("a round");
        let result = match config {
            0 => measure(&Escapement::new(workers(scenario)), scenario, round),
            1 => measure(
                &Escapement(
                    escapement::Builder::new()
                        .worker_threads(workers(scenario))
                        .timer_resolution(Duration::from_micros(100))
                        .build()
                        .expect("escapement runtime"),
                ),
                scenario,
                round,
            ),
            _ => measure(&Tokio::new(workers(scenario)), scenario, round),
        };
        let nanos: Vec<String> = result
            .lateness
            .iter()
            .map(|l| l.as_nanos().to_string())
            .collect();
        print_result(format_args!(
            "{} {} {}",
            result.blocked_share,
            result.early,
            nanos.join(" ")
        ));
        return;
    }
    if !started_by_cargo_bench(module_path!()) {
        return;
    }
    for scenario in ["idle", "blocked", "busy", "long"] {
        table(scenario);
    }
}

/// Runs every round of `scenario` and prints its table.
fn table(scenario: &str) {
    println!(
        "lateness, {scenario}: {TASKS} tasks x {SLEEPS_PER_TASK} sleeps of 1..50 ms, \
         {} workers, {ROUNDS} rounds per runtime",
        workers(scenario)
    );
    let mut rounds: Vec<Vec<Round>> = CONFIGS.iter().map(|_| Vec::new()).collect();
    let mut hung = [0u64; CONFIGS.len()];
    for round in 0..ROUNDS {
        for k in 0..CONFIGS.len() {
            // Rotate the order, so drift in the machine's load hits every runtime alike.
            let config = (k + round as usize) % CONFIGS.len();
            let (name, resolution) = CONFIGS[config];
            let (config_arg, round_arg) = (config.to_string(), round.to_string());
            match run_child(&[&config_arg, scenario, &round_arg], HANG_LIMIT) {
                ChildOutcome::Done(line) => {
                    let r = parse(&line);
                    let mut sorted = r.lateness.clone();
                    sorted.sort();
                    println!(
                        "  round {round} {name} {resolution}: p50 {:.0} µs, p99 {:.0} µs, \
                         max {:.0} µs, thread 0 blocked {:.0}%",
                        micros(quantile(&sorted, 0.5)),
                        micros(quantile(&sorted, 0.99)),
                        micros(quantile(&sorted, 1.0)),
                        r.blocked_share * 100.0
                    );
                    rounds[config].push(r);
                }
                ChildOutcome::Hung => {
                    println!(
                        "  round {round} {name} {resolution}: HUNG, killed after {HANG_LIMIT:?}"
                    );
                    hung[config] += 1;
                }
                ChildOutcome::Failed(why) => panic!("{name} {resolution} failed: {why}"),
            }
        }
    }
    println!();
    println!(
        "| {scenario} | resolution | sleeps | p50 (µs) | p99 (µs) | max (µs) | \
         p50 per round (µs) | p99 per round (µs) | early | thread 0 blocked | rounds hung |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for (config, (name, resolution)) in CONFIGS.iter().enumerate() {
        let done = &rounds[config];
        if done.is_empty() {
            println!(
                "| {name} | {resolution} | 0 | – | – | – | – | – | – | – | {} of {ROUNDS} |",
                hung[config]
            );
            continue;
        }
        let mut all: Vec<Duration> = done.iter().flat_map(|r| r.lateness.clone()).collect();
        all.sort();
        let per_round = |q: f64| {
            let values: Vec<f64> = done
                .iter()
                .map(|r| {
                    let mut sorted = r.lateness.clone();
                    sorted.sort();
                    micros(quantile(&sorted, q))
                })
                .collect();
            Spread::of(&values)
        };
        let blocked = Spread::of(
            &done
                .iter()
                .map(|r| r.blocked_share * 100.0)
                .collect::<Vec<_>>(),
        );
        println!(
            "| {name} | {resolution} | {} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {} | {:.0}% | {} of {ROUNDS} |",
            all.len(),
            micros(quantile(&all, 0.5)),
            micros(quantile(&all, 0.99)),
            micros(quantile(&all, 1.0)),
            per_round(0.5),
            per_round(0.99),
            done.iter().map(|r| r.early).sum::<u64>(),
            blocked,
            hung[config]
        );
    }
    println!();
}

/// A child's result line: blocked share, early count, then every lateness in nanoseconds.
fn parse(line: &str) -> Round {
    let mut fields = line.split_whitespace();
    let blocked_share = fields.next().expect("blocked share").parse().expect("f64");
    let early = fields.next().expect("early").parse().expect("u64");
    let lateness = fields
        .map(|f| Duration::from_nanos(f.parse().expect("nanoseconds")))
        .collect();
    Round {
        lateness,
        early,
        blocked_share,
    }
}

/// One round of `scenario`, in a child process.
fn measure<R: Rt>(rt: &R, scenario: &str, round: u64) -> Round {
    let blocked = scenario == "blocked";
    rt.block_on(async {
        let stop = Arc::new(AtomicBool::new(false));
        let blocker = blocked.then(|| rt.spawn(block_thread_0::<R>(stop.clone())));
        let spinners: Vec<_> = match scenario {
            "busy" => (0..SPINNERS)
                .map(|_| rt.spawn(spin::<R>(stop.clone(), None)))
                .collect(),
            "long" => vec![rt.spawn(spin::<R>(stop.clone(), Some(LONG_TURN)))],
            _ => Vec::new(),
        };
        if blocked {
            // Let the blocking task find thread 0 first.
            R::sleep(Duration::from_millis(20)).await;
        }
        let tasks: Vec<_> = (0..TASKS)
            .map(|task| rt.spawn(sleeper::<R>(round * 1_000 + task)))
            .collect();
        let mut result = Round::default();
        for task in tasks {
            let (lateness, early) = task.await;
            result.lateness.extend(lateness);
            result.early += early;
        }
        stop.store(true, Ordering::Relaxed);
        for spinner in spinners {
            spinner.await;
        }
        if let Some(blocker) = blocker {
            result.blocked_share = blocker.await;
        }
        result
    })
}

/// `SLEEPS_PER_TASK` sleeps in a row; returns their lateness and how many were early.
async fn sleeper<R: Rt>(seed: u64) -> (Vec<Duration>, u64) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut lateness = Vec::with_capacity(SLEEPS_PER_TASK as usize);
    let mut early = 0;
    for _ in 0..SLEEPS_PER_TASK {
        let requested = Duration::from_micros(rng.random_range(1_000..=50_000));
        let start = Instant::now();
        R::sleep(requested).await;
        let actual = start.elapsed();
        if actual < requested {
            early += 1;
        }
        lateness.push(actual.saturating_sub(requested));
    }
    (lateness, early)
}

/// Blocks thread 0 for `BLOCK` whenever it runs there, until `stop`; returns the share of
/// its life it spent blocking.
async fn block_thread_0<R: Rt>(stop: Arc<AtomicBool>) -> f64 {
    let born = Instant::now();
    let mut blocked = Duration::ZERO;
    while !stop.load(Ordering::Relaxed) {
        let on_thread_0 = std::thread::current()
            .name()
            .is_some_and(|name| name.ends_with("-0"));
        if on_thread_0 {
            let start = Instant::now();
            std::thread::sleep(BLOCK);
            blocked += start.elapsed();
        }
        R::sleep(Duration::from_millis(1)).await;
    }
    blocked.as_secs_f64() / born.elapsed().as_secs_f64()
}

/// Turns of about a microsecond of arithmetic each, or of `turn` if given, yielding between
/// them, until `stop`.
async fn spin<R: Rt>(stop: Arc<AtomicBool>, turn: Option<Duration>) {
    let mut x = 1u64;
    while !stop.load(Ordering::Relaxed) {
        let start = Instant::now();
        loop {
            for _ in 0..SPIN {
                x = std::hint::black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1));
            }
            if turn.is_none_or(|turn| start.elapsed() >= turn) {
                break;
            }
        }
        R::yield_now().await;
    }
}
