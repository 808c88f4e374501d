//! A compaction in a durable run is a step: a process that dies after it goes on with the
//! conversation it recorded, without asking the model for the summary again, and a replay whose
//! compactor changed stops with `ReplayMismatch`. On a `MemoryLog`, on paused time.

use std::time::Duration;

use agentic_runtime::compact::{Compactor, DropOldest, Summarize};
use agentic_runtime::exec::durable::{self, MemoryLog};
use agentic_runtime::message::Usage;
use agentic_runtime::policy::Jitter;
use agentic_runtime::provider::{RecordedRequest, Scripted, ScriptedProvider};
use agentic_runtime::tool::{Delivery, Toolbox};
use agentic_runtime::{ExecError, ExecErrorKind, Reply, RetryPolicy, Runtime};
use serde_json::{Value, json};

const PROMPT: &str = "Plan the trip to Lisbon.";
const SUMMARY: &str = "Summary: flights to Lisbon found, TP 1351 the cheapest.";
const ANSWER: &str = "TP 1351 on Friday, EUR 89.";
/// Longer than any run here takes on paused time: a process still running after it is dead.
const FOREVER: Duration = Duration::from_secs(24 * 3600);

/// Two tool turns, then an overflow that the summary (the fourth call) makes room for.
fn script() -> Vec<Scripted> {
    let overflow =
        Scripted::http(400, "This model's maximum context length is 8192 tokens").with_code("context_length_exceeded");
    vec![
        Scripted::tool_call("search", json!({"q": "flights to Lisbon"})).with_usage(Usage::new(100, 10)),
        Scripted::tool_call("read", json!({"q": "fare rules"})).with_usage(Usage::new(200, 20)),
        overflow,
        Scripted::ok(SUMMARY).with_usage(Usage::new(300, 30)),
        Scripted::ok(ANSWER).with_usage(Usage::new(400, 40)),
    ]
}

/// The run's 11 steps, by their records' kinds (each model call's start marker before its record).
const KINDS: [&str; 11] = [
    "model_started",
    "model",
    "tool",
    "model_started",
    "model",
    "tool",
    "model_started",
    "model",
    "compaction",
    "model_started",
    "model",
];
/// The compaction's step.
const COMPACTION: u64 = 9;

fn runtime(provider: &ScriptedProvider, compactor: impl Compactor + 'static) -> Runtime {
    runtime_with(provider, compactor, RetryPolicy::default())
}

fn runtime_with(provider: &ScriptedProvider, compactor: impl Compactor + 'static, policy: RetryPolicy) -> Runtime {
    let tools = Toolbox::new()
        .with_fn("search", "Searches.", json!(null), |_| async { Ok("TP 1351 EUR 89, FR 7 EUR 120".to_owned()) })
        .with_fn("read", "Reads.", json!(null), |_| async { Ok("no refunds".to_owned()) })
        .with_delivery("search", Delivery::AtLeastOnce)
        .with_delivery("read", Delivery::AtLeastOnce);
    Runtime::builder(provider.clone()).with_tools(tools).with_compactor(compactor).with_policy(policy).build().unwrap()
}

/// One process of the run: `None` when it "died" (never ended).
async fn process(runtime: &Runtime, log: &MemoryLog) -> Option<Result<Reply, ExecError>> {
    tokio::time::timeout(FOREVER, durable::scope(log.clone(), runtime.exec(PROMPT))).await.ok()
}

fn kinds(records: &[Value]) -> Vec<&str> {
    records.iter().map(|record| record["kind"].as_str().unwrap_or("?")).collect()
}

/// The requests that asked for the summary.
fn summary_requests(requests: &[RecordedRequest]) -> usize {
    let asks = |request: &&RecordedRequest| {
        let text = serde_json::to_string(&request.messages).unwrap();
        text.contains("no longer fits your context window")
    };
    requests.iter().filter(asks).count()
}

#[tokio::test(start_paused = true)]
async fn a_run_stopped_after_any_step_asks_for_the_summary_once() {
    let provider = ScriptedProvider::new(script());
    let log = MemoryLog::new("trip");
    let clean = process(&runtime(&provider, Summarize::keeping(1)), &log).await.unwrap().unwrap();
    assert_eq!((clean.text(), provider.calls()), (ANSWER, 5));
    let clean_records = log.records();
    assert_eq!(kinds(&clean_records), KINDS);
    let compaction = &clean_records[COMPACTION as usize - 1];
    assert!(compaction["outcome"]["messages"].to_string().contains(SUMMARY), "{compaction}");
    assert_eq!(compaction["calls"], 4, "the summary's call counts: {compaction}");
    let clean_requests = provider.requests();
    assert_eq!(summary_requests(&clean_requests), 1);

    for k in 1..=KINDS.len() as u64 {
        let provider = ScriptedProvider::new(script());
        let log = MemoryLog::new("trip").stopping_after(k);
        let first = process(&runtime(&provider, Summarize::keeping(1)), &log).await;
        assert_eq!(first.is_some(), k == KINDS.len() as u64, "after step {k}: {first:?}");

        let next = log.restarted();
        let reply = process(&runtime(&provider, Summarize::keeping(1)), &next).await.expect("the restart ends");
        let reply = reply.unwrap_or_else(|error| panic!("after step {k}: {error}"));
        assert_eq!(reply.text(), ANSWER, "after step {k}");
        assert_eq!(provider.calls(), 5, "after step {k}: each call once over both processes");
        // Stopped right after a call's start marker, the next process counts the call it cannot
        // tell was made, and marks it again.
        let marked = KINDS[k as usize - 1] == "model_started";
        assert_eq!(summary_requests(&provider.requests()), 1, "after step {k}");
        // The answer's request is the one without a crash: the summary recorded, not another.
        let last = |requests: &[RecordedRequest]| requests.last().unwrap().messages.clone();
        assert_eq!(last(&provider.requests()), last(&clean_requests), "after step {k}");
        // The summary's call and tokens count in the restarted exec as they did in the first.
        let calls = clean.calls() + u32::from(marked);
        assert_eq!((reply.calls(), reply.total_usage()), (calls, clean.total_usage()), "after step {k}");
        if !marked {
            assert_eq!(next.records(), clean_records, "after step {k}: the journal is the uninterrupted run's");
        }
        let compacted = reply.decisions().iter().filter(|decision| decision.verdict().name() == "compacted").count();
        assert_eq!(compacted, 1, "after step {k}: the compaction is among the decisions, replayed or not");
    }
}

