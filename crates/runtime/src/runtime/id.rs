//! [`Id`]: a runtime's identity.

use std::fmt;
use std::num::NonZeroU64;

use crate::loom::{Ordering, StaticAtomicU64};

/// The next runtime id to give, for the whole process.
static NEXT: StaticAtomicU64 = StaticAtomicU64::new(1);

/// A runtime's id, which [`Handle::id`](crate::Handle::id) gives: unique among the runtimes
/// of the process, as tokio's is among those alive at once. Runtimes are numbered from 1 as
/// they are built; it prints as that number.
///
/// # Examples
///
/// ```
/// let a = escapement::Runtime::new().unwrap();
/// let b = escapement::Runtime::new().unwrap();
/// assert_ne!(a.handle().id(), b.handle().id());
/// assert_eq!(a.block_on(async { escapement::Handle::current().id() }), a.handle().id());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Id(NonZeroU64);

impl Id {
    /// A fresh id, never given before in this process.
    pub(crate) fn next() -> Id {
        // Relaxed: ids need only be unique, which the atomic increment gives.
        let raw = NEXT.fetch_add(1, Ordering::Relaxed);
        Id(NonZeroU64::new(raw).expect("runtime ids start at 1 and take centuries to wrap"))
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}
