//! The spans and events the runtime gives OpenTelemetry, through `tracing-opentelemetry` into the
//! SDK's in-memory exporter: the span tree and its attributes in the GenAI semantic conventions'
//! terms (docs/design.md §14), on both wire formats against the chaos server (real sockets on
//! 127.0.0.1, millisecond policy delays, as in the gauntlet), and with the scripted provider.

use agentic_chaos::{ChaosServer, Scenario, Step as Chaos};
use agentic_runtime::exec::RuntimeBuilder;
use agentic_runtime::message::Usage;
use agentic_runtime::policy::Jitter;
use agentic_runtime::provider::{AnthropicProvider, OpenAiProvider, Provider};
use agentic_runtime::tool::Tool;
use agentic_runtime::{RetryPolicy, Runtime, Scripted, ScriptedProvider, Toolbox};
use opentelemetry::trace::{SpanKind, Status, TracerProvider as _};
use opentelemetry::{KeyValue, Value};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use tracing_subscriber::layer::SubscriberExt as _;

/// One session retry 1 ms later, no exec retry.
const POLICY: RetryPolicy = RetryPolicy::new()
    .with_max_retries(1)
    .with_session_retries(1)
    .with_session_base_delay_ms(1)
    .with_jitter(Jitter::None)
    .with_timeout_ms(5_000);

/// Runs `work` with a subscriber that exports to an in-memory exporter, and returns the spans.
async fn spans_of<F: Future>(work: F) -> (F::Output, Vec<SpanData>) {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder().with_simple_exporter(exporter.clone()).build();
    let subscriber =
        tracing_subscriber::registry().with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test")));
    let guard = tracing::subscriber::set_default(subscriber);
    let output = work.await;
    drop(guard);
    provider.force_flush().unwrap();
    (output, exporter.get_finished_spans().unwrap())
}

fn attribute<'a>(span: &'a SpanData, key: &str) -> Option<&'a Value> {
    span.attributes.iter().find(|kv| kv.key.as_str() == key).map(|kv| &kv.value)
}

fn text(span: &SpanData, key: &str) -> Option<String> {
    attribute(span, key).map(|value| value.as_str().into_owned())
}

fn int(span: &SpanData, key: &str) -> Option<i64> {
    match attribute(span, key)? {
        Value::I64(n) => Some(*n),
        other => panic!("`{key}` is {other:?}, not an integer"),
    }
}

fn named<'a>(spans: &'a [SpanData], prefix: &str) -> Vec<&'a SpanData> {
    let mut found: Vec<&SpanData> = spans.iter().filter(|span| span.name.starts_with(prefix)).collect();
    found.sort_by_key(|span| span.start_time);
    found
}

fn exec_span(spans: &[SpanData]) -> &SpanData {
    let execs = named(spans, "invoke_agent");
    assert_eq!(execs.len(), 1, "one exec span: {:?}", spans.iter().map(|s| &s.name).collect::<Vec<_>>());
    execs[0]
}

/// The fields of the span's decision events (other events, such as the HTTP client's, are left out).
fn event_fields(span: &SpanData) -> Vec<Vec<KeyValue>> {
    span.events
        .iter()
        .map(|event| event.attributes.clone())
        .filter(|fields| field(fields, "agentic.verdict").is_some())
        .collect()
}

fn field<'a>(fields: &'a [KeyValue], key: &str) -> Option<&'a Value> {
    fields.iter().find(|kv| kv.key.as_str() == key).map(|kv| &kv.value)
}

