//! Tasks: spawned futures, their handles, and the state machine that runs them; and
//! task-local storage ([`LocalKey`]).
//!
//! The design note of the state machine is in `state.rs`, that of the memory in `raw.rs`,
//! that of task-local storage in `task_local/mod.rs`.

mod abort;
mod block_in_place;
mod blocking;
pub mod coop;
mod error;
mod harness;
mod id;
mod join;
mod join_set;
pub(crate) mod list;
mod local;
mod pool;
mod raw;
mod slot;
mod spawn;
mod state;
mod task_local;
mod waker;
mod yield_now;

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::ptr::NonNull;

pub use abort::AbortHandle;
pub use block_in_place::block_in_place;
pub use blocking::spawn_blocking;
pub(crate) use blocking::{spawn_blocking_on, BlockingJob};
/// [`coop::consume_budget`], at the path where tokio 1.39 to 1.43 had it (later tokio keeps
/// it there too, deprecated).
pub use coop::consume_budget;
pub use coop::{unconstrained, Unconstrained};
pub use error::JoinError;
pub use id::{id, try_id, Id};
pub use join::JoinHandle;
pub use join_set::JoinSet;
pub use local::{spawn_local, LocalEnterGuard, LocalSet};
pub(crate) use pool::{BlockingPool, Job};
pub(crate) use slot::Slot;
pub use task_local::{AccessError, LocalKey};
pub use yield_now::yield_now;

pub use spawn::spawn;
pub(crate) use spawn::{boxed_if_large, is_large};

/// The futures of this module that have a name of their own.
pub mod futures {
    pub use super::local::RunUntil;
    pub use super::task_local::TaskLocalFuture;
}

use crate::time::driver::ClockHold;
use raw::{Cell, Header};

/// What a task needs of the scheduler that owns it.
pub(crate) trait Schedule: Send + Sync + Sized + 'static {
    /// Puts a notified task on a run queue.
    fn schedule(&self, task: Notified<Self>);

    /// Puts a task that was woken while it ran, by itself or by another thread, back in
    /// line once its poll returned `Pending`: by default as any other, while a scheduler
    /// whose LIFO slot runs a woken task next puts this one at the back of its queue, as
    /// tokio does, so that a task that wakes itself in a loop lets the others run.
    fn schedule_woken_while_running(&self, task: Notified<Self>) {
        self.schedule(task);
    }

    /// Puts a task that woke itself to yield ([`yield_now`], `time::advance`, or a spent
    /// budget) back in line: by default as any other, while a scheduler that defers such
    /// tasks holds it back.
    fn schedule_yielded(&self, task: Notified<Self>) {
        self.schedule(task);
    }

    /// Takes a completed task out of the owned list; returns the list's reference if the list
    /// still held it.
    fn release(&self, task: &Task<Self>) -> Option<Task<Self>>;

    /// Asked by a wake or an abort of one of the tasks, in a process where a clock was ever
    /// paused, before it marks the task: the hold that keeps the runtime's paused clock from
    /// moving until the task is queued (`Driver::hold_clock`), if the calling thread needs
    /// one. By default none: the scheduler's tasks do not wait on a paused clock.
    fn hold_clock(&self) -> Option<ClockHold> {
        None
    }
}

/// One owned reference to a task.
pub(crate) struct Task<S: 'static> {
    header: NonNull<Header>,
    _scheduler: PhantomData<S>,
}

// SAFETY: a task reference is a pointer to shared task state behind atomics and the
// protocols of `state.rs`. Futures in it are `Send`, or polled and dropped on one thread only
// (a local task's); moving a reference never touches the output (`raw.rs`, "Who may touch
// what").
unsafe impl<S> Send for Task<S> {}
// SAFETY: as above; `&Task` only reads the header.
unsafe impl<S> Sync for Task<S> {}

/// A task that is scheduled to run: the reference a run queue holds.
pub(crate) struct Notified<S: 'static>(Task<S>);

