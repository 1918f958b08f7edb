//! The runtime's internals, opened up for the loom models in `loom-tests/`. This module
//! exists only in builds with `--cfg loom`; it wraps crate-private types in a small public
//! API and adds no behaviour of its own.

#![allow(
    missing_docs,
    missing_debug_implementations,
    unreachable_pub,
    clippy::new_without_default
)]

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use crate::loom::{Arc, Mutex};
use crate::park;
use crate::task::list::OwnedTasks;
use crate::task::{Notified, Schedule, Task};
use crate::time::clock::Clock;
use crate::time::driver;
use crate::time::driver_ref::{self, DriverRef};
use crate::time::entry::TimerEntry;
use crate::time::park::DriverParker;
use crate::JoinHandle;

mod blocking;

pub use blocking::{BlockingPool, JobCount};

/// A timer driver with 1 ms ticks, as worker 0 of a one-worker runtime sees it (or of a
/// runtime with more workers, one shard each: [`Driver::with_shards`]).
#[derive(Clone)]
pub struct Driver {
    inner: Arc<driver::Driver>,
}

/// From [`Driver::enter_shard`]: when it drops, the thread returns its credit to the shard
/// and its timers go back to shard 0.
pub struct ShardGuard {
    _in_shard: driver_ref::InShard,
}

/// Worker 0's side: the parker it sleeps on.
pub struct Worker0 {
    parker: DriverParker,
    driver: Arc<driver::Driver>,
}

impl Driver {
    /// A driver whose clock is paused (its time moves only by auto-advance), or running (a
    /// model then uses ticks far in the future, so the system clock never reaches them).
    pub fn new(paused: bool) -> (Driver, Worker0) {
        Driver::with_shards(paused, 1)
    }

    /// As [`Driver::new`], for a runtime of `shards` workers: the wheel has a shard per
    /// worker, and a thread's timers belong to the one [`Driver::enter_shard`] chose.
    pub fn with_shards(paused: bool, shards: usize) -> (Driver, Worker0) {
        let origin = std::time::Instant::now();
        let tick = Duration::from_millis(1);
        let (parker, unparker) = DriverParker::new(tick).expect("the loom parker cannot fail");
        let clock = Clock::new(origin, tick, paused);
        let inner = driver::Driver::new(clock, origin, tick, unparker, shards, shards, true);
        (
            Driver {
                inner: inner.clone(),
            },
            Worker0 {
                parker,
                driver: inner,
            },
        )
    }

    /// Makes the timers of this driver made on the calling thread belong to shard `index`,
    /// as worker `index`'s do, and count there from the thread's credit, until the guard
    /// drops. The credit keeps the driver alive until then.
    pub fn enter_shard(&self, index: usize) -> ShardGuard {
        ShardGuard {
            _in_shard: driver_ref::InShard::enter(&self.inner, index),
        }
    }

    /// A timer due at `tick`, not yet registered (it registers at its first poll).
    pub fn timer(&self, tick: u64) -> Timer {
        self.timer_at(tick, true)
    }

    /// A timer due at `tick`, made as `sleep(d)` makes one: its first poll registers it
    /// without reading the clock, as for a deadline set a tick or more past a reading just
    /// taken. A model whose clock runs uses it for a tick that may pass before that poll.
    pub fn timer_from_now(&self, tick: u64) -> Timer {
        self.timer_at(tick, false)
    }

    fn timer_at(&self, tick: u64, may_be_past: bool) -> Timer {
        Timer {
            entry: Box::pin(TimerEntry::new(
                DriverRef::new(&self.inner),
                self.inner.tick_instant(tick),
                may_be_past,
            )),
        }
    }

    /// Fires everything due at or before `tick`; returns how many fired.
    pub fn process(&self, tick: u64) -> usize {
        self.inner.process(self.inner.tick_instant(tick))
    }

    pub fn shutdown(&self) {
        self.inner.shutdown();
    }

    /// Timers linked into the wheel.
    pub fn pending(&self) -> usize {
        self.inner.pending()
    }

    /// A thread of the runtime becomes active or idle (the auto-advance accounting).
    pub fn activate(&self) {
        self.inner.activate();
    }

    pub fn deactivate(&self) {
        self.inner.deactivate();
    }

    /// The clock, in ticks.
    pub fn now_tick(&self) -> u64 {
        self.inner.now_tick()
    }

    /// Moves a paused clock forward by `ticks`.
    pub fn advance(&self, ticks: u64) {
        self.inner
            .clock()
            .advance(Duration::from_millis(ticks))
            .expect("the clock is paused");
    }

    /// What `time::advance` does once polled: moves the paused clock forward by `ticks`,
    /// fires what is due, and returns once every due timer's waker was woken.
    pub fn advance_and_fire(&self, ticks: u64) {
        self.inner
            .advance_paused(Duration::from_millis(ticks))
            .expect("the clock is paused");
    }

