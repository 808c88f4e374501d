//! `agentic ask --mcp`: the model's tool calls, scripted by the chaos server, run on an MCP server
//! the command starts over stdio; the trace it writes is what `agentic grade` reads, the journal
//! what `agentic journal` reads.

mod common;

use agentic_chaos::{ChaosServer, Scenario, Step, TokenUsage};
use agentic_test_support::mcp::{read_record, server_binary};
use agentic_test_support::temp_file::TempFile;
use serde_json::json;

const FAST: [&str; 4] = ["--session-base-delay-ms", "2", "--exec-base-delay-ms", "2"];

/// `agentic ask` against `url` with the test MCP server recording its calls to `record`.
fn ask(url: &str, record: &std::path::Path, rest: &[&str]) -> common::Run {
    let server = format!("{} --record {}", server_binary().display(), record.display());
    let mut args = vec!["ask", "--base-url", url, "--mcp", &server];
    args.extend(FAST);
    args.extend(rest);
    common::agentic(&args, "")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_models_tool_calls_run_on_the_mcp_server_and_the_trace_grades() {
    let scenario = Scenario::new()
        .then(Step::tool_use("echo", json!({"text": "hi from mcp"})).call("hang", json!({})))
        .then(Step::http_error(503))
        .otherwise(Step::ok("done"));
    let chaos = ChaosServer::start(scenario).await.unwrap();
    let (record, trace, journal) = (TempFile::new("record"), TempFile::new("trace"), TempFile::new("journal"));
    let record_path = record.path().to_owned();
    let (trace_path, journal_path) = (trace.path().display().to_string(), journal.path().display().to_string());
    let url = chaos.openai_base_url();
    let run = tokio::task::spawn_blocking(move || {
        let flags = ["--tool-timeout-ms", "300", "--max-iterations", "3", "--trace", &trace_path];
        let flags = [&flags[..], &["--journal", &journal_path, "-v", "use the tools"]].concat();
        ask(&url, &record_path, &flags)
    })
    .await
    .unwrap();
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, "done\n");
    // `-v`: each call and result as it happens, and the retry of the 503.
    for line in [
        "tool call: echo {\"text\":\"hi from mcp\"} (MCP server `agentic-mcp-test-server`)",
        "tool result: echo → hi from mcp",
        "tool call: hang {} (MCP server `agentic-mcp-test-server`)",
        "tool error: hang → the tool `hang` on MCP server `agentic-mcp-test-server` did not answer within 0.3 s",
    ] {
        assert!(run.stderr.contains(line), "{line:?} not in:\n{}", run.stderr);
    }
    assert!(run.stderr.contains("503"), "{}", run.stderr);

    // Every request offered the server's tools; the server ran each call once.
    let offered = &chaos.journal()[0].tools;
    assert!(offered.iter().any(|tool| tool == "echo") && offered.iter().any(|tool| tool == "hang"), "{offered:?}");
    let mut calls: Vec<String> =
        read_record(record.path()).into_iter().filter(|event| event.starts_with("call ")).collect();
    calls.sort(); // the two calls of one turn run at once
    assert_eq!(calls, ["call echo", "call hang"]);

    let graded = common::agentic(&["grade", "--json", &trace.path().display().to_string()], "");
    assert_eq!(graded.code, 0, "{}", graded.stderr);
    let lines = graded.json_lines();
    assert_eq!(lines[0]["category"], "tool_error_unrecovered", "{lines:?}");
    assert_eq!((lines[0]["tool_calls"].as_u64(), lines[0]["tool_errors"].as_u64()), (Some(2), Some(1)));
    assert_eq!(lines[0]["unrecovered_tools"], json!(["hang"]));

    let journaled = common::agentic(&["journal", "--json", &journal.path().display().to_string()], "");
    assert_eq!(journaled.code, 0, "{}", journaled.stderr);
    assert!(journaled.stdout.contains("503"), "the retry of the 503 is in the journal: {}", journaled.stdout);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_the_model_is_not_offered_is_a_warning_and_the_others_are_offered() {
    let chaos = ChaosServer::start(Scenario::new().otherwise(Step::ok("done"))).await.unwrap();
    let record = TempFile::new("record");
    let (url, record_path) = (chaos.openai_base_url(), record.path().to_owned());
    let run = tokio::task::spawn_blocking(move || {
        let server = format!("{} --bad-tools --record {}", server_binary().display(), record_path.display());
        let mut args = vec!["ask", "--base-url", &url, "--mcp", &server];
        args.extend(FAST);
        args.push("use the tools");
        common::agentic(&args, "")
    })
    .await
    .unwrap();
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, "done\n");
    let huge = json!({"type": "object", "description": "s".repeat(70 * 1024)}).to_string().len();
    let server = "of MCP server `agentic-mcp-test-server`";
    for line in [
        format!(
            "warning: skipping the tool `huge_schema` {server}: its input schema is {huge} bytes, more than 65536 (`MCP_MAX_SCHEMA_BYTES`)"
        ),
        format!("warning: skipping the tool `no_schema` {server}: it has no `inputSchema`"),
        format!("warning: skipping the tool `string_schema` {server}: its `inputSchema` is a string, not an object"),
        format!(
            "warning: skipping the tool `bad name!` {server}: its name is not 1 to 64 ASCII letters, digits, `_` or `-`"
        ),
    ] {
        assert!(run.stderr.contains(&line), "{line:?} not in:\n{}", run.stderr);
    }
    let offered = &chaos.journal()[0].tools;
    assert!(offered.iter().any(|tool| tool == "echo"), "{offered:?}");
    for skipped in ["huge_schema", "no_schema", "string_schema", "bad name!"] {
        assert!(!offered.iter().any(|tool| tool == skipped), "{skipped} offered: {offered:?}");
    }
}

