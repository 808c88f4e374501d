//! A runtime's spend account with the scripted provider on paused time: every exec's calls reserve
//! their worst case against it before they are sent, so concurrent execs cannot each see the same
//! room; a window that ends gives the room back (docs/design.md §23, "A shared account").

use std::time::Duration;

use futures_util::future::join_all;

use agentic_runtime::message::Usage;
use agentic_runtime::spend::{Limit, Price, Prices, SpendAccount, UsageLimits};
use agentic_runtime::storm::Refusal;
use agentic_runtime::{ExecErrorKind, Runtime, Scripted, ScriptedProvider};

/// Each call's answer: one input token (at most the estimate of any prompt) and 100 output
/// tokens, after a second, so that every exec has reserved before any settles.
fn answer() -> Scripted {
    Scripted::ok("done").with_usage(Usage::new(1, 100)).with_latency(Duration::from_secs(1))
}

fn account() -> SpendAccount {
    SpendAccount::per_hour().with_max_total_tokens(10_000).with_call_output_tokens(100)
}

#[tokio::test(start_paused = true)]
async fn two_hundred_concurrent_execs_never_pass_the_account() {
    let provider = ScriptedProvider::new([]).otherwise(answer());
    let runtime = Runtime::builder(provider.clone()).with_spend_account(account()).build().unwrap();
    let results = join_all((0..200).map(|_| runtime.exec("Summarize the invoice"))).await;
    let sent = provider.calls();
    let refused = results.iter().filter(|result| result.is_err()).count();
    assert_eq!(sent + refused, 200, "every exec either called once or was refused before its call");
    assert!(sent > 0 && refused > 0, "{sent} sent, {refused} refused");
    // Each call reserved its input estimate and 100 output tokens: fewer than 100 fit in 10 000.
    assert!(sent < 100, "{sent} calls were sent");
    let reported: u64 = results.iter().flatten().map(|reply| reply.usage().unwrap().total_tokens()).sum();
    assert!(reported <= 10_000, "the calls sent reported {reported} tokens");
    assert!(provider.requests().iter().all(|request| request.max_tokens == Some(100)), "each call's output is bounded");
    for error in results.iter().filter_map(|result| result.as_ref().err()) {
        assert_eq!(error.kind(), ExecErrorKind::UsageLimit, "{error}");
        let Some(Refusal::UsageLimit { limit: Limit::MaxTotalTokens, max: 10_000, account: Some(window), .. }) =
            error.refusal()
        else {
            panic!("{error:?}")
        };
        assert_eq!(window.window, Duration::from_secs(3600));
        assert!(
            error.to_string().contains("of the spend account's 3600 s window would be passed")
                && error.to_string().contains("the window resets in 3600 s"),
            "{error}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_window_that_ends_gives_the_room_back() {
    let provider = ScriptedProvider::new([]).otherwise(answer());
    let account = SpendAccount::per_hour().with_max_total_tokens(250).with_call_output_tokens(100);
    let runtime = Runtime::builder(provider.clone()).with_spend_account(account).build().unwrap();
    runtime.exec("one").await.unwrap();
    runtime.exec("two").await.unwrap();
    // 202 spent: the third call's reservation (its input and 100 output tokens) does not fit.
    let error = runtime.exec("three").await.unwrap_err();
    assert_eq!(error.kind(), ExecErrorKind::UsageLimit, "{error}");
    assert_eq!(provider.calls(), 2, "no request for the refused call");
    assert!(error.to_string().contains("202 spent or held by calls in flight"), "{error}");
    tokio::time::advance(Duration::from_secs(3600)).await;
    runtime.exec("three, an hour later").await.unwrap();
    assert_eq!(provider.calls(), 3);
}

#[tokio::test(start_paused = true)]
async fn a_settle_gives_back_what_a_call_did_not_use() {
    // Each call reserves about 100 tokens and reports 2: twenty sequential execs fit in 250.
    let provider = ScriptedProvider::new([]).otherwise(Scripted::ok("short").with_usage(Usage::new(1, 1)));
    let account = SpendAccount::per_day().with_max_total_tokens(250).with_call_output_tokens(100);
    let runtime = Runtime::builder(provider.clone()).with_spend_account(account).build().unwrap();
    for _ in 0..20 {
        runtime.exec("hi").await.unwrap();
    }
    assert_eq!(provider.calls(), 20);
}

#[tokio::test(start_paused = true)]
async fn the_exec_limits_and_the_account_both_bound_a_call() {
    let provider = ScriptedProvider::new([]).otherwise(answer());
    let runtime = Runtime::builder(provider.clone())
        .with_spend_account(account())
        .with_usage_limits(UsageLimits::new().with_max_output_tokens(40))
        .build()
        .unwrap();
    runtime.exec("hi").await.unwrap();
    assert_eq!(provider.requests()[0].max_tokens, Some(40), "the exec's limit is the tighter");
}

#[tokio::test(start_paused = true)]
async fn a_dollar_account_reserves_at_the_targets_price() {
    let provider = ScriptedProvider::new([]).otherwise(answer()).with_model("m");
    let prices = Prices::new().with("scripted/m", Price::per_million(1.0, 10.0).unwrap()).unwrap();
    // 100 output tokens cost $0.001: the worst case of a call is a little more, so 0.0025 holds two.
    let account = SpendAccount::per_day().with_max_cost_usd(0.0025).with_call_output_tokens(100);
    let runtime =
        Runtime::builder(provider.clone()).with_prices(prices).with_spend_account(account.clone()).build().unwrap();
    let results = join_all((0..5).map(|_| runtime.exec("hi"))).await;
    assert_eq!(provider.calls(), 2, "{results:?}");
    let error = results.iter().find_map(|result| result.as_ref().err()).unwrap();
    assert!(matches!(error.refusal(), Some(Refusal::UsageLimit { limit: Limit::MaxCostUsd, .. })), "{error}");
    // Without a price for the target, the runtime is not built.
    let unpriced = Runtime::builder(ScriptedProvider::new([])).with_spend_account(account).build().unwrap_err();
    assert_eq!(unpriced.key(), "max_cost_usd");
}

#[test]
fn an_invalid_account_is_an_error_of_build() {
    let error =
        Runtime::builder(ScriptedProvider::new([])).with_spend_account(SpendAccount::per_day()).build().unwrap_err();
    assert_eq!(error.key(), "with_spend_account");
    assert!(error.to_string().contains("limits nothing"), "{error}");
}
