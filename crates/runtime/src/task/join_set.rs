//! [`JoinSet`]: a set of spawned tasks, awaited in the order they finish.
//!
//! Each task's join handle gets a waker of its own as it joins the set. When the task
//! finishes, that waker puts the task's key on the set's `finished` queue and wakes whoever
//! waits in `join_next`, so `join_next` takes tasks in the order they finished and polls only
//! those. A key may be queued twice (a task that finished as it joined); the second finds its
//! entry gone and is skipped, and an `id` per entry keeps a reused key from being mistaken
//! for its earlier task.

use std::collections::VecDeque;
use std::fmt;
use std::future::{poll_fn, Future};
use std::panic::{RefUnwindSafe, UnwindSafe};
use std::task::{Context, Poll, Wake, Waker};

use slab::Slab;

use super::{coop, AbortHandle, Id, JoinError, JoinHandle, LocalSet};
use crate::loom::{Mutex, WakeArc};
use crate::runtime::Handle;
use crate::sync::AtomicWaker;

/// What the tasks' wakers share with the set.
struct Finished {
    /// `(key, id)` of each entry whose task finished, in the order they finished.
    queue: Mutex<VecDeque<(usize, u64)>>,
    /// The task waiting in `join_next`, if any.
    waiter: AtomicWaker,
}

impl Finished {
    fn push(&self, key: usize, id: u64) {
        self.queue.lock().push_back((key, id));
        if let Some(waiter) = self.waiter.take() {
            waiter.wake();
        }
    }
}

/// The waker of one task's join handle.
struct EntryWaker {
    key: usize,
    id: u64,
    finished: WakeArc<Finished>,
}

impl Wake for EntryWaker {
    fn wake(self: WakeArc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &WakeArc<Self>) {
        self.finished.push(self.key, self.id);
    }
}

struct Entry<T> {
    handle: JoinHandle<T>,
    id: u64,
    waker: Waker,
}

/// A set of tasks spawned on a runtime (or on a [`LocalSet`]), whose outputs come back in the
/// order the tasks finish.
///
/// All tasks of a set return the same type `T`. Dropping the set aborts every task still in
/// it; [`detach_all`](JoinSet::detach_all) lets them run on instead.
///
/// # Examples
///
/// ```
/// # let rt = escapement::Builder::new().start_paused(true).build().unwrap();
/// # rt.block_on(async {
/// use escapement::task::JoinSet;
/// use escapement::time::{sleep, Duration};
///
/// let mut set = JoinSet::new();
/// for i in 0..3u64 {
///     set.spawn(async move {
///         sleep(Duration::from_millis(30 - 10 * i)).await;
///         i
///     });
/// }
/// let mut finished = Vec::new();
/// while let Some(result) = set.join_next().await {
///     finished.push(result.unwrap());
/// }
/// assert_eq!(finished, [2, 1, 0]);
/// # });
/// ```
pub struct JoinSet<T> {
    entries: Slab<Entry<T>>,
    finished: WakeArc<Finished>,
    /// The id of the next entry.
    next_id: u64,
}

// A panic cannot leave a set half-updated: its shared queue is locked only around a push or
// a pop, with no user code inside, and the tasks' outputs move out whole, as tokio's.
impl<T> UnwindSafe for JoinSet<T> {}
impl<T> RefUnwindSafe for JoinSet<T> {}

impl<T> JoinSet<T> {
    /// An empty set.
    pub fn new() -> JoinSet<T> {
        JoinSet {
            entries: Slab::new(),
            finished: WakeArc::new(Finished {
                queue: Mutex::new(VecDeque::new()),
                waiter: AtomicWaker::new(),
            }),
            next_id: 0,
        }
    }

    /// The tasks in the set: spawned, and not yet returned by a join.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the set holds no task.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl<T: 'static> JoinSet<T> {
    /// Spawns `future` on the current runtime, as [`spawn`](crate::spawn) does, and adds it
    /// to the set. The returned handle cancels it, and may be dropped.
    ///
    /// # Panics
    ///
    /// If called outside a runtime.
    #[track_caller]
    pub fn spawn<F>(&mut self, future: F) -> AbortHandle
    where
        F: Future<Output = T> + Send + 'static,
        T: Send,
    {
        super::boxed_if_large!(Box::pin, future => self.insert(crate::spawn(future)))
    }

    /// Spawns `future` on the runtime `handle` names and adds it to the set.
    pub fn spawn_on<F>(&mut self, future: F, handle: &Handle) -> AbortHandle
    where
        F: Future<Output = T> + Send + 'static,
        T: Send,
    {
        super::boxed_if_large!(Box::pin, future => self.insert(handle.spawn(future)))
    }

    /// Runs `f` on the current runtime's blocking threads, as
    /// [`spawn_blocking`](crate::task::spawn_blocking) does, and adds it to the set. Aborting
    /// it (or dropping the set) cancels it only if it has not started.
    ///
    /// # Panics
    ///
    /// As [`spawn_blocking`](crate::task::spawn_blocking).
    #[track_caller]
    pub fn spawn_blocking<F>(&mut self, f: F) -> AbortHandle
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send,
    {
        super::boxed_if_large!(Box::new, f => self.insert(crate::task::spawn_blocking(f)))
    }

