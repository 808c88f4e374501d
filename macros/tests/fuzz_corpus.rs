//! Replays the fuzz corpus (`fuzz/corpus/attribute`) through the fuzz target's own check
//! (`fuzz/checks/attribute.rs`), so every run of the tests keeps the interesting inputs passing.

// The attribute's sources, as `src/lib.rs` includes them: the check runs its whole pipeline. By
// `#[path]` because a proc-macro crate exports only its macros, not these modules.
#[allow(dead_code)]
#[path = "../src/attr.rs"]
mod attr;
#[allow(dead_code)]
#[path = "../src/expand.rs"]
mod expand;
use agentic_policy as rules;
#[allow(dead_code)]
#[path = "../src/valid.rs"]
mod valid;

// The check, shared with the fuzz target: it calls `crate::expand`, so each includer compiles it
// next to the modules above (it cannot live in `agentic-test-support` with the other checks).
#[path = "../../fuzz/checks/attribute.rs"]
mod attribute;

use agentic_test_support::fuzz::replay;

/// On a thread with rustc's stack (8 MiB): `syn` parses nested generics (`validate = r<<<<..`)
/// recursively, and an unoptimized build needs more than a test thread's 2 MiB for the corpus.
#[test]
fn the_attribute_corpus_passes() {
    let replay = std::thread::Builder::new().stack_size(8 << 20).spawn(|| replay("attribute", attribute::check));
    replay.expect("a thread").join().expect("the corpus passes");
}