impl<S: 'static> Task<S> {
    /// # Safety
    ///
    /// The caller gives the new `Task` one reference to a live task scheduled by `S`.
    pub(crate) unsafe fn from_raw(header: NonNull<Header>) -> Self {
        Task {
            header,
            _scheduler: PhantomData,
        }
    }

    fn header(&self) -> &Header {
        // SAFETY: the reference keeps the task alive.
        unsafe { self.header.as_ref() }
    }

    pub(crate) fn id(&self) -> u64 {
        self.header().id
    }

    pub(crate) fn ptr_eq(&self, other: &Task<S>) -> bool {
        self.header == other.header
    }

    /// The key of the task in its owned-list shard.
    ///
    /// # Safety
    ///
    /// The caller holds the lock of the task's owned-list shard.
    unsafe fn owned_key(&self) -> usize {
        // SAFETY: the caller holds the shard lock, which serializes every access.
        self.header().owned_key.with(|key| unsafe { *key })
    }

    /// Records the task's key in its owned-list shard.
    ///
    /// # Safety
    ///
    /// As for [`owned_key`](Self::owned_key).
    unsafe fn set_owned_key(&self, key: usize) {
        // SAFETY: as in `owned_key`.
        self.header()
            .owned_key
            .with_mut(|slot| unsafe { *slot = key });
    }

    /// Cancels the task unless a thread is running it, giving up this reference (the owned
    /// list's at runtime shutdown, or a notification's).
    pub(crate) fn shutdown(self) {
        let header = self.header;
        std::mem::forget(self);
        // SAFETY: this reference passes to the shutdown, which releases it.
        unsafe { (header.as_ref().vtable.shutdown)(header) };
    }
}

impl<S: 'static> Drop for Task<S> {
    fn drop(&mut self) {
        if self.header().state.ref_dec(1) {
            // SAFETY: that was the last reference.
            unsafe { (self.header().vtable.dealloc)(self.header) };
        }
    }
}

impl<S: 'static> Notified<S> {
    /// The task's id.
    pub(crate) fn id(&self) -> u64 {
        self.0.id()
    }

    /// Whether the task was aborted (or the runtime shut down) since it was made: its next
    /// run cancels it rather than polling it.
    pub(crate) fn is_cancelled(&self) -> bool {
        self.0.header().state.load().is_cancelled()
    }

    /// Runs the task (polls it, or cancels it if aborted), consuming the notification.
    pub(crate) fn run(self) {
        let header = self.0.header;
        std::mem::forget(self);
        // SAFETY: the `Notified` reference passes to the poll.
        unsafe { (header.as_ref().vtable.poll)(header) };
    }

    /// Cancels the task without polling it, consuming the notification: for a task no
    /// thread will ever run. Its join handle sees a cancelled `JoinError`.
    pub(crate) fn cancel(self) {
        self.0.shutdown();
    }

    /// Gives the reference up as a pointer, for [`from_raw`](Self::from_raw) to take back.
    fn into_raw(self) -> NonNull<Header> {
        let header = self.0.header;
        std::mem::forget(self);
        header
    }

    /// # Safety
    ///
    /// `header` came from [`into_raw`](Self::into_raw) of a `Notified<S>`, and is taken back
    /// once.
    unsafe fn from_raw(header: NonNull<Header>) -> Self {
        // SAFETY: the caller gives back the reference `into_raw` gave up.
        Notified(unsafe { Task::from_raw(header) })
    }
}

impl<S: 'static> fmt::Debug for Task<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Task")
            .field("id", &self.id())
            .field("state", &self.header().state)
            .finish()
    }
}

impl<S: 'static> fmt::Debug for Notified<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Notified").field(&self.0).finish()
    }
}

/// Allocates a task: its owned-list reference, its first notification and its join handle.
pub(crate) fn new<F, S>(
    future: F,
    scheduler: S,
    id: u64,
) -> (Task<S>, Notified<S>, JoinHandle<F::Output>)
where
    F: Future + Send + 'static,
    F::Output: 'static,
    S: Schedule,
{
    let header = Cell::allocate(future, scheduler, id);
    // SAFETY: a new task starts with three references, one for each handle made here.
    unsafe {
        (
            Task::from_raw(header),
            Notified(Task::from_raw(header)),
            JoinHandle::new(header),
        )
    }
}
