//! Requests for a schema: OpenAI's `response_format` answered as text, Anthropic's forced tool
//! answered as that tool's `tool_use` block; the journal's `schema`.

use crate::common;

use agentic_chaos::{ChaosServer, Scenario, Step};
use common::{Client, WireFormat};
use serde_json::{Value, json};

const ANSWER: &str = r#"{"total": 42.5, "currency": "EUR"}"#;

async fn serve() -> ChaosServer {
    ChaosServer::start(Scenario::new().then_times(100, Step::ok(ANSWER).chunks(3))).await.expect("start the server")
}

fn openai_body(stream: bool) -> String {
    json!({"model": "m", "stream": stream, "messages": [{"role": "user", "content": "hi"}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "Invoice", "schema": {"type": "object"}, "strict": true}}})
    .to_string()
}

fn anthropic_body(stream: bool) -> String {
    json!({"model": "m", "max_tokens": 64, "stream": stream, "messages": [{"role": "user", "content": "hi"}],
        "tools": [{"name": "Invoice", "description": "d", "input_schema": {"type": "object"}}],
        "tool_choice": {"type": "tool", "name": "Invoice"}})
    .to_string()
}

async fn post(server: &ChaosServer, wire: WireFormat, body: &str) -> common::Response {
    let mut client = Client::connect(server.addr()).await;
    client.request("POST", wire.path(), &[("content-type", "application/json")], body).await.response()
}

#[tokio::test]
async fn openai_sends_the_json_as_the_content() {
    let server = serve().await;
    let streamed = post(&server, WireFormat::OpenAi, &openai_body(true)).await;
    assert_eq!(common::stream_text(WireFormat::OpenAi, &streamed.events()), (ANSWER.to_owned(), true));
    let whole = post(&server, WireFormat::OpenAi, &openai_body(false)).await;
    assert_eq!(common::whole_text(WireFormat::OpenAi, &whole.json()), ANSWER);
    let journal = server.journal();
    assert_eq!(journal[0].schema.as_deref(), Some("Invoice"));
    assert_eq!(journal[1].schema.as_deref(), Some("Invoice"));
}

#[tokio::test]
async fn anthropic_answers_a_forced_tool_with_its_tool_use_block() {
    let server = serve().await;
    let streamed = post(&server, WireFormat::Anthropic, &anthropic_body(true)).await;
    let events = streamed.events();
    let start = events.iter().map(common::Event::json).find(|data| data["type"] == "content_block_start").unwrap();
    assert_eq!(start["content_block"]["type"], "tool_use");
    assert_eq!(start["content_block"]["name"], "Invoice");
    let fragments: Vec<String> = events
        .iter()
        .map(common::Event::json)
        .filter(|data| data["type"] == "content_block_delta")
        .map(|data| {
            assert_eq!(data["delta"]["type"], "input_json_delta");
            data["delta"]["partial_json"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(fragments.len(), 3);
    assert_eq!(fragments.concat(), ANSWER);
    let stop = events.iter().map(common::Event::json).find(|data| data["type"] == "message_delta").unwrap();
    assert_eq!(stop["delta"]["stop_reason"], "tool_use");

    let whole = post(&server, WireFormat::Anthropic, &anthropic_body(false)).await.json();
    assert_eq!(whole["stop_reason"], "tool_use");
    assert_eq!(whole["content"][0]["name"], "Invoice");
    assert_eq!(whole["content"][0]["input"], serde_json::from_str::<Value>(ANSWER).unwrap());

    // Without `tool_choice`, the same step is a text answer.
    let mut client = Client::connect(server.addr()).await;
    let plain = client.model(WireFormat::Anthropic, true).await.response();
    assert_eq!(common::stream_text(WireFormat::Anthropic, &plain.events()), (ANSWER.to_owned(), true));

    let schemas: Vec<_> = server.journal().into_iter().map(|entry| entry.schema).collect();
    assert_eq!(schemas, [Some("Invoice".to_owned()), Some("Invoice".to_owned()), None]);
}
