//! Small helpers with no better home.

/// Makes a `Send` value `Sync` by allowing access only through ownership or `&mut`.
///
/// A shared reference to a `SyncWrapper` gives no access to the value, so sharing one across
/// threads can never share the value.
pub(crate) struct SyncWrapper<T>(T);

// SAFETY: `&SyncWrapper<T>` exposes nothing of `T` (there is no `&self` accessor), so it is
// fine to share one between threads whatever `T` is.
unsafe impl<T> Sync for SyncWrapper<T> {}

impl<T> SyncWrapper<T> {
    pub(crate) fn new(value: T) -> Self {
        SyncWrapper(value)
    }

    pub(crate) fn into_inner(self) -> T {
        self.0
    }
}
