//! The timer driver: the wheel, in shards behind their locks, and the protocol between the
//! threads that register, reset, cancel and fire timers.
//!
//! # Threads
//!
//! Worker 0 owns the driver. Each turn it checks, without a lock, whether the earliest
//! deadline (each shard's `next_due`) has come, and if so fires what is due; while its
//! turns are short beside the time left, it reads the clock for that only every few turns
//! (`driver/fire.rs`, "Worker 0's clock readings"). When it has nothing to run it parks on
//! its next expiry: it records the tick it sleeps toward (`sleeping_until`), then blocks in
//! `mio::Poll` with that timeout. Any thread may register, reset or cancel a timer; a
//! registration earlier than `sleeping_until` wakes worker 0 through its `mio::Waker`, and
//! is the only timer operation that makes a syscall. On a paused clock it blocks with no
//! timeout (auto-advance wakes it), but only once the wheel has caught up with the clock: a
//! tick the clock has passed in `sleeping_until` would let a timer due already register
//! without waking it. Firing, worker 0's and a stand-in's, is in `driver/fire.rs`; worker
//! 0's park, the stand-ins' sleep and the paused clock's jump are in `driver/idle.rs`; the
//! shutdown is in `driver/shutdown.rs`.
//!
//! # Shards
//!
//! The wheel is split into one shard per worker, each a wheel behind its own lock, all fired
//! by worker 0. A timer belongs to the shard of the thread that made it (a worker's own;
//! threads outside the runtime and workers of another runtime use shard 0): it registers
//! there, stays there until it fires or is cancelled, whichever thread then touches it, and
//! counts its reference to the driver there (`DriverRef`). Timers made on different workers
//! thus take different locks and write different cache lines: with one lock and one `Arc`
//! count, two workers doing nothing but register and cancel spend most of their time waiting
//! for each other (`docs/benchmarks.md`, (b) contended). Worker 0 pays for it with one lock
//! per shard that has something due, and one per shard when it parks.
//!
//! `sleeping_until` is stored as a tick only while every shard's lock is held (worker 0
//! takes them all, in order, to compute its next expiry), and read by a registration under
//! its shard's lock: either worker 0 saw the new timer, or the registration sees the tick
//! worker 0 sleeps toward and wakes it if that is later. Storing `AWAKE` needs no lock: at
//! worst a registration that read the old tick wakes worker 0 once for nothing.
//!
//! # A timer entry
//!
//! An entry lives inside its future (`Sleep`), pinned, so timers cost no allocation. Its
//! node is linked into the wheel; its shared half (`TimerShared`) holds an atomic `state`
//! and an `AtomicWaker`.
//!
//! | state      | meaning                                      | set by                          |
//! |------------|----------------------------------------------|---------------------------------|
//! | tick `t`   | armed; fires at `t` (the true deadline)      | owner: lock, or CAS to extend   |
//! | `FIRING`   | the driver claimed it and is taking its waker | driver, under the lock          |
//! | `FIRED`    | done; the driver will not touch it again      | driver, under the lock, last (*)|
//! | `CLOSING`  | as `FIRING`, but the driver is shutting down  | driver, under the lock          |
//! | `SHUTDOWN` | the driver shut down                          | driver, under the lock, last    |
//!
//! (*) Or the owner, with a `Relaxed` store, at a first poll that finds the deadline passed: the
//! node was never linked, so no other thread can reach it.
//!
//! Who touches what:
//!
//! - The node's links: only under its shard's lock (the wheel's `unsafe` contract). "The
//!   lock" below is that shard's lock.
//! - `state`: the driver moves it only under the lock. The owner writes a tick under the lock
//!   when it registers or moves the timer earlier, and without the lock when it moves the
//!   deadline later: a CAS from the armed tick to the later one, which fails if the driver
//!   claimed the entry first. The node then stays linked at the earlier tick until the
//!   driver next walks it, under the lock: the wheel reads `state` in every cascade that
//!   moves the node and before it hands the node out (`IntrusiveWheel::poll_with`), and
//!   places it for the later tick there. So a reset to a later deadline never takes the
//!   lock, and a timer pushed back again and again costs the driver one walk per wheel slot
//!   it passes through, not one more at each old deadline. A move the wheel did not see is
//!   found when the driver claims the entry, which then links it again instead.
//! - The waker: the owner registers before it checks `state`; the driver sets `FIRING`
//!   before it takes the waker. Either the owner sees `FIRING`/`FIRED` or the driver takes
//!   the new waker, so no wake is lost. Wakers are collected under the lock and woken after
//!   it is released, at most [`WAKE_BATCH`] at a time, so a waker may drop or create timers.
//!   An interval's tick disarms its fired timer until the next poll and takes the waker out,
//!   so that an unarmed timer holds no task alive: only after `FIRED`, since the driver
//!   takes the waker in `FIRING`; if it finds `FIRING`, it takes the lock first, which the
//!   driver holds until it stores `FIRED`.
//! - Freeing the entry: the owner may free it without the lock only once it reads `FIRED` or
//!   `SHUTDOWN`, which the driver stores after its last access; in any other state the drop
//!   takes the lock, which the driver holds for as long as it touches the entry.
//!
//! # Ticks
//!
//! Tick `n` is `origin + n * tick`. A deadline is rounded up to a tick and the driver fires
//! at the tick the clock has reached, rounded down, so a timer never fires before its
//! deadline. Deadline ticks are clamped to `MAX_TICK`, which never comes: a timer armed there
//! never fires.

