//! Pacing with the scripted provider on paused time: the limits a response states hold the
//! runtime's later calls, in arrival order, within their deadlines (docs/design.md §10, "Pacing").

use std::time::Duration;

use agentic_runtime::decision::{Verdict, Why};
use agentic_runtime::message::Usage;
use agentic_runtime::storm::Refusal;
use agentic_runtime::storm::pace::{Limit, LimitKind, Pacing, RateLimits};
use agentic_runtime::{ExecErrorKind, RetryPolicy, Runtime, Scripted, ScriptedProvider};
use tokio::time::Instant;

const S: Duration = Duration::from_secs(1);

/// 10 requests a minute, `remaining` left, as OpenAI states it: full again when what was used has
/// refilled (the pacer finds the minute in the range of windows that allows).
fn requests(remaining: u64) -> RateLimits {
    let used = 10 - remaining;
    RateLimits::new().with(LimitKind::Requests, Limit::new(10, remaining, S * 6 * used as u32))
}

fn paced_waits(decisions: &[agentic_runtime::decision::Decision]) -> Vec<Duration> {
    decisions.iter().filter(|d| d.verdict() == Verdict::Paced).filter_map(|d| d.delay()).collect()
}

#[tokio::test(start_paused = true)]
async fn once_the_limit_is_known_a_burst_goes_in_arrival_order_at_the_limits_rate() {
    // The first answer states 9 of 10 left; the burst's 12 calls: 9 at once, then one each 6 s.
    let provider =
        ScriptedProvider::new([Scripted::ok("first").with_rate_limits(requests(9))]).otherwise(Scripted::ok("answer"));
    let runtime = Runtime::new(provider.clone());
    runtime.exec("warm").await.unwrap();
    let started = Instant::now();
    let execs = (0..12u32).map(|n| {
        let runtime = runtime.clone();
        async move {
            let reply = runtime.exec(format!("call {n}")).await.unwrap();
            (n, Instant::now() - started, paced_waits(reply.decisions()))
        }
    });
    let done = futures_util::future::join_all(execs).await;
    for (n, at, waits) in &done {
        let expected = S * 6 * n.saturating_sub(8);
        assert_eq!(*at, expected, "call {n}");
        assert_eq!(waits, &if expected.is_zero() { vec![] } else { vec![expected] }, "call {n}");
    }
    // Sent in the order they arrived.
    let prompts: Vec<String> = provider.requests().iter().skip(1).map(|r| r.messages[0].text()).collect();
    assert_eq!(prompts, (0..12).map(|n| format!("call {n}")).collect::<Vec<_>>());
    let decision = done[11].2.len();
    assert_eq!(decision, 1);
}

#[tokio::test(start_paused = true)]
async fn a_wait_past_the_deadline_is_refused_with_the_limit_and_its_reset_and_no_call() {
    let provider =
        ScriptedProvider::new([Scripted::ok("first").with_rate_limits(requests(0))]).otherwise(Scripted::ok("answer"));
    let runtime =
        Runtime::builder(provider.clone()).with_policy(RetryPolicy::new().with_budget_ms(Some(5_000))).build().unwrap();
    runtime.exec("warm").await.unwrap();
    let error = runtime.exec("too late").await.unwrap_err();
    assert_eq!(error.kind(), ExecErrorKind::Refused);
    assert_eq!(provider.calls(), 1, "no call was made");
    let stopped = error.stopped_by().unwrap();
    assert!(stopped.contains("the requests rate limit (10) is used up: the wait of 6 s"), "{stopped}");
    assert!(stopped.contains("does not fit in the 5 s left; it is full again in 60 s"), "{stopped}");
    let refused = error.decisions().iter().find_map(|d| match &d.reason() {
        Why::Refused(Refusal::RateLimit(refused)) => Some(*refused),
        _ => None,
    });
    assert_eq!(refused.map(|r| (r.limit, r.wait)), Some((LimitKind::Requests, S * 6)));
    // A longer deadline waits instead: the decision says which limit and when it is full.
    let patient = RetryPolicy::new().with_budget_ms(Some(60_000));
    let reply = runtime.request("in time").policy(&patient).send().await.unwrap();
    let paced = reply.decisions().iter().find(|d| d.verdict() == Verdict::Paced).unwrap();
    assert_eq!(paced.delay(), Some(S * 6));
    assert_eq!(
        paced.reason().to_string(),
        "the requests rate limit (10) is used up: waiting for it to refill; full again in 60 s"
    );
}

