#![no_main]

// The macros' sources, as `macros/src/lib.rs` includes them: by `#[path]` because a proc-macro
// crate exports only its macros, not these modules (and cannot be linked into a fuzz target).
#[allow(dead_code)]
#[path = "../../macros/src/attr.rs"]
mod attr;
#[allow(dead_code)]
#[path = "../../macros/src/expand.rs"]
mod expand;
use agentic_policy as rules;
#[allow(dead_code)]
#[path = "../../macros/src/valid.rs"]
mod valid;

// The check, shared with `macros/tests/fuzz_corpus.rs`: it calls `crate::expand`, so each includer
// compiles it next to the modules above.
#[path = "../checks/attribute.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