    /// Runs `f` on the blocking threads of the runtime `handle` names and adds it to the set.
    ///
    /// # Panics
    ///
    /// As [`Handle::spawn_blocking`].
    #[track_caller]
    pub fn spawn_blocking_on<F>(&mut self, f: F, handle: &Handle) -> AbortHandle
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send,
    {
        super::boxed_if_large!(Box::new, f => self.insert(handle.spawn_blocking(f)))
    }

    /// Spawns `future` onto the [`LocalSet`] the caller runs in, as
    /// [`spawn_local`](crate::task::spawn_local) does, and adds it to the set. Neither the
    /// future nor `T` need be `Send`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::rc::Rc;
    ///
    /// use escapement::task::{JoinSet, LocalSet};
    ///
    /// let rt = escapement::Runtime::new().unwrap();
    /// LocalSet::new().block_on(&rt, async {
    ///     let mut set = JoinSet::new();
    ///     for i in 0..3 {
    ///         set.spawn_local(async move { Rc::new(i) });
    ///     }
    ///     let mut total = 0;
    ///     while let Some(result) = set.join_next().await {
    ///         total += *result.unwrap();
    ///     }
    ///     assert_eq!(total, 3);
    /// });
    /// ```
    ///
    /// A set of outputs that are not `Send` stays on the set's thread:
    ///
    /// ```compile_fail
    /// fn is_send<T: Send>(_: T) {}
    /// is_send(escapement::task::JoinSet::<std::rc::Rc<()>>::new());
    /// ```
    ///
    /// # Panics
    ///
    /// If called outside a `LocalSet`, as [`spawn_local`](crate::task::spawn_local).
    #[track_caller]
    pub fn spawn_local<F>(&mut self, future: F) -> AbortHandle
    where
        F: Future<Output = T> + 'static,
    {
        super::boxed_if_large!(Box::pin, future => self.insert(crate::task::spawn_local(future)))
    }

    /// Spawns `future` onto `local_set` and adds it to the set; it runs when `local_set` is
    /// next driven.
    pub fn spawn_local_on<F>(&mut self, future: F, local_set: &LocalSet) -> AbortHandle
    where
        F: Future<Output = T> + 'static,
    {
        super::boxed_if_large!(Box::pin, future => self.insert(local_set.spawn_local(future)))
    }

    fn insert(&mut self, mut handle: JoinHandle<T>) -> AbortHandle {
        let abort = handle.abort_handle();
        let id = self.next_id;
        self.next_id += 1;
        let entry = self.entries.vacant_entry();
        let key = entry.key();
        let waker = Waker::from(WakeArc::new(EntryWaker {
            key,
            id,
            finished: self.finished.clone(),
        }));
        // Registered now, not at the first `join_next`, so the set learns of each end as it
        // comes, in order.
        if handle.register_waker(&waker) {
            self.finished.push(key, id);
        }
        entry.insert(Entry { handle, id, waker });
        abort
    }

    /// Waits for one of the tasks to finish and returns its output, or `None` at once if the
    /// set is empty. The task leaves the set.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: dropping the future before it completes leaves every task in the set,
    /// and no output is lost.
    pub async fn join_next(&mut self) -> Option<Result<T, JoinError>> {
        poll_fn(|cx| self.poll_join_next(cx)).await
    }

    /// [`join_next`](Self::join_next), with the finished task's [`Id`] beside its output (a
    /// [`JoinError`] carries it already).
    ///
    /// # Examples
    ///
    /// ```
    /// # escapement::Runtime::new().unwrap().block_on(async {
    /// use escapement::task::JoinSet;
    ///
    /// let mut set = JoinSet::new();
    /// let id = set.spawn(async { "done" }).id();
    /// assert_eq!(set.join_next_with_id().await.unwrap().unwrap(), (id, "done"));
    /// # });
    /// ```
    ///
    /// # Cancel safety
    ///
    /// Cancel safe, as [`join_next`](Self::join_next).
    pub async fn join_next_with_id(&mut self) -> Option<Result<(Id, T), JoinError>> {
        poll_fn(|cx| self.poll_join_next_with_id(cx)).await
    }

    /// The output of a task that has already finished, if any, without waiting; `None` when
    /// no task has finished (or the set is empty).
    pub fn try_join_next(&mut self) -> Option<Result<T, JoinError>> {
        // Outside the cooperative budget: a call that cannot wait must not miss a finished
        // task for want of it. And with no waker, so the one a pending `poll_join_next` left
        // stays registered.
        match self.poll_finished(None) {
            Poll::Ready(result) => result.map(without_id),
            Poll::Pending => None,
        }
    }

    /// [`try_join_next`](Self::try_join_next), with the finished task's [`Id`] beside its
    /// output.
    pub fn try_join_next_with_id(&mut self) -> Option<Result<(Id, T), JoinError>> {
        match self.poll_finished(None) {
            Poll::Ready(result) => result,
            Poll::Pending => None,
        }
    }

