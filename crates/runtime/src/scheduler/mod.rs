//! The multi-threaded scheduler: per-worker run queues, a global injector, stealing, and
//! the idle protocol that puts workers to sleep and wakes them.
//!
//! A task woken on a worker thread goes onto that worker's queue (the first one a poll wakes
//! or spawns, into the worker's LIFO slot, to run next); woken anywhere else, onto the
//! injector. Either way the waker then asks [`Idle`] whether a sleeping worker should wake
//! to take it. Worker 0 is special in one way only: it owns the timer driver, fires due
//! timers each turn, and sleeps on the driver instead of a condvar.
//!
//! A current-thread runtime has worker 0 alone, and no thread for it: the thread in
//! `block_on` runs it (`current.rs`).

pub(crate) mod current;
mod idle;
mod queue;
pub(crate) mod worker;

use std::fmt;

use crossbeam_utils::CachePadded;

use crate::loom::{fence, Arc, AtomicBool, AtomicUsize, Condvar, Mutex, Ordering};
use crate::park::Unparker;
use crate::runtime::thread_hooks::ThreadHooks;
use crate::runtime::{Handle, Id as RuntimeId};
use crate::task::list::OwnedTasks;
use crate::task::{BlockingJob, BlockingPool, Notified, Schedule, Slot, Task};
use crate::time::driver::{ClockHold, Driver};

pub(crate) use current::CoreSlot;
pub(crate) use idle::{Idle, WorkSeen};
pub(crate) use queue::{Injector, Local, Stealer};
pub(crate) use worker::QueueInterval;

/// What every worker and every task of one runtime share.
pub(crate) struct Shared {
    pub(crate) injector: Injector<Notified<Handle>>,
    /// One per worker, each on its own cache line: a `Remote` is 48 bytes, its owner writes
    /// the LIFO slot whenever a task it polls wakes another, and every worker reads its own
    /// `Remote` at every turn.
    pub(crate) remotes: Box<[CachePadded<Remote>]>,
    pub(crate) idle: Idle,
    pub(crate) owned: OwnedTasks<Handle>,
    pub(crate) driver: Arc<Driver>,
    /// The threads of `spawn_blocking`.
    pub(crate) blocking: Arc<BlockingPool<BlockingJob>>,
    shutdown: AtomicBool,
    /// Worker threads still in their loop (those a worker was handed to by
    /// `block_in_place` included), and a condvar the shutdown waits on.
    live_workers: Mutex<LiveWorkers>,
    workers_exited: Condvar,
    /// What the workers run around a park (the builder's `on_thread_park` and
    /// `on_thread_unpark`).
    pub(crate) hooks: ThreadHooks,
    /// How many turns a worker takes between two looks at the injector before its own
    /// queue (`worker/tune.rs`).
    pub(crate) global_queue_interval: QueueInterval,
    /// Every this many turns a worker queues the tasks it held back after a yield again, and a
    /// current-thread runtime looks at its `block_on` future (`worker/held.rs`, `current.rs`).
    pub(crate) event_interval: u32,
    /// Tasks spawned so far (for metrics and tests).
    pub(crate) spawned: AtomicUsize,
    /// The runtime's name, from [`Builder::name`](crate::Builder::name).
    pub(crate) name: Option<Box<str>>,
    /// The runtime's id, which [`Handle::id`] returns.
    pub(crate) id: RuntimeId,
    /// A current-thread runtime's worker, while no `block_on` runs it; `None` for a
    /// multi-threaded runtime (`current.rs`).
    pub(crate) core_slot: Option<CoreSlot>,
}

/// How often a worker looks at the injector first, and how often it queues its held tasks
/// again (the builder's `global_queue_interval` and `event_interval`).
pub(crate) struct Intervals {
    pub(crate) global_queue: QueueInterval,
    pub(crate) event: u32,
}

