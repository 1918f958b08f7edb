//! The cooperative budget: how many times one poll of a task may find the runtime's futures
//! ready before they make it yield.
//!
//! A task that loops over futures that are always ready (`sleep(Duration::ZERO)`, a timeout
//! already past, a finished `JoinHandle`) would otherwise never return to its worker, and
//! the other tasks queued there, or the one that would end the loop, would never run. So,
//! as in tokio:
//!
//! - Each poll of a task (by a worker, and each poll of `block_on`'s future) starts with a
//!   budget of 128 units (tokio's figure), in a thread-local; the previous value comes back
//!   after it, so a nested `block_on` on a blocking thread keeps its own.
//! - The runtime's futures that can be ready again and again (`Sleep`, and through it
//!   `Interval`; `Timeout`'s deadline; `JoinHandle`) first look at the budget. With none
//!   left they wake their task and return `Pending`, so its worker holds the task back until
//!   the other tasks ready there have run, as after `yield_now`; otherwise they poll, and a
//!   `Ready` result spends one unit. A `Pending` result spends nothing.
//! - Outside any task poll (another executor polling one of these futures), inside
//!   [`unconstrained`] and inside a `spawn_blocking` closure, there is no budget. A closure
//!   is one poll of its task, however long it runs, so an executor inside it (`block_on`
//!   over the runtime's futures) would otherwise find the budget spent after 128 ready
//!   polls and never get it back.
//! - `JoinSet::join_next` spends a unit per output it hands out (`try_join_next`, which
//!   cannot wait, spends none), and polls its tasks' handles without the budget: each
//!   entry's waker requeues the entry, so a handle that returned `Pending` for want of
//!   budget would come straight back to the same loop.
//!
//! A `Timeout` whose inner future spent the last unit still looks at its deadline without
//! the budget, so a future that is ready once the timeout lets it run again is not reported
//! as timed out for want of budget.
//!
//! The cost is a thread-local read on each poll of these futures, a write when they are
//! ready, and a write and a restore around each task poll; the state is per thread, so no
//! other thread is involved.
//!
//! The module is public under tokio's name, `task::coop`: [`consume_budget`],
//! [`has_budget_remaining`], [`poll_proceed`] and [`cooperative`] let code of its own take
//! part, and [`unconstrained`] opts out. Inside the runtime a future checks the budget first
//! and spends a unit once it is ready; [`poll_proceed`] spends first and gives the unit back
//! when its [`RestoreOnPending`] drops unspent, as tokio's does. Either way a `Pending`
//! result costs nothing.

use std::cell::Cell;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::loom::thread_local_const;

/// The units of budget a task poll starts with (tokio's figure).
const BUDGET: u8 = 128;

/// No budget: outside a task poll, or inside [`unconstrained`].
const UNCONSTRAINED: u8 = u8::MAX;

thread_local_const! {
    /// The budget left to the poll running on this thread.
    static LEFT: Cell<u8> = Cell::new(UNCONSTRAINED);
}

thread_local_const! {
    /// Set when the poll running on this thread woke its own task to yield
    /// ([`yield_now`](crate::task::yield_now), `time::advance`, or a spent budget): the
    /// worker then holds the task back until it has run the other tasks that are ready, as
    /// tokio, which defers such wakes, does (`scheduler/worker/held.rs`).
    static YIELDED: Cell<bool> = Cell::new(false);
}

/// The poll running on this thread woke its task to yield.
#[inline]
pub(crate) fn note_yield() {
    let _ = YIELDED.try_with(|yielded| yielded.set(true));
}

/// Whether the poll running on this thread has yielded so far; leaves the mark.
#[inline]
pub(crate) fn yield_noted() -> bool {
    YIELDED.try_with(Cell::get).unwrap_or(false)
}

/// Whether a poll on this thread yielded since the last call; clears the mark.
#[inline]
pub(crate) fn take_yield() -> bool {
    YIELDED
        .try_with(|yielded| yielded.replace(false))
        .unwrap_or(false)
}

/// The budget left, or [`UNCONSTRAINED`] where the thread-local is gone (a thread exiting).
fn left() -> u8 {
    LEFT.try_with(Cell::get).unwrap_or(UNCONSTRAINED)
}

/// Sets the budget for the duration of `f`, then puts the previous one back (also when `f`
/// panics).
fn with_left<R>(budget: u8, f: impl FnOnce() -> R) -> R {
    crate::util::with_local(&LEFT, budget, f)
}

/// Runs one poll of a task with a fresh budget.
#[inline]
pub(crate) fn budget<R>(f: impl FnOnce() -> R) -> R {
    with_left(BUDGET, f)
}

