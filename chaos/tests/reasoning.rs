//! Reasoning before the answer, and faults in the middle of a tool call, on the four wires, read
//! by a raw client: each wire's shapes, the chunk count a fault's `after_chunks` counts, and the
//! scenario file's fields.

use crate::common;

use agentic_chaos::{ChaosServer, Scenario, ScenarioError, Step, StepKind};
use common::{End, Event, WireFormat, model, stream_text, whole_text};
use serde_json::{Value, json};

async fn serve(step: impl Into<Step>) -> ChaosServer {
    ChaosServer::start(Scenario::new().then_times(100, step)).await.expect("start the server")
}

/// The reasoning a stream of `wire` carries, in that wire's own shape.
fn streamed_reasoning(wire: WireFormat, events: &[Event]) -> String {
    let mut reasoning = String::new();
    for event in events.iter().filter(|event| event.data != "[DONE]") {
        let data = event.json();
        let piece = match wire {
            WireFormat::OpenAi => data.pointer("/choices/0/delta/reasoning_content").cloned(),
            WireFormat::Anthropic => data.pointer("/delta/thinking").cloned(),
            WireFormat::Gemini => {
                let part = data.pointer("/candidates/0/content/parts/0");
                part.filter(|part| part["thought"] == true).map(|part| part["text"].clone())
            }
            _ => (data["type"] == "response.reasoning_summary_text.delta").then(|| data["delta"].clone()),
        };
        reasoning.push_str(piece.as_ref().and_then(Value::as_str).unwrap_or_default());
    }
    reasoning
}

/// The reasoning a whole answer of `wire` carries.
fn whole_reasoning(wire: WireFormat, body: &Value) -> String {
    let reasoning = match wire {
        WireFormat::OpenAi => body.pointer("/choices/0/message/reasoning_content"),
        WireFormat::Anthropic => body.pointer("/content/0/thinking"),
        WireFormat::Gemini => body.pointer("/candidates/0/content/parts/0/text"),
        _ => body.pointer("/output/0/summary/0/text"),
    };
    reasoning.and_then(Value::as_str).unwrap_or_default().to_owned()
}

/// The arguments text of the tool calls a stream of `wire` carried (Gemini's whole calls as JSON),
/// and how many argument pieces came.
fn streamed_arguments(wire: WireFormat, events: &[Event]) -> (String, usize) {
    let (mut arguments, mut pieces) = (String::new(), 0);
    for event in events.iter().filter(|event| event.data != "[DONE]") {
        let data = event.json();
        let piece = match wire {
            WireFormat::OpenAi => data.pointer("/choices/0/delta/tool_calls/0/function/arguments").cloned(),
            WireFormat::Anthropic => data.pointer("/delta/partial_json").cloned(),
            WireFormat::Gemini => {
                data.pointer("/candidates/0/content/parts/0/functionCall/args").map(|args| args.to_string().into())
            }
            _ => (data["type"] == "response.function_call_arguments.delta").then(|| data["delta"].clone()),
        };
        if let Some(piece) = piece.as_ref().and_then(Value::as_str).filter(|piece| !piece.is_empty()) {
            arguments.push_str(piece);
            pieces += 1;
        }
    }
    (arguments, pieces)
}

