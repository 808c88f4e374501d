//! Storm control: the retry token bucket and the shared cooldown (issue 5), on paused time.

use std::time::Duration;

use agentic_runtime::budget::RetryQuota;
use agentic_runtime::{ExecErrorKind, Jitter, RetryPolicy, Runtime, ScriptedProvider, Step};

/// Runs `count` concurrent execs and returns (requests made, successes).
async fn storm(runtime: &Runtime, provider: &ScriptedProvider, count: usize) -> (usize, usize) {
    let before = provider.calls();
    let calls: Vec<_> = (0..count)
        .map(|index| {
            let runtime = runtime.clone();
            tokio::spawn(async move { runtime.exec(format!("call {index}")).await })
        })
        .collect();
    let mut ok = 0;
    for call in calls {
        if call.await.unwrap().is_ok() {
            ok += 1;
        }
    }
    (provider.calls() - before, ok)
}

#[tokio::test(start_paused = true)]
async fn an_empty_bucket_refuses_retries_at_once_and_success_refills_it() {
    // 10 tokens: two retries of 5.
    let provider = ScriptedProvider::new(Step::error("overloaded").times(3)).with_fallback(Step::ok("fine"));
    // Without jitter: pins the exact 2 s + 4 s of sleep.
    let runtime = Runtime::new(provider.clone())
        .with_policy(RetryPolicy::new().with_jitter(Jitter::None))
        .with_retry_quota(Some(RetryQuota::standard().with_capacity(10)));
    let error = runtime.exec("hi").await.unwrap_err();
    assert_eq!(error.kind(), ExecErrorKind::Budget);
    assert_eq!(provider.calls(), 3, "first call and two retries");
    let why = error.stopped_by().unwrap();
    assert!(why.starts_with("the retry budget is empty"), "{why}");
    assert_eq!(error.elapsed(), Duration::from_secs(6), "refused at once, no sleep after the third failure");
    assert_eq!(runtime.retry_tokens(), Some(0));

    // A first attempt always goes through, and its success returns a token.
    let reply = runtime.exec("again").await.unwrap();
    assert_eq!(reply.calls(), 1);
    assert_eq!(runtime.retry_tokens(), Some(1));
    for _ in 0..9 {
        runtime.exec("more").await.unwrap();
    }
    assert_eq!(runtime.retry_tokens(), Some(10), "never above capacity");
    runtime.exec("full").await.unwrap();
    assert_eq!(runtime.retry_tokens(), Some(10));
}

#[tokio::test(start_paused = true)]
async fn a_successful_retry_returns_its_cost() {
    let provider = ScriptedProvider::new([Step::error("overloaded"), Step::ok("fine")]);
    let runtime = Runtime::new(provider).with_retry_quota(Some(RetryQuota::standard().with_capacity(20)));
    runtime.exec("hi").await.unwrap();
    assert_eq!(runtime.retry_tokens(), Some(20));
}

#[tokio::test(start_paused = true)]
async fn a_timeout_costs_more() {
    let provider = ScriptedProvider::new([Step::hang(), Step::hang()]).with_fallback(Step::ok("fine"));
    let policy = RetryPolicy::new().with_timeout_ms(Some(100)).with_max_retries(1);
    let runtime = Runtime::new(provider.clone()).with_retry_quota(Some(RetryQuota::standard().with_capacity(15)));
    let error = runtime.exec_with(&policy, "hi").await.unwrap_err();
    assert_eq!(provider.calls(), 2, "one 10-token retry fits in 15, the second does not");
    assert_eq!(error.kind(), ExecErrorKind::Budget);
    assert_eq!(runtime.retry_tokens(), Some(5));
}

#[tokio::test(start_paused = true)]
async fn the_off_switch_keeps_the_reference_behaviour() {
    let provider = ScriptedProvider::new([]).with_fallback(Step::error("overloaded"));
    let runtime = Runtime::new(provider.clone()).with_retry_quota(None);
    let (requests, ok) = storm(&runtime, &provider, 50).await;
    assert_eq!((requests, ok), (600, 0), "12 requests per logical call without the bucket");
    assert_eq!(runtime.retry_tokens(), None);
}

/// 200 concurrent execs during a full outage: without the bucket each makes 12 requests; with it
/// the bucket drains after 100 retries and the rest make one request each.
#[tokio::test(start_paused = true)]
async fn a_full_outage_with_200_concurrent_calls_drains_the_bucket_to_about_one_request_each() {
    let provider = ScriptedProvider::new([]).with_fallback(Step::http(503, "Service Unavailable"));
    let runtime = Runtime::new(provider.clone());
    let (requests, ok) = storm(&runtime, &provider, 200).await;
    assert_eq!(ok, 0);
    // 200 first attempts + 500 / 5 = 100 retries.
    assert_eq!(requests, 300);
    let amplification = requests as f64 / 200.0;
    assert!(amplification < 1.6, "{amplification}");
    // Once drained, each further logical call makes exactly one request.
    let (requests, _) = storm(&runtime, &provider, 200).await;
    assert_eq!(requests, 200);
}

