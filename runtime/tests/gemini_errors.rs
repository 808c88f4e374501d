//! Gemini's error bodies over the wire, as its OpenAI-compatible endpoint sends them (a one-element
//! array of Google's `{"error": {"code", "message", "status", "details"}}`): `RetryInfo` is the
//! server's hint, a daily `QuotaFailure` is a spent quota (permanent until tomorrow), and the
//! canonical status names the error. On tokio's paused clock, against the chaos server.

use std::time::Duration;

use agentic_chaos::{ChaosServer, Scenario, Step};
use agentic_runtime::decision::Verdict;
use agentic_runtime::provider::OpenAiProvider;
use agentic_runtime::{ExecErrorKind, Runtime};

fn gemini_429(quota_id: &str, retry_delay: &str) -> String {
    gemini_429_saying(
        "You exceeded your current quota, please check your plan and billing details.",
        quota_id,
        retry_delay,
    )
}

fn gemini_429_saying(message: &str, quota_id: &str, retry_delay: &str) -> String {
    format!(
        r#"[{{"error":{{"code":429,"message":"{message}","status":"RESOURCE_EXHAUSTED","details":[{{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"{quota_id}"}}]}},{{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"{retry_delay}"}}]}}}}]"#
    )
}

async fn runtime(scenario: Scenario) -> (ChaosServer, Runtime) {
    let server = ChaosServer::start(scenario).await.unwrap();
    let provider = OpenAiProvider::new(server.openai_base_url(), Some("gm-test-key".to_owned()));
    (server, Runtime::builder(provider).with_jitter_seed(7).build().unwrap())
}

/// A per-minute limit worded as quota ("You exceeded your current quota"): no `Retry-After` header and
/// no "retry in" in the text, only `RetryInfo` in the body. The server said when to come back, so it
/// is retried (docs/design.md §4 rule 4), after at least what it asked (a hint is the wait, jittered only above it, §8).
#[tokio::test(start_paused = true)]
async fn retry_info_is_the_servers_hint() {
    let limited = Step::http_error(429).body(gemini_429("GenerateRequestsPerMinutePerProjectPerModel-FreeTier", "34s"));
    let (server, runtime) = runtime(Scenario::new().then(limited).otherwise(Step::ok("the answer"))).await;
    let reply = runtime.exec("hi").await.unwrap();
    assert_eq!((reply.text(), server.journal().len()), ("the answer", 2));
    let decision = &reply.decisions()[0];
    assert_eq!(decision.verdict(), Verdict::Retry);
    assert!(decision.delay().unwrap() >= Duration::from_secs(34), "{decision:?}");
    assert!(decision.error().contains("(RESOURCE_EXHAUSTED)"), "{}", decision.error());
}

/// A daily quota is spent until tomorrow: permanent at once, one request, whatever `RetryInfo` says.
#[tokio::test(start_paused = true)]
async fn a_daily_quota_is_permanent_at_once() {
    let daily = Step::http_error(429).body(gemini_429("GenerateRequestsPerDayPerProjectPerModel-FreeTier", "20s"));
    let (server, runtime) = runtime(Scenario::new().otherwise(daily)).await;
    let error = runtime.exec("hi").await.unwrap_err();
    assert_eq!((error.kind(), server.journal().len()), (ExecErrorKind::Permanent, 1), "{error}");
    assert_eq!(error.model_error().and_then(|error| error.code()), Some("daily_quota_exhausted"));
    assert!(error.attempt_errors()[0].contains("(daily_quota_exhausted)"), "{error}");
}

/// A `RetryInfo` longer than `retry_after_cap_ms` (60 s) ends the exec at once, as a Retry-After
/// header would.
#[tokio::test(start_paused = true)]
async fn a_retry_info_past_the_cap_ends_the_exec_at_once() {
    let long = Step::http_error(429).body(gemini_429("GenerateRequestsPerMinutePerProjectPerModel-FreeTier", "900s"));
    let (server, runtime) = runtime(Scenario::new().otherwise(long)).await;
    let error = runtime.exec("hi").await.unwrap_err();
    assert_eq!((error.kind(), server.journal().len()), (ExecErrorKind::Refused, 1), "{error}");
    assert!(error.to_string().contains("server asked to wait 900 s"), "{error}");
}

/// The same limit as Gemini words it today, the wait in the text too: read from either.
#[tokio::test(start_paused = true)]
async fn a_per_minute_limit_that_says_retry_in_is_retried() {
    let message = "You exceeded your current quota. Please retry in 12.5s.";
    let body = gemini_429_saying(message, "GenerateRequestsPerMinutePerProjectPerModel-FreeTier", "12s");
    let (server, runtime) =
        runtime(Scenario::new().then(Step::http_error(429).body(body)).otherwise(Step::ok("the answer"))).await;
    let reply = runtime.exec("hi").await.unwrap();
    assert_eq!((reply.text(), server.journal().len()), ("the answer", 2));
    assert!(reply.decisions()[0].delay().unwrap() >= Duration::from_secs(12), "{:?}", reply.decisions());
}
