//! `join!` and `try_join!`: wait for every one of several futures inside one task, with
//! tokio's syntax and meaning.
//!
//! # Input
//!
//! `escapement::join!` and `escapement::try_join!` forward their tokens here behind the path
//! of the `escapement` crate in parentheses, as `select!` does:
//!
//! ```text
//! ($crate) biased;              // optional: poll in the order written
//!     FUTURE, FUTURE, ..        // anything `IntoFuture`; none at all is allowed
//! ```
//!
//! # Expansion
//!
//! ```text
//! {
//!     let mut tree = pin!(((MaybeDone::new(into_future(FUTURE_0)), ..), (.., ..)));
//!                                     // in order, in a balanced tree of pairs (`pinned`)
//!     let mut next_first: u32 = 0;                    // unless `biased`
//!     poll_fn(move |cx| {
//!         let (tree_future_0, ..) = pin_split(tree.as_mut()); ..   // each future, pinned
//!         // `first` is 0 if `biased`; else `next_first`, which moves on by one each poll,
//!         // so every future takes its turn at being polled first.
//!         // From `first`, each future not yet done: poll it (`MaybeDone` keeps its
//!         // output). For `try_join!`, an output that is an `Err` returns that error now.
//!         // `Pending` while any is not done; else the outputs, as a tuple in the order
//!         // written (for `try_join!`, in `Ok`).
//!     }).await
//! }                             // the futures drop here, done or not
//! ```
//!
//! - No `unsafe` in the expansion: the futures are pinned on the stack with `core::pin::pin!`,
//!   all in one value (see `pinned`), each in its own `MaybeDone` (from `futures-util`),
//!   which holds the output until every future is done. They drop first to last, as a
//!   tuple's fields do.
//! - The expansion's own variables are `mixed_site`, out of reach of the user's code; there
//!   is no item in it to be shadowed.
//! - With no future, `join!` is `()` and `try_join!` is `Ok(())`, as in tokio.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote_spanned};
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Expr, Token};

use crate::head::{self, Head};
use crate::pinned;

/// Which macro is expanded.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `join!`: every output.
    Join,
    /// `try_join!`: every `Ok` output, or the first `Err`.
    TryJoin,
}

/// A parsed `join!` or `try_join!` invocation.
struct Join {
    /// The path of the `escapement` crate, as `$crate` gave it.
    krate: TokenStream,
    biased: bool,
    futures: Vec<Expr>,
}

impl Parse for Join {
    fn parse(input: ParseStream<'_>) -> syn::Result<Join> {
        let Head { krate, biased } = Head::parse(input)?;
        let futures = Punctuated::<Expr, Token![,]>::parse_terminated(input)?;
        Ok(Join {
            krate,
            biased,
            futures: futures.into_iter().collect(),
        })
    }
}

/// Expands `join!`'s or `try_join!`'s forwarded input, or gives its parse error as a
/// `compile_error!`.
pub(crate) fn expand(input: TokenStream, kind: Kind) -> TokenStream {
    match syn::parse2::<Join>(input) {
        Ok(join) => join.expand(kind),
        Err(error) => error.to_compile_error(),
    }
}

