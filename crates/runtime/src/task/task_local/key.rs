//! [`LocalKey`]: a task-local key, and the swap that enters one of its scopes.

use std::cell::RefCell;
use std::fmt;
use std::future::Future;
use std::mem;

use super::{AccessError, TaskLocalFuture};
use crate::loom::TaskLocalKey;

/// A key for task-local storage, declared with [`task_local!`](crate::task_local).
///
/// Unlike a thread-local, the key has no initial value: a scope sets it, around a future
/// ([`scope`](LocalKey::scope)) or a closure ([`sync_scope`](LocalKey::sync_scope)), and only
/// what runs inside that scope sees the value ([`with`](LocalKey::with),
/// [`get`](LocalKey::get)). The value belongs to the future, not to a thread: it moves with
/// the task between workers, and other tasks polled on the same worker never see it. A scope
/// inside another scope of the same key shadows it until the inner one ends.
///
/// # Examples
///
/// ```
/// escapement::task_local! {
///     static NUMBER: u32;
/// }
///
/// # escapement::Runtime::new().unwrap().block_on(async {
/// NUMBER
///     .scope(1, async {
///         assert_eq!(NUMBER.get(), 1);
///         NUMBER.scope(2, async { assert_eq!(NUMBER.get(), 2) }).await;
///         assert_eq!(NUMBER.get(), 1);
///     })
///     .await;
/// assert!(NUMBER.try_get().is_err());
/// # });
/// ```
pub struct LocalKey<T: 'static> {
    /// The thread-local that holds the value while a scope runs. `task_local!`'s expansion
    /// declares it in the invoking crate, inside a block, so that nothing but this key can
    /// name it, and hands it to [`LocalKey::__new`].
    inner: TaskLocalKey<RefCell<Option<T>>>,
}

/// Why a scope could not be entered.
#[derive(Debug)]
pub(super) enum EnterError {
    /// A `with` or `try_with` of the same key is running on this thread.
    Borrowed,
    /// The thread is exiting and has destroyed the key's thread-local.
    Destroyed,
}

impl EnterError {
    /// Panics with the reason, at the caller of the `#[track_caller]` chain.
    #[track_caller]
    pub(super) fn panic(self) -> ! {
        match self {
            EnterError::Borrowed => {
                panic!("cannot enter a task-local scope while the task-local storage is borrowed")
            }
            EnterError::Destroyed => panic!(
                "cannot enter a task-local scope during or after destruction of the \
                 underlying thread-local"
            ),
        }
    }
}

