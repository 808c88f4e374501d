//! Spend limits per exec with the scripted provider on paused time: each limit stops before the
//! call or tool turn that would pass it, with no request sent (docs/design.md §23).

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use agentic_runtime::message::Usage;
use agentic_runtime::spend::{Limit, UsageLimits};
use agentic_runtime::storm::Refusal;
use agentic_runtime::{ExecErrorKind, Runtime, Scripted, ScriptedProvider, Toolbox};
use serde_json::json;

fn limited(provider: &ScriptedProvider, limits: UsageLimits) -> Runtime {
    Runtime::builder(provider.clone()).with_usage_limits(limits).build().unwrap()
}

fn search(runs: Arc<AtomicU32>) -> Toolbox {
    Toolbox::new().with_fn("search", "Searches.", json!(null), move |_| {
        let runs = runs.clone();
        async move {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok("found".to_owned())
        }
    })
}

#[tokio::test(start_paused = true)]
async fn the_call_that_would_pass_max_total_tokens_is_never_sent() {
    let runs = Arc::new(AtomicU32::new(0));
    let provider = ScriptedProvider::new([
        Scripted::tool_call("search", json!({"q": "a"})).with_usage(Usage::new(960, 30)),
        Scripted::ok("never asked"),
    ]);
    let runtime = Runtime::builder(provider.clone())
        .with_tools(search(runs.clone()))
        .with_usage_limits(UsageLimits::new().with_max_total_tokens(1_000))
        .build()
        .unwrap();
    let error = runtime.exec("Look it up.").await.unwrap_err();
    assert_eq!(error.kind(), ExecErrorKind::UsageLimit, "{error}");
    assert_eq!(provider.calls(), 1, "no request for the call that would pass the limit");
    let Some(Refusal::UsageLimit { limit, max, used, needed, .. }) = error.refusal() else { panic!("{error:?}") };
    assert_eq!((*limit, *max, *used), (Limit::MaxTotalTokens, 1_000, 990));
    assert!(*needed > 10, "the history's estimate and one output token: {needed}");
    assert!(error.to_string().contains("`max_total_tokens` (1000) would be passed: 990 spent"), "{error}");
    assert_eq!(error.spent().unwrap().total_tokens(), 990);
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the tool turn before it ran");
}

#[tokio::test(start_paused = true)]
async fn a_failed_attempt_counts_against_the_limit() {
    let provider = ScriptedProvider::new([Scripted::cut("Hal").with_usage(Usage::new(598, 5)), Scripted::ok("no")]);
    let runtime = limited(&provider, UsageLimits::new().with_max_input_tokens(600));
    let error = runtime.exec("hi").await.unwrap_err();
    assert_eq!(error.kind(), ExecErrorKind::UsageLimit, "{error}");
    assert_eq!(provider.calls(), 1, "the retry would pass the input limit: not sent");
    assert_eq!(error.spent().unwrap().input_tokens, 598);
}

#[tokio::test(start_paused = true)]
async fn each_call_asks_for_no_more_output_than_is_left() {
    let runs = Arc::new(AtomicU32::new(0));
    let provider = ScriptedProvider::new([
        Scripted::tool_call("search", json!({})).with_usage(Usage::new(10, 30)),
        Scripted::ok("done").with_usage(Usage::new(20, 5)),
    ]);
    let runtime = Runtime::builder(provider.clone())
        .with_tools(search(runs))
        .with_usage_limits(UsageLimits::new().with_max_output_tokens(100))
        .build()
        .unwrap();
    let reply = runtime.exec("q").await.unwrap();
    let asked: Vec<Option<u64>> = provider.requests().iter().map(|request| request.max_tokens).collect();
    assert_eq!(asked, [Some(100), Some(70)]);
    let spent = reply.spent().unwrap();
    assert_eq!((spent.input_tokens, spent.output_tokens, spent.tool_calls), (30, 35, 1));
}

