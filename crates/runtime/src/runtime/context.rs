//! The runtime a thread is in: set by worker threads, `block_on` and `Handle::enter`.

use std::cell::{Cell, RefCell};

use super::Handle;
use crate::loom::thread_local_const;

thread_local_const! {
    /// The handle of the runtime the thread is in.
    static CURRENT: RefCell<Option<Handle>> = RefCell::new(None);
}

thread_local_const! {
    /// Set while the thread runs `block_on`, so a nested one is refused.
    static BLOCKING: Cell<bool> = Cell::new(false);
}

/// Runs `f` with the current runtime's handle, if the thread is in one.
pub(crate) fn with_handle<R>(f: impl FnOnce(&Handle) -> R) -> Option<R> {
    CURRENT
        .try_with(|current| current.borrow().as_ref().map(f))
        .ok()
        .flatten()
}

/// Makes `handle` current until the guard drops, restoring what was current before.
pub(crate) fn enter(handle: Handle) -> ContextGuard {
    let previous = CURRENT.with(|current| current.replace(Some(handle)));
    ContextGuard { previous }
}

/// Restores the previously current runtime.
pub(crate) struct ContextGuard {
    previous: Option<Handle>,
}

impl Drop for ContextGuard {
    fn drop(&mut self) {
        let previous = self.previous.take();
        let _ = CURRENT.try_with(|current| *current.borrow_mut() = previous);
    }
}

/// Marks the thread as inside `block_on`; `None` if it already is.
pub(crate) fn enter_blocking() -> Option<BlockingGuard> {
    BLOCKING
        .with(|blocking| !blocking.replace(true))
        .then_some(BlockingGuard(()))
}

pub(crate) struct BlockingGuard(());

impl Drop for BlockingGuard {
    fn drop(&mut self) {
        let _ = BLOCKING.try_with(|blocking| blocking.set(false));
    }
}
