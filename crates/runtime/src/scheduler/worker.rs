//! A worker thread: its loop, its local queue, and how it parks.
//!
//! Each turn a worker runs one task: from its own queue, from the injector, or stolen from
//! another worker. So that outside work is not starved, every `global_queue_interval` turns
//! a worker looks at the injector first. Unless the builder sets the interval, a worker of a
//! multi-threaded runtime tunes its own, as tokio's do: it times its turns in stretches of
//! one interval, with a clock reading at each look (none while it parks), keeps a moving
//! average of their length, and sets the next interval to about [`TARGET_INTERVAL`] of
//! turns, between [`MIN_TUNED_INTERVAL`] and [`MAX_TUNED_INTERVAL`]. With a fixed
//! interval of 61, a task that spun 20 µs a poll left a task spawned from outside every
//! millisecond waiting longer and longer. A current-thread runtime's interval is 31.
//!
//! A task that the task being polled wakes or spawns goes to the worker's LIFO slot instead,
//! if it is empty (the first such task of a poll; the others queue), and runs next, ahead of
//! the queue and the injector: a message's receiver runs while the message is still in the
//! cache, as in tokio. At most [`MAX_LIFO_POLLS`] slot tasks run in a row; the next one goes
//! to the back of the queue, so two tasks that wake each other do not keep it waiting. A task
//! woken while it runs, by itself or from another thread, goes to the back of the queue once
//! its poll returns, not to the slot, as in tokio: a task that wakes itself in a loop lets
//! the queue run between two of its polls. Unlike tokio's, the slot can be stolen, though
//! after the queues and the injector: a worker that blocks in a long poll does not keep the
//! task it woke for that long (`task/slot.rs`). A current-thread runtime has no slot, as
//! tokio's has none.
//!
//! A task that wakes itself to yield (`yield_now`, `time::advance`, or a spent budget) is
//! held back, out of the run queue, as tokio defers such wakes, so that the yield lets
//! everything else that is ready run first: its worker puts it on a second queue of its
//! core, `held`. The worker queues the held tasks again, last first (`held` is LIFO):
//! - when it has nothing else to run: its queue and the injector are empty (before it would
//!   steal, and so before it would park);
//! - every `event_interval` turns ([`DEFAULT_EVENT_INTERVAL`], 61, unless the builder sets
//!   it), behind its queue, so tasks that keep each other queued cannot starve them
//!   (whatever `held` holds then, those held on the thread the core came from included), as
//!   tokio's workers wake their deferred tasks every `event_interval` turns. Not at the
//!   turns that look at the injector first: a tuned `global_queue_interval` falls to 2
//!   turns when a task's polls take a millisecond, and the task that yielded would then run
//!   again every other turn, ahead of the tasks woken meanwhile (the lateness benchmark's
//!   `long` scenario: 8 ms late at the median instead of 1);
//! - on a current-thread runtime, when its batch of turns ends (its queue is empty, or it ran
//!   its most turns), after `block_on`'s future has had its turn, if woken.
//!
//! Unlike tokio's deferred wakes, held tasks can be stolen, though last: a worker that finds
//! nothing in the others' queues, the injector or the others' LIFO slots takes the oldest half
//! of another's `held`, and runs them oldest first. So a worker blocked in a long poll does not
//! keep them waiting for its length: `work_seen_by` counts them in the idle protocol's recheck,
//! and the poll that blocks came from a queue whose push woke a worker, if one slept (a hold
//! wakes none, while queueing several held tasks again does, see `defer_yielded`). `held`
//! travels with the core through `block_in_place`, and at shutdown its tasks are dropped with
//! the queue's and cancelled. A held task is still notified, so a wake from elsewhere meanwhile
//! does not move it forward; but those aborted while held are queued again before the others
//! (`requeue_held`), so a task that aborts one held beside it and then yields finds it done.
//!
//! Worker 0 also fires due timers at the top of every turn, which costs a relaxed load per
//! shard when no timer is pending, and otherwise a clock reading every turn, or every few while
//! its turns are short beside the time left before the next deadline (`time/driver/fire.rs`).
//! With nothing to run, a worker sleeps by the protocol of `idle.rs`: worker 0 on the timer
//! driver's poll, with its next expiry as the timeout, the others on a condvar parker. A worker
//! runs the builder's park callback before it parks and its unpark callback after.
//!
//! Worker 0 can be stuck in a long poll (a task that blocks its thread), and then no timer
//! of the runtime would fire. So the other workers stand in: every
//! [`OVERDUE_CHECK_INTERVAL`] turns each compares the driver's next deadline (a relaxed load)
//! with its clock and, once it is 200 µs overdue
//! ([`STAND_IN_GRACE`](crate::time::driver::STAND_IN_GRACE)), fires what is due in each
//! shard whose lock is free; and a worker that goes idle while worker 0 is not parked sleeps
//! only until the next deadline, then does the same. Worker 0 keeps sole charge of parking
//! on the next expiry.
//!
//! # Handing a worker to another thread
//!
//! A worker is its [`Core`] (its queue and what it parks on) and its index, not its thread.
//! While the thread polls a task it is in the `Polling` role (`ROLE`), and
//! [`task::block_in_place`](crate::task::block_in_place) may then move the core to another
//! thread, which runs the same worker's loop, so the tasks queued here and, for worker 0, the
//! timers go on while the closure blocks this one. The steps, all on the old thread:
//!
//! 1. Take the core out of `LOCAL`, its queue of held tasks with it; count the new thread
//!    among the live workers (shutdown waits for it) and among the driver's active threads
//!    (a paused clock does not jump while it starts).
//! 2. Give the core to a thread of the blocking pool, which runs the loop: an idle one, or
//!    a new one whatever the pool's cap (`spawn_now`), so a worker never waits behind
//!    blocking closures. If the pool is shut down or the system refuses a new thread, put
//!    everything back: the closure then blocks this worker, as any blocking call would, and
//!    the stand-ins of the other workers cover its timers.
//! 3. Mark `LOCAL` as in the closure while it runs: the thread may block there
//!    (`Handle::block_on` works), and, its core gone, a task woken there goes to the
//!    injector. It still counts among the live workers, so a runtime dropped there waits for
//!    the others but not for itself, and not for blocking closures, as from async code.
//! 4. When the closure returns (or panics), take the core back if it is still in the slot:
//!    the thread given the job has not started the loop yet, as happens when the closure is
//!    short. Step 1 is undone (`put_core_back`), `ROLE` says `Polling` again, and the old
//!    thread goes on as the worker; the job, when it runs, finds the slot empty and returns
//!    its thread to the pool. The slot's lock decides who has the core, so exactly one of the
//!    two threads runs the worker.
//! 5. Otherwise, once the poll returns, `ROLE` says `HandedOff` and the old thread leaves the
//!    loop, its own exit balancing the count of step 1. It was active until then, so a
//!    paused clock does not jump while the closure runs. A pool thread then goes back to the
//!    pool, where the next hand-off may take it; a thread the runtime started as a worker
//!    exits.
//!
//! A task woken on the old thread between steps 1 and 4 goes to the injector: `push_local`
//! finds no queue. Nothing else of the worker stays behind: its `Worker` on the old stack
//! keeps only the turn counter, the countdowns to the next look at the injector and the next
//! release of the held tasks, the tuning of its interval, the stealing heuristics and, for
//! worker 0, the pace of its clock readings. A take-back in step 4 goes on with them (for
//! worker 0, a few turns without a reading at most); the thread given the core starts them
//! afresh, as a new worker would.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::time::{Duration, Instant};