/// Runs `f` with no budget.
pub(crate) fn without_budget<R>(f: impl FnOnce() -> R) -> R {
    with_left(UNCONSTRAINED, f)
}

/// `Ready` if the task may poll one of the runtime's futures; with no budget left, wakes the
/// task (so it runs again, after the others) and returns `Pending`. Spends nothing.
#[inline]
pub(crate) fn poll_budget(cx: &mut Context<'_>) -> Poll<()> {
    if left() == 0 {
        note_yield();
        cx.waker().wake_by_ref();
        Poll::Pending
    } else {
        Poll::Ready(())
    }
}

/// Spends one unit: the future polled after [`poll_budget`] was ready.
#[inline]
pub(crate) fn made_progress() {
    let _ = LEFT.try_with(|left| {
        let budget = left.get();
        if budget != UNCONSTRAINED && budget > 0 {
            left.set(budget - 1);
        }
    });
}

/// Whether the running task has budget left: `false` once the runtime's futures it polls
/// would make it yield. Always `true` outside a task's poll and inside [`unconstrained`],
/// where there is no budget.
///
/// # Examples
///
/// ```
/// use escapement::task::coop::{consume_budget, has_budget_remaining};
///
/// # escapement::Runtime::new().unwrap().block_on(async {
/// let task = escapement::spawn(async {
///     let mut spent = 0;
///     while has_budget_remaining() {
///         consume_budget().await;
///         spent += 1;
///     }
///     spent
/// });
/// assert_eq!(task.await.unwrap(), 128);
/// # });
/// ```
#[inline]
pub fn has_budget_remaining() -> bool {
    left() != 0
}

/// Spends one unit of the running task's budget, as a runtime future that is ready does;
/// with none left, yields first (the task is woken at once and runs again after the others,
/// with a fresh budget). For a loop of work of its own that never awaits anything the
/// runtime knows, so that it still lets the worker's other tasks run now and then.
///
/// Outside a task's poll and inside [`unconstrained`] it is ready at once, and spends
/// nothing.
///
/// # Cancel safety
///
/// Dropped while it waits, it has spent nothing.
pub async fn consume_budget() {
    std::future::poll_fn(|cx| {
        if poll_budget(cx).is_pending() {
            return Poll::Pending;
        }
        made_progress();
        Poll::Ready(())
    })
    .await;
}

/// Spends one unit of the running task's budget ahead of some work that may or may not make
/// progress: `Ready` with a [`RestoreOnPending`] that gives the unit back when dropped, unless
/// [`RestoreOnPending::made_progress`] says the work made progress. With the budget spent, it
/// wakes the task (which runs again after the others, with a fresh budget) and returns
/// `Pending`.
///
/// This is for a future or stream of its own that can be ready again and again, so that a
/// task looping over it still lets its worker's other tasks run, as a loop over the
/// runtime's futures does. Drop the `RestoreOnPending` within the poll that got it: dropped in
/// a later one, it would put back a budget from the earlier one (outside a task's poll it
/// puts back nothing).
///
/// Outside a task's poll and inside [`unconstrained`] it is always `Ready`, and spends
/// nothing.
///
/// # Examples
///
/// A stream that always has an item, made to take part in the budget:
///
/// ```
/// use std::pin::Pin;
/// use std::task::{ready, Context, Poll};
///
/// use escapement::task::coop;
/// use futures::{Stream, StreamExt};
///
/// struct Counter(u64);
///
/// impl Stream for Counter {
///     type Item = u64;
///
///     fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<u64>> {
///         let progress = ready!(coop::poll_proceed(cx));
///         self.0 += 1;
///         progress.made_progress();
///         Poll::Ready(Some(self.0))
///     }
/// }
///
/// # escapement::Runtime::new().unwrap().block_on(async {
/// let task = escapement::spawn(async {
///     let mut counter = Counter(0);
///     for _ in 0..128 {
///         counter.next().await;
///     }
///     // The next item waits for the task's next poll, after the worker's other tasks.
///     coop::has_budget_remaining()
/// });
/// assert!(!task.await.unwrap(), "128 items spent the task's budget");
/// # });
/// ```
#[inline]
pub fn poll_proceed(cx: &mut Context<'_>) -> Poll<RestoreOnPending> {
    std::task::ready!(poll_budget(cx));
    let before = left();
    made_progress();
    // Without a budget there was nothing to spend, nor is there anything to give back.
    Poll::Ready(RestoreOnPending {
        before: Cell::new((before != UNCONSTRAINED).then_some(before)),
        _not_send: PhantomData,
    })
}

