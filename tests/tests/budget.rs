//! One deadline, one call cap, per-call timeouts and server hints across both layers
//! (docs/design.md §7 and §8).

use std::time::Duration;

use agentic_runtime::decision::Verdict;
use agentic_runtime::policy::Jitter;
use agentic_runtime::provider::TransportKind;
use agentic_runtime::{ExecErrorKind, RetryPolicy, Runtime, Scripted, ScriptedProvider};

fn sleeps(decisions: &[agentic_runtime::decision::Decision]) -> Vec<u128> {
    decisions.iter().filter_map(|d| d.delay()).map(|d| d.as_millis()).collect()
}

#[tokio::test(start_paused = true)]
async fn max_calls_caps_both_layers_together() {
    let provider = ScriptedProvider::new(Scripted::error("overloaded").times(12));
    let policy = RetryPolicy::new().with_max_calls(Some(5));
    let error = Runtime::new(provider.clone()).request("hi").policy(&policy).send().await.unwrap_err();
    assert_eq!(provider.calls(), 5);
    assert_eq!(error.kind(), ExecErrorKind::Refused);
    assert_eq!(error.stopped_by(), Some("`max_calls` (5) reached after 5 model calls"));
    assert!(
        error
            .to_string()
            .starts_with("exec() stopped after 2 attempts: `max_calls` (5) reached after 5 model calls:\nAttempt 1:"),
        "{error}"
    );
}

#[tokio::test(start_paused = true)]
async fn budget_refuses_a_retry_that_would_sleep_into_the_deadline() {
    let provider = ScriptedProvider::new(Scripted::error("overloaded").with_latency(Duration::from_secs(3)).times(12));
    // Pins the exact schedule.
    let policy = RetryPolicy::new().with_jitter(Jitter::None).with_budget_ms(Some(50_000));
    let error = Runtime::new(provider.clone()).request("hi").policy(&policy).send().await.unwrap_err();
    assert_eq!(error.kind(), ExecErrorKind::Refused);
    // Calls at 0, 5, 12, 23 s (3 s each + 2/4/8 s sleeps); then 1.5 s exec sleep, call at 27.5 s (ends 30.5),
    // sleep 2 s, call at 32.5 (ends 35.5), sleep 4 s, call at 39.5 (ends 42.5): an 8 s sleep would end at 50.5.
    assert_eq!(provider.calls(), 7);
    assert!(error.elapsed() < Duration::from_secs(50));
    assert_eq!(
        error.stopped_by(),
        Some("`budget_ms` (50000) would run out: the wait of 8 s does not fit in the 7.5 s left")
    );
}

#[tokio::test(start_paused = true)]
async fn each_call_gets_min_of_timeout_and_time_left() {
    let provider = ScriptedProvider::new(Scripted::hang().times(12));
    let policy = RetryPolicy::new()
        .with_jitter(Jitter::None)
        .with_timeout_ms(10_000)
        .with_budget_ms(Some(30_000))
        .with_max_retries(1);
    let error = Runtime::new(provider.clone()).request("hi").policy(&policy).send().await.unwrap_err();
    let timeouts: Vec<Option<Duration>> = provider.requests().iter().map(|r| r.timeout).collect();
    // call 1 at 0 s: 10 s; sleep 2 s; call 2 at 12 s: 10 s; sleep 4 s; call 3 at 26 s: only 4 s left.
    assert_eq!(timeouts, [Some(Duration::from_secs(10)), Some(Duration::from_secs(10)), Some(Duration::from_secs(4))]);
    assert_eq!(error.elapsed(), Duration::from_secs(30));
    assert_eq!(error.kind(), ExecErrorKind::Refused);
    assert_eq!(error.model_error().unwrap().transport_kind(), Some(TransportKind::Timeout));
}

#[tokio::test(start_paused = true)]
async fn a_timeout_is_a_retryable_failure() {
    let provider = ScriptedProvider::new([Scripted::hang(), Scripted::ok("made it")]);
    let policy = RetryPolicy::new().with_jitter(Jitter::None).with_timeout_ms(1_000);
    let reply = Runtime::new(provider).request("hi").policy(&policy).send().await.unwrap();
    assert_eq!(reply.text(), "made it");
    assert_eq!(reply.elapsed(), Duration::from_secs(3));
    assert_eq!(reply.decisions()[0].error(), "TimeoutError: model call timed out after 1 s (`timeout_ms` = 1000)");
}

#[tokio::test(start_paused = true)]
async fn the_servers_wait_is_the_delay_not_a_floor_under_the_schedule() {
    let provider = ScriptedProvider::new([
        Scripted::http(429, "slow down").with_retry_after(Duration::from_secs(7)),
        Scripted::http(429, "slow down").with_retry_after(Duration::from_millis(100)),
        Scripted::ok("done"),
    ]);
    let policy = RetryPolicy::new().with_jitter(Jitter::None);
    let reply = Runtime::new(provider).request("hi").policy(&policy).send().await.unwrap();
    // The server named the wait: 7 s instead of the schedule's 2 s, and 100 ms instead of its 4 s.
    assert_eq!(sleeps(reply.decisions()), [7000, 100]);
}

