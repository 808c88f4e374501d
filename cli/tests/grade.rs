//! `agentic grade`: the categories on hand-written traces (the unrecovered run of docs/design.md
//! §14 among them) and on a trace the runtime wrote, the plain and `--json` outputs, malformed
//! lines, exit codes.

use crate::common;

use agentic_test_support::temp_file::TempFile;

use agentic_runtime::message::{AssistantMessage, ContentBlock, StopReason};
use agentic_runtime::observe::trace::TraceSink;
use agentic_runtime::tool::{ToolError, Toolbox};
use common::agentic;
use serde_json::{Value, json};

fn event(run: &str, event: &str, ts_ms: u64, rest: Value) -> String {
    let mut line = json!({"event": event, "ts_ms": ts_ms, "run_id": run});
    for (key, value) in rest.as_object().unwrap() {
        line[key] = value.clone();
    }
    line.to_string()
}

fn call(run: &str, ts_ms: u64, id: &str, tool: &str) -> String {
    event(run, "tool_call", ts_ms, json!({"tool": tool, "arguments": {"customer_id": 7}, "call_id": id}))
}

fn result(run: &str, ts_ms: u64, id: &str, is_error: bool, content: &str) -> String {
    event(run, "tool_result", ts_ms, json!({"call_id": id, "is_error": is_error, "content": content}))
}

fn start(run: &str) -> String {
    event(run, "agent_start", 0, json!({"function": "support_agent"}))
}

fn finish(run: &str, ts_ms: u64, iterations: u32) -> String {
    event(run, "agent_finish", ts_ms, json!({"final_text": "done", "iterations": iterations}))
}

/// The unrecovered run of docs/design.md §14 (two tool errors, then the model gives up), a
/// recovered run, a clean run, and a run whose layers gave up.
fn four_runs() -> String {
    [
        // Two failed calls of one tool 3 s apart (the model's thinking, no sleep), then the final text.
        start("seed-80"),
        call("seed-80", 1000, "toolu_1", "lookup_customer"),
        result("seed-80", 1001, "toolu_1", true, "MockCustomerAPI.InternalServerError: 500"),
        call("seed-80", 4000, "toolu_2", "lookup_customer"),
        result("seed-80", 4001, "toolu_2", true, "MockCustomerAPI.InternalServerError: 500"),
        finish("seed-80", 7000, 3),
        // An error, then a success of the same tool.
        start("recovered"),
        call("recovered", 10, "c1", "get_weather"),
        result("recovered", 10, "c1", true, "RateLimitError: 429"),
        call("recovered", 3010, "c2", "get_weather"),
        result("recovered", 3010, "c2", false, "sunny"),
        finish("recovered", 6000, 3),
        // No tool errors.
        start("clean"),
        call("clean", 5, "c1", "get_time"),
        result("clean", 5, "c1", false, "12:00"),
        finish("clean", 9, 2),
        // The layers gave up: no agent_finish.
        start("gave-up"),
    ]
    .join("\n")
        + "\n"
}

#[test]
fn the_plain_output_has_one_line_per_run_and_the_totals() {
    let trace = TempFile::with_contents("plain", &four_runs());
    let run = agentic(&["grade", trace.arg()], "");
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stderr, "");
    assert_eq!(
        run.stdout,
        "\
seed-80    tool_error_unrecovered  support_agent  (2 tool calls, 2 errors, 3 iterations; unrecovered: lookup_customer)
recovered  tool_error_recovered    support_agent  (2 tool calls, 1 error, 3 iterations)
clean      clean                   support_agent  (1 tool call, 0 errors, 2 iterations)
gave-up    incomplete              support_agent  (0 tool calls, 0 errors)
total: 4 runs: 1 clean, 1 tool_error_recovered, 1 tool_error_unrecovered, 1 incomplete, 0 unreadable
"
    );
}

#[test]
fn json_prints_one_object_per_run_then_the_totals() {
    let trace = TempFile::with_contents("json", &four_runs());
    let run = agentic(&["grade", "--json", trace.arg()], "");
    assert_eq!(run.code, 0, "{run:?}");
    let lines = run.json_lines();
    assert_eq!(lines.len(), 5);
    assert_eq!(
        lines[0],
        json!({
            "run_id": "seed-80",
            "file": trace.arg(),
            "function": "support_agent",
            "category": "tool_error_unrecovered",
            "tool_calls": 2,
            "tool_errors": 2,
            "unrecovered_tools": ["lookup_customer"],
            "iterations": 3,
            "skipped_lines": 0,
        })
    );
    let categories: Vec<&str> = lines[..4].iter().map(|line| line["category"].as_str().unwrap()).collect();
    assert_eq!(categories, ["tool_error_unrecovered", "tool_error_recovered", "clean", "incomplete"]);
    assert_eq!(lines[3]["iterations"], Value::Null);
    assert_eq!(
        lines[4],
        json!({"totals": {
            "runs": 4,
            "clean": 1,
            "tool_error_recovered": 1,
            "tool_error_unrecovered": 1,
            "incomplete": 1,
            "unreadable": 0,
            "malformed_lines": 0,
        }})
    );
    assert!(run.stdout.starts_with("{\"run_id\":\"seed-80\",\"file\":"), "fields keep their order: {}", run.stdout);
}

