//! Durable runs (`exec::durable`) on a `MemoryLog`: a process "dies" after any step or inside any
//! step, and the next one goes on from the journal; no completed step is paid for or run twice, an
//! at-most-once tool whose outcome is unknown is not run again, the call cap holds across the
//! restart, and a replay that does not match its journal stops with `ReplayMismatch`. All on paused
//! time: a dead process is a future that never ends, cut by a timeout that costs no wall-clock time.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentic_runtime::exec::durable::{self, MemoryLog};
use agentic_runtime::exec::{ExecEvent, StreamMode};
use agentic_runtime::message::{AssistantMessage, ContentBlock, Message, StopReason, Usage};
use agentic_runtime::policy::Jitter;
use agentic_runtime::provider::{ModelError, RecordedRequest, Scripted, ScriptedProvider};
use agentic_runtime::spend::UsageLimits;
use agentic_runtime::tool::{Delivery, Tool, ToolContext, ToolFuture, Toolbox};
use agentic_runtime::{ExecError, ExecErrorKind, Reply, RetryPolicy, Runtime};
use futures_util::StreamExt as _;
use serde_json::{Value, json};

const PROMPT: &str = "Book the cheapest flight to Lisbon, mail the itinerary and pay.";
const RUN_ID: &str = "trip-7";
/// Longer than any run here takes on paused time: a process still running after it is dead.
const FOREVER: Duration = Duration::from_secs(24 * 3600);

/// A tool that counts its runs and keeps each run's idempotency key.
struct Counted {
    name: &'static str,
    delivery: Delivery,
    runs: AtomicUsize,
    keys: Mutex<Vec<String>>,
}

impl Tool for Counted {
    fn name(&self) -> &str {
        self.name
    }

    fn description(&self) -> &str {
        "Counts its runs."
    }

    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"q": {"type": "string"}}})
    }

    fn call(&self, input: Value) -> ToolFuture<'_> {
        self.call_with(input, ToolContext::new("", "", Duration::from_secs(1)))
    }

    fn call_with(&self, input: Value, context: ToolContext) -> ToolFuture<'_> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        self.keys.lock().unwrap().push(context.idempotency_key().to_owned());
        let text = format!("{} done for {}", self.name, input["q"].as_str().unwrap_or(""));
        Box::pin(async move { Ok(text) })
    }

    fn delivery(&self) -> Delivery {
        self.delivery
    }
}

/// The run's four tools: two that may run again (`search`, `read`), two that must not
/// (`send_mail`, `charge`). Shared by every "process" of a run, so their counts span the restart.
#[derive(Clone)]
struct Tools {
    all: [Arc<Counted>; 4],
}

impl Tools {
    const NAMES: [&'static str; 4] = ["search", "send_mail", "read", "charge"];

    fn new() -> Self {
        let tool = |name: &'static str| {
            let delivery = match name {
                "search" | "read" => Delivery::AtLeastOnce,
                _ => Delivery::AtMostOnce,
            };
            Arc::new(Counted { name, delivery, runs: AtomicUsize::new(0), keys: Mutex::default() })
        };
        Self { all: Self::NAMES.map(tool) }
    }

    fn toolbox(&self) -> Toolbox {
        self.all.iter().fold(Toolbox::new(), |toolbox, tool| toolbox.with_shared(tool.clone() as Arc<dyn Tool>))
    }

    fn tool(&self, name: &str) -> &Counted {
        self.all.iter().find(|tool| tool.name == name).expect("one of the four tools")
    }

    /// How often each tool ran, in `NAMES`' order.
    fn runs(&self) -> [usize; 4] {
        self.all.each_ref().map(|tool| tool.runs.load(Ordering::SeqCst))
    }

    fn keys(&self, name: &str) -> Vec<String> {
        self.tool(name).keys.lock().unwrap().clone()
    }
}

/// The model's five turns: four ask one tool each, the fifth answers.
/// Each call reports its tokens (the turn's number of hundreds in, tens out).
fn turns() -> Vec<Scripted> {
    let turns = [
        Scripted::tool_call("search", json!({"q": "flights to Lisbon"})),
        Scripted::tool_call("send_mail", json!({"q": "itinerary"})),
        Scripted::tool_call("read", json!({"q": "fare rules"})),
        Scripted::tool_call("charge", json!({"q": "EUR 89"})),
        Scripted::ok("Booked TP 1351, mailed the itinerary, paid EUR 89."),
    ];
    (1..).zip(turns).map(|(turn, step)| step.with_usage(Usage::new(100 * turn, 10 * turn))).collect()
}

