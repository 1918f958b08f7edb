//! [`select!`](crate::select), [`join!`](crate::join) and [`try_join!`](crate::try_join):
//! waiting on several futures at once inside one task, with tokio's syntax and meaning; and
//! [`pin!`](crate::pin), which pins a future on the stack to pass it as `&mut future`.
//!
//! `select!` is a procedural macro in `escapement-macros` (its design note is there), reached
//! through a `macro_rules!` wrapper that hands it `$crate`, so that its expansion names this
//! crate's support code whatever the crate is called where it is used. `join!` and
//! `try_join!` are built the same way (their design note is in `join.rs` there).
//!
//! The three keep their futures in one pinned value, a balanced tree of pairs
//! (`((f0, f1), (f2, f3))`), and each poll splits it into the futures with [`pin_split`], so
//! that their state holds one pointer to the tree rather than one per future. That split
//! holds this module's only `unsafe` code (two blocks, one `// SAFETY:` note); the expansions
//! have none, so they compile in a crate that forbids `unsafe`.

use std::cell::Cell;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::loom::thread_local_const;

/// Waits on several futures at once and runs the handler of the first to complete whose
/// output matches its pattern; the other futures are dropped.
///
/// ```text
/// select! {
///     biased;                                         // optional: poll in order
///     PATTERN = FUTURE => HANDLER,
///     PATTERN = FUTURE, if PRECONDITION => HANDLER,   // at most 64 branches
///     else => HANDLER,                                // optional
/// }
/// ```
///
/// Step by step, as tokio's:
///
/// 1. Every `PRECONDITION` is evaluated; a branch whose precondition is `false` is disabled.
/// 2. Every `FUTURE` expression is evaluated in order, disabled branches' included (anything
///    that implements `IntoFuture`), and pinned on the stack. A temporary it borrows lives as
///    long as the `select!`, as in a `let`: `x = &mut ready(1) => x` is allowed.
/// 3. The enabled futures are polled, starting from a random branch each time the task is
///    polled (from the first, in the order written, with `biased;`). If the task has spent
///    its cooperative budget (see [`task::unconstrained`](crate::task::unconstrained)),
///    `select!` polls none of them: it wakes the task and yields first. So a branch that is
///    always ready cannot keep a `select!` in a loop from yielding when the loop spends the
///    budget (a timer that completes does, as do the runtime's other futures and
///    [`task::consume_budget`](crate::task::consume_budget)); a loop of futures that spend
///    none, such as `std::future::ready`, never yields, on tokio as here.
/// 4. When one completes, its output is matched against its `PATTERN`. If it matches, every
///    future is dropped and its `HANDLER` runs with the pattern's bindings; its value is the
///    value of `select!`. If not, the branch is disabled and the others are polled on.
/// 5. Once every branch is disabled, the `else` handler runs; without one, `select!`
///    panics with "all branches are disabled and there is no else branch". A `select!` with
///    only an `else` branch is its handler.
///
/// The futures are dropped in the order of their branches, the first first.
///
/// Handlers run after the futures are dropped, outside any poll, so `return`, `?`,
/// `break` and `continue` in a handler act on the code around `select!`, and a handler may
/// use what the futures borrowed. A handler that is a block may leave out the `,` after it.
/// Nothing is allocated.
///
/// # Examples
///
/// A deadline on a loop that waits for messages:
///
/// ```
/// use escapement::time::{sleep, Duration};
///
/// # escapement::Runtime::new().unwrap().block_on(async {
/// let (tx, mut rx) = futures::channel::mpsc::unbounded::<u32>();
/// escapement::spawn(async move {
///     for n in 1..=3 {
///         tx.unbounded_send(n).unwrap();
///     }
///     // `tx` stays alive: the stream never ends by itself.
///     std::future::pending::<()>().await;
/// });
///
/// let mut sum = 0;
/// let mut deadline = std::pin::pin!(sleep(Duration::from_millis(50)));
/// loop {
///     escapement::select! {
///         Some(n) = futures::StreamExt::next(&mut rx) => sum += n,
///         _ = &mut deadline => break,
///     }
/// }
/// assert_eq!(sum, 6);
/// # });
/// ```
///
/// A precondition and an `else`:
///
/// ```
/// # escapement::Runtime::new().unwrap().block_on(async {
/// let ready = false;
/// let chosen = escapement::select! {
///     n = async { 1 }, if ready => n,
///     None = async { Some(2) } => 2,
///     else => 0,
/// };
/// // The first branch is disabled by its precondition, the second by its pattern.
/// assert_eq!(chosen, 0);
/// # });
/// ```
///
/// # Panics
///
/// When every branch is disabled and there is no `else` branch.
///
/// # Cancel safety
///
/// `select!` drops the futures of the branches it did not choose: whatever those futures had
/// done is lost unless they are themselves cancel safe (as [`Sleep`](crate::time::Sleep),
/// [`Interval::tick`](crate::time::Interval::tick) and
/// [`JoinSet::join_next`](crate::task::JoinSet::join_next) are). In a loop, create a future
/// that must keep its progress outside the loop and pass it as `&mut future`.
#[macro_export]
macro_rules! select {
    ($($tokens:tt)*) => {
        $crate::__private::select_inner!(($crate) $($tokens)*)
    };
}