use super::queue::{Local, Steal};
use super::Shared;
use crate::loom::{thread_local_const, Arc, Mutex};
use crate::park::Parker;
use crate::runtime::context;
use crate::runtime::{Handle, Id as RuntimeId};
use crate::task::{coop, BlockingPool, Notified};
use crate::time::driver::ClockPace;
use crate::time::driver_ref::InShard;
use crate::time::park::DriverParker;

/// Every this many turns a worker other than worker 0 looks for overdue timers.
const OVERDUE_CHECK_INTERVAL: u32 = 4;

/// The most tasks a worker runs in a row from its LIFO slot, tokio's figure: two tasks that
/// wake each other would otherwise keep the queue waiting.
const MAX_LIFO_POLLS: u32 = 3;

/// Every this many turns, unless [`Builder::event_interval`](crate::Builder::event_interval)
/// sets another, a multi-threaded runtime's worker queues the tasks it holds back after a
/// yield again, behind its queue, whatever else is ready, and a current-thread runtime looks
/// at whether its `block_on` future was woken: tokio's default `event_interval`, at which its
/// workers wake the tasks they deferred.
pub(crate) const DEFAULT_EVENT_INTERVAL: u32 = 61;

/// How many turns a multi-threaded runtime's worker takes between two looks at the injector
/// first until it has timed its turns, and always under loom, which has no time.
pub(crate) const DEFAULT_GLOBAL_QUEUE_INTERVAL: u32 = 61;

/// How long a tuned interval's turns take, by the moving average of a turn's length.
const TARGET_INTERVAL: Duration = Duration::from_micros(200);

/// The bounds of a tuned interval: at 2 the worker's own queue still has every other turn.
const MIN_TUNED_INTERVAL: u32 = 2;
const MAX_TUNED_INTERVAL: u32 = 127;

/// How much one turn's length moves the average; a stretch of `n` turns moves it by
/// `1 - (1 - TURN_WEIGHT)^n`.
const TURN_WEIGHT: f64 = 0.1;

/// How many turns a worker takes between two looks at the injector first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum QueueInterval {
    /// Always this many: the builder's, or a current-thread runtime's.
    Fixed(u32),
    /// Tuned by each worker to its turns' length (the module's note).
    Tuned,
}

/// A worker's timing of its turns, for a tuned [`QueueInterval`].
struct IntervalTuner {
    /// When the stretch of turns being timed began: at the last look at the injector, unless
    /// the worker parked since.
    since: Option<Instant>,
    /// The turns of that stretch: the interval it set.
    interval: u32,
    /// The moving average of a turn's length, in nanoseconds.
    mean_turn_nanos: f64,
}

impl IntervalTuner {
    fn new() -> IntervalTuner {
        IntervalTuner {
            since: None,
            interval: DEFAULT_GLOBAL_QUEUE_INTERVAL,
            // As if the turns took what the default interval is tuned for.
            mean_turn_nanos: TARGET_INTERVAL.as_nanos() as f64
                / f64::from(DEFAULT_GLOBAL_QUEUE_INTERVAL),
        }
    }

    /// Ends the stretch of turns being timed, if one was, starts the next, and returns the
    /// interval for it. A turn is one look for a task and its poll, with those of the tasks
    /// that then ran from the LIFO slot, which take no turn of the interval; so the interval
    /// spans about [`TARGET_INTERVAL`] of polls however many of them the slot runs.
    fn next_interval(&mut self) -> u32 {
        let now = Instant::now();
        if let Some(since) = self.since.replace(now) {
            let turns = self.interval;
            let mean = now.saturating_duration_since(since).as_nanos() as f64 / f64::from(turns);
            let exponent = i32::try_from(turns).unwrap_or(i32::MAX);
            let weight = 1.0 - (1.0 - TURN_WEIGHT).powi(exponent);
            self.mean_turn_nanos += weight * (mean - self.mean_turn_nanos);
        }
        // A float-to-integer cast saturates: an average of zero gives the largest interval.
        let turns = (TARGET_INTERVAL.as_nanos() as f64 / self.mean_turn_nanos) as u32;
        self.interval = turns.clamp(MIN_TUNED_INTERVAL, MAX_TUNED_INTERVAL);
        self.interval
    }

    /// The worker parks: the time until it runs again is no turn's.
    fn stop(&mut self) {
        self.since = None;
    }
}

type Task = Notified<Handle>;

thread_local_const! {
    /// The worker running on this thread, if any.
    static LOCAL: RefCell<Option<WorkerLocal>> = RefCell::new(None);
}

thread_local_const! {
    /// What the worker on this thread is doing, for `block_in_place`.
    static ROLE: Cell<Role> = Cell::new(Role::Other);
}