impl<T: 'static> LocalKey<T> {
    /// The key over `inner`, the thread-local that `task_local!` declares for it.
    ///
    /// For `task_local!`'s expansion only. The thread-local must be used by this key alone:
    /// a borrow of it held from outside makes the key's scopes panic.
    #[doc(hidden)]
    pub const fn __new(inner: TaskLocalKey<RefCell<Option<T>>>) -> LocalKey<T> {
        LocalKey { inner }
    }

    /// Wraps `future` in a scope of this key set to `value`: each poll of the returned
    /// [`TaskLocalFuture`] sets the key for the duration of `future`'s poll, and puts the
    /// previous value back afterwards.
    ///
    /// The value drops with the returned future, or comes back from
    /// [`TaskLocalFuture::take_value`].
    ///
    /// # Examples
    ///
    /// ```
    /// use escapement::time::{sleep, Duration};
    ///
    /// escapement::task_local! {
    ///     static NAME: &'static str;
    /// }
    ///
    /// # escapement::Runtime::new().unwrap().block_on(async {
    /// let task = escapement::spawn(NAME.scope("worker", async {
    ///     sleep(Duration::from_millis(1)).await;
    ///     NAME.get()
    /// }));
    /// assert_eq!(task.await.unwrap(), "worker");
    /// # });
    /// ```
    ///
    /// # Panics
    ///
    /// Polling the returned future panics inside a [`with`](LocalKey::with) or
    /// [`try_with`](LocalKey::try_with) of the same key, with a message that says the
    /// storage is borrowed; and after it has completed.
    pub fn scope<F>(&'static self, value: T, future: F) -> TaskLocalFuture<T, F>
    where
        F: Future,
    {
        TaskLocalFuture::new(self, value, future)
    }

    /// Runs `f` in a scope of this key set to `value`, and returns what it returns. The
    /// previous value comes back afterwards, also when `f` panics, and `value` drops.
    ///
    /// # Examples
    ///
    /// ```
    /// escapement::task_local! {
    ///     static DEPTH: u32;
    /// }
    ///
    /// let doubled = DEPTH.sync_scope(21, || DEPTH.get() * 2);
    /// assert_eq!(doubled, 42);
    /// assert!(DEPTH.try_get().is_err());
    /// ```
    ///
    /// # Panics
    ///
    /// Inside a [`with`](LocalKey::with) or [`try_with`](LocalKey::try_with) of the same
    /// key, with a message that says the storage is borrowed; and if `f` panics, with its
    /// panic.
    #[track_caller]
    pub fn sync_scope<F, R>(&'static self, value: T, f: F) -> R
    where
        F: FnOnce() -> R,
    {
        let mut slot = Some(value);
        match self.enter(&mut slot, f) {
            Ok(output) => output,
            Err(error) => error.panic(),
        }
    }

    /// Runs `f` with `slot`'s content in the key's thread-local and the thread-local's
    /// previous content in `slot`, then swaps them back: when `f` returns, and when it
    /// panics.
    ///
    /// # Errors
    ///
    /// An [`EnterError`] when the thread-local cannot be swapped; `f` does not run then.
    pub(super) fn enter<R>(
        &'static self,
        slot: &mut Option<T>,
        f: impl FnOnce() -> R,
    ) -> Result<R, EnterError> {
        /// Swaps the scope's value back out of the thread-local when dropped.
        struct SwapBack<'a, T: 'static> {
            key: &'static LocalKey<T>,
            slot: &'a mut Option<T>,
        }

        impl<T: 'static> Drop for SwapBack<'_, T> {
            fn drop(&mut self) {
                // Neither `with` nor `borrow_mut` fails here: the thread-local was alive when
                // the scope was entered, and its destructor cannot run on this thread while
                // this call is on the stack; and every borrow taken inside the scope ended
                // with the `with` closure that took it (no guard is handed out, and the
                // thread-local is private to this key).
                self.key
                    .inner
                    .with(|cell| mem::swap(self.slot, &mut *cell.borrow_mut()));
            }
        }

        self.inner
            .try_with(|cell| {
                let mut current = cell.try_borrow_mut().map_err(|_| EnterError::Borrowed)?;
                mem::swap(slot, &mut *current);
                Ok(())
            })
            .map_err(|_| EnterError::Destroyed)??;
        let _swap_back = SwapBack { key: self, slot };
        Ok(f())
    }

    /// Runs `f` with a reference to the value set by the innermost scope of this key around
    /// the caller, and returns what it returns.
    ///
    /// # Examples
    ///
    /// ```
    /// escapement::task_local! {
    ///     static USER: String;
    /// }
    ///
    /// # escapement::Runtime::new().unwrap().block_on(async {
    /// USER.scope("ada".to_string(), async {
    ///     let length = USER.with(|user| user.len());
    ///     assert_eq!(length, 3);
    /// })
    /// .await;
    /// # });
    /// ```
    ///
    /// # Panics
    ///
    /// If no scope around the caller has set the key, with the message `cannot access a
    /// task-local storage value without setting it first`; [`try_with`](LocalKey::try_with)
    /// does not panic.
    #[track_caller]
    pub fn with<F, R>(&'static self, f: F) -> R
    where
        F: FnOnce(&T) -> R,
    {
        match self.try_with(f) {
            Ok(output) => output,
            Err(_) => panic!("cannot access a task-local storage value without setting it first"),
        }
    }

    /// As [`with`](LocalKey::with), or an error where no scope has set the key.
    ///
    /// # Examples
    ///
    /// ```
    /// escapement::task_local! {
    ///     static USER: String;
    /// }
    ///
    /// assert!(USER.try_with(|user| user.len()).is_err());
    /// let length = USER.sync_scope("ada".to_string(), || USER.try_with(|user| user.len()));
    /// assert_eq!(length, Ok(3));
    /// ```
    ///
    /// # Errors
    ///
    /// [`AccessError`] if no scope around the caller has set the key, or if the thread is
    /// exiting and has destroyed its thread-locals; `f` does not run then.
    pub fn try_with<F, R>(&'static self, f: F) -> Result<R, AccessError>
    where
        F: FnOnce(&T) -> R,
    {
        // A destroyed thread-local is outside every scope too. The shared borrow cannot
        // fail: the only mutable ones are the swaps, which run no other code.
        self.inner
            .try_with(|cell| cell.borrow().as_ref().map(f))
            .ok()
            .flatten()
            .ok_or_else(AccessError::new)
    }
}

impl<T: Clone + 'static> LocalKey<T> {
    /// A clone of the value set by the innermost scope of this key around the caller.
    ///
    /// # Examples
    ///
    /// ```
    /// escapement::task_local! {
    ///     static NUMBER: u32;
    /// }
    ///
    /// # escapement::Runtime::new().unwrap().block_on(async {
    /// NUMBER.scope(7, async { assert_eq!(NUMBER.get(), 7) }).await;
    /// # });
    /// ```
    ///
    /// # Panics
    ///
    /// As [`with`](LocalKey::with): if no scope has set the key;
    /// [`try_get`](LocalKey::try_get) does not panic.
    #[track_caller]
    pub fn get(&'static self) -> T {
        self.with(T::clone)
    }

    /// As [`get`](LocalKey::get), or an error where no scope has set the key.
    ///
    /// # Examples
    ///
    /// ```
    /// escapement::task_local! {
    ///     static NUMBER: u32;
    /// }
    ///
    /// assert!(NUMBER.try_get().is_err());
    /// assert_eq!(NUMBER.sync_scope(7, || NUMBER.try_get()), Ok(7));
    /// ```
    ///
    /// # Errors
    ///
    /// As [`try_with`](LocalKey::try_with).
    pub fn try_get(&'static self) -> Result<T, AccessError> {
        self.try_with(T::clone)
    }
}

impl<T: 'static> fmt::Debug for LocalKey<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalKey").finish_non_exhaustive()
    }
}
