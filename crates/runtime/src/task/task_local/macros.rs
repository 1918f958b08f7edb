//! [`task_local!`](crate::task_local): declares task-local keys.

/// Declares task-local keys: `static`s of type [`LocalKey`](crate::task::LocalKey) whose
/// value is set by a scope around a future ([`LocalKey::scope`]) or a closure
/// ([`LocalKey::sync_scope`]), and seen only by what runs inside it.
///
/// The macro takes any number of declarations `static NAME: Type;`, each with its own
/// attributes (doc comments included) and visibility (`pub`, `pub(crate)`...), and keeps
/// them on the `static` it declares. The last `;` may be left out. Each key has its own
/// thread-local, declared in the invoking crate; `Type` must be `'static`, and `Send` for a
/// future that is spawned.
///
/// # Examples
///
/// ```
/// escapement::task_local! {
///     /// The id of the request being served.
///     pub static REQUEST_ID: u64;
///
///     /// The user it is served for.
///     pub(crate) static USER: String;
/// }
///
/// # escapement::Runtime::new().unwrap().block_on(async {
/// REQUEST_ID
///     .scope(7, async {
///         USER.scope("ada".to_string(), async {
///             assert_eq!(REQUEST_ID.get(), 7);
///             USER.with(|user| assert_eq!(user, "ada"));
///         })
///         .await;
///     })
///     .await;
/// # });
/// ```
///
/// [`LocalKey::scope`]: crate::task::LocalKey::scope
/// [`LocalKey::sync_scope`]: crate::task::LocalKey::sync_scope
#[macro_export]
macro_rules! task_local {
    () => {};
    ($(#[$attr:meta])* $vis:vis static $name:ident: $t:ty $(; $($rest:tt)*)?) => {
        $(#[$attr])*
        $vis static $name: $crate::task::LocalKey<$t> =
            $crate::task::LocalKey::__new($crate::__task_local_thread_local!($t));
        $($crate::task_local!($($rest)*);)?
    };
}