/// What each step of the run is: its record's kind and, for a tool's step, the tool.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    /// A model call of the turn (from 0) starts.
    Marks(usize),
    /// A model call of the turn (from 0).
    Model(usize),
    /// An at-most-once tool records that it starts.
    Starts(&'static str),
    Tool(&'static str),
}

/// The run's 16 steps: 5 model calls and their start markers, 4 tool calls and the starts of the
/// 2 at-most-once tools.
const STEPS: [Kind; 16] = [
    Kind::Marks(0),
    Kind::Model(0),
    Kind::Tool("search"),
    Kind::Marks(1),
    Kind::Model(1),
    Kind::Starts("send_mail"),
    Kind::Tool("send_mail"),
    Kind::Marks(2),
    Kind::Model(2),
    Kind::Tool("read"),
    Kind::Marks(3),
    Kind::Model(3),
    Kind::Starts("charge"),
    Kind::Tool("charge"),
    Kind::Marks(4),
    Kind::Model(4),
];

fn runtime(provider: &ScriptedProvider, tools: &Tools) -> Runtime {
    Runtime::builder(provider.clone()).with_tools(tools.toolbox()).build().unwrap()
}

/// One process of the run: `None` when it "died" (never ended).
async fn process(runtime: &Runtime, log: &MemoryLog, prompt: &str) -> Option<Result<Reply, ExecError>> {
    tokio::time::timeout(FOREVER, durable::scope(log.clone(), runtime.exec(prompt))).await.ok()
}

/// A process that "dies": it must not end.
async fn dies(provider: &ScriptedProvider, tools: &Tools, log: &MemoryLog) {
    let ended = process(&runtime(provider, tools), log, PROMPT).await;
    assert!(ended.is_none(), "the process was to die, and it ended: {ended:?}");
}

/// The next process, on the journal `log` left: its reply, and its log.
async fn restart(provider: &ScriptedProvider, tools: &Tools, log: &MemoryLog) -> (Reply, MemoryLog) {
    let next = log.restarted();
    let reply = process(&runtime(provider, tools), &next, PROMPT).await.expect("the restarted process ends");
    (reply.expect("the restarted run answers"), next)
}

/// Steps `from..=to`.
fn steps(from: u64, to: u64) -> Vec<u64> {
    (from..=to).collect()
}

/// The `(content, is_error)` of each tool result in the last message of `request`.
fn last_results(request: &RecordedRequest) -> Vec<(String, bool)> {
    request.messages.last().map(crate::tool_timeout::tool_results).unwrap_or_default()
}

/// The run without a crash: its reply, the provider's requests and the journal.
struct Uninterrupted {
    reply: Reply,
    requests: Vec<RecordedRequest>,
    records: Vec<Value>,
    keys: Vec<Vec<String>>,
}

async fn uninterrupted() -> Uninterrupted {
    let (provider, tools) = (ScriptedProvider::new(turns()), Tools::new());
    let log = MemoryLog::new(RUN_ID);
    let reply = process(&runtime(&provider, &tools), &log, PROMPT).await.unwrap().unwrap();
    assert_eq!((provider.calls(), tools.runs()), (5, [1; 4]));
    assert_eq!(log.fresh(), steps(1, 16));
    let records = log.records();
    // The journal is the step table: each record of the kind, and about the tool, the table says.
    let kinds: Vec<(String, String)> = records
        .iter()
        .map(|record| (record["kind"].as_str().unwrap().to_owned(), record["about"].as_str().unwrap().to_owned()))
        .collect();
    for (step, (kind, about)) in STEPS.iter().zip(&kinds) {
        match step {
            Kind::Marks(_) => assert_eq!(kind, "model_started", "{about}"),
            Kind::Model(_) => assert_eq!(kind, "model", "{about}"),
            Kind::Starts(tool) => {
                assert!(kind == "tool_started" && about.starts_with(&format!("tool {tool} ")), "{about}")
            }
            Kind::Tool(tool) => assert!(kind == "tool" && about.starts_with(&format!("tool {tool} ")), "{about}"),
        }
    }
    assert_eq!(kinds.len(), STEPS.len());
    let keys = Tools::NAMES.iter().map(|name| tools.keys(name)).collect();
    Uninterrupted { reply, requests: provider.requests(), records, keys }
}

/// A process dies after each step in turn: the next one finishes the run with the same answer,
/// each model call made once over both, each tool run once with the key it has without a crash;
/// except an at-most-once tool whose start was recorded and whose result was not: nobody knows
/// whether it acted, so it is not run again, and the model hears its outcome is unknown.
#[tokio::test(start_paused = true)]
async fn a_run_stopped_after_any_step_goes_on_without_paying_or_acting_twice() {
    let clean = uninterrupted().await;
    let last = STEPS.len() as u64;
    for k in 1..=last {
        let (provider, tools) = (ScriptedProvider::new(turns()), Tools::new());
        let log = MemoryLog::new(RUN_ID).stopping_after(k);
        let first = process(&runtime(&provider, &tools), &log, PROMPT).await;
        // The last step recorded is the answer: nothing was left to stop.
        assert_eq!(first.is_some(), k == last, "after step {k}: {first:?}");
        assert_eq!((log.fresh(), log.replayed()), (steps(1, k), vec![]), "after step {k}");

        let (reply, next) = restart(&provider, &tools, &log).await;
        assert_eq!(reply.text(), clean.reply.text(), "after step {k}");
        assert_eq!(provider.calls(), 5, "after step {k}: each successful model call once over both processes");
        // Stopped right after a call's start marker, the next process cannot tell whether the call
        // was made: it counts it (here it was not), and marks the call again, a step more.
        let marked = matches!(STEPS[k as usize - 1], Kind::Marks(_));
        let steps_now = last + u64::from(marked);
        assert_eq!((next.replayed(), next.fresh()), (steps(1, k), steps(k + 1, steps_now)), "after step {k}");
        // The replayed calls count: the exec made 5 calls, 4 tool turns, 5 attempts.
        let calls = 5 + u32::from(marked);
        assert_eq!((reply.calls(), reply.iterations(), reply.attempts()), (calls, 4, 5), "after step {k}");
        // So do the replayed calls' tokens.
        assert_eq!((reply.usage(), reply.total_usage()), (clean.reply.usage(), clean.reply.total_usage()));
        assert_eq!(reply.total_usage(), Usage::new(1500, 150), "after step {k}");
        let requests = provider.requests();
        let messages = |requests: &[RecordedRequest]| requests.iter().map(|r| r.messages.clone()).collect::<Vec<_>>();
        let keys: Vec<Vec<String>> = Tools::NAMES.iter().map(|name| tools.keys(name)).collect();
        let Kind::Starts(unknown) = STEPS[k as usize - 1] else {
            // The model saw the same conversation at every turn as without a crash, and the tools
            // the same keys; the journal is the same.
            assert_eq!(tools.runs(), [1; 4], "after step {k}: each tool once");
            assert_eq!(messages(&requests), messages(&clean.requests), "after step {k}");
            assert_eq!(keys, clean.keys, "after step {k}");
            let records = next.records();
            if marked {
                assert_eq!(records[..k as usize], clean.records[..k as usize], "after step {k}");
                let again = &records[k as usize];
                let before = records[k as usize - 1]["calls"].as_u64().unwrap();
                let marked_again = (again["kind"].as_str(), again["calls"].as_u64());
                assert_eq!(
                    marked_again,
                    (Some("model_started"), Some(before + 1)),
                    "after step {k}: counted, marked again"
                );
            } else {
                assert_eq!(records, clean.records, "after step {k}");
            }
            continue;
        };
        let runs = Tools::NAMES.map(|name| usize::from(name != unknown));
        assert_eq!(tools.runs(), runs, "after step {k}: `{unknown}` is not run after its start was recorded");
        let turn = Tools::NAMES.iter().position(|name| *name == unknown).unwrap();
        assert_eq!(messages(&requests[..=turn]), messages(&clean.requests[..=turn]), "after step {k}");
        let results = last_results(&requests[turn + 1]);
        assert!(results.len() == 1 && results[0].1, "after step {k}: {results:?}");
        assert!(results[0].0.starts_with("unknown outcome"), "after step {k}: {results:?}");
        assert_eq!(next.records()[..k as usize], clean.records[..k as usize], "after step {k}");
    }
}

/// The script of a run whose process dies in step `k`: a model call that never recorded is made
/// again, so its turn is played twice.
fn script_dying_in(k: usize) -> Vec<Scripted> {
    let mut script = turns();
    if let Kind::Model(turn) = STEPS[k - 1] {
        script.insert(turn, script[turn].clone());
    }
    script
}

/// A process dies inside each step in turn: a model call is made again, an at-least-once tool
/// runs again with the same key, an at-most-once tool does not, and the model hears its outcome is
/// unknown.
#[tokio::test(start_paused = true)]
async fn a_run_killed_inside_any_step_redoes_only_what_may_be_redone() {
    let clean = uninterrupted().await;
    let last = STEPS.len() as u64;
    for k in 1..=last {
        let (provider, tools) = (ScriptedProvider::new(script_dying_in(k as usize)), Tools::new());
        let log = MemoryLog::new(RUN_ID).dying_in(k);
        dies(&provider, &tools, &log).await;
        assert_eq!((log.fresh(), log.records().len()), (steps(1, k), k as usize - 1), "in step {k}");

        let (reply, next) = restart(&provider, &tools, &log).await;
        assert_eq!(reply.text(), clean.reply.text(), "in step {k}");
        // A call lost inside its step is marked again: a step more.
        let lost = matches!(STEPS[k as usize - 1], Kind::Model(_));
        let steps_now = last + u64::from(lost);
        assert_eq!((next.replayed(), next.fresh()), (steps(1, k - 1), steps(k, steps_now)), "in step {k}");
        let requests = provider.requests();
        match STEPS[k as usize - 1] {
            Kind::Model(_) => {
                // The call made in the dead process was never recorded: it is made again.
                assert_eq!((provider.calls(), tools.runs()), (6, [1; 4]), "in step {k}");
                // Its start marker was: it counts, 6 calls as the provider saw.
                assert_eq!(reply.calls(), 6, "in step {k}");
            }
            Kind::Marks(_) => {
                // Its marker never became durable: no call was made, and none is counted.
                assert_eq!((provider.calls(), reply.calls(), tools.runs()), (5, 5, [1; 4]), "in step {k}");
            }
            Kind::Tool(tool @ ("search" | "read")) => {
                assert_eq!(provider.calls(), 5, "in step {k}");
                let runs = Tools::NAMES.map(|name| if name == tool { 2 } else { 1 });
                assert_eq!(tools.runs(), runs, "in step {k}: `{tool}` ran again");
                let keys = tools.keys(tool);
                assert_eq!(keys.len(), 2);
                assert_eq!(keys[0], keys[1], "in step {k}: `{tool}` ran again with the same key");
                assert!(keys[0].starts_with(&format!("{RUN_ID}/")), "{keys:?}");
            }
            Kind::Starts(tool) => {
                // It died before the tool ran: the next process runs it, once.
                assert_eq!((provider.calls(), tools.runs()), (5, [1; 4]), "in step {k}");
                let turn = Tools::NAMES.iter().position(|name| *name == tool).unwrap();
                assert_eq!(last_results(&requests[turn + 1]), [(format!("{tool} done for {}", query(turn)), false)]);
            }
            Kind::Tool(tool) => {
                // At most once: it ran in the dead process, and is not run again.
                assert_eq!((provider.calls(), tools.runs()), (5, [1; 4]), "in step {k}: `{tool}` ran once");
                let turn = Tools::NAMES.iter().position(|name| *name == tool).unwrap();
                let results = last_results(&requests[turn + 1]);
                assert_eq!(results.len(), 1, "{results:?}");
                assert!(results[0].1, "in step {k}: {results:?}");
                assert!(results[0].0.starts_with("unknown outcome"), "in step {k}: {results:?}");
                assert!(results[0].0.contains(&format!("`{tool}`")), "{results:?}");
            }
        }
    }
}

/// The query the script's turn `turn` sends its tool.
fn query(turn: usize) -> &'static str {
    ["flights to Lisbon", "itinerary", "fare rules", "EUR 89"][turn]
}

