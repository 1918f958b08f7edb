//! [`LocalSet`] and [`spawn_local`]: tasks that need not be `Send`, run on the one thread
//! that drives their set.
//!
//! # Design
//!
//! A set is a run queue and an owned-task list of its own, beside the runtime's: its tasks
//! never enter a worker's queue, so no worker ever polls them. Only the set's own methods
//! ([`LocalSet::run_until`], [`LocalSet::block_on`], awaiting the set) take tasks off its
//! queue and poll them, and a `LocalSet` is neither `Send` nor `Sync`, so those polls all
//! happen on the thread that owns the set.
//!
//! Who touches a local task's future, and where:
//!
//! - **A poll**, and the drop of the future when it completes: the owner, running the task
//!   from the queue.
//! - **An abort**, from any thread: it only marks the task and schedules it (`state.rs`), and
//!   the owner drops the future when it runs the task.
//! - **The set's drop**, on the owner: it closes the queue, then shuts every task down
//!   through the owned list, dropping each future there.
//! - **A spawn onto a closed list**, which cancels the task at once: `spawn_local` runs on a
//!   thread where the set is current, and [`LocalSet::spawn_local`] takes `&LocalSet`; both
//!   are the owner.
//!
//! The list holds a reference to each task until its future is gone (completion,
//! cancellation or shutdown), so the last reference, which may drop on any thread (a waker,
//! the join handle), never frees a cell that still holds a future. The output need not be
//! `Send`: it is dropped by the owner when the task completes without a join handle, or read
//! or dropped by the join handle, which stays on the owner's thread unless the output is
//! `Send` (`JoinHandle<T>` is `Send` only for `T: Send`).
//!
//! A waker may fire on any thread: it pushes the task onto the queue under the queue's lock
//! and wakes the waker that last drove the set (an [`AtomicWaker`]). The driver registers
//! that waker before it looks at the queue, so a push that the look misses still wakes it.
//! A push on the thread driving the set, during its turn (a spawn from `run_until`'s future
//! or from a task, a task that yields), wakes no one, as tokio's does not: the turn's last
//! look at the queue comes after it, and wakes the caller again if tasks are left; waking
//! the caller there would only poll it once more for nothing. A turn of `run_until` whose
//! future completes or panics makes no such look, and wakes the driver as it ends if tasks
//! are queued.
//! A task that yields in the set's turn is taken off the queue's back into `held`, and the
//! next turn queues it again first thing, behind the tasks woken between the two turns; the
//! turn's last look counts `held` among the tasks left.
//! Once the set is dropped its queue is closed, and a task scheduled then is dropped instead:
//! its future is already gone.
//!
//! Local tasks take their ids from the process's one sequence, as every task does. They are
//! not counted in the runtime's metrics.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::mem;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::coop;
use super::list::OwnedTasks;
use super::{Notified, Schedule, Task};
use crate::loom::{thread_local_const, Arc, HintAtomicBool, Mutex, Ordering};
use crate::runtime::{context, Id};
use crate::sync::AtomicWaker;
use crate::time::clock;
use crate::time::driver::{ClockHold, Driver};
use crate::{JoinHandle, Runtime};

mod enter;
mod run_until;

pub use enter::LocalEnterGuard;
pub use run_until::RunUntil;

/// Tasks a set runs in one poll before it lets its caller run again. A task that yields
/// (`yield_now`, `time::advance`, or a spent budget) runs again only after that, so that the
/// caller's future and the runtime's other tasks run first, as on tokio's current-thread
/// runtime. Tokio's number, so a ported test that counts the tasks run before its caller's
/// next turn agrees.
const TASKS_PER_POLL: usize = 61;

thread_local_const! {
    /// The set that `spawn_local` spawns onto on this thread.
    static CURRENT: RefCell<Option<Arc<Shared>>> = RefCell::new(None);
}

thread_local_const! {
    /// The set this thread is driving (its `Shared`) for the set's turn, from the poll of
    /// `run_until`'s future or of the first task to the turn's last look at the queue: a task
    /// this thread schedules onto it then wakes no one, since that look will see it (see
    /// `Scheduler::schedule`, and `Turn` in `run_until.rs` for a turn that ends without the
    /// look).
    static DRIVING: Cell<*const Shared> = Cell::new(std::ptr::null());
}

