//! A timer storm: a million tasks sleeping, timing out and ticking at once, with a live
//! progress line and a report of how late timers fired, timers per second, CPU time and peak
//! memory.
//!
//! ```text
//! cargo run --release --example storm
//! cargo run --release --example storm -- --tasks 200000 --resolution 100us --workers 2
//! cargo run --release --example storm -- --help
//! ```
//!
//! The mix, drawn per task from a seeded generator: 70% sleep 1..=1000 ms; 10% wrap a slow
//! future in a timeout that expires first; 10% wrap a quick one in a timeout that does not;
//! 10% tick an interval of 5..=50 ms three to five times. Every task records how late it
//! woke (the time it saw after the await minus the deadline it asked for) into a histogram
//! of its own, printed next to the runtime's (`Runtime::metrics().lateness()`: the time the
//! driver fired each timer minus its deadline rounded up to the tick).
//!
//! Memory grows only with the tasks alive at once (a few hundred bytes each): the demo keeps
//! counters and histograms, never a record per timer. If no task finishes for 10 s, it exits
//! with an error instead of hanging.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::OnceLock;

use escapement::time::{interval, sleep, sleep_until, timeout, timeout_at, Duration, Instant};

const USAGE: &str = "\
storm: a million timers through escapement's driver, then a report

usage: cargo run --release --example storm -- [options]

options:
  --tasks N         tasks to spawn (default 1000000)
  --resolution R    timer tick: 1ms, 100us, 250µs, or a number of µs (default 1ms, from 10us to 1s)
  --workers N       worker threads (default: one per CPU)
  -h, --help        print this text";

/// Histogram buckets as the runtime's: `< 1 µs`, `[2^(k-1), 2^k) µs` for k in 1..=22, the rest.
const BUCKETS: usize = 24;

/// Tasks finished so far, and the moment the last one did.
static DONE: AtomicU64 = AtomicU64::new(0);
static FINISHED: OnceLock<std::time::Instant> = OnceLock::new();
/// How many timers ended each way, indexed by the constants below.
static COUNTS: [AtomicU64; 5] = [const { AtomicU64::new(0) }; 5];
const SLEPT: usize = 0;
const EXPIRED: usize = 1;
const POLLED_LATE: usize = 2;
const MET: usize = 3;
const TICKED: usize = 4;
/// The tasks' own lateness histogram (woke at minus asked-for deadline).
static LATENESS: [AtomicU64; BUCKETS] = [const { AtomicU64::new(0) }; BUCKETS];

/// The command line, parsed.
struct Config {
    tasks: u64,
    resolution: Duration,
    workers: Option<usize>,
}

fn main() -> ExitCode {
    // 1. Parse the flags by hand: four of them do not need a crate.
    let config = match parse_args(std::env::args().skip(1)) {
        Ok(Some(config)) => config,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(error) => {
            eprintln!("storm: {error} (see --help)");
            return ExitCode::from(2);
        }
    };

    // 2. Build the runtime: the tick and the worker count come from the flags.
    let mut builder = escapement::Builder::new();
    builder.timer_resolution(config.resolution);
    if let Some(workers) = config.workers {
        builder.worker_threads(workers);
    }
    let rt = builder.build().expect("failed to build the runtime");
    let (tasks, tick, workers) = (config.tasks, config.resolution, rt.metrics().workers());
    println!("storm: {tasks} tasks on {workers} workers, timer tick {tick:?}");

    // 3. Spawn every task from this thread, then watch them finish; print progress throughout.
    let start = std::time::Instant::now();
    watchdog(config.tasks);
    let terminal = std::io::stdout().is_terminal();
    let (total, last) = (config.tasks, start);
    let mut progress = Progress {
        total,
        start,
        last,
        terminal,
    };
    rt.block_on(async {
        for i in 0..config.tasks {
            escapement::spawn(task(i, config.tasks));
            if i % 4096 == 0 {
                progress.maybe_print(i + 1, rt.metrics().live_timers());
            }
        }
        while DONE.load(Relaxed) < config.tasks {
            sleep(Duration::from_millis(100)).await;
            progress.maybe_print(config.tasks, rt.metrics().live_timers());
        }
    });
    progress.print(config.tasks, rt.metrics().live_timers(), true);
    let wall = FINISHED.get().map_or(start.elapsed(), |end| *end - start);

    // 4. Report: what ran, the two lateness histograms, throughput, CPU and memory.
    let metrics = rt.metrics();
    let [slept, expired, late, met, ticked] = COUNTS.each_ref().map(|c| c.load(Relaxed));
    let timeouts = expired + late + met;
    println!("\nran {slept} sleeps, {ticked} interval ticks and {timeouts} timeouts:");
    println!("    {expired} expired, {met} met, {late} met because polled after both deadlines");
    let ours: Vec<u64> = LATENESS.iter().map(|b| b.load(Relaxed)).collect();
    let driver: Vec<u64> = metrics.lateness().buckets().map(|(_, n)| n).collect();
    print_histograms(&driver, &ours);
    let (secs, m) = (wall.as_secs_f64(), &metrics);
    let (registered, fired) = (m.timers_registered(), m.timers_fired());
    let (cancelled, resets) = (m.timers_cancelled(), m.timer_resets());
    println!(
        "\ntimers:  {registered} registered, {fired} fired, {cancelled} cancelled, {resets} reset"
    );
    println!(
        "rate:    {:.0} timers fired per second over {secs:.2} s",
        fired as f64 / secs
    );
    match resources() {
        Some((cpu, peak_rss_kib)) => {
            let cpu = cpu.as_secs_f64();
            println!(
                "cpu:     {cpu:.2} s user+sys ({:.2} cores on average)",
                cpu / secs
            );
            println!("memory:  peak RSS {:.1} MiB", peak_rss_kib as f64 / 1024.0);
        }
        None => println!("cpu, memory: not measured on this platform"),
    }
    ExitCode::SUCCESS
}

