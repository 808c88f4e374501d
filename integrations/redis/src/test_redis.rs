//! The test Redis of the unit tests that run the scripts against their Rust twins.

/// The test Redis for the tests that run the scripts against their Rust twins on a clock of their
/// own: its URL (`AGENTIC_REDIS_URL`), a blocking connection (no timer of a paused runtime waits on
/// it) and a key prefix no other test uses. `None` (the test skips, saying so) with
/// `AGENTIC_SKIP_REDIS=1`, or without `AGENTIC_REDIS_URL` unless `AGENTIC_REQUIRE_REDIS=1` (as
/// `.ci/run` sets it): `cargo test --workspace` passes on a machine without Redis, and CI cannot skip.
pub(crate) fn test_redis(test: &str) -> Option<(String, redis::Connection, String)> {
    if std::env::var("AGENTIC_SKIP_REDIS").is_ok_and(|skip| skip == "1") {
        println!("skipping {test}: AGENTIC_SKIP_REDIS=1");
        return None;
    }
    let Some(url) = std::env::var("AGENTIC_REDIS_URL").ok().filter(|url| !url.is_empty()) else {
        if std::env::var("AGENTIC_REQUIRE_REDIS").is_ok_and(|require| require == "1") {
            panic!("{test} needs AGENTIC_REDIS_URL: AGENTIC_REQUIRE_REDIS=1 says a Redis must be there");
        }
        println!("skipping {test}: no Redis (set AGENTIC_REDIS_URL to run it; `.ci/run` starts one)");
        return None;
    };
    let connection = redis::Client::open(url.as_str())
        .and_then(|client| client.get_connection())
        .unwrap_or_else(|err| panic!("{test} cannot reach Redis at {url}: {err}"));
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let prefix = format!("agentic-test:{test}:{}:{nanos}", std::process::id());
    Some((url, connection, prefix))
}
