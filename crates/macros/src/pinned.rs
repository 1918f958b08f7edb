//! The one pinned value that holds the futures of a `select!`, a `join!` or a `try_join!`.
//!
//! The futures go into a balanced tree of pairs, `((f0, f1), (f2, (f3, f4)))`, pinned once as
//! one value, and the poll closure owns the only pointer to it. Each poll splits the pinned
//! tree into one pinned future per branch with `__private::pin_split`, which is plain address
//! arithmetic. So the expansion's state holds one pointer where a pinned local per future,
//! each borrowed by the closure, held two per future.
//!
//! - Balanced, so that the type nests about log2(n) deep: the compiler's checks of a type
//!   (drop, layout, auto traits such as `Send`) recurse once per level, and a chain of pairs
//!   as deep as there are futures would reach its recursion limit (128) at about 125 futures,
//!   sooner where macros nest.
//! - The fields of a tuple drop first to last, and the tree keeps the futures in order from
//!   left to right, so they (and the outputs they keep) drop in the order written.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote_spanned};

/// The balanced tree of pairs of `values`, in order; one value alone is itself.
pub(crate) fn nest(values: &[TokenStream]) -> TokenStream {
    let site = Span::mixed_site();
    match values {
        [] => quote_spanned!(site=> ()),
        [value] => value.clone(),
        _ => {
            let (left, right) = values.split_at(values.len() / 2);
            let (left, right) = (nest(left), nest(right));
            quote_spanned!(site=> (#left, #right))
        }
    }
}

/// Statements that bind `names[i]`, `mut`, to the pinned `i`th future of the tree [`nest`]
/// built, which `tree` (a `Pin<&mut _>` the closure owns) points to.
pub(crate) fn split(krate: &TokenStream, tree: &syn::Ident, names: &[syn::Ident]) -> TokenStream {
    let site = Span::mixed_site();
    let root = syn::Ident::new("root", site);
    let mut statements = quote_spanned!(site=> let #root = #tree.as_mut(););
    split_into(krate, &root, names, &mut statements);
    statements
}

/// Appends to `statements` the splits of the subtree `node` holds into `names`.
fn split_into(
    krate: &TokenStream,
    node: &syn::Ident,
    names: &[syn::Ident],
    statements: &mut TokenStream,
) {
    let site = Span::mixed_site();
    if let [name] = names {
        statements.extend(quote_spanned!(site=> let mut #name = #node;));
        return;
    }
    let (left, right) = names.split_at(names.len() / 2);
    // Named by the first future of each half: unique within the expansion.
    let left_node = format_ident!("tree_{}", left[0], span = site);
    let right_node = format_ident!("tree_{}", right[0], span = site);
    statements.extend(quote_spanned! {site=>
        let (#left_node, #right_node) = #krate::__private::pin_split(#node);
    });
    split_into(krate, &left_node, left, statements);
    split_into(krate, &right_node, right, statements);
}