thread_local_const! {
    /// Set while a worker thread cancels its runtime's tasks as it leaves at shutdown
    /// (`Exit`): the thread is still a worker there, so a future's destructor may not block it
    /// (`Handle::block_on` panics, as on any worker), even though `LOCAL` is already empty.
    static CANCELLING: Cell<bool> = Cell::new(false);
}

thread_local_const! {
    /// The runtime (the address of its `Shared`) among whose live workers this thread is
    /// counted ([`LiveWorker`]), or 0. A thread the runtime started as a worker stays counted
    /// after its loop, until its stop callback returns.
    static LIVE_WORKER_OF: Cell<usize> = Cell::new(0);
}

/// What a worker thread is doing, as far as handing its worker to another thread goes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Not polling a task: its loop may be using the core.
    Other,
    /// Polling a task, inside `run_task`: the core may be handed off.
    Polling,
    /// It handed its core off during the current poll and leaves the loop after it.
    HandedOff,
}

/// What makes a worker: its queue, the other workers' way in to it (the queue's stealer, in
/// `Shared`) aside, and what it parks on. [`task::block_in_place`](crate::task::block_in_place)
/// moves it to another thread.
pub(crate) struct Core {
    pub(crate) queue: Local<Task>,
    /// The tasks held back since they yielded: LIFO, so that they go back to `queue` last
    /// first; others steal the oldest.
    pub(crate) held: Local<Task>,
    pub(crate) park: Park,
}

impl Core {
    /// Drops the tasks queued or held here, as a worker leaving at shutdown does (the owned
    /// list cancels them).
    pub(crate) fn clear(&self) {
        while self.queue.pop().is_some() {}
        while self.held.pop().is_some() {}
    }
}

struct WorkerLocal {
    /// Which runtime the worker belongs to (compared by address for `push_local`).
    handle: Handle,
    index: usize,
    /// `None` on a thread that handed its worker to another.
    queue: Option<Local<Task>>,
    /// `None` with `queue`.
    held: Option<Local<Task>>,
    /// Whether a task woken by the task this worker polls goes to its LIFO slot: on a
    /// multi-threaded runtime (a current-thread one keeps FIFO order, as tokio's does).
    lifo: bool,
    /// Taken out while the worker parks; `None` too once handed off.
    park: Option<Park>,
    /// In the closure of `block_in_place`, after handing the core off.
    in_closure: bool,
    /// The worker this thread was when it became this one, until it stops being this one: a
    /// current-thread runtime's `block_on` in the closure of another runtime's
    /// `block_in_place` (boxed, as that is rare).
    outer: Option<Box<WorkerLocal>>,
    /// Since when the worker has been busy on this thread (it unparked, started, or came
    /// here), while it is; `None` if the runtime counts no metrics. Kept with the worker's
    /// state on its thread, so that the thread that has the core, and only that one, counts
    /// the worker's busy time into its metrics block.
    busy_since: Option<Instant>,
}

/// How a worker sleeps.
pub(crate) enum Park {
    /// Worker 0: on the timer driver.
    Driver(DriverParker),
    /// The others.
    Thread(Parker),
}

pub(crate) struct Worker {
    handle: Handle,
    index: usize,
    searching: bool,
    turn: u32,
    /// Turns until the next one that looks at the injector first, counted down (cheaper
    /// than dividing the turn by the runtime's interval).
    injector_countdown: u32,
    /// Turns until the next one that queues the held tasks again, counted down.
    held_countdown: u32,
    /// State of a xorshift generator, to pick whom to steal from first.
    rng: u32,
    /// Worker 0's: when it reads the clock next to fire due timers.
    pace: ClockPace,
    /// Tasks run in a row from the LIFO slot.
    lifo_polls: u32,
    tuner: IntervalTuner,
}

/// Pushes `task` onto this thread's local queue if this thread is a worker of `shared`;
/// gives the task back otherwise. If `may_run_next`, the first task that the task the worker
/// polls wakes (or spawns) goes to its LIFO slot instead, to run next.
pub(crate) fn push_local(shared: &Shared, task: Task, may_run_next: bool) -> Result<(), Task> {
    let mut task = Some(task);
    let pushed = LOCAL
        .try_with(|local| match &*local.borrow() {
            Some(WorkerLocal {
                handle,
                index,
                queue: Some(queue),
                lifo,
                ..
            }) if std::ptr::eq(&*handle.shared, shared) => {
                let task = task.take().expect("pushed once");
                if may_run_next && *lifo && ROLE.try_with(Cell::get).ok() == Some(Role::Polling) {
                    if let Err(task) = shared.remotes[*index].lifo.put(task) {
                        queue.push(task);
                    }
                } else {
                    queue.push(task);
                }
                true
            }
            _ => false,
        })
        .unwrap_or(false);
    match task {
        Some(task) if !pushed => Err(task),
        _ => Ok(()),
    }
}

/// Holds back a task that woke itself to yield, if this thread runs a worker of its
/// runtime, until the worker queues it again (the module's note says when); gives the task
/// back otherwise (a thread whose worker went to another in `block_in_place`), to be
/// scheduled at once.
pub(crate) fn defer_yielded(shared: &Shared, task: Task) -> Result<(), Task> {
    let mut task = Some(task);
    let _ = LOCAL.try_with(|local| match &*local.borrow() {
        Some(WorkerLocal {
            handle,
            held: Some(held),
            ..
        }) if std::ptr::eq(&*handle.shared, shared) => {
            held.push(task.take().expect("held once"));
        }
        _ => {}
    });
    // No sleeping worker is woken for it, as for a push onto the run queue: the task was
    // running, so its worker is awake, and a poll that would block that worker next comes
    // from a queue, whose push woke one or found it searching (`release_yielded` wakes one
    // too when it queues several). One that searches finds the held task, and one that goes
    // to sleep sees it when it looks again (`work_seen_by`).
    task.map_or(Ok(()), Err)
}

/// How many of the held tasks that were not aborted [`requeue_held`] keeps aside at once while
/// it moves the aborted ones ahead of them: a buffer on the stack, so the release allocates
/// nothing.
const HELD_KEPT_ASIDE: usize = 32;

