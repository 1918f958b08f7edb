//! [`Args`]: the attribute's arguments, `flavor = "..."`, `worker_threads = N`,
//! `start_paused = BOOL`, `name = "..."` and `crate = "path"`.

use std::fmt;

use proc_macro2::{Ident, Literal, TokenStream};
use quote::ToTokens;
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::{Expr, ExprLit, Lit, LitStr, Meta, MetaNameValue, Path, Token};

/// The runtime configuration an attribute asks for; `None` where it names nothing.
#[derive(Default)]
pub(crate) struct Args {
    /// `flavor = "multi_thread"` or `"current_thread"`, tokio's names, kept so that a tokio
    /// attribute ports unchanged.
    pub(crate) flavor: Option<Flavor>,
    /// `worker_threads = N`: `N` as an unsuffixed `usize` literal with the user's span.
    pub(crate) worker_threads: Option<Literal>,
    /// `start_paused = BOOL`: `true` or `false` as written, with the user's span.
    pub(crate) start_paused: Option<Ident>,
    /// `name = "..."`: the runtime's name (`Builder::name`), a non-empty string literal.
    pub(crate) name: Option<LitStr>,
    /// `crate = "path"`: the path the expansion names the crate by, for a dependency renamed
    /// in `Cargo.toml`; `::escapement` without it.
    pub(crate) krate: Option<Path>,
}

impl fmt::Debug for Args {
    /// syn's types print their tokens here: their own `Debug` needs a feature of syn's that
    /// nothing else uses.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tokens = |t: &dyn ToTokens| t.to_token_stream().to_string();
        f.debug_struct("Args")
            .field("flavor", &self.flavor)
            .field("worker_threads", &self.worker_threads)
            .field("start_paused", &self.start_paused)
            .field("name", &self.name.as_ref().map(|name| tokens(name)))
            .field("krate", &self.krate.as_ref().map(|path| tokens(path)))
            .finish()
    }
}

/// The runtime a tokio attribute asks for: `CurrentThread` is what a test gets by default,
/// a runtime whose tasks run on the thread in `block_on`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flavor {
    MultiThread,
    CurrentThread,
}

impl Args {
    /// Parses `name = value, ...` in any order.
    ///
    /// Every bad argument is reported, not just the first, each error spanned at the
    /// offending token: an unknown or repeated name at the name, a bad value at the value.
    pub(crate) fn parse(tokens: TokenStream) -> syn::Result<Args> {
        let metas = Punctuated::<Meta, Token![,]>::parse_terminated.parse2(tokens)?;
        let mut args = Args::default();
        let mut errors: Option<syn::Error> = None;
        let mut report = |error| match &mut errors {
            Some(errors) => syn::Error::combine(errors, error),
            None => errors = Some(error),
        };
        for meta in &metas {
            if let Err(error) = args.apply(meta) {
                report(error);
            }
        }
        if let (Some(Flavor::CurrentThread), Some(count)) = (args.flavor, &args.worker_threads) {
            report(syn::Error::new(
                count.span(),
                "`worker_threads` needs `flavor = \"multi_thread\"`: \"current_thread\" runs tasks on the calling thread",
            ));
        }
        match errors {
            Some(errors) => Err(errors),
            None => Ok(args),
        }
    }

    /// Records one argument.
    fn apply(&mut self, meta: &Meta) -> syn::Result<()> {
        let path = meta.path();
        let name = path
            .get_ident()
            .map(ToString::to_string)
            .unwrap_or_default();
        match name.as_str() {
            "flavor" => set_once(&mut self.flavor, meta, "flavor = \"multi_thread\"", flavor),
            "worker_threads" => set_once(
                &mut self.worker_threads,
                meta,
                "worker_threads = 2",
                worker_threads,
            ),
            "start_paused" => set_once(
                &mut self.start_paused,
                meta,
                "start_paused = true",
                start_paused,
            ),
            "name" => set_once(&mut self.name, meta, "name = \"ingest\"", runtime_name),
            "crate" => set_once(&mut self.krate, meta, "crate = \"escapement\"", crate_path),
            _ => {
                let shown = path.to_token_stream().to_string();
                let message = format!(
                    "unknown argument `{}`: expected `flavor`, `worker_threads`, `start_paused`, \
                     `name` or `crate`",
                    shown.replace(' ', "")
                );
                Err(syn::Error::new_spanned(path, message))
            }
        }
    }
}

