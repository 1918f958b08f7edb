//! The runtime against tokio, in criterion: the cost of single timer operations.
//!
//! - `timeout_ready`: `time::timeout(1 s, ready(..))`, the timeout around a future that is
//!   ready at its first poll, awaited in a loop.
//! - `register_cancel`: a `sleep(1 s)` polled once (so it registers with the task's waker)
//!   and dropped (so it is cancelled), as a timeout that loses its `select!`; on 1 and on 2
//!   workers, with 0 and with 1M other timers live (1M spawned tasks, each asleep on a timer
//!   1-2 h away, all registered before measuring).
//! - `register_cancel/{runtime}_floor`: what register+cancel cannot avoid on that runtime,
//!   whatever its timer design: reading the clock for the deadline (`Instant::now() + 1 s`)
//!   and cloning the task's waker into the timer and dropping it. On 1 and 2 workers, no
//!   other timers.
//! - `register_cancel/.../Nw_contended`: the same loop in N tasks at once, one on each of N
//!   workers, no other timers: what register+cancel costs while the other workers do the
//!   same, the case a single timer lock serializes. N is 2, and on a machine with more CPUs
//!   also 4, 8 and so on up to the CPU count ([`contended_counts`]). Time per iteration is
//!   the slowest task's loop time over `iters` (each task runs `iters`), so the N workers
//!   together do N register+cancels in that time.
//! - `metrics_cost`: register+cancel on escapement with `Builder::metrics(true)` and
//!   `metrics(false)`, on 1 and on 2 workers.
//! - `spawn_blocking`: a trivial closure handed to `spawn_blocking` and awaited, one at a
//!   time, on 2 workers: the cost of a round trip through the blocking threads (wall time
//!   only).
//! - `block_in_place`: a trivial closure run through `task::block_in_place`, then a
//!   `yield_now`, in a loop, on 2 workers: each call hands the worker to another thread, and
//!   the yield lets the task's next poll run on the worker's new thread, where the next call
//!   can hand it off again (wall time only).
//! - `spawn_join`: a trivial task spawned from a task and awaited, one at a time, on 2
//!   workers: the cost of a task's life (allocation, the owned list, a run queue, its
//!   completion and the join handle's wake-up), by wall time.
//! - `spawn_outside`: trivial tasks spawned from a thread outside the runtime (`block_on`'s)
//!   [`OUTSIDE_BATCH`] at a time, then each awaited, on 1 and on 2 workers, by wall time: an
//!   accept loop's pattern, where each task is allocated on one thread and freed on another.
//! - `select_join`: on 1 worker, by CPU time as (a), a `select!` of three branches, one of them
//!   ready (not `biased`, so each poll starts at a random branch), and a `join!` of three
//!   ready futures, in a loop: what the macros add around the futures they poll.
//! - `current_thread`: on each runtime's current-thread flavor, by wall time, the loops of
//!   `spawn_join` (a task spawned from `block_on`'s future and awaited, one at a time, both
//!   running on that thread) and of `register_cancel`, run in `block_on`'s future itself,
//!   since that is where a current-thread runtime runs everything.
//! - `yield_now`: `task::yield_now` in a loop, the task alone on its runtime, on 1 and on 2
//!   workers: what holding a task back after its yield and queueing it again costs when
//!   nothing else is ready.
//! - `ping_pong`, `ping_pong_outside`: [`PING_PONG_PAIRS`] pairs of tasks, each pair
//!   sending a message back and forth over two bounded channels of the `futures` crate (the
//!   same for both runtimes), on 1 and on 2 workers, by wall time per message: the
//!   message-passing pattern a worker's LIFO slot serves, where the receiver a send wakes
//!   runs next, while the channel is still in the cache, instead of behind every other pair.
//!   The pairs are spawned by a task, or by `block_on`'s thread (`_outside`, in runs of
//!   [`OUTSIDE_ROUNDS`] round trips a pair, awaited there, as a program's `main` would).
//!
//! Every measured loop runs inside a spawned task that `block_on` awaits, not in `block_on`
//! itself: a runtime's timers are meant to be used from its tasks, and with one worker the
//! loop then runs on that worker, which for escapement is worker 0, the timer driver's owner.
//! With two workers the scheduler picks the worker. The loops run under
//! `task::unconstrained` on both runtimes (see `common::Rt::unconstrained`).
//!
//! After each benchmark it prints the threads the measured loops ran on and the loops' CPU
//! time per iteration on their thread, which the machine's other load disturbs less than wall
//! time (see [`bench_on`]). Before the benchmarks it prints `size_of` of both runtimes'
//! `Sleep`, and the sizes of `async` blocks around a `select!` and a `join!` of each.
//!
//! ```sh
//! cargo bench -p escapement-benches --bench runtime
//! ```

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::future::{pending, ready, Future};
use std::hint::black_box;
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

