//! The failure journal hooked into `Runtime::exec` and resilient calls.

use agentic_test_support::temp_file::TempFile;
use agentic_test_support::written::journal_lines;

use agentic_runtime::observe::journal::Journal;
use agentic_runtime::resilient::Resilient;
use agentic_runtime::{ExecError, Reply, RetryPolicy, Runtime, Scripted, ScriptedProvider, agentic_function};

/// Summarize the text.
#[agentic_function(max_retries = 2, session_retries = 1)]
async fn summarize(runtime: &Runtime, text: &str) -> Result<Reply, ExecError> {
    runtime.exec(text).await
}

#[tokio::test(start_paused = true)]
async fn every_final_failure_of_exec_is_one_line() {
    let file = TempFile::new("exec");
    let provider = ScriptedProvider::new([]).otherwise(Scripted::http(429, "Too Many Requests"));
    let runtime = Runtime::builder(provider).with_journal(Journal::open(&file.0).unwrap()).build().unwrap();
    for _ in 0..3 {
        summarize(&runtime, "text").await.unwrap_err();
    }
    let provider = ScriptedProvider::new([Scripted::ok("fine")]);
    Runtime::builder(provider).with_journal(Journal::open(&file.0).unwrap()).build().unwrap().exec("ok").await.unwrap();

    let contents = journal_lines(&file.0);
    assert!(contents.bad_lines.is_empty());
    assert_eq!(contents.records.len(), 3, "failures only");
    for record in &contents.records {
        assert_eq!((record.name.as_str(), record.kind.as_str()), ("summarize", "exhausted"));
        assert_eq!((record.status, record.last_error.as_str()), (Some(429), "RateLimitError: 429 Too Many Requests"));
        assert_eq!(record.calls, 4);
    }
}

#[tokio::test(start_paused = true)]
async fn retries_are_recorded_when_asked() {
    let file = TempFile::new("retries");
    let provider = ScriptedProvider::new([Scripted::error("overloaded"), Scripted::ok("fine")]);
    let runtime =
        Runtime::builder(provider).with_journal(Journal::open(&file.0).unwrap().with_retries(true)).build().unwrap();
    runtime.exec("hi").await.unwrap();
    let contents = journal_lines(&file.0);
    assert_eq!(contents.records.len(), 1);
    assert_eq!(contents.records[0].event.to_string(), "retry");
}

#[tokio::test(start_paused = true)]
async fn resilient_calls_record_their_failure() {
    let file = TempFile::new("call");
    let journal = Journal::open(&file.0).unwrap();
    let policy = RetryPolicy::new().with_max_retries(2);
    let _ = Resilient::<()>::new("fetch prices", &policy)
        .with_journal(&journal)
        .call(|| async { Err(std::io::Error::from(std::io::ErrorKind::ConnectionRefused)) })
        .await
        .unwrap_err();
    let contents = journal_lines(&file.0);
    assert_eq!(contents.records.len(), 1);
    let record = &contents.records[0];
    assert_eq!((record.op.as_str(), record.name.as_str(), record.kind.as_str()), ("call", "fetch prices", "exhausted"));
    assert_eq!(record.attempts.len(), 2);
}
