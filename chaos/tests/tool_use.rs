//! The `tool_use` step on both wire formats, streamed and not; its JSON form; the journal's `tools`.

use crate::common;

use agentic_chaos::{ChaosServer, Scenario, Step, StepKind};
use common::{Client, End, WireFormat, model};
use serde_json::{Value, json};

async fn serve(step: impl Into<Step>) -> ChaosServer {
    ChaosServer::start(Scenario::new().then_times(100, step)).await.expect("start the server")
}

fn weather_and_time() -> agentic_chaos::ToolUse {
    Step::tool_use("get_weather", json!({"city": "Paris", "units": "metric"})).call("get_time", json!({}))
}

/// `(id, name, arguments text, argument chunks)` of one call in an OpenAI stream.
type StreamedCall = (String, String, String, usize);

/// Each call in an OpenAI stream, and the finish reason.
fn openai_calls(events: &[common::Event]) -> (Vec<StreamedCall>, Option<String>) {
    let mut calls: Vec<StreamedCall> = Vec::new();
    let mut finish = None;
    for event in events {
        if event.data == "[DONE]" {
            continue;
        }
        let chunk = event.json();
        if let Some(reason) = chunk.pointer("/choices/0/finish_reason").and_then(Value::as_str) {
            finish = Some(reason.to_owned());
        }
        for call in chunk.pointer("/choices/0/delta/tool_calls").and_then(Value::as_array).into_iter().flatten() {
            let index = call["index"].as_u64().expect("every tool-call chunk has an index") as usize;
            if let Some(id) = call["id"].as_str() {
                assert_eq!(index, calls.len(), "calls start in order");
                assert_eq!(call["type"], "function");
                let name = call["function"]["name"].as_str().expect("the first chunk names the tool");
                calls.push((id.to_owned(), name.to_owned(), String::new(), 0));
            }
            if let Some(arguments) = call.pointer("/function/arguments").and_then(Value::as_str) {
                if !arguments.is_empty() {
                    calls[index].2.push_str(arguments);
                    calls[index].3 += 1;
                }
            }
        }
    }
    (calls, finish)
}

#[tokio::test]
async fn openai_streams_tool_calls_with_arguments_over_several_chunks() {
    let server = serve(weather_and_time()).await;
    let r = model(server.addr(), WireFormat::OpenAi, true).await.response();
    assert_eq!((r.status, &r.end), (200, &End::Clean));
    assert_eq!(r.header("content-type"), Some("text/event-stream; charset=utf-8"));
    let events = r.events();
    assert_eq!(events.last().unwrap().data, "[DONE]");
    let first = events[0].json();
    assert_eq!(first["choices"][0]["delta"]["role"], "assistant");
    assert_eq!(first["choices"][0]["delta"]["content"], Value::Null);
    let (calls, finish) = openai_calls(&events);
    assert_eq!(finish.as_deref(), Some("tool_calls"));
    assert_eq!(calls.len(), 2);
    let (id, name, arguments, pieces) = &calls[0];
    assert_eq!((id.as_str(), name.as_str()), ("call_chaos000000_0", "get_weather"));
    assert_eq!(serde_json::from_str::<Value>(arguments).unwrap(), json!({"city": "Paris", "units": "metric"}));
    assert_eq!(*pieces, 3, "the arguments are split over three chunks");
    let (id, name, arguments, pieces) = &calls[1];
    assert_eq!((id.as_str(), name.as_str(), arguments.as_str(), *pieces), ("call_chaos000000_1", "get_time", "{}", 2));
}

#[tokio::test]
async fn anthropic_streams_tool_use_blocks_with_input_json_deltas() {
    let server = serve(weather_and_time().text("Let me check.").argument_chunks(4)).await;
    let r = model(server.addr(), WireFormat::Anthropic, true).await.response();
    assert_eq!((r.status, &r.end), (200, &End::Clean));
    let events = r.events();
    for event in &events {
        assert_eq!(event.event.as_deref(), event.json()["type"].as_str(), "event name = data type");
    }
    let names: Vec<&str> = events.iter().map(|e| e.event.as_deref().unwrap()).collect();
    assert_eq!(
        names,
        [
            "message_start",
            "content_block_start",
            "ping",
            "content_block_delta",
            "content_block_stop",
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ]
    );
    assert_eq!(events[3].json()["delta"], json!({"type": "text_delta", "text": "Let me check."}));
    assert_eq!(
        events[5].json()["content_block"],
        json!({"type": "tool_use", "id": "toolu_chaos000000_0", "name": "get_weather", "input": {}})
    );
    let mut inputs = vec![String::new(); 3];
    for event in &events {
        let data = event.json();
        if data["delta"]["type"] == "input_json_delta" {
            inputs[data["index"].as_u64().unwrap() as usize].push_str(data["delta"]["partial_json"].as_str().unwrap());
        }
    }
    assert_eq!(serde_json::from_str::<Value>(&inputs[1]).unwrap(), json!({"city": "Paris", "units": "metric"}));
    assert_eq!(inputs[2], "{}");
    assert_eq!(events[11].json()["content_block"]["id"], "toolu_chaos000000_1");
    assert_eq!(events[15].json()["delta"]["stop_reason"], "tool_use");
}

