//! The worker on this thread: what the thread knows of the worker it runs (`LOCAL`), what it
//! is doing (`ROLE`), and the questions the rest of the runtime asks about them.
//!
//! A thread is a worker from [`install`] to [`uninstall`] (a current-thread runtime's
//! `block_on`) or to its loop's end (`Exit`). A current-thread runtime's `block_on` in the
//! closure of another runtime's `block_in_place` stacks its worker on the one the thread was
//! (`WorkerLocal::outer`), so the thread still counts as a worker of both.

use std::cell::{Cell, RefCell};
use std::time::{Duration, Instant};

use super::{Core, Local, Park, Shared, Task};
use crate::loom::{thread_local_const, Arc};
use crate::runtime::{Handle, Id as RuntimeId};

thread_local_const! {
    /// The worker running on this thread, if any.
    pub(super) static LOCAL: RefCell<Option<WorkerLocal>> = RefCell::new(None);
}

thread_local_const! {
    /// What the worker on this thread is doing, for `block_in_place`.
    pub(super) static ROLE: Cell<Role> = Cell::new(Role::Other);
}

thread_local_const! {
    /// Set while a worker thread cancels its runtime's tasks as it leaves at shutdown
    /// (`Exit`): the thread is still a worker there, so a future's destructor may not block it
    /// (`Handle::block_on` panics, as on any worker), even though `LOCAL` is already empty.
    pub(super) static CANCELLING: Cell<bool> = Cell::new(false);
}

thread_local_const! {
    /// The runtime (the address of its `Shared`) among whose live workers this thread is
    /// counted ([`LiveWorker`]), or 0. A thread the runtime started as a worker stays counted
    /// after its loop, until its stop callback returns.
    static LIVE_WORKER_OF: Cell<usize> = Cell::new(0);
}

/// What a worker thread is doing, as far as handing its worker to another thread goes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
    /// Not polling a task: its loop may be using the core.
    Other,
    /// Polling a task, inside `run_task`: the core may be handed off.
    Polling,
    /// It handed its core off during the current poll and leaves the loop after it.
    HandedOff,
}

/// What the thread knows of the worker it runs, in `LOCAL`.
pub(super) struct WorkerLocal {
    /// Which runtime the worker belongs to (compared by address for `push_local`).
    pub(super) handle: Handle,
    pub(super) index: usize,
    /// `None` on a thread that handed its worker to another.
    pub(super) queue: Option<Local<Task>>,
    /// `None` with `queue`.
    pub(super) held: Option<Local<Task>>,
    /// Whether a task woken by the task this worker polls goes to its LIFO slot: on a
    /// multi-threaded runtime (a current-thread one keeps FIFO order, as tokio's does).
    lifo: bool,
    /// Taken out while the worker parks; `None` too once handed off.
    pub(super) park: Option<Park>,
    /// In the closure of `block_in_place`, after handing the core off.
    pub(super) in_closure: bool,
    /// The worker this thread was when it became this one, until it stops being this one: a
    /// current-thread runtime's `block_on` in the closure of another runtime's
    /// `block_in_place` (boxed, as that is rare).
    outer: Option<Box<WorkerLocal>>,
    /// Since when the worker has been busy on this thread (it unparked, started, or came
    /// here), while it is; `None` if the runtime counts no metrics. Kept with the worker's
    /// state on its thread, so that the thread that has the core, and only that one, counts
    /// the worker's busy time into its metrics block.
    pub(super) busy_since: Option<Instant>,
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

/// Whether this thread runs, with its core, a worker of the runtime `shared` belongs to.
pub(crate) fn runs_worker_of(shared: &Shared) -> bool {
    LOCAL
        .try_with(|local| {
            local.borrow().as_ref().is_some_and(|local| {
                local.queue.is_some() && std::ptr::eq(&*local.handle.shared, shared)
            })
        })
        .unwrap_or(false)
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

/// The time this thread's worker has been busy since it last unparked (or started, or came
/// to this thread), restarting the count from now; zero if the runtime counts no metrics.
pub(super) fn restart_busy() -> Duration {
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
    pub(super) slack: Option<crate::time::park::TimerSlack>,
    role: Role,
}

/// Gives the thread its timer slack back when dropped.
pub(super) struct SlackBack(pub(super) Option<crate::time::park::TimerSlack>);

impl Drop for SlackBack {
    fn drop(&mut self) {
        if let Some(slack) = &self.0 {
            slack.restore();
        }
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
