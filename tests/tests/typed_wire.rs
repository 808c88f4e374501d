//! Typed answers on every wire (`wires::all`) against the chaos server (real sockets on 127.0.0.1,
//! millisecond policy delays, as in the gauntlet), through `#[agentic_function]`: the schema reaches
//! each request the way its format asks for it, broken JSON is fed back and repaired, and the
//! validator sees the reply once it parses.

use agentic_chaos::{ChaosServer, Scenario, Step};
use agentic_runtime::exec::RuntimeBuilder;
use agentic_runtime::{ExecError, ExecErrorKind, Reply, Runtime, agentic_function};
use agentic_test_support::wires::{self, Wire};

#[derive(Debug, PartialEq, serde::Deserialize, schemars::JsonSchema)]
struct Invoice {
    currency: String,
    total: f64,
}

/// What a schema cannot say: a total above zero.
fn positive(reply: &Reply) -> Result<(), String> {
    let invoice: Invoice = serde_json::from_str(reply.text()).map_err(|error| error.to_string())?;
    if invoice.total > 0.0 { Ok(()) } else { Err(format!("the total {} is not positive", invoice.total)) }
}

/// Read the invoice and answer with its currency and total.
#[agentic_function(max_retries = 3, session_base_delay_ms = 1, exec_base_delay_ms = 1, validate = positive)]
async fn read_invoice(runtime: &Runtime, text: &str) -> Result<Invoice, ExecError> {
    runtime.exec_json(text).await
}

fn runtime_for(wire: Wire, server: &ChaosServer) -> Runtime {
    RuntimeBuilder::from_shared(wire.provider_at(&wire.base_url(server), None, Some("chaos"))).build().unwrap()
}

#[tokio::test]
async fn broken_json_then_a_rejected_total_then_good_json_on_every_wire() {
    for wire in wires::all() {
        let scenario = Scenario::new()
            .then(Step::ok(r#"{"currency": "EUR", "total": "#))
            .then(Step::ok(r#"{"currency": "EUR", "total": -3}"#))
            .otherwise(Step::ok(r#"{"currency": "EUR", "total": 12.5}"#));
        let server = ChaosServer::start(scenario).await.unwrap();
        let invoice = read_invoice(&runtime_for(wire, &server), "Invoice: 12.50 EUR")
            .await
            .unwrap_or_else(|error| panic!("{wire}: {error}"));
        assert_eq!(invoice, Invoice { currency: "EUR".into(), total: 12.5 }, "{wire}");
        let journal = server.journal();
        assert_eq!(journal.len(), 3, "{wire}");
        assert!(
            journal.iter().all(|entry| entry.schema.as_deref() == Some("Invoice")),
            "{wire}: the schema reached every request"
        );
        server.shutdown().await;
    }
}

#[tokio::test]
async fn json_of_the_wrong_shape_until_the_attempts_run_out_on_every_wire() {
    for wire in wires::all() {
        let server = ChaosServer::start(Scenario::new().otherwise(Step::ok(r#"{"amount": 1}"#))).await.unwrap();
        let error = read_invoice(&runtime_for(wire, &server), "Invoice: 12.50 EUR").await.expect_err(wire.name());
        assert_eq!(error.kind(), ExecErrorKind::InvalidResult, "{wire}");
        assert_eq!(error.attempt_errors().len(), 3, "{wire}");
        assert!(
            error.attempt_errors().iter().all(|attempt| attempt.contains("missing field `currency`")),
            "{wire}: {:?}",
            error.attempts()
        );
        assert_eq!(error.function(), Some("read_invoice"), "{wire}");
        server.shutdown().await;
    }
}