#[test]
fn malformed_lines_are_reported_with_file_and_line_skipped_and_exit_1() {
    let text = [
        start("r"),
        "{not json".to_owned(),
        String::new(),
        event("r", "tool_call", 1, json!({"call_id": "c1"})),
        event("r", "llm_retry", 1, json!({})),
        call("r", 2, "c1", "t"),
        result("r", 3, "c1", true, "boom"),
        finish("r", 4, 2),
    ]
    .join("\n");
    let trace = TempFile::with_contents("malformed", &text);
    let run = agentic(&["grade", "--json", trace.arg()], "");
    assert_eq!(run.code, 1, "{run:?}");
    let warnings: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(warnings.len(), 3, "{}", run.stderr);
    assert!(warnings[0].starts_with(&format!("warning: {}:2: not JSON: ", trace.arg())), "{}", warnings[0]);
    assert_eq!(warnings[1], format!("warning: {}:4: no `tool`", trace.arg()));
    assert!(warnings[2].starts_with(&format!("warning: {}:5: unknown event `llm_retry`", trace.arg())));
    let lines = run.json_lines();
    // The skipped lines may have been its own: the run cannot be graded.
    assert_eq!((&lines[0]["category"], &lines[0]["skipped_lines"]), (&json!("unreadable"), &json!(3)));
    assert_eq!(lines[1]["totals"]["malformed_lines"], 3);

    let plain = agentic(&["grade", trace.arg()], "");
    assert_eq!(plain.code, 1);
    assert!(
        plain.stdout.contains("(1 tool call, 1 error, 2 iterations, 3 skipped lines; unrecovered: t)"),
        "{}",
        plain.stdout
    );
    assert!(plain.stdout.ends_with("0 incomplete, 1 unreadable; 3 malformed lines skipped\n"), "{}", plain.stdout);
}

#[test]
fn an_unreadable_file_exits_2_and_prints_nothing() {
    let trace = TempFile::with_contents("readable", &four_runs());
    let missing = std::env::temp_dir().join("agentic-cli-grade-no-such-file.jsonl");
    let run = agentic(&["grade", trace.arg(), missing.to_str().unwrap()], "");
    assert_eq!(run.code, 2, "{run:?}");
    assert_eq!(run.stdout, "");
    assert!(run.stderr.starts_with(&format!("error: cannot read `{}`: ", missing.display())), "{}", run.stderr);
    let no_files = agentic(&["grade"], "");
    assert_eq!(no_files.code, 2);
}

#[test]
fn a_run_may_span_files_and_stdin_is_dash() {
    let first = TempFile::with_contents(
        "span-1",
        &[start("r"), call("r", 1, "c1", "t"), result("r", 1, "c1", true, "x")].join("\n"),
    );
    let run = agentic(
        &["grade", "--json", first.arg(), "-"],
        [call("r", 2, "c2", "t"), result("r", 2, "c2", false, "ok"), finish("r", 3, 3)].join("\n"),
    );
    assert_eq!(run.code, 0, "{run:?}");
    let lines = run.json_lines();
    assert_eq!(lines[0]["category"], "tool_error_recovered");
    assert_eq!(lines[0]["file"], first.arg());
    assert_eq!(lines[0]["tool_calls"], 2);

    let empty = agentic(&["grade", "-"], "");
    assert_eq!(
        (empty.code, empty.stdout.as_str()),
        (0, "total: 0 runs: 0 clean, 0 tool_error_recovered, 0 tool_error_unrecovered, 0 incomplete, 0 unreadable\n")
    );
}

