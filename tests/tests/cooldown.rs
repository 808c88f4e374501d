//! Where a runtime-wide cooldown comes from, how long it lasts, and that a wait for one shows: a
//! hint the runtime would not honour (past `retry_after_cap_ms`, or a permanent failure's) leaves
//! the next exec unslowed; one it honours makes the next exec wait, as a decision and at INFO. On
//! paused time.

use std::time::Duration;

use agentic_runtime::decision::{Layer, Verdict};
use agentic_runtime::{ExecErrorKind, RetryPolicy, Runtime, Scripted, ScriptedProvider};
use agentic_test_support::captured_log::{self, Captured};
use tokio::time::Instant;

/// What INFO and above write on this thread, while the guard lives.
fn capture() -> (tracing::subscriber::DefaultGuard, Captured) {
    captured_log::capture(tracing::Level::INFO)
}

/// One attempt, no session retry: the first exec hears the hint and stops.
const ONCE: RetryPolicy = RetryPolicy::new().with_max_retries(1).with_session_retries(0);

/// A runtime whose first call fails with `first`, and every later one answers.
fn runtime_after(first: Scripted) -> Runtime {
    Runtime::new(ScriptedProvider::new([first]).otherwise(Scripted::ok("fine")))
}

#[tokio::test(start_paused = true)]
async fn one_huge_hint_heard_by_one_exec_leaves_the_next_exec_unslowed() {
    let _log = capture();
    let day = Duration::from_secs(86_400);
    let cases = [
        (
            "429, Retry-After: 86400",
            Scripted::http(429, "Too Many Requests").with_retry_after(day),
            ExecErrorKind::Refused,
        ),
        (
            "429, Retry-After: 1e12",
            Scripted::http(429, "Too Many Requests").with_retry_after(Duration::from_secs(1_000_000_000_000)),
            ExecErrorKind::Refused,
        ),
        ("503 asking for a day", Scripted::http(503, "overloaded; try again in 86400s"), ExecErrorKind::Refused),
        (
            "a permanent 400 asking for a day",
            Scripted::http(400, "Bad request: try again in 86400s"),
            ExecErrorKind::Permanent,
        ),
    ];
    for (case, first, kind) in cases {
        let runtime = runtime_after(first);
        let error = runtime.exec("hears the hint").await.unwrap_err();
        assert_eq!((error.kind(), error.calls()), (kind, 1), "{case}: stops at once");
        let start = Instant::now();
        let reply = runtime.exec("comes next").await.unwrap();
        assert_eq!(start.elapsed(), Duration::ZERO, "{case}: the next exec is not slowed");
        assert_eq!((reply.calls(), reply.elapsed()), (1, Duration::ZERO), "{case}");
        assert!(reply.decisions().is_empty(), "{case}: {:?}", reply.decisions());
    }
}

#[tokio::test(start_paused = true)]
async fn a_hint_at_the_cap_is_honoured_by_the_next_exec_as_a_decision() {
    let _log = capture();
    let runtime = runtime_after(Scripted::http(429, "slow down").with_retry_after(Duration::from_secs(60)));
    runtime.request("hears the hint").policy(&ONCE).send().await.unwrap_err();
    let start = Instant::now();
    let reply = runtime.exec("waits").await.unwrap();
    assert_eq!(start.elapsed(), Duration::from_secs(60), "the default cap is 60 s: honoured");
    assert_eq!(reply.calls(), 1);
    let [decision] = reply.decisions() else { panic!("{:?}", reply.decisions()) };
    assert_eq!((decision.layer(), decision.verdict(), decision.call()), (Layer::Session, Verdict::CooledDown, 1));
    assert_eq!(decision.delay(), Some(Duration::from_secs(60)));
    assert_eq!(decision.reason(), "provider cooling down, 60 s left (a server's Retry-After)");
    assert_eq!(decision.verdict().name(), "cooled_down");
    // Once it has ended, nothing waits or is decided.
    let after = runtime.exec("after").await.unwrap();
    assert!(after.decisions().is_empty() && after.elapsed().is_zero(), "{:?}", after.decisions());
}

