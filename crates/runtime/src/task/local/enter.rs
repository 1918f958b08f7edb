//! [`LocalSet::enter`]: a set made current on this thread, for `spawn_local`, until the
//! guard drops.

use std::fmt;
use std::marker::PhantomData;

use super::{LocalSet, Shared, CURRENT};
use crate::loom::Arc;

impl LocalSet {
    /// Makes this the set that [`task::spawn_local`](super::spawn_local) spawns onto on this
    /// thread, until the guard drops. The tasks spawned still run only when the set is
    /// driven.
    pub fn enter(&self) -> LocalEnterGuard {
        // `try_with`: a set may be dropped while the thread's locals are being destroyed,
        // and then no `spawn_local` can look for it.
        let previous = CURRENT
            .try_with(|current| current.replace(Some(self.shared.clone())))
            .ok()
            .flatten();
        LocalEnterGuard {
            previous,
            _owner_thread: PhantomData,
        }
    }
}

/// From [`LocalSet::enter`]: while it lives, [`task::spawn_local`](super::spawn_local)
/// spawns onto that set. Dropping it makes the set that was current before current again.
#[must_use = "the set stays current only while the guard lives"]
pub struct LocalEnterGuard {
    previous: Option<Arc<Shared>>,
    /// Restores this thread's current set, so it stays on this thread.
    _owner_thread: PhantomData<*const ()>,
}

impl Drop for LocalEnterGuard {
    fn drop(&mut self) {
        let previous = self.previous.take();
        // `try_with`: a guard may drop while the thread's locals are being destroyed. The
        // set it replaces is dropped after the cell is no longer borrowed: that may be the
        // last reference to a set, whose drop may run code that looks at the cell.
        let replaced = CURRENT.try_with(|current| current.replace(previous));
        drop(replaced);
    }
}

impl fmt::Debug for LocalEnterGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalEnterGuard").finish_non_exhaustive()
    }
}