#[tokio::test]
async fn unstreamed_answers_carry_the_calls_whole() {
    let server = serve(weather_and_time()).await;
    let openai = model(server.addr(), WireFormat::OpenAi, false).await.response().json();
    assert_eq!(openai["choices"][0]["finish_reason"], "tool_calls");
    let message = &openai["choices"][0]["message"];
    assert_eq!(message["content"], Value::Null);
    assert_eq!(
        message["tool_calls"][0],
        json!({
            "id": "call_chaos000000_0",
            "type": "function",
            "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\",\"units\":\"metric\"}"},
        })
    );
    assert_eq!(message["tool_calls"][1]["function"]["name"], "get_time");

    let anthropic = model(server.addr(), WireFormat::Anthropic, false).await.response().json();
    assert_eq!(anthropic["stop_reason"], "tool_use");
    assert_eq!(
        anthropic["content"],
        json!([
            {"type": "tool_use", "id": "toolu_chaos000001_0", "name": "get_weather", "input": {"city": "Paris", "units": "metric"}},
            {"type": "tool_use", "id": "toolu_chaos000001_1", "name": "get_time", "input": {}},
        ])
    );
    let journal = server.journal();
    assert!(journal.iter().all(|entry| entry.step.unwrap().kind == StepKind::ToolUse));
}

#[tokio::test]
async fn ids_are_unique_per_request_and_the_connection_stays_usable() {
    let server = serve(Step::tool_use("t", json!({"a": 1}))).await;
    for wire in WireFormat::ALL {
        let mut client = Client::connect(server.addr()).await;
        let mut ids = Vec::new();
        for _ in 0..2 {
            let r = client.model(wire, true).await.response();
            assert_eq!(r.end, End::Clean);
            let text = r.text();
            // Gemini's calls carry no id: its response id tells the answers apart.
            let (key, mark) = if wire == WireFormat::Gemini { ("responseId", "chaos") } else { ("id", "_chaos") };
            let id =
                text.split('"').skip_while(|part| *part != key).find(|part| part.contains(mark)).map(str::to_owned);
            ids.push(id.expect("an id"));
        }
        assert_ne!(ids[0], ids[1], "{wire:?}");
    }
}

#[test]
fn the_json_form_reads_writes_and_checks_calls() {
    let scenario = Scenario::from_json_str(
        r#"{"steps": [
            {"kind": "tool_use", "calls": [{"name": "get_weather", "input": {"city": "Paris"}}, {"name": "get_time"}],
             "text": "Checking.", "chunks": 5, "times": 2}
        ]}"#,
    )
    .unwrap();
    let (step, times) = scenario.steps().next().unwrap();
    assert_eq!(times, 2);
    let expected: Step = Step::tool_use("get_weather", json!({"city": "Paris"}))
        .call("get_time", json!({}))
        .text("Checking.")
        .argument_chunks(5)
        .into();
    assert_eq!(*step, expected);
    let round_trip = Scenario::from_json_str(&scenario.to_json()).unwrap();
    assert_eq!(round_trip, scenario);

    let cases = [
        (r#"{"steps": [{"kind": "tool_use"}]}"#, "steps[0].calls"),
        (r#"{"steps": [{"kind": "tool_use", "calls": []}]}"#, "steps[0].calls"),
        (r#"{"steps": [{"kind": "tool_use", "calls": [{"name": ""}]}]}"#, "steps[0].calls[0].name"),
        (r#"{"steps": [{"kind": "tool_use", "calls": [{"name": "t", "input": [1]}]}]}"#, "steps[0].calls[0].input"),
        (r#"{"steps": [{"kind": "tool_use", "calls": [{"name": "t", "args": {}}]}]}"#, "steps[0].calls[0].args"),
        (r#"{"steps": [{"kind": "tool_use", "calls": [{"name": "t"}], "after_chunks": 1}]}"#, "steps[0].after_chunks"),
        (r#"{"steps": [{"kind": "ok", "calls": [{"name": "t"}]}]}"#, "steps[0].calls"),
    ];
    for (json, field) in cases {
        let error = Scenario::from_json_str(json).unwrap_err();
        assert_eq!(error.field(), Some(field), "{json}: {error}");
    }
}

#[tokio::test]
async fn the_journal_records_the_tools_each_request_offered() {
    let server = serve(Step::ok("hi")).await;
    let openai = r#"{"model":"m","messages":[],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{}}},{"type":"function","function":{"name":"get_time"}}]}"#;
    let anthropic = r#"{"model":"m","max_tokens":5,"messages":[],"tools":[{"name":"get_weather","input_schema":{}}]}"#;
    let mut client = Client::connect(server.addr()).await;
    for (wire, body) in [(WireFormat::OpenAi, openai), (WireFormat::Anthropic, anthropic)] {
        client.request("POST", wire.path(), &[("content-type", "application/json")], body).await.response();
    }
    client.model(WireFormat::OpenAi, false).await.response();
    let tools: Vec<Vec<String>> = server.journal().into_iter().map(|entry| entry.tools).collect();
    assert_eq!(tools, [vec!["get_weather".to_owned(), "get_time".to_owned()], vec!["get_weather".to_owned()], vec![]]);
    let over_http = serde_json::to_value(&server.journal()[1]).unwrap();
    assert_eq!(over_http["tools"], json!(["get_weather"]));
}
