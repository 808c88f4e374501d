//! Fleet mode end to end: two `Runtime`s (as two processes would) sharing one Redis share the retry
//! budget and the cooldowns; with Redis down, calls go on with local state and one warning.
//! Needs `AGENTIC_REDIS_URL` (`.ci/run` starts a server); `AGENTIC_SKIP_REDIS=1` skips.

use std::sync::Arc;
use std::time::{Duration, Instant};

use agentic_runtime::budget::RetryQuota;
use agentic_runtime::budget::redis::RedisStore;
use agentic_runtime::{ExecErrorKind, Jitter, RetryPolicy, Runtime, ScriptedProvider, Step};
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

/// 1 ms backoffs: the fleet's window runs on the Redis server's clock, which tokio cannot pause.
const FAST: RetryPolicy =
    RetryPolicy::new().with_session_base_delay_ms(1).with_exec_base_delay_ms(1).with_jitter(Jitter::None);

/// Two runtimes on one prefix, as two processes would be: separate stores, the same keys.
async fn two_runtimes(
    url: &str,
    test: &str,
    quota: RetryQuota,
    providers: [&ScriptedProvider; 2],
) -> (Runtime, Runtime) {
    let store = shared_store(url, test).await;
    let other = Arc::new(RedisStore::connect(url).await.unwrap().with_prefix(store.prefix().to_owned()));
    let [first, second] = providers;
    let first = Runtime::new(first.clone()).with_retry_quota(Some(quota)).with_shared_store(store);
    let second = Runtime::new(second.clone()).with_retry_quota(Some(quota)).with_shared_store(other);
    (first, second)
}

/// One runtime's successes pay for the other's retries: the budget's window is the fleet's.
#[tokio::test]
async fn one_runtimes_successes_pay_for_the_others_retries() {
    let Some(url) = redis_url("one_runtimes_successes_pay_for_the_others_retries") else { return };
    let healthy = ScriptedProvider::new([]).with_fallback(Step::ok("fine"));
    let failing = ScriptedProvider::new([]).with_fallback(Step::error("overloaded"));
    let no_floor = RetryQuota::standard().with_min_retries(0);
    let (first, second) = two_runtimes(&url, "pays", no_floor, [&healthy, &failing]).await;

    for _ in 0..3 {
        first.exec_with(&FAST, "answers").await.unwrap();
    }
    let error = second.exec_with(&FAST, "fails").await.unwrap_err();
    assert_eq!(error.kind(), ExecErrorKind::Budget);
    assert_eq!(error.calls(), 4, "the first call and the 3 retries the other runtime's successes paid for");
    assert!(
        error.stopped_by().unwrap().starts_with("the retry budget is empty: 3 retries against 3 successful calls"),
        "{:?}",
        error.stopped_by()
    );
    assert_eq!(second.retry_budget(), Some(0), "this process's own window was not used");
}

/// In an outage the fleet shares one floor: two runtimes together get the retries one would.
#[tokio::test]
async fn an_outage_seen_by_two_runtimes_spends_one_floor() {
    let Some(url) = redis_url("an_outage_seen_by_two_runtimes_spends_one_floor") else { return };
    let failing = || ScriptedProvider::new([]).with_fallback(Step::error("overloaded"));
    let (first_provider, second_provider) = (failing(), failing());
    // A floor of 10 retries in the window.
    let quota = RetryQuota::standard().with_min_retries(10);
    let (first, second) = two_runtimes(&url, "outage", quota, [&first_provider, &second_provider]).await;

    let error = first.exec_with(&FAST, "spends the floor").await.unwrap_err();
    assert_eq!((error.kind(), error.calls()), (ExecErrorKind::Budget, 11), "10 retries, then refused");
    let error = second.exec_with(&FAST, "refused").await.unwrap_err();
    assert_eq!((error.kind(), error.calls()), (ExecErrorKind::Budget, 1), "the floor is the fleet's");
    assert_eq!(first_provider.calls() + second_provider.calls(), 12, "24 without the budget");
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
            let runtime = Runtime::new(provider).with_shared_store(store);
            let start = Instant::now();
            for _ in 0..3 {
                tokio::time::timeout(Duration::from_secs(10), runtime.exec_with(&FAST, "hi"))
                    .await
                    .expect("never hangs")
                    .unwrap();
            }
            assert!(start.elapsed() < Duration::from_secs(5));
            // This process's window did the work: the floor of 100, plus 3 successes, less 2 retries.
            assert_eq!(runtime.retry_budget(), Some(101));
        });
    });
    let log = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert_eq!(log.matches("shared retry store unavailable").count(), 1, "{log}");
}
