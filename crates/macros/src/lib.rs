//! The `#[escapement::main]` and `#[escapement::test]` attributes, and the expansions of
//! `escapement::select!`, `join!` and `try_join!` (their design notes are in `select.rs` and
//! `join.rs`).
//!
//! Use them through the `escapement` crate, which re-exports them: the code they generate
//! names `::escapement`, and that is where they are documented with runnable examples (this
//! crate cannot run an example of its own, as `escapement` depends on it).
//!
//! # Expansion
//!
//! Both attributes turn an `async fn` into a plain `fn` with the same attributes, visibility,
//! name and return type, whose body builds a runtime and runs the original body on it:
//!
//! ```text
//! #[escapement::test(start_paused = true)]      #[::core::prelude::v1::test]
//! async fn ticks() -> Result<(), E> {           fn ticks() -> Result<(), E> {
//!     BODY                                 =>       let body = async { BODY };
//! }                                                 let runtime =
//!                                                       ::escapement::Builder::new_current_thread()
//!                                                       .start_paused(true)
//!                                                       .build()
//!                                                       .expect("failed to build ...");
//!                                                   runtime.block_on(body)
//!                                               }
//! ```
//!
//! - The body's tokens are moved, not re-created, so errors inside it point at the user's
//!   code. `runtime.block_on(body)` is located at the body's last token, so a body whose type
//!   is not the return type is reported there, beside the declared type.
//! - `body` and `runtime` are `mixed_site` identifiers: the body cannot name or shadow them.
//! - Outer attributes stay on the function; inner ones (`#![allow(...)]`) atop its new body.
//! - Only the arguments given become `Builder` calls. The builder is
//!   `Builder::new_current_thread()` for a test and for `flavor = "current_thread"`, and
//!   `Builder::new()` for `main`, for `"multi_thread"` and wherever `worker_threads` is given.
//!   `crate = "path"` replaces `::escapement`, for a dependency renamed in `Cargo.toml`.
//! - Parameters stay: `#[escapement::main]` on a method or a helper is a synchronous entry
//!   point, and the `async` block borrows them. Only `main` and tests may take none.
//! - On any error the function is still rewritten with the default arguments, each error
//!   emitted beside it as a `compile_error!` at the offending token, and whatever would
//!   bring an error of its own dropped (`main`'s parameters, a test's `#[test]` when it has
//!   parameters, a second `#[test]`), so the compiler reports those errors and no cascade of
//!   follow-up ones. The unit tests in `entry.rs` check this expansion.

use proc_macro::TokenStream;

mod args;
mod entry;
mod head;
mod join;
mod pinned;
mod select;

use entry::Entry;

/// `escapement-macros` generates the expansion of `#[escapement::main]` for `escapement`,
/// which re-exports the attribute and documents it with examples that run as doctests. Use
/// it through `escapement`: the expansion names `::escapement`. (`escapement-macros` cannot
/// run examples of its own, as it cannot link `escapement`, which depends on it.)
#[proc_macro_attribute]
pub fn main(args: TokenStream, item: TokenStream) -> TokenStream {
    Entry::Main.expand(args.into(), item.into()).into()
}

/// `escapement-macros` generates the expansion of `#[escapement::test]` for `escapement`,
/// which re-exports the attribute and documents it with examples that run as doctests. Use
/// it through `escapement`: the expansion names `::escapement`. (`escapement-macros` cannot
/// run examples of its own, as it cannot link `escapement`, which depends on it.)
#[proc_macro_attribute]
pub fn test(args: TokenStream, item: TokenStream) -> TokenStream {
    Entry::Test.expand(args.into(), item.into()).into()
}

/// The expansion of `escapement::select!`, which forwards its input here behind the path of
/// the `escapement` crate; use `select!` through `escapement`, which documents it.
#[doc(hidden)]
#[proc_macro]
pub fn select_inner(input: TokenStream) -> TokenStream {
    select::expand(input.into()).into()
}

/// The expansion of `escapement::join!`, which forwards its input here behind the path of the
/// `escapement` crate; use `join!` through `escapement`, which documents it.
#[doc(hidden)]
#[proc_macro]
pub fn join_inner(input: TokenStream) -> TokenStream {
    join::expand(input.into(), join::Kind::Join).into()
}

/// The expansion of `escapement::try_join!`, which forwards its input here behind the path of
/// the `escapement` crate; use `try_join!` through `escapement`, which documents it.
#[doc(hidden)]
#[proc_macro]
pub fn try_join_inner(input: TokenStream) -> TokenStream {
    join::expand(input.into(), join::Kind::TryJoin).into()
}
