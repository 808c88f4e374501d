//! MCP tools in an exec's tool loop: the model (a script) calls them, the trace records each call
//! and result (a tool error among them, for the model to read), and no infrastructure retry is
//! ever made.

use std::time::Duration;

use agentic_mcp::{MCP_MAX_MESSAGE_BYTES, McpToolbox};
use agentic_runtime::observe::trace::{TraceEvent, TraceSink};
use agentic_runtime::tool::Toolbox;
use agentic_runtime::{Reply, Runtime, Scripted, ScriptedProvider};
use agentic_test_support::written::trace_outline;
use serde_json::json;

use crate::common::{Connected, both_transports};

/// One run's outcome: the reply, its tool results `(tool, is_error, content)` from the trace, the
/// trace's outline and run id, and what the model was offered at each turn.
struct Run {
    reply: Reply,
    results: Vec<(String, bool, String)>,
    calls: Vec<String>,
    outline: Vec<String>,
    run_id: String,
    offered: Vec<Vec<String>>,
}

async fn run(mcp: &McpToolbox, timeout: Duration, steps: Vec<Scripted>) -> Run {
    let provider = ScriptedProvider::new(steps);
    let sink = TraceSink::in_memory();
    let toolbox = Toolbox::new().with_source(mcp.clone()).with_timeout(timeout);
    let runtime = Runtime::builder(provider.clone()).with_tools(toolbox).with_trace(sink.clone()).build().unwrap();
    let reply = runtime.exec("use the tools").await.expect("the run ends with the model's answer");
    let contents = sink.contents().expect("an in-memory sink");
    let events = TraceEvent::parse_all(&contents).expect("the trace parses");
    let run_id = events[0].run_id().to_owned();
    let mut calls = Vec::new();
    let mut results = Vec::new();
    for event in events {
        match event {
            TraceEvent::ToolCall { tool, .. } => calls.push(tool),
            TraceEvent::ToolResult { tool, is_error, content, .. } => {
                results.push((tool.unwrap_or_default(), is_error, content));
            }
            _ => {}
        }
    }
    let offered = provider.requests().into_iter().map(|request| request.tools).collect();
    assert!(reply.decisions().is_empty(), "no infrastructure retry: {:?}", reply.decisions());
    Run { reply, results, calls, outline: trace_outline(&contents), run_id, offered }
}

fn result(tool: &str, is_error: bool, content: &str) -> (String, bool, String) {
    (tool.to_owned(), is_error, content.to_owned())
}

const LONG: Duration = Duration::from_secs(30);

both_transports!(
    a_working_call_is_a_clean_run,
    an_is_error_result_is_a_tool_error_the_model_reads,
    a_protocol_error_then_a_good_call_is_recovered,
    a_hung_call_is_cut_by_the_toolbox_timeout_and_cancelled,
    a_new_tool_is_offered_from_the_next_turn,
    the_idempotency_key_is_the_runs,
    an_answer_over_the_message_bound_reads_as_too_large,
);

async fn a_working_call_is_a_clean_run(server: Connected) {
    let steps = vec![Scripted::tool_call("echo", json!({"text": "hello"})), Scripted::ok("it said hello")];
    let run = run(&server.toolbox, LONG, steps).await;
    assert_eq!(run.reply.text(), "it said hello");
    assert_eq!(run.calls, ["echo"]);
    assert_eq!(run.results, [result("echo", false, "hello")]);
    assert_eq!(run.outline, ["agent_start", "tool_call echo", "tool_result echo ok", "agent_finish"]);
    assert!(run.offered[0].contains(&"echo".to_owned()) && !run.offered[0].contains(&"bad name!".to_owned()));
}

async fn an_is_error_result_is_a_tool_error_the_model_reads(server: Connected) {
    let steps = vec![Scripted::tool_call("fail", json!({})), Scripted::ok("the disk is full, sorry")];
    let run = run(&server.toolbox, LONG, steps).await;
    assert_eq!(run.results, [result("fail", true, "the disk is full")]);
    assert_eq!(run.outline, ["agent_start", "tool_call fail", "tool_result fail error", "agent_finish"]);
}

async fn a_protocol_error_then_a_good_call_is_recovered(server: Connected) {
    let steps = vec![
        Scripted::tool_call("strict", json!({"n": 0})),
        Scripted::tool_call("strict", json!({"n": 3})),
        Scripted::ok("3"),
    ];
    let run = run(&server.toolbox, LONG, steps).await;
    let refused = "the MCP server `files` refused the call: `n` must be a positive integer (-32602)";
    assert_eq!(run.results, [result("strict", true, refused), result("strict", false, "3")]);
    assert_eq!(
        run.outline,
        [
            "agent_start",
            "tool_call strict",
            "tool_result strict error",
            "tool_call strict",
            "tool_result strict ok",
            "agent_finish"
        ]
    );
    assert_eq!(server.count("call strict"), 2);
}

