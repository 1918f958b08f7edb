//! [`JoinHandle`]: awaiting, aborting and detaching a spawned task.

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::panic::{RefUnwindSafe, UnwindSafe};
use std::pin::Pin;
use std::ptr::NonNull;
use std::task::{Context, Poll, Waker};

use super::abort::AbortHandle;
use super::coop;
use super::error::JoinError;
use super::id::Id;
use super::raw::{self, Header};

/// An owned permission to await a spawned task's output.
///
/// Awaiting it gives the task's output, or a [`JoinError`] if the task panicked or was
/// cancelled. Dropping it detaches the task, which runs on.
///
/// # Examples
///
/// ```
/// # let rt = escapement::Runtime::new().unwrap();
/// rt.block_on(async {
///     let handle = escapement::spawn(async { 6 * 7 });
///     assert_eq!(handle.await.unwrap(), 42);
/// });
/// ```
///
/// Unlike the crate's other futures it is not `#[must_use]`: spawning a task and dropping
/// its handle (`escapement::spawn(fut);`) is the normal way to detach it, as in tokio.
///
/// # Panics
///
/// Polled again after it returned `Ready`: the output has been handed over.
///
/// # Cancel safety
///
/// Dropping a `JoinHandle` future early detaches the task rather than cancelling it; use
/// [`abort`](JoinHandle::abort) to cancel.
pub struct JoinHandle<T> {
    header: NonNull<Header>,
    _output: PhantomData<T>,
}

// SAFETY: a `JoinHandle` moves the output `T` from the task to its owner, so it may cross
// threads when `T: Send`; the header it points at is shared task state behind atomics.
unsafe impl<T: Send> Send for JoinHandle<T> {}
// SAFETY: `&JoinHandle` only reads the state word (`is_finished`, `id`) and submits aborts,
// all thread-safe; what touches the output or the join waker's slot takes `&mut self`.
unsafe impl<T: Send> Sync for JoinHandle<T> {}

impl<T> Unpin for JoinHandle<T> {}

// A panic cannot leave a `JoinHandle` half-updated: it holds no state of its own beyond the
// task's atomic state word, and the output it takes moves out whole or not at all.
impl<T> UnwindSafe for JoinHandle<T> {}
impl<T> RefUnwindSafe for JoinHandle<T> {}

impl<T> JoinHandle<T> {
    /// # Safety
    ///
    /// `header` is a live task whose output is `T`, and the caller gives the handle the join
    /// handle's reference.
    pub(crate) unsafe fn new(header: NonNull<Header>) -> Self {
        JoinHandle {
            header,
            _output: PhantomData,
        }
    }

    fn header(&self) -> &Header {
        // SAFETY: the handle's reference keeps the task alive.
        unsafe { self.header.as_ref() }
    }

    /// Cancels the task: it is dropped instead of polled again, and awaiting this handle
    /// gives a [`JoinError`] that [`is_cancelled`](JoinError::is_cancelled). A task that
    /// already finished keeps its output. The task is dropped by a worker, soon after this
    /// returns, not by this call.
    pub fn abort(&self) {
        // SAFETY: the handle's reference keeps the task alive for the call.
        unsafe { abort(self.header) };
    }

    /// A handle that can cancel the task but not await it; it may outlive this one.
    pub fn abort_handle(&self) -> AbortHandle {
        self.header().state.ref_inc();
        // SAFETY: the task is alive (this handle holds a reference), and the new handle gets
        // the reference just taken.
        unsafe { AbortHandle::new(self.header) }
    }

    /// Whether the task has finished: completed, panicked or been cancelled.
    pub fn is_finished(&self) -> bool {
        self.header().state.load().is_complete()
    }

    /// Has `waker` woken when the task finishes, as a pending poll would, without reading the
    /// output. Returns whether the task has already finished; then `waker` may or may not be
    /// woken for it.
    pub(crate) fn register_waker(&mut self, waker: &Waker) -> bool {
        let header = self.header();
        // SAFETY: this is the join handle, and a null destination asks for no output.
        unsafe { (header.vtable.try_read_output)(self.header, std::ptr::null_mut(), waker) };
        header.state.load().is_complete()
    }

    /// The task's id, as [`JoinError::id`] reports it: unique among the process's tasks.
    pub fn id(&self) -> Id {
        Id::new(self.header().id)
    }
}

/// Cancels the task `header` names; see [`JoinHandle::abort`].
///
/// # Safety
///
/// The task is alive for the call: the caller holds a reference to it.
pub(crate) unsafe fn abort(header: NonNull<Header>) {
    // SAFETY: the caller keeps the task alive.
    let task = unsafe { header.as_ref() };
    // Held until the task is queued, as a wake holds it (`task/waker.rs`).
    // SAFETY: as above.
    let _hold = unsafe { raw::hold_clock(header) };
    if task.state.transition_to_notified_and_cancel() {
        // SAFETY: the transition took a reference for the `Notified`.
        unsafe { (task.vtable.schedule)(header) };
    }
}

impl<T> JoinHandle<T> {
    /// Polls for the output without the cooperative budget (see `task::coop`): for a
    /// `JoinSet`, which spends the budget once per output it hands out.
    pub(crate) fn poll_unconstrained(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<T, JoinError>> {
        let mut output: Poll<Result<T, JoinError>> = Poll::Pending;
        let header = self.header();
        // SAFETY: `output` has the type the task's vtable writes, and this is the join handle.
        unsafe {
            (header.vtable.try_read_output)(self.header, (&raw mut output).cast(), cx.waker());
        }
        output
    }
}

impl<T> Future for JoinHandle<T> {
    type Output = Result<T, JoinError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        std::task::ready!(coop::poll_budget(cx));
        let output = self.get_mut().poll_unconstrained(cx);
        if output.is_ready() {
            coop::made_progress();
        }
        output
    }
}

impl<T> Drop for JoinHandle<T> {
    fn drop(&mut self) {
        // SAFETY: this is the join handle, giving up its reference.
        unsafe { (self.header().vtable.drop_join_handle)(self.header) };
    }
}

impl<T> fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinHandle")
            .field("id", &self.id())
            .field("finished", &self.is_finished())
            .finish()
    }
}
