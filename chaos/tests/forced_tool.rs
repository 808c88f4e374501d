//! A request's forced tool choice, honoured on every wire, streamed and not: a forced tool turns
//! a text answer and a call of another tool into a call of it; "any" (`required`, Gemini's `ANY`)
//! turns a text answer into a call of the last tool offered and lets calls through; the journal
//! names the tool an answer was made to call.

use crate::common;

use agentic_chaos::{ChaosServer, Scenario, Step};
use common::{Client, Event, WireFormat};
use serde_json::{Value, json};

/// What the request lets the model do.
#[derive(Debug, Clone, Copy)]
enum Choice {
    Auto,
    Any,
    Tool,
}

/// A request of `wire` offering the tools `lookup` and `Answer`, with `choice` (`Tool`: `Answer`).
fn body(wire: WireFormat, choice: Choice, stream: bool) -> Value {
    let question = "What is the weather in Paris?";
    match wire {
        WireFormat::OpenAi => {
            let tools: Vec<Value> = ["lookup", "Answer"]
                .iter()
                .map(|name| json!({"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}))
                .collect();
            let mut body = json!({"model": "m", "stream": stream, "tools": tools,
                "messages": [{"role": "user", "content": question}]});
            match choice {
                Choice::Any => body["tool_choice"] = json!("required"),
                Choice::Tool => body["tool_choice"] = json!({"type": "function", "function": {"name": "Answer"}}),
                Choice::Auto => {}
            }
            body
        }
        WireFormat::Anthropic => {
            let tools: Vec<Value> = ["lookup", "Answer"]
                .iter()
                .map(|name| json!({"name": name, "input_schema": {"type": "object"}}))
                .collect();
            let mut body = json!({"model": "m", "max_tokens": 64, "stream": stream, "tools": tools,
                "messages": [{"role": "user", "content": question}]});
            match choice {
                Choice::Any => body["tool_choice"] = json!({"type": "any"}),
                Choice::Tool => body["tool_choice"] = json!({"type": "tool", "name": "Answer"}),
                Choice::Auto => {}
            }
            body
        }
        WireFormat::Gemini => {
            let mut body = json!({"contents": [{"role": "user", "parts": [{"text": question}]}],
                "tools": [{"functionDeclarations": [{"name": "lookup"}, {"name": "Answer"}]}]});
            match choice {
                Choice::Any => body["toolConfig"] = json!({"functionCallingConfig": {"mode": "ANY"}}),
                Choice::Tool => {
                    body["toolConfig"] =
                        json!({"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["Answer"]}})
                }
                Choice::Auto => {}
            }
            body
        }
        _ => {
            let tools: Vec<Value> = ["lookup", "Answer"]
                .iter()
                .map(|name| json!({"type": "function", "name": name, "parameters": {"type": "object"}}))
                .collect();
            let mut body = json!({"model": "m", "stream": stream, "tools": tools, "input": question});
            match choice {
                Choice::Any => body["tool_choice"] = json!("required"),
                Choice::Tool => body["tool_choice"] = json!({"type": "function", "name": "Answer"}),
                Choice::Auto => {}
            }
            body
        }
    }
}

/// What an answer holds: its text, and each call's name and arguments (parsed).
#[derive(Debug, Default, PartialEq)]
struct Answer {
    text: String,
    calls: Vec<(String, Value)>,
}

fn parsed(arguments: &Value) -> Value {
    match arguments {
        Value::String(text) => serde_json::from_str(text).unwrap_or_else(|_| arguments.clone()),
        other => other.clone(),
    }
}

/// The answer in a whole body of `wire`.
fn whole_answer(wire: WireFormat, body: &Value) -> Answer {
    let mut answer = Answer { text: common::whole_text(wire, body), ..Answer::default() };
    let name_args =
        |call: &Value, name: &str, args: &str| (call[name].as_str().unwrap().to_owned(), parsed(&call[args]));
    match wire {
        WireFormat::OpenAi => {
            for call in body["choices"][0]["message"]["tool_calls"].as_array().into_iter().flatten() {
                answer.calls.push(name_args(&call["function"], "name", "arguments"));
            }
        }
        WireFormat::Anthropic => {
            let blocks = body["content"].as_array().into_iter().flatten();
            answer.calls.extend(blocks.filter(|b| b["type"] == "tool_use").map(|b| name_args(b, "name", "input")));
        }
        WireFormat::Gemini => {
            let parts = body["candidates"][0]["content"]["parts"].as_array().into_iter().flatten();
            answer.calls.extend(parts.filter_map(|p| p.get("functionCall")).map(|c| name_args(c, "name", "args")));
        }
        _ => {
            let items = body["output"].as_array().into_iter().flatten();
            let calls = items.filter(|item| item["type"] == "function_call");
            answer.calls.extend(calls.map(|item| name_args(item, "name", "arguments")));
        }
    }
    answer
}

/// The answer in a stream of `wire`.
fn streamed_answer(wire: WireFormat, events: &[Event]) -> Answer {
    let mut answer = Answer { text: common::stream_text(wire, events).0, ..Answer::default() };
    let mut arguments: Vec<String> = Vec::new();
    for event in events.iter().filter(|event| event.data != "[DONE]") {
        let data = event.json();
        match wire {
            WireFormat::OpenAi => {
                for call in data["choices"][0]["delta"]["tool_calls"].as_array().into_iter().flatten() {
                    if let Some(name) = call["function"]["name"].as_str() {
                        answer.calls.push((name.to_owned(), Value::Null));
                        arguments.push(String::new());
                    }
                    arguments.last_mut().unwrap().push_str(call["function"]["arguments"].as_str().unwrap_or_default());
                }
            }
            WireFormat::Anthropic => match data["type"].as_str() {
                Some("content_block_start") if data["content_block"]["type"] == "tool_use" => {
                    answer.calls.push((data["content_block"]["name"].as_str().unwrap().to_owned(), Value::Null));
                    arguments.push(String::new());
                }
                Some("content_block_delta") if data["delta"]["type"] == "input_json_delta" => {
                    arguments.last_mut().unwrap().push_str(data["delta"]["partial_json"].as_str().unwrap());
                }
                _ => {}
            },
            WireFormat::Gemini => {
                let parts = data["candidates"][0]["content"]["parts"].as_array().cloned().unwrap_or_default();
                for call in parts.iter().filter_map(|part| part.get("functionCall")) {
                    answer.calls.push((call["name"].as_str().unwrap().to_owned(), call["args"].clone()));
                    arguments.push(call["args"].to_string());
                }
            }
            _ => {
                if data["type"] == "response.completed" {
                    let items = data["response"]["output"].as_array().cloned().unwrap_or_default();
                    for item in items.iter().filter(|item| item["type"] == "function_call") {
                        answer.calls.push((item["name"].as_str().unwrap().to_owned(), Value::Null));
                        arguments.push(item["arguments"].as_str().unwrap().to_owned());
                    }
                }
            }
        }
    }
    for (call, text) in answer.calls.iter_mut().zip(arguments) {
        call.1 = serde_json::from_str(&text).unwrap_or(Value::String(text));
    }
    answer
}

/// The answer to one request of `wire` with `choice`, streamed or not.
async fn ask(server: &ChaosServer, wire: WireFormat, choice: Choice, stream: bool) -> Answer {
    let mut client = Client::connect(server.addr()).await;
    let path = wire.request_path("m", stream);
    let body = body(wire, choice, stream).to_string();
    let response = client.request("POST", &path, &[("content-type", "application/json")], &body).await.response();
    assert_eq!(response.status, 200, "{wire:?} {choice:?}");
    if stream { streamed_answer(wire, &response.events()) } else { whole_answer(wire, &response.json()) }
}

/// The two answers a server scripted with `steps` gives a conversation asking twice with `choice`,
/// and what the journal says each was made to call, on every wire, streamed and not.
async fn two_answers(steps: [Step; 2], choice: Choice) -> Vec<(String, Answer, Answer, Vec<Option<String>>)> {
    let [first, second] = steps;
    let server = ChaosServer::start(Scenario::new().then(first).then(second)).await.unwrap();
    let mut seen = Vec::new();
    for wire in WireFormat::ALL {
        for stream in [true, false] {
            server.reset();
            let (one, two) = (ask(&server, wire, choice, stream).await, ask(&server, wire, choice, stream).await);
            let forced = server.journal().into_iter().map(|entry| entry.forced_tool).collect();
            seen.push((format!("{wire:?} stream={stream}"), one, two, forced));
        }
    }
    seen
}

const ANSWER: &str = r#"{"temperature": 21}"#;

fn call(name: &str, arguments: Value) -> Answer {
    Answer { text: String::new(), calls: vec![(name.to_owned(), arguments)] }
}

fn answer_tool() -> Option<String> {
    Some("Answer".to_owned())
}

#[tokio::test]
async fn a_forced_tool_turns_a_text_answer_and_other_calls_into_a_call_of_it() {
    let other_calls = Step::tool_use("lookup", json!({"city": "Paris"})).text("Let me look.").call("other", json!({}));
    for (case, text, calls, forced) in
        two_answers([Step::ok(ANSWER).chunks(3).into(), other_calls.into()], Choice::Tool).await
    {
        assert_eq!(text, call("Answer", json!({"temperature": 21})), "{case}: text");
        assert_eq!(calls, call("Answer", json!({"city": "Paris"})), "{case}: another tool's call");
        assert_eq!(forced, [answer_tool(), answer_tool()], "{case}");
    }
}

#[tokio::test]
async fn any_tool_turns_a_text_answer_into_a_call_of_the_last_offered_and_lets_calls_through() {
    let lookup = Step::tool_use("lookup", json!({"city": "Paris"})).text("Let me look.");
    for (case, calls, text, forced) in two_answers([lookup.into(), Step::ok(ANSWER).into()], Choice::Any).await {
        assert_eq!(calls, call("lookup", json!({"city": "Paris"})), "{case}: the call, no text first");
        assert_eq!(text, call("Answer", json!({"temperature": 21})), "{case}: text");
        assert_eq!(forced, [None, answer_tool()], "{case}");
    }
}

#[tokio::test]
async fn without_a_forced_choice_the_script_goes_out_as_written() {
    let lookup = Step::tool_use("lookup", json!({"city": "Paris"}));
    for (case, calls, text, forced) in two_answers([lookup.into(), Step::ok("Sunny.").into()], Choice::Auto).await {
        assert_eq!(calls, call("lookup", json!({"city": "Paris"})), "{case}");
        assert_eq!(text, Answer { text: "Sunny.".to_owned(), calls: Vec::new() }, "{case}");
        assert_eq!(forced, [None, None], "{case}");
    }
}
