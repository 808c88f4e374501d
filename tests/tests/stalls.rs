//! Every way a server can hold a call, on every wire (`wires::all`), against the chaos server on paused
//! time: a stall before the headers, inside them, after them and mid-stream, a keep-alive flood, an
//! empty-chunk flood, an endless answer, an endless error body and an endless JSON body. Each call
//! ends by its own bound with an error that names it, at the exact virtual instant the bound says,
//! and the good call after it answers.
//!
//! Paused time and real sockets: tokio's paused clock jumps to the next timer whenever the runtime
//! has nothing to run, even while bytes are on their way over loopback. So while a call is healthy
//! (before the stall the server plays), a [`Hold`] keeps one task yielding, which keeps the runtime
//! busy and the clock still; once the call has reached the stall, the hold lets go and the clock
//! jumps straight to the bound that ends it.

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use agentic_chaos::{ChaosServer, Scenario, Step};
use agentic_runtime::decision::Verdict;
use agentic_runtime::policy::Jitter;
use agentic_runtime::provider::{EventStream, Request, StreamEvent};
use agentic_runtime::provider::{ModelError, Provider};
use agentic_runtime::{ExecError, ExecErrorKind, Reply, RetryPolicy, Runtime};
use agentic_test_support::wires::{self, Wire};
use futures_core::Stream;
use tokio::time::Instant;

/// Short bounds, so that a flood of keep-alives 100 ms apart reaches them in few steps; one session
/// retry 2 s later, exact (no jitter).
const POLICY: RetryPolicy = RetryPolicy::new()
    .with_max_retries(1)
    .with_session_retries(1)
    .with_jitter(Jitter::None)
    .with_connect_timeout_ms(5_000)
    .with_headers_timeout_ms(20_000)
    .with_first_token_timeout_ms(30_000)
    .with_idle_timeout_ms(5_000)
    .with_timeout_ms(60_000)
    .with_turn_timeout_ms(300_000)
    .with_max_answer_bytes(256 * 1024);

const BACKOFF: Duration = Duration::from_secs(2);

/// When the clock may move again during the first call.
#[derive(Debug, Clone, Copy)]
enum Release {
    /// After this many events with content: the stall comes after them.
    AfterContent(usize),
    /// Once the server has the request (and the client had the time to read what came back): the
    /// stall comes before any content.
    AfterRequest,
    /// Never during the call: it ends by itself (a size bound, a cut body).
    AtEnd,
}

/// What lets a hold go by itself.
type Condition = Box<dyn Fn() -> bool + Send>;

/// Keeps tokio's paused clock still while held (a task yields in a loop, so the runtime is never
/// idle), and lets it jump again when released.
#[derive(Clone, Default)]
struct Hold {
    held: Arc<AtomicBool>,
    /// Checked while held: once true, the hold lets go by itself.
    until: Arc<Mutex<Option<Condition>>>,
    wake: Arc<tokio::sync::Notify>,
}

impl Hold {
    fn start() -> Self {
        let hold = Hold::default();
        let spinner = hold.clone();
        tokio::spawn(async move {
            loop {
                if !spinner.held.load(Ordering::SeqCst) {
                    spinner.wake.notified().await;
                    continue;
                }
                let reached = spinner.until.lock().unwrap().as_ref().is_some_and(|until| until());
                if reached {
                    // Turns of the scheduler, not time: let the client read what the server sent.
                    for _ in 0..2_000 {
                        tokio::task::yield_now().await;
                    }
                    *spinner.until.lock().unwrap() = None;
                    spinner.held.store(false, Ordering::SeqCst);
                    continue;
                }
                tokio::task::yield_now().await;
            }
        });
        hold
    }

    fn hold(&self, until: Option<Condition>) {
        *self.until.lock().unwrap() = until;
        self.held.store(true, Ordering::SeqCst);
        self.wake.notify_one();
    }

    fn release(&self) {
        *self.until.lock().unwrap() = None;
        self.held.store(false, Ordering::SeqCst);
    }
}

/// A provider that holds the clock during each call until the call reaches the point its plan says.
struct Held {
    inner: Arc<dyn Provider>,
    hold: Hold,
    server: Arc<ChaosServer>,
    /// The plan of each call; the last one goes on for the calls after it.
    plan: Vec<Release>,
    calls: AtomicUsize,
}

