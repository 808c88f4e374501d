//! Replays the fuzz corpus (`fuzz/corpus/attribute`) through the fuzz target's own check
//! (`fuzz/checks/attribute.rs`), so every run of the tests keeps the interesting inputs passing.

// The attribute's sources, as `src/lib.rs` includes them: the check runs its whole pipeline.
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

#[path = "../../fuzz/checks/attribute.rs"]
mod attribute;

#[path = "../../fuzz/checks/replay.rs"]
mod replay;

use replay::replay;

/// On a thread with rustc's stack (8 MiB): `syn` parses nested generics (`validate = r<<<<..`)
/// recursively, and an unoptimized build needs more than a test thread's 2 MiB for the corpus.
#[test]
fn the_attribute_corpus_passes() {
    let replay = std::thread::Builder::new().stack_size(8 << 20).spawn(|| replay("attribute", attribute::check));
    replay.expect("a thread").join().expect("the corpus passes");
}
