//! The tool pieces end to end, without the exec loop: tools offered on every wire (`wires::all`), the
//! chaos server's tool calls parsed into `ToolUse` blocks, the toolbox's results sent back, and
//! the trace the toolbox writes.

use agentic_chaos::{ChaosServer, Scenario, Step as ChaosStep};
use agentic_runtime::exec;
use agentic_runtime::message::{ContentBlock, Message, StopReason};
use agentic_runtime::observe::trace::{TraceEvent, TraceSink};
use agentic_runtime::provider::{Provider, Request, Scripted, ScriptedProvider};
use agentic_runtime::tool::{ToolError, Toolbox, results_message};
use agentic_test_support::wires::{self, Wire};
use agentic_test_support::written::trace_outline;
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

/// `get_weather` fails `failures` times with "RateLimitError: 429", then works; `get_time` works.
fn toolbox(failures: u32) -> Toolbox {
    let calls = Arc::new(AtomicU32::new(0));
    Toolbox::new()
        .with_fn(
            "get_weather",
            "The weather in a city.",
            json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
            move |input| {
                let calls = Arc::clone(&calls);
                async move {
                    if calls.fetch_add(1, Ordering::SeqCst) < failures {
                        return Err(ToolError::new("RateLimitError: 429"));
                    }
                    Ok(format!("sunny in {}", input["city"].as_str().unwrap_or("?")))
                }
            },
        )
        .with_fn("get_time", "The time.", serde_json::Value::Null, |_| async { Ok("12:00".to_owned()) })
}

/// One model turn and, if it asked for tools, their results: what the exec loop will do per turn.
async fn turn(
    provider: &dyn Provider,
    toolbox: &Toolbox,
    history: &mut Vec<Message>,
    trace: &agentic_runtime::observe::trace::RunTrace,
) -> bool {
    let specs = toolbox.specs();
    let mut request = Request::new(history);
    request.tools = &specs;
    let message = exec::call_once(provider, &request, None)
        .await
        .unwrap_or_else(|error| panic!("{}: not a programming error, got {error}", provider.name()));
    assert!(!message.is_error(), "{}: {message:?}", provider.name());
    let wants_tools = message.stop_reason == StopReason::ToolUse;
    let outcomes = toolbox.run_calls_traced(&message, Some(trace)).await;
    history.push(Message::Assistant(message));
    if wants_tools {
        history.push(results_message(outcomes));
    }
    wants_tools
}

/// The id the chaos server gives a step's first tool call on `wire`, where the test knows the wire's
/// spelling; on another wire any id that is not empty will do.
fn first_id(wire: Wire) -> Option<&'static str> {
    match wire.name() {
        "openai" => Some("call_chaos000000_0"),
        "anthropic" => Some("toolu_chaos000000_0"),
        _ => None,
    }
}

async fn tools_against_chaos(wire: Wire) {
    let server = ChaosServer::start(scenario()).await.unwrap();
    let provider = &*wire.provider(&server);
    let toolbox = toolbox(1);
    let sink = TraceSink::in_memory();
    let trace = sink.start_run(Some("weather"));
    let mut history = vec![Message::user("Weather and time in Paris?")];
    assert!(turn(provider, &toolbox, &mut history, &trace).await);
    let Message::Assistant(first) = &history[1] else { panic!("{wire}: {history:?}") };
    assert_eq!(first.content[0], ContentBlock::text("Let me check."), "{wire}");
    let ContentBlock::ToolUse { id, .. } = &first.content[1] else { panic!("{wire}: {first:?}") };
    assert!(!id.is_empty() && first_id(wire).is_none_or(|first_id| id == first_id), "{wire}: {id}");
    assert_eq!(
        first.content[1],
        ContentBlock::ToolUse { id: id.clone(), name: "get_weather".into(), input: json!({"city": "Paris"}) },
        "{wire}"
    );
    assert!(
        matches!(&first.content[2], ContentBlock::ToolUse { name, input, .. } if name == "get_time" && *input == json!({})),
        "{wire}: {first:?}"
    );
    assert!(turn(provider, &toolbox, &mut history, &trace).await, "{wire}: the model calls again after the error");
    assert!(!turn(provider, &toolbox, &mut history, &trace).await, "{wire}");
    trace.agent_finish(&history.last().unwrap().text(), 3);

    // The results went back: the error as is, then the success.
    let Message::User { content } = &history[2] else { panic!("{wire}: {history:?}") };
    assert!(
        matches!(&content[0], ContentBlock::ToolResult { content, is_error: true, .. } if content == "RateLimitError: 429"),
        "{wire}: {content:?}"
    );
    assert!(
        matches!(&content[1], ContentBlock::ToolResult { content, is_error: false, .. } if content == "12:00"),
        "{wire}: {content:?}"
    );
    let Message::User { content } = &history[4] else { panic!("{wire}: {history:?}") };
    assert!(
        matches!(&content[0], ContentBlock::ToolResult { content, is_error: false, .. } if content == "sunny in Paris"),
        "{wire}: {content:?}"
    );
    assert_eq!(history.last().unwrap().text(), "It is sunny in Paris.", "{wire}");

    let journal = server.journal();
    assert_eq!(journal.len(), 3, "{wire}: one request per turn: a tool error is never retried");
    assert!(journal.iter().all(|entry| entry.tools == ["get_weather", "get_time"]), "{wire}: {journal:?}");
    assert_eq!(
        trace_outline(&sink.contents().unwrap()),
        [
            "agent_start",
            "tool_call get_weather",
            "tool_call get_time",
            "tool_result get_weather error",
            "tool_result get_time ok",
            "tool_call get_weather",
            "tool_result get_weather ok",
            "agent_finish",
        ],
        "{wire}: the failed tool was called again and answered"
    );
}

