//! Code shared by the runtime benchmarks: [`Rt`], one interface over escapement and tokio so
//! that each workload is written once and runs unchanged on both, and [`Spread`], the summary
//! of repeated measurements.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// What the workloads need from a runtime. Implemented by [`Escapement`] and [`Tokio`], each
/// a thin wrapper that forwards to the runtime's own API.
pub(crate) trait Rt: Send + Sync + 'static {
    /// The runtime's name in tables.
    const NAME: &'static str;

    /// The runtime's sleep future.
    type Sleep: Future<Output = ()> + Send + 'static;

    /// `time::sleep`.
    fn sleep(duration: Duration) -> Self::Sleep;

    /// `time::Instant::now() + duration`: the deadline `sleep(duration)` computes.
    fn deadline_after(duration: Duration) -> impl Copy;

    /// `Sleep::reset`.
    fn reset(sleep: Pin<&mut Self::Sleep>, deadline: std::time::Instant);

    /// `Sleep::is_elapsed`.
    fn is_elapsed(sleep: &Self::Sleep) -> bool;

    /// `time::timeout`, with the error mapped to `None`.
    fn timeout<F: Future>(duration: Duration, future: F)
        -> impl Future<Output = Option<F::Output>>;

    /// `task::yield_now`.
    fn yield_now() -> impl Future<Output = ()> + Send;

    /// `task::spawn_blocking`, awaited; panics if the closure panicked.
    fn spawn_blocking<T: Send + 'static>(
        f: impl FnOnce() -> T + Send + 'static,
    ) -> impl Future<Output = T> + Send;

    /// `task::block_in_place`.
    fn block_in_place<T>(f: impl FnOnce() -> T) -> T;

    /// Runs `future` outside the runtime's cooperative budget (`task::unconstrained` on
    /// both).
    ///
    /// On both runtimes a task poll has a budget of 128 ready timer polls, and once it is
    /// spent a `Sleep` returns `Pending` without registering. A loop that polls many
    /// sleeps in one task poll (register+cancel, the churn) would then measure nothing after
    /// the 128th sleep, so such loops run unconstrained on both runtimes.
    fn unconstrained<F: Future + Send>(future: F) -> impl Future<Output = F::Output> + Send;

    /// `Runtime::block_on`.
    fn block_on<F: Future>(&self, future: F) -> F::Output;

    /// `spawn` from inside the runtime (`escapement::spawn`, `tokio::spawn`), awaited;
    /// panics if the task panicked.
    fn spawn_here<F>(future: F) -> impl Future<Output = F::Output> + Send + 'static
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static;

    /// `Runtime::spawn`; the returned future is the task's output (dropping it detaches the
    /// task).
    ///
    /// # Panics
    ///
    /// The returned future panics if the task panicked.
    fn spawn<F>(&self, future: F) -> impl Future<Output = F::Output> + Send + 'static
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static;
}

/// An escapement runtime.
#[derive(Debug)]
pub(crate) struct Escapement(pub(crate) escapement::Runtime);

impl Escapement {
    /// A runtime with `workers` worker threads and otherwise the defaults.
    pub(crate) fn new(workers: usize) -> Escapement {
        Escapement(
            escapement::Builder::new()
                .worker_threads(workers)
                .build()
                .expect("escapement runtime"),
        )
    }

    /// A current-thread runtime: its tasks run on the thread in `block_on`.
    pub(crate) fn current_thread() -> Escapement {
        Escapement(
            escapement::Builder::new_current_thread()
                .build()
                .expect("escapement runtime"),
        )
    }
}

/// A tokio multi-threaded runtime, with the time driver.
#[derive(Debug)]
pub(crate) struct Tokio(pub(crate) tokio::runtime::Runtime);

impl Tokio {
    /// A multi-threaded runtime with `workers` worker threads and the time driver, whose
    /// threads are named `tokio-worker-N` in the order tokio starts them (by default they
    /// all share one name), so a task can tell which thread it runs on.
    pub(crate) fn new(workers: usize) -> Tokio {
        let next = AtomicUsize::new(0);
        Tokio(
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(workers)
                .thread_name_fn(move || {
                    format!("tokio-worker-{}", next.fetch_add(1, Ordering::Relaxed))
                })
                .enable_time()
                .build()
                .expect("tokio runtime"),
        )
    }