/// Every wire streams the reasoning before the text, in its own shape, and the text's reader
/// never sees it; a whole answer carries it too; a `tool_use` step shows it before its calls.
#[tokio::test]
async fn an_ok_step_streams_its_reasoning_before_the_answer_on_every_wire() {
    let step = Step::ok("The answer is 4.").reasoning("Two and two make four.");
    assert_eq!(step.clone().into_step().chunk_count(), Some(9), "5 pieces of reasoning, 4 of text");
    let server = serve(step).await;
    for wire in WireFormat::ALL {
        let r = model(server.addr(), wire, true).await.response();
        assert_eq!((r.status, &r.end), (200, &End::Clean), "{wire:?}");
        let events = r.events();
        assert_eq!(streamed_reasoning(wire, &events), "Two and two make four.", "{wire:?}");
        assert_eq!(stream_text(wire, &events), ("The answer is 4.".to_owned(), true), "{wire:?}");
        let whole = model(server.addr(), wire, false).await.response().json();
        assert_eq!(whole_reasoning(wire, &whole), "Two and two make four.", "{wire:?}: {whole}");
        assert_eq!(whole_text(wire, &whole), "The answer is 4.", "{wire:?}: {whole}");
    }
    let server = serve(Step::tool_use("get_weather", json!({"city": "Paris"})).reasoning("Weather: ask.")).await;
    for wire in WireFormat::ALL {
        let events = model(server.addr(), wire, true).await.response().events();
        assert_eq!(streamed_reasoning(wire, &events), "Weather: ask.", "{wire:?}");
        let (arguments, _) = streamed_arguments(wire, &events);
        assert_eq!(serde_json::from_str::<Value>(&arguments).unwrap(), json!({"city": "Paris"}), "{wire:?}");
    }
}