#[allow(
    dead_code,
    reason = "each benchmark binary uses its own part of the shared code"
)]
mod common;

use common::{poll_once, Escapement, Rt, Spread, Tokio};

/// The other timers live during `register_cancel`'s second half.
const LIVE_TIMERS: usize = 1_000_000;

/// Criterion samples per benchmark.
const SAMPLES: usize = 20;

/// The sleep that register+cancel registers and cancels.
const SLEEP: Duration = Duration::from_secs(1);

fn main() {
    println!(
        "size_of::<escapement::time::Sleep>() = {} bytes",
        size_of::<escapement::time::Sleep>()
    );
    println!(
        "size_of::<tokio::time::Sleep>() = {} bytes",
        size_of::<tokio::time::Sleep>()
    );
    print_macro_sizes();
    let mut c = Criterion::default()
        .sample_size(SAMPLES)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .configure_from_args();
    timeout_ready(&mut c);
    register_cancel(&mut c);
    metrics_cost(&mut c);
    spawn_blocking(&mut c);
    block_in_place(&mut c);
    spawn_join(&mut c);
    spawn_outside(&mut c);
    select_join(&mut c);
    current_thread(&mut c);
    yield_now(&mut c);
    ping_pong(&mut c);
    c.final_summary();
}

/// (a) `timeout` around a ready future, on 2 workers.
fn timeout_ready(c: &mut Criterion) {
    let mut group = c.benchmark_group("timeout_ready");
    bench_loop(
        &mut group,
        "2w",
        &Escapement::new(2),
        timeout_loop::<Escapement>,
    );
    bench_loop(&mut group, "2w", &Tokio::new(2), timeout_loop::<Tokio>);
    group.finish();
}

/// `iters` timeouts around a ready future.
async fn timeout_loop<R: Rt>(iters: u64) {
    for _ in 0..iters {
        black_box(R::timeout(Duration::from_secs(1), ready(black_box(1u32))).await);
    }
}

/// (b) register+cancel on 1 and 2 workers, with 0 and 1M other timers live.
fn register_cancel(c: &mut Criterion) {
    let mut group = c.benchmark_group("register_cancel");
    for workers in [1, 2] {
        for live in [0, LIVE_TIMERS] {
            let id = format!("{workers}w_{live}live");
            let escapement = |group: &mut _| {
                let rt = Escapement::new(workers);
                fill(&rt, live);
                bench_loop(group, &id, &rt, register_cancel_loop::<Escapement>);
                if live == 0 {
                    bench_on(
                        group,
                        "escapement_floor",
                        &id,
                        &rt,
                        floor_loop::<Escapement>,
                    );
                }
            };
            let tokio = |group: &mut _| {
                let rt = Tokio::new(workers);
                fill(&rt, live);
                bench_loop(group, &id, &rt, register_cancel_loop::<Tokio>);
                if live == 0 {
                    bench_on(group, "tokio_floor", &id, &rt, floor_loop::<Tokio>);
                }
            };
            // Which runtime goes first alternates from row to row, so that neither always
            // finds the heap and the caches as the other left them.
            if (workers == 2) == (live == 0) {
                tokio(&mut group);
                escapement(&mut group);
            } else {
                escapement(&mut group);
                tokio(&mut group);
            }
        }
    }
    for workers in contended_counts() {
        let rt = Escapement::new(workers);
        bench_contended(&mut group, &rt, workers);
        drop(rt);
        bench_contended(&mut group, &Tokio::new(workers), workers);
    }
    group.finish();
}