/// An exec attempt a call, no jitter, and at most 3 calls in all.
fn capped() -> RetryPolicy {
    RetryPolicy::new().with_session_retries(0).with_max_retries(6).with_jitter(Jitter::None).with_max_calls(Some(3))
}

/// `max_calls` counts the calls of the dead process: the restarted one makes only those left.
#[tokio::test(start_paused = true)]
async fn the_call_cap_holds_across_a_restart() {
    let unavailable = || Scripted::http(503, "Service Unavailable");
    let runtime =
        |provider: &ScriptedProvider| Runtime::builder(provider.clone()).with_policy(capped()).build().unwrap();

    // Two 503s, then the answer: the third call answers, and the reply counts all three.
    let provider = ScriptedProvider::new([unavailable(), unavailable(), Scripted::ok("up again")]);
    let log = MemoryLog::new("capped-1").stopping_after(2);
    assert!(process(&runtime(&provider), &log, PROMPT).await.is_none());
    assert_eq!(provider.calls(), 1);
    let next = log.restarted();
    let reply = process(&runtime(&provider), &next, PROMPT).await.unwrap().unwrap();
    assert_eq!(reply.text(), "up again");
    assert_eq!((provider.calls(), reply.calls(), reply.attempts()), (3, 3, 3));
    // Steps: a call (its marker and its record), layer 2's wait, a call, a wait, the call that answers.
    assert_eq!((next.replayed(), next.fresh()), (vec![1, 2], steps(3, 8)));

    // Four 503s: the cap stops the restarted exec after its second call, 3 in all.
    let provider = ScriptedProvider::new(unavailable().times(4).chain([Scripted::ok("up again")]));
    let log = MemoryLog::new("capped-2").stopping_after(2);
    assert!(process(&runtime(&provider), &log, PROMPT).await.is_none());
    let next = log.restarted();
    let error = process(&runtime(&provider), &next, PROMPT).await.unwrap().unwrap_err();
    assert_eq!(error.kind(), ExecErrorKind::Refused, "{error}");
    assert!(error.stopped_by().is_some_and(|why| why.contains("max_calls")), "{error}");
    assert_eq!((provider.calls(), error.calls()), (3, 3), "{error}");
}