#[tokio::test(start_paused = true)]
async fn a_cooldown_wait_says_how_long_was_left_and_is_logged_at_info() {
    let (_guard, captured) = capture();
    let runtime = runtime_after(Scripted::http(429, "slow down").with_retry_after(Duration::from_secs(50)));
    runtime.request("hears the hint").policy(&ONCE).send().await.unwrap_err();
    tokio::time::advance(Duration::from_secs(45)).await;
    let reply = runtime.exec("waits the rest").await.unwrap();
    let [decision] = reply.decisions() else { panic!("{:?}", reply.decisions()) };
    assert_eq!((decision.verdict(), decision.delay()), (Verdict::CooledDown, Some(Duration::from_secs(5))));
    assert_eq!(decision.reason(), "provider cooling down, 5 s left (a server's Retry-After)");
    assert_eq!(reply.elapsed(), Duration::from_secs(5));
    let log = captured.text();
    let line = log.lines().find(|line| line.contains("provider cooling down; waiting before the request"));
    let line = line.unwrap_or_else(|| panic!("no INFO line for the wait:\n{log}"));
    assert!(line.contains(" INFO ") && line.contains("agentic.delay_ms=5000"), "{line}");
}

/// A cooldown another exec noted (its cap 60 s) is longer than this exec's cap, or than its time
/// left: it is refused, no request sent, rather than waited for in part and then sent before the
/// time the server asked for.
#[tokio::test(start_paused = true)]
async fn a_cooldown_past_the_cap_or_the_time_left_is_refused_not_cut_short() {
    let _log = capture();
    let provider = ScriptedProvider::new([Scripted::http(429, "slow down").with_retry_after(Duration::from_secs(50))])
        .otherwise(Scripted::ok("fine"));
    let runtime = Runtime::new(provider.clone());
    runtime.request("hears the hint").policy(&ONCE).send().await.unwrap_err();
    let cases = [
        (
            RetryPolicy::new().with_retry_after_cap_ms(5_000),
            "the provider is cooling down for 50 s more (a server asked its callers to wait), longer than \
             `retry_after_cap_ms` (5 s)",
        ),
        (
            RetryPolicy::new().with_budget_ms(Some(10_000)),
            "the provider is cooling down for 50 s more (a server asked its callers to wait), which does not fit in \
             the 10 s left of `budget_ms` (10000)",
        ),
    ];
    for (policy, said) in cases {
        let start = Instant::now();
        let error = runtime.request("cannot wait").policy(&policy).send().await.unwrap_err();
        assert_eq!((error.kind(), error.calls()), (ExecErrorKind::Refused, 0), "{error}");
        assert_eq!(error.stopped_by(), Some(said), "{error}");
        assert_eq!(error.refusal().map(|refusal| refusal.name()), Some("cooldown"));
        assert_eq!(start.elapsed(), Duration::ZERO, "nothing waited");
    }
    assert_eq!(provider.calls(), 1, "no request before the 50 s the server asked for");
    // A caller that can wait waits all of it.
    let start = Instant::now();
    assert_eq!(runtime.exec("waits").await.unwrap().calls(), 1);
    assert_eq!(start.elapsed(), Duration::from_secs(50));
}

#[tokio::test(start_paused = true)]
async fn a_hint_past_the_waiting_execs_cap_is_not_stored_by_it() {
    let _log = capture();
    // The first exec's own cap is 10 s: a 30 s hint ends it, and is not kept for the others, whose
    // cap (60 s) would have honoured it.
    let runtime = runtime_after(Scripted::http(429, "slow down").with_retry_after(Duration::from_secs(30)));
    let tight = RetryPolicy::new().with_max_retries(1).with_retry_after_cap_ms(10_000);
    let error = runtime.request("hears the hint").policy(&tight).send().await.unwrap_err();
    assert_eq!(error.kind(), ExecErrorKind::Refused);
    let reply = runtime.exec("next").await.unwrap();
    assert!(reply.decisions().is_empty() && reply.elapsed().is_zero(), "{:?}", reply.decisions());
}