/// The worker counts of the contended rows: 2, then each doubling up to the CPU count.
fn contended_counts() -> Vec<usize> {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    std::iter::successors(Some(2), |n| Some(n * 2))
        .take_while(|&n| n == 2 || n <= cpus)
        .collect()
}

/// Benchmarks `register_cancel_loop` in `workers` tasks at once on a runtime of that many
/// workers, as `R::NAME/{workers}w_contended`; prints the threads each set of loops ran on,
/// which must all differ for the loops to overlap.
fn bench_contended<R: Rt>(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    rt: &R,
    workers: usize,
) {
    let id = format!("{workers}w_contended");
    let sets = RefCell::new(BTreeMap::<String, u64>::new());
    group.bench_function(BenchmarkId::new(R::NAME, &id), |b| {
        b.iter_custom(|iters| {
            let started = Arc::new(AtomicUsize::new(0));
            let tasks: Vec<_> = (0..workers)
                .map(|_| {
                    let started = started.clone();
                    rt.spawn(R::unconstrained(async move {
                        // The loops start together. Each task spins until all have started
                        // (without yielding, which would let another run after it on the
                        // same thread) so that the other workers take the rest; if they do
                        // not within a while, it yields after all.
                        started.fetch_add(1, Ordering::SeqCst);
                        let spin_start = Instant::now();
                        while started.load(Ordering::SeqCst) < workers {
                            if spin_start.elapsed() < Duration::from_millis(100) {
                                std::hint::spin_loop();
                            } else {
                                R::yield_now().await;
                            }
                        }
                        let thread = std::thread::current().name().unwrap_or("?").to_owned();
                        let start = Instant::now();
                        register_cancel_loop::<R>(iters).await;
                        (start.elapsed(), thread)
                    }))
                })
                .collect();
            let results = rt.block_on(async move {
                let mut results = Vec::new();
                for task in tasks {
                    results.push(task.await);
                }
                results
            });
            let threads: Vec<_> = results.iter().map(|(_, t)| t.as_str()).collect();
            let set = if workers == 2 {
                threads.join("+")
            } else {
                // Past two, the names matter less than how many distinct threads there were.
                let distinct: std::collections::BTreeSet<_> = threads.iter().collect();
                format!("{} threads", distinct.len())
            };
            *sets.borrow_mut().entry(set).or_default() += 1;
            results
                .iter()
                .map(|(elapsed, _)| *elapsed)
                .max()
                .expect("a loop per worker")
        })
    });
    let sets = sets.into_inner();
    if !sets.is_empty() {
        println!("  {}/{id}: loops ran on {sets:?}", R::NAME);
    }
}

/// `iters` sleeps, each polled once and dropped.
async fn register_cancel_loop<R: Rt>(iters: u64) {
    for _ in 0..iters {
        let sleep = pin!(R::sleep(SLEEP));
        poll_once(sleep).await;
    }
}

/// `iters` times the part of register+cancel that no timer design avoids: the clock read of
/// `sleep`'s deadline, and a clone of the task's waker (the timer must hold one to be woken)
/// that is later dropped. A floor for register+cancel on that runtime: 5x tokio's
/// register+cancel is out of reach of any runtime whose floor is above a fifth of it.
async fn floor_loop<R: Rt>(iters: u64) {
    std::future::poll_fn(|cx| {
        for _ in 0..iters {
            black_box(R::deadline_after(SLEEP));
            drop(black_box(cx.waker().clone()));
        }
        std::task::Poll::Ready(())
    })
    .await;
}

