//! Compile errors of `#[escapement::main]`, `#[escapement::test]` and `task_local!`: each case
//! in `tests/ui/` must fail to compile with the messages, pointing at the tokens, of its
//! `.stderr` snapshot.
//!
//! After a change, regenerate the snapshots with
//! `TRYBUILD=overwrite cargo test -p escapement --test macros_ui` and read their diff.

/// One test for every case: trybuild builds them all in one project, once.
#[test]
fn misuses_are_compile_errors_at_the_offending_token() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
}
