//! Timer metrics: how many timers are live, registered, fired, cancelled and reset, how often
//! the wheel cascaded and worker 0 woke, and how late timers fired; and, per worker, tokio's
//! stable three: how often it parked, and how long it was busy between parks.
//!
//! Counters live in one block per worker thread, each on its own cache line, and are summed
//! when read, so counting a timer operation on a worker writes no line another thread writes:
//! the worker's block has a single writer, which bumps a counter with a plain load and store.
//! Threads that are not workers (`block_on`, foreign threads) share one more block, with
//! atomic adds. Live timers and cascades need no counters: the wheel's shards know them, and a
//! read takes each shard's lock in turn (so a timer moving between shards meanwhile can
//! be counted twice or not at all).

use std::cell::RefCell;
use std::fmt;
use std::time::Duration;

use crossbeam_utils::CachePadded;

use crate::loom::{thread_local_const, Arc, AtomicU64, Ordering};
use crate::runtime::Handle;

/// Lateness buckets: `< 1 µs`, then `[2^(k-1), 2^k) µs` for `k` in `1..=22`, then `≥ 2^22 µs`
/// (about 4.2 s).
pub(crate) const LATENESS_BUCKETS: usize = 24;

/// One thread's counters.
#[derive(Default)]
pub(crate) struct Block {
    pub(crate) registered: AtomicU64,
    pub(crate) fired: AtomicU64,
    pub(crate) cancelled: AtomicU64,
    pub(crate) resets: AtomicU64,
    pub(crate) wakeups: AtomicU64,
    pub(crate) lateness: [AtomicU64; LATENESS_BUCKETS],
    /// A worker's parks (zero in the block of the other threads).
    parks: AtomicU64,
    /// A worker's parks and unparks: odd while it is parked.
    park_unparks: AtomicU64,
    /// A worker's time outside its parks, in nanoseconds, counted up to its last park.
    busy_ns: AtomicU64,
}

type Shared = Arc<CachePadded<Block>>;

thread_local_const! {
    /// The block of the worker running on this thread, and the address of the `Metrics` it
    /// belongs to.
    static CURRENT: RefCell<Option<(usize, Shared)>> = RefCell::new(None);
}

/// A runtime's counters.
pub(crate) struct Metrics {
    enabled: bool,
    /// One block per worker.
    workers: Box<[Shared]>,
    /// The block of every other thread.
    others: CachePadded<Block>,
}

impl Metrics {
    pub(crate) fn new(workers: usize, enabled: bool) -> Metrics {
        Metrics {
            enabled,
            workers: (0..workers)
                .map(|_| Arc::new(CachePadded::new(Block::default())))
                .collect(),
            others: CachePadded::new(Block::default()),
        }
    }

    /// Makes worker `index`'s block this thread's.
    pub(crate) fn enter_worker(&self, index: usize) {
        let me = self as *const Metrics as usize;
        CURRENT.with(|current| *current.borrow_mut() = Some((me, self.workers[index].clone())));
    }

    /// The thread is leaving its worker loop.
    pub(crate) fn exit_worker(&self) {
        let _ = CURRENT.try_with(|current| current.borrow_mut().take());
    }

    /// Adds `n` to a counter of this thread's block.
    #[inline]
    pub(crate) fn add(&self, counter: fn(&Block) -> &AtomicU64, n: u64) {
        if !self.enabled || n == 0 {
            return;
        }
        self.on_block(|block, single_writer| bump(counter(block), n, single_writer));
    }

    /// Records how late a timer fired.
    #[inline]
    pub(crate) fn lateness(&self, late: Duration) {
        if !self.enabled {
            return;
        }
        let bucket = bucket_of(late);
        self.on_block(|block, single_writer| bump(&block.lateness[bucket], 1, single_writer));
    }

    /// Whether the runtime counts (see `Builder::metrics`).
    pub(crate) fn enabled(&self) -> bool {
        self.enabled
    }