impl Join {
    fn expand(self, kind: Kind) -> TokenStream {
        let site = Span::mixed_site();
        let krate = &self.krate;
        let count = self.futures.len();
        if count == 0 {
            return match kind {
                Kind::Join => quote_spanned!(site=> ()),
                Kind::TryJoin => quote_spanned!(site=> ::core::result::Result::Ok(())),
            };
        }
        let cx = syn::Ident::new("cx", site);
        let pending = syn::Ident::new("pending", site);
        let next_first = syn::Ident::new("next_first", site);
        let first = syn::Ident::new("first", site);
        let futures: Vec<_> = (0..count)
            .map(|i| format_ident!("future{i}", span = site))
            .collect();
        let count_u32 = count as u32;

        // The futures are made in order, into one pinned value (see `pinned`).
        let tree = syn::Ident::new("tree", site);
        let made: Vec<_> = self
            .futures
            .iter()
            .map(|expr| {
                quote_spanned!(site=>
                    #krate::__private::maybe_done(::core::future::IntoFuture::into_future(#expr))
                )
            })
            .collect();
        let nested = pinned::nest(&made);
        let split = pinned::split(krate, &tree, &futures);
        // Polls future `i`; `try_join!` returns its error at once.
        let polls = futures.iter().enumerate().map(|(i, future)| {
            let i = i as u32;
            let on_ready = match kind {
                Kind::Join => TokenStream::new(),
                Kind::TryJoin => quote_spanned! {site=>
                    else if ::core::matches!(
                        #future.as_mut().output_mut(),
                        ::core::option::Option::Some(::core::result::Result::Err(_))
                    ) {
                        if let ::core::option::Option::Some(::core::result::Result::Err(error)) =
                            #future.as_mut().take_output()
                        {
                            return ::core::task::Poll::Ready(::core::result::Result::Err(error));
                        }
                    }
                },
            };
            quote_spanned! {site=>
                #i => {
                    if ::core::future::Future::poll(#future.as_mut(), #cx).is_pending() {
                        #pending = true;
                    } #on_ready
                }
            }
        });
        let in_turn = head::in_turn(&first, count, quote_spanned!(site=> #(#polls)*));
        let outputs = futures.iter().map(|future| {
            let take = quote_spanned!(site=> #future.as_mut().take_output());
            match kind {
                Kind::Join => quote_spanned!(site=>
                    ::core::option::Option::expect(#take, "join!: every future is done"),
                ),
                Kind::TryJoin => quote_spanned!(site=>
                    match #take {
                        ::core::option::Option::Some(::core::result::Result::Ok(output)) => output,
                        _ => ::core::unreachable!("try_join!: every future is done with `Ok`"),
                    },
                ),
            }
        });
        let ready = match kind {
            Kind::Join => quote_spanned!(site=> (#(#outputs)*)),
            Kind::TryJoin => quote_spanned!(site=> ::core::result::Result::Ok((#(#outputs)*))),
        };
        let (rotation, start) = if self.biased {
            (
                TokenStream::new(),
                quote_spanned!(site=> let #first: ::core::primitive::u32 = 0;),
            )
        } else {
            (
                quote_spanned!(site=> let mut #next_first: ::core::primitive::u32 = 0;),
                quote_spanned! {site=>
                    let #first: ::core::primitive::u32 = #next_first;
                    #next_first = if #first + 1 == #count_u32 { 0 } else { #first + 1 };
                },
            )
        };

        quote_spanned! {site=> {
            let mut #tree = ::core::pin::pin!(#nested);
            #rotation
            ::core::future::poll_fn(move |#cx: &mut ::core::task::Context<'_>| {
                #split
                #start
                let mut #pending = false;
                #in_turn
                if #pending {
                    return ::core::task::Poll::Pending;
                }
                // A future whose output is `!` makes the outputs' tuple unreachable.
                #[allow(unreachable_code, clippy::diverging_sub_expression)]
                return ::core::task::Poll::Ready(#ready);
            })
            .await
        }}
    }
}

#[cfg(test)]
mod tests {
    use quote::quote;

    use super::*;

    fn parse(tokens: TokenStream) -> syn::Result<Join> {
        syn::parse2(tokens)
    }

    #[test]
    fn futures_and_biased_parse() {
        let join = parse(quote!((::escapement) biased; a, async { 1 }, b,)).unwrap();
        assert!(join.biased);
        assert_eq!(join.futures.len(), 3);
        let join = parse(quote!((::escapement) a)).unwrap();
        assert!(!join.biased);
        assert_eq!(join.futures.len(), 1);
        assert!(parse(quote!((::escapement))).unwrap().futures.is_empty());
        assert!(parse(quote!((::escapement) biased;)).unwrap().biased);
    }

    #[test]
    fn a_future_named_biased_is_not_the_keyword() {
        let join = parse(quote!((::escapement) biased, other)).unwrap();
        assert!(!join.biased);
        assert_eq!(join.futures.len(), 2);
    }

    #[test]
    fn mistakes_are_errors() {
        assert!(parse(quote!((::escapement) a b)).is_err());
        assert!(parse(quote!((::escapement) a,, b)).is_err());
    }
}
