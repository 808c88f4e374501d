//! The chaos gauntlet: every fault the chaos server injects, on every wire (`wires::all`), through
//! `Runtime::exec_with` and through `#[agentic_function]`, with the outcome, the number of requests
//! the server saw, and the layers' decisions. Real sockets on 127.0.0.1; millisecond policy delays.

use agentic_runtime::exec::RuntimeBuilder;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentic_chaos::{ChaosServer, Scenario, Step};
use agentic_runtime::decision::{Layer, Verdict};
use agentic_runtime::provider::Provider;
use agentic_runtime::provider::{EventStream, Request};
use agentic_runtime::{ExecError, ExecErrorKind, Reply, RetryPolicy, Runtime, agentic_function};
use agentic_test_support::wires::{self, Wire};

/// The gauntlet's policy: up to 3 calls per attempt, 2 attempts, 1 ms delays, 2 s per call.
const POLICY: RetryPolicy = RetryPolicy::new()
    .with_max_retries(2)
    .with_session_retries(2)
    .with_session_base_delay_ms(1)
    .with_exec_base_delay_ms(1)
    .with_timeout_ms(2_000)
    .with_budget_ms(Some(10_000));

/// The same policy, through the attribute.
#[agentic_function(
    max_retries = 2,
    session_retries = 2,
    session_base_delay_ms = 1,
    exec_base_delay_ms = 1,
    timeout_ms = 2_000,
    budget_ms = 10_000
)]
async fn through_attribute(runtime: &Runtime, prompt: &str) -> Result<Reply, ExecError> {
    runtime.exec(prompt).await
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Path {
    Exec,
    Attribute,
}

/// Wraps a provider and records how many messages each request carried.
struct Recording {
    inner: Arc<dyn Provider>,
    sizes: Arc<Mutex<Vec<usize>>>,
}

impl Provider for Recording {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn stream<'a>(&'a self, request: &'a Request<'a>) -> EventStream<'a> {
        self.sizes.lock().unwrap().push(request.messages.len());
        self.inner.stream(request)
    }
}

struct Run {
    outcome: Result<Reply, ExecError>,
    requests: usize,
    sizes: Vec<usize>,
}

async fn run(wire: Wire, path: Path, scenario: Scenario) -> Run {
    let server = ChaosServer::start(scenario).await.expect("the chaos server starts");
    let sizes = Arc::new(Mutex::new(Vec::new()));
    let runtime = Runtime::new(Recording { inner: wire.provider(&server), sizes: Arc::clone(&sizes) });
    let outcome = match path {
        Path::Exec => runtime.request("Say hello.").policy(&POLICY).send().await,
        Path::Attribute => through_attribute(&runtime, "Say hello.").await,
    };
    let requests = server.journal().len();
    let sizes = sizes.lock().unwrap().clone();
    Run { outcome, requests, sizes }
}

