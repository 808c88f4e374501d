//! `Runtime::exec_stream` with the scripted provider on paused time: the rewind contract, the three
//! modes after a commit, tool calls and results, fallback, backpressure and cancellation
//! (docs/design.md §22).

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::{Context, Poll};

use agentic_runtime::decision::Verdict;
use agentic_runtime::exec::{ExecEvent, ExecStream, StreamMode};
use agentic_runtime::policy::Jitter;
use agentic_runtime::provider::{EventStream, Provider, Request, StreamEvent};
use agentic_runtime::storm::Refusal;
use agentic_runtime::{ExecError, ExecErrorKind, Reply, RetryPolicy, Runtime, Scripted, ScriptedProvider, Toolbox};
use futures_util::StreamExt as _;
use serde_json::json;

/// What a consumer that keeps the contract sees: each turn's text, rewinds applied.
#[derive(Debug, Default)]
struct Seen {
    /// The text of each turn, the last being the current one.
    turns: Vec<String>,
    rewinds: Vec<(u32, String, Option<String>)>,
    decisions: usize,
    tool_calls: Vec<String>,
    tool_results: Vec<String>,
    done: Option<Result<Reply, ExecError>>,
    /// Every event's name, in order.
    order: Vec<&'static str>,
}

impl Seen {
    fn text(&self) -> &str {
        self.turns.last().map_or("", String::as_str)
    }
}

async fn consume(mut stream: ExecStream<'_>) -> Seen {
    let mut seen = Seen { turns: vec![String::new()], ..Seen::default() };
    while let Some(event) = stream.next().await {
        assert!(seen.done.is_none(), "an event after Done: {event:?}");
        match event {
            ExecEvent::TextDelta(text) => {
                seen.order.push("text");
                seen.turns.last_mut().unwrap().push_str(&text);
            }
            ExecEvent::ReasoningDelta(_) => seen.order.push("reasoning"),
            ExecEvent::Rewind { attempt, error, target, .. } => {
                seen.order.push("rewind");
                seen.turns.last_mut().unwrap().clear();
                seen.rewinds.push((attempt, error, target));
            }
            ExecEvent::Decision(_) => {
                seen.order.push("decision");
                seen.decisions += 1;
            }
            ExecEvent::ToolCall { id, .. } => {
                seen.order.push("tool_call");
                seen.tool_calls.push(id);
            }
            ExecEvent::ToolResult { id, .. } => {
                seen.order.push("tool_result");
                seen.tool_results.push(id);
                if seen.tool_results.len() == seen.tool_calls.len() {
                    seen.turns.push(String::new());
                }
            }
            ExecEvent::Done(result) => {
                seen.order.push("done");
                seen.done = Some(result);
            }
            other => panic!("an event this test does not know: {other:?}"),
        }
    }
    assert!(seen.done.is_some(), "the stream ended without Done");
    seen
}

fn exact() -> RetryPolicy {
    RetryPolicy::new().with_jitter(Jitter::None)
}

#[tokio::test(start_paused = true)]
async fn a_call_that_drops_after_showing_text_is_rewound_and_replayed() {
    let provider =
        ScriptedProvider::new([Scripted::cut("Hello, wor").in_chunks(3), Scripted::ok("Hello, world!").in_chunks(4)]);
    let runtime = Runtime::builder(provider.clone()).with_policy(exact()).build().unwrap();
    let seen = consume(runtime.exec_stream("Say hello.")).await;
    let reply = seen.done.as_ref().unwrap().as_ref().unwrap();
    assert_eq!(seen.text(), reply.text());
    assert_eq!(reply.text(), "Hello, world!");
    assert_eq!(provider.calls(), 2);
    assert_eq!(seen.rewinds.len(), 1, "{:?}", seen.order);
    let (attempt, error, target) = &seen.rewinds[0];
    assert_eq!((*attempt, target.as_deref()), (1, None));
    assert!(error.starts_with("StreamDroppedError"), "{error}");
    // The failed call's three deltas, its retry decision, the rewind, the answer's four deltas.
    assert_eq!(seen.order, ["text", "text", "text", "decision", "rewind", "text", "text", "text", "text", "done"]);
    assert_eq!(seen.decisions, reply.decisions().len());
}

#[tokio::test(start_paused = true)]
async fn a_failure_before_the_first_delta_is_invisible() {
    let provider = ScriptedProvider::new([Scripted::http(503, "overloaded"), Scripted::ok("fine")]);
    let seen = consume(Runtime::new(provider.clone()).exec_stream("hi")).await;
    assert!(seen.rewinds.is_empty(), "{:?}", seen.order);
    assert_eq!(seen.order, ["decision", "text", "done"]);
    assert_eq!(seen.done.unwrap().unwrap().text(), "fine");
}