use std::fmt;
use std::pin::Pin;
use std::time::Duration;

use escapement_wheel::{IntrusiveWheel, Node};

use super::clock::Clock;
use super::park::DriverUnparker;
use super::Instant;

use crossbeam_utils::CachePadded;

use crate::loom::{Arc, AtomicBool, AtomicU64, AtomicUsize, Mutex, MutexGuard, Ordering};
use crate::metrics::Metrics;
use crate::sync::AtomicWaker;

mod fire;
mod idle;
mod shutdown;

pub(crate) use fire::ClockPace;
pub(crate) use idle::{ClockHold, STAND_IN_GRACE};

/// The entry's owner may free it without the lock: the driver is done with it.
pub(crate) const FIRED: u64 = u64::MAX;
/// The driver shut down; the entry will never fire.
pub(crate) const SHUTDOWN: u64 = u64::MAX - 1;
/// The driver holds the lock and is taking the entry's waker, to fire it.
pub(crate) const FIRING: u64 = u64::MAX - 2;
/// The driver holds the lock and is taking the entry's waker, to shut it down.
pub(crate) const CLOSING: u64 = u64::MAX - 3;
/// The largest tick a timer can be armed for: later deadlines are clamped here (548 million
/// years after the runtime started at the default 1 ms tick, 5.5 million at 10 µs) and
/// never fire. The clock's tick stops one short of it, however far a paused clock is
/// advanced, and no one parks toward it.
///
/// It starts the last slot of the wheel's top level, whose slots are 2^60 ticks wide. The
/// wheel reports a far timer's next expiration as the start of its slot, not its own tick;
/// for a timer clamped here the two are the same, so [`Inner::next_expiration`] knows it.
pub(crate) const MAX_TICK: u64 = 15 << 60;

/// `sleeping_until` while worker 0 is not parked: no registration needs to wake it.
const AWAKE: u64 = 0;
/// `next_due` when no timer is pending.
const NEVER: u64 = u64::MAX;

/// Wakers woken per batch, after the lock is released.
#[cfg(not(loom))]
pub(crate) const WAKE_BATCH: usize = 32;
/// Under loom, two: a model with three due timers then reaches the end of a batch, where the
/// lock is free and other threads move the wheel.
#[cfg(loom)]
pub(crate) const WAKE_BATCH: usize = 2;

/// The part of a timer entry the driver shares with its owner.
pub(crate) struct TimerShared {
    pub(crate) state: AtomicU64,
    pub(crate) waker: AtomicWaker,
    /// Under loom only: the driver reads this cell whenever it touches the entry, and the
    /// owner writes it as the entry dies, so loom reports any access that is not ordered
    /// before the entry's end: a use after free.
    #[cfg(loom)]
    alive: Alive,
}

impl TimerShared {
    pub(crate) fn new() -> TimerShared {
        TimerShared {
            state: AtomicU64::new(FIRED),
            waker: AtomicWaker::new(),
            #[cfg(loom)]
            alive: Alive(crate::loom::UnsafeCell::new(())),
        }
    }

    /// The driver touched the entry; called after its last access before it publishes
    /// `FIRED` or `SHUTDOWN` (checked under loom).
    #[inline]
    pub(crate) fn touched(&self) {
        #[cfg(loom)]
        self.alive.0.with(|_| ());
    }

    /// The owner is done with the entry; nothing may touch it afterwards (checked under loom).
    #[inline]
    pub(crate) fn dying(&self) {
        #[cfg(loom)]
        self.alive.0.with_mut(|_| ());
    }
}

