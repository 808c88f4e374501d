//! An answer the token limit cut (`Completion::cut_by_token_limit`, `"stop": "length"`): OpenAI
//! `finish_reason: "length"`, Anthropic `stop_reason: "max_tokens"` (also for a forced tool's
//! `tool_use` block), streamed and not; its JSON form and its refusal on a kind without text.

use crate::common;

use agentic_chaos::{ChaosServer, Scenario, ScenarioError, Step};
use common::{Client, Event, WireFormat};
use serde_json::{Value, json};

const CUT: &str = r#"{"currency": "EUR", "total"#;

async fn serve(step: impl Into<Step>) -> ChaosServer {
    ChaosServer::start(Scenario::new().then_times(100, step)).await.expect("start the server")
}

/// The stop reason a streamed answer ends with: OpenAI's last `finish_reason`, Anthropic's
/// `message_delta`.
fn streamed_stop(wire: WireFormat, events: &[Event]) -> String {
    let mut reasons = events.iter().filter(|event| event.data != "[DONE]").map(Event::json).filter_map(|data| {
        let pointer = match wire {
            WireFormat::OpenAi => "/choices/0/finish_reason",
            WireFormat::Gemini => "/candidates/0/finishReason",
            WireFormat::Responses => "/response/incomplete_details/reason",
            _ => "/delta/stop_reason",
        };
        data.pointer(pointer).and_then(Value::as_str).map(str::to_owned)
    });
    reasons.next_back().expect("the stream ends with a stop reason")
}

/// The stop reason of a whole JSON answer.
fn whole_stop(wire: WireFormat, body: &Value) -> String {
    let pointer = match wire {
        WireFormat::OpenAi => "/choices/0/finish_reason",
        WireFormat::Gemini => "/candidates/0/finishReason",
        WireFormat::Responses => "/incomplete_details/reason",
        _ => "/stop_reason",
    };
    body.pointer(pointer).and_then(Value::as_str).expect("the answer has a stop reason").to_owned()
}

fn expected(wire: WireFormat) -> &'static str {
    match wire {
        WireFormat::OpenAi => "length",
        WireFormat::Gemini => "MAX_TOKENS",
        WireFormat::Responses => "max_output_tokens",
        _ => "max_tokens",
    }
}

#[tokio::test]
async fn a_cut_answer_ends_with_the_token_limit_on_both_formats_streamed_and_not() {
    let server = serve(Step::ok(CUT).chunks(3).cut_by_token_limit()).await;
    for wire in WireFormat::ALL {
        let mut client = Client::connect(server.addr()).await;
        let streamed = client.model(wire, true).await.response();
        let events = streamed.events();
        let (text, _) = common::stream_text(wire, &events);
        assert_eq!(text, CUT, "{wire:?}: the text is sent as given");
        assert_eq!(streamed_stop(wire, &events), expected(wire), "{wire:?}");
        assert!(
            events.last().is_some_and(|last| last.data == "[DONE]"
                || matches!(last.event.as_deref(), Some("message_stop" | "response.incomplete"))
                || (wire == WireFormat::Gemini && last.json().pointer("/candidates/0/finishReason").is_some())),
            "{wire:?}: the stream still ends cleanly"
        );
        let whole = client.model(wire, false).await.response().json();
        assert_eq!(common::whole_text(wire, &whole), CUT, "{wire:?}");
        assert_eq!(whole_stop(wire, &whole), expected(wire), "{wire:?}");
    }
}

#[tokio::test]
async fn an_answer_ends_normally_unless_cut() {
    let server = serve(Step::ok(CUT)).await;
    for (wire, normal) in [(WireFormat::OpenAi, "stop"), (WireFormat::Anthropic, "end_turn")] {
        let mut client = Client::connect(server.addr()).await;
        let streamed = client.model(wire, true).await.response();
        assert_eq!(streamed_stop(wire, &streamed.events()), normal, "{wire:?}");
        let whole = client.model(wire, false).await.response().json();
        assert_eq!(whole_stop(wire, &whole), normal, "{wire:?}");
    }
}

