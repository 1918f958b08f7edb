//! What the other threads cost while one worker is busy and the rest have nothing to do: the
//! price of escapement's watch, the sleeping thread that wakes up every 5 ms while
//! worker 0 is awake, in case worker 0 is stuck and a timer was registered after everyone
//! else went to sleep (`docs/guarantees.md`). Tokio has no such thread: its idle workers park
//! on its timer and are woken by a registration that needs them.
//!
//! A task spins on the clock for [`SPIN`] on worker 0 (on tokio, on whichever worker runs
//! it, all alike there), with no timer pending; the other workers and the thread in
//! `block_on` are idle. The child reports the process's CPU time (user + sys,
//! `getrusage(RUSAGE_SELF)`) over the spin less the spinning thread's own
//! (`CLOCK_THREAD_CPUTIME_ID`), in milliseconds per second of spin: the CPU everything but
//! the spinning thread took, whatever else the machine runs. Each run is a child
//! process of its own, as in `sleep_storm`, five per runtime, alternating, at one worker per
//! CPU and at four workers.
//!
//! ```sh
//! cargo bench -p escapement-benches --bench busy_worker
//! ```

use std::time::{Duration, Instant};

#[allow(
    dead_code,
    reason = "each benchmark binary uses its own part of the shared code"
)]
mod common;

use common::{
    child_args, cpu_time, print_result, started_by_cargo_bench, Escapement, Rt, Runs, Tokio,
};

/// How long the task keeps its worker busy.
const SPIN: Duration = Duration::from_secs(2);

/// Runs of each runtime, per worker count.
const RUNS: usize = 5;

/// A run still going after this long is killed and counted as a hang.
const HANG_LIMIT: Duration = Duration::from_secs(30);

/// After this many hung runs of a runtime, its remaining runs at that worker count are
/// skipped.
const MAX_HANGS: usize = 2;

fn main() {
    if let Some(args) = child_args() {
        let workers: usize = args[1].parse().expect("a worker count");
        let extra = match args[0].as_str() {
            "escapement" => busy(&Escapement::new(workers), || {
                escapement::runtime::worker_index() == Some(0)
            }),
            "tokio" => busy(&Tokio::new(workers), || true),
            other => panic!("--child escapement|tokio WORKERS, got {other:?}"),
        };
        print_result(extra);
        return;
    }
    if !started_by_cargo_bench(module_path!()) {
        return;
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    for workers in [cpus.max(2), 4] {
        table(workers);
    }
}

/// Runs the spin `RUNS` times on each runtime with `workers` workers and prints the table.
fn table(workers: usize) {
    println!("one worker busy for {SPIN:?}, the others idle, workers: {workers}, {RUNS} runs each");
    let runs = Runs::collect(
        workers,
        RUNS,
        HANG_LIMIT,
        MAX_HANGS,
        |line| line.trim().parse::<f64>().expect("a number"),
        |extra| format!("{extra:.3} ms of CPU per s of spin on the other threads"),
    );
    println!();
    println!("| workers: {workers} | escapement | tokio | escapement / tokio |");
    println!("|---|---|---|---|");
    runs.print_row(
        "CPU of the other threads (ms per s of spin)",
        |&extra| extra,
        3,
    );
    runs.print_completed();
    println!();
}

/// In a child: spawns tasks until one runs where `on_worker` says, which spins for [`SPIN`];
/// returns the CPU time the process's other threads took over the spin, in milliseconds per
/// second of spin.
fn busy<R: Rt>(rt: &R, on_worker: fn() -> bool) -> f64 {
    rt.block_on(async {
        loop {
            let spun = rt
                .spawn(async move {
                    if !on_worker() {
                        return None;
                    }
                    let (cpu_before, own_before) = (cpu_time(), thread_cpu_time());
                    let start = Instant::now();
                    while start.elapsed() < SPIN {
                        std::hint::spin_loop();
                    }
                    let wall = start.elapsed();
                    let own = thread_cpu_time() - own_before;
                    let others = (cpu_time() - cpu_before).saturating_sub(own);
                    Some(others.as_secs_f64() * 1000.0 / wall.as_secs_f64())
                })
                .await;
            if let Some(extra) = spun {
                return extra;
            }
        }
    })
}

/// This thread's CPU time so far.
fn thread_cpu_time() -> Duration {
    let mut now = std::mem::MaybeUninit::<libc::timespec>::uninit();
    // SAFETY: `clock_gettime` writes a whole `timespec` to the pointer, which is valid for
    // writes of one; `CLOCK_THREAD_CPUTIME_ID` is a valid clock on Linux.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, now.as_mut_ptr()) };
    assert_eq!(rc, 0, "clock_gettime: {}", std::io::Error::last_os_error());
    // SAFETY: `clock_gettime` succeeded, so it initialised `now`.
    let now = unsafe { now.assume_init() };
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}