impl Provider for Held {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn stream<'a>(&'a self, request: &'a Request<'a>) -> EventStream<'a> {
        let call = self.calls.fetch_add(1, Ordering::SeqCst);
        let release = self.plan[call.min(self.plan.len() - 1)];
        match release {
            Release::AfterRequest => {
                let server = Arc::clone(&self.server);
                self.hold.hold(Some(Box::new(move || server.journal().len() > call)));
            }
            Release::AfterContent(_) | Release::AtEnd => self.hold.hold(None),
        }
        let content = match release {
            Release::AfterContent(n) => Some(n),
            _ => None,
        };
        Box::pin(Watched { inner: self.inner.stream(request), hold: self.hold.clone(), content, seen: 0 })
    }
}

/// The call's events, releasing the hold after the planned content or at the end (the stream's own,
/// or the agent dropping it).
struct Watched<'a> {
    inner: EventStream<'a>,
    hold: Hold,
    content: Option<usize>,
    seen: usize,
}

impl Drop for Watched<'_> {
    fn drop(&mut self) {
        self.hold.release();
    }
}

impl Stream for Watched<'_> {
    type Item = Result<StreamEvent, ModelError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let item = self.inner.as_mut().poll_next(cx);
        match &item {
            Poll::Ready(Some(Ok(StreamEvent::TextDelta(text)))) if !text.is_empty() => {
                self.seen += 1;
                if self.content == Some(self.seen) {
                    self.hold.release();
                }
            }
            Poll::Ready(None | Some(Err(_)) | Some(Ok(StreamEvent::Done { .. } | StreamEvent::Error { .. }))) => {
                self.hold.release()
            }
            _ => {}
        }
        item
    }
}

struct Run {
    wire: Wire,
    outcome: Result<Reply, ExecError>,
    elapsed: Duration,
    requests: usize,
}

impl Run {
    /// The answer; else a panic naming the wire and `expected`.
    fn reply(&self, expected: &str) -> &Reply {
        self.outcome.as_ref().unwrap_or_else(|error| panic!("{}: {expected}, got {error}", self.wire))
    }

    /// The error; else a panic naming the wire and `expected`.
    fn error(&self, expected: &str) -> &ExecError {
        match &self.outcome {
            Ok(reply) => panic!("{}: {expected}, got the answer {:?}", self.wire, reply.text()),
            Err(error) => error,
        }
    }
}

async fn run(wire: Wire, first: impl Into<Step>, release: Release) -> Run {
    let scenario = Scenario::new().then(first).otherwise(Step::ok("answered after the stall"));
    run_scenario(wire, scenario, vec![release, Release::AtEnd], &POLICY).await
}

async fn run_scenario(wire: Wire, scenario: Scenario, plan: Vec<Release>, policy: &RetryPolicy) -> Run {
    let server = Arc::new(ChaosServer::start(scenario).await.expect("the chaos server starts"));
    let inner = wire.provider_at(&wire.base_url(&server), Some("sk-test"), None);
    let hold = Hold::start();
    let provider = Held { inner, hold: hold.clone(), server: Arc::clone(&server), plan, calls: AtomicUsize::new(0) };
    let runtime = Runtime::builder(provider).with_retry_quota(None).build().unwrap();
    let start = Instant::now();
    let outcome = runtime.request("Say something.").policy(policy).send().await;
    let elapsed = start.elapsed();
    hold.release();
    Run { wire, outcome, elapsed, requests: server.journal().len() }
}

/// The first call failed with `error` (the decision's text) and the second answered, `bound` plus
/// the backoff after the start.
fn assert_cut_then_answered(wire: Wire, run: &Run, error: &str, bound: Duration) {
    let reply = match &run.outcome {
        Ok(reply) => reply,
        Err(failure) => panic!("{wire}: expected an answer after the stall, got {failure}"),
    };
    assert_eq!(reply.text(), "answered after the stall", "{wire}");
    assert_eq!(run.requests, 2, "{wire}");
    let decisions = reply.decisions();
    assert_eq!(decisions.len(), 1, "{wire}: {decisions:?}");
    assert_eq!(decisions[0].verdict(), Verdict::Retry, "{wire}");
    assert_eq!(decisions[0].error(), error, "{wire}");
    assert_eq!(decisions[0].at(), bound, "{wire}: the bound ends the call exactly");
    assert_eq!(run.elapsed, bound + BACKOFF, "{wire}");
}