impl fmt::Debug for TimerShared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimerShared")
            .field("state", &self.state.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// The outcome of registering a timer.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Registered {
    /// Linked into the wheel.
    Pending,
    /// Its tick has already passed; it is `FIRED`.
    Elapsed,
    /// The driver has shut down; it is `SHUTDOWN`.
    Shutdown,
}

pub(crate) struct Driver {
    /// One per worker; a timer lives in the shard it was registered in.
    shards: Box<[CachePadded<Shard>]>,
    /// The tick worker 0 is parked toward, `NEVER` for no timeout, or `AWAKE`. Stored as a
    /// tick only with every shard's lock held; read under one.
    sleeping_until: CachePadded<AtomicU64>,
    clock: Clock,
    /// The instant of tick zero.
    origin: std::time::Instant,
    /// Nanoseconds per tick.
    tick_ns: u64,
    unparker: DriverUnparker,
    /// The runtime's active threads, as `crate::park` counts them: when this is zero on a
    /// paused clock with timers pending, the clock jumps to the next one. `ADVANCING`
    /// (`driver/idle.rs`) is set while worker 0, the only active thread, moves the clock that
    /// way.
    active: AtomicUsize,
    /// Batches of wakers taken out of the wheel and not yet woken; `advance` waits for them.
    waking: AtomicUsize,
    /// Whether worker 0 is blocked in its park. When it is not, it may be stuck in a long
    /// poll, so an idle worker parks with a timeout for the next timer and fires it if worker
    /// 0 has not (see `scheduler::worker`). Written only when worker 0 parks and wakes.
    worker0_parked: AtomicBool,
    /// Whether a thread other than worker 0 is parked as the watch (see
    /// [`STAND_IN_WATCH`](idle::STAND_IN_WATCH)).
    watching: AtomicBool,
    /// Set as the driver shuts down: no timer will fire again, and no thread watches.
    shut_down: AtomicBool,
    metrics: Metrics,
    /// Under loom only: each `DriverRef` reads this cell as it lets go, and the driver writes
    /// it as it is dropped, so loom reports a use through a reference that is not ordered
    /// before the driver's end.
    #[cfg(loom)]
    alive: Alive,
}

/// A loom cell that holds nothing, for loom to track the accesses to what holds it: a timer
/// entry (`TimerShared::alive`) or the driver (`Driver::alive`).
#[cfg(loom)]
struct Alive(crate::loom::UnsafeCell<()>);

// SAFETY: the cell holds nothing; it exists for loom to track accesses, and loom checks each
// one. Threads read it through a shared reference (`TimerShared::touched`, the driver's
// `let_go`); the one write is its holder's end (`TimerShared::dying`, the driver's drop through
// `&mut Driver`), which loom reports if a read is not ordered before it.
#[cfg(loom)]
unsafe impl Sync for Alive {}

/// One part of the wheel.
pub(crate) struct Shard {
    inner: Mutex<Inner>,
    /// The earliest tick at which something in this shard may be due, or `NEVER`; written
    /// under the shard's lock, read without it to decide whether a turn needs the lock at
    /// all. It may be early (a cancelled timer leaves it behind), never late.
    next_due: AtomicU64,
    /// The timers counted in this shard, and the credit threads in it took (`DriverRef`):
    /// they keep the driver alive.
    refs: AtomicUsize,
}

impl Shard {
    /// The count of references to the driver held in this shard (see `DriverRef`).
    #[inline]
    pub(crate) fn refs(&self) -> &AtomicUsize {
        &self.refs
    }
}

struct Inner {
    wheel: IntrusiveWheel<TimerShared>,
    shutdown: bool,
}

impl Inner {
    /// The wheel's next expiration (a timer's tick, or the start of the slot holding the
    /// earliest timers), unless that is [`MAX_TICK`], which never comes.
    fn next_expiration(&self) -> Option<u64> {
        self.wheel.next_expiration().filter(|&tick| tick < MAX_TICK)
    }
}

impl Driver {
    /// A driver for a runtime of `workers` workers, of which `active` threads start out
    /// active.
    pub(crate) fn new(
        clock: Clock,
        origin: std::time::Instant,
        tick: Duration,
        unparker: DriverUnparker,
        workers: usize,
        active: usize,
        metrics: bool,
    ) -> Arc<Driver> {
        Arc::new(Driver {
            shards: (0..workers.max(1))
                .map(|_| {
                    CachePadded::new(Shard {
                        inner: Mutex::new(Inner {
                            wheel: IntrusiveWheel::new(),
                            shutdown: false,
                        }),
                        next_due: AtomicU64::new(NEVER),
                        refs: AtomicUsize::new(0),
                    })
                })
                .collect(),
            sleeping_until: CachePadded::new(AtomicU64::new(AWAKE)),
            clock,
            origin,
            tick_ns: u64::try_from(tick.as_nanos()).unwrap_or(u64::MAX).max(1),
            unparker,
            active: AtomicUsize::new(active),
            waking: AtomicUsize::new(0),
            worker0_parked: AtomicBool::new(false),
            watching: AtomicBool::new(false),
            shut_down: AtomicBool::new(false),
            metrics: Metrics::new(workers, metrics),
            #[cfg(loom)]
            alive: Alive(crate::loom::UnsafeCell::new(())),
        })
    }