#[tokio::test(start_paused = true)]
async fn the_stream_ends_with_what_exec_returns() {
    let script =
        || [Scripted::cut("par").in_chunks(2), Scripted::http(429, "slow down"), Scripted::ok("partial answer")];
    let streamed = ScriptedProvider::new(script());
    let plain = ScriptedProvider::new(script());
    let seen = consume(Runtime::builder(streamed.clone()).with_policy(exact()).build().unwrap().exec_stream("q")).await;
    let reply = Runtime::builder(plain.clone()).with_policy(exact()).build().unwrap().exec("q").await.unwrap();
    let streamed_reply = seen.done.unwrap().unwrap();
    assert_eq!(streamed_reply.text(), reply.text());
    assert_eq!(streamed_reply.calls(), reply.calls());
    assert_eq!(streamed_reply.decisions().len(), reply.decisions().len());
    assert_eq!(streamed.requests(), plain.requests(), "the same requests as exec");
}

#[tokio::test(start_paused = true)]
async fn buffer_mode_shows_only_the_accepted_turn() {
    let provider = ScriptedProvider::new([Scripted::cut("Hel").in_chunks(3), Scripted::ok("Hello!").in_chunks(3)]);
    let runtime = Runtime::new(provider.clone());
    let seen = consume(runtime.request("hi").stream_mode(StreamMode::Buffer).stream()).await;
    assert!(seen.rewinds.is_empty());
    assert_eq!(seen.order, ["decision", "text", "done"], "the turn in one piece, after its decision");
    assert_eq!(seen.text(), "Hello!");
    assert_eq!(provider.calls(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_schema_buffers_by_default_and_a_rejected_answer_is_never_shown() {
    let schema = agentic_runtime::provider::ResponseSchema::new("n", json!({"type": "object"}));
    let provider = ScriptedProvider::new([Scripted::ok(r#"{"n": -1}"#).in_chunks(3), Scripted::ok(r#"{"n": 2}"#)]);
    let runtime = Runtime::new(provider.clone());
    let stream = runtime
        .request("count")
        .schema(schema, |value| if value["n"].as_i64() > Some(0) { Ok(()) } else { Err("n must be positive".into()) })
        .stream();
    let seen = consume(stream).await;
    assert!(seen.rewinds.is_empty());
    assert_eq!(seen.text(), r#"{"n": 2}"#);
    assert_eq!(seen.done.unwrap().unwrap().text(), r#"{"n": 2}"#);
}

#[tokio::test(start_paused = true)]
async fn replay_mode_rewinds_a_rejected_answer_it_showed() {
    let provider = ScriptedProvider::new([Scripted::ok("no").in_chunks(2), Scripted::ok("yes")]);
    let runtime = Runtime::new(provider.clone());
    let schema = agentic_runtime::provider::ResponseSchema::new("a", json!({"type": "string"}));
    let stream = runtime.request("q").schema(schema, |_| Ok(())).stream_mode(StreamMode::Replay).stream();
    // "no" is not JSON: rejected after it was shown, so it is rewound; "yes" is not JSON either.
    let seen = consume(stream).await;
    assert!(!seen.rewinds.is_empty(), "{:?}", seen.order);
    assert!(seen.rewinds[0].1.starts_with("InvalidResult"), "{:?}", seen.rewinds);
}

#[tokio::test(start_paused = true)]
async fn fail_mode_stops_at_the_first_failure_after_text_was_shown() {
    let provider = ScriptedProvider::new([Scripted::cut("Hel"), Scripted::ok("Hello!")]);
    let runtime = Runtime::new(provider.clone());
    let seen = consume(runtime.request("hi").stream_mode(StreamMode::Fail).stream()).await;
    let error = seen.done.unwrap().unwrap_err();
    assert_eq!(error.kind(), ExecErrorKind::Refused, "{error}");
    assert_eq!(error.refusal(), Some(&Refusal::Committed));
    assert!(error.to_string().contains("`StreamMode::Fail`"), "{error}");
    assert_eq!(provider.calls(), 1, "no call replaces what was shown");
    assert!(seen.rewinds.is_empty());
}

#[tokio::test(start_paused = true)]
async fn fail_mode_still_retries_a_failure_before_anything_was_shown() {
    let provider = ScriptedProvider::new([Scripted::http(503, "overloaded"), Scripted::ok("Hello!")]);
    let runtime = Runtime::new(provider.clone());
    let seen = consume(runtime.request("hi").stream_mode(StreamMode::Fail).stream()).await;
    assert_eq!(seen.done.unwrap().unwrap().text(), "Hello!");
}

#[tokio::test(start_paused = true)]
async fn tool_calls_and_results_balance_and_each_turn_rewinds_alone() {
    let tools = Toolbox::new().with_fn("search", "Searches.", json!(null), |_| async { Ok("found".to_owned()) });
    let provider = ScriptedProvider::new([
        Scripted::tool_calls([("search", json!({"q": "a"})), ("search", json!({"q": "b"}))]),
        Scripted::cut("Accor").in_chunks(2),
        Scripted::ok("According to the search: found.").in_chunks(5),
    ]);
    let runtime = Runtime::builder(provider.clone()).with_tools(tools).with_policy(exact()).build().unwrap();
    let seen = consume(runtime.exec_stream("Look it up.")).await;
    let reply = seen.done.as_ref().unwrap().as_ref().unwrap();
    assert_eq!(seen.tool_calls, seen.tool_results, "each call answered, in order");
    assert_eq!(seen.tool_calls.len(), 2);
    assert_eq!(seen.text(), reply.text());
    assert_eq!(seen.rewinds.len(), 1);
    let first_result = seen.order.iter().position(|event| *event == "tool_result").unwrap();
    let first_call = seen.order.iter().position(|event| *event == "tool_call").unwrap();
    assert!(first_call < first_result);
}

#[tokio::test(start_paused = true)]
async fn a_fallback_mid_stream_rewinds_to_the_next_target() {
    let primary = ScriptedProvider::new([Scripted::cut("Hal"), Scripted::http(401, "invalid api key")]).with_model("a");
    let secondary = ScriptedProvider::new([Scripted::ok("Hello from b")]).with_model("b");
    let policy = exact().with_session_retries(1);
    let runtime =
        Runtime::builder(primary.clone()).with_policy(policy).with_fallback(secondary.clone()).build().unwrap();
    let seen = consume(runtime.exec_stream("hi")).await;
    let reply = seen.done.as_ref().unwrap().as_ref().unwrap();
    assert_eq!((reply.text(), reply.target()), ("Hello from b", Some("scripted/b")));
    assert_eq!(seen.text(), reply.text());
    // The cut call was retried on `a` (rewound there), then `a` refused the key and the exec moved
    // on before `b` showed anything.
    assert_eq!(seen.rewinds.len(), 1, "{:?}", seen.order);
    assert_eq!(seen.rewinds[0].2.as_deref(), Some("scripted/a"));
    assert!(reply.decisions().iter().any(|decision| decision.verdict() == Verdict::Fallback));
}

#[tokio::test(start_paused = true)]
async fn a_rewind_names_the_target_a_fallback_goes_to() {
    let primary = ScriptedProvider::new([Scripted::cut("Hal")]).with_model("a");
    let secondary = ScriptedProvider::new([Scripted::ok("Hello from b")]).with_model("b");
    // No retry on `a`: its failure moves the exec on.
    let policy = exact().with_session_retries(0);
    let runtime = Runtime::builder(primary).with_policy(policy).with_fallback(secondary).build().unwrap();
    let seen = consume(runtime.exec_stream("hi")).await;
    assert_eq!(seen.rewinds.len(), 1, "{:?}", seen.order);
    assert_eq!(seen.rewinds[0].2.as_deref(), Some("scripted/b"));
    assert_eq!(seen.text(), "Hello from b");
}

/// A provider of one long answer that counts the events its stream was asked for, and whether
/// the stream was dropped.
#[derive(Clone, Default)]
struct Counting {
    read: Arc<AtomicUsize>,
    dropped: Arc<AtomicBool>,
}

struct CountingStream {
    read: Arc<AtomicUsize>,
    dropped: Arc<AtomicBool>,
    left: usize,
}

impl futures_core::Stream for CountingStream {
    type Item = Result<StreamEvent, agentic_runtime::provider::ModelError>;

    fn poll_next(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.read.fetch_add(1, Ordering::SeqCst);
        if self.left == 0 {
            return Poll::Ready(Some(Ok(StreamEvent::Done {
                stop_reason: agentic_runtime::message::StopReason::Stop,
            })));
        }
        self.left -= 1;
        Poll::Ready(Some(Ok(StreamEvent::TextDelta("x".to_owned()))))
    }
}

impl Drop for CountingStream {
    fn drop(&mut self) {
        self.dropped.store(true, Ordering::SeqCst);
    }
}

impl Provider for Counting {
    fn name(&self) -> &str {
        "counting"
    }

    fn stream<'a>(&'a self, _: &'a Request<'a>) -> EventStream<'a> {
        Box::pin(CountingStream { read: self.read.clone(), dropped: self.dropped.clone(), left: 10_000 })
    }
}

#[tokio::test(start_paused = true)]
async fn a_slow_consumer_slows_the_read_of_the_providers_stream() {
    let provider = Counting::default();
    let mut stream = Runtime::new(provider.clone()).exec_stream("long");
    for taken in 1..=100 {
        assert!(matches!(stream.next().await, Some(ExecEvent::TextDelta(_))));
        let read = provider.read.load(Ordering::SeqCst);
        // What the consumer took, what waits for it (at most 32), and the event being handed over.
        assert!(read <= taken + 33, "{read} events read for {taken} taken");
    }
    assert!(!provider.dropped.load(Ordering::SeqCst));
    drop(stream);
    assert!(provider.dropped.load(Ordering::SeqCst), "dropping the exec stream drops the call at once");
}

#[tokio::test(start_paused = true)]
async fn reply_reads_the_stream_to_its_end() {
    let provider = ScriptedProvider::new([Scripted::cut("x"), Scripted::ok("done").in_chunks(2)]);
    let reply = Runtime::new(provider).exec_stream("q").reply().await.unwrap();
    assert_eq!(reply.text(), "done");
}

#[tokio::test(start_paused = true)]
async fn reasoning_is_shown_as_it_comes_and_rewound_with_its_turn() {
    let provider = ScriptedProvider::new([
        Scripted::error("").with_reasoning("Thinking..."),
        Scripted::ok("4").with_reasoning("Two and two."),
    ]);
    let seen = consume(Runtime::new(provider).exec_stream("2 + 2?")).await;
    assert_eq!(seen.order, ["reasoning", "decision", "rewind", "reasoning", "text", "done"]);
    assert_eq!(seen.done.unwrap().unwrap().text(), "4", "reasoning is never the answer");
}

/// A stream can be spawned and handed to a web framework (an SSE body): `Send`, `Unpin` and,
/// from `Runtime::exec_stream`, `'static`.
#[test]
fn an_exec_stream_is_send_unpin_and_static() {
    fn spawnable<T: futures_core::Stream + Send + Unpin + 'static>(_: &T) {}
    let runtime = Runtime::new(ScriptedProvider::new([]));
    spawnable(&runtime.exec_stream(String::from("owned prompt")));
}

#[tokio::test(start_paused = true)]
async fn done_carries_what_the_failed_attempts_cost() {
    use agentic_runtime::message::Usage;
    let provider = ScriptedProvider::new([
        Scripted::cut("Hal").with_usage(Usage::new(100, 3)),
        Scripted::ok("Hello").with_usage(Usage::new(100, 5)),
    ]);
    let reply = Runtime::new(provider).exec_stream("hi").reply().await.unwrap();
    assert_eq!(reply.failed_usage(), Usage::new(100, 3), "the dropped call was paid for");
    assert_eq!(reply.total_usage(), Usage::new(200, 8));
}

#[tokio::test(start_paused = true)]
async fn the_deadline_and_the_call_cap_hold_as_for_exec() {
    let policy = RetryPolicy::new().with_budget_ms(Some(30_000));
    let provider = ScriptedProvider::new([]).otherwise(Scripted::hang());
    let runtime = Runtime::builder(provider.clone()).with_policy(policy).build().unwrap();
    let started = tokio::time::Instant::now();
    let error = runtime.exec_stream("hi").reply().await.unwrap_err();
    assert!(started.elapsed() <= std::time::Duration::from_secs(30), "{:?}", started.elapsed());
    let plain = runtime.exec("hi").await.unwrap_err();
    assert_eq!((error.kind(), error.calls()), (plain.kind(), plain.calls()));

    let capped = RetryPolicy::new().with_max_calls(Some(2)).with_jitter(Jitter::None);
    let provider = ScriptedProvider::new([]).otherwise(Scripted::cut("partial"));
    let runtime = Runtime::builder(provider.clone()).with_policy(capped).build().unwrap();
    let seen = consume(runtime.exec_stream("hi")).await;
    assert_eq!(provider.calls(), 2, "`max_calls` holds");
    assert_eq!(seen.done.unwrap().unwrap_err().calls(), 2);
}