    /// Worker `index` parks, after `busy` since it last unparked. Only the thread running
    /// that worker calls this and [`worker_unparked`](Self::worker_unparked), so each is
    /// the block's single writer.
    pub(crate) fn worker_parks(&self, index: usize, busy: Duration) {
        if !self.enabled {
            return;
        }
        let block = &self.workers[index];
        bump(&block.parks, 1, true);
        bump(&block.park_unparks, 1, true);
        self.worker_busy(index, busy);
    }

    /// Worker `index` left its park.
    pub(crate) fn worker_unparked(&self, index: usize) {
        if self.enabled {
            bump(&self.workers[index].park_unparks, 1, true);
        }
    }

    /// Worker `index` was busy for `busy` more, counted without a park: its thread is about
    /// to stop being the worker (a `block_in_place` hand-off, a current-thread `block_on`
    /// returning, a worker leaving at shutdown). Called by that thread while it still is.
    pub(crate) fn worker_busy(&self, index: usize, busy: Duration) {
        if self.enabled {
            let nanos = u64::try_from(busy.as_nanos()).unwrap_or(u64::MAX);
            bump(&self.workers[index].busy_ns, nanos, true);
        }
    }

    /// Worker `index`'s block, `None` past the last worker.
    fn worker(&self, index: usize) -> Option<&Block> {
        self.workers.get(index).map(|block| &***block)
    }

    /// Runs `f` on this thread's block: its worker's (a single writer), or the shared one.
    #[inline]
    fn on_block(&self, f: impl FnOnce(&Block, bool)) {
        let me = self as *const Metrics as usize;
        let mut f = Some(f);
        let done = CURRENT
            .try_with(|current| match &*current.borrow() {
                Some((owner, block)) if *owner == me => {
                    (f.take().expect("called once"))(block, true);
                    true
                }
                _ => false,
            })
            .unwrap_or(false);
        if let Some(f) = f.filter(|_| !done) {
            f(&self.others, false);
        }
    }

    /// The sum of every block.
    pub(crate) fn sum(&self) -> Totals {
        let mut totals = Totals::default();
        for block in self
            .workers
            .iter()
            .map(|b| &***b)
            .chain(std::iter::once(&*self.others))
        {
            let read = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
            totals.registered += read(&block.registered);
            totals.fired += read(&block.fired);
            totals.cancelled += read(&block.cancelled);
            totals.resets += read(&block.resets);
            totals.wakeups += read(&block.wakeups);
            for (sum, bucket) in totals.lateness.iter_mut().zip(&block.lateness) {
                *sum += read(bucket);
            }
        }
        totals
    }
}

/// Adds `n`: with a plain load and store when this thread is the block's only writer (no
/// read-modify-write, nothing to contend on), with an atomic add otherwise. Relaxed: the
/// counters order nothing.
#[inline]
fn bump(counter: &AtomicU64, n: u64, single_writer: bool) {
    if single_writer {
        counter.store(
            counter.load(Ordering::Relaxed).wrapping_add(n),
            Ordering::Relaxed,
        );
    } else {
        counter.fetch_add(n, Ordering::Relaxed);
    }
}

/// The bucket of a lateness.
fn bucket_of(late: Duration) -> usize {
    let micros = late.as_micros();
    if micros == 0 {
        0
    } else {
        ((u128::BITS - micros.leading_zeros()) as usize).min(LATENESS_BUCKETS - 1)
    }
}

/// The upper bound of a bucket, `None` for the last (unbounded) one.
fn bucket_upper_bound(bucket: usize) -> Option<Duration> {
    (bucket < LATENESS_BUCKETS - 1).then(|| Duration::from_micros(1 << bucket))
}

/// Counters summed over every block.
#[derive(Default)]
pub(crate) struct Totals {
    pub(crate) registered: u64,
    pub(crate) fired: u64,
    pub(crate) cancelled: u64,
    pub(crate) resets: u64,
    pub(crate) wakeups: u64,
    pub(crate) lateness: [u64; LATENESS_BUCKETS],
}