/// Moves the tasks of `held` to `queue`, last held first, and the aborted ones before the
/// others; if `run_first`, returns the first instead of queueing it. Returns it with how many
/// tasks left `held`.
///
/// An abort wakes its task, but a held task is already notified, so the wake cannot move it
/// forward; without this, a task that aborts a task held beside it and then yields would be
/// queued again before it (held last, it comes out first) and find it not yet finished, where
/// tokio, whose deferred tasks are not notified, has already run the abort. A lone held task
/// has nothing to go before, so the common release, one task that yields in a loop, reads no
/// task's state. With many held at once, an aborted one found after more than
/// [`HELD_KEPT_ASIDE`] others goes ahead of the later ones only.
fn requeue_held(held: &Local<Task>, queue: &Local<Task>, run_first: bool) -> (Option<Task>, usize) {
    struct Out<'a> {
        queue: &'a Local<Task>,
        first: Option<Task>,
        run_first: bool,
        count: usize,
    }

    impl Out<'_> {
        fn put(&mut self, task: Task) {
            self.count += 1;
            if self.run_first && self.first.is_none() {
                self.first = Some(task);
            } else {
                self.queue.push(task);
            }
        }

        fn put_all(&mut self, tasks: &mut [Option<Task>]) {
            for task in tasks.iter_mut().filter_map(Option::take) {
                self.put(task);
            }
        }
    }

    let mut out = Out {
        queue,
        first: None,
        run_first,
        count: 0,
    };
    let Some(last) = held.pop() else {
        return (None, 0);
    };
    let Some(second) = held.pop() else {
        out.put(last);
        return (out.first, out.count);
    };
    let mut aside: [Option<Task>; HELD_KEPT_ASIDE] = [const { None }; HELD_KEPT_ASIDE];
    let mut kept = 0;
    for task in [last, second]
        .into_iter()
        .chain(std::iter::from_fn(|| held.pop()))
    {
        if task.is_cancelled() {
            out.put(task);
            continue;
        }
        if kept == HELD_KEPT_ASIDE {
            out.put_all(&mut aside);
            kept = 0;
        }
        aside[kept] = Some(task);
        kept += 1;
    }
    out.put_all(&mut aside[..kept]);
    (out.first, out.count)
}

/// Whether this thread, as a worker of `shared`'s runtime, is in the closure of a
/// `block_in_place` that handed the worker to another thread: its entry for that runtime,
/// on top or under another runtime's (a current-thread `block_on` in the closure), is in a
/// closure and has no queue.
pub(crate) fn is_in_handed_off_closure(shared: &Shared) -> bool {
    LOCAL
        .try_with(|local| {
            let local = local.borrow();
            std::iter::successors(local.as_ref(), |local| local.outer.as_deref())
                .find(|local| std::ptr::eq(&*local.handle.shared, shared))
                .is_some_and(|local| local.in_closure && local.queue.is_none())
        })
        .unwrap_or(false)
}

/// Whether this thread is one of the workers of the runtime `shared` belongs to (counted
/// among its live workers), with its core or having handed it off, now or as the worker it
/// was before a current-thread runtime's `block_on` made it that runtime's.
pub(crate) fn is_worker_of(shared: &Shared) -> bool {
    let counted = LIVE_WORKER_OF.try_with(Cell::get).ok() == Some(address_of(shared));
    counted
        || LOCAL
            .try_with(|local| {
                let local = local.borrow();
                std::iter::successors(local.as_ref(), |local| local.outer.as_deref())
                    .any(|local| std::ptr::eq(&*local.handle.shared, shared))
            })
            .unwrap_or(false)
}

fn address_of(shared: &Shared) -> usize {
    std::ptr::from_ref(shared).addr()
}

/// The index of the worker this thread runs, if it runs one (not after handing it off).
pub(crate) fn current_index() -> Option<usize> {
    LOCAL
        .try_with(|local| {
            local
                .borrow()
                .as_ref()
                .filter(|local| local.queue.is_some())
                .map(|local| local.index)
        })
        .ok()
        .flatten()
}

/// Whether this thread runs the worker of a current-thread runtime (in its `block_on`).
pub(crate) fn is_current_thread_worker() -> bool {
    LOCAL
        .try_with(|local| {
            local
                .borrow()
                .as_ref()
                .is_some_and(|local| local.handle.shared.core_slot.is_some())
        })
        .unwrap_or(false)
}

/// Whether this thread is a worker of any runtime that must not block: not in the closure
/// of `block_in_place`.
pub(crate) fn is_nonblocking_worker_thread() -> bool {
    CANCELLING.try_with(Cell::get).unwrap_or(false)
        || LOCAL
            .try_with(|local| {
                local
                    .borrow()
                    .as_ref()
                    .is_some_and(|local| !local.in_closure)
            })
            .unwrap_or(false)
}

/// Whether this thread polls a task as a worker, with its core, of the multi-threaded
/// runtime whose timer driver is `driver`. Once that runtime has shut down, the worker
/// leaves its loop when the poll returns and cancels the task (`Exit`).
pub(crate) fn polls_a_task_on(driver: &crate::time::driver::Driver) -> bool {
    ROLE.try_with(Cell::get).ok() == Some(Role::Polling)
        && LOCAL
            .try_with(|local| {
                local.borrow().as_ref().is_some_and(|local| {
                    let shared = &local.handle.shared;
                    local.queue.is_some()
                        && shared.core_slot.is_none()
                        && std::ptr::eq(&*shared.driver, driver)
                })
            })
            .unwrap_or(false)
}

