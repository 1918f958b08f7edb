//! Criterion benchmarks of [`escapement_wheel::Wheel`] against three peers, each benchmark
//! one criterion group holding all four so they share a run and a machine state:
//!
//! - `BTreeMap<(deadline, seq), T>`: remove by key; fire with `first_entry` while the first
//!   deadline is due.
//! - `BinaryHeap<Reverse<(deadline, seq, T)>>` with lazy deletion: remove records the seq in a
//!   set of cancelled seqs; fire pops and skips cancelled entries; the heap is rebuilt without
//!   them once they outnumber the live entries, so memory stays bounded.
//! - `tokio_util::time::DelayQueue`, driven deterministically by a current-thread tokio
//!   runtime with a paused clock (`start_paused(true)`), polled with a no-op waker.
//!
//! A tick is one millisecond (DelayQueue's resolution). The groups:
//!
//! - `insert_remove/{peer}/{10k,1M}`: steady state at 10k or 1M live timers; one criterion
//!   iteration is [`PAIRS_PER_ITER`] pairs of (insert a timer due 0..30 s ahead, remove a
//!   random live timer). The `harness` row is the same loop without any timer structure.
//! - `insert_fire/{peer}/{10k,1M}`: one iteration inserts N timers due 0..30 s ahead into an
//!   empty structure and fires them all by advancing in 1-tick steps.
//! - `idle_sparse/{peer}/100`: one iteration fires 100 timers spread over 2^35 ticks by
//!   polling in steps of 2^30 ticks (about 12 days).
//! - `idle_empty/{peer}/2^40`: one iteration is [`JUMPS_PER_ITER`] polls of an empty
//!   structure, each 2^40 ticks (about 35 years) after the last.
//!
//! Every batch size is a power of ten, so the time per operation is criterion's time per
//! iteration with the decimal point moved.
//!
//! Run it with
//!
//! ```text
//! cargo bench -p escapement-benches --bench wheel
//! ```
//!
//! and add `-- --output-format bencher` to print each benchmark's median (and standard
//! deviation) per iteration on one line, or `-- insert_remove` to run one group. The whole run
//! takes about five minutes. Random deadlines and victims come from seeded RNGs, so every run
//! sees the same workload. Results and how they were taken: `docs/benchmarks.md`.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::hint::black_box;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use criterion::{
    criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, SamplingMode, Throughput,
};
use escapement_wheel::{TimerKey, Wheel};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use tokio::runtime::Runtime;
use tokio_util::time::{delay_queue, DelayQueue};

/// Deadlines of the steady-state and firing benchmarks lie this many ticks (30 s) ahead.
const SPAN: u64 = 30_000;

/// Insert+remove pairs in one criterion iteration of `insert_remove`.
const PAIRS_PER_ITER: u64 = 1_000;

/// Timers in one iteration of `idle_sparse`.
const SPARSE_TIMERS: usize = 100;

/// `idle_sparse` deadlines lie in `1..SPARSE_SPAN`. DelayQueue rejects deadlines more than
/// 2^36 - 1 ms after its start, so the span is 2^35 rather than the 2^40 of `idle_empty`.
const SPARSE_SPAN: u64 = 1 << 35;

/// `idle_sparse` polls at every multiple of this many ticks up to [`SPARSE_SPAN`].
const SPARSE_STEP: u64 = 1 << 30;

/// Ticks between two polls in `idle_empty`.
const IDLE_JUMP: u64 = 1 << 40;

/// Polls in one criterion iteration of `idle_empty`.
const JUMPS_PER_ITER: u64 = 1_000;

/// The benchmark sizes: a label for the report and the timer count.
const SIZES: [(&str, usize); 2] = [("10k", 10_000), ("1M", 1_000_000)];

/// One seed per use, so changing one workload leaves the others as they were.
const SEED_PREFILL: u64 = 0x5EED_0001;
const SEED_PAIRS: u64 = 0x5EED_0002;
const SEED_FIRE: u64 = 0x5EED_0003;
const SEED_SPARSE: u64 = 0x5EED_0004;

