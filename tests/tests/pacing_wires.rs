//! Pacing through the real HTTP providers against the chaos server's rate limits, on every wire:
//! the headers of one answer (OpenAI's `x-ratelimit-*`, Anthropic's `anthropic-ratelimit-*`) pace
//! a burst so that no request gets a 429, in arrival order; with the pacer off the same burst is
//! refused and waits out the servers' Retry-After; Gemini states no limits, so nothing is paced.
//!
//! Paused time: the chaos server's clock is tokio's, and over loopback the clock moves only when
//! every task waits on a timer, so the elapsed times below are exact.

use agentic_runtime::exec::RuntimeBuilder;
use std::time::Duration;

use agentic_chaos::{ChaosServer, JournalEntry, RateLimit, Scenario};
use agentic_runtime::decision::Verdict;
use agentic_runtime::provider::WireKind;
use agentic_runtime::storm::pace::Pacing;
use agentic_runtime::{ExecErrorKind, RetryPolicy, Runtime};
use agentic_test_support::wires::{self, Wire};
use tokio::time::Instant;

const S: Duration = Duration::from_secs(1);

/// 10 requests a minute: one each 6 s once the bucket is empty.
fn limited() -> Scenario {
    Scenario::new().with_rate_limit(RateLimit::new().requests(10))
}

fn refused(journal: &[JournalEntry]) -> usize {
    journal.iter().filter(|entry| entry.rate_limited).count()
}

/// One call, then a burst of `burst` concurrent execs; when each answered, and its paced waits.
async fn warm_then_burst(runtime: &Runtime, burst: u32) -> Vec<(Duration, Vec<Duration>)> {
    burst_after_warm(runtime, burst).await.1.into_iter().map(|(at, waits, _)| (at, waits)).collect()
}

/// [`warm_then_burst`] with the tokens of each answer, the warm call's first.
async fn burst_after_warm(runtime: &Runtime, burst: u32) -> (u64, Vec<(Duration, Vec<Duration>, u64)>) {
    let tokens = |reply: &agentic_runtime::Reply| reply.usage().map_or(0, |usage| usage.total_tokens());
    let warm = tokens(&runtime.exec("warm").await.unwrap());
    let started = Instant::now();
    let execs = (0..burst).map(|n| {
        let runtime = runtime.clone();
        async move {
            let reply = runtime.exec(format!("call {n}")).await.unwrap();
            let waits = reply.decisions().iter().filter(|d| d.verdict() == Verdict::Paced).filter_map(|d| d.delay());
            (Instant::now() - started, waits.collect(), tokens(&reply))
        }
    });
    (warm, futures_util::future::join_all(execs).await)
}

fn stating_wires() -> Vec<Wire> {
    wires::all().into_iter().filter(|wire| wire.kind != WireKind::Gemini).collect()
}

#[tokio::test(start_paused = true)]
async fn the_stated_limits_pace_a_burst_without_a_429_in_arrival_order_on_every_wire() {
    for wire in stating_wires() {
        let server = ChaosServer::start(limited()).await.unwrap();
        let runtime = RuntimeBuilder::from_shared(wire.provider(&server)).build().unwrap();
        let done = warm_then_burst(&runtime, 15).await;
        let journal = server.journal();
        assert_eq!((journal.len(), refused(&journal)), (16, 0), "{wire}: every request answered, none refused");
        for (n, (at, waits)) in done.iter().enumerate() {
            // 9 left after the warm call: those at once, then one each 6 s, in the order they came.
            let expected = S * 6 * (n as u32).saturating_sub(8);
            assert_eq!(*at, expected, "{wire}: call {n}");
            assert_eq!(waits.iter().sum::<Duration>(), expected, "{wire}: call {n}");
        }
        // The server saw the same: 10 at once (the warm call's included), then one each 6 s.
        let at: Vec<u64> = journal.iter().map(|entry| entry.at_ms).collect();
        let expected: Vec<u64> = (0..16u64).map(|n| 6_000 * n.saturating_sub(9)).collect();
        assert_eq!(at, expected, "{wire}");
    }
}

#[tokio::test(start_paused = true)]
async fn with_the_pacer_off_the_same_burst_is_refused_and_waits_out_each_retry_after() {
    for wire in stating_wires() {
        let server = ChaosServer::start(limited()).await.unwrap();
        let runtime = RuntimeBuilder::from_shared(wire.provider(&server)).with_pacing(Pacing::off()).build().unwrap();
        let done = warm_then_burst(&runtime, 15).await;
        let journal = server.journal();
        assert!(refused(&journal) >= 6, "{wire}: {} refused of {}", refused(&journal), journal.len());
        assert_eq!(journal.len() - refused(&journal), 16, "{wire}: all answered in the end");
        assert!(done.iter().all(|(_, waits)| waits.is_empty()), "{wire}: nothing paced");
    }
}

