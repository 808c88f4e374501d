//! A scenario scripted per conversation: each conversation, recognised by its system prompt and
//! first user message on every wire, goes through the whole script by its own requests, however
//! many run at once; its follow-up requests (a tool loop's) continue it.

use crate::common;

use std::net::SocketAddr;

use agentic_chaos::{ChaosServer, DEFAULT_TEXT, Scenario, Step};
use common::{Client, WireFormat};
use serde_json::{Value, json};
use tokio::task::JoinSet;

/// The first request of conversation `n` in `wire`'s format, or (`follow_up`) the request after a
/// tool call: the same opening, then the call and its result.
fn request(wire: WireFormat, n: usize, follow_up: bool) -> Value {
    let (system, question) = ("Answer briefly.", format!("Run {n}: what is the weather in Paris?"));
    match wire {
        WireFormat::OpenAi => {
            let mut messages =
                vec![json!({"role": "system", "content": system}), json!({"role": "user", "content": question})];
            if follow_up {
                messages.push(json!({"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}"}}]}));
                messages.push(json!({"role": "tool", "tool_call_id": "c", "content": "sunny"}));
            }
            json!({"model": "m", "messages": messages})
        }
        WireFormat::Anthropic => {
            let mut messages = vec![json!({"role": "user", "content": question})];
            if follow_up {
                messages.push(json!({"role": "assistant", "content": [
                    {"type": "tool_use", "id": "t", "name": "weather", "input": {"city": "Paris"}}]}));
                messages.push(json!({"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t", "content": "sunny"}]}));
            }
            json!({"model": "m", "max_tokens": 64, "system": system, "messages": messages})
        }
        WireFormat::Gemini => {
            let mut contents = vec![json!({"role": "user", "parts": [{"text": question}]})];
            if follow_up {
                contents.push(json!({"role": "model", "parts": [{"functionCall": {"name": "weather", "args": {"city": "Paris"}}}]}));
                contents.push(json!({"role": "user", "parts": [
                    {"functionResponse": {"name": "weather", "response": {"output": "sunny"}}}]}));
            }
            json!({"systemInstruction": {"parts": [{"text": system}]}, "contents": contents})
        }
        _ => {
            let mut input = vec![json!({"type": "message", "role": "user", "content": question})];
            if follow_up {
                input.push(json!({"type": "function_call", "call_id": "c", "name": "weather", "arguments": "{\"city\":\"Paris\"}"}));
                input.push(json!({"type": "function_call_output", "call_id": "c", "output": "sunny"}));
            }
            json!({"model": "m", "instructions": system, "input": input})
        }
    }
}

/// The status and text of conversation `n`'s request on `wire`.
async fn ask(addr: SocketAddr, wire: WireFormat, n: usize, follow_up: bool) -> (u16, String) {
    let mut client = Client::connect(addr).await;
    let path = wire.request_path("m", false);
    let body = request(wire, n, follow_up).to_string();
    let response = client.request("POST", &path, &[("content-type", "application/json")], &body).await.response();
    let text = if response.status == 200 { common::whole_text(wire, &response.json()) } else { String::new() };
    (response.status, text)
}

/// Conversations 0 to 19 (each on a wire of its own, in turn) ask at once; their answers in order.
async fn all_at_once(addr: SocketAddr, follow_up: bool) -> Vec<(u16, String)> {
    let mut tasks = JoinSet::new();
    for n in 0..20 {
        tasks.spawn(async move { (n, ask(addr, wire_of(n), n, follow_up).await) });
    }
    let mut answers = tasks.join_all().await;
    answers.sort_by_key(|(n, _)| *n);
    answers.into_iter().map(|(_, answer)| answer).collect()
}

fn wire_of(n: usize) -> WireFormat {
    WireFormat::ALL[n % WireFormat::ALL.len()]
}

#[tokio::test]
async fn twenty_concurrent_conversations_each_get_the_whole_script() {
    let scenario = Scenario::new().then(Step::http_error(429)).then(Step::ok("Sunny in Paris.")).per_conversation();
    let server = ChaosServer::start(scenario).await.unwrap();
    // Every conversation's first request at once, then every follow-up at once: with one shared
    // script the first wave would take the 429 once and the answer 19 times.
    let first = all_at_once(server.addr(), false).await;
    assert!(first.iter().all(|(status, _)| *status == 429), "{first:?}");
    let second = all_at_once(server.addr(), true).await;
    assert!(second.iter().all(|answer| *answer == (200, "Sunny in Paris.".to_owned())), "{second:?}");
    // Past its script, a conversation gets the default.
    assert_eq!(ask(server.addr(), wire_of(3), 3, true).await, (200, DEFAULT_TEXT.to_owned()));

    let journal = server.journal();
    for n in 0..20 {
        let steps: Vec<Option<usize>> = journal
            .iter()
            .filter(|entry| entry.conversation == Some(n))
            .map(|entry| entry.step.and_then(|step| step.index))
            .collect();
        let expected: &[Option<usize>] = if n == 3 { &[Some(0), Some(1), None] } else { &[Some(0), Some(1)] };
        assert_eq!(steps, expected, "conversation {n}");
    }
    assert_eq!(journal.iter().filter_map(|entry| entry.conversation).max(), Some(19));
}

#[tokio::test]
async fn a_shared_script_is_the_default_and_a_reset_forgets_every_conversation() {
    let script = || Scenario::new().then(Step::http_error(429)).then(Step::ok("Sunny in Paris."));
    let server = ChaosServer::start(script()).await.unwrap();
    assert_eq!(ask(server.addr(), WireFormat::OpenAi, 1, false).await.0, 429);
    assert_eq!(ask(server.addr(), WireFormat::OpenAi, 2, false).await.0, 200, "one script, shared");
    assert!(server.journal().iter().all(|entry| entry.conversation.is_none()));

    server.set_scenario(script().per_conversation());
    assert_eq!(ask(server.addr(), WireFormat::Anthropic, 1, false).await.0, 429);
    assert_eq!(ask(server.addr(), WireFormat::Anthropic, 1, true).await.0, 200);
    server.reset();
    assert_eq!(ask(server.addr(), WireFormat::Anthropic, 1, true).await.0, 429, "forgotten: the top again");
    assert_eq!(server.journal()[0].conversation, Some(0));
}

#[test]
fn the_file_key_is_per_conversation() {
    let scenario =
        Scenario::from_json_str(r#"{"per_conversation": true, "steps": [{"kind": "http_error", "status": 429}]}"#)
            .unwrap();
    assert!(scenario.is_per_conversation());
    let json = scenario.to_json();
    assert!(json.contains(r#""per_conversation": true"#), "{json}");
    assert_eq!(Scenario::from_json_str(&json).unwrap(), scenario);
    assert!(!Scenario::from_json_str(r#"{"steps": []}"#).unwrap().is_per_conversation());
    assert!(!Scenario::new().to_json().contains("per_conversation"));
}