/// Hands the worker on this thread to a new thread, if this thread is a worker polling a
/// task (the steps are in the module's note). Until the returned guard drops, this thread may
/// block. On a thread whose worker went to another thread earlier in the same poll (a second
/// `block_in_place`, or one inside the first's closure) there is nothing to hand off, but the
/// thread may block again all the same; nor if the new thread could not start, when the
/// thread keeps its worker and blocks it. `None`, with nothing changed, anywhere else.
pub(crate) fn hand_off() -> Option<InClosure> {
    match ROLE.try_with(Cell::get).ok()? {
        Role::Polling => {}
        Role::HandedOff => {
            return Some(InClosure {
                was_in_closure: set_in_closure(true),
                taken: None,
            })
        }
        Role::Other => return None,
    }
    // Step 1.
    let (core, handle, index, busy) = LOCAL.with(|local| {
        let mut local = local.borrow_mut();
        let local = local.as_mut().expect("a polling worker is in LOCAL");
        let core = Core {
            queue: local.queue.take().expect("a polling worker has its queue"),
            held: local.held.take().expect("a polling worker holds its tasks"),
            park: local.park.take().expect("a polling worker has its park"),
        };
        let busy = local.busy_since.take().map(|since| since.elapsed());
        (core, local.handle.clone(), local.index, busy)
    });
    let shared = &handle.shared;
    // Its busy time so far, counted while this thread is still the worker: the next thread
    // counts from when it takes the core.
    if let Some(busy) = busy {
        shared.driver.metrics().worker_busy(index, busy);
    }
    shared.worker_entered();
    shared.driver.activate();
    // Step 2: the core travels through a slot, so that a job that never runs leaves it
    // behind.
    let slot = Arc::new(Mutex::new(Some(core)));
    let job = Box::new({
        let (handle, slot) = (handle.clone(), slot.clone());
        move || {
            let core = slot.lock().take();
            if let Some(core) = core {
                Worker::new(handle, index).run(core);
            }
        }
    });
    if BlockingPool::spawn_now(&shared.blocking, job, Some(handle.clone())).is_err() {
        let core = slot
            .lock()
            .take()
            .expect("a job that never ran left the core");
        put_core_back(shared, core);
        // The closure blocks the worker, but it is still a closure: `block_on` works in it.
        return Some(InClosure {
            was_in_closure: set_in_closure(true),
            taken: None,
        });
    }
    // Step 3: this thread's timer metrics go to the shared block from now on, and a
    // shutdown waits for it only after it has woken the timers, which the closure may be
    // waiting on.
    shared.driver.metrics().exit_worker();
    shared.worker_in_closure(true);
    ROLE.with(|role| role.set(Role::HandedOff));
    Some(InClosure {
        was_in_closure: set_in_closure(true),
        taken: Some(Slot {
            slot,
            handle,
            index,
        }),
    })
}

/// Gives `core`, which no other thread took, back to this thread's worker, undoing step 1:
/// the count of a new live worker and of an active thread for the driver.
fn put_core_back(shared: &Shared, core: Core) {
    LOCAL.with(|local| {
        let mut local = local.borrow_mut();
        let local = local.as_mut().expect("still in LOCAL");
        local.queue = Some(core.queue);
        local.held = Some(core.held);
        local.park = Some(core.park);
        local.busy_since = shared.driver.metrics().enabled().then(Instant::now);
    });
    shared.driver.deactivate();
    shared.worker_exited();
}

/// The time this thread's worker has been busy since it last unparked (or started, or came
/// to this thread), restarting the count from now; zero if the runtime counts no metrics.
fn restart_busy() -> Duration {
    LOCAL
        .try_with(|local| {
            let mut local = local.borrow_mut();
            let since = local.as_mut()?.busy_since.as_mut()?;
            let now = Instant::now();
            Some(now - std::mem::replace(since, now))
        })
        .ok()
        .flatten()
        .unwrap_or_default()
}

/// Says whether this thread's worker is in the closure of `block_in_place`; returns what it
/// said before.
fn set_in_closure(in_closure: bool) -> bool {
    LOCAL
        .try_with(|local| {
            local
                .borrow_mut()
                .as_mut()
                .is_some_and(|local| std::mem::replace(&mut local.in_closure, in_closure))
        })
        .unwrap_or(false)
}

/// From [`hand_off`]: while it lives, the thread may block. When it drops (the closure
/// returned or panicked), the thread says again whether it is in a closure as it did before,
/// and, if this guard handed the worker off, takes the core back if no thread has taken it
/// from the slot yet (step 4) and goes on as the worker; otherwise it is a worker thread
/// without a core until its poll returns.
pub(crate) struct InClosure {
    was_in_closure: bool,
    /// The core's way to the new thread, if this guard's call handed it off.
    taken: Option<Slot>,
}

/// Where a handed-off core waits for the thread that runs it (step 2).
struct Slot {
    slot: Arc<Mutex<Option<Core>>>,
    handle: Handle,
    index: usize,
}

impl Drop for InClosure {
    fn drop(&mut self) {
        set_in_closure(self.was_in_closure);
        let Some(taken) = &self.taken else {
            return;
        };
        taken.handle.shared.worker_in_closure(false);
        // The lock decides between this thread and the job: whichever takes the core runs
        // the worker, and the other finds the slot empty.
        let core = taken.slot.lock().take();
        if let Some(core) = core {
            let shared = &taken.handle.shared;
            put_core_back(shared, core);
            shared.driver.metrics().enter_worker(taken.index);
            ROLE.with(|role| role.set(Role::Polling));
        }
    }
}

/// Makes this thread worker `index` of `handle`'s runtime, with `core`: a worker thread at
/// the start of its loop, a current-thread runtime's `block_on` when it takes the core.
/// The worker the thread was, if any (a `block_on` in the closure of `block_in_place` runs
/// on a worker thread whose core went elsewhere), stays behind the new one, still a worker
/// of its runtime for [`is_worker_of`]. Returns what [`uninstall`] gives back: the thread's
/// timer slack from before, which worker 0 cuts, and its role.
pub(crate) fn install(handle: &Handle, index: usize, core: Core) -> Installed {
    let slack = match &core.park {
        Park::Driver(parker) => Some(parker.on_worker_thread()),
        Park::Thread(_) => None,
    };
    LOCAL.with(|local| {
        let mut local = local.borrow_mut();
        let outer = local.take().map(Box::new);
        *local = Some(WorkerLocal {
            handle: handle.clone(),
            index,
            queue: Some(core.queue),
            held: Some(core.held),
            lifo: handle.shared.core_slot.is_none(),
            park: Some(core.park),
            in_closure: false,
            outer,
            busy_since: handle.shared.driver.metrics().enabled().then(Instant::now),
        });
    });
    let role = ROLE.with(|role| role.replace(Role::Other));
    handle.shared.driver.metrics().enter_worker(index);
    Installed { slack, role }
}

