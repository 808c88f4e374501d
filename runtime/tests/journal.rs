//! The failure journal: records round-trip through the file, a line cut by a crash leaves the
//! records after it whole, concurrent writers leave only whole lines, retries are opt-in, and a
//! failed write is logged once and never fatal. Reading a journal back, corrupt lines and all, is
//! `agentic journal`'s, and tested with the CLI.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agentic_test_support::temp_file::TempFile;
use agentic_test_support::written::journal_lines;

use agentic_runtime::classify::Reason;
use agentic_runtime::decision::Decision;
use agentic_runtime::decision::{Layer, Verdict, Why};
use agentic_runtime::observe::journal::{AttemptRecord, Event, FailureRecord, Journal};
use agentic_runtime::provider::TransportKind;
use agentic_runtime::{ExecError, ExecErrorKind, Reply, Runtime, Scripted, ScriptedProvider, agentic_function};

#[agentic_function(max_retries = 2, session_retries = 1)]
async fn summarize(runtime: &Runtime) -> Result<Reply, ExecError> {
    runtime.exec("Summarize this.").await
}

fn retry_decision(call: u32, error: &str) -> Decision {
    let why = Why::Judged(Reason::RetryableStatus(429).into());
    Decision::new(Layer::Session, 1, call, error, Verdict::Retry, why, Duration::from_millis(1234))
        .with_delay(Duration::from_millis(2000))
}

/// A failed exec of `summarize` during a full 429 outage.
async fn rate_limited_exec() -> ExecError {
    let provider = ScriptedProvider::new([]).otherwise(Scripted::http(429, "Too Many Requests"));
    let runtime = Runtime::builder(provider).with_jitter_seed(7).build().unwrap();
    summarize(&runtime).await.expect_err("every call is rate limited")
}

#[tokio::test(start_paused = true)]
async fn an_exec_error_becomes_a_record_with_every_decision() {
    let error = rate_limited_exec().await;
    let record = FailureRecord::from_exec_error(&error);
    assert_eq!(record.event, Event::Failure);
    assert_eq!((record.op.as_str(), record.name.as_str()), ("exec", "summarize"));
    assert_eq!(record.kind, error.kind().name());
    assert_eq!(record.last_error, "RateLimitError: 429 Too Many Requests");
    assert_eq!((record.status, record.code.as_deref()), (Some(429), None));
    assert_eq!(record.calls, error.calls());
    assert_eq!(record.elapsed_ms, u64::try_from(error.elapsed().as_millis()).unwrap());
    assert_eq!(record.attempts.len(), error.decisions().len());
    for (attempt, decision) in record.attempts.iter().zip(error.decisions()) {
        assert_eq!(attempt.layer, decision.layer().name());
        assert_eq!(attempt.verdict, decision.verdict().name());
        assert_eq!(attempt.delay_ms, decision.delay().map(|delay| u64::try_from(delay.as_millis()).unwrap()));
        assert_eq!((attempt.attempt, attempt.call), (decision.attempt(), decision.call()));
    }
    assert!(record.attempts.iter().any(|attempt| attempt.verdict == "retry" && attempt.delay_ms.is_some()));
}

#[tokio::test(start_paused = true)]
async fn unnamed_execs_permanent_failures_and_transport_failures() {
    let permanent =
        Runtime::new(ScriptedProvider::new([Scripted::http(401, "invalid api key").with_code("invalid_key")]))
            .exec("hello")
            .await
            .unwrap_err();
    let record = FailureRecord::from_exec_error(&permanent);
    assert_eq!((record.name.as_str(), record.kind.as_str()), ("exec", "permanent"));
    assert_eq!((record.status, record.code.as_deref()), (Some(401), Some("invalid_key")));
    assert_eq!(record.last_error, "AuthenticationError: 401 invalid api key");
    assert_eq!(record.attempts.last().map(|attempt| attempt.verdict.as_str()), Some("fail_permanently"));

    let provider = ScriptedProvider::new([]).otherwise(Scripted::transport(TransportKind::Timeout, "no reply in 30 s"));
    let timeout = Runtime::new(provider).exec("hello").await.unwrap_err();
    let record = FailureRecord::from_exec_error(&timeout);
    assert_eq!((record.status, record.last_error.as_str()), (None, "TimeoutError: no reply in 30 s"));
}