#[tokio::test(start_paused = true)]
async fn a_wait_past_the_deadline_is_refused_before_any_request() {
    for wire in stating_wires() {
        let server = ChaosServer::start(Scenario::new().with_rate_limit(RateLimit::new().requests(1))).await.unwrap();
        let runtime = RuntimeBuilder::from_shared(wire.provider(&server))
            .with_policy(RetryPolicy::new().with_budget_ms(Some(30_000)))
            .build()
            .unwrap();
        runtime.exec("warm").await.unwrap();
        let error = runtime.exec("too soon").await.unwrap_err();
        assert_eq!(error.kind(), ExecErrorKind::Refused, "{wire}");
        let stopped = error.stopped_by().unwrap();
        assert!(stopped.starts_with("the requests rate limit (1) is used up: the wait of 60 s"), "{wire}: {stopped}");
        assert_eq!(server.journal().len(), 1, "{wire}: no request was sent for it");
    }
}

#[tokio::test(start_paused = true)]
async fn gemini_states_no_limits_so_nothing_is_paced() {
    let wire = wires::named("gemini");
    let server = ChaosServer::start(limited()).await.unwrap();
    let runtime = RuntimeBuilder::from_shared(wire.provider(&server)).build().unwrap();
    let done = warm_then_burst(&runtime, 12).await;
    assert!(done.iter().all(|(_, waits)| waits.is_empty()));
    assert!(refused(&server.journal()) > 0, "the server's limit is met by 429s alone");
}

#[tokio::test(start_paused = true)]
async fn a_tokens_limit_binds_the_same_way_with_the_first_answer_calibrating_the_estimates() {
    for wire in stating_wires() {
        // 60 tokens a minute, requests unbounded: each call costs its prompt's and answer's words.
        let server = ChaosServer::start(Scenario::new().with_rate_limit(RateLimit::new().tokens(60))).await.unwrap();
        let runtime = RuntimeBuilder::from_shared(wire.provider(&server)).build().unwrap();
        let (warm, done) = burst_after_warm(&runtime, 15).await;
        let journal = server.journal();
        assert_eq!(refused(&journal), 0, "{wire}: {journal:?}");
        assert_eq!(journal.len(), 16, "{wire}");
        assert!(done.iter().any(|(_, waits, _)| !waits.is_empty()), "{wire}: the tokens limit bound");
        // What the limit itself allows: the burst's tokens beyond what the warm call left, at 1 a
        // second; the last answer's share is needed before it is sent.
        let needed: u64 = done.iter().map(|(_, _, tokens)| tokens).sum();
        let ideal = Duration::from_secs(needed.saturating_sub(60 - warm));
        let burst = done.iter().map(|(at, _, _)| *at).max().unwrap();
        assert!(burst >= ideal && burst.as_secs_f64() <= 1.15 * ideal.as_secs_f64(), "{wire}: {burst:?} vs {ideal:?}");
    }
}

/// An answer that reports a usage no call can have, on every wire: `u64::MAX` output tokens (Chat
/// Completions' `completion_tokens`, Responses' and Anthropic's `output_tokens`), Gemini's
/// `thoughtsTokenCount` of 2^64 - 1 added to its output. It is no usage of the reply's, and the
/// 10 000 tokens a minute the OpenAI wires state hold no debt of it: the next execs go at once.
#[tokio::test(start_paused = true)]
async fn a_usage_no_call_can_have_is_dropped_on_every_wire_and_poisons_no_bucket() {
    use agentic_chaos::{Step, TokenUsage};
    let tokens = |step: agentic_chaos::Completion| {
        step.header("x-ratelimit-limit-tokens", "10000")
            .header("x-ratelimit-remaining-tokens", "10000")
            .header("x-ratelimit-reset-tokens", "0s")
    };
    for wire in wires::all() {
        let hostile = match wire.kind {
            WireKind::Gemini => TokenUsage::new(3, 5).with_reasoning(u64::MAX),
            _ => TokenUsage::new(3, u64::MAX),
        };
        let scenario = Scenario::new()
            .then(tokens(Step::ok("warm")))
            .then(tokens(Step::ok("hostile").usage(hostile)))
            .otherwise(tokens(Step::ok("fine")));
        let server = ChaosServer::start(scenario).await.unwrap();
        let runtime = RuntimeBuilder::from_shared(wire.provider(&server)).build().unwrap();
        runtime.exec("warm").await.unwrap();
        let reply = runtime.exec("hostile").await.unwrap();
        assert_eq!((reply.text(), reply.usage()), ("hostile", None), "{wire}");
        let started = Instant::now();
        for n in 0..5 {
            let reply = runtime.exec(format!("later {n}")).await.unwrap();
            assert!(reply.usage().is_some_and(|usage| usage.output_tokens < 100), "{wire}: {:?}", reply.usage());
            assert!(reply.decisions().is_empty(), "{wire}: {:?}", reply.decisions());
        }
        assert_eq!((started.elapsed(), server.journal().len()), (Duration::ZERO, 7), "{wire}");
    }
}
