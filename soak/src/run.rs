//! One round: a runtime configured from the seed, its tasks, its shutdown, and the checks
//! that only the end of a round can make.
//!
//! The seed draws the flavor (current-thread, or 1 to 4 workers), the tick (10 µs to 5 ms),
//! the clock's mode, the builder's other settings, the number of top-level tasks and how the
//! runtime shuts down. A tenth of the tasks are spawned from outside before `block_on`, a tenth
//! from a thread while the round runs, and the rest from the body, which then waits for them
//! all (inside a `LocalSet` with tasks of its own, a fifth of the time) while it moves the
//! clock if the mode says so. Then, before shutdown:
//!
//! - every top-level task finished exactly once, and every detached child finished;
//! - with every `Sleep` dropped, no timer is left in the wheel, and the timer metrics
//!   balance (registered = fired + cancelled + live);
//! - no task is left alive once all are joined.
//!
//! Sometimes tasks are left behind with timers pending, and a sleep on a thread outlives the
//! runtime. After the shutdown (a drop, `shutdown_timeout` long or short, or
//! `shutdown_background`), every task future has been dropped: at once for the first two, as
//! they wait for the workers, within 3 s for the others.

use std::future::Future;
use std::rc::Rc;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant as StdInstant};

use escapement::task::{self, LocalSet};
use escapement::time;
use escapement::{Builder, JoinHandle, Runtime};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::checked::{checked, spawn_checked};
use crate::counts::Counts;
use crate::ops::{self, draw_micros, HOUR, MS};
use crate::round::{fail, Mode, Round, FAILED};

/// The round in progress and when it must be over, for the watchdog.
pub(crate) static CURRENT: Mutex<Option<(Arc<Round>, StdInstant)>> = Mutex::new(None);

/// What the command line fixes for every round.
pub(crate) struct Options {
    /// The clock's mode, or `None` to draw it.
    pub(crate) mode: Option<Mode>,
    /// The most top-level tasks a round runs (at least 1).
    pub(crate) tasks_max: usize,
}

impl Options {
    /// The command line that runs the round of `seed` alone.
    pub(crate) fn replay(&self, seed: u64) -> String {
        let profile = if cfg!(debug_assertions) {
            ""
        } else {
            " --release"
        };
        let mut line = format!("cargo run{profile} -p escapement-soak -- --seed {seed} --one");
        if let Some(mode) = self.mode {
            line += &format!(" --mode {}", mode.name());
        }
        if self.tasks_max != 2000 {
            line += &format!(" --tasks-max {}", self.tasks_max);
        }
        line
    }
}

const TICKS_US: [u64; 10] = [10, 20, 50, 100, 250, 500, 1000, 1000, 2000, 5000];

/// How the runtime shuts down.
#[derive(Clone, Copy, Debug)]
enum Shutdown {
    Drop,
    Timeout,
    ShortTimeout,
    Background,
}

/// A round's configuration, drawn from its seed.
struct Config {
    mode: Mode,
    /// The worker count, or `None` for a current-thread runtime.
    workers: Option<usize>,
    tick: Duration,
    builder: Builder,
    /// The settings drawn, for the round's first line and its failures.
    desc: String,
    metrics: bool,
    tasks: usize,
    shutdown: Shutdown,
    /// Whether tasks with pending timers are left to the shutdown.
    linger: bool,
    /// Whether the tasks also use a second runtime's timers.
    second: bool,
}