/// The text and the end of a streamed exec of `runtime` in a durable scope on `log`.
async fn streamed(runtime: &Runtime, log: MemoryLog, mode: StreamMode) -> (String, Reply) {
    durable::scope(log, async {
        let mut stream = runtime.request(PROMPT).stream_mode(mode).stream();
        let (mut text, mut done) = (String::new(), None);
        while let Some(event) = stream.next().await {
            match event {
                ExecEvent::TextDelta(delta) => text.push_str(&delta),
                ExecEvent::Done(reply) => done = Some(reply.expect("the run answers")),
                _ => {}
            }
        }
        (text, done.expect("a stream ends with Done"))
    })
    .await
}

/// A streamed run replayed whole shows the recorded answer's text, as the live run showed it, in
/// every stream mode; no call is made for it.
#[tokio::test(start_paused = true)]
async fn a_streamed_replay_shows_the_recorded_answer() {
    for mode in [StreamMode::Replay, StreamMode::Buffer, StreamMode::Fail] {
        let (provider, tools) = (ScriptedProvider::new(turns()), Tools::new());
        let runtime = runtime(&provider, &tools);
        let log = MemoryLog::new(RUN_ID);
        let (live, reply) = streamed(&runtime, log.clone(), mode).await;
        assert_eq!(live, reply.text(), "{mode:?}");
        let (replayed, again) = streamed(&runtime, log.restarted(), mode).await;
        assert_eq!((replayed, again.text()), (live, reply.text()), "{mode:?}");
        assert_eq!(provider.calls(), 5, "{mode:?}: no call for the replay");
    }
}