/// (h) register+cancel on escapement with and without metrics.
fn metrics_cost(c: &mut Criterion) {
    let mut group = c.benchmark_group("metrics_cost");
    for workers in [1, 2] {
        for metrics in [true, false] {
            let rt = Escapement(
                escapement::Builder::new()
                    .worker_threads(workers)
                    .metrics(metrics)
                    .build()
                    .expect("escapement runtime"),
            );
            let name = if metrics { "metrics_on" } else { "metrics_off" };
            let parameter = format!("{workers}w");
            bench_on(
                &mut group,
                name,
                &parameter,
                &rt,
                register_cancel_loop::<Escapement>,
            );
        }
    }
    group.finish();
}

/// (i) a `spawn_blocking` round trip, on 2 workers. Wall time only: the loop awaits other
/// threads, so it may move between workers and its thread's CPU time means nothing.
fn spawn_blocking(c: &mut Criterion) {
    wall_group(
        c,
        "spawn_blocking",
        spawn_blocking_loop::<Escapement>,
        spawn_blocking_loop::<Tokio>,
    );
}

/// A group of two benchmarks by wall time on 2 workers, one per runtime: `escapement` and
/// `tokio`, each the same loop written once over [`Rt`].
fn wall_group<E, T>(c: &mut Criterion, name: &str, escapement: fn(u64) -> E, tokio: fn(u64) -> T)
where
    E: Future<Output = ()> + Send + 'static,
    T: Future<Output = ()> + Send + 'static,
{
    let mut group = c.benchmark_group(name);
    bench_wall(&mut group, &Escapement::new(2), escapement);
    bench_wall(&mut group, &Tokio::new(2), tokio);
    group.finish();
}

/// Benchmarks `body(iters)` run in a spawned task of `rt`, as `R::NAME/2w`, by wall time.
fn bench_wall<R: Rt, F: Future<Output = ()> + Send + 'static>(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    rt: &R,
    body: fn(u64) -> F,
) {
    group.bench_function(BenchmarkId::new(R::NAME, "2w"), |b| {
        b.iter_custom(|iters| {
            rt.block_on(rt.spawn(R::unconstrained(async move {
                let start = Instant::now();
                body(iters).await;
                start.elapsed()
            })))
        })
    });
}

/// `iters` trivial closures through `spawn_blocking`, each awaited before the next.
async fn spawn_blocking_loop<R: Rt>(iters: u64) {
    for i in 0..iters {
        black_box(R::spawn_blocking(move || black_box(i)).await);
    }
}

/// (j) a `block_in_place` hand-off, on 2 workers, by wall time as (i).
fn block_in_place(c: &mut Criterion) {
    wall_group(
        c,
        "block_in_place",
        block_in_place_loop::<Escapement>,
        block_in_place_loop::<Tokio>,
    );
}

/// `iters` trivial closures through `block_in_place`, each followed by a yield.
async fn block_in_place_loop<R: Rt>(iters: u64) {
    for i in 0..iters {
        black_box(R::block_in_place(|| black_box(i)));
        R::yield_now().await;
    }
}

/// (k) a task spawned and joined, on 2 workers, by wall time as (i).
fn spawn_join(c: &mut Criterion) {
    wall_group(
        c,
        "spawn_join",
        spawn_join_loop::<Escapement>,
        spawn_join_loop::<Tokio>,
    );
}

/// `iters` trivial tasks spawned, each awaited before the next.
async fn spawn_join_loop<R: Rt>(iters: u64) {
    for i in 0..iters {
        black_box(R::spawn_here(async move { black_box(i) }).await);
    }
}

