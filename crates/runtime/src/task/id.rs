//! [`Id`]: a task's identity, and [`id`]/[`try_id`], which read the one of the task running
//! on this thread.
//!
//! Tasks are numbered from 1 as they are spawned (blocking closures included), in one
//! sequence for the whole process, runtimes and `LocalSet`s alike. The harness records the number in a thread-local around everything it runs of a task on the
//! task's behalf: each poll, the drop of the future when it completes, panics or is
//! cancelled, and the drop of an output nobody reads. The previous value comes back
//! afterwards, on unwinding too. It is one store and one load of a thread-local per poll,
//! beside the cooperative budget's.

use std::cell::Cell;
use std::fmt;
use std::num::NonZeroU64;

#[cfg(not(loom))]
use crate::loom::StaticAtomicU64;
use crate::loom::{thread_local_const, Ordering};

/// A task's id: unique among every task of the process, whatever its runtime or
/// [`LocalSet`](crate::task::LocalSet), as tokio's are (a `u64` that would take centuries to
/// wrap).
///
/// [`JoinHandle::id`](crate::JoinHandle::id), [`AbortHandle::id`](crate::task::AbortHandle::id)
/// and [`JoinError::id`](crate::JoinError::id) give it from outside the task, [`id`] and
/// [`try_id`] from inside. It prints as a number.
///
/// # Examples
///
/// ```
/// # escapement::Runtime::new().unwrap().block_on(async {
/// let task = escapement::spawn(async { escapement::task::id() });
/// let outside = task.id();
/// assert_eq!(task.await.unwrap(), outside);
/// # });
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Id(NonZeroU64);

/// The next id to give. One sequence for the process, so that the tasks of two runtimes, or
/// of a runtime and a `LocalSet`, never share an id.
#[cfg(not(loom))]
static NEXT: StaticAtomicU64 = StaticAtomicU64::new(1);

/// Where a task list takes its tasks' ids from: the process's one sequence. Under loom, a
/// counter of the list's own instead, from 1: a list picks a task's shard by its id, and a
/// model must see the same ids in every execution it explores, which a `static` that lives
/// on from one execution to the next would not give.
#[derive(Default)]
pub(crate) struct IdSource {
    #[cfg(loom)]
    next: crate::loom::AtomicU64,
}

// Relaxed, in both: ids need only be unique, which the atomic increment gives.
impl IdSource {
    /// A fresh task id, never given before in this process.
    #[cfg(not(loom))]
    pub(crate) fn next(&self) -> u64 {
        NEXT.fetch_add(1, Ordering::Relaxed)
    }

    /// A fresh task id, never given before by this source.
    #[cfg(loom)]
    pub(crate) fn next(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed) + 1
    }
}

impl Id {
    /// The id numbered `raw`.
    ///
    /// # Panics
    ///
    /// If `raw` is zero: the runtime numbers its tasks from 1.
    pub(crate) fn new(raw: u64) -> Id {
        Id(NonZeroU64::new(raw).expect("task ids start at 1"))
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl fmt::Debug for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Id({})", self.0)
    }
}

/// No task runs on the thread.
const NONE: u64 = 0;

thread_local_const! {
    /// The number of the task the thread runs on its behalf, or [`NONE`].
    static CURRENT: Cell<u64> = Cell::new(NONE);
}

/// Runs `f` as the task numbered `id`: [`try_id`] inside gives it. The previous value comes
/// back afterwards, also when `f` panics.
#[inline]
pub(crate) fn run_as<R>(id: u64, f: impl FnOnce() -> R) -> R {
    crate::util::with_local(&CURRENT, id, f)
}

/// The id of the task running on this thread.
///
/// Inside a task's future, its destructor (when the task completes or is cancelled), or a
/// closure passed to [`spawn_blocking`](crate::task::spawn_blocking), this is the id its
/// [`JoinHandle::id`](crate::JoinHandle::id) gives.
///
/// # Examples
///
/// ```
/// use escapement::task;
///
/// # escapement::Runtime::new().unwrap().block_on(async {
/// let blocking = task::spawn_blocking(task::id);
/// let expected = blocking.id();
/// assert_eq!(blocking.await.unwrap(), expected);
/// # });
/// ```
///
/// # Panics
///
/// If no task is running on the thread: outside the runtime, or directly in the future that
/// `block_on` drives, which is not a task. [`try_id`] returns `None` there instead.
#[track_caller]
pub fn id() -> Id {
    try_id().expect(
        "escapement::task::id() must be called from inside a task (not from the future \
         block_on drives, nor outside a runtime); try_id() returns None there",
    )
}

/// The id of the task running on this thread, or `None` where no task is running: outside
/// the runtime, or directly in the future that `block_on` drives.
///
/// # Examples
///
/// ```
/// use escapement::task;
///
/// assert_eq!(task::try_id(), None);
/// # escapement::Runtime::new().unwrap().block_on(async {
/// let task = escapement::spawn(async { task::try_id() });
/// let expected = task.id();
/// assert_eq!(task.await.unwrap(), Some(expected));
/// # });
/// ```
pub fn try_id() -> Option<Id> {
    let raw = CURRENT.try_with(Cell::get).unwrap_or(NONE);
    NonZeroU64::new(raw).map(Id)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn an_id_prints_as_its_number() {
        let id = Id::new(42);
        assert_eq!(id.to_string(), "42");
        assert_eq!(format!("{id:?}"), "Id(42)");
    }

    #[test]
    fn run_as_nests_and_restores_on_panic() {
        assert_eq!(try_id(), None);
        run_as(7, || {
            assert_eq!(try_id(), Some(Id::new(7)));
            let caught = std::panic::catch_unwind(|| run_as(9, || panic!("inner")));
            assert!(caught.is_err());
            assert_eq!(try_id(), Some(Id::new(7)));
        });
        assert_eq!(try_id(), None);
    }
}