/// A process that dies inside the compaction, after the summary's call: the call is made again
/// (its answer was never recorded), and the run goes on with the second summary.
#[tokio::test(start_paused = true)]
async fn a_run_killed_inside_the_compaction_asks_again() {
    let mut script = script();
    script.insert(4, Scripted::ok("Summary, second take: TP 1351."));
    let provider = ScriptedProvider::new(script);
    let log = MemoryLog::new("trip").dying_in(COMPACTION);
    assert!(process(&runtime(&provider, Summarize::keeping(1)), &log).await.is_none());
    assert_eq!(provider.calls(), 4);

    let next = log.restarted();
    let reply = process(&runtime(&provider, Summarize::keeping(1)), &next).await.unwrap().unwrap();
    assert_eq!((reply.text(), provider.calls()), (ANSWER, 6));
    assert_eq!(kinds(&next.records()), KINDS);
    let answer = serde_json::to_string(&provider.requests().last().unwrap().messages).unwrap();
    assert!(answer.contains("second take"), "{answer}");
}

/// A restart whose compactor changed meets the recorded compaction: it stops there, naming both.
#[tokio::test(start_paused = true)]
async fn a_replay_with_another_compactor_is_a_mismatch() {
    let provider = ScriptedProvider::new(script());
    let log = MemoryLog::new("trip").stopping_after(COMPACTION);
    assert!(process(&runtime(&provider, Summarize::keeping(1)), &log).await.is_none());

    let next = log.restarted();
    let error = process(&runtime(&provider, DropOldest::keeping(1)), &next).await.unwrap().unwrap_err();
    assert_eq!(error.kind(), ExecErrorKind::ReplayMismatch, "{error}");
    let text = &error.attempt_errors()[0];
    assert!(text.starts_with(&format!("ReplayMismatch: step {COMPACTION} ")), "{text}");
    assert!(text.contains("the journal holds `compaction by `summarize` of 5 messages`"), "{text}");
    assert!(text.contains("this run takes `compaction by `drop_oldest` of 5 messages` there"), "{text}");
    assert_eq!(provider.calls(), 4, "no call after the mismatch");
}

/// A summary call that fails is retried by layer 2 inside the compaction's step: its wait is part
/// of the step, not a step of its own (an engine takes one step at a time; Restate may not take one
/// inside another), and a restart after the step waits it no more than it asks again.
#[tokio::test(start_paused = true)]
async fn the_compactors_retries_are_inside_its_step() {
    let wait = Duration::from_secs(5);
    let script = || {
        let mut script = script();
        script.insert(3, Scripted::http(503, "Service Unavailable").with_retry_after(wait));
        script
    };
    let policy = RetryPolicy::new().with_session_retries(0).with_jitter(Jitter::None);
    let runtime = |provider: &ScriptedProvider| runtime_with(provider, Summarize::keeping(1), policy);
    let provider = ScriptedProvider::new(script());
    let log = MemoryLog::new("trip").stopping_after(COMPACTION);
    assert!(process(&runtime(&provider), &log).await.is_none());
    assert_eq!(kinds(&log.records()), KINDS[..COMPACTION as usize]);
    let compaction = &log.records()[COMPACTION as usize - 1];
    assert!(compaction["took_ms"].as_u64().unwrap() >= 5_000, "the wait is the step's: {compaction}");
    assert_eq!(provider.calls(), 5);

    let next = log.restarted();
    let started = tokio::time::Instant::now();
    let reply = process(&runtime(&provider), &next).await.unwrap().unwrap();
    assert!(started.elapsed() < wait, "the replayed compaction is not waited again");
    assert_eq!((reply.text(), provider.calls(), reply.calls()), (ANSWER, 6, 6));
    assert!(reply.elapsed() >= wait, "its wait counts: {:?}", reply.elapsed());
}

/// A compaction record whose conversation no turn can be made with (here empty, as a journal may
/// hold anything) is a replay mismatch at the compaction, not a call with nothing to answer.
#[tokio::test(start_paused = true)]
async fn a_recorded_conversation_that_cannot_go_on_is_a_mismatch() {
    let provider = ScriptedProvider::new(script());
    let log = MemoryLog::new("trip").stopping_after(COMPACTION);
    assert!(process(&runtime(&provider, Summarize::keeping(1)), &log).await.is_none());
    let mut records = log.records();
    records[COMPACTION as usize - 1]["outcome"]["messages"] = json!([]);

    let next = MemoryLog::with_records("trip", records);
    let error = process(&runtime(&provider, Summarize::keeping(1)), &next).await.unwrap().unwrap_err();
    assert_eq!(error.kind(), ExecErrorKind::ReplayMismatch, "{error}");
    let text = &error.attempt_errors()[0];
    assert!(text.starts_with(&format!("ReplayMismatch: step {COMPACTION} ")), "{text}");
    assert!(text.contains("its conversation is not one to go on with: it returned an empty conversation"), "{text}");
    assert_eq!(provider.calls(), 4, "no call after it");
}
