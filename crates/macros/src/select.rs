//! `select!`: waits on several futures at once and runs the handler of the first one to
//! complete whose output matches its pattern, with tokio's syntax and meaning.
//!
//! # Input
//!
//! `escapement::select!` forwards its tokens here behind the path of the `escapement` crate in
//! parentheses, so the expansion names the runtime's support code however the crate is
//! renamed:
//!
//! ```text
//! ($crate) biased;                                     // optional: poll in order
//!     PATTERN = FUTURE => HANDLER,                     // at most 64 branches
//!     PATTERN = FUTURE, if PRECONDITION => HANDLER,
//!     else => HANDLER                                  // optional
//! ```
//!
//! An `else` branch alone expands to its handler.
//!
//! # Expansion
//!
//! ```text
//! {
//!     enum Out<T0, T1, ..> { B0(T0), B1(T1), .., Disabled }
//!     let out = {
//!         let mut disabled: u8 = 0;                    // bit i: branch i is off (u16,
//!                                                      // u32, u64 past 8, 16, 32 branches)
//!         if !(PRECONDITION_i) { disabled |= 1 << i; } // every precondition, first
//!         let (given_0, ..) = (FUTURE_0, ..);          // then every future, in order, in
//!                                                      // a tuple (a borrowed temporary
//!                                                      // lives on); then into one value,
//!         let mut tree = pin!(((into_future(given_0), ..), (.., ..)));  // a balanced
//!                                                      // tree of pairs (`pinned`)
//!         poll_fn(move |cx| {
//!             // With the task's cooperative budget spent: wake the task, `Pending`.
//!             let (tree_future_0, ..) = pin_split(tree.as_mut()); ..  // each, pinned
//!             // From a random branch (the first one if `biased`), each branch still on:
//!             //   poll it; if ready, match its output by reference against PATTERN_i
//!             //   (without `mut` and `ref`): a match returns `Out::Bi(output)`, a
//!             //   mismatch turns the branch off.
//!             // `Out::Disabled` once every branch is off, else `Pending`.
//!         }).await
//!     };                                               // the futures drop here
//!     match out {
//!         Out::Bi(PATTERN_i) => HANDLER_i,
//!         Out::Disabled => ELSE,                       // or panic, without `else`
//!     }
//! }
//! ```
//!
//! - The handlers run after every future has dropped, outside the poll, so `return`, `?`,
//!   `break` and `continue` in them act on the code around `select!`, and they may use what
//!   the futures borrowed.
//! - The futures are pinned on the stack with `core::pin::pin!`, all in one value, and drop
//!   first to last: no `unsafe` in the expansion, no allocation.
//! - The budget check comes before any branch: a branch future that is always ready and
//!   ignores the budget would otherwise win every poll once the budget-aware branches
//!   return `Pending`, and a `select!` in a loop would never yield.
//! - The expansion's own variables are `mixed_site`: user code can neither see nor shadow
//!   them. Its one item, the enum (`Out` above), cannot be hidden that way, so it has a name
//!   no user type is expected to have, and user types named like its variants are untouched.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote_spanned};
use syn::parse::{Parse, ParseStream};
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;
use syn::{Expr, Pat, Token};

use crate::head::{self, Head};
use crate::pinned;

/// The most branches one `select!` takes: the bits of its widest mask of disabled branches,
/// a `u64`.
const MAX_BRANCHES: usize = 64;

/// One `PATTERN = FUTURE, if PRECONDITION => HANDLER` branch.
struct Branch {
    pattern: Pat,
    future: Expr,
    precondition: Option<Expr>,
    handler: Expr,
}

/// A parsed `select!` invocation.
struct Select {
    /// The path of the `escapement` crate, as `$crate` gave it.
    krate: TokenStream,
    biased: bool,
    branches: Vec<Branch>,
    otherwise: Option<Expr>,
}

