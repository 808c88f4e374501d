//! Replays the fuzz corpus (`fuzz/corpus/scenario`) through the fuzz target's own check
//! (`agentic_test_support::fuzz::scenario`), so every run of the tests keeps the interesting inputs
//! passing.

use agentic_test_support::fuzz::{replay, scenario};

#[test]
fn the_scenario_corpus_passes() {
    replay("scenario", scenario::check);
}