/// Stands for any future in the sizes [`print_macro_sizes`] prints: 16 bytes of state, an
/// 8-byte output.
async fn leaf(x: u64) -> u64 {
    black_box(x)
}

/// Prints the sizes of `async` blocks around the same `select!` and `join!` on each runtime:
/// what a task that uses them holds besides its futures.
fn print_macro_sizes() {
    let escapement = async {
        escapement::select! { a = leaf(1) => a, b = leaf(2) => b, c = leaf(3) => c }
    };
    let tokio = async {
        tokio::select! { a = leaf(1) => a, b = leaf(2) => b, c = leaf(3) => c }
    };
    println!(
        "async block around select! of 3 futures of 16 bytes: escapement {}, tokio {} bytes",
        size_of_val(&escapement),
        size_of_val(&tokio)
    );
    let escapement = async { escapement::join!(leaf(1), leaf(2), leaf(3), leaf(4), leaf(5)) };
    let tokio = async { tokio::join!(leaf(1), leaf(2), leaf(3), leaf(4), leaf(5)) };
    println!(
        "async block around join! of 5 futures of 16 bytes: escapement {}, tokio {} bytes",
        size_of_val(&escapement),
        size_of_val(&tokio)
    );
}

/// (n) `select!` and `join!` in a loop, on 1 worker, by CPU time as (a).
fn select_join(c: &mut Criterion) {
    let mut group = c.benchmark_group("select_join");
    let (escapement, tokio) = (Escapement::new(1), Tokio::new(1));
    bench_loop(&mut group, "select_1w", &escapement, select_loop_escapement);
    bench_loop(&mut group, "select_1w", &tokio, select_loop_tokio);
    bench_loop(&mut group, "join_1w", &escapement, join_loop_escapement);
    bench_loop(&mut group, "join_1w", &tokio, join_loop_tokio);
    group.finish();
}

/// `iters` `select!`s of three branches, the middle one ready.
async fn select_loop_escapement(iters: u64) {
    for i in 0..iters {
        black_box(escapement::select! {
            _ = pending::<()>() => 0,
            value = ready(black_box(i)) => value,
            _ = pending::<()>() => 0,
        });
    }
}

/// The loop of [`select_loop_escapement`], with tokio's `select!`.
async fn select_loop_tokio(iters: u64) {
    for i in 0..iters {
        black_box(tokio::select! {
            _ = pending::<()>() => 0,
            value = ready(black_box(i)) => value,
            _ = pending::<()>() => 0,
        });
    }
}

/// `iters` `join!`s of three ready futures.
async fn join_loop_escapement(iters: u64) {
    for i in 0..iters {
        black_box(escapement::join!(
            ready(black_box(i)),
            ready(1u64),
            ready(2u64)
        ));
    }
}

/// The loop of [`join_loop_escapement`], with tokio's `join!`.
async fn join_loop_tokio(iters: u64) {
    for i in 0..iters {
        black_box(tokio::join!(ready(black_box(i)), ready(1u64), ready(2u64)));
    }
}

/// Tasks `spawn_outside` spawns before it awaits them.
const OUTSIDE_BATCH: u64 = 256;

/// (l) trivial tasks spawned from `block_on`'s thread, on 1 and 2 workers.
fn spawn_outside(c: &mut Criterion) {
    let mut group = c.benchmark_group("spawn_outside");
    for workers in [1, 2] {
        bench_outside(&mut group, workers, &Escapement::new(workers));
        bench_outside(&mut group, workers, &Tokio::new(workers));
    }
    group.finish();
}