    pub(crate) fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// The timers linked into the wheel and the cascades so far, over every shard, each read
    /// under its shard's lock in turn.
    pub(crate) fn wheel_counts(&self) -> (usize, u64) {
        let (mut live_timers, mut cascades) = (0, 0);
        for shard in self.shards.iter() {
            let inner = shard.inner.lock();
            live_timers += inner.wheel.len();
            cascades += inner.wheel.cascades();
        }
        (live_timers, cascades)
    }

    pub(crate) fn clock(&self) -> &Clock {
        &self.clock
    }

    /// The tick length.
    pub(crate) fn tick(&self) -> Duration {
        Duration::from_nanos(self.tick_ns)
    }

    /// The tick the clock has reached, rounded down.
    #[cfg(loom)]
    pub(crate) fn now_tick(&self) -> u64 {
        self.floor_tick(self.clock.now())
    }

    /// The tick an instant falls in, at most the one before [`MAX_TICK`].
    pub(crate) fn floor_tick(&self, at: Instant) -> u64 {
        let since = at
            .into_std()
            .saturating_duration_since(self.origin)
            .as_nanos();
        u64::try_from(since / u128::from(self.tick_ns))
            .unwrap_or(MAX_TICK)
            .min(MAX_TICK - 1)
    }

    /// The tick of a deadline, rounded up, at most [`MAX_TICK`].
    pub(crate) fn deadline_tick(&self, deadline: Instant) -> u64 {
        let since = deadline
            .into_std()
            .saturating_duration_since(self.origin)
            .as_nanos();
        u64::try_from(since.div_ceil(u128::from(self.tick_ns)))
            .unwrap_or(MAX_TICK)
            .min(MAX_TICK)
    }

    /// The instant a tick starts.
    pub(crate) fn tick_instant(&self, tick: u64) -> Instant {
        let nanos = u128::from(tick) * u128::from(self.tick_ns);
        let secs = u64::try_from(nanos / 1_000_000_000).unwrap_or(u64::MAX);
        let offset = Duration::new(secs, (nanos % 1_000_000_000) as u32);
        Instant::from_std(self.origin).saturating_add(offset)
    }

    /// Shard `index`.
    #[inline]
    pub(crate) fn shard(&self, index: usize) -> &Shard {
        &self.shards[index]
    }

    /// Whether `shard` is one of this driver's.
    fn owns(&self, shard: &Shard) -> bool {
        self.shards().any(|own| std::ptr::eq(own, shard))
    }

    /// A `DriverRef` is about to let go of the driver (checked under loom).
    #[inline]
    pub(crate) fn let_go(&self) {
        #[cfg(loom)]
        self.alive.0.with(|_| ());
    }

    /// Every shard, in order.
    pub(crate) fn shards(&self) -> impl Iterator<Item = &Shard> {
        self.shards.iter().map(|shard| &**shard)
    }

    /// Registers an entry whose waker is already stored: links it at `tick` in `shard` (one
    /// of this driver's), or marks it fired if that tick has passed. Wakes worker 0 if it
    /// sleeps toward a later tick.
    pub(crate) fn register(
        &self,
        node: Pin<&Node<TimerShared>>,
        shard: &Shard,
        tick: u64,
    ) -> Registered {
        debug_assert!(self.owns(shard));
        let shared = node.value();
        let mut inner = shard.inner.lock();
        if inner.shutdown {
            shared.state.store(SHUTDOWN, Ordering::Release);
            return Registered::Shutdown;
        }
        if tick <= inner.wheel.now() {
            shared.state.store(FIRED, Ordering::Release);
            return Registered::Elapsed;
        }
        // Relaxed: the state is read by the driver under this lock, and by the owner, which
        // is this thread.
        shared.state.store(tick, Ordering::Relaxed);
        // SAFETY: the entry's owner keeps the node pinned and alive until it is unlinked (its
        // drop takes this lock and unlinks it), and links it only into this shard's wheel
        // until it is unlinked again.
        unsafe { inner.wheel.insert(node, tick) };
        self.link_done(shard, inner, tick);
        self.metrics.add(|m| &m.registered, 1);
        Registered::Pending
    }