#[tokio::test(start_paused = true)]
async fn records_round_trip_through_the_file() {
    let file = TempFile::new("round-trip");
    let journal = Journal::open(file.path()).unwrap().with_retries(true);
    let mut handmade = FailureRecord::new("llm", "refused", "ModelError: line one\nline \"two\" é").with_time_ms(42);
    handmade.op = "call".to_owned();
    handmade.status = Some(503);
    handmade.code = Some("overloaded".to_owned());
    handmade.stopped_by = Some("the retry quota is empty".to_owned());
    handmade.calls = 3;
    handmade.elapsed_ms = 4500;
    let written = vec![
        FailureRecord::from_exec_error(&rate_limited_exec().await),
        handmade,
        FailureRecord::retry(Some("summarize"), &retry_decision(2, "RateLimitError: 429 Too Many Requests")),
        FailureRecord::retry(None, &retry_decision(1, "ModelError")),
        FailureRecord::new("exec", "exhausted", ""),
    ];
    for record in &written {
        journal.record(record).unwrap();
    }

    let contents = journal_lines(file.path());
    assert_eq!(contents.records, written);
    assert!(contents.bad_lines.is_empty(), "{:?}", contents.bad_lines);
    let text = std::fs::read_to_string(file.path()).unwrap();
    assert_eq!(text.lines().count(), written.len(), "one line per record: {text}");
    assert!(text.ends_with('\n'));

    let retry = &contents.records[2];
    assert_eq!((retry.event, retry.kind.as_str(), retry.name.as_str()), (Event::Retry, "retry", "summarize"));
    assert_eq!((retry.calls, retry.elapsed_ms), (2, 1234));
    assert_eq!(retry.attempts[0].delay_ms, Some(2000));
    assert_eq!((retry.status, retry.last_error.as_str()), (None, "RateLimitError: 429 Too Many Requests"));
    assert_eq!(contents.records[3].name, "exec");
}