/// One task of the storm; its kind and durations come from a generator seeded with `i`.
async fn task(i: u64, total: u64) {
    let mut rng = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
    let mut draw = |low: u64, high: u64| low + splitmix(&mut rng) % (high - low + 1);
    let ms = Duration::from_millis;
    match draw(0, 99) {
        // A plain sleep: the commonest timer there is.
        0..=69 => {
            let deadline = Instant::now() + ms(draw(1, 1000));
            sleep_until(deadline).await;
            record(SLEPT, deadline);
        }
        // A timeout meant to expire: the slow future is a sleep twice as long. A timeout
        // polls its future first, so if the task is polled only after both deadlines
        // passed (a storm delays it), the future wins.
        70..=79 => {
            let limit = ms(draw(1, 500));
            let deadline = Instant::now() + limit;
            match timeout_at(deadline, sleep(limit * 2)).await {
                Err(_) => record(EXPIRED, deadline),
                Ok(()) => record(POLLED_LATE, deadline),
            }
        }
        // A timeout that does not expire: the future wins, the timeout's timer is cancelled.
        80..=89 => {
            let deadline = Instant::now() + ms(draw(1, 500));
            let result = timeout(ms(1000), sleep_until(deadline)).await;
            assert!(result.is_ok(), "a future due first lost to its timeout");
            record(MET, deadline);
        }
        // An interval ticking a few times; the first tick is at once.
        _ => {
            let mut ticker = interval(ms(draw(5, 50)));
            for _ in 0..draw(3, 5) {
                let due = ticker.tick().await;
                record(TICKED, due);
            }
        }
    }
    // The last task to finish stops the clock.
    if DONE.fetch_add(1, Relaxed) + 1 == total {
        let _ = FINISHED.set(std::time::Instant::now());
    }
}

/// Exits with an error if no task finishes for ten seconds: a stuck runtime should fail the
/// demo (in CI, say), not hang it. A plain thread, so it runs even if the runtime's do not.
fn watchdog(total: u64) {
    std::thread::spawn(move || {
        let mut last = u64::MAX;
        loop {
            std::thread::sleep(Duration::from_secs(10));
            let done = DONE.load(Relaxed);
            if done == last && done < total {
                eprintln!("\nstorm: no task finished in 10 s ({done} of {total} done); the runtime is stuck");
                std::process::exit(1);
            }
            last = done;
        }
    });
}

/// Counts one timer that ended as `outcome`, due at `deadline`, and how late it was seen.
fn record(outcome: usize, deadline: Instant) {
    COUNTS[outcome].fetch_add(1, Relaxed);
    LATENESS[bucket(Instant::now() - deadline)].fetch_add(1, Relaxed);
}

/// The histogram bucket of a lateness, as the runtime's: by the bit length of its µs.
fn bucket(late: Duration) -> usize {
    let micros = late.as_micros();
    ((u128::BITS - micros.leading_zeros()) as usize).min(BUCKETS - 1)
}

/// The splitmix64 step: a small, good generator, so the example needs no `rand`.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The progress line: redrawn in place on a terminal, a plain line a second otherwise.
struct Progress {
    total: u64,
    start: std::time::Instant,
    last: std::time::Instant,
    terminal: bool,
}

impl Progress {
    /// Prints the line if it is due: every 100 ms on a terminal, every second otherwise.
    fn maybe_print(&mut self, spawned: u64, live_timers: usize) {
        let every = if self.terminal { 100 } else { 1000 };
        if self.last.elapsed() >= Duration::from_millis(every) {
            self.last = std::time::Instant::now();
            self.print(spawned, live_timers, false);
        }
    }

