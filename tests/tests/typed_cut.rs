//! A typed answer that the token limit cut, on every wire (`wires::all`) against the chaos server (real
//! sockets on 127.0.0.1, millisecond policy delays, as in `typed_wire`): the cut JSON is a
//! rejected attempt whose feedback asks for a complete, shorter answer, and the next, complete
//! answer is the result.

use std::sync::{Arc, Mutex};

use agentic_chaos::{ChaosServer, Scenario, Step};
use agentic_runtime::message::{Message, Role};
use agentic_runtime::provider::Provider;
use agentic_runtime::provider::{EventStream, Request};
use agentic_runtime::{RetryPolicy, Runtime};
use agentic_test_support::wires;

#[derive(Debug, PartialEq, serde::Deserialize, schemars::JsonSchema)]
struct Invoice {
    currency: String,
    total: f64,
}

/// Up to 3 attempts, 1 ms delays.
const POLICY: RetryPolicy =
    RetryPolicy::new().with_max_retries(3).with_session_base_delay_ms(1).with_exec_base_delay_ms(1);

/// Wraps a provider and records the messages of each request.
struct Recording {
    inner: Arc<dyn Provider>,
    requests: Arc<Mutex<Vec<Vec<Message>>>>,
}

impl Provider for Recording {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn stream<'a>(&'a self, request: &'a Request<'a>) -> EventStream<'a> {
        self.requests.lock().unwrap().push(request.messages.to_vec());
        self.inner.stream(request)
    }
}

#[tokio::test]
async fn json_cut_by_the_token_limit_is_asked_again_shorter_on_every_wire() {
    for wire in wires::all() {
        let scenario = Scenario::new()
            .then(Step::ok(r#"{"currency": "EUR", "total": 12.5, "note": "a long"#).cut_by_token_limit())
            .otherwise(Step::ok(r#"{"currency": "EUR", "total": 12.5}"#));
        let server = ChaosServer::start(scenario).await.unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let inner = wire.provider_at(&wire.base_url(&server), None, Some("chaos"));
        let runtime = Runtime::new(Recording { inner, requests: Arc::clone(&requests) });
        let invoice = runtime
            .request("Invoice: 12.50 EUR")
            .policy(&POLICY)
            .json::<Invoice>()
            .await
            .unwrap_or_else(|error| panic!("{wire}: {error}"));
        assert_eq!(invoice, Invoice { currency: "EUR".into(), total: 12.5 }, "{wire}");
        assert_eq!(server.journal().len(), 2, "{wire}: the cut answer, then the complete one");

        let requests = requests.lock().unwrap().clone();
        assert_eq!(requests.len(), 2, "{wire}");
        let feedback = requests[1].iter().rev().find(|message| message.role() == Role::User).unwrap().text();
        assert!(feedback.contains("cut off by the token limit"), "{wire}: {feedback}");
        assert!(feedback.contains("shorter"), "{wire}: {feedback}");
        assert_eq!(requests[1].last().map(Message::role), Some(Role::User), "{wire}: the feedback comes last");
        server.shutdown().await;
    }
}