#[test]
fn a_bad_mcp_command_line_or_tool_flag_is_a_usage_error_naming_it() {
    let url = "http://127.0.0.1:9/v1"; // never called: the flags are refused first
    let cases: [(&[&str], &str); 4] = [
        (&["--mcp", ""], "--mcp: the command line is empty; name the server's program"),
        (&["--mcp", "server 'unclosed"], "unbalanced quotes"),
        (&["--mcp", "/no/such/mcp-server --flag"], "/no/such/mcp-server"),
        (&["--mcp", "x", "--tool-timeout-ms", "0"], "--tool-timeout-ms must be at least 1"),
    ];
    for (flags, message) in cases {
        let mut args = vec!["ask", "--base-url", url];
        args.extend(flags);
        args.push("hi");
        let run = common::agentic(&args, "");
        assert_eq!(run.code, 2, "{flags:?}: {}", run.stderr);
        assert!(run.stderr.contains(message), "{flags:?}: {message:?} not in {}", run.stderr);
        assert!(run.stdout.is_empty(), "{flags:?}: {}", run.stdout);
    }
}

/// The spend limits in a tool loop: `--max-tool-calls 1` runs none of a turn of two calls (the
/// model would be left with a turn half answered), and `--max-total-tokens` stops the call after a
/// tool turn before it is sent, when the first call's reported usage leaves less than its input.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_spend_limits_stop_a_tool_loop_before_the_step_that_would_pass_them() {
    let turn = || {
        Step::tool_use("echo", json!({"text": "one"}))
            .call("echo", json!({"text": "two"}))
            .usage(TokenUsage::new(980, 15))
    };
    let cases: [(&[&str], serde_json::Value, usize, usize); 2] = [
        (&["--max-tool-calls", "1"], json!({"limit": "max_tool_calls", "max": 1, "used": 0, "needed": 2}), 1, 0),
        (&["--max-total-tokens", "1000"], json!("max_total_tokens"), 1, 2),
    ];
    for (limit, stopped_by, requests, tool_calls) in cases {
        let chaos = ChaosServer::start(Scenario::new().then(turn()).otherwise(Step::ok("done"))).await.unwrap();
        let record = TempFile::new("record");
        let (url, record_path) = (chaos.openai_base_url(), record.path().to_owned());
        let run = tokio::task::spawn_blocking(move || {
            ask(&url, &record_path, &[limit, &["--json", "use the tools"]].concat())
        })
        .await
        .unwrap();
        assert_eq!(run.code, 1, "{limit:?}: {}", run.stderr);
        let outcome = run.json();
        assert_eq!(outcome["error_kind"], "usage_limit", "{outcome}");
        match stopped_by.as_str() {
            Some(name) => {
                assert_eq!(outcome["limit"]["limit"], name, "{outcome}");
                assert_eq!(outcome["limit"]["used"], 995, "{outcome}");
            }
            None => assert_eq!(outcome["limit"], stopped_by, "{outcome}"),
        }
        assert_eq!(chaos.journal().len(), requests, "{limit:?}: the call after the tool turn was sent");
        let ran = read_record(record.path()).into_iter().filter(|event| event.starts_with("call ")).count();
        assert_eq!(ran, tool_calls, "{limit:?}");
        assert_eq!(outcome["spent"]["tool_calls"], tool_calls, "{outcome}");
        assert_eq!(outcome["spent"]["total_tokens"], 995, "{outcome}");
    }
}
