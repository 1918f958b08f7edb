//! [`spawn`]: a task onto the current runtime; and the boxing of large futures and closures
//! where they enter the runtime.
//!
//! # Large futures and closures
//!
//! A future passed to `spawn` goes by value down the calls that make its task, and an
//! unoptimised build copies it into the frame of each: a future of 256 KiB (a buffer held
//! across an `.await`) overflowed the 2 MiB stack of the thread that spawned it, before any
//! task ran. So a future or a closure larger than [`BOX_THRESHOLD`] is boxed at the public
//! function it is given to, before it is passed on (every spawn, `spawn_blocking`), as tokio
//! boxes it, at the same sizes. A smaller one is moved as it is: the size is known when the
//! code is compiled, so its path neither allocates nor tests anything more.
//!
//! `block_on` is not boxed: it pins the future where it first lands, in its own frame, and
//! passes it on by reference, so a box would only add the copies into `Box::pin`. With a
//! 2 MiB stack it takes a future of 512 KiB built in its argument, boxed or not (a case of
//! `tests/large_futures.rs`), and neither way one of 768 KiB.

use std::future::Future;

use crate::runtime::Handle;
use crate::JoinHandle;

/// The size in bytes above which a future or a closure is boxed where it enters the runtime
/// (see "Large futures and closures" above): 2 KiB in an unoptimised build, whose calls each
/// copy it, and 16 KiB in an optimised one, whose inlined calls mostly do not.
pub(crate) const BOX_THRESHOLD: usize = if cfg!(debug_assertions) {
    2 * 1024
} else {
    16 * 1024
};

/// Whether `value` is boxed where it enters the runtime.
#[inline(always)]
pub(crate) const fn is_large<T>(_value: &T) -> bool {
    size_of::<T>() > BOX_THRESHOLD
}

/// Evaluates `$call`, with `$value` (a local) first moved into a box by `$boxed`
/// (`Box::pin` for a future, `Box::new` for a closure) if it is large (see [`BOX_THRESHOLD`]).
/// `$call` names `$value` whichever it is.
macro_rules! boxed_if_large {
    ($boxed:path, $value:ident => $call:expr) => {
        if $crate::task::is_large(&$value) {
            let $value = $boxed($value);
            $call
        } else {
            $call
        }
    };
}
pub(crate) use boxed_if_large;

/// Spawns a task onto the current runtime.
///
/// # Examples
///
/// ```
/// # let rt = escapement::Runtime::new().unwrap();
/// rt.block_on(async {
///     let task = escapement::spawn(async { "hello" });
///     assert_eq!(task.await.unwrap(), "hello");
/// });
/// ```
///
/// # Panics
///
/// If called outside a runtime; use [`Handle::spawn`] there.
#[track_caller]
pub fn spawn<F>(future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let handle = Handle::current_for("escapement::spawn");
    boxed_if_large!(Box::pin, future => handle.spawn(future))
}