/// Benchmarks `iters` tasks spawned by `block_on`'s thread in batches of [`OUTSIDE_BATCH`],
/// each batch awaited before the next, as `R::NAME/{workers}w`.
fn bench_outside<R: Rt>(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    workers: usize,
    rt: &R,
) {
    let id = BenchmarkId::new(R::NAME, format!("{workers}w"));
    group.bench_function(id, |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            rt.block_on(async {
                let mut batch = Vec::with_capacity(OUTSIDE_BATCH as usize);
                let mut left = iters;
                while left > 0 {
                    let now = left.min(OUTSIDE_BATCH);
                    left -= now;
                    batch.extend((0..now).map(|i| rt.spawn(async move { black_box(i) })));
                    for task in batch.drain(..) {
                        black_box(task.await);
                    }
                }
            });
            start.elapsed()
        })
    });
}

/// (o) a task that yields in a loop, alone on its runtime, on 1 and 2 workers: each yield
/// holds the task back, and the worker, with nothing else to run, queues it again (tokio's,
/// with its deferred wake, looks for I/O and timers first).
fn yield_now(c: &mut Criterion) {
    let mut group = c.benchmark_group("yield_now");
    for workers in [1, 2] {
        let id = format!("{workers}w");
        bench_loop(
            &mut group,
            &id,
            &Escapement::new(workers),
            yield_loop::<Escapement>,
        );
        bench_loop(&mut group, &id, &Tokio::new(workers), yield_loop::<Tokio>);
    }
    group.finish();
}

/// `iters` yields.
async fn yield_loop<R: Rt>(iters: u64) {
    for _ in 0..iters {
        R::yield_now().await;
    }
}

/// (m) the current-thread flavor: `spawn_join` and `register_cancel` in `block_on`'s future.
fn current_thread(c: &mut Criterion) {
    let mut group = c.benchmark_group("current_thread");
    let rt = Escapement::current_thread();
    bench_in_block_on(&mut group, "spawn_join", &rt, spawn_join_loop::<Escapement>);
    bench_in_block_on(
        &mut group,
        "register_cancel",
        &rt,
        register_cancel_loop::<Escapement>,
    );
    drop(rt);
    let rt = Tokio::current_thread();
    bench_in_block_on(&mut group, "spawn_join", &rt, spawn_join_loop::<Tokio>);
    bench_in_block_on(
        &mut group,
        "register_cancel",
        &rt,
        register_cancel_loop::<Tokio>,
    );
    group.finish();
}

/// Benchmarks `body(iters)` run in `rt.block_on`'s future, as `R::NAME/id`, by wall time.
fn bench_in_block_on<R: Rt, F: Future<Output = ()> + Send + 'static>(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    id: &str,
    rt: &R,
    body: fn(u64) -> F,
) {
    group.bench_function(BenchmarkId::new(R::NAME, id), |b| {
        b.iter_custom(|iters| {
            rt.block_on(R::unconstrained(async move {
                let start = Instant::now();
                body(iters).await;
                start.elapsed()
            }))
        })
    });
}

/// Spawns `count` tasks, each asleep on a timer 1-2 h away, and returns once every timer is
/// registered.
fn fill<R: Rt>(rt: &R, count: usize) {
    let registered = Arc::new(AtomicUsize::new(0));
    let mut rng = SmallRng::seed_from_u64(0x5EED);
    for _ in 0..count {
        let far = Duration::from_secs(3600) + Duration::from_millis(rng.random_range(0..3_600_000));
        let registered = registered.clone();
        drop(rt.spawn(async move {
            let mut sleep = pin!(R::sleep(far));
            poll_once(sleep.as_mut()).await;
            registered.fetch_add(1, Ordering::Relaxed);
            sleep.await;
        }));
    }
    rt.block_on(async {
        while registered.load(Ordering::Relaxed) < count {
            R::sleep(Duration::from_millis(5)).await;
        }
    });
}

/// Benchmarks `body` as `R::NAME/id`.
fn bench_loop<R: Rt, F: Future<Output = ()> + Send + 'static>(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    id: &str,
    rt: &R,
    body: fn(u64) -> F,
) {
    bench_on(group, R::NAME, id, rt, body);
}

