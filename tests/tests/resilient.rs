//! Resilient calls for any async operation: io errors, reqwest errors, user errors, validators,
//! timeouts and the deadline, on paused time.

use std::cell::Cell;
use std::fmt;
use std::io::{Error, ErrorKind};
use std::time::Duration;

use agentic_test_support::temp_file::TempFile;

use agentic_runtime::classify::ExecAction;
use agentic_runtime::decision::Verdict;
use agentic_runtime::policy::Jitter;
use agentic_runtime::resilient::{Classification, Classify, HttpStatus, Resilient};
use agentic_runtime::{ExecErrorKind, RetryPolicy};

/// The defaults without jitter: pins the exact schedule (1.5 s, 3 s).
const POLICY: RetryPolicy = RetryPolicy::new().with_jitter(Jitter::None);

fn sleeps<E>(failure: &agentic_runtime::resilient::Failure<E>) -> Vec<u128> {
    failure.decisions().iter().filter_map(|d| d.delay()).map(|d| d.as_millis()).collect()
}

#[tokio::test(start_paused = true)]
async fn io_errors_retry_on_the_exec_schedule_then_succeed() {
    let calls = Cell::new(0);
    let start = tokio::time::Instant::now();
    let value = Resilient::new("read", &POLICY)
        .call(|| {
            calls.set(calls.get() + 1);
            let n = calls.get();
            async move { if n < 3 { Err(Error::from(ErrorKind::ConnectionReset)) } else { Ok(n) } }
        })
        .await
        .unwrap();
    assert_eq!(value, 3);
    assert_eq!(start.elapsed(), Duration::from_millis(4500), "1.5 s then 3 s");
}

#[tokio::test(start_paused = true)]
async fn a_permanent_io_error_stops_after_one_attempt() {
    let calls = Cell::new(0);
    let failure = Resilient::new("open config", &POLICY)
        .call(|| {
            calls.set(calls.get() + 1);
            async { Err::<(), _>(Error::new(ErrorKind::NotFound, "config.toml")) }
        })
        .await
        .unwrap_err();
    assert_eq!(calls.get(), 1);
    assert_eq!(failure.kind(), ExecErrorKind::Permanent);
    assert_eq!(failure.name(), "open config");
    assert_eq!(failure.last_error().unwrap().kind(), ErrorKind::NotFound);
    assert_eq!(failure.to_string(), "open config failed permanently:\nAttempt 1: config.toml");
}

#[tokio::test(start_paused = true)]
async fn exhaustion_keeps_every_attempt_with_its_verdict_and_delay() {
    let failure = Resilient::new("fetch", &POLICY)
        .call(|| async { Err::<(), _>(Error::from(ErrorKind::TimedOut)) })
        .await
        .unwrap_err();
    assert_eq!(failure.kind(), ExecErrorKind::Exhausted);
    assert_eq!(sleeps(&failure), [1500, 3000]);
    let verdicts: Vec<Verdict> = failure.decisions().iter().map(|d| d.verdict()).collect();
    assert_eq!(verdicts, [Verdict::Retry, Verdict::Retry, Verdict::Exhausted]);
    assert_eq!(failure.decisions()[0].reason(), "I/O timed out");
    assert_eq!(failure.elapsed(), Duration::from_millis(4500));
}

#[derive(Debug)]
enum SearchError {
    Busy { retry_after: Duration },
    BadQuery,
}

impl fmt::Display for SearchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SearchError::Busy { .. } => f.write_str("SearchError: busy"),
            SearchError::BadQuery => f.write_str("SearchError: bad query"),
        }
    }
}

