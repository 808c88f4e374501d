//! The bounds of the tool loop (docs/design.md §13): how many calls of one turn run and how many at once,
//! how much of a result the model and the trace get, and the messages for what is refused. The
//! ScriptedProvider on a paused clock; every call the model made gets a result, in its order.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agentic_runtime::message::ContentBlock;
use agentic_runtime::message::Message;
use agentic_runtime::observe::trace::{MAX_LINE_BYTES, TraceSink};
use agentic_runtime::{Runtime, Scripted, ScriptedProvider, ToolError, Toolbox};
use agentic_test_support::written::trace_outline;
use serde_json::json;

/// How many calls are running, the most that ever ran at once, and how many ran in all.
#[derive(Default)]
struct Gauge {
    now: AtomicUsize,
    high: AtomicUsize,
    ran: AtomicUsize,
}

/// `work` takes a second (of the paused clock) and answers `done N`, counting in `gauge`.
fn counted(gauge: &Arc<Gauge>) -> Toolbox {
    let gauge = Arc::clone(gauge);
    Toolbox::new().with_fn(
        "work",
        "Works for a second.",
        json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
        move |input| {
            let gauge = Arc::clone(&gauge);
            async move {
                let now = gauge.now.fetch_add(1, Ordering::SeqCst) + 1;
                gauge.high.fetch_max(now, Ordering::SeqCst);
                gauge.ran.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_secs(1)).await;
                gauge.now.fetch_sub(1, Ordering::SeqCst);
                Ok(format!("done {}", input["n"]))
            }
        },
    )
}

/// The ids of the calls of an assistant message and the (id, text, is_error) of a results message.
fn call_ids(message: &Message) -> Vec<String> {
    let Message::Assistant(message) = message else { panic!("{message:?}") };
    message
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::ToolUse { id, .. } => Some(id.clone()),
            _ => None,
        })
        .collect()
}