#[tokio::test(start_paused = true)]
async fn max_tool_calls_stops_the_turn_that_would_pass_it_before_any_tool_runs() {
    let runs = Arc::new(AtomicU32::new(0));
    let provider = ScriptedProvider::new([
        Scripted::tool_call("search", json!({"q": "a"})),
        Scripted::tool_calls([("search", json!({"q": "b"})), ("search", json!({"q": "c"}))]),
        Scripted::ok("never"),
    ]);
    let runtime = Runtime::builder(provider.clone())
        .with_tools(search(runs.clone()))
        .with_usage_limits(UsageLimits::new().with_max_tool_calls(2))
        .build()
        .unwrap();
    let error = runtime.exec("q").await.unwrap_err();
    assert_eq!(error.kind(), ExecErrorKind::UsageLimit, "{error}");
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the turn of two calls ran none of them");
    assert_eq!(provider.calls(), 2);
    assert!(matches!(
        error.refusal(),
        Some(Refusal::UsageLimit { limit: Limit::MaxToolCalls, used: 1, needed: 2, .. })
    ));
    assert_eq!(error.spent().unwrap().tool_calls, 1);
}

#[tokio::test(start_paused = true)]
async fn a_request_sets_its_own_limits_and_an_invalid_one_is_a_programming_error() {
    let provider = ScriptedProvider::new([Scripted::ok("fine").with_usage(Usage::new(5, 5))]);
    let runtime = limited(&provider, UsageLimits::new().with_max_total_tokens(1));
    let reply = runtime.request("q").usage_limits(&UsageLimits::new().with_max_total_tokens(1_000)).send().await;
    assert_eq!(reply.unwrap().spent().unwrap().total_tokens(), 10);
    let error =
        runtime.request("q").usage_limits(&UsageLimits::new().with_max_cost_usd(-1.0)).send().await.unwrap_err();
    assert_eq!(error.kind(), ExecErrorKind::Programming, "{error}");
    assert!(error.to_string().contains("max_cost_usd"), "{error}");
}

#[test]
fn the_builder_refuses_a_limit_that_allows_nothing() {
    let error = Runtime::builder(ScriptedProvider::new([]))
        .with_usage_limits(UsageLimits::new().with_max_tool_calls(0))
        .build()
        .unwrap_err();
    assert_eq!(error.key(), "max_tool_calls");
}

#[tokio::test(start_paused = true)]
async fn an_exec_without_limits_reports_no_spend() {
    let provider = ScriptedProvider::new([Scripted::ok("fine").with_usage(Usage::new(5, 5))]);
    let reply = Runtime::new(provider.clone()).exec("q").await.unwrap();
    assert_eq!(reply.spent(), None);
    assert_eq!(provider.requests()[0].max_tokens, None);
}