/// A set of tasks that run on the thread that drives it, so they need not be `Send`.
///
/// Spawn onto it with [`LocalSet::spawn_local`], or with [`task::spawn_local`](spawn_local)
/// from inside it (its tasks, and the future given to [`run_until`](LocalSet::run_until) or
/// [`block_on`](LocalSet::block_on)). Its tasks run only while it is driven: by
/// [`run_until`](LocalSet::run_until), [`block_on`](LocalSet::block_on), or by awaiting the
/// set itself, which completes once every task has. Inside a runtime's `block_on` they can
/// use the runtime's timers and spawn onto its workers, as any code there can.
///
/// A `LocalSet` is neither `Send` nor `Sync`. Dropping it cancels the tasks that have not
/// completed, dropping their futures on the dropping thread; their join handles then return
/// a cancelled [`JoinError`](crate::JoinError). A set that one of its own tasks holds (in an
/// `Rc`, say) is never dropped, and its tasks stay with it.
///
/// Drive a set from one place at a time. It keeps the waker of the poll that drove it last,
/// so of two futures that drive it in turn with different wakers (two `run_until`s in a
/// `select!`, say), only the last one polled is woken when another thread wakes a task.
///
/// # Examples
///
/// ```
/// use std::rc::Rc;
///
/// use escapement::task::{self, LocalSet};
///
/// let rt = escapement::Runtime::new().unwrap();
/// let local = LocalSet::new();
/// let total = local.block_on(&rt, async {
///     // `Rc` is not `Send`: `escapement::spawn` would refuse this task.
///     let shared = Rc::new(40);
///     let task = task::spawn_local({
///         let shared = shared.clone();
///         async move { *shared + 2 }
///     });
///     task.await.unwrap()
/// });
/// assert_eq!(total, 42);
/// ```
///
/// A `LocalSet` cannot move to another thread:
///
/// ```compile_fail
/// fn is_send<T: Send>(_: T) {}
/// is_send(escapement::task::LocalSet::new());
/// ```
///
/// # Panics
///
/// Driving a set from inside one of its own tasks panics in that task (its join handle gets
/// the panic).
pub struct LocalSet {
    shared: Arc<Shared>,
    /// The set's id, from the sequence that numbers runtimes.
    id: Id,
    /// Set while one of the set's polls runs its tasks: driving the set again from inside one
    /// of them is refused.
    running: Cell<bool>,
    /// The driver that `shared.clock` holds, compared by address at each turn without the
    /// lock or a count (only this thread replaces it, and the held `Arc` keeps the address).
    noted: Cell<*const Driver>,
    /// Neither `Send` nor `Sync`: the tasks run on the thread that owns the set.
    _owner_thread: PhantomData<*const ()>,
}

/// What a set's tasks and wakers share with it.
struct Shared {
    queue: Mutex<Queue>,
    owned: OwnedTasks<Scheduler>,
    /// The waker of whoever drives the set, woken when a task is scheduled.
    driver: AtomicWaker,
    /// The timer driver of the runtime the set was last driven in, if that runtime's clock was
    /// ever paused: a wake from another thread holds that clock (`Scheduler::hold_clock`).
    clock: Mutex<Option<Arc<Driver>>>,
    /// Set once `clock` holds a driver; until then a wake asks no more (std's atomic even
    /// under loom, as the clock's own hints are: the sets of the models whose clock never
    /// pauses take no lock for the question).
    clock_noted: HintAtomicBool,
}

/// A set's run queue.
struct Queue {
    tasks: VecDeque<Notified<Scheduler>>,
    /// The tasks that yielded in the set's last turn, in the order they yielded: the next turn
    /// queues them behind the tasks woken since (`run_ready`).
    held: Vec<Notified<Scheduler>>,
    /// Set when the set is dropped: nothing is queued after that.
    closed: bool,
}

/// The scheduler of a local task: its set's queue.
#[derive(Clone)]
struct Scheduler(Arc<Shared>);

