//! Token usage through both layers: the answer's call, every call summed, and the part spent on
//! attempts that failed (failed calls that reported usage, answers the validator rejected).

use agentic_runtime::message::Usage;
use agentic_runtime::{ExecError, Reply, Runtime, Scripted, ScriptedProvider, agentic_function};

#[tokio::test(start_paused = true)]
async fn usage_sums_a_failed_and_a_successful_call() {
    let provider = ScriptedProvider::new([
        Scripted::error("503 overloaded").with_usage(Usage::new(120, 3)),
        Scripted::ok("the answer").with_usage(Usage::new(120, 40).with_cache_read(100)),
    ]);
    let reply = Runtime::new(provider).exec("the question").await.unwrap();
    assert_eq!(reply.usage(), Some(Usage::new(120, 40).with_cache_read(100)));
    assert_eq!(reply.total_usage(), Usage::new(240, 43).with_cache_read(100));
    assert_eq!(reply.failed_usage(), Usage::new(120, 3));
}

#[tokio::test(start_paused = true)]
async fn a_call_without_usage_counts_nothing() {
    let reply = Runtime::new(ScriptedProvider::new([Scripted::ok("hi")])).exec("q").await.unwrap();
    assert_eq!(reply.usage(), None);
    assert!(reply.total_usage().is_zero());
}

#[tokio::test(start_paused = true)]
async fn a_failed_exec_reports_what_its_calls_used() {
    let provider = ScriptedProvider::new([Scripted::http(401, "invalid api key").with_usage(Usage::new(7, 0))]);
    let error = Runtime::new(provider).exec("q").await.unwrap_err();
    assert_eq!(error.kind().name(), "permanent");
    assert_eq!(error.usage(), Usage::new(7, 0));
}

fn not_empty(reply: &Reply) -> Result<(), String> {
    if reply.text().trim().is_empty() { Err("the answer is empty".into()) } else { Ok(()) }
}

#[agentic_function(max_retries = 2, validate = not_empty)]
async fn answer(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("q").await
}

#[tokio::test(start_paused = true)]
async fn a_rejected_answer_counts_as_spent_on_a_failed_attempt() {
    let provider = ScriptedProvider::new([
        Scripted::ok(" ").with_usage(Usage::new(10, 1)),
        Scripted::ok("fine").with_usage(Usage::new(20, 2)),
    ]);
    let reply = answer(&Runtime::new(provider)).await.unwrap();
    assert_eq!(reply.total_usage(), Usage::new(30, 3));
    assert_eq!(reply.failed_usage(), Usage::new(10, 1));
}

#[tokio::test(start_paused = true)]
async fn journal_records_and_decisions_carry_the_tokens() {
    use agentic_runtime::observe::journal::FailureRecord;
    let provider = ScriptedProvider::new([
        Scripted::error("503 overloaded").with_usage(Usage::new(50, 2)),
        Scripted::http(401, "invalid api key").with_usage(Usage::new(50, 0)),
    ]);
    let error = Runtime::new(provider).exec("q").await.unwrap_err();
    assert_eq!(error.decisions()[0].usage(), Some(Usage::new(50, 2)), "the retried call's");
    let record = FailureRecord::from_exec_error(&error);
    assert_eq!(record.usage, Some(Usage::new(100, 2)), "every call of the exec");
    let line = serde_json::to_string(&record).unwrap();
    assert!(line.contains(r#""usage":{"input_tokens":100,"output_tokens":2}"#), "{line}");
    assert_eq!(FailureRecord::retry(None, &error.decisions()[0]).usage, Some(Usage::new(50, 2)));
}