// The toolbox's tool timeout is the request's. It runs out on the wall clock (a real process or
// socket), so it is short; `cancelled` gets it too, and answers at once once the cancel arrived.
async fn a_hung_call_is_cut_by_the_toolbox_timeout_and_cancelled(server: Connected) {
    let steps = vec![
        Scripted::tool_call("hang", json!({})),
        Scripted::tool_call("cancelled", json!({"at_least": 1})),
        Scripted::ok("it hung"),
    ];
    let run = run(&server.toolbox, Duration::from_secs(1), steps).await;
    let cut = "the tool `hang` on MCP server `files` did not answer within 1 s; the call was cancelled";
    assert_eq!(run.results, [result("hang", true, cut), result("cancelled", false, "1")]);
    assert_eq!(
        run.outline,
        [
            "agent_start",
            "tool_call hang",
            "tool_result hang error",
            "tool_call cancelled",
            "tool_result cancelled ok",
            "agent_finish"
        ]
    );
}

async fn a_new_tool_is_offered_from_the_next_turn(server: Connected) {
    let steps = vec![
        Scripted::tool_call("add_tool", json!({"name": "lookup"})),
        Scripted::tool_call("lookup", json!({"text": "found"})),
        Scripted::ok("found it"),
    ];
    let run = run(&server.toolbox, LONG, steps).await;
    assert!(!run.offered[0].contains(&"lookup".to_owned()));
    assert_eq!(run.offered[1].last().map(String::as_str), Some("lookup"));
    assert_eq!(run.results, [result("add_tool", false, "added `lookup`"), result("lookup", false, "found")]);
    assert_eq!(
        run.outline,
        [
            "agent_start",
            "tool_call add_tool",
            "tool_result add_tool ok",
            "tool_call lookup",
            "tool_result lookup ok",
            "agent_finish"
        ]
    );
}

async fn the_idempotency_key_is_the_runs(server: Connected) {
    let steps = vec![Scripted::tool_call("side_effect", json!({})), Scripted::ok("done")];
    let run = run(&server.toolbox, LONG, steps).await;
    let key = format!("{}/1/call_1", run.run_id);
    assert_eq!(run.results, [result("side_effect", false, &key)]);
    assert_eq!(server.count(&format!("key {key}")), 1);
}

async fn an_answer_over_the_message_bound_reads_as_too_large(server: Connected) {
    let steps = vec![Scripted::tool_call("big", json!({"bytes": MCP_MAX_MESSAGE_BYTES})), Scripted::ok("too much")];
    let run = run(&server.toolbox, Duration::from_secs(10), steps).await;
    let too_large = "the tool `big` on MCP server `files` answered, but the server's answer was larger than 16 MiB, the \
                     limit for one message, so it was dropped; ask for less at a time";
    assert_eq!(run.results, [result("big", true, too_large)]);
}

#[tokio::test]
async fn a_server_that_exits_mid_call_is_not_replayed_and_the_model_is_told() {
    let server = Connected::stdio(&[]).await;
    let steps = vec![
        Scripted::tool_call("exit", json!({})),
        Scripted::tool_call("echo", json!({"text": "still there?"})),
        Scripted::ok("the server is gone"),
    ];
    let run = run(&server.toolbox, LONG, steps).await;
    let closed = "the connection to MCP server `files` closed while `exit` was running (the server exited with status \
                  3): it may or may not have taken effect; check before calling it again";
    let gone = "the MCP server `files` is not running (its process exited with status 3), so `echo` was not called; \
                its tools stay unavailable until the program connects to it again";
    assert_eq!(run.results, [result("exit", true, closed), result("echo", true, gone)]);
    assert_eq!(server.count("call exit"), 1);
    assert_eq!(
        run.outline,
        [
            "agent_start",
            "tool_call exit",
            "tool_result exit error",
            "tool_call echo",
            "tool_result echo error",
            "agent_finish"
        ]
    );
}

#[tokio::test]
async fn an_expired_session_is_renewed_within_the_run() {
    let server = Connected::http(Default::default()).await;
    let http = server.http_server().expect("an HTTP server");
    assert_eq!(http.expire_sessions().await, 1);
    let steps = vec![Scripted::tool_call("echo", json!({"text": "again"})), Scripted::ok("done")];
    let run = run(&server.toolbox, LONG, steps).await;
    assert_eq!(run.results, [result("echo", false, "again")]);
    assert_eq!((server.count("initialize"), server.count("call echo")), (2, 1));
    assert_eq!(run.outline, ["agent_start", "tool_call echo", "tool_result echo ok", "agent_finish"]);
}
