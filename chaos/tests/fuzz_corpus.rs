//! Replays the fuzz corpus (`fuzz/corpus/scenario`) through the fuzz target's own check
//! (`fuzz/checks/scenario.rs`), so every run of the tests keeps the interesting inputs passing.

#[path = "../../fuzz/checks/scenario.rs"]
mod scenario;

#[path = "../../fuzz/checks/replay.rs"]
mod replay;

use replay::replay;

#[test]
fn the_scenario_corpus_passes() {
    replay("scenario", scenario::check);
}