#[tokio::test(start_paused = true)]
async fn a_stall_before_the_headers_ends_at_the_headers_bound() {
    for wire in wires::all() {
        let run = run(wire, Step::hang(), Release::AfterRequest).await;
        let error = "TimeoutError: model call timed out: no response headers after 20 s (`headers_timeout_ms` = 20000)";
        assert_cut_then_answered(wire, &run, error, Duration::from_secs(20));
    }
}

#[tokio::test(start_paused = true)]
async fn a_stall_inside_the_headers_ends_at_the_headers_bound() {
    for wire in wires::all() {
        let run = run(wire, Step::hang().in_headers(), Release::AfterRequest).await;
        let error = "TimeoutError: model call timed out: no response headers after 20 s (`headers_timeout_ms` = 20000)";
        assert_cut_then_answered(wire, &run, error, Duration::from_secs(20));
    }
}

#[tokio::test(start_paused = true)]
async fn a_stall_after_the_headers_ends_at_the_first_token_bound() {
    for wire in wires::all() {
        let run = run(wire, Step::hang().after_headers(), Release::AfterRequest).await;
        let error = "TimeoutError: model call timed out: no content after 30 s (`first_token_timeout_ms` = 30000)";
        assert_cut_then_answered(wire, &run, error, Duration::from_secs(30));
    }
}

#[tokio::test(start_paused = true)]
async fn a_stall_mid_stream_ends_at_the_idle_bound() {
    for wire in wires::all() {
        let stall = Step::hang().after_chunks(2);
        let run = run(wire, stall, Release::AfterContent(2)).await;
        let error = "TimeoutError: model call timed out: no new content for 5 s (`idle_timeout_ms` = 5000)";
        assert_cut_then_answered(wire, &run, error, Duration::from_secs(5));
    }
}

#[tokio::test(start_paused = true)]
async fn a_keep_alive_flood_does_not_reset_the_idle_clock() {
    for wire in wires::all() {
        let flood = Step::keep_alive_flood().after_chunks(2).interval_ms(100);
        let run = run(wire, flood, Release::AfterContent(2)).await;
        let error = "TimeoutError: model call timed out: no new content for 5 s (`idle_timeout_ms` = 5000)";
        assert_cut_then_answered(wire, &run, error, Duration::from_secs(5));
    }
}

#[tokio::test(start_paused = true)]
async fn a_keep_alive_flood_from_the_start_ends_at_the_first_token_bound() {
    for wire in wires::all() {
        let flood = Step::keep_alive_flood().interval_ms(100);
        let run = run(wire, flood, Release::AfterRequest).await;
        let error = "TimeoutError: model call timed out: no content after 30 s (`first_token_timeout_ms` = 30000)";
        assert_cut_then_answered(wire, &run, error, Duration::from_secs(30));
    }
}

#[tokio::test(start_paused = true)]
async fn an_empty_chunk_flood_is_not_content() {
    for wire in wires::all() {
        let flood = Step::empty_chunk_flood().interval_ms(100);
        let run = run(wire, flood, Release::AfterRequest).await;
        let error = "TimeoutError: model call timed out: no content after 30 s (`first_token_timeout_ms` = 30000)";
        assert_cut_then_answered(wire, &run, error, Duration::from_secs(30));
    }
}

#[tokio::test(start_paused = true)]
async fn an_endless_answer_ends_at_the_size_bound() {
    for wire in wires::all() {
        let endless = Step::endless_text().text("all work and no play ").interval_ms(0);
        let scenario = Scenario::new().then(endless).otherwise(Step::ok("answered after the stall"));
        let run = run_scenario(wire, scenario, vec![Release::AtEnd], &POLICY.with_max_retries(2)).await;
        let error = "AnswerTooLargeError: the answer passed 262144 bytes (`max_answer_bytes`): the stream was cut \
                     there; raise `max_answer_bytes` or ask for a shorter answer";
        let reply = run.reply("the call after the endless one answers");
        assert_eq!(reply.text(), "answered after the stall", "{wire}");
        let decisions = reply.decisions();
        assert_eq!(decisions.len(), 2, "{wire}: layer 1 gives up on it, layer 2 retries it: {decisions:?}");
        assert_eq!(decisions[0].error(), error, "{wire}");
        assert_eq!(decisions[0].at(), Duration::ZERO, "{wire}: no clock is involved");
        assert_eq!(run.requests, 2, "{wire}");
    }
}

