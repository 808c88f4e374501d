//! Replays a fuzz corpus through its target's check, for the `fuzz_corpus` tests of the crates the
//! targets exercise, so every run of the tests keeps the interesting inputs passing.

use std::path::Path;

/// Runs `check` on every file of `fuzz/corpus/<target>`; a panic names the file.
pub fn replay(target: &str, check: fn(&[u8])) {
    // This crate's folder is one below the workspace root, as `fuzz/` is.
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