fn results(message: &Message) -> Vec<(String, String, bool)> {
    let Message::User { content } = message else { panic!("{message:?}") };
    content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::ToolResult { tool_use_id, content, is_error } => {
                Some((tool_use_id.clone(), content.clone(), *is_error))
            }
            _ => None,
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn ten_thousand_calls_in_one_turn_run_128_ten_at_a_time_and_every_call_is_answered() {
    let gauge = Arc::new(Gauge::default());
    let provider = ScriptedProvider::new([
        Scripted::tool_calls((0..10_000).map(|n| ("work", json!({"n": n})))),
        Scripted::ok("Done with what ran."),
    ]);
    let runtime = Runtime::builder(provider.clone()).with_tools(counted(&gauge)).build().unwrap();
    let reply = runtime.exec("Do everything.").await.unwrap();
    assert_eq!(reply.text(), "Done with what ran.");
    assert_eq!(provider.calls(), 2, "one model call per turn");
    assert_eq!(gauge.ran.load(Ordering::SeqCst), 128, "the first 128 calls ran");
    assert_eq!(gauge.high.load(Ordering::SeqCst), 10, "ten at a time");

    let sent = &provider.requests()[1].messages;
    let ids = call_ids(&sent[sent.len() - 2]);
    let results = results(&sent[sent.len() - 1]);
    assert_eq!(results.len(), 10_000, "a result for every call");
    let answered: Vec<&String> = results.iter().map(|(id, _, _)| id).collect();
    assert_eq!(answered, ids.iter().collect::<Vec<_>>(), "in the model's order");
    assert_eq!((results[0].1.as_str(), results[0].2), ("done 0", false));
    assert_eq!((results[127].1.as_str(), results[127].2), ("done 127", false));
    let refused = "not run: this turn asked for 10000 tool calls and a turn runs at most 128, the first 128; \
                   ask for at most 128 calls per turn, the most useful first";
    assert!(results[128..].iter().all(|(_, text, is_error)| text == refused && *is_error), "{:?}", results[128]);
}

#[tokio::test(start_paused = true)]
async fn both_caps_are_the_toolboxs_to_set() {
    let gauge = Arc::new(Gauge::default());
    let provider =
        ScriptedProvider::new([Scripted::tool_calls((0..5).map(|n| ("work", json!({"n": n})))), Scripted::ok("ok")]);
    let tools = counted(&gauge).with_max_calls_per_turn(3).with_max_concurrent_calls(1);
    let runtime = Runtime::builder(provider.clone()).with_tools(tools).build().unwrap();
    runtime.exec("Do five things.").await.unwrap();
    assert_eq!((gauge.ran.load(Ordering::SeqCst), gauge.high.load(Ordering::SeqCst)), (3, 1));
    let sent = &provider.requests()[1].messages;
    let texts: Vec<(String, bool)> =
        results(sent.last().unwrap()).into_iter().map(|(_, text, is_error)| (text, is_error)).collect();
    let refused = "not run: this turn asked for 5 tool calls and a turn runs at most 3, the first 3; \
                   ask for at most 3 calls per turn, the most useful first"
        .to_owned();
    assert_eq!(
        texts,
        [
            ("done 0".to_owned(), false),
            ("done 1".to_owned(), false),
            ("done 2".to_owned(), false),
            (refused.clone(), true),
            (refused, true),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_huge_result_reaches_the_model_and_the_trace_cut_with_a_note() {
    const HUGE: usize = 8 * 1024 * 1024;
    let tools = Toolbox::new().with_fn("dump", "Dumps a table.", json!(null), |_| async { Ok("é".repeat(HUGE / 2)) });
    let provider = ScriptedProvider::new([Scripted::tool_call("dump", json!({})), Scripted::ok("Too big to read.")]);
    let sink = TraceSink::in_memory();
    let runtime = Runtime::builder(provider.clone()).with_tools(tools).with_trace(sink.clone()).build().unwrap();
    runtime.exec("Dump it.").await.unwrap();
    let sent = results(provider.requests()[1].messages.last().unwrap());
    let (_, text, is_error) = &sent[0];
    assert!(!is_error);
    assert!(text.len() <= 256 * 1024, "{}", text.len());
    let shown = text.rfind('\n').unwrap();
    assert!(shown >= 256 * 1024 - 120 && text[..shown].chars().all(|char| char == 'é'), "cut on a char boundary");
    let note = format!("\n[the tool result was cut here: {} of its {HUGE} bytes are not shown]", HUGE - shown);
    assert_eq!(&text[shown..], note);
    let trace = sink.contents().unwrap();
    assert!(trace.lines().all(|line| line.len() <= MAX_LINE_BYTES));
    assert_eq!(trace_outline(&trace), ["agent_start", "tool_call dump", "tool_result dump ok", "agent_finish"]);
}

#[tokio::test(start_paused = true)]
async fn a_failed_result_too_long_for_a_trace_line_still_reads_as_a_failure() {
    // 1.3 MiB of quotes, 2.6 MiB once escaped: the toolbox sends it whole (its bound raised), the
    // trace line is cut to what the readers read (`agentic grade`), and it still says the tool failed.
    let tools = Toolbox::new()
        .with_fn("query", "Runs a query.", json!(null), |_| async { Err(ToolError::new("\"".repeat(1_300_000))) })
        .with_max_result_bytes(usize::MAX);
    let provider = ScriptedProvider::new([Scripted::tool_call("query", json!({})), Scripted::ok("The query failed.")]);
    let sink = TraceSink::in_memory();
    let runtime = Runtime::builder(provider.clone()).with_tools(tools).with_trace(sink.clone()).build().unwrap();
    runtime.exec("Query.").await.unwrap();
    assert_eq!(results(provider.requests()[1].messages.last().unwrap())[0].1.len(), 1_300_000);
    let trace = sink.contents().unwrap();
    assert!(trace.lines().all(|line| line.len() <= MAX_LINE_BYTES));
    assert_eq!(trace_outline(&trace), ["agent_start", "tool_call query", "tool_result query error", "agent_finish"]);
}

#[tokio::test(start_paused = true)]
async fn a_megabyte_unknown_name_and_string_arguments_get_short_clear_messages() {
    let tools = Toolbox::new().with_fn(
        "get_weather",
        "The weather in a city.",
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        |_| async { Ok("sunny".to_owned()) },
    );
    let name = "x".repeat(1024 * 1024);
    let provider = ScriptedProvider::new([
        Scripted::tool_calls([(name.as_str(), json!({})), ("get_weather", json!("Paris")), ("get_weather", json!(42))]),
        Scripted::ok("ok"),
    ]);
    let runtime = Runtime::builder(provider.clone()).with_tools(tools).build().unwrap();
    runtime.exec("Weather?").await.unwrap();
    let texts: Vec<(String, bool)> = results(provider.requests()[1].messages.last().unwrap())
        .into_iter()
        .map(|(_, text, is_error)| (text, is_error))
        .collect();
    let x64 = "x".repeat(64);
    assert_eq!(
        texts,
        [
            (format!("unknown tool `{x64}…`; the tools are `get_weather`"), true),
            (
                "invalid arguments for `get_weather`: the arguments must be a JSON object, not a string: `Paris`"
                    .to_owned(),
                true
            ),
            (
                "invalid arguments for `get_weather`: the arguments must be a JSON object, not an integer".to_owned(),
                true
            ),
        ]
    );
}