/// The unit of budget [`poll_proceed`] spent, given back when this drops unless
/// [`made_progress`](RestoreOnPending::made_progress) was called.
///
/// It is neither `Send` nor `Sync`: the budget belongs to the thread whose task it counts.
///
/// ```compile_fail
/// fn send<T: Send>(_: T) {}
/// std::future::poll_fn(|cx| {
///     let restore = std::task::ready!(escapement::task::coop::poll_proceed(cx));
///     send(restore);
///     std::task::Poll::Ready(())
/// });
/// ```
#[must_use = "dropped at once, it gives the unit back: call `made_progress` once the work did"]
pub struct RestoreOnPending {
    /// The budget before the unit was spent; `None` once the unit is kept.
    before: Cell<Option<u8>>,
    _not_send: PhantomData<*mut ()>,
}

impl RestoreOnPending {
    /// Keeps the unit spent: the work [`poll_proceed`] allowed made progress (a future that
    /// was ready, a stream's item).
    pub fn made_progress(&self) {
        self.before.set(None);
    }
}

impl Drop for RestoreOnPending {
    fn drop(&mut self) {
        // Not where there is no budget (outside a task's poll, inside `unconstrained`): a
        // guard dropped there, after the poll that took it, would leave a budget behind.
        if let Some(before) = self.before.get() {
            let _ = LEFT.try_with(|left| {
                if left.get() != UNCONSTRAINED {
                    left.set(before);
                }
            });
        }
    }
}

impl fmt::Debug for RestoreOnPending {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RestoreOnPending")
            .field("restores", &self.before.get().is_some())
            .finish()
    }
}

/// Makes `future` take part in the cooperative budget, as tokio's `cooperative` does: each
/// poll takes a unit through [`poll_proceed`] (yielding if the budget is spent), polls
/// `future`, and keeps the unit only if it is ready. A `Pending` poll spends nothing: the
/// budget goes back to what it was before, also what `future` itself spent.
///
/// # Examples
///
/// ```
/// use escapement::task::coop::{cooperative, has_budget_remaining};
///
/// # escapement::Runtime::new().unwrap().block_on(async {
/// let task = escapement::spawn(async {
///     for _ in 0..128 {
///         cooperative(std::future::ready(())).await;
///     }
///     has_budget_remaining()
/// });
/// assert!(!task.await.unwrap(), "128 ready polls spend the budget");
/// # });
/// ```
pub fn cooperative<F: Future>(future: F) -> Coop<F> {
    Coop { future }
}

pin_project_lite::pin_project! {
    /// The future returned by [`cooperative`]: `F`, polled within the cooperative budget.
    /// Dropping it drops `F`.
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct Coop<F> {
        #[pin]
        future: F,
    }
}

impl<F: Future> Future for Coop<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let progress = std::task::ready!(poll_proceed(cx));
        let output = self.project().future.poll(cx);
        if output.is_ready() {
            progress.made_progress();
        }
        output
    }
}

impl<F> fmt::Debug for Coop<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Coop").finish_non_exhaustive()
    }
}

/// Runs `future` outside the cooperative budget: the runtime's futures it polls never make
/// it yield because the budget ran out.
///
/// A task normally gets a budget of 128 ready polls of the runtime's futures (`Sleep`,
/// `Interval`, `Timeout`, `JoinHandle`, `JoinSet::join_next`) per poll, after which they
/// return `Pending` once and wake it, so a loop over futures that are always ready still lets
/// the worker's other tasks run. Inside `unconstrained` such a loop keeps its worker until
/// something is really pending; use it only for a loop that must not be interrupted, and that
/// is known to end.
///
/// # Examples
///
/// ```
/// use escapement::time::{sleep, Duration};
///
/// # escapement::Runtime::new().unwrap().block_on(async {
/// // A thousand sleeps that are already over, in one poll.
/// escapement::task::unconstrained(async {
///     for _ in 0..1000 {
///         sleep(Duration::ZERO).await;
///     }
/// })
/// .await;
/// # });
/// ```
pub fn unconstrained<F: Future>(future: F) -> Unconstrained<F> {
    Unconstrained { future }
}

pin_project_lite::pin_project! {
    /// The future returned by [`unconstrained`]: `F`, polled outside the cooperative
    /// budget. Dropping it drops `F`.
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct Unconstrained<F> {
        #[pin]
        future: F,
    }
}

impl<F: Future> Future for Unconstrained<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let future = self.project().future;
        without_budget(|| future.poll(cx))
    }
}

impl<F> fmt::Debug for Unconstrained<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Unconstrained").finish_non_exhaustive()
    }
}
