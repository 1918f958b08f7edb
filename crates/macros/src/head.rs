//! [`Head`]: what `select!`, `join!` and `try_join!` read before their futures.
//!
//! Each `escapement` wrapper forwards its tokens behind the path of the `escapement` crate in
//! parentheses (`$crate`, so the expansion names the runtime's support code however the crate
//! is renamed), and the user's tokens may start with `biased;`.

use proc_macro2::TokenStream;
use syn::parse::ParseStream;
use syn::Token;

/// The crate's path and whether `biased;` came first.
pub(crate) struct Head {
    /// The path of the `escapement` crate, as `$crate` gave it.
    pub(crate) krate: TokenStream,
    pub(crate) biased: bool,
}

impl Head {
    /// Parses `(PATH)` and an optional `biased;`. An identifier `biased` not followed by `;`
    /// is left alone: it starts a pattern or an expression.
    pub(crate) fn parse(input: ParseStream<'_>) -> syn::Result<Head> {
        let krate;
        syn::parenthesized!(krate in input);
        let krate: TokenStream = krate.parse()?;
        let biased = input.peek(syn::Ident) && input.peek2(Token![;]) && {
            let fork = input.fork();
            fork.parse::<syn::Ident>()? == "biased"
        };
        if biased {
            input.parse::<syn::Ident>()?;
            input.parse::<Token![;]>()?;
        }
        Ok(Head { krate, biased })
    }
}

/// The loop of a poll that visits every branch once, from branch `first` and around: each
/// arm of `arms` is `i => { .. }` for branch `i`, and may `continue` to the next.
pub(crate) fn in_turn(first: &syn::Ident, count: usize, arms: TokenStream) -> TokenStream {
    let site = proc_macro2::Span::mixed_site();
    let offset = syn::Ident::new("offset", site);
    let index = syn::Ident::new("index", site);
    let count = count as u32;
    quote::quote_spanned! {site=>
        for #offset in 0..#count {
            // `first + offset` modulo the count, which a clippy lint would flag in the
            // caller's code for a single branch.
            let mut #index = #first + #offset;
            if #index >= #count {
                #index -= #count;
            }
            match #index {
                #arms
                _ => ::core::unreachable!(),
            }
        }
    }
}