impl Config {
    fn draw(rng: &mut SmallRng, options: &Options) -> Config {
        // Drawn even when the options fix it, so that the draws after it stay the same.
        let mode = match rng.random_range(0..10) {
            0 | 1 => Mode::Exact,
            2 => Mode::Paused,
            3 => Mode::Toggle,
            4 => Mode::Quiet,
            _ => Mode::Real,
        };
        let mode = options.mode.unwrap_or(mode);
        let current = rng.random_bool(0.2);
        let workers = rng.random_range(1..=4);
        let tick = if rng.random_bool(0.6) {
            Duration::from_micros(TICKS_US[rng.random_range(0..TICKS_US.len())])
        } else {
            MS
        };
        let mut desc = format!("mode={mode:?} tick={tick:?}");
        let (mut builder, workers) = if current {
            desc += " current-thread";
            (Builder::new_current_thread(), None)
        } else {
            desc += &format!(" workers={workers}");
            let mut builder = Builder::new_multi_thread();
            builder.worker_threads(workers);
            (builder, Some(workers))
        };
        let paused = matches!(mode, Mode::Paused | Mode::Exact);
        builder
            .enable_all()
            .timer_resolution(tick)
            .start_paused(paused);
        if rng.random_bool(0.3) {
            let threads = rng.random_range(1..8);
            builder.max_blocking_threads(threads);
            desc += &format!(" max_blocking_threads={threads}");
        }
        if rng.random_bool(0.3) {
            let keep_alive = Duration::from_micros(rng.random_range(100..20_000));
            builder.thread_keep_alive(keep_alive);
            desc += &format!(" thread_keep_alive={keep_alive:?}");
        }
        if rng.random_bool(0.2) {
            let interval = rng.random_range(1..100);
            builder.global_queue_interval(interval);
            desc += &format!(" global_queue_interval={interval}");
        }
        if rng.random_bool(0.2) {
            let interval = rng.random_range(1..100);
            builder.event_interval(interval);
            desc += &format!(" event_interval={interval}");
        }
        let metrics = rng.random_bool(0.8);
        if !metrics {
            builder.metrics(false);
            desc += " metrics=off";
        }
        let max = options.tasks_max;
        let tasks = if mode == Mode::Quiet {
            rng.random_range(1..=max.min(30))
        } else {
            rng.random_range(max.min(50)..=max)
        };
        let shutdown = match rng.random_range(0..6) {
            0..=2 => Shutdown::Drop,
            3 => Shutdown::Timeout,
            4 => Shutdown::ShortTimeout,
            _ => Shutdown::Background,
        };
        let linger = rng.random_bool(0.3);
        desc += &format!(" tasks={tasks} shutdown={shutdown:?} linger={linger}");
        let second = mode == Mode::Real && rng.random_bool(0.4);
        if second {
            desc += " second-runtime";
        }
        Config {
            mode,
            workers,
            tick,
            builder,
            desc,
            metrics,
            tasks,
            shutdown,
            linger,
            second,
        }
    }
}

/// Runs the round of `seed`, adding its counts to `totals`.
pub(crate) fn run(seed: u64, options: &Options, totals: &Counts) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut config = Config::draw(&mut rng, options);
    println!("round seed={seed} {}", config.desc);
    let multi = config.workers.is_some();
    let round = Round::new(
        seed,
        config.desc,
        config.mode,
        multi,
        config.tick,
        config.tasks,
    );
    let round = Arc::new(round);
    let began = StdInstant::now();
    let limit = Duration::from_secs(if cfg!(debug_assertions) { 180 } else { 90 });
    *CURRENT.lock().unwrap() = Some((round.clone(), began + limit));

    let rt = config.builder.build().expect("the runtime builds");
    let other = config.second.then(|| {
        let mut builder = Builder::new_multi_thread();
        builder.worker_threads(rng.random_range(1..=2));
        if rng.random_bool(0.5) {
            let tick = TICKS_US[rng.random_range(0..TICKS_US.len())];
            builder.timer_resolution(Duration::from_micros(tick));
        }
        let other = builder.build().expect("the second runtime builds");
        *round.other.lock().unwrap() = Some(other.handle().clone());
        other
    });
    rt.block_on(async { round.set_origin() });
    let body = body(&rt, &round, &mut rng, config.metrics, config.linger);
    rt.block_on(checked(&round, body));
    shut_down(rt, config.shutdown, &mut rng);
    round.shutdown_over.lock().unwrap().clear();
    round.other.lock().unwrap().take();
    drop(other);
    for thread in std::mem::take(&mut *round.threads.lock().unwrap()) {
        thread.join().unwrap();
    }
    // Every task future dropped: at once where the shutdown waited for the workers.
    let bound = match config.shutdown {
        Shutdown::Drop | Shutdown::Timeout => Duration::ZERO,
        Shutdown::ShortTimeout | Shutdown::Background => Duration::from_secs(3),
    };
    let waited = StdInstant::now();
    while round.alive.load(SeqCst) != 0 {
        if waited.elapsed() >= bound {
            let alive = round.alive.load(SeqCst);
            let shutdown = config.shutdown;
            fail!(
                round,
                "{alive} task futures not dropped after the shutdown ({shutdown:?})"
            );
            break;
        }
        std::thread::sleep(MS);
    }
    *CURRENT.lock().unwrap() = None;
    let verdict = if FAILED.load(SeqCst) { "FAILED" } else { "ok" };
    println!(
        "  {verdict} seed={seed} in {:?}: {}",
        began.elapsed(),
        round.counts
    );
    round.counts.add_round_to(totals);
}

fn shut_down(rt: Runtime, shutdown: Shutdown, rng: &mut SmallRng) {
    let began = StdInstant::now();
    match shutdown {
        Shutdown::Drop => drop(rt),
        Shutdown::Timeout => rt.shutdown_timeout(Duration::from_secs(10)),
        Shutdown::ShortTimeout => {
            rt.shutdown_timeout(Duration::from_micros(rng.random_range(0..2000)))
        }
        Shutdown::Background => rt.shutdown_background(),
    }
    if began.elapsed() > Duration::from_secs(2) {
        eprintln!(
            "NOTE: the shutdown ({shutdown:?}) took {:?}",
            began.elapsed()
        );
    }
}

