//! Replays the fuzz corpus (`fuzz/corpus/attribute`) through the fuzz target's own check
//! (`fuzz/checks/attribute.rs`), so every run of the tests keeps the interesting inputs passing.

// The attribute's sources, as `src/lib.rs` includes them: the check runs its whole pipeline.
#[allow(dead_code)]
#[path = "../src/attr.rs"]
mod attr;
#[allow(dead_code)]
#[path = "../src/expand.rs"]
mod expand;
#[allow(dead_code)]
#[path = "../../runtime/src/policy/rules.rs"]
mod rules;
#[allow(dead_code)]
#[path = "../src/valid.rs"]
mod valid;

#[path = "../../fuzz/checks/attribute.rs"]
mod attribute;

use std::path::Path;

/// Runs `check` on every file of `fuzz/corpus/<target>`; a panic names the file.
fn replay(target: &str, check: fn(&[u8])) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus").join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|error| panic!("{}: {error}", dir.display()))
        .map(|entry| entry.expect("a corpus entry").path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{} is empty", dir.display());
    for file in files {
        let data = std::fs::read(&file).expect("a corpus file");
        if std::panic::catch_unwind(|| check(&data)).is_err() {
            panic!("fuzz/corpus/{target}/{} fails", file.file_name().unwrap().to_string_lossy());
        }
    }
}

/// On a thread with rustc's stack (8 MiB): `syn` parses nested generics (`validate = r<<<<..`)
/// recursively, and an unoptimized build needs more than a test thread's 2 MiB for the corpus.
#[test]
fn the_attribute_corpus_passes() {
    let replay = std::thread::Builder::new().stack_size(8 << 20).spawn(|| replay("attribute", attribute::check));
    replay.expect("a thread").join().expect("the corpus passes");
}
