//! The attribute's diagnostics (`ui/fail`, reviewed `.stderr` snapshots) and the shapes of function
//! it must keep accepting (`ui/pass`). Regenerate the snapshots with
//! `TRYBUILD=overwrite cargo test -p agentic-ui-tests --test ui` and read the diff.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.pass("tests/ui/pass/*.rs");
    cases.compile_fail("tests/ui/fail/*.rs");
}
