//! [`TaskLocalFuture`]: a future run inside a scope of a task-local key.

use std::fmt;
use std::future::Future;
use std::mem;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::LocalKey;

pin_project_lite::pin_project! {
    /// The future returned by [`LocalKey::scope`]: `F`, polled with the key set to the
    /// scope's value `T`.
    ///
    /// Each poll puts the value in the key's thread-local, polls `F`, and puts the previous
    /// value back, also when `F`'s poll panics. When `F` completes it is dropped, inside the
    /// scope; the value stays until [`take_value`](TaskLocalFuture::take_value) or the drop.
    ///
    /// Dropped early, it drops `F` inside the scope, so `F`'s destructors can read the key,
    /// and then the value. (On a thread that is exiting and has destroyed the key's
    /// thread-local, or inside a [`with`](LocalKey::with) of the same key, `F` drops
    /// without it.)
    ///
    /// # Examples
    ///
    /// ```
    /// escapement::task_local! {
    ///     static NUMBER: u32;
    /// }
    ///
    /// # escapement::Runtime::new().unwrap().block_on(async {
    /// let future = NUMBER.scope(1, async { NUMBER.get() + 1 });
    /// assert_eq!(future.await, 2);
    /// # });
    /// ```
    ///
    /// # Panics
    ///
    /// A poll panics after the future has completed, and inside a
    /// [`with`](LocalKey::with) or [`try_with`](LocalKey::try_with) of the same key.
    #[must_use = "futures do nothing unless you `.await` or poll them"]
    pub struct TaskLocalFuture<T, F>
    where
        T: 'static,
    {
        key: &'static LocalKey<T>,
        // The scope's value, outside the thread-local between polls; empty after
        // `take_value`, and during a poll, unless an enclosing scope set the key.
        slot: Option<T>,
        // The inner future, until it completes.
        #[pin]
        future: Option<F>,
    }

    impl<T, F> PinnedDrop for TaskLocalFuture<T, F>
    where
        T: 'static,
    {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            let mut future = this.future;
            if mem::needs_drop::<F>() && future.is_some() {
                // Where the scope cannot be entered, `F` drops after this, without it.
                let _ = this.key.enter(this.slot, || future.set(None));
            }
        }
    }
}

impl<T: 'static, F> TaskLocalFuture<T, F> {
    pub(super) fn new(key: &'static LocalKey<T>, value: T, future: F) -> Self {
        TaskLocalFuture {
            key,
            slot: Some(value),
            future: Some(future),
        }
    }

    /// Takes the scope's value out of the future: `Some` the first time, `None` after.
    ///
    /// Before the future has completed, this takes the value from the inner future too:
    /// it runs on, if polled, with the key unset (even where an enclosing scope of the key
    /// set it), and is dropped without it.
    ///
    /// # Examples
    ///
    /// ```
    /// escapement::task_local! {
    ///     static NUMBER: u32;
    /// }
    ///
    /// # escapement::Runtime::new().unwrap().block_on(async {
    /// let mut future = Box::pin(NUMBER.scope(42, async { NUMBER.get() }));
    /// assert_eq!(future.as_mut().await, 42);
    /// assert_eq!(future.as_mut().take_value(), Some(42));
    /// assert_eq!(future.as_mut().take_value(), None);
    /// # });
    /// ```
    pub fn take_value(self: Pin<&mut Self>) -> Option<T> {
        self.project().slot.take()
    }
}

impl<T: 'static, F: Future> Future for TaskLocalFuture<T, F> {
    type Output = F::Output;

    #[track_caller]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let mut future = this.future;
        let polled = this.key.enter(this.slot, || {
            let poll = future.as_mut().as_pin_mut().map(|inner| inner.poll(cx));
            if let Some(Poll::Ready(_)) = poll {
                // Completed: drop it now, while the key is still set.
                future.set(None);
            }
            poll
        });
        match polled {
            Ok(Some(poll)) => poll,
            Ok(None) => panic!("`TaskLocalFuture` polled after completion"),
            Err(error) => error.panic(),
        }
    }
}

impl<T: fmt::Debug + 'static, F> fmt::Debug for TaskLocalFuture<T, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskLocalFuture")
            .field("value", &self.slot)
            .field("completed", &self.future.is_none())
            .finish()
    }
}
