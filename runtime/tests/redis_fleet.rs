//! Fleet mode end to end: two `Runtime`s (as two processes would) sharing one Redis share the retry
//! bucket and the cooldowns; with Redis down, calls go on with local state and one warning.
//! Needs `AGENTIC_REDIS_URL` (`.ci/run` starts a server); `AGENTIC_SKIP_REDIS=1` skips.

use std::sync::Arc;
use std::time::{Duration, Instant};

use agentic_runtime::budget::RetryQuota;
use agentic_runtime::budget::redis::RedisStore;
use agentic_runtime::{ExecErrorKind, RetryPolicy, Runtime, ScriptedProvider, Step};
use agentic_test_support::captured_log::Captured;

fn redis_url(test: &str) -> Option<String> {
    if std::env::var("AGENTIC_SKIP_REDIS").is_ok_and(|skip| skip == "1") {
        println!("skipping {test}: AGENTIC_SKIP_REDIS=1");
        return None;
    }
    Some(std::env::var("AGENTIC_REDIS_URL").unwrap_or_else(|_| {
        panic!("{test} needs Redis: start `redis-server --port 6390` and set AGENTIC_REDIS_URL=redis://127.0.0.1:6390")
    }))
}

async fn shared_store(url: &str, test: &str) -> Arc<RedisStore> {
    let prefix = format!("agentic-test-{test}-{}-{}", std::process::id(), fastrand_suffix());
    Arc::new(RedisStore::connect(url).await.expect("Redis answers").with_prefix(prefix))
}

fn fastrand_suffix() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64
}

const FAST: RetryPolicy = RetryPolicy::new().with_session_base_delay_ms(1).with_exec_base_delay_ms(1);

#[tokio::test]
async fn two_runtimes_share_the_retry_bucket() {
    let Some(url) = redis_url("two_runtimes_share_the_retry_bucket") else { return };
    let store = shared_store(&url, "bucket").await;
    let quota = Some(RetryQuota::standard().with_capacity(10));
    let failing = || ScriptedProvider::new([]).with_fallback(Step::error("overloaded"));
    // Separate stores, as two processes would have: the same prefix, so the same keys.
    let other = Arc::new(RedisStore::connect(&url).await.unwrap().with_prefix(store.prefix().to_owned()));
    let first = Runtime::new(failing()).with_retry_quota(quota).with_shared_store(store);
    let second_provider = failing();
    let second = Runtime::new(second_provider.clone()).with_retry_quota(quota).with_shared_store(other);

    let error = first.exec_with(&FAST, "drain").await.unwrap_err();
    assert_eq!(error.kind(), ExecErrorKind::Budget);
    assert_eq!(error.calls(), 3, "two retries of 5 tokens drain the shared 10");
    // The second runtime's own bucket is full, but the shared one is empty: no retry at all.
    let error = second.exec_with(&FAST, "refused").await.unwrap_err();
    assert_eq!(error.kind(), ExecErrorKind::Budget);
    assert_eq!(second_provider.calls(), 1);
    assert!(error.stopped_by().unwrap().starts_with("the retry budget is empty"));
    assert_eq!(second.retry_tokens(), Some(10), "the local bucket was not used");
}

#[tokio::test]
async fn a_cooldown_learned_by_one_runtime_delays_the_other() {
    let Some(url) = redis_url("a_cooldown_learned_by_one_runtime_delays_the_other") else { return };
    let store = shared_store(&url, "cooldown").await;
    let other = Arc::new(RedisStore::connect(&url).await.unwrap().with_prefix(store.prefix().to_owned()));
    let first = Runtime::new(
        ScriptedProvider::new([Step::http(429, "slow down").with_retry_after(Duration::from_millis(400))])
            .with_fallback(Step::ok("fine")),
    )
    .with_shared_store(store);
    let second_provider = ScriptedProvider::new([Step::ok("fine")]);
    let second = Runtime::new(second_provider.clone()).with_shared_store(other);

    let policy = RetryPolicy::new().with_max_retries(1).with_session_retries(0);
    first.exec_with(&policy, "learns the wait").await.unwrap_err();
    let start = Instant::now();
    let reply = second.exec("waits").await.unwrap();
    assert_eq!(reply.calls(), 1, "the second runtime never saw the 429");
    let waited = start.elapsed();
    assert!(waited >= Duration::from_millis(300) && waited < Duration::from_secs(3), "{waited:?}");
}

#[test]
fn redis_down_means_local_state_and_one_warning_never_a_hang() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt().with_writer(move || writer.clone()).with_ansi(false).finish();
    tracing::subscriber::with_default(subscriber, || {
        let tokio = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        tokio.block_on(async {
            // Nothing listens on port 9 of the loopback address.
            let store = Arc::new(RedisStore::lazy("redis://127.0.0.1:9").unwrap());
            let provider = ScriptedProvider::new([
                Step::http(429, "slow").with_retry_after(Duration::from_millis(5)),
                Step::error("overloaded"),
                Step::ok("fine"),
            ])
            .with_fallback(Step::ok("fine"));
            let runtime = Runtime::new(provider)
                .with_retry_quota(Some(RetryQuota::standard().with_capacity(20)))
                .with_shared_store(store);
            let start = Instant::now();
            for _ in 0..3 {
                tokio::time::timeout(Duration::from_secs(10), runtime.exec_with(&FAST, "hi"))
                    .await
                    .expect("never hangs")
                    .unwrap();
            }
            assert!(start.elapsed() < Duration::from_secs(5));
            // The local bucket did the work: two retries taken, one returned by the success after them,
            // then the two first-try successes each returned one (capped at 20).
            assert_eq!(runtime.retry_tokens(), Some(17));
        });
    });
    let log = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert_eq!(log.matches("shared retry store unavailable").count(), 1, "{log}");
}