/// What other threads need to reach one worker.
pub(crate) struct Remote {
    pub(crate) stealer: Stealer<Notified<Handle>>,
    /// The tasks it holds back after they yielded, which others take only when they find
    /// nothing else (`worker/held.rs`).
    pub(crate) held: Stealer<Notified<Handle>>,
    /// The task it runs next, woken by the task it polls (`worker.rs`); others take it only
    /// when they find nothing in the queues nor in the injector.
    pub(crate) lifo: Slot<Handle>,
    /// `None` for worker 0, which sleeps on the timer driver.
    pub(crate) unparker: Option<Unparker>,
}

impl Shared {
    pub(crate) fn new(
        remotes: Box<[CachePadded<Remote>]>,
        driver: Arc<Driver>,
        blocking: Arc<BlockingPool<BlockingJob>>,
        name: Option<Box<str>>,
        hooks: ThreadHooks,
        intervals: Intervals,
        core_slot: Option<CoreSlot>,
    ) -> Shared {
        let workers = remotes.len();
        // A current-thread runtime's worker has no thread until a `block_on` takes it.
        let threads = if core_slot.is_some() { 0 } else { workers };
        Shared {
            injector: Injector::new(),
            idle: Idle::new(workers),
            owned: OwnedTasks::new(4 * workers),
            remotes,
            driver,
            blocking,
            shutdown: AtomicBool::new(false),
            live_workers: Mutex::new(LiveWorkers {
                all: threads,
                in_closures: 0,
            }),
            workers_exited: Condvar::new(),
            hooks,
            global_queue_interval: intervals.global_queue,
            event_interval: intervals.event,
            spawned: AtomicUsize::new(0),
            name,
            id: RuntimeId::next(),
            core_slot,
        }
    }

    pub(crate) fn is_shutdown(&self) -> bool {
        self.shutdown.load(Ordering::SeqCst)
    }

    /// Where worker `index` sees a task (those held back after a yield and those in the LIFO
    /// slots included): in a queue it takes from without stealing (the injector, its own
    /// queue, held tasks and slot), only in the other workers' queues, or nowhere.
    ///
    /// A worker holds a task back during a poll and then takes its next task from its queue
    /// or its slot, so the look reads those two before the held tasks: if the task to run
    /// next has left, the one held back before it is seen. (The slot's `Acquire` check pairs
    /// with its take, see `task/slot.rs`.)
    pub(crate) fn work_seen_by(&self, index: usize) -> WorkSeen {
        let mine = &self.remotes[index];
        if !self.injector.is_empty()
            || !mine.stealer.is_empty()
            || !mine.lifo.is_empty()
            || !mine.held.is_empty()
        {
            return WorkSeen::Its;
        }
        let elsewhere = self.remotes.iter().enumerate().any(|(i, r)| {
            i != index && (!r.stealer.is_empty() || !r.lifo.is_empty() || !r.held.is_empty())
        });
        if elsewhere {
            WorkSeen::Others
        } else {
            WorkSeen::Nothing
        }
    }

    /// Wakes a sleeping worker if one should come and take new work.
    pub(crate) fn notify_parked(&self) {
        if let Some(worker) = self.idle.worker_to_notify() {
            self.unpark(worker);
        }
    }

    fn unpark(&self, worker: usize) {
        match &self.remotes[worker].unparker {
            Some(unparker) => unparker.unpark(),
            None => self.driver.unpark(),
        }
    }

    /// Starts shutting down: tasks spawned from now on are cancelled at once, and workers leave
    /// their loops at their next turn. The tasks already spawned are cancelled as the workers
    /// leave (or by the shutdown, once they have).
    pub(crate) fn begin_shutdown(&self) {
        // Closed now, not only as the workers leave: while a worker is stuck in a long poll,
        // a task spawned meanwhile would otherwise wait for that poll to be cancelled.
        self.owned.close();
        self.shutdown.store(true, Ordering::SeqCst);
        for worker in 0..self.remotes.len() {
            self.unpark(worker);
        }
    }

    /// Drops every task in the injector. Called after shutdown began, by the shutdown and by
    /// any thread that pushed to the injector too late.
    pub(crate) fn drain_injector(&self) {
        while let Some(task) = steal_any(&self.injector) {
            drop(task);
        }
    }

    /// Drops the tasks left in the workers' LIFO slots, as a shutdown does with the
    /// injector's: a worker that exits empties its own, but one may not have started.
    pub(crate) fn drain_lifo_slots(&self) {
        for remote in &*self.remotes {
            drop(remote.lifo.take());
        }
    }

