//! Layer 2 (`Runtime::exec`): 3 attempts 1.5/3 s apart, fail-fast rules, and the product of the layers.

use std::time::Duration;

use agentic_runtime::decision::{Layer, Verdict};
use agentic_runtime::policy::Jitter;
use agentic_runtime::provider::ModelError;
use agentic_runtime::{ExecErrorKind, RetryPolicy, Runtime, Scripted, ScriptedProvider};

/// Layer 2 alone, without jitter: pins the exact schedule.
fn exec_only() -> RetryPolicy {
    exact().with_session_retries(0)
}

/// The defaults without jitter: pins the exact schedules.
fn exact() -> RetryPolicy {
    RetryPolicy::new().with_jitter(Jitter::None)
}

fn sleeps(decisions: &[agentic_runtime::decision::Decision]) -> Vec<u128> {
    decisions.iter().filter_map(|d| d.delay()).map(|d| d.as_millis()).collect()
}

#[tokio::test(start_paused = true)]
async fn three_attempts_after_1_5_and_3_seconds() {
    let provider = ScriptedProvider::new(Scripted::error("overloaded").times(3));
    let runtime = Runtime::new(provider.clone());
    let error = runtime.request("hi").policy(&exec_only()).send().await.unwrap_err();
    assert_eq!(provider.calls(), 3);
    assert_eq!(error.kind(), ExecErrorKind::Exhausted);
    assert_eq!(sleeps(error.decisions()), [1500, 3000]);
    assert_eq!(error.elapsed(), Duration::from_millis(4500));
    assert_eq!(
        error.to_string(),
        "exec() failed after 3 attempts (3 model calls):\n\
         Attempt 1: ModelError: overloaded\n\
         Attempt 2: ModelError: overloaded\n\
         Attempt 3: ModelError: overloaded"
    );
    assert_eq!(error.attempt_errors().len(), 3);
    assert_eq!(error.calls(), 3);
}

#[tokio::test(start_paused = true)]
async fn the_fourth_attempt_waits_6_seconds() {
    let provider = ScriptedProvider::new(Scripted::error("overloaded").times(4));
    let policy = exec_only().with_max_retries(4);
    let error = Runtime::new(provider).request("hi").policy(&policy).send().await.unwrap_err();
    assert_eq!(sleeps(error.decisions()), [1500, 3000, 6000]);
}

#[tokio::test(start_paused = true)]
async fn permanent_errors_stop_after_one_call() {
    for step in [
        Scripted::http(401, "Incorrect API key provided"),
        Scripted::error("login expired"),
        Scripted::http(403, "forbidden"),
        Scripted::error("429 Too Many Requests: insufficient credits"),
        Scripted::http(503, "busy").with_should_retry(false),
    ] {
        let provider = ScriptedProvider::new([step.clone()]).otherwise(Scripted::ok("never"));
        let error = Runtime::new(provider.clone()).exec("hi").await.unwrap_err();
        assert_eq!(error.kind(), ExecErrorKind::Permanent, "{step:?}");
        assert_eq!(provider.calls(), 1, "{step:?}");
        assert!(error.to_string().starts_with("exec() failed permanently:\nAttempt 1: "));
        assert_eq!(error.elapsed(), Duration::ZERO);
    }
}

#[tokio::test(start_paused = true)]
async fn programming_errors_return_unchanged_after_one_call() {
    let provider = ScriptedProvider::new([Scripted::programming("TypeError", "prompt must be text")])
        .otherwise(Scripted::ok("never"));
    let error = Runtime::new(provider.clone()).exec("hi").await.unwrap_err();
    assert_eq!(error.kind(), ExecErrorKind::Programming);
    assert_eq!(error.to_string(), "TypeError: prompt must be text");
    assert_eq!(error.model_error().unwrap().kind(), "TypeError");
    assert_eq!(provider.calls(), 1);

    // A "TypeError: .." in an error message's text is a programming error too.
    let provider =
        ScriptedProvider::new([Scripted::error("TypeError: bad tool schema")]).otherwise(Scripted::ok("never"));
    let error = Runtime::new(provider.clone()).exec("hi").await.unwrap_err();
    assert_eq!(error.kind(), ExecErrorKind::Programming);
    assert_eq!(provider.calls(), 1);
}

#[tokio::test(start_paused = true)]
async fn context_overflow_stops_after_one_call() {
    let provider = ScriptedProvider::new([Scripted::http(400, "prompt is too long: 250000 tokens > 200000 maximum")])
        .otherwise(Scripted::ok("never"));
    let error = Runtime::new(provider.clone()).exec("hi").await.unwrap_err();
    assert_eq!(error.kind(), ExecErrorKind::ContextOverflow);
    assert_eq!(provider.calls(), 1);
    assert!(error.to_string().contains("context overflow"));
}

#[tokio::test(start_paused = true)]
async fn the_defaults_multiply_to_12_calls_and_46_5_seconds() {
    let provider =
        ScriptedProvider::new(Scripted::http(503, "Service Unavailable").times(12)).otherwise(Scripted::ok("never"));
    let runtime = Runtime::new(provider.clone());
    let error = runtime.request("hi").policy(&exact()).send().await.unwrap_err();
    assert_eq!(provider.calls(), 12);
    assert_eq!(error.calls(), 12);
    assert_eq!(error.kind(), ExecErrorKind::Exhausted);
    assert_eq!(error.elapsed(), Duration::from_millis(46_500));
    assert_eq!(sleeps(error.decisions()), [2000, 4000, 8000, 1500, 2000, 4000, 8000, 3000, 2000, 4000, 8000]);
    assert_eq!(RetryPolicy::new().worst_case_calls(), 12);
    assert_eq!(RetryPolicy::new().worst_case_backoff(), Duration::from_millis(46_500));
    let layers: Vec<Layer> = error.decisions().iter().map(|d| d.layer()).collect();
    assert_eq!(layers.iter().filter(|l| **l == Layer::Exec).count(), 3);
    assert_eq!(error.decisions().last().unwrap().verdict(), Verdict::Exhausted);
}

