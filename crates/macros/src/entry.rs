//! [`Entry`]: checks an `async fn` and rewrites it into a plain `fn` that runs its body on a
//! new runtime.

use proc_macro2::{Delimiter, Group, Ident, Span, TokenStream};
use quote::{quote, quote_spanned, ToTokens};
use syn::punctuated::Punctuated;
use syn::{AttrStyle, Attribute, ItemFn};

use crate::args::{Args, Flavor};

/// Which attribute is expanding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Entry {
    /// `#[escapement::main]`: the runtime's size defaults to the `Builder`'s.
    Main,
    /// `#[escapement::test]`: adds `#[test]`; a current-thread runtime unless told otherwise.
    Test,
}

impl Entry {
    /// The attribute as the user writes it, for error messages.
    fn name(self) -> &'static str {
        match self {
            Entry::Main => "`#[escapement::main]`",
            Entry::Test => "`#[escapement::test]`",
        }
    }

    /// Expands the attribute `#[name(args)]` on `item`.
    ///
    /// On errors the output is still the rewritten function, built with the default
    /// arguments, plus one `compile_error!` per error: the user sees only the errors that
    /// matter, not a cascade ("`main` function not found", "`main` is not allowed to be
    /// `async`"), and an IDE still sees the function. A test with parameters keeps them but
    /// loses its `#[test]`, `main` loses its parameters, and a second `#[test]` goes: each
    /// of those would bring an error of its own.
    pub(crate) fn expand(self, args: TokenStream, item: TokenStream) -> TokenStream {
        let mut function: ItemFn = match syn::parse2(item.clone()) {
            Ok(function) => function,
            Err(error) => {
                // Not a function: keep the item as it was, beside the error.
                let mut output = error.to_compile_error();
                output.extend(item);
                return output;
            }
        };
        let mut errors = self.check(&function);
        let args = Args::parse(args).unwrap_or_else(|error| {
            errors.push(error);
            Args::default()
        });
        if errors.is_empty() {
            return self.rewrite(args, function, self == Entry::Test);
        }
        let takes_arguments = !function.sig.inputs.is_empty();
        if self == Entry::Main && function.sig.ident == "main" {
            function.sig.inputs = Punctuated::new();
        }
        if self == Entry::Test {
            function.attrs.retain(|attr| !is_test_attribute(attr));
        }
        let test = self == Entry::Test && !takes_arguments;
        let mut output = self.rewrite(args, function, test);
        output.extend(errors.iter().map(syn::Error::to_compile_error));
        output
    }

    /// The function's own mistakes, each spanned at the offending tokens.
    fn check(self, function: &ItemFn) -> Vec<syn::Error> {
        let mut errors = Vec::new();
        let sig = &function.sig;
        if sig.asyncness.is_none() {
            errors.push(syn::Error::new_spanned(
                sig.fn_token,
                format!(
                    "the `async` keyword is missing from the function declaration: \
                     {} runs an `async fn`",
                    self.name()
                ),
            ));
        }
        // Any other function may take arguments: `#[escapement::main]` on a method or a
        // helper makes a synchronous entry point, as tokio's does.
        if !sig.inputs.is_empty() {
            match self {
                Entry::Main if sig.ident == "main" => errors.push(syn::Error::new_spanned(
                    &sig.inputs,
                    "the `main` function cannot take arguments: read them with `std::env::args()`",
                )),
                Entry::Main => {}
                Entry::Test => errors.push(syn::Error::new_spanned(
                    &sig.inputs,
                    "test functions cannot take arguments",
                )),
            }
        }
        if self == Entry::Test {
            // A second `#[test]` would register the test twice, or fail in a confusing way.
            for attr in function.attrs.iter().filter(|attr| is_test_attribute(attr)) {
                errors.push(syn::Error::new_spanned(
                    attr,
                    "a second test attribute: `#[escapement::test]` already adds `#[test]`",
                ));
            }
        }
        errors
    }

    /// The plain `fn` that builds a runtime and `block_on`s the body; `#[test]` on top when
    /// `test`.
    fn rewrite(self, args: Args, mut function: ItemFn, test: bool) -> TokenStream {
        function.sig.asyncness = None;
        let ItemFn {
            attrs,
            vis,
            sig,
            block,
        } = function;
        // Inner attributes (`#![allow(...)]` atop the body) stay inside the function.
        let (inner, outer): (Vec<_>, Vec<_>) = attrs
            .into_iter()
            .partition(|attr| matches!(attr.style, AttrStyle::Inner(_)));
        // The runtime's settings; the builder's defaults apply to what is left out. A test
        // runs on a current-thread runtime unless told otherwise, as tokio's.
        let builder = match (args.worker_threads, args.flavor, self) {
            (Some(count), _, _) => quote!(new().worker_threads(#count)),
            (None, Some(Flavor::CurrentThread), _) | (None, None, Entry::Test) => {
                quote!(new_current_thread())
            }
            (None, Some(Flavor::MultiThread), _) | (None, None, Entry::Main) => quote!(new()),
        };
        let start_paused = args
            .start_paused
            .map(|paused| quote!(.start_paused(#paused)));
        let name = args.name.map(|name| quote!(.name(#name)));
        let krate = args
            .krate
            .map_or_else(|| quote!(::escapement), |path| path.into_token_stream());
        let test = test.then(|| quote!(#[::core::prelude::v1::test]));

        // `block_on` returns the function's value, so a body of another type than the return
        // type is reported at that call: locate the call at the body's last token. Its locals
        // resolve at the `mixed_site`, so the body can neither see nor shadow them.
        let last = block
            .stmts
            .last()
            .map(ToTokens::into_token_stream)
            .and_then(|tokens| tokens.into_iter().last())
            .map_or_else(|| block.brace_token.span.close(), |token| token.span());
        let local = |name| Ident::new(name, Span::mixed_site().located_at(last));
        let (body, runtime) = (local("body"), local("runtime"));
        let run = quote_spanned!(last=> #runtime.block_on(#body));
        // The function's braces keep the span of the user's, as tokio's do: a function whose
        // body's braces came from the macro counts as macro-made code, on which rustc reports
        // no `dead_code` or other lints of the function.
        let braces = block.brace_token.span.join();
        let mut function_body = Group::new(
            Delimiter::Brace,
            quote! {
                #(#inner)*
                let #body = async #block;
                let #runtime = #krate::Builder::#builder
                    #start_paused
                    #name
                    .build()
                    .expect("failed to build the escapement runtime");
                #run
            },
        );
        function_body.set_span(braces);

        quote! {
            #test
            #(#outer)*
            #vis #sig #function_body
        }
    }
}

/// Whether `attr` adds a test of its own: `#[test]`, the prelude's `#[core::prelude::v1::test]`
/// (or `std`'s, any edition), `#[escapement::test]` or `#[tokio::test]`, each with or without a
/// leading `::`. Another crate's `test` attribute (`#[test_log::test]`) is kept, as tokio keeps it.
fn is_test_attribute(attr: &Attribute) -> bool {
    let names: Vec<String> = attr
        .path()
        .segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect();
    matches!(
        names.iter().map(String::as_str).collect::<Vec<_>>()[..],
        ["test"] | ["escapement" | "tokio", "test"] | ["core" | "std", "prelude", _, "test"]
    )
}

#[cfg(test)]
mod tests {
    use super::Entry;
    use quote::quote;

    /// The tokens as a string with one space between tokens, for comparison.
    fn normalized(tokens: proc_macro2::TokenStream) -> String {
        tokens
            .to_string()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn expands_as_the_design_note_says() {
        let expanded = Entry::Test.expand(
            quote!(start_paused = true),
            quote! {
                #[ignore]
                pub(crate) async fn ticks() -> Result<(), E> {
                    #![allow(unused)]
                    Ok(())
                }
            },
        );
        let expected = quote! {
            #[::core::prelude::v1::test]
            #[ignore]
            pub(crate) fn ticks() -> Result<(), E> {
                #![allow(unused)]
                let body = async { Ok(()) };
                let runtime = ::escapement::Builder::new_current_thread()
                    .start_paused(true)
                    .build()
                    .expect("failed to build the escapement runtime");
                runtime.block_on(body)
            }
        };
        assert_eq!(normalized(expanded), normalized(expected));
    }

    #[test]
    fn main_keeps_the_builder_defaults() {
        let expanded = Entry::Main.expand(
            quote!(),
            quote!(
                async fn main() {}
            ),
        );
        let expected = quote! {
            fn main() {
                let body = async {};
                let runtime = ::escapement::Builder::new()
                    .build()
                    .expect("failed to build the escapement runtime");
                runtime.block_on(body)
            }
        };
        assert_eq!(normalized(expanded), normalized(expected));
    }

    #[test]
    fn errors_come_with_the_rewritten_function() {
        let expanded = Entry::Test.expand(
            quote!(worker_threads = 0),
            quote!(
                #[test]
                fn takes(count: usize) {}
            ),
        );
        let expanded = normalized(expanded);
        // Rewritten with the defaults, keeping the parameter, without either `#[test]`.
        let function = normalized(quote!(
            fn takes(count: usize) {}
        ));
        let function = function.trim_end_matches(" { }");
        assert!(expanded.starts_with(function), "{expanded}");
        assert!(expanded.contains(&normalized(quote!(new_current_thread()))));
        for message in [
            "the `async` keyword is missing",
            "test functions cannot take arguments",
            "a second test attribute",
            "`worker_threads` must be at least 1",
        ] {
            assert!(expanded.contains(message), "{message} in {expanded}");
        }
        assert_eq!(expanded.matches("compile_error").count(), 4);

        // `main` itself loses its parameters, which `fn main` cannot have.
        let expanded = normalized(Entry::Main.expand(
            quote!(),
            quote!(
                async fn main(args: Vec<String>) {}
            ),
        ));
        assert!(expanded.starts_with("fn main () {"), "{expanded}");
        assert!(expanded.contains("the `main` function cannot take arguments"));
    }

    #[test]
    fn only_the_test_attributes_that_add_a_test_are_refused() {
        let refused = [
            quote!(#[test]),
            quote!(#[::core::prelude::v1::test]),
            quote!(#[std::prelude::rust_2021::test]),
            quote!(#[escapement::test]),
            quote!(#[::tokio::test]),
        ];
        let kept = [
            quote!(#[test_log::test]),
            quote!(#[some_crate::test]),
            quote!(#[core::test]),
            quote!(#[tested]),
        ];
        for (attribute, second) in refused
            .iter()
            .map(|a| (a, true))
            .chain(kept.iter().map(|a| (a, false)))
        {
            let expanded = normalized(Entry::Test.expand(
                quote!(),
                quote!(
                    #attribute
                    async fn twice() {}
                ),
            ));
            assert_eq!(
                expanded.contains("a second test attribute"),
                second,
                "{attribute}"
            );
            // A refused attribute is dropped, leaving the one `#[test]` the macro adds; a kept
            // one stays on the rewritten function beside it.
            let attributes = expanded.split("fn twice").next().unwrap_or_default();
            let count = if second { 1 } else { 2 };
            assert_eq!(attributes.matches("# [").count(), count, "{expanded}");
        }
    }

    #[test]
    fn main_on_another_function_keeps_its_parameters() {
        let expanded = Entry::Main.expand(
            quote!(crate = "::renamed", name = "ingest"),
            quote!(
                async fn run(&self, extra: u32) -> u32 {
                    self.0 + extra
                }
            ),
        );
        let expected = quote! {
            fn run(&self, extra: u32) -> u32 {
                let body = async { self.0 + extra };
                let runtime = ::renamed::Builder::new()
                    .name("ingest")
                    .build()
                    .expect("failed to build the escapement runtime");
                runtime.block_on(body)
            }
        };
        assert_eq!(normalized(expanded), normalized(expected));
    }
}