    /// A current-thread runtime with the time driver.
    pub(crate) fn current_thread() -> Tokio {
        Tokio(
            tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .build()
                .expect("tokio runtime"),
        )
    }
}

/// The [`Rt`] methods that drive tasks, for an `impl Rt` block of a wrapper whose field 0 is
/// `$krate`'s runtime: everything but the timers, which [`impl_rt`] adds for the two
/// runtimes and the churn's floor gives its own.
macro_rules! rt_executor {
    ($krate:ident, unconstrained: $unconstrained:path) => {
        fn yield_now() -> impl Future<Output = ()> + Send {
            $krate::task::yield_now()
        }

        fn spawn_blocking<T: Send + 'static>(
            f: impl FnOnce() -> T + Send + 'static,
        ) -> impl Future<Output = T> + Send {
            let task = $krate::task::spawn_blocking(f);
            async move { task.await.expect("the closure panicked") }
        }

        fn block_in_place<T>(f: impl FnOnce() -> T) -> T {
            $krate::task::block_in_place(f)
        }

        fn unconstrained<F: Future + Send>(future: F) -> impl Future<Output = F::Output> + Send {
            $unconstrained(future)
        }

        fn block_on<F: Future>(&self, future: F) -> F::Output {
            self.0.block_on(future)
        }

        fn spawn_here<F>(future: F) -> impl Future<Output = F::Output> + Send + 'static
        where
            F: Future + Send + 'static,
            F::Output: Send + 'static,
        {
            let task = $krate::spawn(future);
            async move { task.await.expect("the task panicked") }
        }

        fn spawn<F>(&self, future: F) -> impl Future<Output = F::Output> + Send + 'static
        where
            F: Future + Send + 'static,
            F::Output: Send + 'static,
        {
            let task = self.0.spawn(future);
            async move { task.await.expect("the task panicked") }
        }
    };
}

#[allow(
    unused_imports,
    reason = "only the churn's floor names it from outside this module"
)]
pub(crate) use rt_executor;

/// Implements [`Rt`] for `$wrapper`, the wrapper of `$krate`'s runtime. Both crates spell
/// the API alike (`$krate::time::{sleep, timeout, Sleep, Instant}`, `$krate::task::yield_now`,
/// `block_on` and `spawn` on the runtime), so one body serves both; only `unconstrained`
/// differs, and is given as the function that wraps the future.
macro_rules! impl_rt {
    ($wrapper:ident, $krate:ident, unconstrained: $unconstrained:path) => {
        impl Rt for $wrapper {
            const NAME: &'static str = stringify!($krate);

            type Sleep = $krate::time::Sleep;

            fn sleep(duration: Duration) -> Self::Sleep {
                $krate::time::sleep(duration)
            }

            fn deadline_after(duration: Duration) -> impl Copy {
                $krate::time::Instant::now() + duration
            }

            fn reset(sleep: Pin<&mut Self::Sleep>, deadline: std::time::Instant) {
                sleep.reset($krate::time::Instant::from_std(deadline));
            }

            fn is_elapsed(sleep: &Self::Sleep) -> bool {
                sleep.is_elapsed()
            }

            async fn timeout<F: Future>(duration: Duration, future: F) -> Option<F::Output> {
                $krate::time::timeout(duration, future).await.ok()
            }

            rt_executor!($krate, unconstrained: $unconstrained);
        }
    };
}

impl_rt!(Escapement, escapement, unconstrained: escapement::task::unconstrained);
impl_rt!(Tokio, tokio, unconstrained: tokio::task::unconstrained);

/// The median and range of repeated measurements.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Spread {
    pub(crate) median: f64,
    pub(crate) min: f64,
    pub(crate) max: f64,
}

impl Spread {
    /// The spread of `samples` (at least one).
    pub(crate) fn of(samples: &[f64]) -> Spread {
        assert!(!samples.is_empty(), "no samples");
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        let mid = sorted.len() / 2;
        let median = if sorted.len() % 2 == 1 {
            sorted[mid]
        } else {
            (sorted[mid - 1] + sorted[mid]) / 2.0
        };
        Spread {
            median,
            min: sorted[0],
            max: sorted[sorted.len() - 1],
        }
    }
}

