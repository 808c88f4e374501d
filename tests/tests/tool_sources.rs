//! Tools from elsewhere and tools per agent function (docs/design.md §13): a
//! `ToolSource`'s list read at every model turn, a source's timeout and its grace, each call's
//! idempotency key, `exec_with_tools` and the attribute's `tools = PATH`.

use std::sync::{Arc, LazyLock, Mutex, OnceLock};
use std::time::Duration;

use agentic_runtime::message::{AssistantMessage, ContentBlock, StopReason};
use agentic_runtime::observe::trace::{TraceEvent, TraceSink};
use agentic_runtime::tool::{SOURCE_TIMEOUT_GRACE, Tool, ToolContext, ToolFuture, ToolSource, ToolSpec, Toolbox};
use agentic_runtime::{ExecError, ExecErrorKind, Reply, Runtime, Scripted, ScriptedProvider, agentic_function};
use serde_json::{Value, json};

/// What a source or a tool saw of its calls: the tool and the context.
type Seen = Arc<Mutex<Vec<(String, ToolContext)>>>;

/// A source that starts with `grow` and offers `fresh` too once `grow` was called; `slow` never
/// ends and `honest` ends at its timeout with its own error.
#[derive(Clone, Default)]
struct Growing {
    specs: Arc<Mutex<Option<Arc<[ToolSpec]>>>>,
    seen: Seen,
}

fn spec(name: &str) -> ToolSpec {
    ToolSpec::new(name, format!("The `{name}` tool."), Value::Null)
}

impl ToolSource for Growing {
    fn name(&self) -> &str {
        "growing"
    }

    fn specs(&self) -> Arc<[ToolSpec]> {
        let mut specs = self.specs.lock().unwrap();
        Arc::clone(specs.get_or_insert_with(|| Arc::from([spec("grow"), spec("slow"), spec("honest")])))
    }

    fn call<'a>(&'a self, name: &'a str, _input: Value, context: ToolContext) -> ToolFuture<'a> {
        self.seen.lock().unwrap().push((name.to_owned(), context.clone()));
        Box::pin(async move {
            match name {
                "grow" => {
                    let grown = [spec("grow"), spec("slow"), spec("honest"), spec("fresh")];
                    *self.specs.lock().unwrap() = Some(Arc::from(grown));
                    Ok("grown".to_owned())
                }
                "slow" => std::future::pending().await,
                "honest" => {
                    tokio::time::sleep(context.timeout()).await;
                    Err(format!("`honest` gave up after {:?}", context.timeout()).into())
                }
                other => Ok(format!("{other} ran")),
            }
        })
    }
}

/// A tool with side effects: it records the context of every call.
struct Charge(Seen);

impl Tool for Charge {
    fn name(&self) -> &str {
        "charge"
    }

    fn description(&self) -> &str {
        "Charges the card."
    }

    fn parameters(&self) -> Value {
        Value::Null
    }

    fn call(&self, _input: Value) -> ToolFuture<'_> {
        Box::pin(async { Err("called without its context".into()) })
    }

    fn call_with(&self, _input: Value, context: ToolContext) -> ToolFuture<'_> {
        self.0.lock().unwrap().push(("charge".to_owned(), context));
        Box::pin(async { Ok("charged".to_owned()) })
    }
}