/// Anthropic's reasoning is a `thinking` block before the text block, closed by a signature;
/// Responses' a `reasoning` item before the message, the events numbered in order.
#[tokio::test]
async fn the_reasoning_takes_each_wires_real_shape() {
    let server = serve(Step::ok("4").reasoning("two and two")).await;
    let events = model(server.addr(), WireFormat::Anthropic, true).await.response().events();
    let kinds: Vec<String> = events
        .iter()
        .map(|event| {
            let data = event.json();
            let delta = data.pointer("/delta/type").or(data.pointer("/content_block/type"));
            format!(
                "{}{}",
                event.event.as_deref().unwrap(),
                delta.map(|t| format!(":{}", t.as_str().unwrap())).unwrap_or_default()
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "message_start",
            "content_block_start:thinking",
            "ping",
            "content_block_delta:thinking_delta",
            "content_block_delta:thinking_delta",
            "content_block_delta:thinking_delta",
            "content_block_delta:signature_delta",
            "content_block_stop",
            "content_block_start:text",
            "content_block_delta:text_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ]
    );
    assert_eq!(events[8].json()["index"], 1, "the text block comes second");
    let events = model(server.addr(), WireFormat::Responses, true).await.response().events();
    let numbers: Vec<u64> = events.iter().map(|event| event.json()["sequence_number"].as_u64().unwrap()).collect();
    assert_eq!(numbers, (0..events.len() as u64).collect::<Vec<_>>());
    let last = events.last().unwrap().json();
    assert_eq!(last["type"], "response.completed");
    assert_eq!(last["response"]["output"][0]["type"], "reasoning");
    assert_eq!(last["response"]["output"][1]["type"], "message");
}

/// A fault with `calls` cuts the answer in the middle of the call's argument pieces: the text's
/// chunks, then the pieces, counted together; Gemini, which never splits a call, sends none of it.
#[tokio::test]
async fn a_drop_or_truncation_falls_in_the_middle_of_a_tool_call_on_every_wire() {
    let input = json!({"city": "Paris"});
    // 2 text chunks, then 3 argument pieces: after 3 chunks, 1 piece came.
    let drop = Step::drop_stream(3).text("Let me").call("get_weather", input.clone());
    assert_eq!(drop.clone().into_step().chunk_count(), Some(5));
    let truncate = Step::truncate(3).text("Let me").call("get_weather", input.clone());
    for (step, end) in [(drop.into_step(), End::Cut), (truncate.into_step(), End::Clean)] {
        let server = serve(step).await;
        for wire in WireFormat::ALL {
            let r = model(server.addr(), wire, true).await.response();
            assert_eq!((r.status, &r.end), (200, &end), "{wire:?}");
            let events = r.events();
            assert_eq!(stream_text(wire, &events), ("Let me".to_owned(), false), "{wire:?}: unfinished");
            let (arguments, pieces) = streamed_arguments(wire, &events);
            // `{"city":"Paris"}`, 16 characters, in pieces of 6, 5 and 5.
            let first = r#"{"city"#;
            match wire {
                WireFormat::Gemini => assert_eq!((arguments.as_str(), pieces), ("", 0), "a call comes whole"),
                _ => assert_eq!((arguments.as_str(), pieces), (first, 1), "{wire:?}"),
            }
        }
    }
    // Cut after every chunk: the whole call came, not its end.
    let server = serve(Step::truncate(5).text("Let me").call("get_weather", input.clone())).await;
    for wire in WireFormat::ALL {
        let events = model(server.addr(), wire, true).await.response().events();
        let (arguments, _) = streamed_arguments(wire, &events);
        assert_eq!(serde_json::from_str::<Value>(&arguments).unwrap(), input, "{wire:?}");
        assert!(!stream_text(wire, &events).1, "{wire:?}: no finish");
    }
}

/// `after_chunks` counts the reasoning first: a cut inside it sends no text at all.
#[tokio::test]
async fn a_fault_can_fall_inside_the_reasoning() {
    let server = serve(Step::truncate(2).reasoning("one two three").text("four")).await;
    for wire in WireFormat::ALL {
        let events = model(server.addr(), wire, true).await.response().events();
        assert_eq!(streamed_reasoning(wire, &events), "one two ", "{wire:?}");
        assert_eq!(stream_text(wire, &events), (String::new(), false), "{wire:?}");
    }
}

/// An error event or a malformed chunk mid-call; a stall mid-call, then the whole call and its
/// finish.
#[tokio::test]
async fn an_error_a_malformed_chunk_and_a_stall_fall_in_the_middle_of_a_tool_call() {
    let input = json!({"city": "Paris"});
    let server = ChaosServer::start(
        Scenario::new()
            .then_times(4, Step::sse_error(1).text("").call("get_weather", input.clone()))
            .then_times(4, Step::malformed_chunk(2).text("").call("get_weather", input.clone()).argument_chunks(4))
            .then_times(4, Step::stall(5).after_chunks(1).text("").call("get_weather", input.clone())),
    )
    .await
    .unwrap();
    for wire in WireFormat::ALL {
        let events = model(server.addr(), wire, true).await.response().events();
        let last = events.last().unwrap().json();
        let error = last.get("error").or(last.pointer("/response/error")).filter(|error| !error.is_null());
        assert!(error.is_some(), "{wire:?}: the stream ends in an error event: {last}");
        let (_, pieces) = streamed_arguments(wire, &events);
        assert_eq!(pieces, usize::from(wire != WireFormat::Gemini), "{wire:?}");
    }
    for wire in WireFormat::ALL {
        let r = model(server.addr(), wire, true).await.response();
        let text = r.text();
        assert!(text.contains("data: {"), "{wire:?}");
        // The malformed line, then the rest of the call and the finish of a tool call.
        let lines: Vec<&str> = text.lines().filter(|line| line.starts_with("data: ")).collect();
        let malformed = lines.iter().position(|line| serde_json::from_str::<Value>(&line[6..]).is_err());
        assert!(malformed.is_some(), "{wire:?}: a malformed chunk");
        let good: Vec<Event> = r
            .events()
            .into_iter()
            .filter(|event| serde_json::from_str::<Value>(&event.data).is_ok() || event.data == "[DONE]")
            .collect();
        let (arguments, _) = streamed_arguments(wire, &good);
        assert_eq!(serde_json::from_str::<Value>(&arguments).unwrap(), input, "{wire:?}");
    }
    for wire in WireFormat::ALL {
        let events = model(server.addr(), wire, true).await.response().events();
        let (arguments, _) = streamed_arguments(wire, &events);
        assert_eq!(serde_json::from_str::<Value>(&arguments).unwrap(), input, "{wire:?}");
        let finish = events.iter().rev().find_map(|event| {
            let data = serde_json::from_str::<Value>(&event.data).ok()?;
            ["/choices/0/finish_reason", "/delta/stop_reason", "/candidates/0/finishReason", "/response/status"]
                .iter()
                .find_map(|pointer| data.pointer(pointer).and_then(Value::as_str).map(str::to_owned))
        });
        let expected = match wire {
            WireFormat::OpenAi => "tool_calls",
            WireFormat::Anthropic => "tool_use",
            WireFormat::Gemini => "STOP",
            _ => "completed",
        };
        assert_eq!(finish.as_deref(), Some(expected), "{wire:?}");
    }
}

/// The scenario file's `reasoning`, `calls` and `argument_chunks` on the faults, round-tripped;
/// their misuses refused with the field named.
#[test]
fn the_scenario_file_takes_reasoning_and_calls_on_the_faults() {
    let scenario = Scenario::from_json_str(
        r#"{"steps": [
            {"kind": "ok", "text": "4", "reasoning": "two and two"},
            {"kind": "tool_use", "calls": [{"name": "f"}], "reasoning": "call f"},
            {"kind": "drop_stream", "after_chunks": 4, "text": "Let me",
             "calls": [{"name": "get_weather", "input": {"city": "Paris"}}], "argument_chunks": 5},
            {"kind": "sse_error", "after_chunks": 1, "reasoning": "hmm", "calls": [{"name": "f"}]}
        ]}"#,
    )
    .unwrap();
    let built = Scenario::new()
        .then(Step::ok("4").reasoning("two and two"))
        .then(Step::tool_use("f", json!({})).reasoning("call f"))
        .then(Step::drop_stream(4).text("Let me").call("get_weather", json!({"city": "Paris"})).argument_chunks(5))
        .then(Step::sse_error(1).reasoning("hmm").call("f", json!({})));
    assert_eq!(scenario, built);
    assert_eq!(Scenario::from_json_str(&built.to_json()).unwrap(), built);
    let counts: Vec<Option<usize>> = built.steps().map(|(step, _)| step.chunk_count()).collect();
    // 2 + 2 text; 2 reasoning + 2 argument pieces (`{}` is 2 characters); 2 text + 5 pieces; 1
    // reasoning + 5 words of the default text + 2 pieces.
    assert_eq!(counts, [Some(4), Some(4), Some(7), Some(8)]);
    assert_eq!(built.steps().nth(2).map(|(step, _)| step.kind()), Some(StepKind::DropStream));

    let refusal = |json: &str| match Scenario::from_json_str(json).unwrap_err() {
        error @ ScenarioError::Invalid { .. } => (error.field().unwrap().to_owned(), error.to_string()),
        other => panic!("{other:?}"),
    };
    for (json, field, says) in [
        (r#"{"steps": [{"kind": "ok", "calls": [{"name": "f"}]}]}"#, "steps[0].calls", "does not apply to a `ok` step"),
        (r#"{"steps": [{"kind": "hang", "reasoning": "x"}]}"#, "steps[0].reasoning", "does not apply to a `hang` step"),
        (r#"{"steps": [{"kind": "ok", "reasoning": ""}]}"#, "steps[0].reasoning", "`reasoning` must not be empty"),
        (r#"{"steps": [{"kind": "truncate", "calls": []}]}"#, "steps[0].calls", "`calls` is empty"),
        (r#"{"steps": [{"kind": "truncate", "argument_chunks": 2}]}"#, "steps[0].argument_chunks", "add `calls`"),
        (
            r#"{"steps": [{"kind": "truncate", "calls": [{"name": "f", "input": 3}]}]}"#,
            "steps[0].calls[0].input",
            "must be a JSON object",
        ),
        (
            r#"{"steps": [{"kind": "tool_use", "calls": [{"name": "f"}], "argument_chunks": 2}]}"#,
            "steps[0].argument_chunks",
            "does not apply to a `tool_use` step",
        ),
    ] {
        let (at, text) = refusal(json);
        assert_eq!(at, field, "{json}");
        assert!(text.contains(says), "{json}: {text}");
    }
}
