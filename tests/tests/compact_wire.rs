//! Context compaction on every wire (`wires::all`) against the chaos server, whose context window refuses
//! a conversation that is too large with the provider's own 400: the compacted conversation must
//! really fit for the exec to answer (real sockets on 127.0.0.1, millisecond policy delays, as in
//! the gauntlet).

use agentic_chaos::{ChaosServer, Scenario, Step as ChaosStep};
use agentic_runtime::compact::{Compactor, DropOldest, Summarize};
use agentic_runtime::decision::Verdict;
use agentic_runtime::exec::RuntimeBuilder;
use agentic_runtime::{ExecErrorKind, RetryPolicy, Runtime, Toolbox};
use agentic_test_support::wires::{self, Wire};
use serde_json::json;

/// Each page a tool call returns: 1 000 bytes. Three of them do not fit the window; two do.
const PAGE_BYTES: usize = 1_000;
const WINDOW: usize = 2_500;

fn pages() -> Toolbox {
    Toolbox::new().with_fn("read", "Reads a page", json!({"type": "object"}), |input| async move {
        let head = format!("page {}: ", input["n"]);
        Ok(format!("{head}{}", "x".repeat(PAGE_BYTES - head.len())))
    })
}

fn runtime_for(wire: Wire, server: &ChaosServer, compactor: impl Compactor + 'static) -> Runtime {
    RuntimeBuilder::from_shared(wire.provider_at(&wire.base_url(server), None, Some("chaos")))
        .with_policy(RetryPolicy::new().with_session_base_delay_ms(1).with_exec_base_delay_ms(1))
        .with_tools(pages())
        .with_compactor(compactor)
        .build()
        .unwrap()
}

/// Three tool turns (the third result makes the conversation too large), then `rest`.
fn three_pages_then(rest: impl IntoIterator<Item = ChaosStep>) -> Scenario {
    let mut scenario = Scenario::new().with_context_window(WINDOW);
    for n in 1..=3 {
        scenario = scenario.then(ChaosStep::tool_use("read", json!({"n": n})));
    }
    rest.into_iter().fold(scenario, Scenario::then)
}

#[tokio::test]
async fn dropping_the_oldest_turn_makes_the_conversation_fit_on_every_wire() {
    for wire in wires::all() {
        let server = ChaosServer::start(three_pages_then([ChaosStep::ok("The pages say x.").into()])).await.unwrap();
        let runtime = runtime_for(wire, &server, DropOldest::keeping(2));
        let reply = runtime.exec("Read the pages.").await.unwrap_or_else(|error| panic!("{wire}: {error}"));
        assert_eq!(reply.text(), "The pages say x.", "{wire}");

        let journal = server.journal();
        assert_eq!(journal.len(), 5, "{wire}");
        let over = &journal[3];
        assert!(over.over_window && over.context_bytes > WINDOW, "{wire}: {over:?}");
        assert_eq!(over.messages, 7, "{wire}: the prompt and three turns");
        let fits = &journal[4];
        assert!(!fits.over_window && fits.context_bytes <= WINDOW, "{wire}: {fits:?}");
        assert_eq!(fits.messages, 5, "{wire}: the prompt and the last two turns");

        let compaction = reply.decisions().iter().find(|decision| decision.verdict() == Verdict::Compacted);
        let compaction = compaction.unwrap_or_else(|| panic!("{wire}: no compaction in {:?}", reply.decisions()));
        assert_eq!(compaction.reason(), "context overflow: compacted 7 → 5 messages by `drop_oldest`", "{wire}");
        server.shutdown().await;
    }
}

#[tokio::test]
async fn a_summary_retried_after_a_503_makes_the_conversation_fit_on_every_wire() {
    for wire in wires::all() {
        let scenario = three_pages_then([
            ChaosStep::http_error(503).into(),
            ChaosStep::ok("Page 1 is all x.").into(),
            ChaosStep::ok("The pages say x.").into(),
        ]);
        let server = ChaosServer::start(scenario).await.unwrap();
        let reply = runtime_for(wire, &server, Summarize::keeping(2))
            .exec("Read the pages.")
            .await
            .unwrap_or_else(|error| panic!("{wire}: {error}"));
        assert_eq!(reply.text(), "The pages say x.", "{wire}");

        let journal = server.journal();
        assert_eq!(journal.len(), 7, "{wire}");
        assert!(journal[3].over_window, "{wire}");
        // The summary's question, the 503 and the retry: one message each, no tools offered.
        for summary in &journal[4..6] {
            assert_eq!(summary.messages, 1, "{wire}");
            assert!(summary.tools.is_empty(), "{wire}: {summary:?}");
            assert!(summary.context_bytes <= WINDOW, "{wire}: {summary:?}");
        }
        let fits = &journal[6];
        assert!(!fits.over_window && fits.context_bytes <= WINDOW, "{wire}: {fits:?}");
        assert_eq!(fits.messages, 5, "{wire}");
        assert_eq!(fits.tools, ["read"], "{wire}");
        server.shutdown().await;
    }
}

#[tokio::test]
async fn a_prompt_that_overflows_alone_cannot_be_compacted_on_every_wire() {
    for wire in wires::all() {
        let server = ChaosServer::start(three_pages_then([])).await.unwrap();
        let runtime = runtime_for(wire, &server, DropOldest::keeping(2));
        let error = runtime.exec("x".repeat(WINDOW + 1)).await.expect_err(wire.name());
        assert_eq!(error.kind(), ExecErrorKind::ContextOverflow, "{wire}");
        assert_eq!(error.calls(), 1, "{wire}");
        assert!(
            error.attempt_errors()[0].contains("`drop_oldest` could not compact it: nothing to drop"),
            "{wire}: {error}"
        );
        assert!(server.journal()[0].over_window, "{wire}");
        server.shutdown().await;
    }
}
