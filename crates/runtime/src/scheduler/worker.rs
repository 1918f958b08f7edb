//! A worker thread: its loop, its local queue, and how it parks.
//!
//! Each turn a worker runs one task: from its own queue, from the injector (first, every
//! [`INJECTOR_INTERVAL`] turns, so outside work is not starved), or stolen from another
//! worker. Worker 0 also fires due timers at the top of every turn, which costs one relaxed
//! load when no timer is pending. With nothing to run, a worker sleeps by the protocol of
//! `idle.rs`: worker 0 on the timer driver's poll, with its next expiry as the timeout, the
//! others on a condvar parker.
//!
//! Worker 0 can be stuck in a long poll (a task that blocks its thread), and then no timer
//! of the runtime would fire. So the other workers stand in: every
//! [`OVERDUE_CHECK_INTERVAL`] turns each compares the driver's next deadline (a relaxed load)
//! with its clock and, if it has passed, fires what is due in each shard whose lock is free; and
//! a worker that goes idle while worker 0 is not parked sleeps only until the next deadline,
//! then does the same. Worker 0 keeps sole charge of parking on the next expiry.

use std::cell::RefCell;
use std::fmt;

use super::queue::{Local, Steal};
use super::Shared;
use crate::loom::{thread_local_const, Arc};
use crate::park::Parker;
use crate::runtime::context;
use crate::runtime::Handle;
use crate::task::Notified;
use crate::time::driver_ref::InShard;
use crate::time::park::DriverParker;

/// Every this many turns a worker takes from the injector before its own queue.
const INJECTOR_INTERVAL: u32 = 61;

/// Every this many turns a worker other than worker 0 looks for overdue timers.
const OVERDUE_CHECK_INTERVAL: u32 = 4;

type Task = Notified<Handle>;

thread_local_const! {
    /// The local queue of the worker running on this thread, if any.
    static LOCAL: RefCell<Option<WorkerLocal>> = RefCell::new(None);
}

struct WorkerLocal {
    /// Which runtime the worker belongs to (compared by address only).
    shared: *const Shared,
    queue: Local<Task>,
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
    park: Park,
    searching: bool,
    turn: u32,
    /// State of a xorshift generator, to pick whom to steal from first.
    rng: u32,
}

/// Pushes `task` onto this thread's local queue if this thread is a worker of `shared`;
/// gives the task back otherwise.
pub(crate) fn push_local(shared: &Shared, task: Task) -> Result<(), Task> {
    let mut task = Some(task);
    let pushed = LOCAL
        .try_with(|local| match &*local.borrow() {
            Some(local) if std::ptr::eq(local.shared, shared) => {
                local.queue.push(task.take().expect("pushed once"));
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

/// Whether this thread is one of the workers of the runtime `shared` belongs to.
pub(crate) fn is_worker_of(shared: &Shared) -> bool {
    LOCAL
        .try_with(|local| {
            local
                .borrow()
                .as_ref()
                .is_some_and(|local| std::ptr::eq(local.shared, shared))
        })
        .unwrap_or(false)
}

/// Whether this thread is a worker of any runtime.
pub(crate) fn is_worker_thread() -> bool {
    LOCAL
        .try_with(|local| local.borrow().is_some())
        .unwrap_or(false)
}

impl Worker {
    pub(crate) fn new(handle: Handle, index: usize, park: Park) -> Worker {
        Worker {
            handle,
            index,
            park,
            searching: false,
            turn: 0,
            rng: 0x9E37_79B9 ^ (index as u32 + 1).wrapping_mul(0x85EB_CA6B),
        }
    }

    fn shared(&self) -> &Arc<Shared> {
        &self.handle.shared
    }

    /// The worker's loop, until shutdown.
    pub(crate) fn run(mut self, queue: Local<Task>) {
        let _enter = context::enter(self.handle.clone());
        let shared_ptr: *const Shared = &**self.shared();
        LOCAL.with(|local| {
            *local.borrow_mut() = Some(WorkerLocal {
                shared: shared_ptr,
                queue,
            })
        });
        let driver = self.shared().driver.clone();
        driver.metrics().enter_worker(self.index);
        // The timers made on this thread count in its own shard, from its credit; dropped
        // after `_exit`, so the tasks that `Exit` drops still give their counts back to it.
        let _shard = InShard::enter(&driver, self.index);
        // Whatever happens below, even a panic in the runtime itself, the worker leaves as
        // a worker, so shutdown never waits for it forever.
        let _exit = Exit(self.shared().clone());
        if let Park::Driver(parker) = &self.park {
            parker.on_worker_thread();
        }
        while !self.shared().is_shutdown() {
            self.turn = self.turn.wrapping_add(1);
            if self.index == 0 {
                driver.maybe_process();
            } else if self.turn % OVERDUE_CHECK_INTERVAL == 0 {
                driver.try_process_overdue();
            }
            if let Some(task) = self.next_task().or_else(|| self.steal()) {
                self.run_task(task);
                continue;
            }
            self.park();
        }
    }

    fn run_task(&mut self, task: Task) {
        if self.searching {
            self.searching = false;
            if self.shared().idle.transition_from_searching() {
                // The last searcher found work: there may be more, so wake another to look.
                self.shared().notify_parked();
            }
        }
        task.run();
    }

    fn with_queue<R>(f: impl FnOnce(&Local<Task>) -> R) -> R {
        LOCAL.with(|local| {
            f(&local
                .borrow()
                .as_ref()
                .expect("inside the worker loop")
                .queue)
        })
    }

    fn next_task(&self) -> Option<Task> {
        // Borrowed, not cloned: a clone would write the `Arc`'s count, one line that every
        // worker would then write on every turn.
        let shared = self.shared();
        if self.turn % INJECTOR_INTERVAL == 0 {
            if let Some(task) = steal_retrying(|| shared.injector.steal()) {
                return Some(task);
            }
        }
        Self::with_queue(|queue| {
            queue
                .pop()
                .or_else(|| steal_retrying(|| shared.injector.steal_batch_and_pop(queue)))
        })
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
                .or_else(|| steal_retrying(|| shared.injector.steal_batch_and_pop(queue)))
        })
    }

    fn park(&mut self) {
        let shared = &self.handle.shared;
        let was_searching = std::mem::take(&mut self.searching);
        shared
            .idle
            .transition_to_sleeping(self.index, was_searching);
        // Re-check after announcing: see the protocol in `idle.rs`.
        let skip = shared.has_work() || shared.is_shutdown();
        if !skip {
            match &mut self.park {
                Park::Driver(parker) => {
                    let driver = &shared.driver;
                    // A paused clock jumps instead when this is the only active thread.
                    if !driver.try_auto_advance(1) {
                        let wakeup = driver.prepare_park();
                        if wakeup.is_none_or(|w| !w.after.is_zero()) {
                            parker.park(driver, wakeup);
                        }
                        driver.unparked();
                    }
                }
                Park::Thread(parker) => parker.park_standing_in(),
            }
        }
        if !shared.idle.transition_from_sleeping(self.index) {
            // A notifier took us off the sleepers and counts us as searching.
            self.searching = true;
        }
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
            while local.queue.pop().is_some() {}
        }
        self.0.driver.metrics().exit_worker();
        self.0.worker_exited();
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

impl fmt::Debug for Worker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Worker")
            .field("index", &self.index)
            .finish_non_exhaustive()
    }
}