/// Waits for every future and returns their outputs as a tuple, in the order written.
///
/// ```text
/// join!(FUTURE, FUTURE, ..)           // anything `IntoFuture`; `join!()` is `()`
/// join!(biased; FUTURE, FUTURE, ..)   // poll in the order written
/// ```
///
/// The futures run concurrently inside the calling task (not in parallel: use
/// [`spawn`](crate::spawn) for that). Each time the task is polled, every future not yet
/// done is polled once, starting one further along than the time before, so that no future
/// is always polled last; with `biased;`, always from the first. A future that is done is
/// not polled again: its output waits on the stack, in the future's place, until the last
/// one is done. Nothing is allocated. Dropped before it finishes (in a `select!` branch
/// that loses, say), `join!` drops every future and every output it holds, in the order
/// written.
///
/// # Examples
///
/// ```
/// use escapement::time::{sleep, Duration, Instant};
///
/// # escapement::Builder::new().start_paused(true).build().unwrap().block_on(async {
/// let start = Instant::now();
/// let (a, b) = escapement::join!(
///     async {
///         sleep(Duration::from_millis(20)).await;
///         "a"
///     },
///     async {
///         sleep(Duration::from_millis(30)).await;
///         "b"
///     },
/// );
/// assert_eq!((a, b), ("a", "b"));
/// // Concurrently: the longer sleep, not the sum.
/// assert_eq!(start.elapsed(), Duration::from_millis(30));
/// # });
/// ```
#[macro_export]
macro_rules! join {
    ($($tokens:tt)*) => {
        $crate::__private::join_inner!(($crate) $($tokens)*)
    };
}

/// Waits for every future, each returning a `Result` with the same error type, and returns
/// `Ok` with their outputs as a tuple, or the first `Err` as soon as one comes; the other
/// futures, and the outputs already in, are then dropped, in the order written.
///
/// It takes what [`join!`](crate::join) takes (`try_join!()` is `Ok(())`) and polls in the
/// same order. With `biased;`, a future after one that fails in the same poll is not polled.
///
/// # Examples
///
/// ```
/// # escapement::Runtime::new().unwrap().block_on(async {
/// let all: Result<(u8, u8), &str> = escapement::try_join!(async { Ok(1) }, async { Ok(2) });
/// assert_eq!(all, Ok((1, 2)));
///
/// let failed: Result<(u8, u8), &str> = escapement::try_join!(
///     async { Err("no") },
///     std::future::pending::<Result<u8, &str>>(),
/// );
/// assert_eq!(failed, Err("no"));
/// # });
/// ```
#[macro_export]
macro_rules! try_join {
    ($($tokens:tt)*) => {
        $crate::__private::try_join_inner!(($crate) $($tokens)*)
    };
}

/// Pins each named value on the stack, where it is: the name is then a `Pin<&mut T>` to it,
/// and the value can no longer be reached unpinned. A future that is `!Unpin`, such as
/// [`Sleep`](crate::time::Sleep), must be pinned before it can be polled through `&mut`, as
/// a [`select!`](crate::select) in a loop does to keep one future across iterations.
///
/// ```text
/// pin!(a, b);                   // pins the variables `a` and `b`
/// pin! { let a = EXPR; .. }     // binds and pins, in one step
/// ```
///
/// Tokio's forms, written with [`core::pin::pin!`]: nothing is allocated, and there is no
/// `unsafe`.
///
/// # Examples
///
/// ```
/// use escapement::time::{sleep, Duration};
///
/// # escapement::Runtime::new().unwrap().block_on(async {
/// let deadline = sleep(Duration::from_millis(20));
/// escapement::pin!(deadline);
/// let mut ticks = 0;
/// loop {
///     escapement::select! {
///         _ = &mut deadline => break,
///         _ = sleep(Duration::from_millis(1)) => ticks += 1,
///     }
/// }
/// assert!(ticks > 0);
/// # });
/// ```
#[macro_export]
macro_rules! pin {
    ($($name:ident),* $(,)?) => {
        $(
            #[allow(unused_mut)]
            let mut $name = ::core::pin::pin!($name);
        )*
    };
    ($(let $name:ident = $init:expr;)*) => {
        $(
            let $name = $init;
            $crate::pin!($name);
        )*
    };
}