fn priced(model: &str, input: f64, output: f64) -> agentic_runtime::spend::Prices {
    use agentic_runtime::spend::{Price, Prices};
    Prices::new().with(&format!("scripted/{model}"), Price::per_million(input, output).unwrap()).unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_dollar_limit_buys_each_call_the_output_it_can_and_stops_the_one_it_cannot() {
    let runs = Arc::new(AtomicU32::new(0));
    let provider = ScriptedProvider::new([
        Scripted::tool_call("search", json!({})).with_usage(Usage::new(100_000, 500)),
        Scripted::ok("never asked"),
    ])
    .with_model("m");
    // $1 and $10 a million: the first call's 100 000 input tokens and 500 output cost $0.105.
    let runtime = Runtime::builder(provider.clone())
        .with_tools(search(runs))
        .with_prices(priced("m", 1.0, 10.0))
        .with_usage_limits(UsageLimits::new().with_max_cost_usd(0.105_005))
        .build()
        .unwrap();
    let error = runtime.exec("q").await.unwrap_err();
    assert_eq!(error.kind(), ExecErrorKind::UsageLimit, "{error}");
    assert_eq!(provider.calls(), 1, "the second call's input alone would pass the limit: not sent");
    let first = provider.requests()[0].max_tokens.unwrap();
    assert!((10_490..=10_500).contains(&first), "what $0.105005 buys after the first call's input: {first}");
    let Some(Refusal::UsageLimit { limit: Limit::MaxCostUsd, max: 105_005, used: 105_000, .. }) = error.refusal()
    else {
        panic!("{:?}", error.refusal())
    };
    assert!(error.to_string().contains("`max_cost_usd` ($0.105005) would be passed: $0.105000 spent"), "{error}");
    assert!((error.spent().unwrap().cost_usd - 0.105).abs() < 1e-9);
}

#[tokio::test(start_paused = true)]
async fn a_target_without_a_price_under_a_dollar_limit_is_an_error_before_any_call() {
    let provider = ScriptedProvider::new([Scripted::ok("never")]).with_model("m");
    let error = Runtime::builder(provider.clone())
        .with_usage_limits(UsageLimits::new().with_max_cost_usd(1.0))
        .build()
        .unwrap_err();
    assert_eq!(error.key(), "max_cost_usd");
    assert!(error.message().contains("`scripted/m` has no price"), "{}", error.message());

    let runtime = Runtime::builder(provider.clone()).with_prices(priced("other", 1.0, 1.0)).build().unwrap();
    let error = runtime.request("q").usage_limits(&UsageLimits::new().with_max_cost_usd(1.0)).send().await.unwrap_err();
    assert_eq!(error.kind(), ExecErrorKind::Programming, "{error}");
    assert!(error.to_string().contains("`scripted/m` has no price"), "{error}");
    assert_eq!(provider.calls(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_stream_that_ignores_its_max_tokens_is_cut_and_not_retried() {
    let provider = ScriptedProvider::new([Scripted::ok("x".repeat(10_000)).in_chunks(100), Scripted::ok("never")]);
    let runtime = limited(&provider, UsageLimits::new().with_max_output_tokens(10));
    let error = runtime.exec("q").await.unwrap_err();
    assert_eq!(error.kind(), ExecErrorKind::UsageLimit, "{error}");
    assert_eq!(provider.calls(), 1, "the same call would pass it again: no retry");
    assert!(error.to_string().contains("UsageLimitError: the answer passed the 10 output tokens"), "{error}");
    assert!(matches!(error.refusal(), Some(Refusal::UsageLimit { limit: Limit::MaxOutputTokens, max: 10, .. })));
    // Cut at its cap (32 bytes a token), not read to its end; no usage reported.
    let output = error.spent().unwrap().output_tokens;
    assert_eq!(output, 10, "at least what it was allowed: it passed it");
}

#[tokio::test(start_paused = true)]
async fn a_call_too_dear_for_the_dollar_limit_moves_to_a_cheaper_target() {
    use agentic_runtime::decision::{MoveReason, Verdict, Why};
    use agentic_runtime::spend::{Price, Prices};
    let dear = ScriptedProvider::new([Scripted::ok("dear")]).with_model("dear");
    let cheap = ScriptedProvider::new([Scripted::ok("cheap").with_usage(Usage::new(10, 2))]).with_model("cheap");
    let prices = Prices::new()
        .with("scripted/dear", Price::per_million(1_000_000.0, 1_000_000.0).unwrap())
        .unwrap()
        .with("scripted/cheap", Price::per_million(1.0, 1.0).unwrap())
        .unwrap();
    // $0.001: a dollar a token buys no call at `dear`; at `cheap`, hundreds of tokens.
    let runtime = Runtime::builder(dear.clone())
        .with_fallback(cheap.clone())
        .with_prices(prices)
        .with_usage_limits(UsageLimits::new().with_max_cost_usd(0.001))
        .build()
        .unwrap();
    let reply = runtime.exec("q").await.unwrap();
    assert_eq!((reply.text(), reply.target()), ("cheap", Some("scripted/cheap")));
    assert_eq!((dear.calls(), cheap.calls()), (0, 1), "no request to the dear target");
    let moved = reply.decisions().iter().find(|decision| decision.verdict() == Verdict::Fallback).unwrap();
    let Why::Fallback(fallback) = moved.reason() else { panic!("{:?}", moved.reason()) };
    assert!(matches!(fallback.because, MoveReason::Cheaper(Refusal::UsageLimit { limit: Limit::MaxCostUsd, .. })));
    assert!(moved.to_string().contains("is too dear for the next call"), "{moved}");
}