/// A view of a runtime's metrics; see [`Runtime::metrics`](crate::Runtime::metrics).
///
/// Like tokio's, it is live: each method reads the runtime's state when it is called, so one
/// `RuntimeMetrics` can be kept and read again as the runtime runs. It holds the runtime's
/// [`Handle`] (a clone is as cheap), and can still be read after the runtime shut down.
///
/// Counters count since the runtime started and only grow. A runtime built with
/// [`Builder::metrics(false)`](crate::Builder::metrics) counts nothing: its counters (the
/// workers' too) and histogram read zero, while `live_timers` and `wheel_cascades`, which the
/// wheel keeps anyway, are still reported.
///
/// # Examples
///
/// ```
/// use escapement::time::{sleep, Duration};
///
/// let rt = escapement::Runtime::new().unwrap();
/// let metrics = rt.metrics();
/// assert_eq!(metrics.timers_registered(), 0);
/// rt.block_on(async { sleep(Duration::from_millis(2)).await });
/// assert_eq!(metrics.timers_registered(), 1);
/// assert_eq!(metrics.timers_fired(), 1);
/// assert_eq!(metrics.live_timers(), 0);
/// assert_eq!(metrics.lateness().count(), 1);
/// ```
#[derive(Clone)]
pub struct RuntimeMetrics {
    handle: Handle,
}

impl RuntimeMetrics {
    pub(crate) fn new(handle: Handle) -> RuntimeMetrics {
        RuntimeMetrics { handle }
    }

    /// The timer counters, summed over every thread's block now.
    fn totals(&self) -> Totals {
        self.handle.driver().metrics().sum()
    }

    /// Worker threads.
    pub fn workers(&self) -> usize {
        self.handle.shared.remotes.len()
    }

    /// Worker threads: [`workers`](Self::workers), under tokio's name.
    pub fn num_workers(&self) -> usize {
        self.workers()
    }

    /// Times worker `worker` (from 0 to [`num_workers`](Self::num_workers) - 1) parked its
    /// thread for want of work, as tokio's. A current-thread runtime's worker parks on the
    /// thread in `block_on`.
    ///
    /// # Examples
    ///
    /// ```
    /// use escapement::time::{sleep, Duration};
    ///
    /// let rt = escapement::Builder::new_current_thread().build().unwrap();
    /// rt.block_on(async { sleep(Duration::from_millis(2)).await });
    /// assert!(rt.metrics().worker_park_count(0) >= 1);
    /// ```
    ///
    /// # Panics
    ///
    /// If `worker` is not below `num_workers()`.
    #[track_caller]
    pub fn worker_park_count(&self, worker: usize) -> u64 {
        self.worker_block(worker).parks.load(Ordering::Relaxed)
    }

    /// Times worker `worker` parked and unparked, as tokio's: odd while it is parked, even
    /// while it runs (or while no thread holds a current-thread runtime's worker).
    ///
    /// # Panics
    ///
    /// If `worker` is not below `num_workers()`.
    #[track_caller]
    pub fn worker_park_unpark_count(&self, worker: usize) -> u64 {
        self.worker_block(worker)
            .park_unparks
            .load(Ordering::Relaxed)
    }

    /// The time worker `worker` spent outside its parks (running tasks, firing timers, looking
    /// for work), as tokio's. It is counted when the worker parks (or hands its work to
    /// another thread in `block_in_place`, or leaves at shutdown), so a worker busy now adds
    /// its time then. Timers a worker fires from inside its park (standing in for a worker 0
    /// stuck in a long poll, or moving a paused clock) count as parked time.
    ///
    /// # Panics
    ///
    /// If `worker` is not below `num_workers()`.
    #[track_caller]
    pub fn worker_total_busy_duration(&self, worker: usize) -> Duration {
        Duration::from_nanos(self.worker_block(worker).busy_ns.load(Ordering::Relaxed))
    }