/// What the benchmarks need of a timer structure that is driven by plain `u64` ticks: the
/// wheel and its two std peers. DelayQueue reads tokio's clock instead and has its own code.
///
/// The implementations are `#[inline(always)]` so that no peer pays a call the others do not:
/// with plain `#[inline]` the compiler kept the wheel's shims out of line and inlined the std
/// peers', which cost the wheel a call with five register saves per operation.
trait Timers {
    /// Names one pending timer.
    type Key: Copy;

    /// An empty structure with room for `capacity` timers where the type allows it.
    fn with_capacity(capacity: usize) -> Self;

    /// Adds a timer due at tick `deadline`.
    fn insert(&mut self, deadline: u64, value: u64) -> Self::Key;

    /// Cancels a pending timer.
    fn remove(&mut self, key: Self::Key);

    /// Fires every timer due at or before `now`, returning how many fired.
    fn fire_due(&mut self, now: u64) -> usize;
}

impl Timers for Wheel<u64> {
    type Key = TimerKey;

    fn with_capacity(capacity: usize) -> Self {
        Wheel::with_capacity(capacity)
    }

    #[inline(always)]
    fn insert(&mut self, deadline: u64, value: u64) -> TimerKey {
        Wheel::insert(self, deadline, value)
    }

    #[inline(always)]
    fn remove(&mut self, key: TimerKey) {
        black_box(Wheel::remove(self, key));
    }

    #[inline(always)]
    fn fire_due(&mut self, now: u64) -> usize {
        let mut fired = 0;
        while let Some((_, _, value)) = self.poll(now) {
            black_box(value);
            fired += 1;
        }
        fired
    }
}

/// The ordered-map peer: timers keyed by `(deadline, seq)`, so ties fire in insertion order.
struct BTreeTimers {
    map: BTreeMap<(u64, u64), u64>,
    next_seq: u64,
}

impl Timers for BTreeTimers {
    type Key = (u64, u64);

    fn with_capacity(_capacity: usize) -> Self {
        BTreeTimers {
            map: BTreeMap::new(),
            next_seq: 0,
        }
    }

    #[inline(always)]
    fn insert(&mut self, deadline: u64, value: u64) -> (u64, u64) {
        let key = (deadline, self.next_seq);
        self.next_seq += 1;
        self.map.insert(key, value);
        key
    }

    #[inline(always)]
    fn remove(&mut self, key: (u64, u64)) {
        black_box(self.map.remove(&key));
    }

    #[inline(always)]
    fn fire_due(&mut self, now: u64) -> usize {
        let mut fired = 0;
        while let Some(entry) = self.map.first_entry() {
            if entry.key().0 > now {
                break;
            }
            black_box(entry.remove());
            fired += 1;
        }
        fired
    }
}

/// Hashes the heap's `u64` seqs with one multiplication: std's SipHash would make the lazy
/// heap look slower than a careful user would write it.
#[derive(Default)]
struct SeqHasher(u64);

impl Hasher for SeqHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(byte)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u64(&mut self, seq: u64) {
        self.0 = seq.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// The binary-heap peer with lazy deletion: a cancelled timer stays in the heap, and its seq
/// in `cancelled`, until it is popped or the heap is rebuilt.
struct LazyHeapTimers {
    heap: BinaryHeap<Reverse<(u64, u64, u64)>>,
    cancelled: HashSet<u64, BuildHasherDefault<SeqHasher>>,
    next_seq: u64,
}

impl Timers for LazyHeapTimers {
    type Key = u64;

    fn with_capacity(capacity: usize) -> Self {
        LazyHeapTimers {
            heap: BinaryHeap::with_capacity(capacity),
            cancelled: HashSet::default(),
            next_seq: 0,
        }
    }

