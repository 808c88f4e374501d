//! Data, not prose: an agent function that reads an invoice into a typed `Invoice`, against the
//! embedded chaos server (no key, no network).
//!
//! The model is asked for JSON of `Invoice`'s schema (OpenAI-compatible: `response_format` with a
//! strict `json_schema`; Anthropic: a forced tool). The chaos server first answers with JSON cut
//! mid-string, then with a total the validator refuses, then with a good invoice: each bad answer's
//! parse error or rejection goes back to the model, as the decisions printed below show.
//!
//! ```text
//! cargo run --example extract
//! ```

use agentic_chaos::{ChaosServer, Scenario, Step};
use agentic_runtime::decision::Decision;
use agentic_runtime::provider::{AnthropicProvider, OpenAiProvider};
use agentic_runtime::{ExecError, Reply, Runtime, agentic_function};

/// An invoice, as the model reads it.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)] // printed with Debug
struct Invoice {
    /// The ISO 4217 code, e.g. "EUR".
    currency: String,
    /// The amount due.
    total: f64,
    /// The invoice's lines.
    lines: Vec<Line>,
}

/// One line of an invoice.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)] // printed with Debug
struct Line {
    description: String,
    amount: f64,
}

/// What a schema cannot say: the lines add up to the total.
fn adds_up(reply: &Reply) -> Result<(), String> {
    let invoice: Invoice = serde_json::from_str(reply.text()).map_err(|error| error.to_string())?;
    let sum: f64 = invoice.lines.iter().map(|line| line.amount).sum();
    if (sum - invoice.total).abs() < 0.005 {
        Ok(())
    } else {
        Err(format!("the lines add up to {sum:.2}, not the total {:.2}", invoice.total))
    }
}

/// Read the invoice the user gives and answer with its currency, total and lines.
#[agentic_function(max_retries = 3, session_base_delay_ms = 50, exec_base_delay_ms = 50, validate = adds_up)]
async fn read_invoice(runtime: &Runtime, text: &str) -> Result<Invoice, ExecError> {
    runtime.exec_json(text).await
}

const TEXT: &str = "Invoice 2026-117. Hosting, November: 40.00 EUR. Support: 2.50 EUR. Total due: 42.50 EUR.";

fn print(decision: &Decision) {
    println!(
        "  {} attempt {}: {} -> {} ({})",
        decision.layer().name(),
        decision.attempt(),
        decision.error(),
        decision.verdict(),
        decision.reason()
    );
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let scenario = Scenario::new()
        .then(Step::ok(r#"{"currency": "EUR", "total": 42.5, "lines": [{"description": "Hosting, Nov"#))
        .then(Step::ok(r#"{"currency": "EUR", "total": 42.5, "lines": [{"description": "Hosting", "amount": 40.0}]}"#))
        .otherwise(Step::ok(
            r#"{"currency": "EUR", "total": 42.5, "lines": [{"description": "Hosting", "amount": 40.0}, {"description": "Support", "amount": 2.5}]}"#,
        ));
    for wire in ["openai", "anthropic"] {
        let server = ChaosServer::start(scenario.clone()).await?;
        let runtime = match wire {
            "openai" => Runtime::builder(OpenAiProvider::new(server.openai_base_url(), None).with_model("chaos")),
            _ => Runtime::builder(AnthropicProvider::new(server.anthropic_base_url(), None).with_model("chaos")),
        }
        .with_observer(print)
        .build()?;
        println!("{wire}:");
        let invoice = read_invoice(&runtime, TEXT).await?;
        println!("  => {invoice:#?}\n");
        server.shutdown().await;
    }
    Ok(())
}