    /// Moves an entry of shard `shard` to `tick` under its lock (an earlier deadline, or
    /// re-arming a fired one). A tick already passed (`due`, or behind the wheel) fires it at
    /// once, waking its waker.
    ///
    /// In the metrics, a move of a linked entry is neither a registration nor a fire, unless
    /// it fires the entry at once, which counts as the fire of the registered timer (with no
    /// lateness: it fired at its reset, not at a tick); re-arming a fired entry counts as a
    /// registration. So `registered` stays `fired + cancelled + live`.
    pub(crate) fn reregister(
        &self,
        node: Pin<&Node<TimerShared>>,
        shard: &Shard,
        tick: u64,
        due: bool,
    ) {
        debug_assert!(self.owns(shard));
        let shared = node.value();
        let mut inner = shard.inner.lock();
        // SAFETY: as in `register`.
        let was_linked = unsafe { inner.wheel.remove(node) };
        if inner.shutdown {
            shared.state.store(SHUTDOWN, Ordering::Release);
            return;
        }
        if due || tick <= inner.wheel.now() {
            shared.state.store(FIRING, Ordering::Release);
            let waker = shared.waker.take();
            shared.state.store(FIRED, Ordering::Release);
            drop(inner);
            if was_linked {
                self.metrics.add(|m| &m.fired, 1);
            }
            if let Some(waker) = waker {
                waker.wake();
            }
            return;
        }
        shared.state.store(tick, Ordering::Release);
        // SAFETY: as in `register`.
        unsafe { inner.wheel.insert(node, tick) };
        self.link_done(shard, inner, tick);
        if !was_linked {
            self.metrics.add(|m| &m.registered, 1);
        }
    }

    /// Returns once a fire of an entry of `shard` that the caller saw in progress (`FIRING`)
    /// is done: the driver holds the shard's lock from claiming the entry until it stores
    /// `FIRED`.
    pub(crate) fn wait_for_fire(&self, shard: &Shard) {
        debug_assert!(self.owns(shard));
        drop(shard.inner.lock());
    }

    /// After linking a node at `tick` in `shard`, whose lock `inner` is: lowers the shard's
    /// `next_due`, and wakes worker 0 if it sleeps toward a later tick. Releases the lock
    /// before the syscall.
    fn link_done(&self, shard: &Shard, inner: MutexGuard<'_, Inner>, tick: u64) {
        if tick == MAX_TICK {
            // It never fires: nothing is due then, and no one need wake for it.
            return;
        }
        if tick < shard.next_due.load(Ordering::Relaxed) {
            shard.next_due.store(tick, Ordering::Relaxed);
        }
        // Relaxed under the shard's lock: worker 0 stores a tick here only while it holds
        // every shard's lock, this one included.
        let wake = tick < self.sleeping_until.load(Ordering::Relaxed);
        if wake {
            self.sleeping_until.store(AWAKE, Ordering::Relaxed);
        }
        drop(inner);
        if wake {
            self.unparker.unpark(self);
        }
    }

    /// Unlinks an entry of `shard` (its owner is dropping it).
    pub(crate) fn cancel(&self, node: Pin<&Node<TimerShared>>, shard: &Shard) {
        debug_assert!(self.owns(shard));
        let mut inner = shard.inner.lock();
        // SAFETY: as in `register`.
        let was_linked = unsafe { inner.wheel.remove(node) };
        drop(inner);
        if was_linked {
            self.metrics.add(|m| &m.cancelled, 1);
        }
    }

    /// Holds shard 0's lock (that of threads outside the runtime) until the returned guard
    /// drops, as a thread firing timers would.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn hold_lock(&self) -> impl Sized + '_ {
        self.shards[0].inner.lock()
    }

    /// Timers linked into the wheel.
    #[cfg(loom)]
    pub(crate) fn pending(&self) -> usize {
        self.shards
            .iter()
            .map(|shard| shard.inner.lock().wheel.len())
            .sum()
    }

    /// Whether the driver has begun to shut down.
    #[cfg(loom)]
    pub(crate) fn is_shut_down(&self) -> bool {
        self.shut_down.load(Ordering::Relaxed)
    }
}

#[cfg(loom)]
impl Drop for Driver {
    fn drop(&mut self) {
        self.alive.0.with_mut(|_| ());
    }
}

impl fmt::Debug for Driver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Driver")
            .field("tick", &self.tick())
            .field("clock", &self.clock)
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
pub(crate) mod tests;