thread_local_const! {
    /// The state of the thread's generator of `select!` start branches; 0 until seeded.
    static STATE: Cell<u32> = Cell::new(0);
}

/// The branch a non-`biased` `select!` of `branches` branches polls first: each in turn
/// equally likely, so that no branch starves the others.
pub fn select_start(branches: u32) -> u32 {
    let mut x = STATE.try_with(Cell::get).unwrap_or(0);
    if x == 0 {
        // Seeded once per thread from std's per-thread random hasher keys; never zero.
        x = RandomState::new().build_hasher().finish() as u32 | 1;
    }
    // xorshift32.
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    let _ = STATE.try_with(|state| state.set(x));
    // The multiply-shift maps the 32 random bits onto 0..branches without a division.
    ((u64::from(x) * u64::from(branches)) >> 32) as u32
}

/// The two halves of a pinned pair, each pinned: the pinning of the pair is structural.
///
/// `select!`, `join!` and `try_join!` call it on the tree of pairs their futures are pinned in.
#[doc(hidden)]
#[inline]
pub fn pin_split<A, B>(pair: Pin<&mut (A, B)>) -> (Pin<&mut A>, Pin<&mut B>) {
    // SAFETY: the halves are pinned as long as the pair is, and pinning the pair pins them
    // (structural pinning), which is sound for a tuple: it is `Unpin` only when both halves
    // are; it has no `Drop` of its own that could move a half; and nothing hands out a half
    // unpinned while the pair is pinned (safe code reaches `&mut (A, B)` through the `Pin`
    // only when the pair, and so each half, is `Unpin`). Neither reference outlives `pair`'s.
    let (a, b) = unsafe { pair.get_unchecked_mut() };
    // SAFETY: as above; `a` and `b` are the halves of the pinned pair.
    unsafe { (Pin::new_unchecked(a), Pin::new_unchecked(b)) }
}

/// What a `select!` does at the top of each poll: with the task's cooperative budget spent,
/// wakes the task and returns `Pending`, as the runtime's own futures do, so that a branch
/// that is always ready but knows nothing of the budget cannot keep a looping `select!` from
/// yielding. Spends nothing.
#[doc(hidden)]
#[inline]
pub fn select_budget(cx: &mut Context<'_>) -> Poll<()> {
    crate::task::coop::poll_budget(cx)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_pinned_pair_splits_into_its_halves_in_place() {
        use std::future::Future;
        use std::task::Waker;

        // A future that counts its polls and finishes on the second, and a plain value.
        struct Twice(u8);
        impl Future for Twice {
            type Output = u8;
            fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<u8> {
                self.0 += 1;
                if self.0 == 2 {
                    Poll::Ready(self.0)
                } else {
                    Poll::Pending
                }
            }
        }
        let mut cx = Context::from_waker(Waker::noop());
        let mut pair = std::pin::pin!((Twice(0), (String::from("kept"), ())));
        let at = std::ptr::from_ref(&pair.0);
        for expected in [Poll::Pending, Poll::Ready(2)] {
            let (mut first, rest) = pin_split(pair.as_mut());
            assert!(
                std::ptr::eq(&*first, at),
                "the half is the pair's own field"
            );
            assert_eq!(first.as_mut().poll(&mut cx), expected);
            let (second, _) = pin_split(rest);
            assert_eq!(*second, "kept");
        }
    }

    #[test]
    fn every_start_comes_up() {
        let mut seen = [0u32; 5];
        for _ in 0..5_000 {
            seen[select_start(5) as usize] += 1;
        }
        // About 1,000 each; a branch that never or rarely came up would starve.
        assert!(seen.iter().all(|&n| n > 800), "{seen:?}");
    }
}