/// What a case must end in.
#[derive(Debug)]
enum Expect {
    Answer(&'static str),
    Error(ExecErrorKind),
}

struct Case {
    name: &'static str,
    scenario: fn() -> Scenario,
    expect: Expect,
    requests: usize,
    /// The verdicts of both layers, in order.
    verdicts: &'static [(Layer, Verdict)],
}

const RETRY: (Layer, Verdict) = (Layer::Session, Verdict::Retry);

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "ok",
            scenario: || Scenario::new().otherwise(Step::ok("hello there")),
            expect: Expect::Answer("hello there"),
            requests: 1,
            verdicts: &[],
        },
        Case {
            name: "429 then ok",
            scenario: || Scenario::new().then(Step::http_error(429)).otherwise(Step::ok("after 429")),
            expect: Expect::Answer("after 429"),
            requests: 2,
            verdicts: &[RETRY],
        },
        Case {
            name: "500, 502, 503 then ok",
            scenario: || {
                Scenario::new()
                    .then(Step::http_error(500))
                    .then(Step::http_error(502))
                    .then(Step::http_error(503))
                    .otherwise(Step::ok("after 5xx"))
            },
            expect: Expect::Answer("after 5xx"),
            requests: 4,
            verdicts: &[RETRY, RETRY, (Layer::Session, Verdict::RetriesExhausted), (Layer::Exec, Verdict::Retry)],
        },
        Case {
            name: "529 overloaded for every call",
            scenario: || Scenario::new().otherwise(Step::http_error(529)),
            expect: Expect::Error(ExecErrorKind::Exhausted),
            requests: 6,
            verdicts: &[
                RETRY,
                RETRY,
                (Layer::Session, Verdict::RetriesExhausted),
                (Layer::Exec, Verdict::Retry),
                RETRY,
                RETRY,
                (Layer::Session, Verdict::RetriesExhausted),
                (Layer::Exec, Verdict::Exhausted),
            ],
        },
        Case {
            name: "socket closed before headers",
            scenario: || Scenario::new().then(Step::close_before_headers()).otherwise(Step::ok("reconnected")),
            expect: Expect::Answer("reconnected"),
            requests: 2,
            verdicts: &[RETRY],
        },
        Case {
            name: "stream dropped mid-way",
            scenario: || Scenario::new().then(Step::drop_stream(2)).otherwise(Step::ok("whole answer")),
            expect: Expect::Answer("whole answer"),
            requests: 2,
            verdicts: &[RETRY],
        },
        Case {
            name: "stream truncated",
            scenario: || Scenario::new().then(Step::truncate(2)).otherwise(Step::ok("whole answer")),
            expect: Expect::Answer("whole answer"),
            requests: 2,
            verdicts: &[RETRY],
        },
        Case {
            name: "SSE error event mid-stream",
            scenario: || Scenario::new().then(Step::sse_error(1)).otherwise(Step::ok("after the event")),
            expect: Expect::Answer("after the event"),
            requests: 2,
            verdicts: &[RETRY],
        },
        Case {
            name: "SSE error event with an empty message",
            scenario: || Scenario::new().then(Step::sse_error(1).message("")).otherwise(Step::ok("after the event")),
            expect: Expect::Answer("after the event"),
            requests: 2,
            verdicts: &[RETRY],
        },
        Case {
            name: "short stall before headers",
            scenario: || Scenario::new().then(Step::stall(20).text("late but fine")),
            expect: Expect::Answer("late but fine"),
            requests: 1,
            verdicts: &[],
        },
        Case {
            name: "malformed chunk",
            scenario: || Scenario::new().then(Step::malformed_chunk(1)).otherwise(Step::ok("clean")),
            expect: Expect::Answer("clean"),
            requests: 2,
            verdicts: &[RETRY],
        },
        Case {
            name: "context overflow",
            scenario: || Scenario::new().otherwise(Step::context_overflow()),
            expect: Expect::Error(ExecErrorKind::ContextOverflow),
            requests: 1,
            verdicts: &[(Layer::Session, Verdict::GiveUp), (Layer::Exec, Verdict::ContextOverflow)],
        },
        Case {
            name: "invalid API key",
            scenario: || Scenario::new().otherwise(Step::invalid_api_key()),
            expect: Expect::Error(ExecErrorKind::Permanent),
            requests: 1,
            verdicts: &[(Layer::Session, Verdict::GiveUp), (Layer::Exec, Verdict::FailPermanently)],
        },
        Case {
            name: "400 bad request",
            scenario: || Scenario::new().otherwise(Step::http_error(400).message("unsupported parameter: foo")),
            expect: Expect::Error(ExecErrorKind::Permanent),
            requests: 1,
            verdicts: &[(Layer::Session, Verdict::GiveUp), (Layer::Exec, Verdict::FailPermanently)],
        },
        Case {
            name: "x-should-retry: false on a 503",
            scenario: || Scenario::new().otherwise(Step::http_error(503).should_retry(false)),
            expect: Expect::Error(ExecErrorKind::Permanent),
            requests: 1,
            verdicts: &[(Layer::Session, Verdict::GiveUp), (Layer::Exec, Verdict::FailPermanently)],
        },
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fault_on_every_wire_through_exec_and_the_attribute() {
    let mut failures = Vec::new();
    for case in cases() {
        for wire in wires::all() {
            for path in [Path::Exec, Path::Attribute] {
                let label = format!("{} / {wire} / {path:?}", case.name);
                let run = run(wire, path, (case.scenario)()).await;
                let (decisions, matched) = match (&run.outcome, &case.expect) {
                    (Ok(reply), Expect::Answer(text)) => (reply.decisions(), reply.text().trim() == *text),
                    (Err(error), Expect::Error(kind)) => (error.decisions(), error.kind() == *kind),
                    (Ok(reply), _) => (reply.decisions(), false),
                    (Err(error), _) => (error.decisions(), false),
                };
                let verdicts: Vec<(Layer, Verdict)> = decisions.iter().map(|d| (d.layer(), d.verdict())).collect();
                if !matched || run.requests != case.requests || verdicts != case.verdicts {
                    failures.push(format!(
                        "{label}: expected {:?} after {} requests with {:?}; got {:?} after {} requests with {:?}",
                        case.expect,
                        case.requests,
                        case.verdicts,
                        run.outcome.as_ref().map(Reply::text).map_err(ToString::to_string),
                        run.requests,
                        verdicts
                    ));
                }
                // Nothing from a failed call is sent again: every request of an exec attempt carries
                // the prompt alone.
                if run.sizes.iter().any(|size| *size != 1) {
                    failures.push(format!("{label}: a request carried a failed message: sizes {:?}", run.sizes));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} gauntlet failures:\n{}", failures.len(), failures.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_after_is_the_wait_and_a_wait_above_the_cap_is_refused() {
    for wire in wires::all() {
        let floor = || Scenario::new().then(Step::http_error(429).retry_after_ms(40)).otherwise(Step::ok("waited"));
        let run_floor = run(wire, Path::Exec, floor()).await;
        let reply = run_floor.outcome.unwrap_or_else(|error| panic!("{wire}: answers after the wait, got {error}"));
        // The server's 40 ms, with jitter only above it and at most a quarter of it.
        let delay = reply.decisions()[0].delay().expect("a retry's delay");
        assert!((Duration::from_millis(40)..=Duration::from_millis(50)).contains(&delay), "{wire}: {delay:?}");
        assert!(reply.elapsed() >= Duration::from_millis(40), "{wire}");

        // The header in seconds is read too: a cap below it refuses the wait at once, so the test
        // waits for no second of wall clock (the exec above proves the wait).
        let server = ChaosServer::start(Scenario::new().then(Step::http_error(503).retry_after_secs(1))).await.unwrap();
        let provider = wire.provider(&server);
        let capped = POLICY.with_retry_after_cap_ms(500);
        let error = RuntimeBuilder::from_shared(provider)
            .build()
            .unwrap()
            .request("hi")
            .policy(&capped)
            .send()
            .await
            .expect_err(wire.name());
        assert_eq!(error.stopped_by(), Some("server asked to wait 1 s; cap is 0.5 s (`retry_after_cap_ms`)"), "{wire}");
        assert_eq!(server.journal().len(), 1, "{wire}");

        let above = || Scenario::new().otherwise(Step::http_error(429).retry_after_secs(120));
        let refused = run(wire, Path::Attribute, above()).await;
        let Err(error) = refused.outcome else { panic!("{wire}: a 120 s wait is above the 60 s cap, yet it answered") };
        assert_eq!(error.kind(), ExecErrorKind::Refused, "{wire}");
        assert_eq!(refused.requests, 1, "{wire}");
        assert_eq!(
            error.stopped_by(),
            Some("server asked to wait 120 s; cap is 60 s (`retry_after_cap_ms`)"),
            "{wire}"
        );
        assert!(error.elapsed() < Duration::from_secs(1), "{wire}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_deadline_bounds_a_stall() {
    const TIGHT: RetryPolicy = RetryPolicy::new()
        .with_max_retries(2)
        .with_session_retries(1)
        .with_session_base_delay_ms(1)
        .with_exec_base_delay_ms(1)
        .with_budget_ms(Some(300));
    for wire in wires::all() {
        let server = ChaosServer::start(Scenario::new().otherwise(Step::hang())).await.unwrap();
        let provider = wire.provider(&server);
        let error = RuntimeBuilder::from_shared(provider)
            .build()
            .unwrap()
            .request("hi")
            .policy(&TIGHT)
            .send()
            .await
            .expect_err(wire.name());
        assert_eq!(error.kind(), ExecErrorKind::Refused, "{wire}: {error}");
        assert_eq!(server.journal().len(), 1, "{wire}");
        assert!(error.elapsed() >= Duration::from_millis(300) && error.elapsed() < Duration::from_secs(2), "{wire}");
        assert!(error.to_string().contains("TimeoutError"), "{wire}: {error}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_over_the_wire_keeps_no_failed_message() {
    for wire in wires::all() {
        let scenario =
            Scenario::new().then(Step::http_error(503)).then(Step::drop_stream(1)).otherwise(Step::ok("finally"));
        let server = ChaosServer::start(scenario).await.unwrap();
        let runtime = RuntimeBuilder::from_shared(wire.provider(&server))
            .with_policy(RetryPolicy::new().with_session_base_delay_ms(1))
            .build()
            .unwrap();
        let mut session = runtime.conversation();
        let answer = session.run("hi").await.unwrap_or_else(|error| panic!("{wire}: {error}"));
        assert_eq!(answer.text_content().trim(), "finally", "{wire}");
        assert_eq!(session.history().len(), 2, "{wire}");
        assert_eq!(server.journal().len(), 3, "{wire}");
    }
}
