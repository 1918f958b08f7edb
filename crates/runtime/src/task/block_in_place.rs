//! [`block_in_place`]: run blocking code on the current worker thread, after handing the
//! worker itself to another thread.

use crate::runtime::context;
use crate::scheduler::worker;
use crate::task::coop;

/// Runs `f` on the current thread, which may block, after handing this thread's worker to
/// another thread so that the worker's other tasks, and for worker 0 the timers, go on
/// meanwhile.
///
/// Unlike [`spawn_blocking`](crate::task::spawn_blocking), `f` need not be `Send` or
/// `'static`: it can borrow from the task. Called from a task on a worker thread, the
/// worker's queue (and, for worker 0, the timer driver) moves before `f` runs to a thread of
/// the runtime's blocking pool: an idle one if there is one, else a new one, which neither
/// waits for [`max_blocking_threads`](crate::Builder::max_blocking_threads) nor counts
/// against it. While `f` runs, this thread is outside the runtime's workers:
/// [`Handle::block_on`](crate::Handle::block_on) works there, so
/// `block_in_place(|| Handle::current().block_on(fut))` waits for a future from
/// synchronous code. When `f` returns, the rest of the task's current poll runs on this
/// thread, where another `block_in_place` just calls its closure, which may block as `f`
/// could. If the pool's thread has not taken the worker yet (`f` was short), this thread
/// takes it back and goes on as the worker, and the pool's thread goes idle again.
/// Otherwise this thread leaves the worker's loop once the poll returns: a blocking thread
/// goes back to the pool, idle, for the next closure or hand-off; a thread the runtime
/// started as a worker exits. The task's later polls run on the workers as usual.
///
/// Anywhere else (in a multi-threaded runtime's [`block_on`](crate::Runtime::block_on), in a
/// [`spawn_blocking`](crate::task::spawn_blocking) closure, outside any runtime, or inside a
/// `block_in_place` closure) it just calls `f`; in `block_on`, `f` may call `block_on` again,
/// as tokio allows. That includes the tasks of a [`LocalSet`](crate::task::LocalSet) driven
/// in `block_on`, where tokio's panics; the set's other tasks wait for `f`. It also just
/// calls `f` if the worker cannot be handed off (the runtime shut down without waiting for
/// this poll, or a new thread cannot start): `f` then blocks the worker, whose overdue
/// timers the other workers fire, as when any task blocks its thread. Either way `f` runs
/// without the task's cooperative budget, as a `spawn_blocking` closure does, so another
/// executor that `f` drives over the runtime's futures never finds it spent.
///
/// Nothing else of the calling task runs while `f` does: the other branches of a
/// [`join!`](crate::join) or [`select!`](crate::select) around it wait too. A paused clock
/// does not move on its own while `f` runs, as for `spawn_blocking`: an `f` that waits for
/// one of the runtime's timers then waits until another thread moves the clock
/// ([`time::advance`](crate::time::advance)). Dropping the runtime waits for `f` to return,
/// as for any task poll in progress, but wakes the runtime's timers first: an `f` waiting on
/// one (`Handle::block_on(sleep(d))`) then panics, as on tokio, instead of holding the drop
/// up until the timer's deadline, and so does a timer the rest of the poll uses once `f`
/// returns. Where the worker could not be handed off, `f` holds the drop up as any long poll
/// does.
///
/// # Examples
///
/// ```
/// use escapement::{task, Handle};
///
/// let rt = escapement::Runtime::new().unwrap();
/// let total = rt.block_on(async {
///     escapement::spawn(async {
///         let numbers = vec![1u64, 2, 3];
///         task::block_in_place(|| {
///             // Blocking work that borrows from the task...
///             let sum: u64 = numbers.iter().sum();
///             // ...and may wait for a future from synchronous code.
///             Handle::current().block_on(async move { sum * 2 })
///         })
///     })
///     .await
///     .unwrap()
/// });
/// assert_eq!(total, 12);
/// ```
///
/// # Panics
///
/// On a runtime from [`Builder::new_current_thread`](crate::Builder::new_current_thread),
/// in its `block_on` or a task it runs, as tokio's does: the runtime's one thread would
/// block, and every task with it. Otherwise only if `f` does; the panic propagates to the
/// caller, and from a task becomes its [`JoinError`](crate::JoinError) as usual.
#[track_caller]
pub fn block_in_place<F, R>(f: F) -> R
where
    F: FnOnce() -> R,
{
    assert!(
        !in_current_thread_runtime(),
        "block_in_place was called on a current-thread runtime, whose one thread would block \
         with every task on it; use spawn_blocking, or a runtime from Builder::new"
    );
    let _outside = worker::hand_off();
    // Inside `block_on`, the closure may block on a future again, as on a worker.
    let _nested = context::exit_blocking();
    // The closure is not the task's poll: a future it polls by other means (another
    // executor, a loop of its own) must not find the task's budget spent.
    coop::without_budget(f)
}

/// Whether this thread is in `block_on` of a current-thread runtime: running its worker (in
/// its future or a task), or waiting for it, whatever runtime's context it entered since.
fn in_current_thread_runtime() -> bool {
    worker::is_current_thread_worker() || context::in_current_thread_block_on()
}
