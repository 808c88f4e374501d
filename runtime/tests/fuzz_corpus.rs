//! Replays the fuzz corpora (`fuzz/corpus/{sse,classify,retry_after}`) through the fuzz targets'
//! own checks (`fuzz/checks/*.rs`), so every run of the tests keeps the interesting inputs passing.

#[path = "../../fuzz/checks/classify.rs"]
mod classify;
#[path = "../../fuzz/checks/retry_after.rs"]
mod retry_after;
#[path = "../../fuzz/checks/sse.rs"]
mod sse;

#[path = "../../fuzz/checks/replay.rs"]
mod replay;

use replay::replay;

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