/// Benchmarks `body(iters)` run in a spawned task of `rt`, as `name/parameter`. Criterion
/// gets the loop's wall time; afterwards this prints the loop's CPU time per iteration on its
/// thread (median and range over the measured samples) and the threads the loops ran on.
///
/// The CPU time is there because this machine is shared: another process taking the core
/// inflates wall time (it moved by 2x between runs), not the thread's CPU time. The loop
/// never yields (but in `yield_now`, whose task another worker may take: a loop that ends on
/// another thread than it started on counts no CPU time, one that went and came back only
/// its time on this thread), so it runs on one thread from start to end, and its CPU time includes the system calls it makes (waking worker 0, say)
/// but not time spent blocked on a lock.
fn bench_on<R: Rt, F: Future<Output = ()> + Send + 'static>(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    parameter: &str,
    rt: &R,
    body: fn(u64) -> F,
) {
    let threads = RefCell::new(BTreeMap::<String, u64>::new());
    let cpu_per_iter_ns = RefCell::new(Vec::new());
    group.bench_function(BenchmarkId::new(name, parameter), |b| {
        b.iter_custom(|iters| {
            let (elapsed, cpu, thread) = rt.block_on(rt.spawn(R::unconstrained(async move {
                let name = || std::thread::current().name().unwrap_or("?").to_owned();
                let thread = name();
                let cpu_start = thread_cpu_time();
                let start = Instant::now();
                body(iters).await;
                let elapsed = start.elapsed();
                let cpu = thread_cpu_time();
                // A loop that ended on another thread has no CPU time of one thread.
                match name() {
                    end if end == thread => (elapsed, Some(cpu - cpu_start), thread),
                    end => (elapsed, None, format!("{thread} to {end}")),
                }
            })));
            *threads.borrow_mut().entry(thread).or_default() += 1;
            if let Some(cpu) = cpu {
                cpu_per_iter_ns
                    .borrow_mut()
                    .push(cpu.as_nanos() as f64 / iters as f64);
            }
            elapsed
        })
    });
    // Criterion warms up first, then takes its samples: the last `SAMPLES` calls. A
    // benchmark left out by a filter on the command line made none.
    let cpu = cpu_per_iter_ns.into_inner();
    if cpu.is_empty() {
        if !threads.borrow().is_empty() {
            println!(
                "  {name}/{parameter}: no loop ended on its thread; loops ran on {:?}",
                threads.into_inner()
            );
        }
        return;
    }
    // The last samples that stayed on their thread (all of them, but in `yield_now`).
    let measured = &cpu[cpu.len().saturating_sub(SAMPLES)..];
    println!(
        "  {name}/{parameter}: thread CPU per iteration {:.1} ns (median, min–max of {} samples); \
         loops ran on {:?}",
        Spread::of(measured),
        measured.len(),
        threads.into_inner()
    );
}

/// The calling thread's CPU time (user + system).
fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable `timespec`, and `CLOCK_THREAD_CPUTIME_ID` is a clock
    // every Linux kernel since 2.6.12 supports.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime: {}", std::io::Error::last_os_error());
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Pairs of tasks in `ping_pong`.
const PING_PONG_PAIRS: u64 = 1000;

/// Round trips of each pair in `ping_pong_outside`.
const OUTSIDE_ROUNDS: u64 = 100;

/// (p) message passing between pairs of tasks, on 1 and 2 workers, by wall time per message:
/// the pairs spawned by a task and exchanging as many messages as criterion asks
/// (`ping_pong`), and spawned by `block_on`'s thread, [`OUTSIDE_ROUNDS`] round trips each,
/// then awaited there (`ping_pong_outside`).
fn ping_pong(c: &mut Criterion) {
    let mut group = c.benchmark_group("ping_pong");
    for workers in [1, 2] {
        bench_ping_pong(&mut group, workers, &Escapement::new(workers));
        bench_ping_pong(&mut group, workers, &Tokio::new(workers));
    }
    group.finish();
    let mut group = c.benchmark_group("ping_pong_outside");
    for workers in [1, 2] {
        bench_ping_pong_outside(&mut group, workers, &Escapement::new(workers));
        bench_ping_pong_outside(&mut group, workers, &Tokio::new(workers));
    }
    group.finish();
}

