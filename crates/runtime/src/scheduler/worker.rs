//! A worker thread: its loop, its local queue, and how it parks.
//!
//! Each turn a worker runs one task: from its own queue, from the injector, or stolen from
//! another worker. So that outside work is not starved, every `global_queue_interval` turns
//! a worker looks at the injector first. Unless the builder sets the interval, a worker of a
//! multi-threaded runtime tunes its own to the length of its turns, as tokio's do
//! (`worker/tune.rs`). A current-thread runtime's interval is 31.
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
//! held back on a second queue of the worker's core, out of the run queue, as tokio defers
//! such wakes: `worker/held.rs` says when the worker queues it again and who may steal it.
//!
//! Worker 0 also fires due timers at the top of every turn, which costs a relaxed load per
//! shard when no timer is pending, and otherwise a clock reading every turn, or every few while
//! its turns are short beside the time left before the next deadline (`time/driver/fire.rs`).
//! With nothing to run, a worker sleeps by the protocol of `scheduler/idle.rs`: worker 0 on
//! the timer driver's poll, with its next expiry as the timeout, the others on a condvar
//! parker. A worker runs the builder's park callback before it parks and its unpark callback
//! after.
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
//! [`task::block_in_place`](crate::task::block_in_place) may move a worker to another thread
//! while one of its tasks blocks (`worker/hand_off.rs`). What the thread knows of the worker
//! it runs, and the functions that ask, are in `worker/local.rs`.

use std::fmt;

use super::queue::{Local, Steal};
use super::Shared;
use crate::loom::Arc;
use crate::park::Parker;
use crate::runtime::context;
use crate::runtime::Handle;
use crate::task::{coop, Notified};
use crate::time::driver::ClockPace;
use crate::time::driver_ref::InShard;
use crate::time::park::DriverParker;

use held::requeue_held;
use local::{restart_busy, Role, SlackBack, WorkerLocal, CANCELLING, LOCAL, ROLE};
use tune::IntervalTuner;

mod hand_off;
mod held;
mod local;
mod tune;

pub(crate) use hand_off::hand_off;
pub(crate) use held::defer_yielded;
pub(crate) use local::{
    current_index, install, is_current_thread_worker, is_in_handed_off_closure,
    is_nonblocking_worker_thread, is_worker_of, mark_started_as, polls_a_task_on, push_local,
    runs_worker_of, started_as_worker_of, uninstall, Installed, LiveWorker,
};
pub(crate) use tune::{QueueInterval, DEFAULT_GLOBAL_QUEUE_INTERVAL};

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

type Task = Notified<Handle>;

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
                    // Active until now, as the closure ran here (`hand_off.rs`, step 5).
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
