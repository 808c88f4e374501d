//! What the tests of this binary share: the test server, a prefix of each test's own, a raw
//! connection to look at keys as Redis holds them, and the runtimes they build.
//!
//! Every test needs the Redis at `AGENTIC_REDIS_URL` (`.ci/run` starts one). Without it they skip,
//! saying how to start one, so that `cargo test --workspace` passes on a machine without Redis;
//! with `AGENTIC_REQUIRE_REDIS=1` (`.ci/run` sets it) a missing Redis fails them instead.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use agentic_redis::RedisStore;
use agentic_runtime::policy::Jitter;
use agentic_runtime::storm::BreakerSettings;
use agentic_runtime::{RetryPolicy, Runtime, Scripted, ScriptedProvider};

/// What to do when the test server is missing.
pub(crate) const HOW_TO_START: &str = "start one with `redis-server --port 6390 --save '' --appendonly no` \
     and set AGENTIC_REDIS_URL=redis://127.0.0.1:6390 (`.ci/run` does this), or set \
     AGENTIC_SKIP_REDIS=1 to skip the tests that need it";

/// The URL of the test server, or `None` (after saying so) when the tests are to skip.
pub(crate) fn redis_url(test: &str) -> Option<String> {
    if std::env::var("AGENTIC_SKIP_REDIS").is_ok_and(|skip| skip == "1") {
        println!("skipping {test}: AGENTIC_SKIP_REDIS=1");
        return None;
    }
    match std::env::var("AGENTIC_REDIS_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var("AGENTIC_REQUIRE_REDIS").is_ok_and(|require| require == "1") => {
            panic!(
                "{test} needs a Redis server (AGENTIC_REQUIRE_REDIS=1) and AGENTIC_REDIS_URL is not set: {HOW_TO_START}"
            )
        }
        _ => {
            println!("skipping {test}: no Redis, AGENTIC_REDIS_URL is not set: {HOW_TO_START}");
            None
        }
    }
}

/// A prefix no other test (or run) uses.
pub(crate) fn prefix(test: &str) -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos();
    format!("agentic-test:{test}:{}:{nanos}:{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
}

/// A store at `url` with `prefix`, as one process has.
pub(crate) async fn store(url: &str, prefix: &str) -> Arc<RedisStore> {
    let store = RedisStore::connect(url).await.unwrap_or_else(|err| panic!("Redis at {url}: {err}"));
    Arc::new(store.with_prefix(prefix).with_timeout(Duration::from_secs(2)))
}

/// A raw connection to the test server.
pub(crate) async fn raw(url: &str) -> redis::aio::MultiplexedConnection {
    redis::Client::open(url).unwrap().get_multiplexed_async_connection().await.unwrap()
}

/// Now on the Redis server's clock, in ms (the clock of the breakers' open periods).
pub(crate) async fn server_ms(url: &str) -> u64 {
    let (secs, micros): (u64, u64) = redis::cmd("TIME").query_async(&mut raw(url).await).await.unwrap();
    secs * 1000 + micros / 1000
}

/// The key's remaining lifetime in ms, as `PTTL` says: -2 when there is no key, -1 when it never
/// expires.
pub(crate) async fn pttl(url: &str, key: &str) -> i64 {
    redis::cmd("PTTL").arg(key).query_async(&mut raw(url).await).await.unwrap()
}

/// Sets `fields` of the hash `key`, as a person with `redis-cli` would (no expiry).
pub(crate) async fn hset(url: &str, key: &str, fields: &[(&str, &str)]) {
    let mut command = redis::cmd("HSET");
    command.arg(key);
    for (field, value) in fields {
        command.arg(*field).arg(*value);
    }
    let _: () = command.query_async(&mut raw(url).await).await.unwrap();
}

/// The fields of the hash `key`.
pub(crate) async fn hgetall(url: &str, key: &str) -> Vec<(String, String)> {
    let mut fields: Vec<(String, String)> =
        redis::cmd("HGETALL").arg(key).query_async(&mut raw(url).await).await.unwrap();
    fields.sort();
    fields
}

/// 1 ms backoffs: the fleet's windows run on the Redis server's clock, which tokio cannot pause.
pub(crate) const FAST: RetryPolicy =
    RetryPolicy::new().with_session_base_delay_ms(1).with_exec_base_delay_ms(1).with_jitter(Jitter::None);

/// A primary (model `primary`) and a secondary (model `secondary`) that answer, each counting its
/// requests.
pub(crate) fn two_targets() -> (ScriptedProvider, ScriptedProvider) {
    let primary = ScriptedProvider::new([]).otherwise(Scripted::ok("from the primary")).with_model("primary");
    let secondary = ScriptedProvider::new([]).otherwise(Scripted::ok("from the secondary")).with_model("secondary");
    (primary, secondary)
}

/// A runtime of `primary` with `secondary` as its fallback, the standard breaker, and `store`.
pub(crate) fn with_fallback(
    primary: &ScriptedProvider,
    secondary: &ScriptedProvider,
    store: Arc<RedisStore>,
) -> Runtime {
    Runtime::builder(primary.clone())
        .with_fallback(secondary.clone())
        .with_breaker(BreakerSettings::standard())
        .with_shared_store(store)
        .build()
        .unwrap()
}