/// Undoes [`install`] on a thread that is not a worker thread of the runtime: it stops
/// being the worker, and gets back its timer slack and the worker it was before. Returns the
/// core, unless a panic in its park lost it.
pub(crate) fn uninstall(installed: Installed) -> Option<Core> {
    let local = LOCAL
        .try_with(|local| {
            let mut local = local.borrow_mut();
            let mut ours = local.take();
            *local = ours
                .as_mut()
                .and_then(|ours| ours.outer.take())
                .map(|outer| *outer);
            ours
        })
        .ok()
        .flatten();
    let _ = ROLE.try_with(|role| role.set(installed.role));
    if let Some(slack) = &installed.slack {
        slack.restore();
    }
    let local = local?;
    let metrics = local.handle.shared.driver.metrics();
    if let Some(since) = local.busy_since.filter(|_| local.queue.is_some()) {
        metrics.worker_busy(local.index, since.elapsed());
    }
    metrics.exit_worker();
    Some(Core {
        queue: local.queue?,
        held: local.held?,
        park: local.park?,
    })
}

/// What [`install`] replaced on its thread.
pub(crate) struct Installed {
    slack: Option<crate::time::park::TimerSlack>,
    role: Role,
}

/// Gives the thread its timer slack back when dropped.
struct SlackBack(Option<crate::time::park::TimerSlack>);

impl Drop for SlackBack {
    fn drop(&mut self) {
        if let Some(slack) = &self.0 {
            slack.restore();
        }
    }
}

impl Worker {
    pub(crate) fn new(handle: Handle, index: usize) -> Worker {
        Worker {
            injector_countdown: match handle.shared.global_queue_interval {
                QueueInterval::Fixed(interval) => interval,
                QueueInterval::Tuned => DEFAULT_GLOBAL_QUEUE_INTERVAL,
            },
            held_countdown: handle.shared.event_interval,
            handle,
            index,
            searching: false,
            turn: 0,
            rng: 0x9E37_79B9 ^ (index as u32 + 1).wrapping_mul(0x85EB_CA6B),
            pace: ClockPace::default(),
            lifo_polls: 0,
            tuner: IntervalTuner::new(),
        }
    }

    fn shared(&self) -> &Arc<Shared> {
        &self.handle.shared
    }

    /// The worker's loop, until shutdown or until `block_in_place` hands `core` to another
    /// thread; then the worker leaves the live workers.
    pub(crate) fn run(self, core: Core) {
        // Whatever happens in the loop, even a panic in the runtime itself, the worker
        // leaves the live workers, so shutdown never waits for it forever.
        let _live = LiveWorker::enter(self.shared().clone());
        self.run_counted(core);
    }

    /// [`run`](Self::run), for a thread whose caller holds the worker's [`LiveWorker`]: a
    /// thread the runtime started as the worker holds it around its start and stop
    /// callbacks too, so that a shutdown's timeout covers them, and a runtime dropped in one
    /// does not wait for this thread.
    pub(crate) fn run_counted(mut self, core: Core) {
        let _enter = context::enter(self.handle.clone());
        // The thread gets its timer slack back when the loop ends, even by a panic: a
        // blocking thread that ran a handed-off worker 0 goes on to run blocking closures.
        let _slack = SlackBack(install(&self.handle, self.index, core).slack);
        let driver = self.shared().driver.clone();
        // The timers made on this thread count in its own shard, from its credit; dropped
        // after `_exit`, so the tasks that `Exit` drops still give their counts back to it.
        let _shard = InShard::enter(&driver, self.index);
        // Whatever happens below, even a panic in the runtime itself, the worker gives its
        // queue up and, at shutdown, cancels the tasks.
        let _exit = Exit(self.shared().clone());
        while !self.shared().is_shutdown() {
            self.turn = self.turn.wrapping_add(1);
            if self.index == 0 {
                driver.maybe_process_paced(&mut self.pace);
            } else if self.turn % OVERDUE_CHECK_INTERVAL == 0 {
                driver.try_process_overdue();
            }
            self.held_countdown -= 1;
            if self.held_countdown == 0 {
                // The held tasks go to the back of the queue, so tasks that keep each other
                // queued cannot starve them. Whatever `held` holds, even tasks held on the
                // thread the core came from.
                self.held_countdown = self.shared().event_interval;
                self.release_yielded(false);
            }
            let mut task = self.next_task();
            if task.is_none() {
                // Nothing else to run here: the held tasks' turn, before any stealing.
                task = self.release_yielded(true);
            }
            if let Some(task) = task.or_else(|| self.steal()) {
                if self.run_task(task) == Role::HandedOff {
                    // Active until now, as the closure ran here (step 5).
                    driver.deactivate();
                    break;
                }
                continue;
            }
            self.park();
        }
    }

    /// Runs up to `max` turns of a current-thread runtime's worker, each firing due timers
    /// and running one task, and stops early when the queues are empty. Returns whether it ran
    /// a task.
    pub(crate) fn run_batch(&mut self, max: u32) -> bool {
        let mut ran = false;
        for _ in 0..max {
            if self.handle.shared.is_shutdown() {
                break;
            }
            self.turn = self.turn.wrapping_add(1);
            self.handle
                .shared
                .driver
                .maybe_process_paced(&mut self.pace);
            let Some(task) = self.next_task() else {
                break;
            };
            let role = self.run_task(task);
            assert!(
                role != Role::HandedOff,
                "block_in_place handed a current-thread runtime's worker off"
            );
            ran = true;
        }
        // The caller's future, if woken, goes before the tasks that yielded.
        self.release_yielded(false);
        ran
    }

    /// Queues the tasks held back since they yielded (those no other worker took), at the
    /// back of the local queue, last first, as tokio wakes what it deferred, except that
    /// those aborted while held go before the others (see [`requeue_held`]); if `run_first`,
    /// returns the first of them instead of queueing it, for the worker to run next.
    ///
    /// Queued this way, more than one wakes a sleeping worker, as tasks pushed one by one
    /// onto the queue would: on their way between the two queues they are in neither, where
    /// a worker going to sleep may look for them.
    fn release_yielded(&mut self, run_first: bool) -> Option<Task> {
        let (first, released) = LOCAL.with(|local| match &*local.borrow() {
            Some(WorkerLocal {
                queue: Some(queue),
                held: Some(held),
                ..
            }) => requeue_held(held, queue, run_first),
            _ => (None, 0),
        });
        let shared = &self.handle.shared;
        if released > 1 && shared.remotes.len() > 1 {
            shared.notify_parked();
        }
        first
    }