    /// Polls for a finished task: `Ready(Some(output))` for one (which leaves the set),
    /// `Ready(None)` if the set is empty, and `Pending` otherwise, after arranging for `cx` to
    /// be woken when a task finishes.
    ///
    /// An output handed out spends a unit of the task's cooperative budget; with none left,
    /// this wakes `cx` and returns `Pending` (see [`unconstrained`](crate::task::unconstrained)).
    pub fn poll_join_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<T, JoinError>>> {
        self.poll_join_next_with_id(cx)
            .map(|result| result.map(without_id))
    }

    /// [`poll_join_next`](Self::poll_join_next), with the finished task's [`Id`] beside its
    /// output.
    pub fn poll_join_next_with_id(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<(Id, T), JoinError>>> {
        if self.entries.is_empty() {
            return Poll::Ready(None);
        }
        std::task::ready!(coop::poll_budget(cx));
        let next = self.poll_finished(Some(cx.waker()));
        if next.is_ready() {
            coop::made_progress();
        }
        next
    }

    /// [`poll_join_next`](Self::poll_join_next) without the budget (the tasks' handles are
    /// polled with their entries' wakers, which requeue them, so a handle that returned
    /// `Pending` for want of budget would come straight back), registering `waker` if given.
    fn poll_finished(&mut self, waker: Option<&Waker>) -> Poll<Option<Result<(Id, T), JoinError>>> {
        if self.entries.is_empty() {
            return Poll::Ready(None);
        }
        // Before the queue is read, so a task finishing after the read wakes it.
        if let Some(waker) = waker {
            self.finished.waiter.register(waker);
        }
        loop {
            let Some((key, id)) = self.finished.queue.lock().pop_front() else {
                return Poll::Pending;
            };
            let Some(entry) = self.entries.get_mut(key).filter(|entry| entry.id == id) else {
                continue;
            };
            let mut task_cx = Context::from_waker(&entry.waker);
            if let Poll::Ready(output) = entry.handle.poll_unconstrained(&mut task_cx) {
                let task = self.entries.remove(key).handle.id();
                return Poll::Ready(Some(output.map(|output| (task, output))));
            }
        }
    }

    /// Waits for every task and returns their outputs in the order they finished.
    ///
    /// # Panics
    ///
    /// If a task panicked, its panic resumes here; if a task was cancelled, this panics with
    /// its [`JoinError`]. Either way the tasks still in the set are aborted (the set is dropped).
    pub async fn join_all(mut self) -> Vec<T> {
        let mut outputs = Vec::with_capacity(self.len());
        while let Some(result) = self.join_next().await {
            match result {
                Ok(output) => outputs.push(output),
                Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
                Err(error) => panic!("{error}"),
            }
        }
        outputs
    }

    /// Aborts every task and waits until they have all finished, dropping their outputs. The
    /// set is empty afterwards.
    pub async fn shutdown(&mut self) {
        self.abort_all();
        while self.join_next().await.is_some() {}
    }
}

impl<T> JoinSet<T> {
    /// Aborts every task in the set, in the order they joined it, as tokio's does (so on a
    /// current-thread runtime the futures of the tasks that were waiting are dropped in that
    /// order; one already queued keeps its place). They stay in the set: a later join returns
    /// each, cancelled unless it finished first.
    pub fn abort_all(&mut self) {
        // The slab hands the key of a task that left to the next one to join, so its order is
        // not the tasks'; each entry's `id` is.
        let mut handles: Vec<_> = self
            .entries
            .iter()
            .map(|(_, entry)| (entry.id, &entry.handle))
            .collect();
        handles.sort_unstable_by_key(|&(id, _)| id);
        for (_, handle) in handles {
            handle.abort();
        }
    }

    /// Empties the set without aborting its tasks, which run on.
    pub fn detach_all(&mut self) {
        self.entries.clear();
        self.finished.queue.lock().clear();
    }
}

impl<T> Default for JoinSet<T> {
    fn default() -> JoinSet<T> {
        JoinSet::new()
    }
}

impl<T> Drop for JoinSet<T> {
    /// Aborts every task still in the set.
    fn drop(&mut self) {
        self.abort_all();
    }
}

impl<T> fmt::Debug for JoinSet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinSet").field("len", &self.len()).finish()
    }
}

impl<T, F> Extend<F> for JoinSet<T>
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    /// Spawns every future on the current runtime and adds it to the set.
    ///
    /// # Panics
    ///
    /// If called outside a runtime.
    #[track_caller]
    fn extend<I: IntoIterator<Item = F>>(&mut self, futures: I) {
        for future in futures {
            self.spawn(future);
        }
    }
}

impl<T, F> FromIterator<F> for JoinSet<T>
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    /// Spawns every future on the current runtime.
    ///
    /// # Panics
    ///
    /// If called outside a runtime.
    #[track_caller]
    fn from_iter<I: IntoIterator<Item = F>>(futures: I) -> JoinSet<T> {
        let mut set = JoinSet::new();
        set.extend(futures);
        set
    }
}

/// A join's output without the task's id.
fn without_id<T>(result: Result<(Id, T), JoinError>) -> Result<T, JoinError> {
    result.map(|(_, output)| output)
}