/// A process that dies inside the same model call in every restart (a poisonous answer, say) pays
/// for that call each time: every lost call counts, and the cap stops the run instead of a restart
/// loop that pays forever.
#[tokio::test(start_paused = true)]
async fn a_call_lost_in_every_restart_stops_at_the_call_cap() {
    let provider = ScriptedProvider::new([]).otherwise(Scripted::ok("an answer nobody records"));
    let runtime = Runtime::builder(provider.clone()).with_policy(capped()).build().unwrap();
    // Each process marks the call (its step `n`) and dies inside the call (step `n + 1`).
    let mut log = MemoryLog::new("poisoned").dying_in(2);
    for restart in 1..=3u64 {
        assert!(process(&runtime, &log, PROMPT).await.is_none(), "process {restart} dies in its call");
        assert_eq!(provider.calls(), restart as usize);
        log = log.restarted().dying_in(restart + 2);
    }
    // The fourth finds three lost calls, the most `max_calls` allows: no fourth call.
    let error = process(&runtime, &log, PROMPT).await.expect("the cap ends the run").unwrap_err();
    assert_eq!(error.kind(), ExecErrorKind::Refused, "{error}");
    assert!(error.stopped_by().is_some_and(|why| why.contains("max_calls")), "{error}");
    assert!(error.attempt_errors()[0].contains("CallLost: the last call was lost with its process"), "{error}");
    assert_eq!((provider.calls(), error.calls()), (3, 3), "{error}");
    // The journal: the first call's marker, a marker for each call made again, and the refusal.
    let kinds: Vec<Value> = log.records().iter().map(|record| record["kind"].clone()).collect();
    assert_eq!(kinds, ["model_started", "model_started", "model_started", "model"]);
    // Replayed, the run ends the same way, with no call.
    let again = process(&runtime, &log.restarted(), PROMPT).await.unwrap().unwrap_err();
    assert_eq!((again.kind(), again.calls(), provider.calls()), (ExecErrorKind::Refused, 3, 3));
}

/// Layer 2's wait between two attempts (here the server's Retry-After) is a step: a process that
/// dies after it began does not wait it again, and the time it waited counts against the deadline.
#[tokio::test(start_paused = true)]
async fn layer_two_waits_are_steps_and_a_replayed_wait_is_not_waited_again() {
    let wait = Duration::from_secs(20);
    let policy = RetryPolicy::new().with_session_retries(0).with_jitter(Jitter::None).with_retry_after_cap_ms(60_000);
    let provider = ScriptedProvider::new([
        Scripted::http(503, "Service Unavailable").with_retry_after(wait),
        Scripted::ok("up again"),
    ]);
    let runtime = Runtime::builder(provider.clone()).with_policy(policy).build().unwrap();

    // The first process records the failed call and its wait, then dies before the next call.
    let log = MemoryLog::new("waits-1").stopping_after(3);
    let started = tokio::time::Instant::now();
    assert!(process(&runtime, &log, PROMPT).await.is_none());
    assert_eq!(log.fresh(), vec![1, 2, 3]);
    assert_eq!(log.records()[2]["kind"], "sleep");
    assert_eq!(log.records()[2]["wait_ms"], 20_000);
    assert!(started.elapsed() >= wait, "the first process waited the server's Retry-After");

    // The next replays the call and the wait: no wait here, one more call; the reply's time
    // counts the wait the first process made.
    let next = log.restarted();
    let started = tokio::time::Instant::now();
    let reply = process(&runtime, &next, PROMPT).await.unwrap().unwrap();
    assert!(started.elapsed() < Duration::from_secs(1), "a replayed wait is not waited again: {:?}", started.elapsed());
    assert_eq!((reply.text(), provider.calls(), reply.calls()), ("up again", 2, 2));
    assert!(reply.elapsed() >= wait, "the replayed wait counts: {:?}", reply.elapsed());
    assert_eq!((next.replayed(), next.fresh()), (vec![1, 2, 3], vec![4, 5]));
}

/// A durable exec's jitter is its run's: every process that runs the run draws the same waits (a
/// replayed wait is the wait that was journaled), and another run draws others.
#[tokio::test(start_paused = true)]
async fn a_durable_runs_jitter_is_the_same_in_every_process() {
    let policy = RetryPolicy::new().with_session_retries(0);
    let wait_of = |run_id: &'static str| async move {
        let provider = ScriptedProvider::new([Scripted::http(503, "Service Unavailable"), Scripted::ok("up again")]);
        let runtime = Runtime::builder(provider).with_policy(policy).build().unwrap();
        let log = MemoryLog::new(run_id);
        process(&runtime, &log, PROMPT).await.unwrap().unwrap();
        log.records()[2]["wait_ms"].as_u64().unwrap()
    };
    let first = wait_of("jitter-1").await;
    assert_eq!(wait_of("jitter-1").await, first);
    let others: Vec<u64> = [wait_of("jitter-2").await, wait_of("jitter-3").await, wait_of("jitter-4").await].into();
    assert!(others.iter().any(|&wait| wait != first), "the jitter is drawn: {first} and {others:?}");
}