type Tasks = Arc<Mutex<Vec<(usize, JoinHandle<()>)>>>;

/// Spawns the tasks that start outside `block_on`, and returns the body, which spawns the
/// rest, waits for them all and checks the round's end.
fn body(
    rt: &Runtime,
    round: &Arc<Round>,
    rng: &mut SmallRng,
    metrics: bool,
    linger: bool,
) -> impl Future<Output = ()> {
    let n = round.slots.len() - 1;
    let tasks: Tasks = Arc::default();
    let outside = n / 10;
    for i in 1..=outside {
        let task = top_task(round.clone(), rng.random(), i);
        tasks
            .lock()
            .unwrap()
            .push((i, rt.spawn(checked(round, task))));
    }
    let from_thread: Vec<u64> = (0..n / 10).map(|_| rng.random()).collect();
    let spawner = {
        let (handle, round, tasks) = (rt.handle().clone(), round.clone(), tasks.clone());
        let gap = Duration::from_micros(rng.random_range(0..300));
        std::thread::spawn(move || {
            for (j, seed) in from_thread.into_iter().enumerate() {
                let i = outside + 1 + j;
                let task = handle.spawn(checked(&round, top_task(round.clone(), seed, i)));
                tasks.lock().unwrap().push((i, task));
                std::thread::sleep(gap);
            }
        })
    };
    let first_inside = outside + n / 10 + 1;
    let inside: Vec<u64> = (first_inside..=n).map(|_| rng.random()).collect();
    let advances: Vec<Duration> = (0..rng.random_range(1..30))
        .map(|_| draw_micros(rng, 4000))
        .collect();
    let local = rng.random_bool(0.2);
    let mut rng = SmallRng::seed_from_u64(rng.random());
    let round = round.clone();
    async move {
        for (j, seed) in inside.into_iter().enumerate() {
            let i = first_inside + j;
            let task = spawn_checked(&round, top_task(round.clone(), seed, i));
            tasks.lock().unwrap().push((i, task));
            if rng.random_bool(0.05) {
                task::yield_now().await;
            }
        }
        let done = AtomicBool::new(false);
        let wait = async {
            task::spawn_blocking(move || spawner.join().unwrap())
                .await
                .unwrap();
            let joined = std::mem::take(&mut *tasks.lock().unwrap());
            for (i, task) in joined {
                if let Err(e) = task.await {
                    fail!(round, "top-level task {i} failed: {e:?}");
                }
            }
            done.store(true, SeqCst);
        };
        let clock = move_clock(&round, advances, &done, rng.random());
        let both = futures::future::join(clock, wait);
        if local {
            LocalSet::new()
                .run_until(with_local_tasks(&round, rng.random(), both))
                .await;
        } else {
            both.await;
        }
        check_end(&round, metrics).await;
        if linger {
            leave_tasks_behind(&round, &mut rng).await;
        }
    }
}

/// Moves the clock while the tasks run, in the modes that move it from the body.
async fn move_clock(round: &Round, advances: Vec<Duration>, done: &AtomicBool, seed: u64) {
    match round.mode {
        Mode::Paused => {
            for by in advances {
                if done.load(SeqCst) {
                    break;
                }
                time::advance(by).await;
                task::yield_now().await;
            }
        }
        Mode::Toggle => {
            let mut rng = SmallRng::seed_from_u64(seed);
            while !done.load(SeqCst) {
                time::sleep(draw_micros(&mut rng, 3000)).await;
                time::pause();
                if rng.random_bool(0.5) {
                    time::advance(draw_micros(&mut rng, 2000)).await;
                } else {
                    task::yield_now().await;
                }
                time::resume();
            }
        }
        Mode::Real | Mode::Quiet | Mode::Exact => {}
    }
}

/// Awaits `wait` beside up to 20 tasks of the `LocalSet` it runs in, which sleep and time out
/// a yield, each holding an `Rc`; then awaits them.
async fn with_local_tasks<F: Future>(round: &Arc<Round>, seed: u64, wait: F) -> F::Output {
    let mut rng = SmallRng::seed_from_u64(seed);
    let tasks: Vec<_> = (0..rng.random_range(1..=20))
        .map(|k| {
            let not_send = Rc::new(k);
            let d = draw_micros(&mut rng, 10_000);
            let task_round = round.clone();
            task::spawn_local(checked(round, async move {
                let start = task_round.now();
                time::sleep(d).await;
                task_round.check("a LocalSet task's sleep", start + d, task_round.now());
                let _ = time::timeout(d, task::yield_now()).await;
                drop(not_send);
            }))
        })
        .collect();
    let output = wait.await;
    for task in tasks {
        if let Err(e) = task.await {
            fail!(round, "a LocalSet task failed: {e:?}");
        }
    }
    output
}

