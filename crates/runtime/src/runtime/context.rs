//! The runtime a thread is in: set by worker threads, `block_on` and `Handle::enter`.

use std::cell::{Cell, RefCell};
use std::marker::PhantomData;

use super::Handle;
use crate::loom::thread_local_const;

thread_local_const! {
    /// The handle of the runtime the thread is in.
    static CURRENT: RefCell<Option<Handle>> = RefCell::new(None);
}

thread_local_const! {
    /// How many context guards the thread holds, so each can check it is the innermost when
    /// it drops.
    static DEPTH: Cell<usize> = Cell::new(0);
}

thread_local_const! {
    /// Set while the thread runs `block_on`, so a nested one is refused, to the flavor of the
    /// runtime whose `block_on` it is.
    static BLOCKING: Cell<BlockOn> = Cell::new(BlockOn::No);
}

/// Which `block_on` a thread is in.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum BlockOn {
    /// None.
    No,
    /// A multi-threaded runtime's.
    MultiThread,
    /// A current-thread runtime's: the thread runs its tasks, or waits to.
    CurrentThread,
}

/// Runs `f` with the current runtime's handle, if the thread is in one.
#[inline]
pub(crate) fn with_handle<R>(f: impl FnOnce(&Handle) -> R) -> Option<R> {
    try_with_handle(f).ok().flatten()
}

/// The thread is exiting and its context is gone.
pub(crate) struct Destroyed;

/// [`with_handle`], telling a thread in no runtime from one whose context is gone.
#[inline]
pub(crate) fn try_with_handle<R>(f: impl FnOnce(&Handle) -> R) -> Result<Option<R>, Destroyed> {
    CURRENT
        .try_with(|current| current.borrow().as_ref().map(f))
        .map_err(|_| Destroyed)
}

/// Makes `handle` current until the guard drops, restoring what was current before. Guards
/// nest: they must be dropped in the reverse order they were made, on the thread that made
/// them (the guard is not `Send`). A panic, where the context is gone, names the caller's
/// caller.
#[track_caller]
pub(crate) fn enter(handle: Handle) -> ContextGuard {
    try_enter(handle).expect("the thread's runtime context is gone: the thread is exiting")
}

/// [`enter`], unless the thread is exiting and its context is already gone (a runtime
/// dropped by another thread-local's destructor): then nothing changes.
pub(crate) fn try_enter(handle: Handle) -> Option<ContextGuard> {
    let previous = CURRENT
        .try_with(|current| current.replace(Some(handle)))
        .ok()?;
    // A plain `Cell` with a constant initializer and no destructor: always there.
    let depth = DEPTH.with(|depth| {
        depth.set(depth.get() + 1);
        depth.get()
    });
    Some(ContextGuard {
        previous,
        depth,
        _not_send: PhantomData,
    })
}

/// Restores the previously current runtime.
pub(crate) struct ContextGuard {
    previous: Option<Handle>,
    /// The thread's guard count once this one was made: its place in the nesting.
    depth: usize,
    /// The guard belongs to the thread whose context it changed.
    _not_send: PhantomData<SyncNotSend>,
}

/// A marker that is `Sync` but not `Send`: a guard stays on its thread, and a shared
/// reference to one, which exposes nothing, may go anywhere (as tokio's `EnterGuard`).
struct SyncNotSend(PhantomData<*const ()>);

// SAFETY: `SyncNotSend` holds nothing that is ever read; it only withholds `Send`.
unsafe impl Sync for SyncNotSend {}

impl Drop for ContextGuard {
    fn drop(&mut self) {
        let innermost = DEPTH
            .try_with(|depth| {
                let innermost = depth.get() == self.depth;
                if innermost {
                    depth.set(self.depth - 1);
                }
                innermost
            })
            // The thread is exiting and its locals are gone: nothing to restore.
            .unwrap_or(true);
        if !innermost {
            // Dropped by a panic as it unwinds (a guard kept in a future whose poll
            // panicked): the context it would restore is stale, so it restores nothing and
            // leaves the guards made after it in place, as tokio's does.
            if crate::loom::panicking() {
                return;
            }
            panic!(
                "EnterGuard values dropped out of order: a runtime context guard must be \
                 dropped before the guards made ahead of it"
            );
        }
        let previous = self.previous.take();
        let _ = CURRENT.try_with(|current| *current.borrow_mut() = previous);
    }
}

/// Whether the thread is inside a `block_on` of any runtime.
pub(crate) fn is_blocking() -> bool {
    BLOCKING.try_with(Cell::get).unwrap_or(BlockOn::No) != BlockOn::No
}

/// Whether the thread is inside a current-thread runtime's `block_on` (whatever runtime's
/// context it entered since).
pub(crate) fn in_current_thread_block_on() -> bool {
    BLOCKING.try_with(Cell::get).unwrap_or(BlockOn::No) == BlockOn::CurrentThread
}

/// Marks the thread as inside `block_on` of a runtime of flavor `flavor`; `None` if it
/// already is inside one.
pub(crate) fn enter_blocking(flavor: BlockOn) -> Option<BlockingGuard> {
    // `then`, not `then_some`: a guard made and dropped on the refusal would clear the mark
    // of the `block_on` the thread is in.
    BLOCKING
        .with(|blocking| {
            let free = blocking.get() == BlockOn::No;
            if free {
                blocking.set(flavor);
            }
            free
        })
        .then(|| BlockingGuard(()))
}

pub(crate) struct BlockingGuard(());

/// Clears the mark of `block_on` until the guard drops, which sets it again: for
/// `block_in_place` called inside a `block_on`, whose closure may block on a future again.
/// `None` if the thread is not inside `block_on`.
pub(crate) fn exit_blocking() -> Option<ExitBlockingGuard> {
    let previous = BLOCKING
        .try_with(|blocking| blocking.replace(BlockOn::No))
        .unwrap_or(BlockOn::No);
    (previous != BlockOn::No).then_some(ExitBlockingGuard(previous))
}

pub(crate) struct ExitBlockingGuard(BlockOn);

impl Drop for ExitBlockingGuard {
    fn drop(&mut self) {
        let _ = BLOCKING.try_with(|blocking| blocking.set(self.0));
    }
}

impl Drop for BlockingGuard {
    fn drop(&mut self) {
        let _ = BLOCKING.try_with(|blocking| blocking.set(BlockOn::No));
    }
}