#[tokio::test]
async fn a_forced_tool_block_ends_with_max_tokens() {
    let server = serve(Step::ok(CUT).chunks(2).cut_by_token_limit()).await;
    let body = |stream: bool| {
        json!({"model": "m", "max_tokens": 8, "stream": stream, "messages": [{"role": "user", "content": "hi"}],
            "tools": [{"name": "Invoice", "description": "d", "input_schema": {"type": "object"}}],
            "tool_choice": {"type": "tool", "name": "Invoice"}})
        .to_string()
    };
    let mut client = Client::connect(server.addr()).await;
    let headers = [("content-type", "application/json")];
    let streamed = client.request("POST", "/v1/messages", &headers, &body(true)).await.response();
    let events: Vec<Value> = streamed.events().iter().map(Event::json).collect();
    let start = events.iter().find(|data| data["type"] == "content_block_start").unwrap();
    assert_eq!(start["content_block"]["type"], "tool_use");
    let fragments: String = events
        .iter()
        .filter(|data| data["type"] == "content_block_delta")
        .map(|data| data["delta"]["partial_json"].as_str().unwrap())
        .collect();
    assert_eq!(fragments, CUT);
    let stop = events.iter().find(|data| data["type"] == "message_delta").unwrap();
    assert_eq!(stop["delta"]["stop_reason"], "max_tokens");

    let whole = client.request("POST", "/v1/messages", &headers, &body(false)).await.response().json();
    assert_eq!(whole["stop_reason"], "max_tokens");
    assert_eq!(whole["content"][0]["type"], "tool_use");
}

#[tokio::test]
async fn a_stall_and_a_malformed_chunk_end_cut_too() {
    let steps: [Step; 2] = [
        Step::stall(1).text(CUT).cut_by_token_limit().into(),
        Step::malformed_chunk(1).text(CUT).cut_by_token_limit().into(),
    ];
    for step in steps {
        let server = serve(step.clone()).await;
        let mut client = Client::connect(server.addr()).await;
        let whole = client.model(WireFormat::OpenAi, false).await.response();
        if step.kind() == agentic_chaos::StepKind::Stall {
            assert_eq!(whole_stop(WireFormat::OpenAi, &whole.json()), "length");
        }
        let streamed = client.model(WireFormat::Anthropic, true).await.response();
        let last_stop = streamed
            .events()
            .iter()
            .filter(|event| event.event.as_deref() == Some("message_delta"))
            .map(|event| event.json()["delta"]["stop_reason"].clone())
            .next_back();
        assert_eq!(last_stop, Some(json!("max_tokens")), "{:?}", step.kind());
    }
}

#[test]
fn the_scenario_field_round_trips_and_loads_like_the_builder() {
    let json = r#"{"steps": [
        {"kind": "ok", "text": "{\"total", "stop": "length"},
        {"kind": "stall", "ms": 5, "stop": "length"},
        {"kind": "malformed_chunk", "after_chunks": 1, "stop": "length"},
        {"kind": "ok", "text": "whole"}
    ]}"#;
    let loaded = Scenario::from_json_str(json).unwrap();
    let built = Scenario::new()
        .then(Step::ok("{\"total").cut_by_token_limit())
        .then(Step::stall(5).cut_by_token_limit())
        .then(Step::malformed_chunk(1).cut_by_token_limit())
        .then(Step::ok("whole"));
    assert_eq!(loaded, built);
    let written: Value = serde_json::from_str(&built.to_json()).unwrap();
    assert_eq!(written["steps"][0], json!({"kind": "ok", "text": "{\"total", "stop": "length"}));
    assert_eq!(written["steps"][3], json!({"kind": "ok", "text": "whole"}), "no `stop` unless cut");
    assert_eq!(Scenario::from_json_str(&built.to_json()).unwrap(), built);
}

#[test]
fn stop_is_refused_on_a_kind_without_text_and_for_another_value() {
    let refusal = |json: &str| -> ScenarioError { Scenario::from_json_str(json).unwrap_err() };
    let err = refusal(r#"{"steps": [{"kind": "http_error", "status": 500, "stop": "length"}]}"#);
    assert_eq!(err.field(), Some("steps[0].stop"));
    assert!(
        err.to_string()
            .contains("does not apply to a `http_error` step; it applies to `ok`, `stall`, `malformed_chunk`"),
        "{err}"
    );
    let err = refusal(r#"{"steps": [{"kind": "drop_stream", "after_chunks": 1, "stop": "length"}]}"#);
    assert_eq!(err.field(), Some("steps[0].stop"), "a stream that never ends takes no stop reason");
    let err = refusal(r#"{"steps": [{"kind": "ok", "stop": "max_token"}]}"#);
    assert_eq!(err.field(), Some("steps[0].stop"));
    let text = err.to_string();
    assert!(text.contains("unknown variant `max_token`, expected `length`"), "{text}");
}