#[tokio::test(start_paused = true)]
async fn a_server_that_states_no_limit_is_not_paced_and_pacing_off_ignores_them() {
    let provider = ScriptedProvider::new([]).otherwise(Scripted::ok("answer"));
    let runtime = Runtime::new(provider.clone());
    let started = Instant::now();
    for _ in 0..50 {
        assert!(paced_waits(runtime.exec("hi").await.unwrap().decisions()).is_empty());
    }
    assert_eq!(started.elapsed(), Duration::ZERO);
    let stated = ScriptedProvider::new([]).otherwise(Scripted::ok("answer").with_rate_limits(requests(0)));
    let off = Runtime::builder(stated.clone()).with_pacing(Pacing::off()).build().unwrap();
    for _ in 0..5 {
        off.exec("hi").await.unwrap();
    }
    assert_eq!((stated.calls(), started.elapsed()), (5, Duration::ZERO));
}

#[tokio::test(start_paused = true)]
async fn a_limit_the_user_knows_paces_from_the_first_call() {
    let provider = ScriptedProvider::new([]).otherwise(Scripted::ok("answer"));
    let pacing = Pacing::from_headers().with_requests_per_minute(2).unwrap();
    let runtime = Runtime::builder(provider.clone()).with_pacing(pacing).build().unwrap();
    let started = Instant::now();
    for _ in 0..3 {
        runtime.exec("hi").await.unwrap();
    }
    assert_eq!(started.elapsed(), S * 30, "the third waits half a minute");
    let error = Pacing::from_headers().with_tokens_per_minute(0).unwrap_err();
    assert!(error.to_string().contains("`tokens_per_minute` (0) must be at least 1"), "{error}");
}

/// A tokens limit of `size` a minute, `remaining` left, full again when what was used has refilled.
fn tokens(size: u64, remaining: u64) -> RateLimits {
    let reset = Duration::from_secs_f64((size - remaining) as f64 * 60.0 / size as f64);
    RateLimits::new().with(LimitKind::Tokens, Limit::new(size, remaining, reset).with_window(S * 60))
}

#[tokio::test(start_paused = true)]
async fn the_tokens_the_answer_did_not_use_go_back() {
    // 600 tokens a minute (10 a second). Each prompt is about 104 tokens (400 bytes and a message);
    // the answers report 4 used: what is left of each reservation goes back.
    let prompt = "x".repeat(400);
    let provider = ScriptedProvider::new([Scripted::ok("first").with_rate_limits(tokens(600, 200))])
        .otherwise(Scripted::ok("answer").with_usage(Usage::new(4, 0)));
    let runtime = Runtime::new(provider.clone());
    runtime.exec("warm").await.unwrap();
    let started = Instant::now();
    for _ in 0..10 {
        runtime.exec(prompt.as_str()).await.unwrap();
    }
    // 200 left: each call reserves 104 (at once while 104 are there), gives 100 back.
    assert_eq!(started.elapsed(), Duration::ZERO, "settled calls leave room for the next");
    // Unsettled (a failure reports no usage and gives all back; an answer that used all keeps it).
    let heavy = ScriptedProvider::new([Scripted::ok("first").with_rate_limits(tokens(600, 200))])
        .otherwise(Scripted::ok("answer").with_usage(Usage::new(104, 0)));
    let runtime = Runtime::new(heavy);
    runtime.exec("warm").await.unwrap();
    let started = Instant::now();
    for _ in 0..3 {
        runtime.exec(prompt.as_str()).await.unwrap();
    }
    // 200 left: one at once (96 left), the second waits for 8 tokens (0.8 s), the third 10.4 s more.
    assert_eq!(started.elapsed(), Duration::from_millis(11_200));
}

#[tokio::test(start_paused = true)]
async fn cached_reads_are_free_where_the_server_says_so() {
    // Anthropic: input tokens 1000 a minute; the answers read 900 of their 1004 from the cache.
    let prompt = "x".repeat(4000);
    let anthropic = RateLimits::new()
        .with(LimitKind::InputTokens, Limit::new(1000, 1000, Duration::ZERO).with_window(S * 60))
        .with_cached_reads_free();
    let openai =
        RateLimits::new().with(LimitKind::InputTokens, Limit::new(1000, 1000, Duration::ZERO).with_window(S * 60));
    let mut elapsed = Vec::new();
    // Anthropic's input excludes the cached reads; OpenAI's includes them.
    let anthropic_usage = Usage::new(104, 1).with_cache_read(900);
    let openai_usage = Usage::new(1004, 1).with_cache_read(900);
    for (limits, usage) in [(anthropic, anthropic_usage), (openai, openai_usage)] {
        let provider = ScriptedProvider::new([Scripted::ok("first").with_rate_limits(limits)])
            .otherwise(Scripted::ok("answer").with_usage(usage));
        let runtime = Runtime::new(provider);
        runtime.exec("warm").await.unwrap();
        let started = Instant::now();
        for _ in 0..4 {
            runtime.exec(prompt.as_str()).await.unwrap();
        }
        elapsed.push(started.elapsed());
    }
    assert_eq!(elapsed[0], Duration::ZERO, "the cached reads went back, and the next estimates leave them out");
    // Without free reads every call counts 1004, more than the bucket: it takes the whole 1000
    // once the bucket is full, a minute apart.
    assert_eq!(elapsed[1], S * 180);
}