fn scenario() -> Scenario {
    Scenario::new()
        .then(
            ChaosStep::tool_use("get_weather", json!({"city": "Paris"}))
                .call("get_time", json!({}))
                .text("Let me check."),
        )
        .then(ChaosStep::tool_use("get_weather", json!({"city": "Paris"})))
        .otherwise(ChaosStep::ok("It is sunny in Paris."))
}

#[tokio::test]
async fn every_wire_sends_tools_and_reads_the_chaos_servers_tool_calls() {
    for wire in wires::all() {
        tools_against_chaos(wire).await;
    }
}

#[tokio::test(start_paused = true)]
async fn a_flaky_tool_with_the_scripted_provider_is_fed_back_at_once() {
    let provider = ScriptedProvider::new([
        Scripted::tool_call("get_weather", json!({"city": "Paris"})),
        Scripted::tool_call("get_weather", json!({"city": "Paris"})),
        Scripted::tool_call("get_weather", json!({"city": "Paris"})),
        Scripted::ok("It is sunny in Paris."),
    ]);
    let toolbox = toolbox(2);
    let sink = TraceSink::in_memory();
    let trace = sink.start_run(None);
    let mut history = vec![Message::user("Weather in Paris?")];
    let mut iterations = 0;
    loop {
        iterations += 1;
        if !turn(&provider, &toolbox, &mut history, &trace).await {
            break;
        }
    }
    trace.agent_finish(&history.last().unwrap().text(), iterations);
    assert_eq!(iterations, 4);
    assert!(provider.requests().iter().all(|request| request.tools == ["get_weather", "get_time"]));

    let events = TraceEvent::parse_all(&sink.contents().unwrap()).unwrap();
    assert_eq!(
        trace_outline(&sink.contents().unwrap()),
        [
            "agent_start",
            "tool_call get_weather",
            "tool_result get_weather error",
            "tool_call get_weather",
            "tool_result get_weather error",
            "tool_call get_weather",
            "tool_result get_weather ok",
            "agent_finish"
        ]
    );
    assert!(events.windows(2).all(|pair| pair[1].ts_ms() == pair[0].ts_ms()), "no sleep anywhere: {events:?}");
}

/// A turn of 1 000 calls over every wire (the chaos server's most per step): the first 128 run,
/// ten at a time; every call gets its result, in the model's order, and the next request carries
/// them all to the server.
#[tokio::test]
async fn a_thousand_calls_from_the_chaos_server_are_capped_and_all_answered() {
    let mut step = ChaosStep::tool_use("work", json!({"n": 0}));
    for n in 1..1000 {
        step = step.call("work", json!({ "n": n }));
    }
    let scenario = Scenario::new().then(step).otherwise(ChaosStep::ok("Done."));
    for wire in wires::all() {
        // A server per wire: each plays the scenario from its start.
        let server = ChaosServer::start(scenario.clone()).await.unwrap();
        let provider = wire.provider(&server);
        let running = Arc::new(AtomicU32::new(0));
        let high = Arc::new(AtomicU32::new(0));
        let toolbox = Toolbox::new().with_fn("work", "Works.", json!(null), {
            let (running, high) = (Arc::clone(&running), Arc::clone(&high));
            move |input| {
                let (running, high) = (Arc::clone(&running), Arc::clone(&high));
                async move {
                    high.fetch_max(running.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
                    // Let the other calls start, if the toolbox allows them to.
                    for _ in 0..10 {
                        tokio::task::yield_now().await;
                    }
                    running.fetch_sub(1, Ordering::SeqCst);
                    Ok(format!("done {}", input["n"]))
                }
            }
        });
        let sink = TraceSink::in_memory();
        let trace = sink.start_run(None);
        let mut history = vec![Message::user("Do a thousand things.")];
        assert!(turn(provider.as_ref(), &toolbox, &mut history, &trace).await);
        assert!(!turn(provider.as_ref(), &toolbox, &mut history, &trace).await, "{wire}: the server took the results");
        assert_eq!(history.last().unwrap().text(), "Done.", "{wire}");
        assert_eq!(high.load(Ordering::SeqCst), 10, "{wire}");

        let Message::Assistant(calls) = &history[1] else { panic!("{wire}: {history:?}") };
        let Message::User { content } = &history[2] else { panic!("{wire}: {history:?}") };
        assert_eq!(content.len(), 1000, "{wire}");
        for (n, (call, result)) in
            calls.content.iter().filter(|block| matches!(block, ContentBlock::ToolUse { .. })).zip(content).enumerate()
        {
            let (ContentBlock::ToolUse { id, .. }, ContentBlock::ToolResult { tool_use_id, content, is_error }) =
                (call, result)
            else {
                panic!("{wire}: {call:?} {result:?}")
            };
            assert_eq!(tool_use_id, id, "{wire}: in the model's order");
            if n < 128 {
                assert_eq!((content.as_str(), *is_error), (format!("done {n}").as_str(), false), "{wire}");
            } else {
                let capped = *is_error && content.starts_with("not run: this turn asked for 1000 tool calls");
                assert!(capped, "{wire}: {content}");
            }
        }
        assert_eq!(server.journal().len(), 2, "{wire}: two requests: the calls, then their results");
    }
}