/// The spend limits count what the dead process spent: a run allowed 3 tool calls stops before its
/// fourth tool turn, restarted or not, having spent the same.
#[tokio::test(start_paused = true)]
async fn the_spend_limits_hold_across_a_restart() {
    let limited = |provider: &ScriptedProvider, tools: &Tools| {
        Runtime::builder(provider.clone())
            .with_tools(tools.toolbox())
            .with_usage_limits(UsageLimits::new().with_max_tool_calls(3).with_max_total_tokens(10_000))
            .build()
            .unwrap()
    };
    let (provider, tools) = (ScriptedProvider::new(turns()), Tools::new());
    let clean = process(&limited(&provider, &tools), &MemoryLog::new(RUN_ID), PROMPT).await.unwrap().unwrap_err();
    assert_eq!((clean.kind(), tools.runs()), (ExecErrorKind::UsageLimit, [1, 1, 1, 0]), "{clean}");
    for k in 1..=10 {
        let (provider, tools) = (ScriptedProvider::new(turns()), Tools::new());
        let log = MemoryLog::new(RUN_ID).stopping_after(k);
        assert!(process(&limited(&provider, &tools), &log, PROMPT).await.is_none(), "after step {k}");
        let next = log.restarted();
        let error = process(&limited(&provider, &tools), &next, PROMPT).await.unwrap().unwrap_err();
        // (A stop right after `send_mail`'s start leaves its outcome unknown: it does not run.)
        let runs = if let Kind::Starts("send_mail") = STEPS[k as usize - 1] { [1, 0, 1, 0] } else { [1, 1, 1, 0] };
        assert_eq!((error.kind(), tools.runs(), provider.calls()), (ExecErrorKind::UsageLimit, runs, 4), "{k}");
        // (A stop right after a call's start marker counts the call it may have made.)
        let calls = clean.calls() + u32::from(matches!(STEPS[k as usize - 1], Kind::Marks(_)));
        assert_eq!((error.spent(), error.usage(), error.calls()), (clean.spent(), clean.usage(), calls), "{k}");
        assert_eq!(error.attempt_errors(), clean.attempt_errors(), "after step {k}");
    }
}

/// A permanent failure is recorded as what it is: the replay ends the same way, with no call.
#[tokio::test(start_paused = true)]
async fn a_recorded_permanent_failure_replays_without_a_call() {
    let provider = ScriptedProvider::new([Scripted::http(401, "Unauthorized")]).otherwise(Scripted::ok("no"));
    let runtime = Runtime::new(provider.clone());
    let log = MemoryLog::new("denied").stopping_after(2);
    let first = process(&runtime, &log, PROMPT).await.expect("a permanent failure ends the run at once");
    let first = first.unwrap_err();
    assert_eq!((first.kind(), provider.calls()), (ExecErrorKind::Permanent, 1), "{first}");

    let next = log.restarted();
    let again = process(&Runtime::new(provider.clone()), &next, PROMPT).await.unwrap().unwrap_err();
    assert_eq!(again.kind(), ExecErrorKind::Permanent, "{again}");
    assert_eq!(again.attempt_errors(), first.attempt_errors());
    assert_eq!((provider.calls(), again.calls()), (1, 1), "no new call");
    assert_eq!((next.replayed(), next.fresh()), (vec![1, 2], vec![]));
}

/// `error` is a replay mismatch at `step`, whose text names the recorded and the current step.
fn assert_mismatch(error: &ExecError, step: u64, recorded: &str, now: &str) {
    assert_eq!(error.kind(), ExecErrorKind::ReplayMismatch, "{error}");
    let text = &error.attempt_errors()[0];
    assert!(text.starts_with(&format!("ReplayMismatch: step {step} ")), "{text}");
    assert!(text.contains(&format!("the journal holds `{recorded}`")), "{text}");
    assert!(text.contains(&format!("this run takes `{now}` there")), "{text}");
}

/// A restart whose prompt changed finds its first step recorded for another request: it stops,
/// naming the step, without a call.
#[tokio::test(start_paused = true)]
async fn a_replay_of_another_prompt_is_a_mismatch() {
    let (provider, tools) = (ScriptedProvider::new(turns()), Tools::new());
    let log = MemoryLog::new(RUN_ID).stopping_after(2);
    dies(&provider, &tools, &log).await;
    let next = log.restarted();
    let error = process(&runtime(&provider, &tools), &next, "Book a train to Porto instead.").await.unwrap();
    let error = error.unwrap_err();
    let turn = "model call starts (turn 1, attempt 1)";
    assert_mismatch(&error, 1, turn, turn);
    assert!(error.attempt_errors()[0].contains("the request differs"), "{error}");
    assert_eq!((provider.calls(), tools.runs()), (1, [0; 4]), "no call for the mismatching step");
    assert_eq!(next.replayed(), [1]);
}