#[tokio::test(start_paused = true)]
async fn an_error_body_that_never_ends_is_cut_and_retried() {
    for wire in wires::all() {
        let endless = Step::http_error(503).endless_body().interval_ms(0);
        let run = run(wire, endless, Release::AtEnd).await;
        let reply = run.reply("the call after the endless body answers");
        assert_eq!(reply.text(), "answered after the stall", "{wire}");
        let decision = &reply.decisions()[0];
        assert!(decision.error().starts_with("ServiceUnavailableError: 503 "), "{wire}: {}", decision.error());
        assert!(decision.error().ends_with("(error body cut at 16 KiB)"), "{wire}: {}", decision.error());
        assert_eq!(run.elapsed, BACKOFF, "{wire}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_json_body_that_never_ends_is_cut_and_retried() {
    for wire in wires::all() {
        let endless = Step::endless_json().interval_ms(0);
        let run = run(wire, endless, Release::AtEnd).await;
        let reply = run.reply("the call after the endless JSON answers");
        assert_eq!(reply.text(), "answered after the stall", "{wire}");
        let decision = &reply.decisions()[0];
        assert!(
            decision.error().starts_with("MalformedStreamError: malformed chunk: a JSON answer larger than 1024 KiB"),
            "{wire}: {}",
            decision.error()
        );
        assert_eq!(run.elapsed, BACKOFF, "{wire}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_page_that_is_not_an_event_stream_is_permanent_after_one_request() {
    for wire in wires::all() {
        let scenario = Scenario::new().then(Step::wrong_content_type()).otherwise(Step::ok("never reached"));
        let run = run_scenario(wire, scenario, vec![Release::AtEnd], &POLICY.with_max_retries(3)).await;
        let error = run.error("a login page is no answer");
        assert_eq!(error.kind(), ExecErrorKind::Permanent, "{wire}");
        assert_eq!(run.requests, 1, "{wire}: one request, no retry");
        let path = wire.request_path();
        assert_eq!(
            error.attempt_errors()[0],
            format!(
                "UnexpectedContentTypeError: 200 OK from POST {path} is `text/html; charset=utf-8`, not an event \
                 stream (`text/event-stream`): check the base URL; a web page or a proxy's login page answered \
                 instead of the model API"
            ),
            "{wire}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_retry_after_too_large_to_represent_stops_at_once() {
    for wire in wires::all() {
        for value in ["1e300", "99999999999999999999999"] {
            let scenario = Scenario::new().then(Step::http_error(429).retry_after(value)).otherwise(Step::ok("no"));
            let run = run_scenario(wire, scenario, vec![Release::AtEnd], &POLICY).await;
            let error = run.error("the server asked for longer than the cap");
            assert_eq!(error.kind(), ExecErrorKind::Refused, "{wire} {value}");
            assert_eq!(run.requests, 1, "{wire} {value}: stopped at once, not retried");
            assert_eq!(
                error.stopped_by(),
                Some("server asked to wait longer than a clock can count; cap is 60 s (`retry_after_cap_ms`)"),
                "{wire} {value}"
            );
            assert_eq!(run.elapsed, Duration::ZERO, "{wire} {value}");
        }
    }
}

#[tokio::test(start_paused = true)]
async fn the_default_policy_ends_a_stall_after_the_headers_within_its_bounds() {
    // No key set: the defaults alone bound a server that sends headers and then nothing.
    for wire in wires::all() {
        let scenario = Scenario::new().otherwise(Step::hang().after_headers());
        let policy = RetryPolicy::new().with_jitter(Jitter::None);
        let run = run_scenario(wire, scenario, vec![Release::AfterRequest], &policy).await;
        let error = run.error("every call stalls");
        assert!(run.elapsed <= policy.worst_case_turn(), "{wire}: {:?}", run.elapsed);
        assert!(
            error.attempt_errors()[0].starts_with("TimeoutError: model call timed out"),
            "{wire}: {}",
            error.attempt_errors()[0]
        );
    }
}