    /// A thread is about to enter the worker loop in place of one that stays in it until its
    /// current poll returns (`block_in_place`).
    pub(crate) fn worker_entered(&self) {
        self.live_workers.lock().all += 1;
    }

    pub(crate) fn worker_exited(&self) {
        let mut live = self.live_workers.lock();
        live.all -= 1;
        // Every exit, not only the last: a shutdown on one of the workers waits for all but
        // its own.
        self.workers_exited.notify_all();
    }

    /// A live worker thread that handed its worker off enters the closure of
    /// `block_in_place` (`true`), or returns from it (`false`).
    pub(crate) fn worker_in_closure(&self, entering: bool) {
        let mut live = self.live_workers.lock();
        if entering {
            live.in_closures += 1;
        } else {
            live.in_closures -= 1;
            self.workers_exited.notify_all();
        }
    }

    /// Waits until at most `remaining` workers are still in their loop, not counting those
    /// in a closure of `block_in_place` unless `closures`, or `deadline` passed; returns
    /// whether they were.
    pub(crate) fn wait_for_workers(
        &self,
        remaining: usize,
        closures: bool,
        deadline: Option<std::time::Instant>,
    ) -> bool {
        let waited_for = |live: &LiveWorkers| {
            if closures {
                live.all
            } else {
                live.all - live.in_closures
            }
        };
        let mut live = self.live_workers.lock();
        while waited_for(&live) > remaining {
            match deadline {
                None => live = self.workers_exited.wait(live),
                Some(deadline) => {
                    let now = std::time::Instant::now();
                    if now >= deadline {
                        return false;
                    }
                    live = self.workers_exited.wait_for(live, deadline - now);
                }
            }
        }
        true
    }
}

/// The count a shutdown waits on.
struct LiveWorkers {
    /// Worker threads still in their loop.
    all: usize,
    /// Those of them in the closure of a `block_in_place` that handed their worker to
    /// another thread: they run no worker until the closure returns.
    in_closures: usize,
}

fn steal_any(injector: &Injector<Notified<Handle>>) -> Option<Notified<Handle>> {
    loop {
        let steal = injector.steal();
        if steal.is_retry() {
            continue;
        }
        return steal.success();
    }
}

impl Schedule for Handle {
    fn schedule(&self, task: Notified<Handle>) {
        self.push(task, true);
    }

    fn schedule_woken_while_running(&self, task: Notified<Handle>) {
        self.push(task, false);
    }

    fn schedule_yielded(&self, task: Notified<Handle>) {
        if let Err(task) = worker::defer_yielded(&self.shared, task) {
            self.schedule(task);
        }
    }

    fn release(&self, task: &Task<Handle>) -> Option<Task<Handle>> {
        self.shared.owned.remove(task)
    }

    fn hold_clock(&self) -> Option<ClockHold> {
        // A worker that runs with its core is active: it would only count itself twice.
        Driver::hold_clock(&self.shared.driver, || worker::runs_worker_of(&self.shared))
    }
}

impl Handle {
    /// Queues `task`: on this thread's worker, if it is one of the runtime's (into its LIFO
    /// slot if `may_run_next` and a poll woke it), or on the injector.
    fn push(&self, task: Notified<Handle>, may_run_next: bool) {
        let shared = &*self.shared;
        if let Err(task) = worker::push_local(shared, task, may_run_next) {
            shared.injector.push(task);
            // A push that raced with shutdown's final drain must not leave the task in the
            // injector: either this reads the flag set, or the drain's steal, after the
            // SeqCst store in `begin_shutdown` and crossbeam's SeqCst fence, sees the task.
            fence(Ordering::SeqCst);
            if shared.is_shutdown() {
                shared.drain_injector();
                return;
            }
        }
        shared.notify_parked();
    }
}

impl fmt::Debug for Shared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shared")
            .field("workers", &self.remotes.len())
            .field("idle", &self.idle)
            .field("shutdown", &self.is_shutdown())
            .finish_non_exhaustive()
    }
}
