//! The scenario's context window (`Scenario::with_context_window`, `"context_window"`): a
//! conversation larger than it gets the provider's context-overflow answer and consumes no step;
//! the size rule on both wire formats; the journal's `messages`, `context_bytes` and `over_window`;
//! the JSON field's round trip and checks.

use crate::common;

use agentic_chaos::{ChaosServer, JournalEntry, Scenario, ScenarioError, Step, StepKind};
use common::{Client, Response, WireFormat};
use serde_json::{Value, json};

/// A one-message request of `text`, in `wire`'s format.
/// One user message, in the field each wire reads (`messages`, Gemini's `contents`, Responses'
/// `input`).
fn one_message(wire: WireFormat, text: &str, stream: bool) -> String {
    match wire {
        // Gemini's stream flag is in the path (see `post`); the body has none.
        WireFormat::Gemini => json!({"stream": stream, "contents": [{"role": "user", "parts": [{"text": text}]}]}),
        WireFormat::Responses => {
            json!({"model": "m", "max_output_tokens": 64, "stream": stream, "input": [{"role": "user", "content": text}]})
        }
        _ => json!({"model": "m", "max_tokens": 64, "stream": stream, "messages": [{"role": "user", "content": text}]}),
    }
    .to_string()
}

/// Posts `body` to `wire`'s path for model `m` (streamed when the body says `"stream": true`).
async fn post(server: &ChaosServer, wire: WireFormat, body: &str) -> Response {
    let stream = serde_json::from_str::<Value>(body).ok().and_then(|body| body["stream"].as_bool()).unwrap_or(false);
    let mut client = Client::connect(server.addr()).await;
    let path = wire.request_path("m", stream);
    client.request("POST", &path, &[("content-type", "application/json")], body).await.response()
}

/// The body of the `context_overflow` step, as a server of that step sends it in `wire`'s format.
async fn overflow_step_body(wire: WireFormat) -> Value {
    let server = ChaosServer::start(Scenario::new().then(Step::context_overflow())).await.unwrap();
    post(&server, wire, &one_message(wire, "hi", false)).await.json()
}

#[tokio::test]
async fn a_request_over_the_window_gets_the_overflow_and_the_next_that_fits_gets_the_step() {
    for wire in WireFormat::ALL {
        for stream in [true, false] {
            let scenario = Scenario::new().then(Step::ok("Fits.")).then(Step::http_error(503)).with_context_window(100);
            let server = ChaosServer::start(scenario).await.unwrap();

            let over = post(&server, wire, &one_message(wire, &"x".repeat(101), stream)).await;
            assert_eq!(over.status, 400, "{wire:?} stream={stream}");
            assert_eq!(over.json(), overflow_step_body(wire).await, "{wire:?}: the provider's own body");

            let fits = post(&server, wire, &one_message(wire, &"x".repeat(100), stream)).await;
            assert_eq!(fits.status, 200, "{wire:?} stream={stream}: 100 bytes fit a window of 100");
            let text = if stream {
                common::stream_text(wire, &fits.events()).0
            } else {
                common::whole_text(wire, &fits.json())
            };
            assert_eq!(text, "Fits.", "{wire:?}: the refused request consumed no step");
            assert_eq!(post(&server, wire, &one_message(wire, "hi", stream)).await.status, 503, "{wire:?}");

            let journal = server.journal();
            let steps: Vec<_> = journal.iter().map(|e| e.step.map(|s| (s.index, s.kind, s.repeat))).collect();
            assert_eq!(
                steps,
                [
                    Some((None, StepKind::ContextOverflow, 0)),
                    Some((Some(0), StepKind::Ok, 1)),
                    Some((Some(1), StepKind::HttpError, 1)),
                ]
            );
            let over_window: Vec<_> = journal.iter().map(|e| e.over_window).collect();
            assert_eq!(over_window, [true, false, false]);
            let sizes: Vec<_> = journal.iter().map(|e| (e.messages, e.context_bytes)).collect();
            assert_eq!(sizes, [(1, 101), (1, 100), (1, 2)]);
            let refused = journal[0].step.unwrap();
            assert!(refused.is_context_window() && !refused.is_default());
            assert!(!journal[1].step.unwrap().is_context_window());
        }
    }
}