/// Benchmarks [`PING_PONG_PAIRS`] pairs spawned by a task and exchanging about `iters`
/// messages in all, as `R::NAME/{workers}w`; the time is scaled to `iters` messages exactly.
fn bench_ping_pong<R: Rt>(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    workers: usize,
    rt: &R,
) {
    let id = BenchmarkId::new(R::NAME, format!("{workers}w"));
    group.bench_function(id, |b| {
        b.iter_custom(|iters| {
            let rounds = iters.div_ceil(2 * PING_PONG_PAIRS);
            let messages = rounds * 2 * PING_PONG_PAIRS;
            let elapsed = rt.block_on(rt.spawn(async move {
                let start = Instant::now();
                let (mut pingers, mut answerers) = (Vec::new(), Vec::new());
                for _ in 0..PING_PONG_PAIRS {
                    let (pinger, answerer) = ping_pong_pair(rounds);
                    pingers.push(R::spawn_here(pinger));
                    answerers.push(R::spawn_here(answerer));
                }
                for (pinger, answerer) in pingers.into_iter().zip(answerers) {
                    pinger.await;
                    answerer.await;
                }
                start.elapsed()
            }));
            elapsed.mul_f64(iters as f64 / messages as f64)
        })
    });
}

/// Benchmarks runs of [`PING_PONG_PAIRS`] pairs spawned by `block_on`'s thread, each doing
/// [`OUTSIDE_ROUNDS`] round trips, awaited there, as `R::NAME/{workers}w`: enough runs for
/// `iters` messages, the time scaled to `iters` messages exactly.
fn bench_ping_pong_outside<R: Rt>(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    workers: usize,
    rt: &R,
) {
    let id = BenchmarkId::new(R::NAME, format!("{workers}w"));
    group.bench_function(id, |b| {
        b.iter_custom(|iters| {
            let per_run = 2 * PING_PONG_PAIRS * OUTSIDE_ROUNDS;
            let runs = iters.div_ceil(per_run);
            let start = Instant::now();
            for _ in 0..runs {
                rt.block_on(async {
                    let (mut pingers, mut answerers) = (Vec::new(), Vec::new());
                    for _ in 0..PING_PONG_PAIRS {
                        let (pinger, answerer) = ping_pong_pair(OUTSIDE_ROUNDS);
                        pingers.push(rt.spawn(pinger));
                        answerers.push(rt.spawn(answerer));
                    }
                    for (pinger, answerer) in pingers.into_iter().zip(answerers) {
                        pinger.await;
                        answerer.await;
                    }
                });
            }
            start
                .elapsed()
                .mul_f64(iters as f64 / (runs * per_run) as f64)
        })
    });
}

/// One pair: a pinger that sends `rounds` messages and waits for each answer, and the
/// answerer, which sends each message back.
fn ping_pong_pair(
    rounds: u64,
) -> (
    impl Future<Output = ()> + Send + 'static,
    impl Future<Output = ()> + Send + 'static,
) {
    use futures::{SinkExt, StreamExt};

    let (mut ping, mut pings) = futures::channel::mpsc::channel::<u64>(1);
    let (mut pong, mut pongs) = futures::channel::mpsc::channel::<u64>(1);
    let pinger = async move {
        for round in 0..rounds {
            ping.send(round).await.expect("the answerer waits");
            let answer = pongs.next().await.expect("an answer");
            debug_assert_eq!(answer, round);
        }
    };
    let answerer = async move {
        while let Some(message) = pings.next().await {
            pong.send(message).await.expect("the pinger waits");
        }
    };
    (pinger, answerer)
}