/// What one 503 stated: 2 requests, none left, full again in 14 minutes (a wait of 838 s for the
/// next request, as the pacer reads it).
fn fourteen_minutes() -> RateLimits {
    RateLimits::new().with(LimitKind::Requests, Limit::new(2, 0, S * 14 * 60))
}

#[tokio::test(start_paused = true)]
async fn no_statement_holds_a_call_longer_than_the_retry_after_cap() {
    // One 503 states the limit; its own exec's retry and every later exec go at once (the
    // backoff aside): the server's answers decide, not a wait of 838 s, nor a refusal.
    let provider = ScriptedProvider::new([Scripted::http(503, "overloaded").with_rate_limits(fourteen_minutes())])
        .otherwise(Scripted::ok("answer"));
    let runtime = Runtime::builder(provider.clone())
        .with_policy(RetryPolicy::new().with_budget_ms(Some(120_000)))
        .build()
        .unwrap();
    let started = Instant::now();
    let reply = runtime.exec("first").await.unwrap();
    assert_eq!(reply.calls(), 2);
    assert!(paced_waits(reply.decisions()).is_empty(), "{:?}", reply.decisions());
    assert!(started.elapsed() < S * 5, "the backoff only: {:?}", started.elapsed());
    for n in 0..5 {
        let started = Instant::now();
        let reply = runtime.exec(format!("later {n}")).await.unwrap();
        assert_eq!((reply.calls(), started.elapsed()), (1, Duration::ZERO), "exec {n}");
        assert!(reply.decisions().is_empty(), "exec {n}: {:?}", reply.decisions());
    }
    assert_eq!(provider.calls(), 7, "every exec was sent");
    // The rule is the cap, whatever the deadline: with a cap of 5 s, a wait of 6 s is not made
    // either; with the default (60 s) it is.
    let stated =
        ScriptedProvider::new([Scripted::ok("first").with_rate_limits(requests(0))]).otherwise(Scripted::ok("answer"));
    let runtime = Runtime::new(stated.clone());
    runtime.exec("warm").await.unwrap();
    let started = Instant::now();
    runtime.request("capped").policy(&RetryPolicy::new().with_retry_after_cap_ms(5_000)).send().await.unwrap();
    assert_eq!(started.elapsed(), Duration::ZERO, "6 s is past the 5 s cap: not waited");
    let reply = runtime.exec("waits").await.unwrap();
    assert_eq!(paced_waits(reply.decisions()), [S * 6], "nothing was reserved by the call that went");
}

#[tokio::test(start_paused = true)]
async fn a_usage_no_call_can_have_is_no_usage_and_leaves_the_bucket_alone() {
    // 600 tokens a minute stated with an answer that reports u64::MAX output tokens (or 1e19, or
    // Gemini's thoughts of 2^64 - 1 added to its output): not the call's usage, not the bucket's.
    for hostile in [Usage::new(10, u64::MAX), Usage::new(10_000_000_000_000_000_000, 5), Usage::new(7, u64::MAX - 1)] {
        let provider = ScriptedProvider::new([
            Scripted::ok("warm").with_rate_limits(tokens(600, 600)),
            Scripted::ok("hostile").with_usage(hostile),
        ])
        .otherwise(Scripted::ok("answer").with_usage(Usage::new(4, 1)));
        let runtime = Runtime::builder(provider.clone())
            .with_policy(RetryPolicy::new().with_budget_ms(Some(5_000)))
            .build()
            .unwrap();
        runtime.exec("warm").await.unwrap();
        let reply = runtime.exec("hostile").await.unwrap();
        assert_eq!(reply.usage(), None, "{hostile:?}");
        let started = Instant::now();
        for n in 0..5 {
            let reply = runtime.exec(format!("later {n}")).await.unwrap();
            assert_eq!(reply.usage(), Some(Usage::new(4, 1)));
        }
        assert_eq!((started.elapsed(), provider.calls()), (Duration::ZERO, 7), "{hostile:?}");
    }
}