    #[inline(always)]
    fn insert(&mut self, deadline: u64, value: u64) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Reverse((deadline, seq, value)));
        seq
    }

    #[inline(always)]
    fn remove(&mut self, seq: u64) {
        self.cancelled.insert(seq);
        // Rebuild once cancelled entries are more than half the heap: O(n) every n/2 removals
        // keeps removal amortized O(1) and the heap at most twice the live count.
        if self.cancelled.len() > self.heap.len() / 2 {
            let cancelled = &self.cancelled;
            self.heap
                .retain(|Reverse((_, seq, _))| !cancelled.contains(seq));
            self.cancelled.clear();
        }
    }

    #[inline(always)]
    fn fire_due(&mut self, now: u64) -> usize {
        let mut fired = 0;
        while let Some(&Reverse((deadline, seq, value))) = self.heap.peek() {
            if deadline > now {
                break;
            }
            self.heap.pop();
            if !self.cancelled.remove(&seq) {
                black_box(value);
                fired += 1;
            }
        }
        fired
    }
}

/// A current-thread runtime whose clock stands still until `tokio::time::advance`.
fn paused_runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime")
}

/// Fires every DelayQueue entry that is due at the paused clock's current time.
fn drain_delay_queue(queue: &mut DelayQueue<u64>, cx: &mut Context<'_>) -> usize {
    let mut fired = 0;
    while let Poll::Ready(Some(expired)) = queue.poll_expired(cx) {
        black_box(expired.into_inner());
        fired += 1;
    }
    fired
}

/// `count` deadlines uniform over `range`, the same on every run.
fn random_deadlines(seed: u64, count: usize, range: std::ops::Range<u64>) -> Vec<u64> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..count)
        .map(|_| rng.random_range(range.clone()))
        .collect()
}

/// The steady state of `insert_remove`: a structure with `live` timers, their keys, and the
/// RNG that picks the next deadline and victim. It persists across criterion's samples, so
/// the 1M-timer prefill happens once per benchmark.
struct SteadyState<P: Timers> {
    timers: P,
    live: Vec<P::Key>,
    rng: SmallRng,
}

impl<P: Timers> SteadyState<P> {
    fn new(live_count: usize) -> Self {
        let mut timers = P::with_capacity(live_count + 1);
        let mut live = Vec::with_capacity(live_count + 1);
        for (value, deadline) in random_deadlines(SEED_PREFILL, live_count, 0..SPAN)
            .into_iter()
            .enumerate()
        {
            live.push(timers.insert(deadline, value as u64));
        }
        SteadyState {
            timers,
            live,
            rng: SmallRng::seed_from_u64(SEED_PAIRS),
        }
    }

    /// Times `batches * PAIRS_PER_ITER` pairs. Each inserts a timer, then removes a live timer
    /// chosen uniformly (the new one included), so the live count stays put. Two RNG draws and
    /// the `live` bookkeeping are in the time: the `harness` row measures them alone.
    fn run(&mut self, batches: u64) -> Duration {
        let start = Instant::now();
        for value in 0..batches * PAIRS_PER_ITER {
            let deadline = self.rng.random_range(0..SPAN);
            self.live.push(self.timers.insert(deadline, value));
            let victim = self
                .live
                .swap_remove(self.rng.random_range(0..self.live.len()));
            self.timers.remove(victim);
        }
        start.elapsed()
    }
}

/// `SteadyState` for DelayQueue: the same loop, run inside the runtime's context so that
/// DelayQueue reads the paused clock. Time never moves, as for the other peers.
struct DelayQueueSteadyState {
    queue: DelayQueue<u64>,
    start: tokio::time::Instant,
    live: Vec<delay_queue::Key>,
    rng: SmallRng,
    /// Declared last so it is dropped after the queue, whose timer it owns.
    runtime: Runtime,
}

impl DelayQueueSteadyState {
    fn new(live_count: usize) -> Self {
        let runtime = paused_runtime();
        let context = runtime.enter();
        let mut queue = DelayQueue::with_capacity(live_count + 1);
        // The clock is paused, so this is the queue's own start to the nanosecond and
        // `start + deadline ms` lands on tick `deadline` exactly.
        let start = tokio::time::Instant::now();
        let mut live = Vec::with_capacity(live_count + 1);
        for (value, deadline) in random_deadlines(SEED_PREFILL, live_count, 0..SPAN)
            .into_iter()
            .enumerate()
        {
            live.push(queue.insert_at(value as u64, start + Duration::from_millis(deadline)));
        }
        drop(context);
        DelayQueueSteadyState {
            queue,
            start,
            live,
            rng: SmallRng::seed_from_u64(SEED_PAIRS),
            runtime,
        }
    }

