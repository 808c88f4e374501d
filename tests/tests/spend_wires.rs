//! Spend limits through the real HTTP providers against the chaos server, on every wire: each call
//! is sent the `max_tokens` its limits leave it, in its wire's field (the chaos journal reads it),
//! and the call that would pass a limit is never sent (docs/design.md §23).

use agentic_chaos::{ChaosServer, Scenario, Step, TokenUsage};
use agentic_runtime::exec::RuntimeBuilder;
use agentic_runtime::spend::{Limit, UsageLimits};
use agentic_runtime::storm::Refusal;
use agentic_runtime::{ExecErrorKind, Toolbox};
use agentic_test_support::wires;
use serde_json::json;

#[tokio::test(start_paused = true)]
async fn each_call_asks_for_what_is_left_and_the_call_past_the_limit_is_never_sent_on_every_wire() {
    for wire in wires::all() {
        let scenario = Scenario::new()
            .then(Step::tool_use("search", json!({"q": "a"})).usage(TokenUsage::new(600, 100)))
            .then(Step::tool_use("search", json!({"q": "b"})).usage(TokenUsage::new(700, 150)))
            .then(Step::ok("never asked"));
        let server = ChaosServer::start(scenario).await.unwrap();
        let tools = Toolbox::new().with_fn("search", "Searches.", json!(null), |_| async { Ok("found".to_owned()) });
        let limits = UsageLimits::new().with_max_output_tokens(400).with_max_total_tokens(1_600);
        let runtime = RuntimeBuilder::from_shared(wire.provider(&server))
            .with_tools(tools)
            .with_usage_limits(limits)
            .build()
            .unwrap();
        let error = runtime.exec("Look it up twice.").await.unwrap_err();
        assert_eq!(error.kind(), ExecErrorKind::UsageLimit, "{wire}: {error}");
        let journal = server.journal();
        let asked: Vec<Option<u64>> = journal.iter().map(|entry| entry.max_tokens).collect();
        // 400 of output at first; then 300, the output limit's rest (the total's is 1600 - 700 -
        // the history); the third call (its input past what 1 600 - 1 550 leaves) was never sent.
        assert_eq!(asked.len(), 2, "{wire}: {asked:?}");
        assert_eq!(asked[0], Some(400), "{wire}");
        assert_eq!(asked[1], Some(300), "{wire}");
        let Some(Refusal::UsageLimit { limit, used, .. }) = error.refusal() else { panic!("{wire}: {error:?}") };
        assert_eq!((*limit, *used), (Limit::MaxTotalTokens, 1_550), "{wire}");
    }
}
