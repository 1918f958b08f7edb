//! A randomized soak of escapement's timers and scheduler, checked as it runs.
//!
//! Each round builds a runtime from a seed, runs from a few to a few thousand tasks that mix
//! two dozen kinds of operation on timers and tasks, shuts the runtime down, and checks what it
//! saw (`run` says what a round does, `ops` what the operations are, and `round` and `checked`
//! what they check). The seeds of later rounds follow from the first, so a run is one number;
//! a round's operations are the same on every run of its seed, and only their interleaving
//! differs.
//!
//! ```text
//! cargo run --release -p escapement-soak -- [--secs T] [--rounds N] [--seed S] [--one]
//!     [--mode real|quiet|paused|exact|toggle] [--tasks-max N]
//! ```
//!
//! It runs until `T` seconds or `N` rounds have passed (forever by default), from seed `S`
//! (drawn from the time by default); `--one` runs the round of `S` alone, to replay one that
//! failed. `--mode` fixes the clock's mode; `--tasks-max` (2,000 by default) bounds the
//! top-level tasks of a round. It prints two lines per round, and a last one with the run's
//! totals: rounds, tasks, operations, timer checks, and how late the timers were.
//!
//! A failed check, or a panic other than those the operations raise on purpose, is printed
//! with the command line that replays its round (a round's draws depend on the seed and the
//! options, not on the build's profile), and the run stops with exit status 1 at the end of
//! that round. A round that runs past 90 s (180 s in a debug build) prints the operations in
//! flight and aborts the process. Lateness is only counted: a shared machine can always be
//! late.

mod checked;
mod counts;
mod ops;
mod round;
mod run;

use std::sync::atomic::Ordering::SeqCst;
use std::sync::OnceLock;
use std::time::{Duration, Instant as StdInstant, SystemTime};

use counts::Counts;
use round::{Mode, FAILED};
use run::{Options, CURRENT};

/// The command line's options, for the panic hook's and the watchdog's replay lines.
static OPTIONS: OnceLock<Options> = OnceLock::new();

/// The command line.
struct Args {
    seed: u64,
    rounds: u64,
    secs: Duration,
    one: bool,
    options: Options,
}

fn main() {
    let args = parse_args();
    let options = OPTIONS.get_or_init(|| args.options);
    std::panic::set_hook(Box::new(|info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied());
        if message == Some(ops::INTENDED_PANIC) {
            return;
        }
        FAILED.store(true, SeqCst);
        let seed = CURRENT
            .lock()
            .ok()
            .and_then(|c| c.as_ref().map(|(round, _)| round.seed));
        let thread = std::thread::current();
        let backtrace = std::backtrace::Backtrace::force_capture();
        eprintln!(
            "UNEXPECTED PANIC seed={seed:?} thread={:?}: {info}\n{backtrace}",
            thread.name()
        );
        // A panic on the main thread ends the run here, before its replay line.
        if let (Some(seed), Some(options)) = (seed, OPTIONS.get()) {
            eprintln!("replay the round with: {}", options.replay(seed));
        }
    }));
    std::thread::spawn(watchdog);

    let began = StdInstant::now();
    let totals = Counts::new();
    let mut seed = args.seed;
    let mut done = 0;
    while done < args.rounds && began.elapsed() < args.secs {
        run::run(seed, options, &totals);
        if FAILED.load(SeqCst) {
            eprintln!("FAILED; replay the round with: {}", options.replay(seed));
            println!("TOTAL {:?}: {totals}", began.elapsed());
            std::process::exit(1);
        }
        if args.one {
            break;
        }
        seed = next_seed(seed);
        done += 1;
    }
    println!("TOTAL {:?}: {totals}", began.elapsed());
}

fn parse_args() -> Args {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let known = [
        "--seed",
        "--rounds",
        "--secs",
        "--one",
        "--mode",
        "--tasks-max",
    ];
    if let Some(odd) = args
        .iter()
        .find(|arg| arg.starts_with("--") && !known.contains(&arg.as_str()))
    {
        usage(&format!("no option {odd}"));
    }
    let text = |name: &str| {
        let at = args.iter().position(|arg| arg == name)?;
        let text = args
            .get(at + 1)
            .unwrap_or_else(|| usage(&format!("{name} needs a value")));
        Some(text.as_str())
    };
    let number = |name: &str| {
        let parse = |text: &str| text.parse::<u64>().ok();
        text(name).map(|text| parse(text).unwrap_or_else(|| usage(&format!("{name}: {text}?"))))
    };
    let seed = number("--seed").unwrap_or_else(|| {
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default();
        now.as_nanos() as u64 % 1_000_000_007
    });
    let mode = text("--mode")
        .map(|name| Mode::parse(name).unwrap_or_else(|| usage(&format!("no mode {name}"))));
    let tasks_max = number("--tasks-max").unwrap_or(2000);
    if tasks_max == 0 {
        usage("--tasks-max must be at least 1");
    }
    Args {
        seed,
        rounds: number("--rounds").unwrap_or(u64::MAX),
        secs: number("--secs").map_or(Duration::MAX, Duration::from_secs),
        one: args.iter().any(|arg| arg == "--one"),
        options: Options {
            mode,
            tasks_max: tasks_max as usize,
        },
    }
}

/// The seed of the round after the one of `seed` (a step of a linear congruential generator).
fn next_seed(seed: u64) -> u64 {
    seed.wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407)
        >> 1
}

fn usage(problem: &str) -> ! {
    eprintln!("escapement-soak: {problem}");
    eprintln!(
        "usage: escapement-soak [--secs T] [--rounds N] [--seed S] [--one] \
         [--mode real|quiet|paused|exact|toggle] [--tasks-max N]"
    );
    std::process::exit(2)
}

/// Every 100 ms: prints the operations running 2 s past their due end (on the real clock),
/// and aborts the process, after printing what is in flight, if the round runs past its
/// limit.
fn watchdog() {
    loop {
        std::thread::sleep(Duration::from_millis(100));
        let Some((round, deadline)) = CURRENT.lock().unwrap().clone() else {
            continue;
        };
        round.print_slow();
        if StdInstant::now() > deadline {
            eprintln!(
                "HANG seed={} ({}): the round ran past its limit",
                round.seed, round.desc
            );
            round.print_in_flight();
            let options = OPTIONS.get().expect("set before the first round");
            eprintln!("replay the round with: {}", options.replay(round.seed));
            std::process::abort();
        }
    }
}