/// A restart whose tools changed takes another kind of step where the journal holds one: it
/// stops there, naming both, and neither the model nor the tool is called for it.
#[tokio::test(start_paused = true)]
async fn a_replay_whose_steps_changed_kind_is_a_mismatch() {
    // A turn that asks for two searches; the first process runs one call a turn, so its step 4 is
    // the next model call's start. The restarted one runs both: its step 4 is the second search.
    let script =
        [Scripted::tool_calls([("search", json!({"q": "a"})), ("search", json!({"q": "b"}))]), Scripted::ok("done")];
    let (provider, tools) = (ScriptedProvider::new(script), Tools::new());
    let one_a_turn =
        Runtime::builder(provider.clone()).with_tools(tools.toolbox().with_max_calls_per_turn(1)).build().unwrap();
    let log = MemoryLog::new("kinds").stopping_after(5);
    let reply = process(&one_a_turn, &log, PROMPT).await.unwrap().unwrap();
    assert_eq!((reply.text(), provider.calls(), tools.runs()), ("done", 2, [1, 0, 0, 0]));
    let next = log.restarted();
    let error = process(&runtime(&provider, &tools), &next, PROMPT).await.unwrap().unwrap_err();
    assert_mismatch(&error, 4, "model call starts (turn 2, attempt 1)", "tool search (call_2)");
    assert!(error.attempt_errors()[0].contains("another kind of step"), "{error}");
    assert_eq!((provider.calls(), tools.runs()), (2, [1, 0, 0, 0]), "no call for the mismatching step");

    // A tool that became at-most-once takes a start step where its result was recorded.
    let (provider, tools) = (ScriptedProvider::new(turns()), Tools::new());
    let log = MemoryLog::new("deliveries").stopping_after(3);
    dies(&provider, &tools, &log).await;
    let next = log.restarted();
    let at_most_once = Runtime::builder(provider.clone())
        .with_tools(tools.toolbox().with_delivery("search", Delivery::AtMostOnce))
        .build()
        .unwrap();
    let error = process(&at_most_once, &next, PROMPT).await.unwrap().unwrap_err();
    assert_mismatch(&error, 3, "tool search (call_1)", "tool search (call_1) starts");
    assert_eq!((provider.calls(), tools.runs()), (1, [1, 0, 0, 0]), "the search is not run again");
}

/// A journal this version cannot read is a mismatch at the step it cannot read, never a panic.
#[tokio::test(start_paused = true)]
async fn a_record_that_cannot_be_read_is_a_mismatch() {
    let garbage = [
        json!("not a record"),
        json!({"kind": "telepathy", "about": "?", "fingerprint": "0"}),
        json!({"kind": "model", "about": "model call (turn 1, attempt 1)"}),
        json!({"kind": "tool", "about": "tool search (call_1)", "fingerprint": 7, "content": [], "is_error": "no"}),
        json!({"kind": "model_started", "about": "model call starts (turn 1, attempt 1)", "fingerprint": "0", "calls": -1}),
        json!({"kind": "compaction", "about": "compaction", "fingerprint": "0", "outcome": {"messages": "none"}}),
        Value::Null,
    ];
    for record in garbage {
        let provider = ScriptedProvider::new(turns());
        let log = MemoryLog::with_records("loaded", vec![record.clone()]);
        let error = process(&runtime(&provider, &Tools::new()), &log, PROMPT).await.unwrap().unwrap_err();
        assert_mismatch(&error, 1, "a record this version cannot read", "model call starts (turn 1, attempt 1)");
        assert_eq!(provider.calls(), 0, "{record}");
    }

    // A readable marker that claims every call there is: the lost call counts without overflowing,
    // and no call is made.
    let clean = MemoryLog::new("loaded");
    process(&runtime(&ScriptedProvider::new(turns()), &Tools::new()), &clean, PROMPT).await.unwrap().unwrap();
    let mut marker = clean.records()[0].clone();
    marker["calls"] = json!(u32::MAX);
    let provider = ScriptedProvider::new(turns());
    let log = MemoryLog::with_records("loaded", vec![marker]);
    let error = process(&runtime(&provider, &Tools::new()), &log, PROMPT).await.unwrap().unwrap_err();
    assert_eq!((error.kind(), error.calls(), provider.calls()), (ExecErrorKind::Refused, u32::MAX, 0), "{error}");

    // A model step's record that claims every call there is: the next turn's call is made (a
    // turn's first call is no retry), and counts without overflowing.
    let mut records = clean.records()[..3].to_vec();
    records[1]["calls"] = json!(u32::MAX);
    let provider = ScriptedProvider::new(turns().into_iter().skip(1));
    let log = MemoryLog::with_records("loaded", records);
    let error = process(&runtime(&provider, &Tools::new()), &log, PROMPT).await.unwrap();
    assert_eq!(error.map(|reply| reply.calls()).unwrap_or_else(|error| error.calls()), u32::MAX);
}