#[tokio::test]
async fn a_503_then_an_answer_on_both_wire_formats() {
    for wire in ["openai", "anthropic"] {
        let scenario = Scenario::new().then(Chaos::http_error(503)).otherwise(Chaos::ok("the answer"));
        let server = ChaosServer::start(scenario).await.unwrap();
        let provider: Box<dyn Provider> = match wire {
            "openai" => Box::new(OpenAiProvider::new(server.openai_base_url(), None).with_model("chaos-model")),
            _ => Box::new(AnthropicProvider::new(server.anthropic_base_url(), None).with_model("chaos-model")),
        };
        let runtime = RuntimeBuilder::from_shared(std::sync::Arc::from(provider)).build().unwrap();
        let (reply, spans) = spans_of(runtime.request("the question").policy(&POLICY).send()).await;
        assert_eq!(reply.unwrap().text(), "the answer", "{wire}");

        let exec = exec_span(&spans);
        assert_eq!(exec.name, "invoke_agent", "{wire}");
        assert_eq!(text(exec, "gen_ai.operation.name").as_deref(), Some("invoke_agent"));
        assert_eq!(exec.status, Status::Unset, "{wire}");
        let calls = named(&spans, "chat");
        assert_eq!(calls.len(), 2, "{wire}");
        for call in &calls {
            assert_eq!(call.name, "chat chaos-model", "{wire}");
            assert_eq!(call.span_kind, SpanKind::Client, "{wire}");
            assert_eq!(call.parent_span_id, exec.span_context.span_id(), "{wire}: a child of the exec");
            assert_eq!(text(call, "gen_ai.operation.name").as_deref(), Some("chat"));
            assert_eq!(text(call, "gen_ai.provider.name").as_deref(), Some(wire));
            assert_eq!(text(call, "gen_ai.request.model").as_deref(), Some("chaos-model"));
            assert_eq!(text(call, "server.address").as_deref(), Some("127.0.0.1"), "{wire}");
            assert_eq!(int(call, "server.port"), Some(i64::from(server.addr().port())), "{wire}");
        }
        let (failed, answered) = (calls[0], calls[1]);
        assert!(matches!(failed.status, Status::Error { .. }), "{wire}: {:?}", failed.status);
        assert!(text(failed, "error.type").is_some(), "{wire}");
        let decisions = event_fields(failed);
        assert_eq!(decisions.len(), 1, "{wire}: the retry decision is an event of the failed call");
        assert_eq!(field(&decisions[0], "agentic.layer").map(Value::as_str).as_deref(), Some("session"));
        assert_eq!(field(&decisions[0], "agentic.verdict").map(Value::as_str).as_deref(), Some("retry"));
        assert_eq!(field(&decisions[0], "agentic.delay_ms"), Some(&Value::I64(1)), "{wire}");

        assert_eq!(answered.status, Status::Unset, "{wire}");
        assert_eq!(text(answered, "gen_ai.response.finish_reasons").as_deref(), Some("stop"));
        assert!(text(answered, "gen_ai.response.model").is_some(), "{wire}: the server names the model");
        assert!(int(answered, "gen_ai.usage.input_tokens").is_some_and(|n| n > 0), "{wire}");
        assert!(int(answered, "gen_ai.usage.output_tokens").is_some_and(|n| n > 0), "{wire}");
        server.shutdown().await;
    }
}

#[tokio::test(start_paused = true)]
async fn a_spend_limit_that_stops_an_exec_is_named_on_its_span() {
    use agentic_runtime::spend::UsageLimits;
    let provider = ScriptedProvider::new([Scripted::cut("partial").with_usage(Usage::new(99, 1))]);
    let limits = UsageLimits::new().with_max_total_tokens(100);
    let runtime = Runtime::builder(provider).with_usage_limits(limits).build().unwrap();
    let (result, spans) = spans_of(runtime.exec("q")).await;
    assert_eq!(result.unwrap_err().kind().name(), "usage_limit");
    let exec = exec_span(&spans);
    assert_eq!(text(exec, "error.type").as_deref(), Some("usage_limit"));
    assert_eq!(text(exec, "agentic.limit").as_deref(), Some("max_total_tokens"));
}

#[tokio::test(start_paused = true)]
async fn a_permanent_401_ends_the_exec_span_in_error() {
    let runtime = Runtime::new(ScriptedProvider::new([Scripted::http(401, "invalid api key")]));
    let (result, spans) = spans_of(runtime.exec("q")).await;
    assert_eq!(result.unwrap_err().kind().name(), "permanent");
    let exec = exec_span(&spans);
    assert!(matches!(exec.status, Status::Error { .. }));
    assert_eq!(text(exec, "error.type").as_deref(), Some("permanent"));
    let calls = named(&spans, "chat");
    assert_eq!(calls.len(), 1, "a permanent failure is not retried");
    assert_eq!(calls[0].name, "chat", "the scripted provider names no model");
    assert_eq!(text(calls[0], "gen_ai.provider.name").as_deref(), Some("scripted"));
    assert_eq!(text(calls[0], "error.type").as_deref(), Some("AuthenticationError"));
    assert!(matches!(calls[0].status, Status::Error { .. }));
    let verdicts: Vec<String> = event_fields(calls[0])
        .iter()
        .chain(event_fields(exec).iter())
        .filter_map(|fields| field(fields, "agentic.verdict").map(|v| v.as_str().into_owned()))
        .collect();
    assert_eq!(verdicts, ["give_up", "fail_permanently"], "layer 1 on the call, layer 2 on the exec");
}

