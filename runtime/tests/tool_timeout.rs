//! Tool timeouts inside `exec`: a call that does not finish in time goes back to the model as an
//! error result, like any tool error — no infrastructure retry, no sleep — and the loop goes on.
//! All on paused time, so "120 s" takes no wall-clock time.

use std::time::Duration;

use agentic_runtime::message::{ContentBlock, Message};
use agentic_runtime::observe::trace::{TraceEvent, TraceSink};
use agentic_runtime::provider::{Scripted, ScriptedProvider};
use agentic_runtime::tool::{DEFAULT_TOOL_TIMEOUT, ToolError, Toolbox};
use agentic_runtime::{Reply, Runtime};
use serde_json::{Value, json};
use tokio::time::Instant;

fn weather_schema() -> Value {
    json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
}

/// A `get_weather` that never answers.
async fn never(_input: Value) -> Result<String, ToolError> {
    std::future::pending().await
}

/// The `(content, is_error)` of every tool result in `message`.
pub(crate) fn tool_results(message: &Message) -> Vec<(String, bool)> {
    let Message::User { content } = message else { return Vec::new() };
    content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::ToolResult { content, is_error, .. } => Some((content.clone(), *is_error)),
            _ => None,
        })
        .collect()
}

/// Runs one exec whose model calls `get_weather` once, then answers; returns the reply, the tool
/// results the model saw on its second turn, and the virtual time the exec took.
async fn one_tool_turn(tools: Toolbox) -> (Reply, Vec<(String, bool)>, Duration) {
    let provider = ScriptedProvider::new([
        Scripted::tool_call("get_weather", json!({"city": "Paris"})),
        Scripted::ok("The weather service did not answer."),
    ]);
    let runtime = Runtime::builder(provider.clone()).with_tools(tools).build().unwrap();
    let start = Instant::now();
    let reply = runtime.exec("Weather in Paris?").await.unwrap();
    let elapsed = start.elapsed();
    let requests = provider.requests();
    assert_eq!(requests.len(), 2, "one request per turn: {requests:?}");
    let results = tool_results(requests[1].messages.last().unwrap());
    (reply, results, elapsed)
}

fn assert_no_retry(reply: &Reply) {
    assert_eq!(reply.calls(), 2, "one model call per turn");
    assert_eq!(reply.iterations(), 1);
    assert!(reply.decisions().is_empty(), "the layers decided nothing: {:?}", reply.decisions());
}

#[tokio::test(start_paused = true)]
async fn a_tool_that_never_returns_hits_the_default_timeout_and_the_model_goes_on() {
    let tools = Toolbox::new().with_fn("get_weather", "The weather in a city.", weather_schema(), never);
    let provider = ScriptedProvider::new([
        Scripted::tool_call("get_weather", json!({"city": "Paris"})),
        Scripted::ok("The weather service did not answer."),
    ]);
    let sink = TraceSink::in_memory();
    let runtime = Runtime::builder(provider.clone()).with_tools(tools).with_trace(sink.clone()).build().unwrap();
    let start = Instant::now();
    let reply = runtime.exec("Weather in Paris?").await.unwrap();

    assert_eq!(start.elapsed(), Duration::from_secs(120), "exactly the default timeout, no sleep on top");
    assert_eq!(DEFAULT_TOOL_TIMEOUT, Duration::from_secs(120));
    assert_eq!(reply.text(), "The weather service did not answer.");
    assert_no_retry(&reply);
    let requests = provider.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        tool_results(requests[1].messages.last().unwrap()),
        [("the tool `get_weather` timed out after 120 s".to_owned(), true)]
    );

    let events = TraceEvent::parse_all(&sink.contents().unwrap()).unwrap();
    let results: Vec<(bool, &str)> = events
        .iter()
        .filter_map(|event| match event {
            TraceEvent::ToolResult { is_error, content, .. } => Some((*is_error, content.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(results, [(true, "the tool `get_weather` timed out after 120 s")]);
    let names: Vec<&str> = events.iter().map(TraceEvent::name).collect();
    assert_eq!(names, ["agent_start", "tool_call", "tool_result", "agent_finish"]);
}

#[tokio::test(start_paused = true)]
async fn a_toolbox_timeout_overrides_the_default() {
    let tools = Toolbox::new()
        .with_fn("get_weather", "The weather in a city.", weather_schema(), never)
        .with_timeout(Duration::from_millis(2500));
    let (reply, results, elapsed) = one_tool_turn(tools).await;
    assert_eq!(elapsed, Duration::from_millis(2500));
    assert_eq!(results, [("the tool `get_weather` timed out after 2.5 s".to_owned(), true)]);
    assert_no_retry(&reply);
}

#[tokio::test(start_paused = true)]
async fn a_tool_timeout_overrides_the_toolbox_one() {
    // The tool's own limit is shorter than the toolbox's, then longer (and set before it): it
    // wins both ways.
    let cases = [
        (
            Toolbox::new().with_timeout(Duration::from_secs(30)).with_fn_timeout(
                "get_weather",
                "The weather.",
                weather_schema(),
                Duration::from_secs(7),
                never,
            ),
            Duration::from_secs(7),
            "the tool `get_weather` timed out after 7 s",
        ),
        (
            Toolbox::new()
                .with_fn_timeout("get_weather", "The weather.", weather_schema(), Duration::from_secs(300), never)
                .with_timeout(Duration::from_secs(30)),
            Duration::from_secs(300),
            "the tool `get_weather` timed out after 300 s",
        ),
    ];
    for (tools, limit, message) in cases {
        let (reply, results, elapsed) = one_tool_turn(tools).await;
        assert_eq!(elapsed, limit);
        assert_eq!(results, [(message.to_owned(), true)]);
        assert_no_retry(&reply);
    }
}

#[tokio::test(start_paused = true)]
async fn a_tool_that_finishes_in_time_is_unaffected() {
    // Just under the limit: 119.999 s of a 120 s default.
    let tools = Toolbox::new().with_fn("get_weather", "The weather in a city.", weather_schema(), |input| async move {
        tokio::time::sleep(DEFAULT_TOOL_TIMEOUT - Duration::from_millis(1)).await;
        Ok(format!("sunny in {}", input["city"].as_str().unwrap_or("?")))
    });
    let (reply, results, elapsed) = one_tool_turn(tools).await;
    assert_eq!(elapsed, Duration::from_millis(119_999));
    assert_eq!(results, [("sunny in Paris".to_owned(), false)]);
    assert_no_retry(&reply);

    // And an instant one under a tiny toolbox limit.
    let tools = Toolbox::new()
        .with_fn("get_weather", "The weather in a city.", weather_schema(), |_| async { Ok("sunny".to_owned()) })
        .with_timeout(Duration::from_millis(1));
    let (_, results, elapsed) = one_tool_turn(tools).await;
    assert_eq!(elapsed, Duration::ZERO);
    assert_eq!(results, [("sunny".to_owned(), false)]);
}