/// Records `name = value` in `slot`, read by `parse`: an error if the name was given
/// before (spanned at this second occurrence), if it has no value (`example` shows one), or
/// if `parse` rejects the value.
fn set_once<T>(
    slot: &mut Option<T>,
    meta: &Meta,
    example: &str,
    parse: impl FnOnce(&Expr) -> syn::Result<T>,
) -> syn::Result<()> {
    if slot.is_some() {
        let path = meta.path();
        let name = path.to_token_stream().to_string();
        return Err(syn::Error::new_spanned(
            path,
            format!("duplicate argument `{name}`"),
        ));
    }
    *slot = Some(parse(value_of(meta, example)?)?);
    Ok(())
}

/// The value of `name = value`; a bare `name` or `name(...)` is an error.
fn value_of<'a>(meta: &'a Meta, example: &str) -> syn::Result<&'a Expr> {
    match meta {
        Meta::NameValue(MetaNameValue { value, .. }) => Ok(value),
        Meta::Path(_) | Meta::List(_) => Err(syn::Error::new_spanned(
            meta,
            format!("expected a value, as in `{example}`"),
        )),
    }
}

/// `flavor`: `"multi_thread"` or `"current_thread"`.
fn flavor(value: &Expr) -> syn::Result<Flavor> {
    match value {
        Expr::Lit(ExprLit {
            lit: Lit::Str(name),
            ..
        }) if name.value() == "multi_thread" => Ok(Flavor::MultiThread),
        Expr::Lit(ExprLit {
            lit: Lit::Str(name),
            ..
        }) if name.value() == "current_thread" => Ok(Flavor::CurrentThread),
        _ => Err(syn::Error::new_spanned(
            value,
            "`flavor` must be \"multi_thread\" or \"current_thread\"",
        )),
    }
}

/// `worker_threads`: a positive integer literal that fits a `usize`.
fn worker_threads(value: &Expr) -> syn::Result<Literal> {
    let int =
        match value {
            // syn reads `-1` as one literal; it is no more a count than `"2"` is.
            Expr::Lit(ExprLit {
                lit: Lit::Int(int), ..
            }) if !int.base10_digits().starts_with('-') => int,
            _ => return Err(syn::Error::new_spanned(
                value,
                "`worker_threads` must be a positive integer literal, as in `worker_threads = 2`",
            )),
        };
    let count: usize = int.base10_parse()?;
    if count == 0 {
        return Err(syn::Error::new_spanned(
            int,
            "`worker_threads` must be at least 1: a runtime needs a worker thread",
        ));
    }
    let mut literal = Literal::usize_unsuffixed(count);
    literal.set_span(int.span());
    Ok(literal)
}

/// `start_paused`: `true` or `false`.
fn start_paused(value: &Expr) -> syn::Result<Ident> {
    match value {
        Expr::Lit(ExprLit {
            lit: Lit::Bool(flag),
            ..
        }) => Ok(flag.token()),
        _ => Err(syn::Error::new_spanned(
            value,
            "`start_paused` must be `true` or `false`",
        )),
    }
}

/// `name`: a string literal with something besides whitespace in it (`Builder::name` would
/// panic at run time on any other).
fn runtime_name(value: &Expr) -> syn::Result<LitStr> {
    match value {
        Expr::Lit(ExprLit {
            lit: Lit::Str(name),
            ..
        }) if !name.value().trim().is_empty() => Ok(name.clone()),
        _ => Err(syn::Error::new_spanned(
            value,
            "`name` must be a non-empty string literal, as in `name = \"ingest\"`",
        )),
    }
}