impl Parse for Select {
    fn parse(input: ParseStream<'_>) -> syn::Result<Select> {
        let Head { krate, biased } = Head::parse(input)?;
        let mut branches = Vec::new();
        let mut otherwise = None;
        while !input.is_empty() {
            if input.peek(Token![else]) {
                let keyword = input.parse::<Token![else]>()?;
                input.parse::<Token![=>]>()?;
                let handler = parse_handler(input)?;
                if otherwise.replace(handler).is_some() {
                    return Err(syn::Error::new(
                        keyword.span,
                        "`select!` takes at most one `else` branch",
                    ));
                }
                continue;
            }
            let pattern = Pat::parse_multi_with_leading_vert(input)?;
            input.parse::<Token![=]>()?;
            let future = input.parse()?;
            let precondition = if input.peek(Token![,]) && input.peek2(Token![if]) {
                input.parse::<Token![,]>()?;
                input.parse::<Token![if]>()?;
                Some(input.parse()?)
            } else {
                None
            };
            input.parse::<Token![=>]>()?;
            let handler = parse_handler(input)?;
            branches.push(Branch {
                pattern,
                future,
                precondition,
                handler,
            });
        }
        if branches.is_empty() && otherwise.is_none() {
            return Err(
                input.error("`select!` needs at least one `pattern = future => handler` branch")
            );
        }
        if branches.len() > MAX_BRANCHES {
            return Err(syn::Error::new(
                branches[MAX_BRANCHES].pattern.span(),
                format!("`select!` takes at most {MAX_BRANCHES} branches"),
            ));
        }
        Ok(Select {
            krate,
            biased,
            branches,
            otherwise,
        })
    }
}

/// A handler and the `,` after it, which a block may leave out, as in a `match` arm (and
/// with a `match` arm's boundary: `{ .. } (..)` is a block, then more tokens, not a call).
fn parse_handler(input: ParseStream<'_>) -> syn::Result<Expr> {
    let handler = Expr::parse_with_earlier_boundary_rule(input)?;
    if input.is_empty() || input.parse::<Option<Token![,]>>()?.is_some() {
        return Ok(handler);
    }
    if ends_in_block(&handler) {
        Ok(handler)
    } else {
        Err(input.error("expected `,` after the branch's handler"))
    }
}

/// Whether an expression ends in a block, so that a `,` after it may be left out. A handler
/// a user's macro passed in as a fragment (`$h:block`) comes wrapped in an invisible group.
fn ends_in_block(expr: &Expr) -> bool {
    match expr {
        Expr::Group(group) => ends_in_block(&group.expr),
        _ => matches!(
            expr,
            Expr::Block(_)
                | Expr::If(_)
                | Expr::Match(_)
                | Expr::Loop(_)
                | Expr::While(_)
                | Expr::ForLoop(_)
                | Expr::Unsafe(_)
                | Expr::Async(_)
                | Expr::Const(_)
        ),
    }
}

/// Removes `mut` and `ref` from a pattern's bindings: the pattern is tried against a shared
/// reference to the output first, where bindings borrow, and `mut` or `ref` there would move
/// out of it or be refused. `&mut` patterns stay: nested in a pattern they match through
/// the shared reference as they are (`Some(&mut n)`), in a crate of edition 2021 or earlier
/// (edition 2024 refuses `&` and `&mut` inside a pattern matched through a reference, as it
/// refuses tokio's `select!` a `Some(&x)`); at its top they are peeled off first
/// (`peel_references`).
struct Clean;

impl VisitMut for Clean {
    fn visit_pat_ident_mut(&mut self, ident: &mut syn::PatIdent) {
        ident.by_ref = None;
        ident.mutability = None;
        syn::visit_mut::visit_pat_ident_mut(self, ident);
    }
}

/// The pattern under its top-level `&` and `&mut` layers (and parentheses), and how many
/// there were. A reference pattern cannot match through the shared reference the output is
/// tried with (`&mut d` against `&&mut T`), so the output is dereferenced that many times
/// instead and the rest of the pattern tried against that.
fn peel_references(pattern: &Pat) -> (Pat, usize) {
    let mut pattern = pattern;
    let mut derefs = 0;
    loop {
        match pattern {
            Pat::Reference(reference) => {
                pattern = &reference.pat;
                derefs += 1;
            }
            Pat::Paren(paren) => pattern = &paren.pat,
            _ => return (pattern.clone(), derefs),
        }
    }
}

/// Expands `select!`'s forwarded input, or gives its parse error as a `compile_error!`.
pub(crate) fn expand(input: TokenStream) -> TokenStream {
    match syn::parse2::<Select>(input) {
        Ok(select) => select.expand(),
        Err(error) => error.to_compile_error(),
    }
}