    /// Leaves the idle protocol's searching state, as a worker that found a task does. A
    /// current-thread runtime's `block_on` calls it before it gives the core back: a wake that
    /// counted the worker as searching must not stay counted, or no wake would reach it again.
    pub(crate) fn end_search(&mut self) {
        if self.searching {
            self.searching = false;
            // The last searcher found work: there may be more, so another wakes to look.
            if let Some(worker) = self.shared().idle.end_search() {
                self.shared().unpark(worker);
            }
        }
    }

    /// Runs `task`; returns `HandedOff` if its poll handed the worker to another thread.
    /// A task that woke itself to yield is held back (`defer_yielded`).
    fn run_task(&mut self, task: Task) -> Role {
        self.end_search();
        ROLE.with(|role| role.set(Role::Polling));
        coop::take_yield();
        task.run();
        // Cleared for what this thread polls next.
        coop::take_yield();
        ROLE.with(|role| role.replace(Role::Other))
    }

    fn with_queue<R>(f: impl FnOnce(&Local<Task>) -> R) -> R {
        LOCAL.with(|local| {
            f(local
                .borrow()
                .as_ref()
                .and_then(|local| local.queue.as_ref())
                .expect("inside the worker loop, with its core"))
        })
    }

    /// Takes the worker's park out of `LOCAL` for the time it parks, so that a waker run
    /// meanwhile can still borrow the queue.
    fn take_park() -> Park {
        LOCAL.with(|local| {
            local
                .borrow_mut()
                .as_mut()
                .and_then(|local| local.park.take())
                .expect("inside the worker loop, with its core")
        })
    }

    fn put_park(park: Park) {
        LOCAL.with(|local| {
            if let Some(local) = local.borrow_mut().as_mut() {
                local.park = Some(park);
            }
        });
    }

    fn next_task(&mut self) -> Option<Task> {
        // Borrowed, not cloned: a clone would write the `Arc`'s count, one line that every
        // worker would then write on every turn. (A field apart from the countdown.)
        let shared = &self.handle.shared;
        // The task the last one woke runs next, while it is warm in the cache, unless the
        // slot's tasks have run enough turns in a row: then it goes to the back of the queue.
        if let Some(task) = shared.remotes[self.index].lifo.take() {
            if self.lifo_polls < MAX_LIFO_POLLS {
                self.lifo_polls += 1;
                return Some(task);
            }
            Self::with_queue(|queue| queue.push(task));
            if shared.remotes.len() > 1 {
                // On its way it was in neither place, where a worker going to sleep may have
                // looked for it, after its wake found this worker awake.
                shared.notify_parked();
            }
        }
        self.lifo_polls = 0;
        self.injector_countdown -= 1;
        if self.injector_countdown == 0 {
            self.injector_countdown = match shared.global_queue_interval {
                QueueInterval::Fixed(interval) => interval,
                QueueInterval::Tuned => self.tuner.next_interval(),
            };
            if let Some(task) = steal_retrying(|| shared.injector.steal()) {
                return Some(task);
            }
        }
        let (task, batched) = Self::with_queue(|queue| match queue.pop() {
            Some(task) => (Some(task), false),
            None => {
                let task = take_injected(shared, queue);
                (task, !queue.is_empty())
            }
        });
        if batched && !self.searching && shared.remotes.len() > 1 {
            // The batch was in neither queue on its way from the injector to this one, where a
            // worker going to sleep may have looked for it, after the pushes that made it
            // found this worker awake and woke none. A searcher wakes another when its search
            // ends (`end_search`); this worker is not one, so it wakes one now, or the tasks
            // behind the one it runs wait for its poll, however long, while the others sleep.
            shared.notify_parked();
        }
        task
    }

    fn steal(&mut self) -> Option<Task> {
        let random = self.next_random() as usize;
        // The fields are borrowed apart, so `shared` needs no clone of the `Arc`.
        let shared = &self.handle.shared;
        let workers = shared.remotes.len();
        if workers > 1 && !self.searching {
            self.searching = shared.idle.try_transition_to_searching(workers);
            if !self.searching {
                return None;
            }
        }
        let start = random % workers;
        Self::with_queue(|queue| {
            (0..workers)
                .map(|i| (start + i) % workers)
                .filter(|&i| i != self.index)
                .find_map(|i| {
                    steal_retrying(|| shared.remotes[i].stealer.steal_batch_and_pop(queue))
                })
                .or_else(|| take_injected(shared, queue))
                // Then the task another worker runs next: it may be blocked in a long poll.
                .or_else(|| {
                    (0..workers)
                        .map(|i| (start + i) % workers)
                        .filter(|&i| i != self.index)
                        .find_map(|i| shared.remotes[i].lifo.take())
                })
                // Last, what the others hold back after a yield: their own tasks go first
                // there, but a worker blocked in a poll would hold them for its length.
                .or_else(|| {
                    (0..workers)
                        .map(|i| (start + i) % workers)
                        .filter(|&i| i != self.index)
                        .find_map(|i| {
                            steal_retrying(|| shared.remotes[i].held.steal_batch_and_pop(queue))
                        })
                })
        })
    }