fn results(reply_history: &[agentic_runtime::message::Message]) -> Vec<(String, bool)> {
    reply_history
        .iter()
        .flat_map(|message| match message {
            agentic_runtime::message::Message::User { content } => content.clone(),
            _ => Vec::new(),
        })
        .filter_map(|block| match block {
            ContentBlock::ToolResult { content, is_error, .. } => Some((content, is_error)),
            _ => None,
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn a_sources_new_tool_is_offered_from_the_next_model_turn() {
    let source = Growing::default();
    let provider = ScriptedProvider::new([
        Scripted::tool_call("grow", json!({})),
        Scripted::tool_call("fresh", json!({})),
        Scripted::ok("done"),
    ]);
    let runtime =
        Runtime::builder(provider.clone()).with_tools(Toolbox::new().with_source(source.clone())).build().unwrap();
    let reply = runtime.exec("grow, then use what grew").await.unwrap();
    assert_eq!((reply.text(), reply.iterations()), ("done", 2));
    assert!(reply.decisions().is_empty(), "no infrastructure retry: {:?}", reply.decisions());
    let offered: Vec<Vec<String>> = provider.requests().into_iter().map(|request| request.tools).collect();
    assert_eq!(offered[0], ["grow", "slow", "honest"]);
    assert_eq!(offered[1], ["grow", "slow", "honest", "fresh"]);
    let last = provider.requests().pop().unwrap();
    assert_eq!(results(&last.messages), [("grown".to_owned(), false), ("fresh ran".to_owned(), false)]);
}

#[tokio::test(start_paused = true)]
async fn a_source_ends_its_own_call_at_the_timeout_and_one_that_does_not_is_dropped_after_the_grace() {
    let toolbox = Toolbox::new().with_source(Growing::default()).with_timeout(Duration::from_secs(2));
    let started = tokio::time::Instant::now();
    let error = toolbox.call("honest", json!({})).await.unwrap_err();
    assert_eq!(error.message(), "`honest` gave up after 2s");
    assert_eq!(started.elapsed(), Duration::from_secs(2));

    let started = tokio::time::Instant::now();
    let error = toolbox.call("slow", json!({})).await.unwrap_err();
    assert_eq!(error.message(), "the tool `slow` timed out after 2 s");
    assert_eq!(started.elapsed(), Duration::from_secs(2) + SOURCE_TIMEOUT_GRACE);
    assert_eq!(toolbox.timeout_of("slow"), Some(Duration::from_secs(2)));
}

#[tokio::test]
async fn a_name_offered_already_is_not_offered_twice_and_the_first_one_answers() {
    let toolbox = Toolbox::new()
        .with_fn("grow", "Our own.", Value::Null, |_| async { Ok("our own grow".to_owned()) })
        .with_source(Growing::default());
    assert_eq!(toolbox.names().collect::<Vec<_>>(), ["grow", "slow", "honest"]);
    assert_eq!(toolbox.len(), 3);
    assert_eq!(toolbox.call("grow", json!({})).await.unwrap(), "our own grow");
    // A source's tool checks its arguments against its spec, as our own do.
    let error = toolbox.call("slow", json!([1])).await.unwrap_err();
    assert_eq!(error.message(), "invalid arguments for `slow`: the arguments must be a JSON object, not an array");
    assert!(format!("{toolbox:?}").contains("sources: [\"growing\"]"), "{toolbox:?}");
}

#[tokio::test(start_paused = true)]
async fn each_call_gets_an_idempotency_key_of_the_run_the_turn_and_the_call() {
    let seen = Seen::default();
    let toolbox = Toolbox::new().with_tool(Charge(Arc::clone(&seen)));
    let provider = ScriptedProvider::new([
        Scripted::tool_calls([("charge", json!({})), ("charge", json!({}))]),
        Scripted::tool_call("charge", json!({})),
        Scripted::ok("charged three times"),
    ]);
    let sink = TraceSink::in_memory();
    let runtime = Runtime::builder(provider).with_tools(toolbox).with_trace(sink.clone()).build().unwrap();
    runtime.exec("charge").await.unwrap();
    let events = TraceEvent::parse_all(&sink.contents().unwrap()).unwrap();
    let run = events[0].run_id().to_owned();
    let keys: Vec<(String, String)> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|(_, context)| (context.call_id().to_owned(), context.idempotency_key().to_owned()))
        .collect();
    let expected = [
        ("call_1".to_owned(), format!("{run}/1/call_1")),
        ("call_2".to_owned(), format!("{run}/1/call_2")),
        ("call_3".to_owned(), format!("{run}/2/call_3")),
    ];
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(sorted, expected);
    assert!(seen.lock().unwrap().iter().all(|(_, context)| context.timeout() == Duration::from_secs(120)));
}

#[tokio::test]
async fn a_turn_run_again_with_its_keys_gives_its_tools_the_same_keys_and_hostile_ids_a_bounded_one() {
    let seen = Seen::default();
    let toolbox = Toolbox::new().with_tool(Charge(Arc::clone(&seen)));
    let long_id = "x".repeat(10_000);
    let mut turn = AssistantMessage::text("");
    turn.content = vec![
        ContentBlock::ToolUse { id: "call_0".into(), name: "charge".into(), input: json!({}) },
        ContentBlock::ToolUse { id: long_id.clone(), name: "charge".into(), input: json!({}) },
        ContentBlock::ToolUse { id: "id with spaces/and slashes".into(), name: "charge".into(), input: json!({}) },
    ];
    turn.stop_reason = StopReason::ToolUse;
    toolbox.run_calls_keyed(&turn, None, "run-1/4").await;
    toolbox.run_calls_keyed(&turn, None, "run-1/4").await;
    toolbox.run_calls_keyed(&turn, None, "run-1/5").await;
    let keys: Vec<String> =
        seen.lock().unwrap().iter().map(|(_, context)| context.idempotency_key().to_owned()).collect();
    assert_eq!(keys.len(), 9);
    assert_eq!(keys[0], "run-1/4/call_0");
    assert!(keys[1].starts_with("run-1/4/h") && keys[1].len() == "run-1/4/h".len() + 16, "{}", keys[1]);
    assert!(keys[2].starts_with("run-1/4/h") && keys[2] != keys[1], "{}", keys[2]);
    assert_eq!(keys[0..3], keys[3..6], "the same turn, the same keys");
    assert_eq!(keys[6], "run-1/5/call_0");
    assert_ne!(keys[7], keys[1]);
    // Plain calls get a fresh key each.
    toolbox.call("charge", json!({})).await.unwrap();
    toolbox.call("charge", json!({})).await.unwrap();
    let seen = seen.lock().unwrap();
    assert_ne!(seen[9].1.idempotency_key(), seen[10].1.idempotency_key());
}

fn named(name: &'static str) -> Toolbox {
    Toolbox::new().with_fn(name, "A tool.", Value::Null, move |_| async move { Ok(format!("{name} ran")) })
}

#[tokio::test(start_paused = true)]
async fn exec_with_tools_offers_its_own_tools_instead_of_the_runtimes() {
    let provider =
        ScriptedProvider::new([Scripted::ok("one"), Scripted::tool_call("search", json!({})), Scripted::ok("two")]);
    let runtime = Runtime::builder(provider.clone()).with_tools(named("send_mail")).build().unwrap();
    runtime.exec("plain").await.unwrap();
    let reply = runtime.request("with search").tools(&named("search")).send().await.unwrap();
    assert_eq!((reply.text(), reply.iterations()), ("two", 1));
    let offered: Vec<Vec<String>> = provider.requests().into_iter().map(|request| request.tools).collect();
    assert_eq!(offered, [vec!["send_mail".to_owned()], vec!["search".to_owned()], vec!["search".to_owned()]]);
}

static SEARCH: LazyLock<Toolbox> = LazyLock::new(|| named("search"));
static MAIL: OnceLock<Toolbox> = OnceLock::new();
static UNSET: OnceLock<Toolbox> = OnceLock::new();

fn calendar() -> Toolbox {
    named("calendar")
}

/// Research the question.
#[agentic_function(tools = SEARCH)]
async fn research(runtime: &Runtime, question: &str) -> Result<Reply, ExecError> {
    runtime.exec(question).await
}

/// Send the mail, or book the meeting when asked to.
#[agentic_function(tools = MAIL, max_retries = 2)]
async fn assistant(runtime: &Runtime, task: &str) -> Result<Reply, ExecError> {
    if task.contains("meeting") {
        runtime.request(task).tools(&calendar()).send().await
    } else {
        runtime.exec(task).await
    }
}

/// Plan the day.
#[agentic_function(tools = calendar)]
async fn plan(runtime: &Runtime, day: &str) -> Result<Reply, ExecError> {
    runtime.exec(day).await
}

/// Never runs: its toolbox is not set.
#[agentic_function(tools = UNSET)]
async fn unset(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("hello").await
}

struct Agent;

impl Agent {
    const TOOLS: fn() -> Toolbox = calendar;

    /// Plan, as a method.
    #[agentic_function(tools = Self::TOOLS)]
    async fn plan(&self, runtime: &Runtime) -> Result<Reply, ExecError> {
        runtime.exec("plan").await
    }
}

#[tokio::test(start_paused = true)]
async fn each_agent_function_offers_the_toolbox_its_attribute_names() {
    MAIL.set(named("send_mail")).unwrap();
    let provider = ScriptedProvider::new([]).otherwise(Scripted::ok("ok"));
    let runtime = Runtime::builder(provider.clone()).with_tools(named("runtime_tool")).build().unwrap();
    research(&runtime, "q").await.unwrap();
    assistant(&runtime, "mail bob").await.unwrap();
    assistant(&runtime, "book a meeting").await.unwrap();
    plan(&runtime, "monday").await.unwrap();
    Agent.plan(&runtime).await.unwrap();
    runtime.exec("plain").await.unwrap();
    let offered: Vec<(Option<String>, Vec<String>)> =
        provider.requests().into_iter().map(|request| (request.function, request.tools)).collect();
    let expect = |function: Option<&str>, tool: &str| (function.map(str::to_owned), vec![tool.to_owned()]);
    assert_eq!(
        offered,
        [
            expect(Some("research"), "search"),
            expect(Some("assistant"), "send_mail"),
            expect(Some("assistant"), "calendar"),
            expect(Some("plan"), "calendar"),
            expect(Some("plan"), "calendar"),
            expect(None, "runtime_tool"),
        ]
    );

    let error = unset(&runtime).await.unwrap_err();
    assert_eq!(error.kind(), ExecErrorKind::Programming);
    assert!(error.to_string().contains("an unset `OnceLock`: set it before the first exec"), "{error}");
    assert_eq!(provider.calls(), 6, "the unset toolbox sent nothing");
}