/// A reply's facts survive a round trip through JSON; its decisions stay behind.
#[tokio::test(start_paused = true)]
async fn a_reply_round_trips_through_serde() {
    let primary = ScriptedProvider::new([Scripted::http(500, "Internal Server Error")]).with_model("a");
    let answer = Scripted::ok("Here.").with_usage(Usage::new(12, 3)).with_latency(Duration::from_millis(1250));
    let secondary = ScriptedProvider::new([answer]).with_model("b");
    let tools = Toolbox::new();
    let runtime = Runtime::builder(primary.clone())
        .with_fallback(secondary.clone())
        .with_policy(RetryPolicy::new().with_session_retries(0).with_jitter(Jitter::None))
        .with_tools(tools)
        .build()
        .unwrap();
    let reply = runtime.exec(PROMPT).await.unwrap();
    assert!(!reply.decisions().is_empty(), "the failed call left a decision");
    assert!(reply.target().is_some() && reply.usage().is_some() && !reply.elapsed().is_zero());

    let json = serde_json::to_value(&reply).unwrap();
    assert_eq!(json["stop_reason"], "stop", "{json}");
    let back: Reply = serde_json::from_value(json.clone()).unwrap();
    assert_eq!(back.text(), reply.text());
    assert_eq!(back.stop_reason(), StopReason::Stop);
    assert_eq!((back.calls(), back.attempts(), back.iterations()), (reply.calls(), reply.attempts(), 0));
    // The failed call and the answer; the move to the fallback is an attempt of its own.
    assert_eq!((back.calls(), back.attempts()), (2, 2));
    assert_eq!(back.elapsed(), reply.elapsed());
    assert_eq!(
        (back.usage(), back.total_usage(), back.failed_usage()),
        (reply.usage(), reply.total_usage(), reply.failed_usage())
    );
    assert_eq!(back.target(), reply.target());
    assert_eq!(back.exec_id(), reply.exec_id());
    assert!(back.decisions().is_empty());
    assert_eq!(serde_json::to_value(&back).unwrap(), json, "the facts are all there");
}

/// An exec's error serializes as its facts, its kind by name.
#[tokio::test(start_paused = true)]
async fn an_exec_error_serializes_its_facts() {
    let provider = ScriptedProvider::new([Scripted::http(401, "Unauthorized")]);
    let error = Runtime::new(provider).exec(PROMPT).await.unwrap_err();
    let json = serde_json::to_value(&error).unwrap();
    assert_eq!(json["kind"], "permanent", "{json}");
    assert_eq!(json["calls"], 1, "{json}");
    assert_eq!(json["attempts"], json!(error.attempt_errors()), "{json}");
    assert_eq!(json["elapsed_ms"], error.elapsed().as_millis() as u64, "{json}");
    assert_eq!(serde_json::to_value(ExecErrorKind::ReplayMismatch).unwrap(), "replay_mismatch");
}

/// Messages, and an assistant message with a typed failure, read back equal.
#[test]
fn messages_round_trip_through_serde() {
    let failure = ModelError::http(429, "Too Many Requests")
        .with_retry_after(Duration::from_millis(2500))
        .with_code("rate_limit_exceeded");
    let mut failed = AssistantMessage::from_error(failure.clone());
    failed.usage = Some(Usage::new(5, 0).with_cache_read(2));
    let mut tools = AssistantMessage::text("");
    tools.content = vec![ContentBlock::ToolUse { id: "call_1".into(), name: "search".into(), input: json!({"q": 1}) }];
    tools.stop_reason = StopReason::ToolUse;
    let messages = vec![
        Message::user("hi"),
        Message::Assistant(failed.clone()),
        Message::Assistant(tools),
        Message::User {
            content: vec![ContentBlock::ToolResult {
                tool_use_id: "call_1".into(),
                content: "x".into(),
                is_error: true,
            }],
        },
    ];
    let back: Vec<Message> = serde_json::from_str(&serde_json::to_string(&messages).unwrap()).unwrap();
    assert_eq!(back, messages);
    let failed_back: AssistantMessage = serde_json::from_value(serde_json::to_value(&failed).unwrap()).unwrap();
    assert_eq!(failed_back, failed);
    let error = failed_back.error.unwrap();
    assert_eq!((error.retry_after(), error.status()), (Some(Duration::from_millis(2500)), Some(429)));
    assert_eq!(error, failure);
}

/// The most calls of a `slow` tool that ran at once in one exec.
async fn most_at_once(durable: Option<MemoryLog>) -> usize {
    let (running, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (now, top) = (running.clone(), most.clone());
    let tools = Toolbox::new().with_fn("slow", "Takes a second.", json!(null), move |_| {
        let (now, top) = (now.clone(), top.clone());
        async move {
            top.fetch_max(now.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_secs(1)).await;
            now.fetch_sub(1, Ordering::SeqCst);
            Ok("done".to_owned())
        }
    });
    let script =
        [Scripted::tool_calls([("slow", json!({})), ("slow", json!({})), ("slow", json!({}))]), Scripted::ok("ok")];
    let runtime = Runtime::builder(ScriptedProvider::new(script)).with_tools(tools).build().unwrap();
    let reply = match durable {
        None => runtime.exec(PROMPT).await,
        Some(log) => durable::scope(log, runtime.exec(PROMPT)).await,
    };
    assert_eq!(reply.unwrap().text(), "ok");
    most.load(Ordering::SeqCst)
}

/// Outside a durable scope a turn's calls run at once, as they always did; inside one, one at a
/// time, so that every replay journals them in the same order.
#[tokio::test(start_paused = true)]
async fn only_a_durable_run_runs_its_tools_one_at_a_time() {
    assert_eq!(most_at_once(None).await, 3);
    assert_eq!(most_at_once(Some(MemoryLog::new("slow"))).await, 1);
}