#[tokio::test(start_paused = true)]
async fn success_after_transient_failures_reports_its_cost() {
    let provider =
        ScriptedProvider::new([Scripted::http(429, "rate limited"), Scripted::error(""), Scripted::ok("42")]);
    let reply = Runtime::new(provider).request("hi").policy(&exact()).send().await.unwrap();
    assert_eq!(reply.text(), "42");
    assert_eq!(reply.to_string(), "42");
    assert_eq!(reply.as_ref(), "42");
    assert_eq!(reply.calls(), 3);
    assert_eq!(reply.elapsed(), Duration::from_secs(6));
}

#[tokio::test(start_paused = true)]
async fn each_exec_attempt_starts_from_the_prompt_alone() {
    let provider = ScriptedProvider::new([Scripted::error("strange failure"), Scripted::ok("fine")]);
    let runtime = Runtime::builder(provider.clone()).with_system("be brief").build().unwrap();
    runtime.exec("hi").await.unwrap();
    let requests = provider.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].messages, requests[1].messages);
    assert_eq!(requests[1].system.as_deref(), Some("be brief"));
}

#[tokio::test(start_paused = true)]
async fn an_invalid_policy_is_refused_before_any_call() {
    let provider = ScriptedProvider::new([Scripted::ok("never")]);
    let policy = RetryPolicy::new().with_max_retries(0);
    let error = Runtime::new(provider.clone()).request("hi").policy(&policy).send().await.unwrap_err();
    assert_eq!(error.kind(), ExecErrorKind::Programming);
    assert_eq!(error.policy_error().unwrap().key(), "max_retries");
    assert!(error.to_string().starts_with("invalid retry policy: `max_retries` (0) must be at least 1"));
    assert_eq!(provider.calls(), 0);
}

#[tokio::test(start_paused = true)]
async fn an_exhausted_script_is_a_clear_programming_error() {
    let provider = ScriptedProvider::new([]);
    let error = Runtime::new(provider).exec("hi").await.unwrap_err();
    assert_eq!(error.kind(), ExecErrorKind::Programming);
    assert!(error.to_string().contains("ScriptedProvider has no step for call 1"), "{error}");
}

#[tokio::test(start_paused = true)]
async fn the_error_keeps_the_typed_failure_as_its_source() {
    let provider = ScriptedProvider::new([Scripted::http(401, "invalid api key")]);
    let error = Runtime::new(provider).exec("hi").await.unwrap_err();
    let source = std::error::Error::source(&error).unwrap();
    assert_eq!(source.to_string(), "AuthenticationError: 401 invalid api key");
    assert_eq!(error.model_error().map(ModelError::status), Some(Some(401)));
}

#[tokio::test(start_paused = true)]
async fn the_observer_sees_each_decision_as_it_is_made() {
    use std::sync::{Arc, Mutex};
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let provider = ScriptedProvider::new([Scripted::error("overloaded"), Scripted::http(401, "invalid api key")]);
    let runtime = Runtime::builder(provider)
        .with_observer(move |decision| {
            sink.lock().unwrap().push((decision.layer(), decision.verdict(), tokio::time::Instant::now()));
        })
        .build()
        .unwrap();
    let start = tokio::time::Instant::now();
    let error = runtime.exec("hi").await.unwrap_err();
    let seen = seen.lock().unwrap();
    let verdicts: Vec<(Layer, Verdict)> = seen.iter().map(|(layer, verdict, _)| (*layer, *verdict)).collect();
    assert_eq!(
        verdicts,
        [(Layer::Session, Verdict::Retry), (Layer::Session, Verdict::GiveUp), (Layer::Exec, Verdict::FailPermanently)]
    );
    // The retry was announced before its 2 s sleep.
    assert_eq!(seen[0].2 - start, Duration::ZERO);
    assert_eq!(error.decisions().len(), 3);
}

/// The exec's clock starts when its first call first waits (or at a failure, if none waited before),
/// so every wait after that counts: the calls' own and the backoff between them.
#[tokio::test(start_paused = true)]
async fn every_wait_counts_in_the_elapsed_time() {
    let provider = ScriptedProvider::new([Scripted::ok("42").with_latency(Duration::from_millis(250))]);
    let reply = Runtime::new(provider).request("hi").policy(&exact()).send().await.unwrap();
    assert_eq!(reply.elapsed(), Duration::from_millis(250));

    let provider = ScriptedProvider::new([
        Scripted::error("overloaded").with_latency(Duration::from_millis(200)),
        Scripted::ok("42").with_latency(Duration::from_millis(300)),
    ]);
    let reply = Runtime::new(provider).request("hi").policy(&exact()).send().await.unwrap();
    // 200 ms, the session layer's 2 s, 300 ms.
    assert_eq!(reply.elapsed(), Duration::from_millis(2500));

    let provider = ScriptedProvider::new([Scripted::error("overloaded"), Scripted::ok("42")]);
    let reply = Runtime::new(provider).request("hi").policy(&exact()).send().await.unwrap();
    assert_eq!(reply.elapsed(), Duration::from_secs(2), "a failure at once, then the backoff");
}