#[tokio::test(start_paused = true)]
async fn a_tool_that_fails_and_one_that_succeeds_get_their_spans() {
    let tools = Toolbox::new()
        .with_fn("lookup", "Looks a word up.", serde_json::json!({"type": "object"}), |_| async {
            Ok("found".to_owned())
        })
        .with_fn("broken", "Always fails.", serde_json::json!({"type": "object"}), |_| async {
            Err(agentic_runtime::ToolError::new("the disk is full"))
        });
    let provider = ScriptedProvider::new([
        Scripted::tool_calls([("lookup", serde_json::json!({})), ("broken", serde_json::json!({}))]),
        Scripted::ok("done"),
    ]);
    let runtime = Runtime::builder(provider).with_tools(tools).build().unwrap();
    let (reply, spans) = spans_of(runtime.exec("q")).await;
    assert_eq!(reply.unwrap().text(), "done");
    let exec = exec_span(&spans);
    let tools = named(&spans, "execute_tool");
    let names: Vec<&str> = tools.iter().map(|span| span.name.as_ref()).collect();
    assert_eq!(names, ["execute_tool lookup", "execute_tool broken"]);
    for span in &tools {
        assert_eq!(span.parent_span_id, exec.span_context.span_id(), "a tool runs within the exec");
        assert_eq!(text(span, "gen_ai.operation.name").as_deref(), Some("execute_tool"));
        assert!(text(span, "gen_ai.tool.call.id").is_some());
    }
    assert_eq!(text(tools[0], "gen_ai.tool.name").as_deref(), Some("lookup"));
    assert_eq!(tools[0].status, Status::Unset);
    assert_eq!(text(tools[1], "error.type").as_deref(), Some("tool_error"));
    assert!(matches!(tools[1].status, Status::Error { .. }));
    assert_eq!(named(&spans, "chat").len(), 2, "the tool turn and the answer");
}

#[tokio::test(start_paused = true)]
async fn usage_is_summed_over_a_failed_and_a_successful_call() {
    let provider = ScriptedProvider::new([
        Scripted::error("503 overloaded").with_usage(Usage::new(100, 2)),
        Scripted::ok("the answer").with_usage(Usage::new(100, 30)),
    ]);
    let (reply, spans) = spans_of(Runtime::new(provider).request("q").policy(&POLICY).send()).await;
    let reply = reply.unwrap();
    assert_eq!(reply.total_usage(), Usage::new(200, 32));
    let calls = named(&spans, "chat");
    assert_eq!(
        (int(calls[0], "gen_ai.usage.input_tokens"), int(calls[0], "gen_ai.usage.output_tokens")),
        (Some(100), Some(2))
    );
    assert_eq!(
        (int(calls[1], "gen_ai.usage.input_tokens"), int(calls[1], "gen_ai.usage.output_tokens")),
        (Some(100), Some(30))
    );
    let exec = exec_span(&spans);
    assert_eq!(int(exec, "gen_ai.usage.input_tokens"), Some(200));
    assert_eq!(int(exec, "gen_ai.usage.output_tokens"), Some(32));
}

/// Tools are in scope for the compiler even when a test does not name them.
#[allow(dead_code)]
fn _tool_is_public(_: &dyn Tool) {}

#[tokio::test(start_paused = true)]
async fn prompts_and_answers_are_recorded_only_when_asked() {
    let quiet = Runtime::new(ScriptedProvider::new([Scripted::ok("the secret plan")]));
    let (_, spans) = spans_of(quiet.exec("what is the plan?")).await;
    let call = named(&spans, "chat")[0];
    assert_eq!(text(call, "gen_ai.input.messages"), None);
    assert_eq!(text(call, "gen_ai.output.messages"), None);

    let open = Runtime::builder(ScriptedProvider::new([Scripted::ok("the secret plan")]))
        .with_content_in_traces(true)
        .build()
        .unwrap();
    let (_, spans) = spans_of(open.exec("what is the plan?")).await;
    let call = named(&spans, "chat")[0];
    let input = text(call, "gen_ai.input.messages").unwrap();
    assert!(input.contains(r#""role":"user""#) && input.contains("what is the plan?"), "{input}");
    assert!(text(call, "gen_ai.output.messages").unwrap().contains("the secret plan"));
}

#[tokio::test(start_paused = true)]
async fn a_fallback_is_an_event_of_the_exec_span_which_names_the_target_that_answered() {
    let primary = ScriptedProvider::new([Scripted::http(401, "invalid api key")]).with_model("a");
    let secondary = ScriptedProvider::new([Scripted::ok("from b")]).with_model("b");
    let runtime = Runtime::builder(primary).with_fallback(secondary).build().unwrap();
    let (result, spans) = spans_of(runtime.exec("q")).await;
    assert_eq!(result.unwrap().target(), Some("scripted/b"));
    let exec = exec_span(&spans);
    assert_eq!(text(exec, "agentic.target").as_deref(), Some("scripted/b"));
    assert_eq!(text(exec, "gen_ai.request.model").as_deref(), Some("a"), "the exec span names the primary");
    let moves: Vec<String> = event_fields(exec)
        .iter()
        .filter(|fields| field(fields, "agentic.verdict").is_some_and(|v| v.as_str() == "fallback"))
        .filter_map(|fields| field(fields, "agentic.reason").map(|v| v.as_str().into_owned()))
        .collect();
    assert_eq!(moves.len(), 1, "{:?}", event_fields(exec));
    assert!(moves[0].starts_with("fallback: `scripted/a` failed permanently"), "{moves:?}");
    let calls = named(&spans, "chat");
    let models: Vec<_> = calls.iter().map(|call| text(call, "gen_ai.request.model")).collect();
    assert_eq!(models, [Some("a".to_owned()), Some("b".to_owned())], "each call names its own target's model");
}