    /// Prints the line; the `last` one ends the line redrawn on a terminal.
    fn print(&self, spawned: u64, live_timers: usize, last: bool) {
        let done = DONE.load(Relaxed);
        let line = format!(
            "[{:6.2} s] spawned {spawned:>8}  done {done:>8} ({:3}%)  live timers {live_timers:>8}",
            self.start.elapsed().as_secs_f64(),
            done * 100 / self.total.max(1),
        );
        let mut out = std::io::stdout().lock();
        let end = if last { "\n" } else { "" };
        let _ = match self.terminal {
            true => write!(out, "\r{line}{end}"),
            false => writeln!(out, "{line}"),
        };
        let _ = out.flush();
    }
}

/// Both lateness histograms side by side, one row per log-scale bucket, bars of `#`
/// scaled to each histogram's largest bucket.
fn print_histograms(driver: &[u64], ours: &[u64]) {
    const WIDTH: u64 = 30;
    let used = |i: &usize| driver[*i] > 0 || ours[*i] > 0;
    let (Some(first), Some(last)) = ((0..BUCKETS).find(used), (0..BUCKETS).rev().find(used)) else {
        return println!("no timers fired");
    };
    let bar = |n: u64, max: u64| "#".repeat((n * WIDTH).div_ceil(max.max(1)) as usize);
    let max = |h: &[u64]| h.iter().copied().max().unwrap_or(0);
    let (dmax, omax) = (max(driver), max(ours));
    let header = (
        "lateness",
        "driver: fired at - tick deadline",
        "tasks: woke at - deadline",
    );
    println!("\n{:>10}  {:<39}    {}", header.0, header.1, header.2);
    for i in first..=last {
        let label = match i {
            0 => "< 1 µs".to_owned(),
            _ if i == BUCKETS - 1 => format!(">= {}", human(1 << (i - 1))),
            _ => format!("< {}", human(1 << i)),
        };
        println!(
            "{label:>10}  {:<30} {:>8}    {:<30} {:>8}",
            bar(driver[i], dmax),
            driver[i],
            bar(ours[i], omax),
            ours[i]
        );
    }
}

/// A number of microseconds, in the unit that reads best.
fn human(micros: u64) -> String {
    match micros {
        0..=999 => format!("{micros} µs"),
        1_000..=999_999 => format!("{:.1} ms", micros as f64 / 1e3),
        _ => format!("{:.2} s", micros as f64 / 1e6),
    }
}

/// Parses the flags; `Ok(None)` asks for the usage text.
fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Option<Config>, String> {
    let mut config = Config {
        tasks: 1_000_000,
        resolution: Duration::from_millis(1),
        workers: None,
    };
    while let Some(flag) = args.next() {
        if flag == "-h" || flag == "--help" {
            return Ok(None);
        }
        let value = args.next().ok_or(format!("{flag} needs a value"))?;
        let number = |v: &str| v.parse::<u64>().map_err(|e| format!("{flag} {v}: {e}"));
        match flag.as_str() {
            "--tasks" => config.tasks = number(&value)?,
            "--workers" => match number(&value)? {
                0 => return Err("--workers must be at least 1".to_owned()),
                n => config.workers = Some(n as usize),
            },
            "--resolution" => config.resolution = parse_duration(&value)?,
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    Ok(Some(config))
}

/// `1ms`, `100us`, `250µs`, `1s` or a bare number of µs; from the runtime's 10 µs to its 1 s.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let digits = text.trim_end_matches(|c: char| !c.is_ascii_digit());
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("bad resolution {text:?}"))?;
    let duration = match &text[digits.len()..] {
        "" | "us" | "µs" => Duration::from_micros(n),
        "ms" => Duration::from_millis(n),
        "s" => Duration::from_secs(n),
        _ => return Err(format!("bad unit in {text:?}: use us, µs, ms or s")),
    };
    (Duration::from_micros(10)..=Duration::from_secs(1))
        .contains(&duration)
        .then_some(duration)
        .ok_or(format!(
            "resolution {text} is outside the runtime's 10 µs to 1 s"
        ))
}

/// CPU time (user + sys) and peak resident memory in KiB, from `getrusage`.
#[cfg(unix)]
fn resources() -> Option<(Duration, u64)> {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::uninit();
    // SAFETY: `usage` is valid for writes of a `rusage`, which `getrusage` fills on success.
    let usage = unsafe {
        if libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) != 0 {
            return None;
        }
        usage.assume_init()
    };
    let time = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    // Linux reports `ru_maxrss` in KiB, macOS in bytes.
    let divisor = if cfg!(target_os = "macos") { 1024 } else { 1 };
    Some((
        time(usage.ru_utime) + time(usage.ru_stime),
        usage.ru_maxrss as u64 / divisor,
    ))
}

/// CPU time and peak memory are not measured off Unix.
#[cfg(not(unix))]
fn resources() -> Option<(Duration, u64)> {
    None
}