#[tokio::test]
async fn the_window_does_not_touch_the_default_steps_count() {
    let server = ChaosServer::start(Scenario::new().otherwise(Step::ok("fine")).with_context_window(10)).await.unwrap();
    for text in ["short", "much longer than ten bytes", "short"] {
        post(&server, WireFormat::Anthropic, &one_message(WireFormat::Anthropic, text, false)).await;
    }
    let steps: Vec<_> = server.journal().iter().map(|e| e.step.map(|s| (s.index, s.kind, s.repeat))).collect();
    assert_eq!(
        steps,
        [Some((None, StepKind::Ok, 1)), Some((None, StepKind::ContextOverflow, 0)), Some((None, StepKind::Ok, 2))]
    );
    assert!(server.journal()[2].step.unwrap().is_default());
}

#[tokio::test]
async fn without_a_window_every_request_reaches_the_steps_and_its_size_is_journaled() {
    let server = ChaosServer::start(Scenario::new().then(Step::ok("Fits."))).await.unwrap();
    let r = post(&server, WireFormat::OpenAi, &one_message(WireFormat::OpenAi, &"x".repeat(1_000_000), false)).await;
    assert_eq!(common::whole_text(WireFormat::OpenAi, &r.json()), "Fits.");
    let entry = &server.journal()[0];
    assert_eq!((entry.messages, entry.context_bytes, entry.over_window), (1, 1_000_000, false));
}

/// The conversation of the crate docs' example: a system instruction (9 bytes), a user message
/// (8), a tool call whose arguments are `{"city":"Paris"}` (16), its result (5): 38 bytes.
fn conversation(wire: WireFormat) -> (Value, usize) {
    match wire {
        WireFormat::OpenAi => (
            json!({"model": "m", "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Weather?"},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
                    "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
            ], "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}]}),
            4,
        ),
        WireFormat::Gemini => (
            json!({"systemInstruction": {"parts": [{"text": "Be brief."}]}, "contents": [
                {"role": "user", "parts": [{"text": "Weather?"}]},
                {"role": "model", "parts": [{"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}]},
                {"role": "user", "parts": [{"functionResponse": {"name": "get_weather", "response": {"output": "sunny"}}}]},
            ], "tools": [{"functionDeclarations": [{"name": "get_weather"}]}]}),
            3,
        ),
        WireFormat::Responses => (
            json!({"model": "m", "instructions": "Be brief.", "input": [
                {"role": "user", "content": [{"type": "input_text", "text": "Weather?"}]},
                {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{\"city\":\"Paris\"}"},
                {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
            ], "tools": [{"type": "function", "name": "get_weather", "parameters": {}}]}),
            3,
        ),
        _ => (
            json!({"model": "m", "max_tokens": 64, "system": "Be brief.", "messages": [
                {"role": "user", "content": [{"type": "text", "text": "Weather?"}]},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "t1", "name": "get_weather", "input": {"city": "Paris"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "sunny"}]},
            ], "tools": [{"name": "get_weather", "input_schema": {}}]}),
            3,
        ),
    }
}

#[tokio::test]
async fn the_size_counts_system_text_tool_calls_and_tool_results_on_both_formats() {
    for wire in WireFormat::ALL {
        let (body, messages) = conversation(wire);
        for (window, over) in [(38, false), (37, true)] {
            let server = ChaosServer::start(Scenario::new().with_context_window(window)).await.unwrap();
            let status = post(&server, wire, &body.to_string()).await.status;
            assert_eq!(status, if over { 400 } else { 200 }, "{wire:?}, window {window}");
            let entry = &server.journal()[0];
            assert_eq!((entry.messages, entry.context_bytes, entry.over_window), (messages, 38, over), "{wire:?}");
        }
    }
    // Anthropic's system as blocks and a tool result as text blocks count their texts.
    let blocks = json!({"model": "m", "system": [{"type": "text", "text": "Be brief."}], "messages": [
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
            "content": [{"type": "text", "text": "sunny"}, {"type": "text", "text": "warm"}]}]},
    ]});
    let server = ChaosServer::start(Scenario::new()).await.unwrap();
    post(&server, WireFormat::Anthropic, &blocks.to_string()).await;
    assert_eq!(server.journal()[0].context_bytes, 9 + 5 + 4);
}

