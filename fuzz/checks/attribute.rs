//! The `attribute` check: `#[agentic_function(...)]`'s whole pipeline (parse the arguments, judge
//! them with the policy rules, expand) on any argument tokens. Shared by
//! `fuzz/fuzz_targets/attribute.rs` and `macros/tests/fuzz_corpus.rs`, whose crate roots include
//! the macros' sources (`attr`, `valid`, `expand`, and `agentic_policy` as `rules`).
//!
//! Included by `#[path]`, unlike the other checks (in `agentic-test-support`): it calls the
//! macros' private `crate::expand`, which a proc-macro crate cannot export, so it must be compiled
//! in the crate that compiles those modules.
//!
//! Input: byte 0 picks the item the attribute is on; the rest is the arguments' text.

use std::str::FromStr as _;

use proc_macro2::TokenStream;

/// What the attribute may be put on: the usual shapes, and two it rejects.
const ITEMS: [&str; 4] = [
    "/// Doc.\nasync fn fuzzed(runtime: &Runtime, text: &str) -> Result<Reply, ExecError> { runtime.exec(text).await }",
    "async fn fuzzed(&self, rt: agentic_runtime::Runtime) -> String { rt.exec(\"x\").await.unwrap().into_text() }",
    "fn fuzzed(runtime: &Runtime) {}",
    "struct Fuzzed;",
];

/// Never panics, and never loses the user's item: it is in the output, expanded or not.
pub fn check(data: &[u8]) {
    let [item, args @ ..] = data else { return };
    let Ok(args) = std::str::from_utf8(args) else { return };
    let Ok(args) = TokenStream::from_str(args) else { return };
    let item = TokenStream::from_str(ITEMS[usize::from(*item) % ITEMS.len()]).expect("the items lex");
    let output = crate::expand::agentic_function(args, item).to_string();
    assert!(output.contains("fuzzed") || output.contains("Fuzzed"), "the item was lost: {output}");
}
