//! The latest GenAI conventions' span attributes, with `OTEL_SEMCONV_STABILITY_OPT_IN` set: a test
//! binary of its own, because the variable is read once per process (the other binaries never set
//! it, and their tests prove today's attributes unchanged; the crate's unit tests prove it for the time to
//! first chunk and the compaction flag).

use agentic_otel::opentelemetry::Value;
use agentic_otel::opentelemetry_sdk::metrics::SdkMeterProvider;
use agentic_otel::opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use std::sync::Once;
use std::time::Duration;

use agentic_runtime::compact::DropOldest;
use agentic_runtime::message::Usage;
use agentic_runtime::{Runtime, Scripted, ScriptedProvider, Toolbox};
use tracing_subscriber::layer::SubscriberExt as _;

/// Sets the opt-in, once, before any test of this binary reads it.
fn opt_in() {
    static SET: Once = Once::new();
    // SAFETY: every test calls this first, and nothing reads the environment before it returns.
    SET.call_once(|| unsafe { std::env::set_var("OTEL_SEMCONV_STABILITY_OPT_IN", "http,gen_ai_latest_experimental") });
}

/// The finished spans of `runtime.exec(prompt)` under the OpenTelemetry layer.
async fn spans_of_exec(runtime: &Runtime, prompt: &str) -> Vec<SpanData> {
    let spans = InMemorySpanExporter::default();
    let tracer_provider = SdkTracerProvider::builder().with_simple_exporter(spans.clone()).build();
    let meter_provider = SdkMeterProvider::builder().build();
    let subscriber = tracing_subscriber::registry().with(agentic_otel::layer(&tracer_provider, &meter_provider));
    {
        let _default = tracing::subscriber::set_default(subscriber);
        runtime.exec(prompt).await.unwrap();
    }
    tracer_provider.force_flush().unwrap();
    spans.get_finished_spans().unwrap()
}

fn attribute(span: &SpanData, key: &str) -> Option<Value> {
    span.attributes.iter().find(|kv| kv.key.as_str() == key).map(|kv| kv.value.clone())
}

#[tokio::test(start_paused = true)]
async fn a_retried_call_counts_its_resends_and_cached_tokens_are_named_as_the_latest_conventions_name_them() {
    opt_in();
    let mut cached = Usage::new(12, 5);
    cached.cache_read_input_tokens = 8;
    let provider =
        ScriptedProvider::new([Scripted::http(503, "unavailable"), Scripted::ok("hello").with_usage(cached)]);
    let runtime = Runtime::new(provider);
    let spans = spans_of_exec(&runtime, "hi").await;
    let calls: Vec<&SpanData> = spans.iter().filter(|span| span.name.starts_with("chat")).collect();
    assert_eq!(calls.len(), 2, "{spans:?}");
    assert_eq!(attribute(calls[0], "http.request.resend_count"), None, "the first call is no resend");
    assert_eq!(attribute(calls[1], "http.request.resend_count"), Some(Value::I64(1)));
    assert_eq!(attribute(calls[1], "gen_ai.usage.cache_read.input_tokens"), Some(Value::I64(8)));
    assert_eq!(attribute(calls[1], "gen_ai.usage.cache_write.input_tokens"), None, "none reported");
    assert_eq!(attribute(calls[1], "gen_ai.usage.input_tokens"), Some(Value::I64(12)));
}

#[tokio::test(start_paused = true)]
async fn the_calls_after_a_compaction_say_so_and_each_call_with_content_times_its_first_chunk() {
    opt_in();
    let tools = Toolbox::new().with_fn("read", "Reads a page", serde_json::json!({"type": "object"}), |_| async {
        Ok("a long page ...".to_owned())
    });
    let provider = ScriptedProvider::new([
        Scripted::tool_call("read", serde_json::json!({})),
        Scripted::tool_call("read", serde_json::json!({})),
        Scripted::http(400, "This model's maximum context length is 8192 tokens"),
        Scripted::ok("The pages say ...").with_latency(Duration::from_millis(250)),
    ]);
    let runtime = Runtime::builder(provider).with_tools(tools).with_compactor(DropOldest::keeping(1)).build().unwrap();
    let spans = spans_of_exec(&runtime, "Read the pages.").await;
    let calls: Vec<&SpanData> = spans.iter().filter(|span| span.name.starts_with("chat")).collect();
    assert_eq!(calls.len(), 4, "two tool turns, the overflow, the turn again: {spans:?}");
    let compacted: Vec<Option<Value>> =
        calls.iter().map(|call| attribute(call, "gen_ai.conversation.compacted")).collect();
    // Set on the call that sent the compacted conversation only, and never to `false`.
    assert_eq!(compacted, [None, None, None, Some(Value::Bool(true))]);
    let first_chunk: Vec<Option<Value>> =
        calls.iter().map(|call| attribute(call, "gen_ai.response.time_to_first_chunk")).collect();
    // The tool calls came at once; the overflow had no content; the answer came after 250 ms.
    assert_eq!(first_chunk, [Some(Value::F64(0.0)), Some(Value::F64(0.0)), None, Some(Value::F64(0.25))]);
    let exec = spans.iter().find(|span| span.name.starts_with("invoke_agent")).expect("the exec's span");
    assert_eq!(attribute(exec, "gen_ai.conversation.compacted"), None, "a call's attribute");
}
