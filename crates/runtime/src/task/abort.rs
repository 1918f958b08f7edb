//! [`AbortHandle`]: cancelling a spawned task without the right to await it.

use std::fmt;
use std::panic::{RefUnwindSafe, UnwindSafe};
use std::ptr::NonNull;

use super::id::Id;
use super::raw::Header;

/// A permission to cancel a spawned task, without the right to await its output.
///
/// Made by [`JoinHandle::abort_handle`](crate::JoinHandle::abort_handle) or returned by
/// [`JoinSet::spawn`](crate::task::JoinSet::spawn). It keeps the task's memory alive, not the
/// task: dropping it does nothing to the task.
///
/// # Examples
///
/// ```
/// # escapement::Runtime::new().unwrap().block_on(async {
/// use escapement::time::{sleep, Duration};
///
/// let task = escapement::spawn(sleep(Duration::from_secs(3600)));
/// let abort = task.abort_handle();
/// abort.abort();
/// assert!(task.await.unwrap_err().is_cancelled());
/// assert!(abort.is_finished());
/// # });
/// ```
pub struct AbortHandle {
    header: NonNull<Header>,
}

// SAFETY: an `AbortHandle` only reads the state word and submits aborts, both through atomics
// and the task's thread-safe vtable; it never touches the future or the output.
unsafe impl Send for AbortHandle {}
// SAFETY: as for `Send`: every method takes `&self` and is thread-safe.
unsafe impl Sync for AbortHandle {}

// A panic cannot leave an `AbortHandle` half-updated: its state is the task's atomic state
// word, which every operation moves in one step.
impl UnwindSafe for AbortHandle {}
impl RefUnwindSafe for AbortHandle {}

impl AbortHandle {
    /// # Safety
    ///
    /// `header` is a live task, and the caller gives the handle one reference to it.
    pub(crate) unsafe fn new(header: NonNull<Header>) -> AbortHandle {
        AbortHandle { header }
    }

    fn header(&self) -> &Header {
        // SAFETY: the handle's reference keeps the task alive.
        unsafe { self.header.as_ref() }
    }

    /// Cancels the task, as [`JoinHandle::abort`](crate::JoinHandle::abort) does.
    pub fn abort(&self) {
        // SAFETY: the handle's reference keeps the task alive for the call.
        unsafe { super::join::abort(self.header) };
    }

    /// Whether the task has finished: completed, panicked or been cancelled.
    pub fn is_finished(&self) -> bool {
        self.header().state.load().is_complete()
    }

    /// The task's id, as [`JoinError::id`](crate::JoinError::id) reports it.
    pub fn id(&self) -> Id {
        Id::new(self.header().id)
    }
}

impl Clone for AbortHandle {
    /// Another handle to the same task, holding its own reference to the task's memory.
    fn clone(&self) -> AbortHandle {
        self.header().state.ref_inc();
        // SAFETY: the header is live (this handle's reference), and the new handle gets the
        // reference just taken.
        unsafe { AbortHandle::new(self.header) }
    }
}

impl Drop for AbortHandle {
    fn drop(&mut self) {
        let header = self.header();
        if header.state.ref_dec(1) {
            // SAFETY: that was the last reference.
            unsafe { (header.vtable.dealloc)(self.header) };
        }
    }
}

impl fmt::Debug for AbortHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AbortHandle")
            .field("id", &self.id())
            .field("finished", &self.is_finished())
            .finish()
    }
}
