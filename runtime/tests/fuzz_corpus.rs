//! Replays the fuzz corpora (`fuzz/corpus/{sse,classify,retry_after}`) through the fuzz targets'
//! own checks (`fuzz/checks/*.rs`), so every run of the tests keeps the interesting inputs passing.

#[path = "../../fuzz/checks/classify.rs"]
mod classify;
#[path = "../../fuzz/checks/retry_after.rs"]
mod retry_after;
#[path = "../../fuzz/checks/sse.rs"]
mod sse;

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

#[test]
fn the_sse_corpus_passes() {
    replay("sse", sse::check);
}

#[test]
fn the_classify_corpus_passes() {
    replay("classify", classify::check);
}

#[test]
fn the_retry_after_corpus_passes() {
    replay("retry_after", retry_after::check);
}