    /// Wakes worker 0, as a registration earlier than its wakeup or a spawn does.
    pub fn unpark_worker0(&self) {
        self.inner.unpark();
    }

    /// How long a thread other than worker 0 would park before it looks for overdue timers:
    /// `None` when it would count on worker 0 and park until woken.
    pub fn stand_in_timeout(&self) -> Option<Duration> {
        self.inner.stand_in_timeout(false)
    }

    /// Whether this thread, about to sleep as a stand-in, became the watch (then `f` runs
    /// while it is), and how long it would sleep.
    pub fn as_watch<R>(&self, f: impl FnOnce(Option<Duration>) -> R) -> Option<R> {
        let watch = self.inner.try_watch()?;
        let result = f(self.inner.stand_in_timeout(true));
        drop(watch);
        Some(result)
    }

    /// What a worker other than worker 0 does each few turns: fire overdue timers in each
    /// shard whose lock is free. Returns whether it fired anything.
    pub fn try_process_overdue(&self) -> bool {
        self.inner.try_process_overdue()
    }
}

impl Worker0 {
    /// Worker 0's park step: record the tick it sleeps toward, then block (a timed park
    /// returns at once under loom; an untimed one waits for an unpark). Returns the timeout
    /// it parked with.
    pub fn park(&mut self) -> Option<Duration> {
        let wakeup = self.driver.prepare_park();
        if wakeup.is_none_or(|w| !w.after.is_zero()) {
            self.parker.park(&self.driver, wakeup);
        }
        self.driver.unparked();
        wakeup.map(|w| w.after)
    }

    /// Worker 0's turn: fires what is due by the clock, if anything is; returns whether it
    /// fired anything.
    pub fn fire_due(&self) -> bool {
        // Under loom the pace is never used: every turn reads the clock.
        self.driver
            .maybe_process_paced(&mut crate::time::driver::ClockPace::default())
    }

    /// Worker 0's auto-advance attempt when it is the only active thread.
    pub fn try_auto_advance(&self) -> bool {
        self.driver.try_auto_advance(1, || false)
    }
}

/// What a timer's poll said.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum TimerPoll {
    Pending,
    Ready,
    /// The driver had shut down (the public `Sleep` panics here).
    Shutdown,
}

/// A timer entry, as `Sleep` holds it.
pub struct Timer {
    entry: Pin<Box<TimerEntry>>,
}

impl Timer {
    pub fn poll(&mut self, waker: &Waker) -> TimerPoll {
        let mut cx = Context::from_waker(waker);
        let entry = self.entry.as_mut();
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| entry.poll_elapsed(&mut cx)))
        {
            Ok(Poll::Ready(())) => TimerPoll::Ready,
            Ok(Poll::Pending) => TimerPoll::Pending,
            Err(_) => TimerPoll::Shutdown,
        }
    }

    /// `Sleep::reset` to `tick`.
    pub fn reset(&mut self, tick: u64) {
        let deadline = self.entry.driver_ref().tick_instant(tick);
        self.entry.as_mut().reset(deadline, true);
    }

    /// What `Interval::poll_tick` does after a `Ready` poll: moves the deadline to `tick`
    /// without arming the timer, which a fired timer then is only at its next poll.
    pub fn reset_unarmed(&mut self, tick: u64) {
        let deadline = self.entry.driver_ref().tick_instant(tick);
        self.entry.as_mut().reset(deadline, false);
    }

    pub fn is_elapsed(&self) -> bool {
        self.entry.is_elapsed()
    }
}

/// A task list and a run queue, standing in for the scheduler.
#[derive(Clone)]
pub struct Tasks {
    shared: Arc<TasksShared>,
}

pub struct TasksShared {
    owned: OwnedTasks<Tasks>,
    queue: Mutex<VecDeque<Notified<Tasks>>>,
}

impl Tasks {
    pub fn new() -> Tasks {
        Tasks {
            shared: Arc::new(TasksShared {
                owned: OwnedTasks::new(1),
                queue: Mutex::new(VecDeque::new()),
            }),
        }
    }

    pub fn spawn<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let (join, notified) = self.shared.owned.bind(future, self.clone());
        if let Some(notified) = notified {
            self.schedule(notified);
        }
        join
    }

    /// Runs the next queued task; returns whether there was one.
    pub fn run_one(&self) -> bool {
        let next = self.shared.queue.lock().pop_front();
        match next {
            Some(task) => {
                task.run();
                true
            }
            None => false,
        }
    }

    /// Tasks spawned and not yet completed or cancelled.
    pub fn alive(&self) -> usize {
        self.shared.owned.len()
    }

    /// Task cells still allocated, counted by the scheduler clones they hold: exact once
    /// every clone of this `Tasks` outside a task has been dropped.
    pub fn cells(&self) -> usize {
        Arc::strong_count(&self.shared) - 1
    }

    /// Cancels every task, as runtime shutdown does, and drops what is queued.
    pub fn shutdown(&self) {
        self.shared.owned.close_and_shutdown_all();
        let queued: Vec<_> = self.shared.queue.lock().drain(..).collect();
        drop(queued);
    }
}

