//! The `scenario` check: `Scenario::from_json_str` on any text, and what parses round-trips
//! through `to_json`. Shared by `fuzz/fuzz_targets/scenario.rs` and `chaos/tests/fuzz_corpus.rs`.

use agentic_chaos::Scenario;

/// Never panics; a scenario that parses serializes to JSON that parses back to the same scenario.
pub fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(scenario) = Scenario::from_json_str(text) else { return };
    let json = scenario.to_json();
    let again = Scenario::from_json_str(&json).unwrap_or_else(|error| panic!("{json}\ndoes not parse back: {error}"));
    assert_eq!(again, scenario, "the round trip through\n{json}\nchanged the scenario");
    assert_eq!(again.to_json(), json);
}
