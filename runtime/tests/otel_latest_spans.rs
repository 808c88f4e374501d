//! The latest GenAI conventions' span attributes, with `OTEL_SEMCONV_STABILITY_OPT_IN` set: a test
//! binary of its own, because the variable is read once per process (the other binaries never set
//! it, and their tests prove today's attributes unchanged).

use agentic_runtime::otel::opentelemetry::Value;
use agentic_runtime::otel::opentelemetry_sdk::metrics::SdkMeterProvider;
use agentic_runtime::otel::opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use agentic_runtime::{Runtime, ScriptedProvider, Step, Usage};
use tracing_subscriber::layer::SubscriberExt as _;

fn attribute(span: &SpanData, key: &str) -> Option<Value> {
    span.attributes.iter().find(|kv| kv.key.as_str() == key).map(|kv| kv.value.clone())
}

#[tokio::test(start_paused = true)]
async fn a_retried_call_counts_its_resends_and_cached_tokens_are_named_as_the_latest_conventions_name_them() {
    // SAFETY: the only test of this binary, run before anything reads the environment.
    unsafe { std::env::set_var("OTEL_SEMCONV_STABILITY_OPT_IN", "http,gen_ai_latest_experimental") };
    let spans = InMemorySpanExporter::default();
    let tracer_provider = SdkTracerProvider::builder().with_simple_exporter(spans.clone()).build();
    let meter_provider = SdkMeterProvider::builder().build();
    let subscriber =
        tracing_subscriber::registry().with(agentic_runtime::otel::layer(&tracer_provider, &meter_provider));
    let mut cached = Usage::new(12, 5);
    cached.cache_read_input_tokens = 8;
    let provider = ScriptedProvider::new([Step::http(503, "unavailable"), Step::ok("hello").with_usage(cached)]);
    let runtime = Runtime::new(provider);
    {
        let _default = tracing::subscriber::set_default(subscriber);
        runtime.exec("hi").await.unwrap();
    }
    tracer_provider.force_flush().unwrap();
    let spans = spans.get_finished_spans().unwrap();
    let calls: Vec<&SpanData> = spans.iter().filter(|span| span.name.starts_with("chat")).collect();
    assert_eq!(calls.len(), 2, "{spans:?}");
    assert_eq!(attribute(calls[0], "http.request.resend_count"), None, "the first call is no resend");
    assert_eq!(attribute(calls[1], "http.request.resend_count"), Some(Value::I64(1)));
    assert_eq!(attribute(calls[1], "gen_ai.usage.cache_read.input_tokens"), Some(Value::I64(8)));
    assert_eq!(attribute(calls[1], "gen_ai.usage.cache_write.input_tokens"), None, "none reported");
    assert_eq!(attribute(calls[1], "gen_ai.usage.input_tokens"), Some(Value::I64(12)));
}