impl Schedule for Tasks {
    fn schedule(&self, task: Notified<Tasks>) {
        self.shared.queue.lock().push_back(task);
    }

    fn release(&self, task: &Task<Tasks>) -> Option<Task<Tasks>> {
        self.shared.owned.remove(task)
    }
}

/// A worker's LIFO slot, over [`Tasks`]: its owner puts tasks in, any thread takes them.
pub struct LifoSlot(crate::task::Slot<Tasks>);

impl LifoSlot {
    pub fn new() -> LifoSlot {
        LifoSlot(crate::task::Slot::new())
    }

    /// Spawns `future` on `tasks` into the slot, as the slot's owner; into the run queue if
    /// the slot is full.
    pub fn spawn<F>(&self, tasks: &Tasks, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let (join, notified) = tasks.shared.owned.bind(future, tasks.clone());
        if let Some(notified) = notified {
            if let Err(notified) = self.0.put(notified) {
                tasks.schedule(notified);
            }
        }
        join
    }

    /// Takes the slot's task and runs it; returns whether there was one.
    pub fn run_one(&self) -> bool {
        match self.0.take() {
            Some(task) => {
                task.run();
                true
            }
            None => false,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A condvar parker with the activity accounting, as workers other than worker 0 use.
pub struct Parker(park::Parker);

/// Wakes a [`Parker`].
#[derive(Clone)]
pub struct Unparker(park::Unparker);

impl Parker {
    pub fn new(driver: &Driver) -> (Parker, Unparker) {
        let parker = park::Parker::new(driver.inner.clone());
        let unparker = parker.unparker();
        (Parker(parker), Unparker(unparker))
    }

    pub fn park(&self) {
        self.0.park();
    }

    /// A park whose timeout comes at once under loom, as a stand-in's short one does;
    /// returns whether it was unparked.
    pub fn park_briefly(&self) -> bool {
        self.0.park_timeout(Duration::from_millis(1))
    }
}

impl Unparker {
    pub fn unpark(&self) {
        self.0.unpark();
    }
}

/// Where a worker going to sleep saw work when it looked again: nowhere, in a queue it takes
/// from itself, or only in the other workers' queues.
pub enum WorkSeen {
    Nothing,
    Its,
    Others,
}

/// The scheduler's sleep/notify bookkeeping.
pub struct Idle(crate::scheduler::Idle);

impl Idle {
    pub fn new(workers: usize) -> Idle {
        Idle(crate::scheduler::Idle::new(workers))
    }

    pub fn worker_to_notify(&self) -> Option<usize> {
        self.0.worker_to_notify()
    }

    /// Announces the worker's sleep, looks again (`look`), and returns whether it may park.
    pub fn announce_sleep(
        &self,
        worker: usize,
        searching: bool,
        workers: usize,
        look: impl FnOnce() -> WorkSeen,
    ) -> bool {
        self.0
            .announce_sleep(worker, searching, workers, || match look() {
                WorkSeen::Nothing => crate::scheduler::WorkSeen::Nothing,
                WorkSeen::Its => crate::scheduler::WorkSeen::Its,
                WorkSeen::Others => crate::scheduler::WorkSeen::Others,
            })
    }

    /// The worker is awake again; returns whether it searches.
    pub fn end_sleep(&self, worker: usize, parked: bool, workers: usize) -> bool {
        self.0.end_sleep(worker, parked, workers)
    }

    pub fn transition_from_sleeping(&self, worker: usize) -> bool {
        self.0.transition_from_sleeping(worker)
    }

    pub fn try_transition_to_searching(&self, workers: usize) -> bool {
        self.0.try_transition_to_searching(workers)
    }

    pub fn end_search(&self) -> Option<usize> {
        self.0.end_search()
    }
}

/// The waker slot of a timer.
pub struct AtomicWaker(crate::sync::AtomicWaker);

impl AtomicWaker {
    pub fn new() -> AtomicWaker {
        AtomicWaker(crate::sync::AtomicWaker::new())
    }

    pub fn register(&self, waker: &Waker) {
        self.0.register(waker);
    }

    pub fn take(&self) -> Option<Waker> {
        self.0.take()
    }
}

/// Whether the timers of the runtime this thread is in (`Handle::current`) have shut down:
/// a model checks that a shutdown waits for a worker still in its poll before it does.
pub fn current_runtime_timers_shut_down() -> bool {
    crate::Handle::current().shared.driver.is_shut_down()
}
