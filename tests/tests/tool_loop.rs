//! The ReAct loop inside `exec` (docs/design.md §13): tool errors go back to the model,
//! never to the retry layers; infrastructure retries apply per model turn; what the traces say.

use agentic_runtime::exec::RuntimeBuilder;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use agentic_chaos::{ChaosServer, Scenario, Step as ChaosStep};
use agentic_runtime::message::ContentBlock;
use agentic_runtime::message::Message;
use agentic_runtime::observe::trace::{TraceEvent, TraceSink};
use agentic_runtime::policy::Jitter;
use agentic_runtime::{
    ExecError, ExecErrorKind, Reply, RetryPolicy, Runtime, Scripted, ScriptedProvider, ToolError, Toolbox,
    agentic_function,
};
use agentic_test_support::wires::{self, Wire};
use agentic_test_support::written::trace_outline;
use serde_json::json;

/// `get_weather` fails `failures` times with "RateLimitError: 429", then works.
fn flaky_weather(failures: u32) -> Toolbox {
    let calls = Arc::new(AtomicU32::new(0));
    Toolbox::new().with_fn(
        "get_weather",
        "The weather in a city.",
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        move |input| {
            let calls = Arc::clone(&calls);
            async move {
                if calls.fetch_add(1, Ordering::SeqCst) < failures {
                    return Err(ToolError::new("RateLimitError: 429 Too Many Requests"));
                }
                Ok(format!("sunny in {}", input["city"].as_str().unwrap_or("?")))
            }
        },
    )
}