    #[track_caller]
    fn worker_block(&self, worker: usize) -> &Block {
        // The driver's metrics have one block per worker.
        match self.handle.driver().metrics().worker(worker) {
            Some(block) => block,
            None => panic!(
                "worker index {worker} out of range: the runtime has {} workers",
                self.workers()
            ),
        }
    }

    /// Tasks spawned and not yet finished (completed, panicked or cancelled), as tokio counts
    /// them: blocking closures are not among them.
    ///
    /// # Examples
    ///
    /// ```
    /// let rt = escapement::Runtime::new().unwrap();
    /// let _task = rt.spawn(std::future::pending::<()>());
    /// assert_eq!(rt.metrics().num_alive_tasks(), 1);
    /// ```
    pub fn num_alive_tasks(&self) -> usize {
        self.handle.shared.owned.len()
    }

    /// Tasks waiting in the runtime's global queue, where tasks spawned or woken from outside
    /// a worker go before a worker takes them.
    pub fn global_queue_depth(&self) -> usize {
        self.handle.shared.injector.len()
    }

    /// Timers linked into the wheel now: registered, not yet fired or cancelled.
    pub fn live_timers(&self) -> usize {
        self.handle.driver().wheel_counts().0
    }

    /// Timers registered with the wheel: at their first poll, or when re-armed after firing.
    /// A reset of a timer still in the wheel moves it, and counts only as a reset. Every
    /// registered timer ends fired or cancelled, so this is
    /// `timers_fired() + timers_cancelled() + live_timers()` once the runtime is quiet.
    pub fn timers_registered(&self) -> u64 {
        self.totals().registered
    }

    /// Timers fired: by the driver at their tick, or at once by a reset of a registered timer
    /// to a deadline already past.
    pub fn timers_fired(&self) -> u64 {
        self.totals().fired
    }

    /// Timers dropped while still in the wheel, and those still in it when the runtime shut
    /// down, which will never fire.
    pub fn timers_cancelled(&self) -> u64 {
        self.totals().cancelled
    }

    /// Resets of registered timers (`Sleep::reset`, an `Interval`'s next tick).
    pub fn timer_resets(&self) -> u64 {
        self.totals().resets
    }

    /// Slots of the timer wheels emptied as time reached them: a slot of a higher level
    /// emptied into lower levels (a cascade proper), or one of level 0 into the due timers.
    pub fn wheel_cascades(&self) -> u64 {
        self.handle.driver().wheel_counts().1
    }

    /// Times worker 0 woke from parking on the timer driver.
    pub fn driver_wakeups(&self) -> u64 {
        self.totals().wakeups
    }

    /// How late timers fired: the time the driver fired each timer minus its deadline rounded
    /// up to the tick. Timers fired at once by a reset to a past deadline are not in it. The
    /// histogram is a copy, taken when this is called.
    pub fn lateness(&self) -> LatenessHistogram {
        LatenessHistogram {
            buckets: self.totals().lateness,
        }
    }
}

impl fmt::Debug for RuntimeMetrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let totals = self.totals();
        let (live_timers, cascades) = self.handle.driver().wheel_counts();
        f.debug_struct("RuntimeMetrics")
            .field("workers", &self.workers())
            .field("alive_tasks", &self.num_alive_tasks())
            .field("global_queue_depth", &self.global_queue_depth())
            .field("live_timers", &live_timers)
            .field("timers_registered", &totals.registered)
            .field("timers_fired", &totals.fired)
            .field("timers_cancelled", &totals.cancelled)
            .field("timer_resets", &totals.resets)
            .field("wheel_cascades", &cascades)
            .field("driver_wakeups", &totals.wakeups)
            .field(
                "lateness",
                &LatenessHistogram {
                    buckets: totals.lateness,
                },
            )
            .finish()
    }
}

/// How late timers fired, in log-scale buckets: under 1 µs, then one bucket per power of two
/// of microseconds up to about 4.2 s, then everything later.
#[derive(Clone, PartialEq, Eq)]
pub struct LatenessHistogram {
    buckets: [u64; LATENESS_BUCKETS],
}