impl Schedule for Scheduler {
    fn schedule(&self, task: Notified<Self>) {
        let rejected = {
            let mut queue = self.0.queue.lock();
            if queue.closed {
                Some(task)
            } else {
                queue.tasks.push_back(task);
                None
            }
        };
        match rejected {
            // The set is gone and shut the task down: only the reference is left to drop,
            // outside the lock, as it may be the task's last.
            Some(task) => drop(task),
            // Scheduled on the thread driving the set, in its turn (a spawn from the future
            // `run_until` drives, a task that yields): the turn looks at the queue before it
            // ends, and wakes the caller again if tasks are left, so waking it here would
            // only poll it once more for nothing, where tokio does not.
            None if DRIVING.with(Cell::get) == Arc::as_ptr(&self.0) => {}
            None => {
                if let Some(waker) = self.0.driver.take() {
                    waker.wake();
                }
            }
        }
    }

    fn release(&self, task: &Task<Self>) -> Option<Task<Self>> {
        self.0.owned.remove(task)
    }

    fn hold_clock(&self) -> Option<ClockHold> {
        // The thread driving the set is counted by its runtime while it runs.
        if !self.0.clock_noted.load(Ordering::Relaxed)
            || DRIVING.with(Cell::get) == Arc::as_ptr(&self.0)
        {
            return None;
        }
        let driver = self.0.clock.lock().clone()?;
        Driver::hold_clock(&driver, || false)
    }
}

pin_project_lite::pin_project! {
    /// A local task's future, which the task harness sees as `Send`.
    struct LocalFuture<F> {
        #[pin]
        future: F,
    }
}

// SAFETY: a `LocalFuture` lives only in a task whose scheduler is a set's `Scheduler`, and
// such a future is polled and dropped only on the thread that owns the set (the module's
// design note lists every path); moving the task's handles between threads never touches
// it.
unsafe impl<F> Send for LocalFuture<F> {}

impl<F: Future> Future for LocalFuture<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        self.project().future.poll(cx)
    }
}

/// Spawns a task that need not be `Send` onto the [`LocalSet`] the caller runs in.
///
/// The task runs when the set is next driven, on the set's thread. Neither it nor its output
/// need be `Send`; the join handle is `Send` when the output is.
///
/// # Examples
///
/// ```
/// use std::cell::Cell;
/// use std::rc::Rc;
///
/// use escapement::task::{self, LocalSet};
///
/// let rt = escapement::Runtime::new().unwrap();
/// LocalSet::new().block_on(&rt, async {
///     let count = Rc::new(Cell::new(0));
///     let tasks: Vec<_> = (0..3)
///         .map(|_| {
///             let count = count.clone();
///             task::spawn_local(async move { count.set(count.get() + 1) })
///         })
///         .collect();
///     for task in tasks {
///         task.await.unwrap();
///     }
///     assert_eq!(count.get(), 3);
/// });
/// ```
///
/// The join handle of an output that is not `Send` stays on the set's thread:
///
/// ```compile_fail
/// fn is_send<T: Send>(_: T) {}
/// let rt = escapement::Runtime::new().unwrap();
/// escapement::task::LocalSet::new().block_on(&rt, async {
///     is_send(escapement::task::spawn_local(async { std::rc::Rc::new(1) }));
/// });
/// ```
///
/// # Panics
///
/// If called outside a `LocalSet`: outside its tasks, the futures given to
/// [`LocalSet::run_until`] and [`LocalSet::block_on`], and the scope of
/// [`LocalSet::enter`].
#[track_caller]
pub fn spawn_local<F>(future: F) -> JoinHandle<F::Output>
where
    F: Future + 'static,
    F::Output: 'static,
{
    let current = CURRENT
        .try_with(|current| current.borrow().clone())
        .ok()
        .flatten();
    match current {
        Some(shared) => super::boxed_if_large!(Box::pin, future => spawn_onto(&shared, future)),
        None => panic!("`spawn_local` must be called from inside a `task::LocalSet`"),
    }
}