#[test]
fn a_trace_the_runtime_wrote_is_graded() {
    let path = std::env::temp_dir().join(format!("agentic-cli-grade-{}-runtime.jsonl", std::process::id()));
    let _cleanup = TempFile(path.clone());
    let sink = TraceSink::to_file(&path).unwrap();
    let toolbox = Toolbox::new().with_fn("flaky", "Fails once.", json!(null), {
        let failed = std::sync::atomic::AtomicBool::new(false);
        let failed = std::sync::Arc::new(failed);
        move |_| {
            let failed = std::sync::Arc::clone(&failed);
            async move {
                if failed.swap(true, std::sync::atomic::Ordering::SeqCst) {
                    Ok("worked".to_owned())
                } else {
                    Err(ToolError::new("RateLimitError: 429"))
                }
            }
        }
    });
    let turn = |id: &str| {
        let mut message = AssistantMessage::text("");
        message.content = vec![ContentBlock::ToolUse { id: id.into(), name: "flaky".into(), input: json!({}) }];
        message.stop_reason = StopReason::ToolUse;
        message
    };
    let tokio = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let (recovered, unrecovered, incomplete) = tokio.block_on(async {
        let recovered = sink.start_run(Some("weather"));
        toolbox.run_calls_traced(&turn("call_1"), Some(&recovered)).await;
        toolbox.run_calls_traced(&turn("call_2"), Some(&recovered)).await;
        recovered.agent_finish("It worked.", 3);
        let unrecovered = sink.start_run(None);
        let outcomes = toolbox.run_calls_traced(&turn("call_1"), Some(&unrecovered)).await;
        assert!(!outcomes[0].is_error, "the flaky tool works by now");
        let mut unknown = turn("call_2");
        unknown.content = vec![ContentBlock::ToolUse { id: "call_2".into(), name: "missing".into(), input: json!({}) }];
        let outcomes = toolbox.run_calls_traced(&unknown, Some(&unrecovered)).await;
        assert_eq!(outcomes[0].content, "unknown tool `missing`; the tools are `flaky`");
        unrecovered.agent_finish("I could not.", 3);
        let incomplete = sink.start_run(Some("weather"));
        (recovered.run_id().to_owned(), unrecovered.run_id().to_owned(), incomplete.run_id().to_owned())
    });
    let run = agentic(&["grade", "--json", path.to_str().unwrap()], "");
    assert_eq!(run.code, 0, "{run:?}");
    let lines = run.json_lines();
    let got: Vec<(&str, &str)> =
        lines[..3].iter().map(|line| (line["run_id"].as_str().unwrap(), line["category"].as_str().unwrap())).collect();
    assert_eq!(
        got,
        [
            (recovered.as_str(), "tool_error_recovered"),
            (unrecovered.as_str(), "tool_error_unrecovered"),
            (incomplete.as_str(), "incomplete"),
        ]
    );
    assert_eq!(lines[1]["unrecovered_tools"], json!(["missing"]));
}

#[test]
fn an_over_long_failed_result_makes_its_run_unreadable_not_clean() {
    // Another writer's 1.3 MiB failed tool result: the grader cannot read the line, and says so.
    let content = "x".repeat(1_300_000);
    let text = [
        start("big"),
        call("big", 1, "c1", "query"),
        result("big", 2, "c1", true, &content),
        finish("big", 3, 2),
        start("small"),
        finish("small", 4, 1),
    ]
    .join("\n");
    let trace = TempFile::with_contents("over-long", &text);
    let run = agentic(&["grade", trace.arg()], "");
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(
        run.stderr,
        format!("warning: {}:3: longer than 1 MiB (the limit for one line); it was skipped\n", trace.arg())
    );
    assert_eq!(
        run.stdout,
        "\
big    unreadable              support_agent  (1 tool call, 0 errors, 2 iterations, 1 skipped line)
small  clean                   support_agent  (0 tool calls, 0 errors, 1 iteration)
total: 2 runs: 1 clean, 0 tool_error_recovered, 0 tool_error_unrecovered, 0 incomplete, 1 unreadable; 1 malformed line skipped
"
    );
}

#[test]
fn a_runtime_trace_with_a_huge_failed_result_is_graded_a_failure() {
    // The runtime's own trace of the same failure: its line is cut to what the grader reads.
    let path = std::env::temp_dir().join(format!("agentic-cli-grade-{}-huge.jsonl", std::process::id()));
    let _cleanup = TempFile(path.clone());
    let sink = TraceSink::to_file(&path).unwrap();
    let run = sink.start_run_with_id("huge", None);
    run.tool_call("c1", "query", &json!({}));
    run.tool_result("c1", "query", true, &"\"".repeat(1_300_000));
    run.agent_finish("The query failed.", 2);
    let graded = agentic(&["grade", path.to_str().unwrap()], "");
    assert_eq!(graded.code, 0, "{graded:?}");
    assert_eq!(graded.stderr, "");
    assert!(
        graded
            .stdout
            .starts_with("huge  tool_error_unrecovered  -  (1 tool call, 1 error, 2 iterations; unrecovered: query)\n"),
        "{}",
        graded.stdout
    );
}