    pub(crate) fn park(&mut self) {
        // The time the turns took before the park says nothing of those after it.
        self.pace.restart();
        self.tuner.stop();
        let shared = &self.handle.shared;
        shared.hooks.park();
        let was_searching = std::mem::take(&mut self.searching);
        // Announce, then look at the queues again (the protocol of `idle.rs`). Work only the
        // others' queues hold, this worker would take by searching; if it may not (half the
        // workers search), it sleeps rather than come round again until they have taken it:
        // the searchers, counted after this look, cover it.
        let workers = shared.remotes.len();
        let skip = !shared
            .idle
            .announce_sleep(self.index, was_searching, workers, || {
                shared.work_seen_by(self.index)
            })
            || shared.is_shutdown();
        if !skip {
            let metrics = shared.driver.metrics();
            if metrics.enabled() {
                metrics.worker_parks(self.index, restart_busy());
            }
            let mut park = Self::take_park();
            match &mut park {
                Park::Driver(parker) => {
                    let driver = &shared.driver;
                    // A paused clock jumps instead when this is the only active thread.
                    // Not if an unpark came since the caller looked for work: a current-
                    // thread `block_on` whose future was woken has work, though no queue
                    // holds it.
                    if !driver.try_auto_advance(1, || parker.is_notified()) {
                        let wakeup = driver.prepare_park();
                        if wakeup.is_none_or(|w| !w.after.is_zero()) {
                            parker.park(driver, wakeup);
                        }
                        driver.unparked();
                    }
                }
                Park::Thread(parker) => parker.park_standing_in(),
            }
            Self::put_park(park);
            if metrics.enabled() {
                // Parked, not busy, until now.
                restart_busy();
                metrics.worker_unparked(self.index);
            }
        }
        // Woken by a notifier, or having seen work in its look, it may search (`idle.rs`).
        self.searching = shared.idle.end_sleep(self.index, !skip, workers);
        shared.hooks.unpark();
    }

    fn next_random(&mut self) -> u32 {
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.rng = x;
        x
    }
}

/// Takes a worker out of its runtime when its loop ends.
struct Exit(Arc<Shared>);

impl Drop for Exit {
    fn drop(&mut self) {
        // Drop the tasks still queued here (shutdown cancels them through the owned list);
        // nothing is pushed here once the queue is uninstalled.
        if let Some(local) = LOCAL
            .try_with(|local| local.borrow_mut().take())
            .ok()
            .flatten()
        {
            if let Some(queue) = local.queue {
                // Busy since its last park, if it still has the core (not handed off).
                if let Some(since) = local.busy_since {
                    self.0
                        .driver
                        .metrics()
                        .worker_busy(local.index, since.elapsed());
                }
                while queue.pop().is_some() {}
                drop(self.0.remotes[local.index].lifo.take());
            }
            if let Some(held) = local.held {
                while held.pop().is_some() {}
            }
        }
        // At shutdown the workers cancel the tasks, the first to leave all of them (still
        // in the runtime's context and shard), before they count as exited (`LiveWorker`):
        // a shutdown with a timeout waits for that too, and no longer than the timeout, so a
        // slow destructor delays the workers, not the thread shutting down.
        if self.0.is_shutdown() {
            let _ = CANCELLING.try_with(|cancelling| cancelling.set(true));
            self.0.owned.close_and_shutdown_all();
            let _ = CANCELLING.try_with(|cancelling| cancelling.set(false));
        }
        self.0.driver.metrics().exit_worker();
    }
}

thread_local_const! {
    /// On a thread a runtime started as one of its workers, for as long as the thread lives:
    /// that runtime's id (never reused, unlike an address) and the worker's index. A runtime
    /// dropped there by a thread-local's destructor, after the worker's loop, must not join
    /// the thread it runs on.
    static STARTED_AS: Cell<Option<(RuntimeId, usize)>> = Cell::new(None);
}

/// Marks this thread, just started by `shared`'s runtime, as its worker `index`.
pub(crate) fn mark_started_as(shared: &Shared, index: usize) {
    STARTED_AS.with(|started| started.set(Some((shared.id, index))));
}

/// The index of the worker this thread was started as, if `shared`'s runtime started it.
pub(crate) fn started_as_worker_of(shared: &Shared) -> Option<usize> {
    match STARTED_AS.try_with(Cell::get) {
        Ok(Some((id, index))) if id == shared.id => Some(index),
        _ => None,
    }
}

/// A worker among the runtime's live workers, which a shutdown waits for: dropping it counts
/// the worker out. Meanwhile its thread is one of the runtime's workers for [`is_worker_of`],
/// so a runtime dropped there does not wait for it.
pub(crate) struct LiveWorker {
    shared: Arc<Shared>,
    /// What `LIVE_WORKER_OF` said before.
    outer: usize,
}

impl LiveWorker {
    /// Counts this thread, already among the live workers of `shared`, as one of them until
    /// the guard drops.
    pub(crate) fn enter(shared: Arc<Shared>) -> LiveWorker {
        let outer = LIVE_WORKER_OF.with(|of| of.replace(address_of(&shared)));
        LiveWorker { shared, outer }
    }
}

impl Drop for LiveWorker {
    fn drop(&mut self) {
        let _ = LIVE_WORKER_OF.try_with(|of| of.set(self.outer));
        self.shared.worker_exited();
    }
}

/// Runs a steal until it succeeds or finds the queue empty.
fn steal_retrying(mut steal: impl FnMut() -> Steal<Task>) -> Option<Task> {
    loop {
        match steal() {
            Steal::Success(task) => return Some(task),
            Steal::Retry => continue,
            Steal::Empty => return None,
        }
    }
}

/// The most tasks a worker takes from the injector at once: crossbeam-deque's own cap.
const MAX_INJECTED_BATCH: usize = 33;

/// Takes a batch of tasks from the injector into `queue` and returns the first of them: one
/// worker's share of what the injector holds (its length over the number of workers, plus
/// one), as tokio's workers take, and at most half of it, as crossbeam's steal does. So a
/// burst spawned from outside spreads evenly over the workers that wake for it, where halves
/// gave the first worker as many as all the others together; and as a worker that its own
/// tasks keep busy takes one task at a time from the injector and steals nothing, a lopsided
/// split of long-running tasks would last. With one or two workers, half is a worker's share
/// already (to one task), and the injector's length, which costs three loads of its shared
/// indices at every look that finds the local queue empty, is not read.
fn take_injected(shared: &Shared, queue: &Local<Task>) -> Option<Task> {
    let workers = shared.remotes.len();
    if workers <= 2 {
        return steal_retrying(|| shared.injector.steal_batch_and_pop(queue));
    }
    let share = shared.injector.len() / workers + 1;
    steal_retrying(|| {
        shared
            .injector
            .steal_batch_with_limit_and_pop(queue, share.min(MAX_INJECTED_BATCH))
    })
}

impl fmt::Debug for Worker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Worker")
            .field("index", &self.index)
            .finish_non_exhaustive()
    }
}