/// Spawns `future` onto the set `shared`; the caller is the set's thread.
fn spawn_onto<F>(shared: &Arc<Shared>, future: F) -> JoinHandle<F::Output>
where
    F: Future + 'static,
    F::Output: 'static,
{
    let scheduler = Scheduler(shared.clone());
    let (join, notified) = shared.owned.bind(LocalFuture { future }, scheduler.clone());
    if let Some(notified) = notified {
        scheduler.schedule(notified);
    }
    join
}

impl LocalSet {
    /// An empty set.
    pub fn new() -> LocalSet {
        LocalSet {
            shared: Arc::new(Shared {
                queue: Mutex::new(Queue {
                    tasks: VecDeque::new(),
                    held: Vec::new(),
                    closed: false,
                }),
                owned: OwnedTasks::new(1),
                driver: AtomicWaker::new(),
                clock: Mutex::new(None),
                clock_noted: HintAtomicBool::new(false),
            }),
            id: Id::next(),
            running: Cell::new(false),
            noted: Cell::new(std::ptr::null()),
            _owner_thread: PhantomData,
        }
    }

    /// The set's id, as tokio's: a [`runtime::Id`](Id) from the sequence that numbers the
    /// runtimes, so no runtime or other set of the process has it.
    ///
    /// # Examples
    ///
    /// ```
    /// let (a, b) = (escapement::task::LocalSet::new(), escapement::task::LocalSet::new());
    /// assert_ne!(a.id(), b.id());
    /// println!("set {}", a.id());
    /// ```
    pub fn id(&self) -> Id {
        self.id
    }

    /// Spawns a task onto this set; it runs when the set is next driven.
    ///
    /// As [`task::spawn_local`](spawn_local), without the need to be inside the set.
    pub fn spawn_local<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + 'static,
        F::Output: 'static,
    {
        super::boxed_if_large!(Box::pin, future => spawn_onto(&self.shared, future))
    }

    /// A future that drives `future` and this set's tasks together, and completes with
    /// `future`'s output; tasks still pending then stay in the set.
    ///
    /// # Examples
    ///
    /// ```
    /// use escapement::task::{self, LocalSet};
    ///
    /// let rt = escapement::Runtime::new().unwrap();
    /// let local = LocalSet::new();
    /// rt.block_on(local.run_until(async {
    ///     let task = task::spawn_local(async { "ran on this thread" });
    ///     assert_eq!(task.await.unwrap(), "ran on this thread");
    /// }));
    /// ```
    pub fn run_until<F: Future>(&self, future: F) -> RunUntil<'_, F> {
        RunUntil { set: self, future }
    }

    /// Runs `future` and this set's tasks on `rt`'s `block_on` until `future` completes:
    /// `rt.block_on(self.run_until(future))`.
    ///
    /// # Panics
    ///
    /// Where [`Runtime::block_on`] panics: inside another `block_on`, or on a worker thread
    /// of a runtime.
    #[track_caller]
    pub fn block_on<F: Future>(&self, rt: &Runtime, future: F) -> F::Output {
        rt.block_on(self.run_until(future))
    }

    /// Runs `f`, a turn of the caller driving the set that ends with its look at the queue
    /// (`run_ready`), with the set marked as driven by this thread.
    fn driving<R>(&self, f: impl FnOnce() -> R) -> R {
        if clock::any_ever_paused() {
            self.note_clock();
        }
        crate::util::with_local(&DRIVING, Arc::as_ptr(&self.shared), f)
    }

    /// Records the timer driver of the runtime this thread is in, if it is in one whose clock
    /// was ever paused, for the wakes from other threads to hold (`Scheduler::hold_clock`).
    fn note_clock(&self) {
        let new = context::with_handle(|handle| {
            let driver = handle.driver();
            let changed = !std::ptr::eq(driver, self.noted.get());
            (driver.clock().wakes_hold() && changed).then(|| handle.driver_arc())
        });
        if let Some(driver) = new.flatten() {
            self.noted.set(Arc::as_ptr(&driver));
            *self.shared.clock.lock() = Some(driver);
            self.shared.clock_noted.store(true, Ordering::Relaxed);
        }
    }

    /// Panics if called from inside one of the set's tasks: the set would be driven by two
    /// callers, and its one driver's waker would leave one of them asleep. Called before the
    /// caller's waker is registered, which would replace the outer driver's.
    fn assert_not_running(&self) {
        assert!(
            !self.running.get(),
            "a `LocalSet` was driven from inside one of its own tasks"
        );
    }

    /// Runs up to [`TASKS_PER_POLL`] tasks from the queue, a task that yields once at most;
    /// returns whether tasks are left. A yield, the task's or one noted before the turn, is passed
    /// on to the caller's scheduler, as the caller wakes itself to come back.
    fn run_ready(&self) -> bool {
        /// Clears `running` when the turn ends, even by a panic.
        struct Running<'a>(&'a Cell<bool>);

        impl Drop for Running<'_> {
            fn drop(&mut self) {
                self.0.set(false);
            }
        }

        self.assert_not_running();
        self.running.set(true);
        let _running = Running(&self.running);
        let mut yielded = coop::take_yield();
        for turn in 0..TASKS_PER_POLL {
            let task = {
                let mut queue = self.shared.queue.lock();
                if turn == 0 {
                    queue.release_held();
                }
                queue.tasks.pop_front()
            };
            let Some(task) = task else {
                break;
            };
            let id = task.id();
            task.run();
            if coop::take_yield() {
                yielded = true;
                // The task woke itself onto the back of the queue: it is held back until the
                // next turn, so the other tasks, those woken during this turn included, run
                // first, and so do the caller's other tasks (tokio defers such wakes).
                let mut queue = self.shared.queue.lock();
                if queue.tasks.back().is_some_and(|last| last.id() == id) {
                    let task = queue.tasks.pop_back().expect("the last task is there");
                    queue.held.push(task);
                }
            }
        }
        if yielded {
            coop::note_yield();
        }
        let queue = self.shared.queue.lock();
        !queue.tasks.is_empty() || !queue.held.is_empty()
    }
}

