//! A rate limit stated in the error body (OpenRouter's `error.metadata.headers`), through the Chat
//! Completions provider against the chaos server's `stated_limit`, on tokio's paused clock: none
//! remaining until a reset hours away is a quota spent (one request; with a fallback, the exec
//! moves on), a reset within `retry_after_cap_ms` is the server's wait. Before, only the text was
//! judged: a daily limit whose text names no day (`limit_rpd/...`) was retried twelve times, and a
//! per-minute one two seconds later, into the same 429.

use agentic_runtime::exec::RuntimeBuilder;
use std::time::Duration;

use agentic_chaos::{ChaosServer, Scenario, StatedLimit, Step};
use agentic_runtime::classify::Reason;
use agentic_runtime::decision::{Layer, MoveReason, Rule, Verdict, Why};
use agentic_runtime::{ExecErrorKind, Runtime};
use agentic_test_support::wires;

/// OpenRouter's answer when a model's requests per day are spent: its text names no day.
const PER_DAY: &str = "Rate limit exceeded: limit_rpd/google/gemini-2.0-flash-exp/54276bca-abd7-4aa6-a6b5-1b8f898f1395";

fn spent(reset_in: Duration) -> Step {
    let reset_in_ms = u64::try_from(reset_in.as_millis()).unwrap();
    Step::http_error(429).message(PER_DAY).stated_limit(StatedLimit::new(80, 0, reset_in_ms)).into()
}

async fn serve(scenario: Scenario) -> ChaosServer {
    ChaosServer::start(scenario).await.expect("the chaos server starts")
}

fn openai(server: &ChaosServer) -> Runtime {
    openai_builder(server).build().unwrap()
}

fn openai_builder(server: &ChaosServer) -> RuntimeBuilder {
    RuntimeBuilder::from_shared(wires::named("openai").provider(server)).with_jitter_seed(7)
}

#[tokio::test(start_paused = true)]
async fn a_limit_spent_until_a_reset_hours_away_is_a_spent_quota_final_for_the_exec() {
    let server = serve(Scenario::new().otherwise(spent(Duration::from_secs(5 * 3600)))).await;
    let error = openai(&server).exec("hi").await.unwrap_err();
    assert_eq!((error.kind(), server.journal().len()), (ExecErrorKind::Permanent, 1), "{error}");
    assert_eq!(
        error.to_string(),
        format!("exec() failed permanently:\nAttempt 1: RateLimitError: 429 {PER_DAY} (quota_spent_until_reset)")
    );
    let last = error.decisions().last().unwrap();
    assert_eq!((last.layer(), last.verdict()), (Layer::Exec, Verdict::FailPermanently));
    assert_eq!(last.reason(), Why::Judged(Rule::Classifier(Reason::QuotaUntilReset)));
    assert_eq!(
        last.reason().to_string(),
        "quota exhausted: the body states none remaining until a reset an hour or more away"
    );
}

#[tokio::test(start_paused = true)]
async fn with_a_fallback_a_spent_quota_moves_the_exec_on_at_once() {
    let primary = serve(Scenario::new().otherwise(spent(Duration::from_secs(5 * 3600)))).await;
    let secondary = serve(Scenario::new().otherwise(Step::ok("from the fallback"))).await;
    let runtime =
        openai_builder(&primary).with_fallback_shared(wires::named("openai").provider(&secondary)).build().unwrap();
    let started = tokio::time::Instant::now();
    let reply = runtime.exec("hi").await.unwrap();
    assert_eq!(reply.text(), "from the fallback");
    assert_eq!((primary.journal().len(), secondary.journal().len()), (1, 1));
    assert_eq!(started.elapsed(), Duration::ZERO, "no wait before the move");
    let moved = reply.decisions().iter().find(|decision| decision.verdict() == Verdict::Fallback).unwrap();
    let Why::Fallback(fallback) = &moved.reason() else { panic!("{:?}", moved.reason()) };
    assert_eq!(fallback.because, MoveReason::Permanent(Rule::Classifier(Reason::QuotaUntilReset)));
}

#[tokio::test(start_paused = true)]
async fn a_reset_within_the_cap_is_the_servers_wait() {
    let scenario = Scenario::new().then(spent(Duration::from_secs(40))).otherwise(Step::ok("the answer"));
    let server = serve(scenario).await;
    let started = tokio::time::Instant::now();
    let reply = openai(&server).exec("hi").await.unwrap();
    assert_eq!((reply.text(), server.journal().len()), ("the answer", 2));
    let waited = reply.decisions()[0].delay().unwrap();
    // The reset was 40 s after the server's answer, read a few milliseconds of wall clock later
    // (the jitter waits at most a quarter more); before, the retry went after 2 s.
    assert!(waited > Duration::from_secs(30) && waited <= Duration::from_secs(50), "{waited:?}");
    assert!(started.elapsed() >= waited, "{:?}", started.elapsed());
}

#[tokio::test(start_paused = true)]
async fn a_reset_past_the_cap_and_within_the_hour_is_a_wait_refused() {
    let server = serve(Scenario::new().otherwise(spent(Duration::from_secs(10 * 60)))).await;
    let error = openai(&server).exec("hi").await.unwrap_err();
    assert_eq!((error.kind(), server.journal().len()), (ExecErrorKind::Refused, 1), "{error}");
    assert_eq!(error.refusal().map(|refusal| refusal.name()), Some("retry_after_cap"));
}