#[tokio::test(start_paused = true)]
async fn jitter_goes_only_above_the_servers_wait_and_at_most_a_quarter_of_it() {
    let mut delays = std::collections::BTreeSet::new();
    for seed in 0..200 {
        let provider = ScriptedProvider::new([
            Scripted::http(429, "slow down").with_retry_after(Duration::from_secs(4)),
            Scripted::ok("done"),
        ]);
        let reply = Runtime::builder(provider).with_jitter_seed(seed).build().unwrap().exec("hi").await.unwrap();
        let slept = sleeps(reply.decisions())[0];
        assert!((4_000..=5_000).contains(&slept), "seed {seed}: {slept} ms");
        delays.insert(slept);
    }
    assert!(delays.len() > 50, "spread over the quarter above the wait: {delays:?}");
}

#[tokio::test(start_paused = true)]
async fn a_hint_in_the_text_counts_when_no_header_gives_one() {
    let provider =
        ScriptedProvider::new([Scripted::error("Rate limit reached. Please try again in 12.5s."), Scripted::ok("ok")]);
    let policy = RetryPolicy::new().with_jitter(Jitter::None);
    let reply = Runtime::new(provider).request("hi").policy(&policy).send().await.unwrap();
    assert_eq!(sleeps(reply.decisions()), [12_500]);
}

#[tokio::test(start_paused = true)]
async fn a_hint_above_the_cap_ends_the_exec_at_once_saying_so() {
    let provider = ScriptedProvider::new([Scripted::http(429, "slow down").with_retry_after(Duration::from_secs(120))])
        .otherwise(Scripted::ok("never"));
    let error = Runtime::new(provider.clone()).exec("hi").await.unwrap_err();
    assert_eq!(provider.calls(), 1);
    assert_eq!(error.kind(), ExecErrorKind::Refused);
    assert_eq!(error.elapsed(), Duration::ZERO);
    assert_eq!(error.stopped_by(), Some("server asked to wait 120 s; cap is 60 s (`retry_after_cap_ms`)"));
}

#[tokio::test(start_paused = true)]
async fn a_hint_past_the_deadline_ends_the_exec_at_once() {
    let provider = ScriptedProvider::new([Scripted::http(429, "slow down").with_retry_after(Duration::from_secs(40))])
        .otherwise(Scripted::ok("never"));
    let policy = RetryPolicy::new()
        .with_max_retries(2)
        .with_session_retries(1)
        .with_budget_ms(Some(30_000))
        .with_jitter(Jitter::None);
    let error = Runtime::new(provider.clone()).request("hi").policy(&policy).send().await.unwrap_err();
    assert_eq!(provider.calls(), 1);
    assert_eq!(error.kind(), ExecErrorKind::Refused);
    assert!(error.stopped_by().unwrap().contains("the server's requested wait of 40 s"), "{:?}", error.stopped_by());
}

#[tokio::test(start_paused = true)]
async fn max_delay_caps_the_schedule() {
    let provider = ScriptedProvider::new(Scripted::error("overloaded").times(12));
    let policy = RetryPolicy::new().with_jitter(Jitter::None).with_max_delay_ms(Some(3000));
    let error = Runtime::new(provider).request("hi").policy(&policy).send().await.unwrap_err();
    assert_eq!(sleeps(error.decisions()), [2000, 3000, 3000, 1500, 2000, 3000, 3000, 3000, 2000, 3000, 3000]);
}

#[tokio::test(start_paused = true)]
async fn jitter_replays_with_the_seed_and_differs_without_it() {
    let policy = RetryPolicy::new().with_jitter(Jitter::Full).with_max_retries(1);
    let run = |seed| async move {
        let provider = ScriptedProvider::new(Scripted::error("overloaded").times(4));
        let error = Runtime::builder(provider)
            .with_jitter_seed(seed)
            .build()
            .unwrap()
            .request("hi")
            .policy(&policy)
            .send()
            .await
            .unwrap_err();
        sleeps(error.decisions())
    };
    let first = run(11).await;
    assert_eq!(first, run(11).await);
    assert_ne!(first, run(12).await);
    for (index, sleep) in first.iter().enumerate() {
        assert!(*sleep <= 2000 << index);
    }
}

#[tokio::test(start_paused = true)]
async fn a_session_stopped_by_a_cap_is_reported_by_the_exec_layer() {
    let provider = ScriptedProvider::new(Scripted::error("overloaded").times(12));
    let policy = RetryPolicy::new().with_max_calls(Some(2));
    let error = Runtime::new(provider.clone()).request("hi").policy(&policy).send().await.unwrap_err();
    assert_eq!(provider.calls(), 2);
    let verdicts: Vec<Verdict> = error.decisions().iter().map(|d| d.verdict()).collect();
    assert_eq!(verdicts, [Verdict::Retry, Verdict::Refused, Verdict::Refused]);
}