    fn run(&mut self, batches: u64) -> Duration {
        let _context = self.runtime.enter();
        let start = Instant::now();
        for value in 0..batches * PAIRS_PER_ITER {
            let deadline = self.rng.random_range(0..SPAN);
            let when = self.start + Duration::from_millis(deadline);
            self.live.push(self.queue.insert_at(value, when));
            let victim = self
                .live
                .swap_remove(self.rng.random_range(0..self.live.len()));
            black_box(self.queue.remove(&victim));
        }
        start.elapsed()
    }
}

/// The `harness` row: the pair loop's RNG draws and `live` bookkeeping with no timers, so a
/// reader can see how much of each peer's time is the benchmark's own.
struct HarnessOnly {
    live: Vec<u64>,
    rng: SmallRng,
}

impl HarnessOnly {
    fn new(live_count: usize) -> Self {
        HarnessOnly {
            live: random_deadlines(SEED_PREFILL, live_count, 0..SPAN),
            rng: SmallRng::seed_from_u64(SEED_PAIRS),
        }
    }

    fn run(&mut self, batches: u64) -> Duration {
        let start = Instant::now();
        for _ in 0..batches * PAIRS_PER_ITER {
            let deadline = self.rng.random_range(0..SPAN);
            self.live.push(black_box(deadline));
            let victim = self
                .live
                .swap_remove(self.rng.random_range(0..self.live.len()));
            black_box(victim);
        }
        start.elapsed()
    }
}

/// Benchmark 1, `insert_remove`: the cost of one insert plus one cancel at a steady 10k or 1M
/// live timers, none ever firing (time stands at tick 0). Criterion's time per iteration is
/// for 1,000 pairs. The structures are built once per benchmark, lazily so that a filtered
/// run does not build them, and carried from sample to sample; the prefill is not timed.
fn insert_remove(c: &mut Criterion) {
    let mut group = c.benchmark_group("insert_remove");
    group
        .sample_size(30)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .throughput(Throughput::Elements(PAIRS_PER_ITER));
    for (label, live) in SIZES {
        let mut harness = None;
        group.bench_function(BenchmarkId::new("harness", label), |b| {
            let state = harness.get_or_insert_with(|| HarnessOnly::new(live));
            b.iter_custom(|batches| state.run(batches));
        });
        bench_steady_state::<Wheel<u64>>(&mut group, "Wheel", label, live);
        bench_steady_state::<BTreeTimers>(&mut group, "BTreeMap", label, live);
        bench_steady_state::<LazyHeapTimers>(&mut group, "BinaryHeap", label, live);
        let mut delay_queue = None;
        group.bench_function(BenchmarkId::new("DelayQueue", label), |b| {
            let state = delay_queue.get_or_insert_with(|| DelayQueueSteadyState::new(live));
            b.iter_custom(|batches| state.run(batches));
        });
    }
    group.finish();
}

fn bench_steady_state<P: Timers>(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    peer: &str,
    label: &str,
    live: usize,
) {
    let mut state = None;
    group.bench_function(BenchmarkId::new(peer, label), |b| {
        let state = state.get_or_insert_with(|| SteadyState::<P>::new(live));
        b.iter_custom(|batches| state.run(batches));
    });
}

/// Inserts every deadline into an empty `P`, then fires them all by polling at each tick from
/// 0 to `SPAN`; returns how many fired.
fn insert_then_fire<P: Timers>(deadlines: &[u64]) -> usize {
    let mut timers = P::with_capacity(deadlines.len());
    for (value, &deadline) in deadlines.iter().enumerate() {
        timers.insert(deadline, value as u64);
    }
    let mut fired = 0;
    for now in 0..=SPAN {
        fired += timers.fire_due(now);
    }
    fired
}