/// `crate`: a string literal holding a path, as in `crate = "::my_escapement"`.
fn crate_path(value: &Expr) -> syn::Result<Path> {
    let Expr::Lit(ExprLit {
        lit: Lit::Str(path),
        ..
    }) = value
    else {
        return Err(syn::Error::new_spanned(
            value,
            "`crate` must be a path in a string literal, as in `crate = \"escapement\"`",
        ));
    };
    path.parse().map_err(|_| {
        syn::Error::new_spanned(
            path,
            "`crate` must be a path in a string literal, as in `crate = \"escapement\"`",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::{Args, Flavor};
    use quote::quote;

    fn error(tokens: proc_macro2::TokenStream) -> String {
        Args::parse(tokens).unwrap_err().to_string()
    }

    #[test]
    fn parses_every_argument_in_any_order() {
        let args = Args::parse(quote!(start_paused = true, worker_threads = 3)).unwrap();
        assert_eq!(args.worker_threads.unwrap().to_string(), "3");
        assert_eq!(args.start_paused.unwrap().to_string(), "true");

        let args = Args::parse(quote!(worker_threads = 1usize,)).unwrap();
        assert_eq!(args.worker_threads.unwrap().to_string(), "1");
        assert!(args.start_paused.is_none());

        let args = Args::parse(quote!()).unwrap();
        assert!(args.worker_threads.is_none() && args.start_paused.is_none());
        assert!(args.flavor.is_none());

        let args = Args::parse(quote!(worker_threads = 2, flavor = "multi_thread")).unwrap();
        assert_eq!(args.flavor, Some(Flavor::MultiThread));
        assert_eq!(args.worker_threads.unwrap().to_string(), "2");

        let args = Args::parse(quote!(flavor = "current_thread", start_paused = true)).unwrap();
        assert_eq!(args.flavor, Some(Flavor::CurrentThread));

        let args = Args::parse(quote!(crate = "::renamed::inner", name = "ingest")).unwrap();
        assert_eq!(args.name.unwrap().value(), "ingest");
        let krate = args.krate.unwrap();
        assert_eq!(
            quote!(#krate).to_string(),
            quote!(::renamed::inner).to_string()
        );
    }

    #[test]
    fn rejects_bad_arguments() {
        assert_eq!(
            error(quote!(threads = 2)),
            "unknown argument `threads`: expected `flavor`, `worker_threads`, `start_paused`, \
             `name` or `crate`"
        );
        assert!(error(quote!(name = "")).contains("non-empty string literal"));
        assert!(error(quote!(name = "  ")).contains("non-empty string literal"));
        assert!(error(quote!(name = ingest)).contains("non-empty string literal"));
        assert!(error(quote!(crate = escapement)).contains("a path in a string literal"));
        assert!(error(quote!(crate = "not a path")).contains("a path in a string literal"));
        assert_eq!(
            error(quote!(crate = "a", crate = "b")),
            "duplicate argument `crate`"
        );
        assert!(error(quote!(flavor = "single")).contains("\"multi_thread\" or"));
        assert!(error(quote!(flavor = multi_thread)).contains("\"multi_thread\" or"));
        assert!(error(quote!(flavor = "current_thread", worker_threads = 2))
            .contains("needs `flavor = \"multi_thread\"`"));
        assert_eq!(
            error(quote!(flavor = "multi_thread", flavor = "multi_thread")),
            "duplicate argument `flavor`"
        );
        assert_eq!(
            error(quote!(worker_threads = 1, worker_threads = 2)),
            "duplicate argument `worker_threads`"
        );
        assert!(error(quote!(worker_threads = 0)).contains("at least 1"));
        assert!(error(quote!(worker_threads = "2")).contains("positive integer literal"));
        assert!(error(quote!(worker_threads = -1)).contains("positive integer literal"));
        assert!(error(quote!(worker_threads = 1.5)).contains("positive integer literal"));
        assert!(error(quote!(worker_threads = 99999999999999999999999)).contains("too large"));
        assert!(error(quote!(worker_threads)).contains("expected a value"));
        assert!(error(quote!(start_paused = 1)).contains("`true` or `false`"));
    }

    #[test]
    fn reports_every_bad_argument() {
        let errors = Args::parse(quote!(worker_threads = 0, start_paused = "yes"))
            .unwrap_err()
            .into_iter()
            .count();
        assert_eq!(errors, 2);
    }
}