impl Queue {
    /// Whether no task is queued or held.
    fn is_empty(&self) -> bool {
        self.tasks.is_empty() && self.held.is_empty()
    }

    /// Queues the tasks held back since they yielded in the last turn, behind the tasks woken
    /// since (by the runtime's tasks, from other threads, or by the caller's future): tokio
    /// wakes its deferred tasks after those. Last held first, as tokio wakes them; but those
    /// aborted while held first of all, as on the runtime's workers (`requeue_held`), since
    /// the abort's wake found them queued, where tokio's queues them. Each task's state is
    /// read once (a cached key), and the sort keeps the order of equal keys.
    fn release_held(&mut self) {
        if self.held.is_empty() {
            return;
        }
        self.held.reverse();
        self.held.sort_by_cached_key(|task| !task.is_cancelled());
        self.tasks.extend(self.held.drain(..));
    }
}

impl Default for LocalSet {
    fn default() -> LocalSet {
        LocalSet::new()
    }
}

impl Future for LocalSet {
    type Output = ();

    /// Runs the set's tasks; ready once every task spawned onto it has completed.
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.assert_not_running();
        let _enter = self.enter();
        // Before the queue is looked at, so a task scheduled after the look wakes us.
        self.shared.driver.register(cx.waker());
        if self.driving(|| self.run_ready()) {
            // The turn's share is spent: come back after the caller's other work.
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        if self.shared.owned.len() == 0 {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

impl Drop for LocalSet {
    fn drop(&mut self) {
        // Entered, so a destructor that spawns onto the set finds it (and its task is
        // cancelled at once, as the list is closed by then).
        let _enter = self.enter();
        let queued = {
            let mut queue = self.shared.queue.lock();
            queue.closed = true;
            (mem::take(&mut queue.tasks), mem::take(&mut queue.held))
        };
        // Every future is dropped here, on the set's thread.
        self.shared.owned.close_and_shutdown_all();
        drop(queued);
    }
}

impl fmt::Debug for LocalSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalSet")
            .field("id", &self.id)
            .field("tasks", &self.shared.owned.len())
            .finish_non_exhaustive()
    }
}