impl fmt::Display for Spread {
    /// `median (min–max)`, with the precision given to the formatter (default 1).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = f.precision().unwrap_or(1);
        write!(f, "{:.p$} ({:.p$}–{:.p$})", self.median, self.min, self.max)
    }
}

/// The `q`-quantile (`0.0..=1.0`) of sorted samples, by the nearest-rank method.
pub(crate) fn quantile(sorted: &[Duration], q: f64) -> Duration {
    assert!(!sorted.is_empty(), "no samples");
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// Microseconds, as a float, for tables.
pub(crate) fn micros(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e6
}

/// Polls `future` once with the calling task's context and returns whether it was ready. A
/// pending timer is left registered with the task's waker, as when it loses a `select!`.
pub(crate) async fn poll_once<F: Future + ?Sized>(mut future: Pin<&mut F>) -> bool {
    std::future::poll_fn(|cx| std::task::Poll::Ready(future.as_mut().poll(cx).is_ready())).await
}

/// How a child process of the benchmark ended.
#[derive(Debug)]
pub(crate) enum ChildOutcome {
    /// It exited successfully; its `RESULT` line, without the prefix.
    Done(String),
    /// It was still running after the time limit, and was killed: a hang.
    Hung,
    /// It failed; the reason and its stderr.
    Failed(String),
}

/// Runs this bench binary again with `--child` and `args`, and returns the line the child
/// printed with `print_result`. A child still running after `limit` is killed and reported
/// as [`ChildOutcome::Hung`], so that a runtime that hangs shows up in the table instead of
/// stalling the whole benchmark.
pub(crate) fn run_child(args: &[&str], limit: Duration) -> ChildOutcome {
    use std::io::Read;
    use std::process::{Command, Stdio};

    let exe = std::env::current_exe().expect("the bench binary's path");
    let mut child = Command::new(exe)
        .arg("--child")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start a child");
    // Drain the pipes on threads of their own, so a chatty child cannot block on them.
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("piped stdout")));
    let stderr = drain(Box::new(child.stderr.take().expect("piped stderr")));
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for a child") {
            break Some(status);
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stdout = stdout.join().expect("stdout reader");
    let stderr = stderr.join().expect("stderr reader");
    match status {
        None => ChildOutcome::Hung,
        Some(status) if !status.success() => ChildOutcome::Failed(format!("{status}: {stderr}")),
        Some(_) => match stdout.lines().find_map(|l| l.strip_prefix("RESULT ")) {
            Some(line) => ChildOutcome::Done(line.to_owned()),
            None => ChildOutcome::Failed(format!("no RESULT line; stderr: {stderr}")),
        },
    }
}

/// The arguments after `--child`, if this process is a child of [`run_child`].
pub(crate) fn child_args() -> Option<Vec<String>> {
    let args: Vec<String> = std::env::args().collect();
    let at = args.iter().position(|a| a == "--child")?;
    Some(args[at + 1..].to_vec())
}

/// Whether `cargo bench` started this binary: it passes `--bench`, while `cargo test
/// --benches` (which only checks that benchmarks run) passes nothing. The bench binaries that
/// take minutes do nothing in that case, as criterion's run each benchmark once; when it
/// returns `false`, this prints that the benchmark `name` (its `module_path!()`) takes
/// minutes and how to run it.
pub(crate) fn started_by_cargo_bench(name: &str) -> bool {
    let started = std::env::args().any(|a| a == "--bench");
    if !started {
        println!("{name} takes minutes: run it with `cargo bench`");
    }
    started
}

/// Prints a child's result line for [`run_child`].
pub(crate) fn print_result(line: impl fmt::Display) {
    println!("RESULT {line}");
}

/// The worker counts a table is made for: one worker per CPU, the runtimes' default, then
/// one worker.
pub(crate) fn worker_counts() -> [usize; 2] {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    [cpus, 1]
}