fn tool_results(message: &Message) -> Vec<(String, bool)> {
    match message {
        Message::User { content } => content
            .iter()
            .filter_map(|block| match block {
                ContentBlock::ToolResult { content, is_error, .. } => Some((content.clone(), *is_error)),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

fn events(sink: &TraceSink) -> Vec<TraceEvent> {
    TraceEvent::parse_all(&sink.contents().unwrap()).unwrap()
}

fn outline(sink: &TraceSink) -> Vec<String> {
    trace_outline(&sink.contents().unwrap())
}

/// Looks up the weather.
#[agentic_function(max_retries = 2, session_retries = 2)]
async fn weather(runtime: &Runtime, city: &str) -> Result<Reply, ExecError> {
    runtime.exec(format!("What is the weather in {city}?")).await
}

#[tokio::test(start_paused = true)]
async fn a_tool_error_goes_back_to_the_model_at_once_and_is_never_retried() {
    let provider = ScriptedProvider::new([
        Scripted::tool_call("get_weather", json!({"city": "Paris"})),
        Scripted::tool_call("get_weather", json!({"city": "Paris"})),
        Scripted::tool_call("get_weather", json!({"city": "Paris"})),
        Scripted::ok("It is sunny in Paris."),
    ]);
    let sink = TraceSink::in_memory();
    let runtime =
        Runtime::builder(provider.clone()).with_tools(flaky_weather(2)).with_trace(sink.clone()).build().unwrap();
    let start = tokio::time::Instant::now();
    let reply = weather(&runtime, "Paris").await.unwrap();
    assert_eq!(reply.text(), "It is sunny in Paris.");
    assert_eq!(reply.iterations(), 3);
    assert_eq!(reply.calls(), 4, "one model call per turn: no infrastructure retry");
    assert!(reply.decisions().is_empty(), "the layers decided nothing: {:?}", reply.decisions());
    assert_eq!(start.elapsed(), Duration::ZERO, "no sleep anywhere");

    // Each turn saw the previous results: two errors, then the answer.
    let requests = provider.requests();
    assert_eq!(
        tool_results(requests[1].messages.last().unwrap()),
        [("RateLimitError: 429 Too Many Requests".to_owned(), true)]
    );
    assert_eq!(tool_results(requests[3].messages.last().unwrap()), [("sunny in Paris".to_owned(), false)]);
    assert_eq!(requests[0].tools, ["get_weather"]);
    assert_eq!(requests[0].function.as_deref(), Some("weather"));

    // The trace: start, three calls and results (two errors), finish; timestamps 0 ms apart.
    assert_eq!(
        outline(&sink),
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
    let trace = events(&sink);
    assert!(trace.windows(2).all(|pair| pair[0].ts_ms() == pair[1].ts_ms()));
}

#[tokio::test(start_paused = true)]
async fn a_503_during_the_loop_is_retried_without_losing_completed_tool_results() {
    let provider = ScriptedProvider::new([
        Scripted::tool_call("get_weather", json!({"city": "Oslo"})),
        Scripted::http(503, "Service Unavailable"),
        Scripted::error(""),
        Scripted::ok("It is sunny in Oslo."),
    ]);
    // Without jitter: pins the exact 2 s, 4 s schedule.
    let runtime = Runtime::builder(provider.clone())
        .with_policy(RetryPolicy::new().with_jitter(Jitter::None))
        .with_tools(flaky_weather(0))
        .build()
        .unwrap();
    let reply = runtime.exec("Weather in Oslo?").await.unwrap();
    assert_eq!(reply.text(), "It is sunny in Oslo.");
    assert_eq!(reply.calls(), 4);
    let sleeps: Vec<Duration> = reply.decisions().iter().filter_map(|d| d.delay()).collect();
    assert_eq!(sleeps, [Duration::from_secs(2), Duration::from_secs(4)]);
    // Every retry of the second turn sent exactly the history before it: prompt, tool call, result.
    let requests = provider.requests();
    for request in &requests[1..] {
        assert_eq!(request.messages.len(), 3);
        assert_eq!(request.messages, requests[1].messages);
        assert_eq!(tool_results(&request.messages[2]), [("sunny in Oslo".to_owned(), false)]);
    }
}

#[tokio::test(start_paused = true)]
async fn an_exec_retry_of_a_turn_keeps_the_tool_results_too() {
    let provider = ScriptedProvider::new([
        Scripted::tool_call("get_weather", json!({"city": "Rome"})),
        Scripted::error("something odd"), // not retried by layer 1; layer 2 retries the turn
        Scripted::ok("Sunny in Rome."),
    ]);
    let runtime = Runtime::builder(provider.clone()).with_tools(flaky_weather(0)).build().unwrap();
    let reply = runtime.exec("Weather in Rome?").await.unwrap();
    assert_eq!(reply.text(), "Sunny in Rome.");
    let requests = provider.requests();
    assert_eq!(requests[2].messages, requests[1].messages);
    assert_eq!(requests[2].messages.len(), 3);
}

#[tokio::test(start_paused = true)]
async fn malformed_calls_and_panics_are_tool_errors_fed_back() {
    let tools = flaky_weather(0).with_fn("explode", "Panics.", json!({"type": "object"}), |_| async {
        panic!("the tool blew up");
    });
    let provider = ScriptedProvider::new([
        Scripted::tool_calls([
            ("no_such_tool", json!({})),
            ("get_weather", json!({"town": "Paris"})),
            ("explode", json!({})),
        ]),
        Scripted::tool_call_raw("get_weather", "{not json"),
        Scripted::ok("I could not get the weather."),
    ]);
    let sink = TraceSink::in_memory();
    let runtime = Runtime::builder(provider.clone()).with_tools(tools).with_trace(sink.clone()).build().unwrap();
    let reply = runtime.exec("Weather?").await.unwrap();
    assert_eq!(reply.calls(), 3);
    let requests = provider.requests();
    let first = tool_results(requests[1].messages.last().unwrap());
    assert_eq!(first.len(), 3);
    assert!(first.iter().all(|(_, is_error)| *is_error), "{first:?}");
    assert!(first[0].0.contains("no_such_tool"), "{}", first[0].0);
    assert!(first[1].0.contains("city"), "{}", first[1].0);
    assert!(first[2].0.contains("the tool blew up"), "{}", first[2].0);
    let second = tool_results(requests[2].messages.last().unwrap());
    assert!(second[0].1 && second[0].0.to_lowercase().contains("json"), "{second:?}");
    assert_eq!(
        outline(&sink),
        [
            "agent_start",
            "tool_call no_such_tool",
            "tool_call get_weather",
            "tool_call explode",
            "tool_result no_such_tool error",
            "tool_result get_weather error",
            "tool_result explode error",
            "tool_call get_weather",
            "tool_result get_weather error",
            "agent_finish"
        ],
        "every call answered, each an error"
    );
}

#[tokio::test(start_paused = true)]
async fn max_iterations_is_an_error_of_its_own_kind_and_not_retried() {
    let provider = ScriptedProvider::new([]).otherwise(Scripted::tool_call("get_weather", json!({"city": "Lima"})));
    let sink = TraceSink::in_memory();
    let runtime = Runtime::builder(provider.clone())
        .with_tools(flaky_weather(0))
        .with_max_iterations(3)
        .with_trace(sink.clone())
        .build()
        .unwrap();
    let error = runtime.exec("Weather?").await.unwrap_err();
    assert_eq!(error.kind(), ExecErrorKind::MaxIterations);
    assert_eq!(provider.calls(), 4, "three tool turns, then the fourth asks again and the exec stops");
    assert!(error.to_string().contains("`max_iterations` is 3"), "{error}");
    let turn = ["tool_call get_weather", "tool_result get_weather ok"];
    assert_eq!(outline(&sink), [&["agent_start"][..], &turn, &turn, &turn].concat(), "three turns, no agent_finish");
}

#[tokio::test(start_paused = true)]
async fn layers_that_give_up_leave_the_run_incomplete() {
    let provider = ScriptedProvider::new([Scripted::tool_call("get_weather", json!({"city": "Kyiv"}))])
        .otherwise(Scripted::http(401, "invalid api key"));
    let sink = TraceSink::in_memory();
    let runtime = Runtime::builder(provider).with_tools(flaky_weather(0)).with_trace(sink.clone()).build().unwrap();
    runtime.exec("Weather?").await.unwrap_err();
    assert_eq!(
        outline(&sink),
        ["agent_start", "tool_call get_weather", "tool_result get_weather ok"],
        "no agent_finish, no retry events"
    );
}

#[tokio::test(start_paused = true)]
async fn a_run_without_tool_errors_is_clean() {
    let provider =
        ScriptedProvider::new([Scripted::tool_call("get_weather", json!({"city": "Nice"})), Scripted::ok("Sunny.")]);
    let sink = TraceSink::in_memory();
    let runtime = Runtime::builder(provider).with_tools(flaky_weather(0)).with_trace(sink.clone()).build().unwrap();
    runtime.exec("Weather?").await.unwrap();
    assert_eq!(outline(&sink), ["agent_start", "tool_call get_weather", "tool_result get_weather ok", "agent_finish"]);
}

async fn loop_over_the_wire(wire: Wire) {
    let server = ChaosServer::start(weather_scenario()).await.unwrap();
    let sink = TraceSink::in_memory();
    let policy = RetryPolicy::new().with_session_base_delay_ms(1).with_exec_base_delay_ms(1);
    let runtime = RuntimeBuilder::from_shared(wire.provider(&server))
        .with_tools(flaky_weather(1))
        .with_trace(sink.clone())
        .build()
        .unwrap();
    let reply = runtime
        .request("Weather in Paris?")
        .policy(&policy)
        .send()
        .await
        .unwrap_or_else(|error| panic!("{wire}: {error}"));
    assert_eq!(reply.text().trim(), "It is sunny in Paris.", "{wire}");
    assert_eq!(reply.iterations(), 2, "{wire}");
    // tool_use, 503 (retried by the session layer), tool_use, answer.
    assert_eq!(server.journal().len(), 4, "{wire}");
    assert!(server.journal().iter().all(|entry| entry.tools == ["get_weather"]), "{wire}: {:?}", server.journal());
    assert_eq!(
        outline(&sink),
        [
            "agent_start",
            "tool_call get_weather",
            "tool_result get_weather error",
            "tool_call get_weather",
            "tool_result get_weather ok",
            "agent_finish"
        ],
        "{wire}"
    );
}

fn weather_scenario() -> Scenario {
    Scenario::new()
        .then(ChaosStep::tool_use("get_weather", json!({"city": "Paris"})))
        .then(ChaosStep::http_error(503))
        .then(ChaosStep::tool_use("get_weather", json!({"city": "Paris"})))
        .otherwise(ChaosStep::ok("It is sunny in Paris."))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_loop_runs_over_every_wire() {
    for wire in wires::all() {
        loop_over_the_wire(wire).await;
    }
}

#[tokio::test(start_paused = true)]
async fn a_long_tool_loop_keeps_its_retries_when_no_max_calls_is_set() {
    // The default policy can make 12 calls in one turn. Thirteen tool turns later, a 503 is
    // retried as in the first turn: without `max_calls` the cap bounds one turn, not the exec.
    let tools =
        Toolbox::new().with_fn("step", "One step", json!({"type": "object"}), |_| async { Ok("done".to_owned()) });
    let mut steps: Vec<Scripted> = (0..13).map(|_| Scripted::tool_call("step", json!({}))).collect();
    steps.extend([Scripted::http(503, "Service Unavailable"), Scripted::ok("All steps done.")]);
    let provider = ScriptedProvider::new(steps);
    let runtime = Runtime::builder(provider.clone()).with_tools(tools.clone()).with_max_iterations(13).build().unwrap();
    let reply = runtime.exec("Do the steps.").await.unwrap();
    assert_eq!(reply.text(), "All steps done.");
    assert_eq!(reply.calls(), 15);

    // `max_calls`, when set, counts the exec's calls, tool turns included.
    let mut steps: Vec<Scripted> = (0..5).map(|_| Scripted::tool_call("step", json!({}))).collect();
    steps.extend([Scripted::http(503, "Service Unavailable"), Scripted::ok("never")]);
    let runtime = Runtime::builder(ScriptedProvider::new(steps))
        .with_tools(tools)
        .with_policy(RetryPolicy::new().with_max_calls(Some(6)))
        .build()
        .unwrap();
    let error = runtime.exec("Do the steps.").await.unwrap_err();
    assert_eq!(error.kind(), ExecErrorKind::Refused);
    assert_eq!(error.stopped_by(), Some("`max_calls` (6) reached after 6 model calls"));
}