impl Classify for SearchError {
    fn classify(&self) -> Classification {
        match self {
            SearchError::Busy { retry_after } => {
                Classification::retry("the index is busy").with_retry_after(Some(*retry_after))
            }
            SearchError::BadQuery => Classification::permanent("the query is malformed"),
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_user_error_type_decides_and_its_hint_is_a_floor() {
    let calls = Cell::new(0);
    let result = Resilient::<()>::new("search", &POLICY)
        .call(|| {
            calls.set(calls.get() + 1);
            let n = calls.get();
            async move {
                match n {
                    1 => Err(SearchError::Busy { retry_after: Duration::from_secs(10) }),
                    _ => Err(SearchError::BadQuery),
                }
            }
        })
        .await
        .unwrap_err();
    assert_eq!(sleeps(&result), [10_000]);
    assert_eq!(result.kind(), ExecErrorKind::Permanent);
    assert!(matches!(result.into_last_error(), Some(SearchError::BadQuery)));
}

#[tokio::test(start_paused = true)]
async fn a_rejected_value_is_a_retryable_failure() {
    let calls = Cell::new(0);
    let policy = POLICY.with_max_retries(2);
    let failure =
        Resilient::new("llm", &policy)
            .validate(|results: &Vec<u32>| {
                if results.len() == 60 { Ok(()) } else { Err(format!("expected 60 results, got {}", results.len())) }
            })
            .call(|| {
                calls.set(calls.get() + 1);
                async { Ok::<_, Error>(vec![1; 10]) }
            })
            .await
            .unwrap_err();
    assert_eq!(calls.get(), 2);
    assert_eq!(failure.kind(), ExecErrorKind::InvalidResult);
    assert_eq!(failure.decisions()[0].error(), "InvalidResult: expected 60 results, got 10");
    assert!(failure.last_error().is_none());
}

#[tokio::test(start_paused = true)]
async fn each_attempt_has_a_timeout_and_all_share_one_deadline() {
    let policy = POLICY.with_timeout_ms(2_000).with_budget_ms(Some(6_000));
    let start = tokio::time::Instant::now();
    let failure = Resilient::new("slow", &policy)
        .call(|| async {
            std::future::pending::<()>().await;
            Ok::<(), Error>(())
        })
        .await
        .unwrap_err();
    // 2 s, sleep 1.5 s, 2 s (at 5.5 s): a 3 s sleep does not fit in the 0.5 s left.
    assert_eq!(failure.kind(), ExecErrorKind::Refused);
    assert_eq!(start.elapsed(), Duration::from_millis(5500));
    assert_eq!(failure.decisions()[0].error(), "TimeoutError: attempt timed out after 2000 ms");
    assert!(failure.stopped_by().unwrap().starts_with("`budget_ms` (6000) would run out"));
}

#[test]
fn http_statuses_and_model_errors_classify_like_the_exec_layer() {
    assert_eq!(HttpStatus(429).classify().action, ExecAction::Retry);
    assert_eq!(HttpStatus(503).classify().action, ExecAction::Retry);
    assert_eq!(HttpStatus(401).classify().action, ExecAction::FailPermanently);
    assert_eq!(reqwest::StatusCode::NOT_FOUND.classify().action, ExecAction::FailPermanently);
    let error = agentic_runtime::provider::ModelError::http(429, "slow down").with_retry_after(Duration::from_secs(3));
    let class = error.classify();
    assert_eq!((class.action, class.retry_after), (ExecAction::Retry, Some(Duration::from_secs(3))));
    assert_eq!(agentic_runtime::provider::ModelError::parse("TypeError: bad").classify().action, ExecAction::Raise);
}

// Paused time: the backoff is virtual. The attempt's timer (the default `timeout_ms`) is set, but the
// loopback refuses the connect before the runtime parks, so the clock never skips to it.
#[tokio::test(start_paused = true)]
async fn reqwest_errors_connect_failures_retry_and_builder_errors_raise() {
    let client = reqwest::Client::new();
    let policy = POLICY.with_max_retries(2);
    let calls = Cell::new(0);
    // Nothing listens on port 9 of the loopback address: every connect is refused.
    let failure = Resilient::new("ping", &policy)
        .call(|| {
            calls.set(calls.get() + 1);
            client.get("http://127.0.0.1:9/").send()
        })
        .await
        .unwrap_err();
    assert_eq!(calls.get(), 2);
    assert_eq!(failure.kind(), ExecErrorKind::Exhausted);
    assert_eq!(failure.decisions()[0].reason(), "the connection failed");
    assert_eq!(failure.elapsed(), Duration::from_millis(1500));

    let failure = Resilient::new("bad url", &policy).call(|| client.get("not a url").send()).await.unwrap_err();
    assert_eq!(failure.kind(), ExecErrorKind::Programming);
    assert_eq!(failure.decisions().len(), 1);
}

#[tokio::test]
async fn an_invalid_policy_is_refused_before_any_attempt() {
    let policy = RetryPolicy::new().with_max_retries(0);
    let failure = Resilient::new("x", &policy).call(|| async { Ok::<(), Error>(()) }).await.unwrap_err();
    assert_eq!(failure.kind(), ExecErrorKind::Programming);
    assert!(failure.to_string().starts_with("x: invalid retry policy: `max_retries` (0)"), "{failure}");
}

#[tokio::test(start_paused = true)]
async fn a_budget_shorter_than_the_backoff_retries_what_fits() {
    // 4.5 s of worst-case backoff (46.5 s with both layers) and a 3 s budget: valid, retry what fits.
    let policy = POLICY.with_budget_ms(Some(3_000));
    assert!(policy.validate().is_ok());
    let value = Resilient::new("x", &policy).call(|| async { Ok::<_, Error>(7) }).await.unwrap();
    assert_eq!(value, 7);

    let calls = Cell::new(0);
    let failure = Resilient::new("x", &policy)
        .call(|| {
            calls.set(calls.get() + 1);
            async { Err::<(), _>(Error::from(ErrorKind::ConnectionReset)) }
        })
        .await
        .unwrap_err();
    // 1.5 s fits; then the 3 s wait does not fit in the 1.5 s left.
    assert_eq!(calls.get(), 2);
    assert_eq!(failure.kind(), ExecErrorKind::Refused);
    assert_eq!(sleeps(&failure), [1500]);
    assert_eq!(failure.elapsed(), Duration::from_millis(1500));
    assert_eq!(
        failure.stopped_by(),
        Some("`budget_ms` (3000) would run out: the wait of 3 s does not fit in the 1.5 s left")
    );
}

#[tokio::test(start_paused = true)]
async fn the_time_of_a_slow_first_attempt_counts() {
    let failure = Resilient::new("slow", &POLICY)
        .call(|| async {
            tokio::time::sleep(Duration::from_millis(200)).await;
            Err::<(), _>(Error::from(ErrorKind::ConnectionReset))
        })
        .await
        .unwrap_err();
    // 200 ms, 1.5 s, 200 ms, 3 s, 200 ms.
    assert_eq!(failure.elapsed(), Duration::from_millis(5100));
    let at: Vec<u128> = failure.decisions().iter().map(|decision| decision.at().as_millis()).collect();
    assert_eq!(at, [200, 1900, 5100]);
}

#[tokio::test(start_paused = true)]
async fn one_resilient_serves_many_calls_each_with_its_own_attempts() {
    let policy = POLICY.with_max_retries(2);
    let resilient = Resilient::new("fetch", &policy).with_jitter_seed(7);
    for round in 1..=3 {
        let calls = Cell::new(0);
        let failure = resilient
            .call(|| {
                calls.set(calls.get() + 1);
                async { Err::<(), _>(Error::from(ErrorKind::ConnectionReset)) }
            })
            .await
            .unwrap_err();
        assert_eq!((calls.get(), failure.decisions().len()), (2, 2), "round {round}");
        assert_eq!(failure.elapsed(), Duration::from_millis(1500));
    }
    let calls = Cell::new(0);
    resilient
        .call(|| {
            calls.set(calls.get() + 1);
            let fail = calls.get() == 1;
            async move { if fail { Err(Error::from(ErrorKind::ConnectionReset)) } else { Ok(()) } }
        })
        .await
        .unwrap();
    assert_eq!(calls.get(), 2);
}

/// The call's future is `Send` with a validator and a journal: it can run on another task.
#[tokio::test(start_paused = true)]
async fn a_call_can_be_spawned_onto_another_task() {
    static SPAWNED: RetryPolicy = RetryPolicy::new();
    let file = TempFile::new("spawned.jsonl");
    let journal: &'static agentic_runtime::observe::journal::Journal =
        Box::leak(Box::new(agentic_runtime::observe::journal::Journal::open(file.path()).unwrap()));
    let resilient = std::sync::Arc::new(
        Resilient::new(String::from("spawned"), &SPAWNED)
            .validate(|value: &u32| if *value > 0 { Ok(()) } else { Err("zero".into()) })
            .with_journal(journal),
    );
    let task = tokio::spawn({
        let resilient = std::sync::Arc::clone(&resilient);
        async move { resilient.call(|| async { Ok::<_, Error>(5) }).await }
    });
    assert_eq!(task.await.unwrap().unwrap(), 5);
}

/// A first attempt that never finishes is cut at the default limit (`timeout_ms`, 600 s), set when
/// it first waits; under a `timeout_ms` of the policy's own, the call's time counts from before the
/// first attempt.
#[tokio::test(start_paused = true)]
async fn a_first_attempt_that_hangs_is_cut_at_its_limit() {
    let hang = || async {
        std::future::pending::<()>().await;
        Ok::<(), Error>(())
    };
    let once = POLICY.with_max_retries(1);
    let failure = Resilient::new("hang", &once).call(hang).await.unwrap_err();
    assert_eq!(failure.kind(), ExecErrorKind::Exhausted);
    assert_eq!(failure.decisions()[0].error(), "TimeoutError: attempt timed out after 600000 ms");
    assert_eq!(failure.elapsed(), Duration::from_secs(600));
    let own = once.with_timeout_ms(2_000);
    let failure = Resilient::new("hang", &own).call(hang).await.unwrap_err();
    assert_eq!(failure.decisions()[0].error(), "TimeoutError: attempt timed out after 2000 ms");
    assert_eq!(failure.elapsed(), Duration::from_secs(2));
}

/// A call dropped while it waits, on its first attempt's timer or in its retry loop, drops what it
/// held there: the operation (here holding an `Arc`) and the timer, which leaves the timer wheel
/// (the clock then runs past where it would have gone off).
#[tokio::test(start_paused = true)]
async fn a_call_dropped_while_it_waits_drops_its_timer_and_retry_loop() {
    use std::future::Future;
    use std::sync::Arc;
    use std::task::Context;

    let held = Arc::new(());
    let operation = {
        let held = Arc::clone(&held);
        move || {
            let held = Arc::clone(&held);
            async move {
                tokio::time::sleep(Duration::from_secs(1)).await;
                drop(held);
                Err::<(), _>(Error::from(ErrorKind::ConnectionReset))
            }
        }
    };
    let mut context = Context::from_waker(std::task::Waker::noop());
    let resilient = Resilient::new("dropped", &POLICY);

    // Pending on the first attempt: its timer is set.
    let mut call = Box::pin(resilient.call(operation.clone()));
    assert!(call.as_mut().poll(&mut context).is_pending());
    assert_eq!(Arc::strong_count(&held), 4, "this test, the operation kept, the call's, its first attempt");
    drop(call);
    assert_eq!(Arc::strong_count(&held), 2, "this test and the operation kept for the next call");

    // In the retry loop, sleeping 1.5 s after the first failure.
    let mut call = Box::pin(resilient.call(operation));
    assert!(call.as_mut().poll(&mut context).is_pending());
    tokio::time::advance(Duration::from_secs(1)).await;
    assert!(call.as_mut().poll(&mut context).is_pending(), "the first attempt failed: a backoff");
    assert_eq!(Arc::strong_count(&held), 2, "this test and the retry loop's operation");
    drop(call);
    assert_eq!(Arc::strong_count(&held), 1);
    tokio::time::advance(Duration::from_secs(3_600)).await;
}

/// `validate` takes any `Fn(&T) -> Result<(), String>`, called directly; a second `validate`
/// replaces the first; the `Debug` output says whether there is one.
#[tokio::test(start_paused = true)]
async fn a_second_validator_replaces_the_first() {
    let plain = Resilient::new("plain", &POLICY);
    assert!(format!("{plain:?}").contains("validate: false"), "{plain:?}");
    fn even(value: &u32) -> Result<(), String> {
        if value % 2 == 0 { Ok(()) } else { Err(format!("{value} is odd")) }
    }
    let checked = plain.validate(|_: &u32| Err("never".to_owned())).validate(even);
    assert!(format!("{checked:?}").contains("validate: true"), "{checked:?}");
    let calls = Cell::new(0);
    let value = checked
        .call(|| {
            calls.set(calls.get() + 1);
            let n = calls.get();
            async move { Ok::<_, Error>(n) }
        })
        .await
        .unwrap();
    assert_eq!(value, 2, "1 is odd: rejected once, then 2 passes");
}

/// The failure's accessors: every decision, the attempts made, the last error by value, and a
/// `Debug` output with every detail.
#[tokio::test(start_paused = true)]
async fn a_failure_gives_its_details_through_accessors() {
    let failure = Resilient::new("fetch", &POLICY)
        .call(|| async { Err::<(), _>(Error::from(ErrorKind::ConnectionReset)) })
        .await
        .unwrap_err();
    assert_eq!((failure.kind(), failure.name(), failure.calls()), (ExecErrorKind::Exhausted, "fetch", 3));
    assert_eq!(failure.decisions().len(), 3);
    assert_eq!((failure.stopped_by(), failure.refusal()), (None, None));
    let debug = format!("{failure:?}");
    assert!(debug.starts_with("Failure { kind: Exhausted, name: \"fetch\", decisions: ["), "{debug}");
    assert_eq!(failure.record().calls, 3);
    assert_eq!(failure.into_last_error().map(|error| error.kind()), Some(ErrorKind::ConnectionReset));
}

/// Two layers nested: an outer resilient call around an inner one that gives up sends no
/// more than the inner one alone, whether it sees the inner failure itself or boxed (as a tower
/// layer, `OpenAIError::Boxed` or a middleware's `anyhow` hand it on). Before, a boxed failure had
/// no known type and no source: the outer call took it as transient and ran the inner one three
/// times, nine attempts where the inner call alone made three.
#[tokio::test(start_paused = true)]
async fn a_call_around_one_that_gave_up_does_not_try_again() {
    let attempts = Cell::new(0);
    let inner = Resilient::new("inner", &POLICY);
    let inner_call = || {
        inner.call(|| {
            attempts.set(attempts.get() + 1);
            async { Err::<(), _>(Error::from(ErrorKind::ConnectionReset)) }
        })
    };
    let outer = Resilient::new("outer", &POLICY);
    let boxed = outer
        .call(|| async {
            inner_call().await.map_err(|failure| -> Box<dyn std::error::Error + Send + Sync> { failure.into() })
        })
        .await
        .unwrap_err();
    assert_eq!(attempts.get(), 3, "the inner call's three attempts, once");
    assert_eq!(boxed.kind(), ExecErrorKind::Permanent);
    assert_eq!(boxed.calls(), 1);
    let reason = boxed.decisions()[0].reason().to_string();
    assert_eq!(reason, "an inner retry layer gave up (kind `exhausted`): trying again around it multiplies its calls");
    // The inner failure itself: judged by its kind, the same way.
    attempts.set(0);
    let direct = outer.call(inner_call).await.unwrap_err();
    assert_eq!((attempts.get(), direct.calls(), direct.kind()), (3, 1, ExecErrorKind::Permanent));
    let source = std::error::Error::source(direct.last_error().unwrap()).unwrap();
    assert_eq!(source.to_string(), "the retry layers gave up (exhausted) after the attempts their policy allows");
    // A programming error stays one.
    let raised = outer
        .call(|| async {
            Resilient::new("inner", &RetryPolicy::new().with_max_retries(0))
                .call(|| async { Ok::<(), Error>(()) })
                .await
        })
        .await
        .unwrap_err();
    assert_eq!(raised.kind(), ExecErrorKind::Programming);
}