/// `insert_then_fire` for DelayQueue: each step advances the paused clock 1 ms, which makes
/// tokio's driver fire the queue's sleep, then drains the queue.
fn delay_queue_insert_then_fire(runtime: &Runtime, deadlines: &[u64]) -> usize {
    runtime.block_on(tokio::task::unconstrained(async {
        let mut queue = DelayQueue::with_capacity(deadlines.len());
        let start = tokio::time::Instant::now();
        for (value, &deadline) in deadlines.iter().enumerate() {
            queue.insert_at(value as u64, start + Duration::from_millis(deadline));
        }
        let mut cx = Context::from_waker(Waker::noop());
        let mut fired = drain_delay_queue(&mut queue, &mut cx);
        for _ in 1..=SPAN {
            tokio::time::advance(Duration::from_millis(1)).await;
            fired += drain_delay_queue(&mut queue, &mut cx);
        }
        fired
    }))
}

/// Benchmark 2, `insert_fire`: build a structure of N timers due uniformly over the next 30 s,
/// then fire them all in 30,001 one-tick steps. One iteration is the whole insert+fire from
/// empty (allocation included), so time per timer is the time per iteration over N.
/// DelayQueue's steps go through tokio's clock and driver (`advance` yields to the runtime),
/// which is the only way to fire it; `idle_empty/DelayQueue` shows what one step costs.
/// Flat sampling: a 1M iteration takes long enough that criterion's linear ramp would not fit.
fn insert_fire(c: &mut Criterion) {
    let mut group = c.benchmark_group("insert_fire");
    group
        .sample_size(20)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(1));
    let runtime = paused_runtime();
    for (label, count) in SIZES {
        let deadlines = random_deadlines(SEED_FIRE, count, 0..SPAN);
        // 20 iterations of 1M timers take 7 to 10 s here; 10k ones fit in far less.
        let seconds = if count >= 1_000_000 { 10 } else { 5 };
        group
            .measurement_time(Duration::from_secs(seconds))
            .throughput(Throughput::Elements(count as u64));
        group.bench_function(BenchmarkId::new("Wheel", label), |b| {
            b.iter(|| assert_eq!(insert_then_fire::<Wheel<u64>>(&deadlines), count));
        });
        group.bench_function(BenchmarkId::new("BTreeMap", label), |b| {
            b.iter(|| assert_eq!(insert_then_fire::<BTreeTimers>(&deadlines), count));
        });
        group.bench_function(BenchmarkId::new("BinaryHeap", label), |b| {
            b.iter(|| assert_eq!(insert_then_fire::<LazyHeapTimers>(&deadlines), count));
        });
        group.bench_function(BenchmarkId::new("DelayQueue", label), |b| {
            b.iter(|| assert_eq!(delay_queue_insert_then_fire(&runtime, &deadlines), count));
        });
    }
    group.finish();
}

/// Benchmark 3a, `idle_sparse`: 100 timers due uniformly over 2^35 ticks (1.1 years of ms),
/// fired by polling at every multiple of 2^30 ticks (32 polls). Only the firing is timed;
/// the structure is built untimed right before each iteration. For DelayQueue each poll is a
/// 2^30 ms `advance` of the paused clock and a drain, so its time includes 32 runtime steps.
fn idle_sparse(c: &mut Criterion) {
    let mut group = c.benchmark_group("idle_sparse");
    group
        .sample_size(30)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .throughput(Throughput::Elements(SPARSE_TIMERS as u64));
    let deadlines = random_deadlines(SEED_SPARSE, SPARSE_TIMERS, 1..SPARSE_SPAN);
    let id = |peer| BenchmarkId::new(peer, SPARSE_TIMERS);
    bench_sparse::<Wheel<u64>>(&mut group, id("Wheel"), &deadlines);
    bench_sparse::<BTreeTimers>(&mut group, id("BTreeMap"), &deadlines);
    bench_sparse::<LazyHeapTimers>(&mut group, id("BinaryHeap"), &deadlines);
    let runtime = paused_runtime();
    group.bench_function(id("DelayQueue"), |b| {
        // Per iteration, not batched: a queue built ahead of time would find its timers
        // already overdue once earlier iterations had advanced the shared clock.
        b.iter_batched(
            || {
                let _context = runtime.enter();
                let mut queue = DelayQueue::with_capacity(SPARSE_TIMERS);
                let start = tokio::time::Instant::now();
                for (value, &deadline) in deadlines.iter().enumerate() {
                    queue.insert_at(value as u64, start + Duration::from_millis(deadline));
                }
                queue
            },
            |mut queue| {
                let fired = runtime.block_on(tokio::task::unconstrained(async {
                    let mut cx = Context::from_waker(Waker::noop());
                    let mut fired = 0;
                    for _ in 0..SPARSE_SPAN / SPARSE_STEP {
                        tokio::time::advance(Duration::from_millis(SPARSE_STEP)).await;
                        fired += drain_delay_queue(&mut queue, &mut cx);
                    }
                    fired
                }));
                assert_eq!(fired, SPARSE_TIMERS);
                queue
            },
            BatchSize::PerIteration,
        );
    });
    group.finish();
}

