//! Replays the fuzz corpora (`fuzz/corpus/{sse,classify,retry_after,rate_limits}`) through the fuzz targets'
//! own checks (`agentic_test_support::fuzz`), so every run of the tests keeps the interesting inputs
//! passing. The sse and retry_after targets exercise the HTTP providers (feature `providers`).

use agentic_test_support::fuzz::{classify, rate_limits, replay};
#[cfg(feature = "providers")]
use agentic_test_support::fuzz::{retry_after, sse};

#[cfg(feature = "providers")]
#[test]
fn the_sse_corpus_passes() {
    replay("sse", sse::check);
}

#[test]
fn the_classify_corpus_passes() {
    replay("classify", classify::check);
}

#[test]
fn the_rate_limits_corpus_passes() {
    replay("rate_limits", rate_limits::check);
}

#[cfg(feature = "providers")]
#[test]
fn the_retry_after_corpus_passes() {
    replay("retry_after", retry_after::check);
}
