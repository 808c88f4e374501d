//! See every token and every retry: an agent function against the embedded chaos server, with the
//! spans it makes exported through `tracing-opentelemetry` to the OpenTelemetry SDK's in-memory
//! exporter, printed as a tree with their GenAI attributes, then the tokens the exec spent.
//!
//! The scenario: a 503, a stream dropped after its first chunk, a tool call, then the answer. In
//! production, the `agentic-otel` crate's `agentic_otel::init_from_env()` exports the same spans
//! (and the metrics) over OTLP to Jaeger, Tempo, Honeycomb, Langfuse or Datadog instead.
//!
//! ```text
//! cargo run --example observe
//! ```

use std::collections::HashMap;

use agentic_chaos::{ChaosServer, Scenario, Step};
use agentic_runtime::provider::AnthropicProvider;
use agentic_runtime::{ExecError, Reply, Runtime, Toolbox, agentic_function};
use opentelemetry::trace::{SpanId, Status, TracerProvider as _};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use tracing::Level;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::{Layer as _, SubscriberExt as _};

/// Answer the user's question about the weather; use the `weather` tool.
#[agentic_function(max_retries = 2, session_retries = 2, session_base_delay_ms = 50, exec_base_delay_ms = 50)]
async fn forecast(runtime: &Runtime, city: &str) -> Result<Reply, ExecError> {
    runtime.exec(format!("What is the weather in {city}?")).await
}

/// The attributes worth a glance, in this order.
const SHOWN: [&str; 9] = [
    "gen_ai.provider.name",
    "gen_ai.response.model",
    "gen_ai.response.finish_reasons",
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
    "gen_ai.tool.name",
    "server.port",
    "error.type",
    "gen_ai.agent.name",
];

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let scenario = Scenario::new()
        .then(Step::http_error(503))
        .then(Step::drop_stream(1))
        .then(Step::tool_use("weather", serde_json::json!({"city": "Paris"})))
        .otherwise(Step::ok("Sunny in Paris, 21 degrees."));
    let server = ChaosServer::start(scenario).await?;
    // Anthropic's format: a stream that drops after `message_start` has already reported its input
    // tokens, which then count as spent on a failed attempt.
    let provider = AnthropicProvider::new(server.anthropic_base_url(), None).with_model("chaos-model");
    let tools =
        Toolbox::new().with_fn("weather", "The weather in a city.", serde_json::json!({"type": "object"}), |_| async {
            Ok("sunny, 21 C".to_owned())
        });
    let runtime = Runtime::builder(provider).with_tools(tools).build().unwrap();

    let exporter = InMemorySpanExporter::default();
    let tracer_provider = SdkTracerProvider::builder().with_simple_exporter(exporter.clone()).build();
    // The runtime's spans and events only (the HTTP client's own debug spans are left out).
    let only_agentic = Targets::new().with_target("agentic_runtime", Level::TRACE);
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(tracer_provider.tracer("observe")).with_filter(only_agentic));
    let reply = {
        let _guard = tracing::subscriber::set_default(subscriber);
        forecast(&runtime, "Paris").await?
    };
    tracer_provider.force_flush()?;

    println!("answer: {}\n", reply.text());
    print_tree(&exporter.get_finished_spans()?);
    let (total, failed) = (reply.total_usage(), reply.failed_usage());
    println!(
        "\ntokens: {} in, {} out over {} calls; {} in, {} out of them spent on failed attempts",
        total.input_tokens,
        total.output_tokens,
        reply.calls(),
        failed.input_tokens,
        failed.output_tokens
    );
    server.shutdown().await;
    Ok(())
}

/// Each span under its parent, in start order, with its status, attributes and events.
fn print_tree(spans: &[SpanData]) {
    let mut children: HashMap<SpanId, Vec<&SpanData>> = HashMap::new();
    for span in spans {
        children.entry(span.parent_span_id).or_default().push(span);
    }
    for list in children.values_mut() {
        list.sort_by_key(|span| span.start_time);
    }
    let ids: Vec<SpanId> = spans.iter().map(|span| span.span_context.span_id()).collect();
    let roots = spans.iter().filter(|span| !ids.contains(&span.parent_span_id));
    for root in roots {
        print_span(root, &children, 0);
    }
}

fn print_span(span: &SpanData, children: &HashMap<SpanId, Vec<&SpanData>>, depth: usize) {
    let indent = "  ".repeat(depth);
    let status = match &span.status {
        Status::Error { .. } => " [error]",
        _ => "",
    };
    let shown: Vec<String> = SHOWN
        .iter()
        .filter_map(|key| {
            let value = span.attributes.iter().find(|kv| kv.key.as_str() == *key)?;
            Some(format!("{key}={}", value.value))
        })
        .collect();
    println!("{indent}{} ({:?}){status} {}", span.name, span.span_kind, shown.join(" "));
    for event in span.events.iter() {
        let field = |key: &str| {
            event.attributes.iter().find(|kv| kv.key.as_str() == key).map(|kv| kv.value.to_string()).unwrap_or_default()
        };
        if field("agentic.verdict").is_empty() {
            continue;
        }
        println!(
            "{indent}  - {}: {} layer, {} ({})",
            event.name,
            field("agentic.layer"),
            field("agentic.verdict"),
            field("agentic.reason")
        );
    }
    for child in children.get(&span.span_context.span_id()).into_iter().flatten() {
        print_span(child, children, depth + 1);
    }
}