/// 30 % of calls fail transiently: successful retries return their cost, so the bucket stays far
/// from empty and every logical call succeeds.
#[tokio::test(start_paused = true)]
async fn a_30_percent_error_rate_keeps_retrying() {
    let mut rng = fastrand::Rng::with_seed(30);
    let steps: Vec<Step> =
        (0..3000).map(|_| if rng.u8(0..100) < 30 { Step::error("overloaded") } else { Step::ok("fine") }).collect();
    let provider = ScriptedProvider::new(steps).with_fallback(Step::ok("fine"));
    let runtime = Runtime::new(provider.clone());
    let (requests, ok) = storm(&runtime, &provider, 200).await;
    assert_eq!(ok, 200);
    let amplification = requests as f64 / 200.0;
    assert!((1.2..1.7).contains(&amplification), "{amplification}");
    // Calls that needed two retries keep half their cost; the bucket stays far from empty.
    assert!(runtime.retry_tokens().unwrap() >= 400, "{:?}", runtime.retry_tokens());
}

/// One call learns "wait 20 s"; the others wait until then before their next request instead of
/// each discovering the 429.
#[tokio::test(start_paused = true)]
async fn a_cooldown_set_by_one_call_delays_the_others() {
    let provider = ScriptedProvider::new([Step::http(429, "slow down").with_retry_after(Duration::from_secs(20))])
        .with_fallback(Step::ok("fine").with_latency(Duration::from_millis(1)));
    let runtime = Runtime::new(provider.clone());
    let first = tokio::spawn({
        let runtime = runtime.clone();
        async move { runtime.exec("first").await }
    });
    // Let the first call fail and set the cooldown.
    tokio::time::sleep(Duration::from_millis(10)).await;
    let start = tokio::time::Instant::now();
    let second = runtime.exec("second").await.unwrap();
    assert_eq!(second.calls(), 1, "the second call never saw the 429");
    let waited = start.elapsed();
    assert!(waited >= Duration::from_millis(19_990) && waited <= Duration::from_millis(20_010), "{waited:?}");
    assert_eq!(first.await.unwrap().unwrap().calls(), 2);
    assert_eq!(provider.calls(), 3);
}

#[tokio::test(start_paused = true)]
async fn a_cooldown_wait_is_bounded_by_the_callers_deadline_and_cap() {
    let provider = ScriptedProvider::new([Step::http(429, "slow down").with_retry_after(Duration::from_secs(50))])
        .with_fallback(Step::ok("fine"));
    let runtime = Runtime::new(provider.clone());
    let _ = runtime.exec_with(&RetryPolicy::new().with_max_retries(1).with_session_retries(0), "first").await;
    let start = tokio::time::Instant::now();
    let capped = RetryPolicy::new().with_retry_after_cap_ms(5_000);
    runtime.exec_with(&capped, "second").await.unwrap();
    assert_eq!(start.elapsed(), Duration::from_secs(5), "waits at most its retry_after_cap_ms");
}

#[test]
fn http_providers_are_scoped_by_a_fingerprint_of_url_and_key_never_the_key() {
    use agentic_runtime::{AnthropicProvider, OpenAiProvider, Provider};
    let key = "sk-canary-SECRET-scope";
    let a = OpenAiProvider::new("https://api.openai.com/v1", Some(key.to_owned()));
    let b = OpenAiProvider::new("https://api.openai.com/v1/", Some(key.to_owned())).with_model("other");
    let other_key = OpenAiProvider::new("https://api.openai.com/v1", Some("sk-another".to_owned()));
    let other_host = OpenAiProvider::new("http://127.0.0.1:8080/v1", Some(key.to_owned()));
    assert_eq!(a.scope(), b.scope(), "same endpoint and key, same bucket");
    assert_ne!(a.scope(), other_key.scope());
    assert_ne!(a.scope(), other_host.scope());
    assert!(a.scope().starts_with("openai:") && a.scope().len() == "openai:".len() + 16, "{}", a.scope());
    assert!(!a.scope().contains("canary"));
    let anthropic = AnthropicProvider::new("https://api.anthropic.com", Some(key.to_owned()));
    assert!(anthropic.scope().starts_with("anthropic:"));
    assert_eq!(ScriptedProvider::new([]).scope(), "scripted");
}