#[test]
fn a_corrupt_line_and_a_cut_last_line_leave_the_other_records_whole() {
    let file = TempFile::new("corrupt");
    let journal = Journal::open(file.path()).unwrap();
    let first = FailureRecord::new("a", "exhausted", "ServiceUnavailableError: 503").with_time_ms(1);
    let second = FailureRecord::new("b", "permanent", "AuthenticationError: 401 bad key").with_time_ms(2);
    let third = FailureRecord::new("c", "exhausted", "TimeoutError").with_time_ms(3);
    journal.record(&first).unwrap();
    file.append_raw(b"{\"time_ms\": 5, \"name\": \"x\", \"kind\"\n");
    journal.record(&second).unwrap();
    file.append_raw(b"\n");
    journal.record(&third).unwrap();
    file.append_raw(br#"{"time_ms":1764511320000,"event":"failure","op":"exec","na"#);

    let contents = journal_lines(file.path());
    assert_eq!(contents.records, [first, second, third]);
    assert_eq!(contents.bad_lines, [2, 6]);

    // A record appended by a handle opened before the cut is glued to it: the handle cannot know
    // (another writer cut the line after it opened the file).
    journal.record(&FailureRecord::new("d", "exhausted", "x").with_time_ms(4)).unwrap();
    let contents = journal_lines(file.path());
    assert_eq!(contents.records.len(), 3, "the cut line swallowed d's record: {contents:?}");
    assert_eq!(contents.bad_lines, [2, 6]);

    // A journal opened on a file that ends mid-line (a writer crashed) starts its first record on
    // a line of its own, and the next ones follow it.
    file.append_raw(br#"{"time_ms":1764511320000,"event":"fail"#);
    let reopened = Journal::open(file.path()).unwrap();
    for (name, time) in [("e", 5), ("f", 6)] {
        reopened.record(&FailureRecord::new(name, "exhausted", "x").with_time_ms(time)).unwrap();
    }
    let contents = journal_lines(file.path());
    let names: Vec<&str> = contents.records.iter().map(|record| record.name.as_str()).collect();
    assert_eq!(names, ["a", "b", "c", "e", "f"]);
    assert_eq!(contents.bad_lines, [2, 6, 7]);
}

#[test]
fn concurrent_writers_leave_only_whole_lines() {
    const THREADS: usize = 8;
    const EACH: usize = 200;
    let file = TempFile::new("concurrent");
    let journal = Journal::open(file.path()).unwrap();
    // Long lines (about 5 KB each) would show any interleaving.
    let padding = "x".repeat(5000);
    std::thread::scope(|scope| {
        for thread in 0..THREADS {
            // Each thread writes through its own clone, and one more through its own `open`.
            let journal = if thread == 0 { Journal::open(file.path()).unwrap() } else { journal.clone() };
            let padding = &padding;
            scope.spawn(move || {
                for index in 0..EACH {
                    let record = FailureRecord::new(format!("t{thread}"), "exhausted", padding.as_str())
                        .with_time_ms(index as u64);
                    journal.record(&record).unwrap();
                }
            });
        }
    });

    let contents = journal_lines(file.path());
    assert!(contents.bad_lines.is_empty(), "{:?}", &contents.bad_lines[..contents.bad_lines.len().min(3)]);
    assert_eq!(contents.records.len(), THREADS * EACH);
    for thread in 0..THREADS {
        let name = format!("t{thread}");
        let times: Vec<u64> =
            contents.records.iter().filter(|record| record.name == name).map(|record| record.time_ms).collect();
        assert_eq!(times, (0..EACH as u64).collect::<Vec<_>>(), "each thread's lines are whole and in order");
    }
    assert!(contents.records.iter().all(|record| record.last_error == padding));
}

#[test]
fn retries_are_written_only_when_asked_for() {
    let file = TempFile::new("retries");
    let quiet = Journal::open(file.path()).unwrap();
    assert!(!quiet.retries());
    let decision = retry_decision(1, "RateLimitError: 429 Too Many Requests");
    quiet.record(&FailureRecord::retry(Some("f"), &decision)).unwrap();
    quiet.record_decision(Some("f"), &decision).unwrap();
    assert!(journal_lines(file.path()).records.is_empty());

    let loud = quiet.clone().with_retries(true);
    assert!(!quiet.retries(), "the setting belongs to the clone");
    loud.record_decision(Some("f"), &decision).unwrap();
    let why = Why::Judged(Reason::RetryableStatus(429).into());
    let given_up = Decision::new(Layer::Session, 1, 1, decision.error(), Verdict::GiveUp, why, decision.at());
    loud.record_decision(Some("f"), &given_up).unwrap();
    let records = journal_lines(file.path()).records;
    assert_eq!(records.len(), 1, "only the retry: {records:?}");
    assert_eq!(records[0].event, Event::Retry);
    assert_eq!(
        records[0].attempts,
        [AttemptRecord::from(&decision)],
        "the decision is the retry record's only attempt"
    );
}

#[tokio::test(start_paused = true)]
async fn an_observer_and_the_exec_error_fill_the_journal() {
    let file = TempFile::new("observer");
    let journal = Journal::open(file.path()).unwrap().with_retries(true);
    let observer = journal.clone();
    let provider = ScriptedProvider::new([]).otherwise(Scripted::http(503, ""));
    let runtime = Runtime::builder(provider)
        .with_observer(move |decision| {
            let _ = observer.record_decision(None, decision);
        })
        .build()
        .unwrap();
    let error = runtime.exec("hello").await.unwrap_err();
    journal.record_exec_error(&error).unwrap();

    let records = journal_lines(file.path()).records;
    let retries = error.decisions().iter().filter(|decision| decision.verdict() == Verdict::Retry).count();
    assert!(retries > 0);
    let got: Vec<(Event, &str, &str, Option<u16>)> = records
        .iter()
        .map(|record| (record.event, record.kind.as_str(), record.last_error.as_str(), record.status))
        .collect();
    let mut expected = vec![(Event::Retry, "retry", "ServiceUnavailableError: 503", None); retries];
    expected.push((Event::Failure, error.kind().name(), "ServiceUnavailableError: 503", Some(503)));
    assert_eq!(got, expected, "every retry, then the failure");
}

/// Counts the journal's WARN events.
struct CountWarnings(Arc<AtomicUsize>);

impl tracing::Subscriber for CountWarnings {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let metadata = event.metadata();
        if *metadata.level() == tracing::Level::WARN
            && metadata.target().starts_with("agentic_runtime::observe::journal")
        {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[cfg(target_os = "linux")]
#[test]
fn a_failed_write_is_returned_and_logged_once() {
    let warnings = Arc::new(AtomicUsize::new(0));
    let journal = Journal::open("/dev/full").expect("/dev/full opens");
    let record = FailureRecord::new("f", "exhausted", "x");
    let exec_error = rate_limited_error_sync();
    tracing::subscriber::with_default(CountWarnings(warnings.clone()), || {
        for _ in 0..3 {
            let error = journal.record(&record).unwrap_err();
            assert_eq!(error.raw_os_error(), Some(28), "ENOSPC: {error}");
            let error = journal.clone().record_exec_error(&exec_error).unwrap_err();
            assert_eq!(error.raw_os_error(), Some(28));
        }
    });
    assert_eq!(warnings.load(Ordering::Relaxed), 1, "one warning for the journal and its clones");
}

/// A failed exec, made on a runtime of its own (the test above is not async).
fn rate_limited_error_sync() -> ExecError {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
    let error = runtime.block_on(rate_limited_exec());
    assert!(matches!(error.kind(), ExecErrorKind::Exhausted | ExecErrorKind::Refused));
    error
}
