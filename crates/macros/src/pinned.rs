//! The one pinned tuple that holds the futures of a `select!`, a `join!` or a `try_join!`.
//!
//! The futures go into nested pairs, `(f0, (f1, (.., ())))`, pinned once as one value, and
//! the poll closure owns the only pointer to it. Each poll splits the pinned pairs into one
//! pinned future per branch with `__private::pin_split`, which is plain address arithmetic.
//! So the expansion's state holds one pointer where a pinned local per future, each borrowed
//! by the closure, held two per future. The fields of a tuple drop first to last, so the
//! futures (and the outputs they keep) drop in the order written.

use proc_macro2::{Span, TokenStream};
use quote::quote_spanned;

/// The nested pairs of `values`, in order: `(v0, (v1, (.., ())))`.
pub(crate) fn nest(values: Vec<TokenStream>) -> TokenStream {
    let site = Span::mixed_site();
    values.into_iter().rev().fold(
        quote_spanned!(site=> ()),
        |rest, value| quote_spanned!(site=> (#value, #rest)),
    )
}

/// Statements that bind `names[i]`, `mut`, to the pinned `i`th future of the nested pairs
/// that `pairs` (a `Pin<&mut _>` the closure owns) points to.
pub(crate) fn split(krate: &TokenStream, pairs: &syn::Ident, names: &[syn::Ident]) -> TokenStream {
    let site = Span::mixed_site();
    let rest = syn::Ident::new("rest", site);
    let mut statements = quote_spanned!(site=> let #rest = #pairs.as_mut(););
    for name in names {
        statements.extend(quote_spanned! {site=>
            let (mut #name, #rest) = #krate::__private::pin_split(#rest);
        });
    }
    statements.extend(quote_spanned!(site=> let _ = #rest;));
    statements
}