/// The runs behind one table comparing escapement with tokio: each runtime's samples and
/// how many of its runs hung, escapement's at index 0 and tokio's at index 1.
#[derive(Debug)]
pub(crate) struct Runs<S> {
    pub(crate) samples: [Vec<S>; 2],
    pub(crate) hung: [usize; 2],
}

impl<S> Runs<S> {
    /// Runs each runtime `runs` times as a child process given `[runtime name, workers]`,
    /// alternating which runtime goes first, so drift in the machine's load hits both. Each
    /// child's result line is read with `parse`, and the run is printed as `run N NAME`
    /// followed by `describe`'s text. A child still running after `hang_limit` is killed
    /// and counted as hung; after `max_hangs` hangs a runtime's remaining runs are skipped.
    ///
    /// # Panics
    ///
    /// If a child fails.
    pub(crate) fn collect(
        workers: usize,
        runs: usize,
        hang_limit: Duration,
        max_hangs: usize,
        parse: impl Fn(&str) -> S,
        describe: impl Fn(&S) -> String,
    ) -> Runs<S> {
        let names = [Escapement::NAME, Tokio::NAME];
        let mut done = Runs {
            samples: [Vec::new(), Vec::new()],
            hung: [0; 2],
        };
        for run in 0..runs {
            // Alternate which runtime goes first, so drift in the machine's load hits both.
            for i in [run % 2, 1 - run % 2] {
                if done.hung[i] >= max_hangs {
                    println!(
                        "  run {run} {:<10} skipped after {max_hangs} hangs",
                        names[i]
                    );
                    continue;
                }
                match run_child(&[names[i], &workers.to_string()], hang_limit) {
                    ChildOutcome::Done(line) => {
                        let sample = parse(&line);
                        println!("  run {run} {:<10} {}", names[i], describe(&sample));
                        done.samples[i].push(sample);
                    }
                    ChildOutcome::Hung => {
                        println!(
                            "  run {run} {:<10} HUNG: killed after {hang_limit:?}",
                            names[i]
                        );
                        done.hung[i] += 1;
                    }
                    ChildOutcome::Failed(why) => panic!("{} failed: {why}", names[i]),
                }
            }
        }
        done
    }

    /// Prints the table row `| label | escapement | tokio | escapement / tokio |`: each
    /// runtime's [`Spread`] of `quantity` over its samples, to `precision` decimals (a dash
    /// for a runtime without samples), and the ratio of the medians.
    pub(crate) fn print_row(&self, label: &str, quantity: impl Fn(&S) -> f64, precision: usize) {
        let spread = |i: usize| {
            (!self.samples[i].is_empty())
                .then(|| Spread::of(&self.samples[i].iter().map(&quantity).collect::<Vec<_>>()))
        };
        let cell = |s: Option<Spread>| match s {
            Some(s) => format!("{s:.precision$}"),
            None => "–".to_owned(),
        };
        let (e, t) = (spread(0), spread(1));
        let ratio = match (e, t) {
            (Some(e), Some(t)) => format!("{:.2}", e.median / t.median),
            _ => "–".to_owned(),
        };
        println!("| {label} | {} | {} | {ratio} |", cell(e), cell(t));
    }

    /// Prints the table row of runs completed, and hung in brackets, per runtime.
    pub(crate) fn print_completed(&self) {
        println!(
            "| runs completed (hung) | {} ({}) | {} ({}) | |",
            self.samples[0].len(),
            self.hung[0],
            self.samples[1].len(),
            self.hung[1]
        );
    }
}

/// The process's user + system CPU time so far.
pub(crate) fn cpu_time() -> Duration {
    let usage = rusage();
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// The process's peak resident set size, in KiB (Linux's unit for `ru_maxrss`).
pub(crate) fn peak_rss_kib() -> u64 {
    rusage().ru_maxrss as u64
}

fn rusage() -> libc::rusage {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::uninit();
    // SAFETY: `getrusage` writes a whole `rusage` to the pointer, which is valid for writes
    // of one; it fails only for an invalid `who`, and `RUSAGE_SELF` is valid.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) };
    assert_eq!(rc, 0, "getrusage: {}", std::io::Error::last_os_error());
    // SAFETY: `getrusage` succeeded, so it initialised `usage`.
    unsafe { usage.assume_init() }
}