/// The checks of a round's end, before the shutdown.
async fn check_end(round: &Round, metrics: bool) {
    for (i, slot) in round.slots.iter().enumerate().skip(1) {
        let reports = slot.reports.load(SeqCst);
        if reports != 1 {
            fail!(round, "top-level task {i} finished {reports} times");
        }
    }
    let began = StdInstant::now();
    while round.detached.load(SeqCst) != 0 {
        time::sleep(MS).await;
        if began.elapsed() > Duration::from_secs(20) {
            let left = round.detached.load(SeqCst);
            fail!(round, "{left} detached operations never finished");
            break;
        }
    }
    // Joins the threads that hold sleeps, so that none is left to the wheel.
    let threads = std::mem::take(&mut *round.threads.lock().unwrap());
    task::spawn_blocking(move || {
        threads
            .into_iter()
            .for_each(|thread| thread.join().unwrap())
    })
    .await
    .unwrap();
    let metrics_now = || escapement::Handle::current().metrics();
    let began = StdInstant::now();
    while metrics_now().live_timers() != 0 && began.elapsed() < Duration::from_secs(1) {
        task::yield_now().await;
    }
    let live = metrics_now().live_timers();
    if live != 0 {
        fail!(
            round,
            "{live} timers still in the wheel with every Sleep dropped"
        );
    }
    if metrics {
        let m = metrics_now();
        let (registered, fired) = (m.timers_registered(), m.timers_fired());
        let (cancelled, live) = (m.timers_cancelled(), m.live_timers() as u64);
        if registered != fired + cancelled + live {
            fail!(
                round,
                "timers registered {registered} != fired {fired} + cancelled {cancelled} + \
                 live {live}"
            );
        }
    }
    let began = StdInstant::now();
    while metrics_now().num_alive_tasks() != 0 && began.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_micros(200));
        task::yield_now().await;
    }
    let alive = metrics_now().num_alive_tasks();
    if alive != 0 {
        fail!(round, "{alive} tasks still alive with all joined");
    }
}

/// Leaves up to 50 tasks with timers pending for the shutdown, and a registered sleep to a
/// thread that drops it once the runtime is gone.
async fn leave_tasks_behind(round: &Arc<Round>, rng: &mut SmallRng) {
    for _ in 0..rng.random_range(1..=50) {
        drop(spawn_checked(round, lingering(rng.random())));
    }
    let mut sleep = Box::pin(time::sleep(HOUR));
    let _ = futures::poll!(task::unconstrained(sleep.as_mut()));
    let (shutdown_over, wait) = mpsc::channel::<()>();
    round.shutdown_over.lock().unwrap().push(shutdown_over);
    let thread = std::thread::spawn(move || {
        let _ = wait.recv();
        drop(sleep);
    });
    round.threads.lock().unwrap().push(thread);
    task::yield_now().await;
    if rng.random_bool(0.5) {
        time::sleep(draw_micros(rng, 3000)).await;
    }
}

/// A task that never ends by itself: a far sleep, an interval, a loop of sleeps, or a timeout
/// around a pending future.
async fn lingering(seed: u64) {
    let mut rng = SmallRng::seed_from_u64(seed);
    match rng.random_range(0..4) {
        0 => time::sleep(HOUR).await,
        1 => {
            let mut interval = time::interval(Duration::from_micros(rng.random_range(100..3000)));
            loop {
                interval.tick().await;
            }
        }
        2 => loop {
            time::sleep(draw_micros(&mut rng, 3000)).await;
            task::yield_now().await;
        },
        _ => {
            let _ = time::timeout(HOUR, std::future::pending::<()>()).await;
        }
    }
}

/// A top-level task: up to four operations, a fifth of them beside a second one (not
/// watched); then it reports that it finished.
async fn top_task(round: Arc<Round>, seed: u64, slot: usize) {
    let mut rng = SmallRng::seed_from_u64(seed);
    round.counts.tasks.fetch_add(1, SeqCst);
    for _ in 0..rng.random_range(1..5) {
        let op = ops::run(
            round.clone(),
            SmallRng::seed_from_u64(rng.random()),
            Some(slot),
            0,
        );
        if rng.random_bool(0.2) {
            let beside = ops::run(
                round.clone(),
                SmallRng::seed_from_u64(rng.random()),
                None,
                0,
            );
            futures::future::join(op, beside).await;
        } else {
            op.await;
        }
    }
    round.slots[slot].reports.fetch_add(1, SeqCst);
}