#[tokio::test]
async fn a_body_that_is_not_json_fits_and_counts_nothing() {
    let server = ChaosServer::start(Scenario::new().with_context_window(1)).await.unwrap();
    let r = post(&server, WireFormat::OpenAi, "not json at all, and longer than one byte").await;
    assert_eq!(r.status, 200);
    let entry = &server.journal()[0];
    assert_eq!((entry.messages, entry.context_bytes, entry.over_window), (0, 0, false));
}

#[tokio::test]
async fn the_journal_over_http_shows_the_window_fields_and_a_reset_can_set_the_window() {
    let server = ChaosServer::start(Scenario::new()).await.unwrap();
    let mut client = Client::connect(server.addr()).await;
    let reset = client.request("POST", "/_chaos/reset", &[], r#"{"context_window": 4, "steps": []}"#).await;
    assert_eq!(reset.response().status, 200);
    post(&server, WireFormat::Anthropic, &one_message(WireFormat::Anthropic, "hello", true)).await;
    let journal = client.request("GET", "/_chaos/journal", &[], "").await.response().json();
    let entry = &journal[0];
    assert_eq!(
        (&entry["messages"], &entry["context_bytes"], &entry["over_window"]),
        (&json!(1), &json!(5), &json!(true))
    );
    assert_eq!(entry["step"], json!({"index": null, "kind": "context_overflow", "repeat": 0}));
    let parsed: Vec<JournalEntry> = serde_json::from_value(journal).unwrap();
    assert_eq!(parsed, server.journal());
}

#[test]
fn an_older_journal_entry_reads_without_the_new_fields() {
    let entry: JournalEntry = serde_json::from_value(json!({"seq": 0, "at_ms": 3, "method": "POST",
        "path": "/v1/messages", "wire": "anthropic", "stream": true, "model": "m",
        "step": {"index": 0, "kind": "ok", "repeat": 1}, "agentic_call": null, "auth": false}))
    .unwrap();
    assert_eq!((entry.messages, entry.context_bytes, entry.over_window), (0, 0, false));
}

#[test]
fn the_context_window_round_trips_through_json() {
    let scenario = Scenario::new().then(Step::ok("Fits.")).with_context_window(2_000);
    let json = scenario.to_json();
    let value: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(value["context_window"], json!(2_000));
    let back = Scenario::from_json_str(&json).unwrap();
    assert_eq!(back, scenario);
    assert_eq!(back.context_window(), Some(2_000));
    let loaded = Scenario::from_json_str(r#"{"context_window": 2000, "steps": [{"kind": "ok", "text": "Fits."}]}"#);
    assert_eq!(loaded.unwrap(), scenario);
    assert_eq!(Scenario::new().context_window(), None);
    let plain: Value = serde_json::from_str(&Scenario::new().to_json()).unwrap();
    assert!(plain.get("context_window").is_none(), "no window, no field: {plain}");
}

#[track_caller]
fn refusal(json: &str) -> (ScenarioError, String) {
    let err = Scenario::from_json_str(json).unwrap_err();
    let text = err.to_string();
    (err, text)
}

#[test]
fn a_context_window_that_is_not_a_positive_integer_is_refused_naming_the_field() {
    let (err, text) = refusal(r#"{"context_window": 0, "steps": []}"#);
    assert_eq!(err.field(), Some("context_window"));
    assert!(text.contains("at least 1 byte") && text.contains("remove it for no limit"), "{text}");
    for bad in ["-1", "1.5", "\"2000\"", "true", "{}"] {
        let (err, text) = refusal(&format!(r#"{{"context_window": {bad}, "steps": []}}"#));
        assert_eq!(err.field(), Some("context_window"), "{bad}: {text}");
        assert!(text.contains("the context window's size in bytes, a positive integer"), "{bad}: {text}");
        assert!(err.line().is_some(), "{bad}: {text}");
    }
    let (err, text) = refusal(r#"{"context_windw": 10, "steps": []}"#);
    assert_eq!(err.field(), Some("context_windw"));
    assert!(text.ends_with("did you mean `context_window`?"), "{text}");
}

#[test]
#[should_panic(expected = "the context window must be at least 1 byte")]
fn a_zero_window_in_rust_panics() {
    let _ = Scenario::new().with_context_window(0);
}
