//! A typed answer does not silence the tools: a typed exec that offers a tool, against a chaos
//! server scripted "call the tool, then answer", calls the tool and then answers, on every wire.
//! The chaos server answers a request that forces a tool call as a real model does, so on the
//! Anthropic wire a request that forced the answer tool on every turn would never see its tool
//! called (the scripted call comes back as a call of the answer tool).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agentic_chaos::{ChaosServer, Scenario, Step};
use agentic_runtime::exec::RuntimeBuilder;
use agentic_runtime::policy::Jitter;
use agentic_runtime::{RetryPolicy, Toolbox};
use agentic_test_support::wires;
use serde_json::json;

#[derive(Debug, PartialEq, serde::Deserialize, schemars::JsonSchema)]
struct Quote {
    currency: String,
    rate: f64,
}

/// One attempt: an answer that is not a `Quote` fails the exec at once, with no wait.
const ONCE: RetryPolicy = RetryPolicy::new().with_max_retries(1).with_jitter(Jitter::None);

/// The tool the model must call, counting its calls.
fn exchange_rate(calls: &Arc<AtomicUsize>) -> Toolbox {
    let calls = Arc::clone(calls);
    Toolbox::new().with_fn(
        "exchange_rate",
        "The exchange rate of a currency to the dollar.",
        json!({"type": "object", "properties": {"currency": {"type": "string"}}, "required": ["currency"]}),
        move |input| {
            calls.fetch_add(1, Ordering::SeqCst);
            async move { Ok(format!("1 {} = 1.08 USD", input["currency"].as_str().unwrap_or("?"))) }
        },
    )
}

#[tokio::test]
async fn a_typed_exec_with_a_tool_calls_the_tool_then_answers_on_every_wire() {
    for wire in wires::all() {
        let scenario = Scenario::new()
            .then(Step::tool_use("exchange_rate", json!({"currency": "EUR"})))
            .then(Step::ok(r#"{"currency": "EUR", "rate": 1.08}"#));
        let server = ChaosServer::start(scenario).await.unwrap();
        let calls = Arc::new(AtomicUsize::new(0));
        let runtime =
            RuntimeBuilder::from_shared(wire.provider(&server)).with_tools(exchange_rate(&calls)).build().unwrap();
        let quote = runtime.request("What is the euro worth in dollars?").policy(&ONCE).json::<Quote>().await;
        let journal = server.journal();
        assert_eq!(calls.load(Ordering::SeqCst), 1, "{wire}: the tool was called (journal: {journal:?})");
        assert_eq!(quote.unwrap(), Quote { currency: "EUR".into(), rate: 1.08 }, "{wire}");
        assert_eq!(journal.len(), 2, "{wire}");
        assert_eq!(journal[0].tools.first().map(String::as_str), Some("exchange_rate"), "{wire}");
        assert_eq!(journal[0].forced_tool, None, "{wire}: the scripted call went out as written");
        if wire.name() == "anthropic" {
            // The answer tool comes last, and "any tool" made the scripted text a call of it.
            assert_eq!(journal[1].tools, ["exchange_rate", "Quote"], "{wire}");
            assert_eq!(journal[1].forced_tool.as_deref(), Some("Quote"), "{wire}");
        }
        server.shutdown().await;
    }
}
