//! Task-local storage: [`LocalKey`], declared with [`task_local!`](crate::task_local), and
//! the [`TaskLocalFuture`] that [`LocalKey::scope`] returns.
//!
//! # Design
//!
//! A key is a thread-local `RefCell<Option<T>>`, declared by the macro in the crate that
//! invokes it; it holds `None` outside every scope. A task never owns a thread, so the value
//! lives in the future, and visits the thread-local only while that future is polled:
//!
//! - **Poll.** A `TaskLocalFuture` keeps its value in a slot. Each poll swaps the slot with
//!   the thread-local, polls the inner future, and swaps back. During the inner poll the
//!   thread-local holds the value and the slot holds what was there before: `None`, or the
//!   value of an enclosing scope of the same key. Polls nest, so scopes restore in reverse
//!   order and the innermost one is seen.
//! - **Tasks.** Between polls the value is back in the future, so a task polled later on the
//!   same worker sees the key as it was before (unset, outside every scope), and a task that
//!   moves to another worker between polls takes its value along.
//! - **Panic.** The swap back is the drop of a guard, so it also runs when the inner poll
//!   panics: the panic unwinds through it, and the thread's key is as it was before the poll
//!   by the time the task's harness catches the panic.
//! - **Completion.** When the inner future returns `Ready` it is dropped at once, inside the
//!   scope; the value stays in the slot until [`TaskLocalFuture::take_value`] or the drop.
//! - **Drop.** A `TaskLocalFuture` dropped with its inner future still there (an aborted
//!   task, a runtime shut down, a `select!` that chose another branch) drops the inner
//!   future inside the scope, so its destructors can read the key; the value itself drops
//!   after, outside the scope. Where the scope cannot be entered (the thread-local is
//!   already destroyed, at thread exit, or borrowed by a `with` of the same key around the
//!   drop) the inner future drops without it.
//! - **Taken value.** After `take_value` the slot is empty, and later polls and the drop swap
//!   `None` in: the inner future sees the key unset, even inside an enclosing scope of it.
//! - **Borrows.** `with` borrows the `RefCell` for its closure. Entering a scope of the same
//!   key inside it (polling a `TaskLocalFuture`, `sync_scope`) cannot swap and panics; the
//!   swaps themselves hold their borrow only for the swap, never while user code runs.
//! - [`LocalKey::sync_scope`] is the same swap around one closure call.
//!
//! The cost is two swaps with a thread-local per poll; no allocation, no `unsafe`, no lock.
//! The thread-local is `std`'s in a loom build too (see `loom::TaskLocalKey`).

mod error;
mod future;
mod key;
mod macros;

pub use error::AccessError;
pub use future::TaskLocalFuture;
pub use key::LocalKey;