fn bench_sparse<P: Timers>(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    id: BenchmarkId,
    deadlines: &[u64],
) {
    group.bench_function(id, |b| {
        b.iter_batched(
            || {
                let mut timers = P::with_capacity(deadlines.len());
                for (value, &deadline) in deadlines.iter().enumerate() {
                    timers.insert(deadline, value as u64);
                }
                timers
            },
            |mut timers| {
                let mut fired = 0;
                for step in 1..=SPARSE_SPAN / SPARSE_STEP {
                    fired += timers.fire_due(step * SPARSE_STEP);
                }
                assert_eq!(fired, SPARSE_TIMERS);
                timers
            },
            BatchSize::PerIteration,
        );
    });
}

/// Benchmark 3b, `idle_empty`: polls of an empty structure, each 2^40 ticks after the last;
/// one iteration is 1,000 polls. For the wheel this is the claim that a jump over an empty
/// wheel is one comparison; the std peers check that they are empty. An empty DelayQueue
/// never looks at the clock, so its row is a 2^40 ms `advance` of tokio's paused clock plus
/// a `poll_expired`: the price of one step of the DelayQueue rows above, not of the queue.
fn idle_empty(c: &mut Criterion) {
    let mut group = c.benchmark_group("idle_empty");
    group
        .sample_size(30)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .throughput(Throughput::Elements(JUMPS_PER_ITER));
    let id = |peer| BenchmarkId::new(peer, "2^40");
    bench_empty::<Wheel<u64>>(&mut group, id("Wheel"));
    bench_empty::<BTreeTimers>(&mut group, id("BTreeMap"));
    bench_empty::<LazyHeapTimers>(&mut group, id("BinaryHeap"));
    group.bench_function(id("DelayQueue"), |b| {
        b.iter_custom(|batches| {
            // A fresh runtime per call keeps the paused clock far from tokio's limits.
            let runtime = paused_runtime();
            runtime.block_on(tokio::task::unconstrained(async {
                let mut queue = DelayQueue::new();
                let mut cx = Context::from_waker(Waker::noop());
                let start = Instant::now();
                for _ in 0..batches * JUMPS_PER_ITER {
                    tokio::time::advance(Duration::from_millis(IDLE_JUMP)).await;
                    black_box(drain_delay_queue(&mut queue, &mut cx));
                }
                start.elapsed()
            }))
        });
    });
    group.finish();
}

fn bench_empty<P: Timers>(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    id: BenchmarkId,
) {
    group.bench_function(id, |b| {
        b.iter_custom(|batches| {
            let mut timers = P::with_capacity(0);
            let mut now = 0u64;
            let start = Instant::now();
            for _ in 0..batches {
                // Start over before the tick would wrap: every 16 million polls, so the new
                // structure costs nothing measurable.
                if now > u64::MAX - JUMPS_PER_ITER * IDLE_JUMP {
                    timers = P::with_capacity(0);
                    now = 0;
                }
                for _ in 0..JUMPS_PER_ITER {
                    now += IDLE_JUMP;
                    black_box(timers.fire_due(black_box(now)));
                }
            }
            start.elapsed()
        });
    });
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(30)
}

criterion_group! {
    name = benches;
    config = config();
    targets = insert_remove, insert_fire, idle_sparse, idle_empty
}
criterion_main!(benches);