impl Select {
    fn expand(self) -> TokenStream {
        let site = Span::mixed_site();
        let krate = &self.krate;
        let count = self.branches.len();
        if count == 0 {
            // Only an `else` branch: every branch is disabled from the start.
            let otherwise = &self.otherwise;
            return quote_spanned!(site=> { #otherwise });
        }
        let out = syn::Ident::new("__EscapementSelectOut", site);
        let output = syn::Ident::new("output", site);
        let disabled = syn::Ident::new("disabled", site);
        let cx = syn::Ident::new("cx", site);
        let first = syn::Ident::new("first", site);
        let variants: Vec<_> = (0..count)
            .map(|i| format_ident!("B{i}", span = site))
            .collect();
        let types: Vec<_> = (0..count)
            .map(|i| format_ident!("T{i}", span = site))
            .collect();
        let futures: Vec<_> = (0..count)
            .map(|i| format_ident!("future{i}", span = site))
            .collect();
        // The narrowest unsigned integer with a bit per branch, as tokio's mask is.
        let width = count.next_power_of_two().max(8);
        // By its full path: a user's item named `u8` in scope would otherwise stand for it.
        let mask_name = format_ident!("u{width}", span = site);
        let mask = quote_spanned!(site=> ::core::primitive::#mask_name);
        let one = syn::LitInt::new(&format!("1u{width}"), site);
        let bits: Vec<_> = (0..count)
            .map(|i| quote_spanned!(site=> #one << #i))
            .collect();
        let all = if count == width {
            quote_spanned!(site=> #mask::MAX)
        } else {
            quote_spanned!(site=> (#one << #count) - 1)
        };
        let count_u32 = count as u32;
        let start = if self.biased {
            quote_spanned!(site=> 0u32)
        } else {
            quote_spanned!(site=> #krate::__private::select_start(#count_u32))
        };

        let preconditions = self.branches.iter().zip(&bits).map(|(branch, bit)| {
            branch
                .precondition
                .as_ref()
                .map(|condition| quote_spanned!(site=> if !(#condition) { #disabled |= #bit; }))
        });
        // Every branch's expression is evaluated in order into one tuple, which extends the
        // life of a temporary it borrows (`&mut ready(1)`) as a `let` does; then each becomes a
        // future, in order, into one pinned value (see `pinned`).
        let given: Vec<_> = (0..count)
            .map(|i| format_ident!("given{i}", span = site))
            .collect();
        let exprs = self.branches.iter().map(|branch| &branch.future);
        let tree = syn::Ident::new("tree", site);
        let made: Vec<_> = given
            .iter()
            .map(|given| quote_spanned!(site=> ::core::future::IntoFuture::into_future(#given)))
            .collect();
        let nested = pinned::nest(&made);
        let pins = quote_spanned! {site=>
            let (#(#given,)*) = (#(#exprs,)*);
            let mut #tree = ::core::pin::pin!(#nested);
        };
        let split = pinned::split(krate, &tree, &futures);
        let polls = self.branches.iter().enumerate().map(|(i, branch)| {
            let (future, variant, bit) = (&futures[i], &variants[i], &bits[i]);
            let (mut pattern, derefs) = peel_references(&branch.pattern);
            Clean.visit_pat_mut(&mut pattern);
            let derefs = (0..derefs).map(|_| quote_spanned!(site=> *));
            let i = i as u32;
            quote_spanned! {site=>
                // A future whose output is `!` makes the rest of its arm unreachable.
                #[allow(unreachable_code)]
                #i => {
                    if #disabled & #bit != 0 {
                        continue;
                    }
                    let #output = match ::core::future::Future::poll(#future.as_mut(), #cx) {
                        ::core::task::Poll::Ready(#output) => #output,
                        ::core::task::Poll::Pending => continue,
                    };
                    match &#(#derefs)*#output {
                        #[allow(unused_variables)]
                        #pattern => {}
                        #[allow(unreachable_patterns)]
                        _ => {
                            #disabled |= #bit;
                            continue;
                        }
                    }
                    return ::core::task::Poll::Ready(#out::#variant(#output));
                }
            }
        });
        let in_turn = head::in_turn(&first, count, quote_spanned!(site=> #(#polls)*));
        let arms = self.branches.iter().enumerate().map(|(i, branch)| {
            let (variant, pattern, handler) = (&variants[i], &branch.pattern, &branch.handler);
            quote_spanned!(site=> #out::#variant(#pattern) => #handler,)
        });
        let otherwise = match &self.otherwise {
            Some(handler) => quote_spanned!(site=> #handler),
            None => quote_spanned!(site=> ::core::panic!(
                "all branches are disabled and there is no else branch"
            )),
        };

        quote_spanned! {site=> {
            enum #out<#(#types,)*> {
                #(#variants(#types),)*
                Disabled,
            }
            // `mut`, for an arm that binds by `ref mut` into the output.
            #[allow(unused_mut)]
            let mut #output = {
                let mut #disabled: #mask = 0;
                #(#preconditions)*
                #pins
                ::core::future::poll_fn(move |#cx: &mut ::core::task::Context<'_>| {
                    if #krate::__private::select_budget(#cx).is_pending() {
                        return ::core::task::Poll::Pending;
                    }
                    let #first: ::core::primitive::u32 = #start;
                    #split
                    #in_turn
                    if #disabled == #all {
                        ::core::task::Poll::Ready(#out::Disabled)
                    } else {
                        ::core::task::Poll::Pending
                    }
                })
                .await
            };
            match #output {
                #(#arms)*
                #out::Disabled => #otherwise,
                #[allow(unreachable_patterns)]
                _ => ::core::unreachable!("select!: an output matched its pattern when polled"),
            }
        }}
    }
}

#[cfg(test)]
mod tests {
    use quote::quote;

    use super::*;

    fn parse(tokens: TokenStream) -> syn::Result<Select> {
        syn::parse2(tokens)
    }

    #[test]
    fn branches_preconditions_and_else_parse() {
        let select = parse(quote! {
            (::escapement) biased;
            Some(x) = a, if ready => x,
            _ = b => { 1 }
            else => 2,
        })
        .unwrap();
        assert!(select.biased);
        assert_eq!(select.branches.len(), 2);
        assert!(select.branches[0].precondition.is_some());
        assert!(select.branches[1].precondition.is_none());
        assert!(select.otherwise.is_some());
    }

    #[test]
    fn a_branch_named_biased_is_not_the_keyword() {
        let select = parse(quote!((::escapement) biased = a => 1)).unwrap();
        assert!(!select.biased);
        assert_eq!(select.branches.len(), 1);
    }

    #[test]
    fn mistakes_are_errors() {
        let message = |tokens| parse(tokens).err().expect("an error").to_string();
        assert!(message(quote!((::escapement))).contains("at least one"));
        // An `else` alone is a `select!` whose branches are all disabled.
        let select = parse(quote!((::escapement) biased; else => 1)).unwrap();
        assert!(select.branches.is_empty() && select.otherwise.is_some());
        assert!(message(quote!((::escapement) _ = a => 1 else => 2)).contains("expected `,`"));
        // A block ends its handler, as in a `match`: what follows is the next branch.
        let select = parse(quote!((::escapement) _ = a => {} () = b => {})).unwrap();
        assert_eq!(select.branches.len(), 2);
        assert!(
            message(quote!((::escapement) _ = a => 1, else => 2, else => 3))
                .contains("at most one `else`")
        );
        let many: TokenStream = (0..65).map(|_| quote!(_ = a => 1,)).collect();
        assert!(message(quote!((::escapement) #many)).contains("at most 64"));
    }

    #[test]
    fn top_level_reference_patterns_are_peeled() {
        let peeled = |pattern: Pat| {
            let (inner, derefs) = peel_references(&pattern);
            (quote!(#inner).to_string(), derefs)
        };
        assert_eq!(
            peeled(syn::parse_quote!(&mut (a, Some(&mut b)))),
            (quote!((a, Some(&mut b))).to_string(), 1)
        );
        assert_eq!(peeled(syn::parse_quote!((&&x))), (quote!(x).to_string(), 2));
        assert_eq!(
            peeled(syn::parse_quote!(Some(x))),
            (quote!(Some(x)).to_string(), 0)
        );
    }

    #[test]
    fn the_pattern_tried_by_reference_loses_mut_and_ref() {
        let mut pattern: Pat = syn::parse_quote!((mut a, ref b, ref mut c @ Some(_), &mut d));
        Clean.visit_pat_mut(&mut pattern);
        assert_eq!(
            quote!(#pattern).to_string(),
            quote!((a, b, c @ Some(_), &mut d)).to_string()
        );
    }
}