impl LatenessHistogram {
    /// Timers recorded.
    pub fn count(&self) -> u64 {
        self.buckets.iter().sum()
    }

    /// The buckets, as (upper bound, count): a timer counts in the first bucket whose bound
    /// exceeds its lateness; the last bound is `None` (no bound).
    pub fn buckets(&self) -> impl Iterator<Item = (Option<Duration>, u64)> + '_ {
        self.buckets
            .iter()
            .enumerate()
            .map(|(bucket, &count)| (bucket_upper_bound(bucket), count))
    }

    /// An upper bound on the `q`-quantile of lateness (`q` in `0.0..=1.0`): the bound of the
    /// bucket holding it, or `None` when nothing was recorded or it lies in the last bucket.
    ///
    /// # Panics
    ///
    /// If `q` is not within `0.0..=1.0`.
    #[track_caller]
    pub fn quantile_upper_bound(&self, q: f64) -> Option<Duration> {
        assert!(
            (0.0..=1.0).contains(&q),
            "a quantile is between 0 and 1, got {q}"
        );
        let total = self.count();
        if total == 0 {
            return None;
        }
        let rank = ((q * total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (bucket, &count) in self.buckets.iter().enumerate() {
            seen += count;
            if seen >= rank {
                return bucket_upper_bound(bucket);
            }
        }
        None
    }
}

impl fmt::Debug for LatenessHistogram {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut map = f.debug_map();
        for (bound, count) in self.buckets().filter(|&(_, count)| count > 0) {
            match bound {
                Some(bound) => map.entry(&format_args!("<{bound:?}"), &count),
                None => map.entry(
                    &format_args!(">={:?}", Duration::from_micros(1 << (LATENESS_BUCKETS - 2))),
                    &count,
                ),
            };
        }
        map.finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_powers_of_two_of_microseconds() {
        assert_eq!(bucket_of(Duration::ZERO), 0);
        assert_eq!(bucket_of(Duration::from_nanos(999)), 0);
        assert_eq!(bucket_of(Duration::from_micros(1)), 1);
        assert_eq!(bucket_of(Duration::from_micros(2)), 2);
        assert_eq!(bucket_of(Duration::from_micros(3)), 2);
        assert_eq!(bucket_of(Duration::from_micros(1000)), 10);
        assert_eq!(bucket_of(Duration::from_secs(3600)), LATENESS_BUCKETS - 1);
        // A lateness counts in the first bucket whose bound exceeds it.
        for micros in [0u64, 1, 5, 999, 1024, 1_000_000] {
            let late = Duration::from_micros(micros);
            let bound = bucket_upper_bound(bucket_of(late)).unwrap();
            assert!(late < bound, "{late:?} vs {bound:?}");
        }
    }

    #[test]
    fn quantiles_come_from_the_buckets() {
        let metrics = Metrics::new(1, true);
        for micros in [0u64, 10, 10, 10, 500] {
            metrics.lateness(Duration::from_micros(micros));
        }
        let histogram = LatenessHistogram {
            buckets: metrics.sum().lateness,
        };
        assert_eq!(histogram.count(), 5);
        assert_eq!(
            histogram.quantile_upper_bound(0.5),
            Some(Duration::from_micros(16))
        );
        assert_eq!(
            histogram.quantile_upper_bound(1.0),
            Some(Duration::from_micros(512))
        );
        assert_eq!(
            histogram.quantile_upper_bound(0.0),
            Some(Duration::from_micros(1))
        );
    }

    #[test]
    fn a_disabled_runtime_counts_nothing() {
        let metrics = Metrics::new(1, false);
        metrics.add(|b| &b.registered, 3);
        metrics.lateness(Duration::from_millis(1));
        assert_eq!(metrics.sum().registered, 0);
        assert_eq!(metrics.sum().lateness.iter().sum::<u64>(), 0);
    }
}
