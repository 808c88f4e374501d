//! Fallback across targets through the real HTTP providers, against two chaos servers (one per
//! target) on every ordered pair of wires (`wires::all`, a wire with itself included): each rule of
//! docs/design.md §10 ("Fallback across targets") with the exact requests each server's journal
//! saw, a tool loop whose conversation moves between wires, a typed answer whose schema each wire
//! carries in its own form, and `#[agentic_function]` on a runtime with a fallback. Then the
//! circuit breaker end to end, against the chaos server's scripted outages: it opens, skips, probes
//! (a probe failing during the outage, one closing it after), lets one probe through among
//! concurrent execs, replaces a lost probe, ignores an honoured 429 and stays closed in a wobble.
//!
//! Paused time: the chaos servers' clock is tokio's, and over loopback the clock moves only when
//! every task waits on a timer (the layers' backoffs), so the elapsed times below are exact.

use agentic_runtime::exec::RuntimeBuilder;
use std::sync::Arc;
use std::time::Duration;

use agentic_chaos::{ChaosServer, JournalEntry, Outage, Scenario, Step};
use agentic_runtime::decision::Decision;
use agentic_runtime::decision::{Layer, MoveReason, Verdict, Why};
use agentic_runtime::policy::Jitter;
use agentic_runtime::provider::{
    AnthropicProvider, GeminiProvider, OpenAiProvider, Provider, ResponsesProvider, WireKind,
};
use agentic_runtime::storm::{BreakerSettings, BreakerState, Opened};
use agentic_runtime::{ExecError, ExecErrorKind, Reply, RetryPolicy, Runtime, Toolbox, agentic_function};
use agentic_test_support::wires::{self, Wire};
use serde_json::json;

const PRIMARY_MODEL: &str = "m-primary";
const SECONDARY_MODEL: &str = "m-secondary";

/// Exact delays: the schedules of docs/design.md §4 and §5 as written.
const EXACT: RetryPolicy = RetryPolicy::new().with_jitter(Jitter::None);

/// Every ordered pair (primary wire, secondary wire).
fn pairs() -> Vec<(Wire, Wire)> {
    let all = wires::all();
    all.iter().flat_map(|&primary| all.iter().map(move |&secondary| (primary, secondary))).collect()
}

/// A target's name as the runtime spells it: `"<provider name>/<model>"`.
fn name(wire: Wire, model: &str) -> String {
    format!("{}/{model}", wire.kind.provider_name())
}

/// The two chaos servers of one case and the runtime whose primary is on the first, its one
/// fallback on the second.
struct Case {
    primary: Wire,
    secondary: Wire,
    a: ChaosServer,
    b: ChaosServer,
    /// How `runtime` was built, for a case that needs another setting.
    builder: RuntimeBuilder,
    runtime: Runtime,
}

impl Case {
    async fn start((primary, secondary): (Wire, Wire), on_a: Scenario, on_b: Scenario) -> Self {
        let a = ChaosServer::start(on_a).await.unwrap();
        let b = ChaosServer::start(on_b).await.unwrap();
        let first = primary.provider_at(&primary.base_url(&a), None, Some(PRIMARY_MODEL));
        let second = secondary.provider_at(&secondary.base_url(&b), None, Some(SECONDARY_MODEL));
        let builder = RuntimeBuilder::from_shared(first).with_fallback_shared(second).with_policy(EXACT);
        let runtime = builder.clone().build().unwrap();
        Self { primary, secondary, a, b, builder, runtime }
    }

    fn primary_name(&self) -> String {
        name(self.primary, PRIMARY_MODEL)
    }

    fn secondary_name(&self) -> String {
        name(self.secondary, SECONDARY_MODEL)
    }

    /// `"openai → anthropic"`, for the assertions' messages.
    fn label(&self) -> String {
        format!("{} → {}", self.primary, self.secondary)
    }

    /// The model requests each server saw, each checked to be in its target's wire.
    fn journals(&self) -> (Vec<JournalEntry>, Vec<JournalEntry>) {
        let seen = |server: &ChaosServer, wire: Wire| {
            let journal = server.journal();
            for entry in &journal {
                assert_eq!(entry.wire, Some(wire.format), "{}: {entry:?}", self.label());
            }
            journal
        };
        (seen(&self.a, self.primary), seen(&self.b, self.secondary))
    }

    /// How many requests the primary's and the secondary's servers saw.
    fn requests(&self) -> (usize, usize) {
        let (a, b) = self.journals();
        (a.len(), b.len())
    }

    async fn shutdown(self) {
        self.a.shutdown().await;
        self.b.shutdown().await;
    }
}

/// The exec's fallback decisions.
fn moves(decisions: &[Decision]) -> Vec<&Decision> {
    decisions.iter().filter(|decision| decision.verdict() == Verdict::Fallback).collect()
}

/// The one move of `decisions`, checked to go from `case`'s primary to its secondary.
#[track_caller]
fn the_move<'a>(case: &Case, decisions: &'a [Decision]) -> &'a MoveReason {
    let moved = moves(decisions);
    assert_eq!(moved.len(), 1, "{}: {decisions:?}", case.label());
    let Why::Fallback(fallback) = &moved[0].reason() else { panic!("{}: {:?}", case.label(), moved[0].reason()) };
    assert_eq!((&fallback.from, &fallback.to), (&case.primary_name(), &case.secondary_name()), "{}", case.label());
    &fallback.because
}

/// The secondary's answer, checked to come from it.
#[track_caller]
fn from_secondary(case: &Case, outcome: Result<Reply, ExecError>) -> Reply {
    let reply = outcome.unwrap_or_else(|error| panic!("{}: {error}", case.label()));
    assert_eq!(reply.text(), "from b", "{}", case.label());
    assert_eq!(reply.target(), Some(case.secondary_name().as_str()), "{}", case.label());
    reply
}

/// An exec whose primary answers `step` once: it must reach the secondary with no sleep, after
/// one request to each server.
async fn moved_at_once(pair: (Wire, Wire), step: impl Into<Step>) -> (Case, Reply) {
    let on_a = Scenario::new().then(step).otherwise(Step::ok("from a"));
    let case = Case::start(pair, on_a, Scenario::new().then(Step::ok("from b"))).await;
    let started = tokio::time::Instant::now();
    let reply = from_secondary(&case, case.runtime.exec("hi").await);
    assert_eq!(started.elapsed(), Duration::ZERO, "{}: no sleep before the next target", case.label());
    assert_eq!(case.requests(), (1, 1), "{}", case.label());
    (case, reply)
}

#[tokio::test(start_paused = true)]
async fn a_refused_key_moves_on_at_once_on_every_pair_of_wires() {
    for pair in pairs() {
        let (case, reply) = moved_at_once(pair, Step::invalid_api_key()).await;
        let because = the_move(&case, reply.decisions());
        assert!(matches!(because, MoveReason::Permanent(_)), "{}: {because:?}", case.label());
        assert_eq!(reply.calls(), 2, "{}", case.label());
        case.shutdown().await;
    }
}

#[tokio::test(start_paused = true)]
async fn a_spent_quota_and_a_missing_model_move_on_at_once_on_every_pair_of_wires() {
    let quota = || {
        Step::http_error(429)
            .code("insufficient_quota")
            .message("You exceeded your current quota, please check your plan and billing details.")
    };
    let missing = || Step::http_error(404).code("model_not_found").message("The model `m-primary` does not exist");
    for pair in pairs() {
        for step in [quota(), missing()] {
            let (case, reply) = moved_at_once(pair, step.clone()).await;
            let because = the_move(&case, reply.decisions());
            assert!(matches!(because, MoveReason::Permanent(_)), "{}: {step:?}: {because:?}", case.label());
            case.shutdown().await;
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_429_with_a_short_retry_after_stays_on_the_primary_on_every_pair_of_wires() {
    for pair in pairs() {
        let on_a = Scenario::new().then(Step::http_error(429).retry_after_secs(1)).then(Step::ok("from a"));
        let case = Case::start(pair, on_a, Scenario::new().otherwise(Step::ok("from b"))).await;
        let reply = case.runtime.exec("hi").await.unwrap_or_else(|error| panic!("{}: {error}", case.label()));
        assert_eq!((reply.text(), reply.target()), ("from a", Some(case.primary_name().as_str())), "{}", case.label());
        let (a, b) = case.journals();
        let at_ms: Vec<u64> = a.iter().map(|entry| entry.at_ms).collect();
        // The server's 1 s is the wait (the schedule's would be 2 s), on the primary.
        assert_eq!(at_ms, [0, 1_000], "{}: the retry waited on the primary", case.label());
        assert!(b.is_empty(), "{}: a brief 429 must not spray load onto the next provider", case.label());
        assert!(moves(reply.decisions()).is_empty(), "{}", case.label());
        case.shutdown().await;
    }
}

#[tokio::test(start_paused = true)]
async fn a_429_with_a_retry_after_past_the_cap_moves_on_at_once_on_every_pair_of_wires() {
    for pair in pairs() {
        let (case, reply) = moved_at_once(pair, Step::http_error(429).retry_after_secs(120)).await;
        let because = the_move(&case, reply.decisions());
        assert!(matches!(because, MoveReason::Refused(_)), "{}: {because:?}", case.label());
        assert_eq!(
            moves(reply.decisions())[0].reason().to_string(),
            format!(
                "fallback: `{}` refused the wait (server asked to wait 120 s; cap is 60 s (`retry_after_cap_ms`)) → `{}`",
                case.primary_name(),
                case.secondary_name()
            )
        );
        case.shutdown().await;
    }
}

#[tokio::test(start_paused = true)]
async fn a_503_burst_beyond_the_session_retries_moves_on_without_the_exec_backoff_on_every_pair_of_wires() {
    for pair in pairs() {
        let on_a = Scenario::new().then_times(4, Step::http_error(503)).otherwise(Step::ok("from a"));
        let case = Case::start(pair, on_a, Scenario::new().then(Step::ok("from b"))).await;
        let started = tokio::time::Instant::now();
        let reply = from_secondary(&case, case.runtime.exec("hi").await);
        // 2 + 4 + 8 s of layer 1 on the primary, then no 1.5 s of layer 2 before the secondary.
        assert_eq!(started.elapsed(), Duration::from_secs(14), "{}", case.label());
        let (a, b) = case.journals();
        assert_eq!(
            a.iter().map(|entry| entry.at_ms).collect::<Vec<_>>(),
            [0, 2_000, 6_000, 14_000],
            "{}",
            case.label()
        );
        assert_eq!(b.iter().map(|entry| entry.at_ms).collect::<Vec<_>>(), [14_000], "{}", case.label());
        let because = the_move(&case, reply.decisions());
        assert!(matches!(because, MoveReason::RetriesUsed(_)), "{}: {because:?}", case.label());
        case.shutdown().await;
    }
}

#[tokio::test(start_paused = true)]
async fn a_400_does_not_move_on_any_pair_of_wires() {
    for pair in pairs() {
        let on_a = Scenario::new().then(Step::http_error(400)).otherwise(Step::ok("from a"));
        let case = Case::start(pair, on_a, Scenario::new().otherwise(Step::ok("from b"))).await;
        let error = case.runtime.exec("hi").await.expect_err(&case.label());
        assert_eq!(error.kind(), ExecErrorKind::Permanent, "{}: {error}", case.label());
        assert_eq!(error.target(), Some(case.primary_name().as_str()), "{}", case.label());
        assert_eq!(case.requests(), (1, 0), "{}: a request the API refuses would fail there too", case.label());
        case.shutdown().await;
    }
}

/// A provider of `wire` for `server` asking for `model`, declaring a context window of `tokens`.
fn windowed(wire: Wire, server: &ChaosServer, model: &str, tokens: u64) -> Arc<dyn Provider> {
    let url = wire.base_url(server);
    match wire.kind {
        WireKind::OpenAi => Arc::new(OpenAiProvider::new(url, None).with_model(model).with_context_window(tokens)),
        WireKind::Anthropic => {
            Arc::new(AnthropicProvider::new(url, None).with_model(model).with_context_window(tokens))
        }
        WireKind::Gemini => Arc::new(GeminiProvider::new(url, None).with_model(model).with_context_window(tokens)),
        WireKind::Responses => {
            Arc::new(ResponsesProvider::new(url, None).with_model(model).with_context_window(tokens))
        }
        other => panic!("no provider type for the wire `{}` here: add it", other.name()),
    }
}

#[tokio::test(start_paused = true)]
async fn an_overflow_moves_on_at_once_only_to_a_larger_window_on_every_pair_of_wires() {
    const PROMPT: &str = "A prompt longer than the primary's window of 16 bytes.";
    for (primary, secondary) in pairs() {
        for (small, large, moves_on) in [(8_192, 200_000, true), (200_000, 8_192, false)] {
            // The primary's server refuses any conversation over 16 bytes with its wire's own
            // context-overflow answer.
            let on_a = Scenario::new().otherwise(Step::ok("from a")).with_context_window(16);
            let a = ChaosServer::start(on_a).await.unwrap();
            let b = ChaosServer::start(Scenario::new().otherwise(Step::ok("from b"))).await.unwrap();
            let runtime = RuntimeBuilder::from_shared(windowed(primary, &a, PRIMARY_MODEL, small))
                .with_fallback_shared(windowed(secondary, &b, SECONDARY_MODEL, large))
                .build()
                .unwrap();
            let label = format!("{primary} ({small}) → {secondary} ({large})");
            let started = tokio::time::Instant::now();
            let outcome = runtime.exec(PROMPT).await;
            assert_eq!(started.elapsed(), Duration::ZERO, "{label}");
            let (seen_a, seen_b) = (a.journal(), b.journal());
            assert!(seen_a.iter().all(|entry| entry.over_window), "{label}: {seen_a:?}");
            if moves_on {
                let reply = outcome.unwrap_or_else(|error| panic!("{label}: {error}"));
                assert_eq!((reply.text(), reply.target()), ("from b", Some(name(secondary, SECONDARY_MODEL).as_str())));
                assert_eq!((seen_a.len(), seen_b.len()), (1, 1), "{label}");
                let moved = moves(reply.decisions());
                let Why::Fallback(fallback) = &moved[0].reason() else { panic!("{label}: {moved:?}") };
                assert_eq!(fallback.because, MoveReason::ContextWindow { window: small, next: large }, "{label}");
            } else {
                let error = outcome.expect_err(&label);
                assert_eq!(error.kind(), ExecErrorKind::ContextOverflow, "{label}: {error}");
                assert_eq!((seen_a.len(), seen_b.len()), (1, 0), "{label}: the next window is no larger");
            }
            a.shutdown().await;
            b.shutdown().await;
        }
    }
}

/// `lookup` answers "42" to any input.
fn lookup() -> Toolbox {
    Toolbox::new().with_fn("lookup", "Looks a key up.", json!({"type": "object"}), |_| async { Ok("42".to_owned()) })
}

#[tokio::test(start_paused = true)]
async fn a_tool_loop_moves_its_conversation_between_wires_mid_loop() {
    const PROMPT: &str = "What is the answer?";
    let input = json!({"key": "answer"});
    for pair in pairs().into_iter().filter(|(primary, secondary)| primary != secondary) {
        let on_a = Scenario::new().then(Step::tool_use("lookup", input.clone())).then(Step::invalid_api_key());
        let on_b = Scenario::new().then(Step::ok("The answer is 42."));
        let case = Case::start(pair, on_a, on_b).await;
        let runtime = case.builder.clone().with_tools(lookup()).build().unwrap();
        let reply = runtime.exec(PROMPT).await.unwrap_or_else(|error| panic!("{}: {error}", case.label()));
        assert_eq!((reply.text(), reply.iterations()), ("The answer is 42.", 1), "{}", case.label());
        assert_eq!(reply.target(), Some(case.secondary_name().as_str()), "{}", case.label());
        let because = the_move(&case, reply.decisions());
        assert!(matches!(because, MoveReason::Permanent(_)), "{}: {because:?}", case.label());

        let (a, b) = case.journals();
        assert_eq!((a.len(), b.len()), (2, 1), "{}", case.label());
        // The secondary's server read, in its own wire's shape, the prompt, the tool call with its
        // input and the tool's result: the chaos server counts each only where its wire puts it.
        let expected = PROMPT.len() + input.to_string().len() + "42".len();
        for (entry, server) in [(&a[1], "primary"), (&b[0], "secondary")] {
            assert_eq!(entry.messages, 3, "{}: {server}: prompt, tool call, tool result", case.label());
            assert_eq!(entry.context_bytes, expected, "{}: {server}: {entry:?}", case.label());
            assert_eq!(entry.tools, ["lookup"], "{}: {server}", case.label());
        }
        case.shutdown().await;
    }
}

#[derive(Debug, PartialEq, serde::Deserialize, schemars::JsonSchema)]
struct Invoice {
    currency: String,
    total: f64,
}

#[tokio::test(start_paused = true)]
async fn a_typed_answer_comes_from_the_next_wire_which_carries_the_schema_in_its_own_form() {
    for pair in pairs() {
        let on_a = Scenario::new().then(Step::invalid_api_key());
        let on_b = Scenario::new().then(Step::ok(r#"{"currency": "EUR", "total": 12.5}"#));
        let case = Case::start(pair, on_a, on_b).await;
        let invoice: Invoice = case
            .runtime
            .exec_json("Invoice: 12.50 EUR")
            .await
            .unwrap_or_else(|error| panic!("{}: {error}", case.label()));
        assert_eq!(invoice, Invoice { currency: "EUR".into(), total: 12.5 }, "{}", case.label());
        let (a, b) = case.journals();
        assert_eq!((a.len(), b.len()), (1, 1), "{}", case.label());
        // Each server found the schema where its wire puts it: OpenAI's `response_format`,
        // Anthropic's forced tool, Gemini's `generationConfig`, the Responses `text.format`.
        for entry in [&a[0], &b[0]] {
            assert_eq!(entry.schema.as_deref(), Some("Invoice"), "{}: {entry:?}", case.label());
        }
        case.shutdown().await;
    }
}

/// The same question through the attribute, whose policy gives layer 1 one retry.
#[agentic_function(session_retries = 1, retry_after_cap_ms = 5000)]
async fn ask(runtime: &Runtime, question: &str) -> Result<Reply, ExecError> {
    runtime.exec(question).await
}

#[tokio::test(start_paused = true)]
async fn the_attribute_on_a_runtime_with_a_fallback_moves_on_by_its_own_policy() {
    let pair = (wires::named("openai"), wires::named("anthropic"));
    // Its one session retry is used after two 503s: the move comes at the second request.
    let on_a = Scenario::new().then_times(2, Step::http_error(503)).otherwise(Step::ok("from a"));
    let case = Case::start(pair, on_a, Scenario::new().otherwise(Step::ok("from b"))).await;
    let reply = from_secondary(&case, ask(&case.runtime, "hi").await);
    assert_eq!(case.requests(), (2, 1));
    assert!(matches!(the_move(&case, reply.decisions()), MoveReason::RetriesUsed(_)));
    let (_, b) = case.journals();
    assert_eq!(b[0].agentic_call.as_deref(), Some("3"), "the secondary's call is the exec's third");
    case.shutdown().await;

    // Its `retry_after_cap_ms` of 5 s: a Retry-After of 10 s, which the default cap would wait,
    // moves on at once.
    let on_a = Scenario::new().then(Step::http_error(429).retry_after_secs(10)).otherwise(Step::ok("from a"));
    let case = Case::start(pair, on_a, Scenario::new().otherwise(Step::ok("from b"))).await;
    let started = tokio::time::Instant::now();
    let reply = from_secondary(&case, ask(&case.runtime, "hi").await);
    assert_eq!(started.elapsed(), Duration::ZERO);
    assert_eq!(case.requests(), (1, 1));
    assert!(matches!(the_move(&case, reply.decisions()), MoveReason::Refused(_)));
    case.shutdown().await;
}

/// Layer 1 waits 1, 2, 4 ms: an outage's failures fall in one breaker window.
const QUICK: RetryPolicy = EXACT.with_session_base_delay_ms(1);

/// Opens at 50 % failures of at least 3 calls in 10 s, for 2 s.
fn small_breaker() -> BreakerSettings {
    BreakerSettings::new(50, 3, Duration::from_secs(10), Duration::from_secs(2)).unwrap()
}

/// The pairs the breaker tests run on: each wire once as the primary, once as the secondary.
fn representative_pairs() -> Vec<(Wire, Wire)> {
    [("openai", "anthropic"), ("anthropic", "openai"), ("gemini", "responses"), ("responses", "gemini")]
        .into_iter()
        .map(|(primary, secondary)| (wires::named(primary), wires::named(secondary)))
        .collect()
}

/// The primary's breaker and the secondary's.
fn breakers(runtime: &Runtime) -> Vec<Option<BreakerState>> {
    runtime.targets().into_iter().map(|target| target.breaker).collect()
}

/// The primary's server's journal as (at_ms, outage) per request.
fn primary_seen(case: &Case) -> Vec<(u64, bool)> {
    case.journals().0.iter().map(|entry| (entry.at_ms, entry.outage)).collect()
}

#[tokio::test(start_paused = true)]
async fn an_outage_opens_the_breaker_a_probe_during_it_reopens_it_a_probe_after_it_closes_it() {
    let outage_ends = Duration::from_secs(10);
    for pair in representative_pairs() {
        let on_a = Scenario::new().otherwise(Step::ok("from a")).with_outage(Outage::new(Duration::ZERO, outage_ends));
        let case = Case::start(pair, on_a, Scenario::new().otherwise(Step::ok("from b"))).await;
        let runtime = case.builder.clone().with_policy(QUICK).with_breaker(small_breaker()).build().unwrap();
        let label = case.label();
        assert_eq!(breakers(&runtime), [Some(BreakerState::Closed), Some(BreakerState::Closed)], "{label}");

        // The first exec: three failures of three calls open the primary's breaker, so layer 1
        // stops retrying it (a fourth call would be its last retry) and the secondary answers.
        let reply = from_secondary(&case, runtime.exec("hi").await);
        assert_eq!(primary_seen(&case), [(0, true), (1, true), (3, true)], "{label}");
        let opened = Opened { failures: 3, calls: 3, window: Duration::from_secs(10) };
        let open = BreakerState::Open { left: Duration::from_secs(2), opened };
        assert_eq!(breakers(&runtime), [Some(open), Some(BreakerState::Closed)], "{label}");
        let gave_up = reply.decisions().iter().find(|d| matches!(d.reason(), Why::BreakerOpen { .. }));
        assert_eq!(gave_up.map(|d| (d.layer(), d.verdict())), Some((Layer::Session, Verdict::GiveUp)), "{label}");
        assert_eq!(the_move(&case, reply.decisions()), &MoveReason::BreakerOpen(open), "{label}");

        // While it is open, execs skip the primary at no cost: no request, no sleep.
        for _ in 0..3 {
            let started = tokio::time::Instant::now();
            let reply = from_secondary(&case, runtime.exec("hi").await);
            assert_eq!(started.elapsed(), Duration::ZERO, "{label}");
            assert_eq!(
                moves(reply.decisions())[0].reason().to_string(),
                format!(
                    "fallback: `{}` open after 3 failures of 3 calls in 10 s (2.0 s of its open period left) → `{}`",
                    case.primary_name(),
                    case.secondary_name()
                ),
                "{label}"
            );
        }
        assert_eq!(case.requests(), (3, 4), "{label}");

        // After the open period, one probe; the outage answers it: open again for 2 s, and the
        // probe's exec is still answered, by the secondary.
        tokio::time::advance(Duration::from_secs(2)).await;
        let ended = BreakerState::Open { left: Duration::ZERO, opened };
        assert_eq!(breakers(&runtime), [Some(ended), Some(BreakerState::Closed)], "{label}: the next call probes");
        from_secondary(&case, runtime.exec("hi").await);
        assert_eq!(primary_seen(&case).len(), 4, "{label}: one probe");
        assert_eq!(primary_seen(&case)[3], (2_003, true), "{label}");
        assert_eq!(
            breakers(&runtime),
            [Some(open), Some(BreakerState::Closed)],
            "{label}: a failed probe opens it for another open period"
        );
        from_secondary(&case, runtime.exec("hi").await);
        assert_eq!(case.requests(), (4, 6), "{label}: skipped again");

        // The outage is over and so is the open period: the probe answers, the breaker closes,
        // and traffic is back on the primary.
        tokio::time::advance(outage_ends).await;
        for n in 0..3 {
            let reply = runtime.exec("hi").await.unwrap_or_else(|error| panic!("{label}: {error}"));
            assert_eq!((reply.text(), reply.target()), ("from a", Some(case.primary_name().as_str())), "{label}");
            assert!(moves(reply.decisions()).is_empty(), "{label}");
            assert_eq!(breakers(&runtime), [Some(BreakerState::Closed), Some(BreakerState::Closed)], "{label}: {n}");
        }
        assert_eq!(case.requests(), (7, 6), "{label}");
        assert_eq!(primary_seen(&case)[4..], [(12_003, false); 3], "{label}");
        case.shutdown().await;
    }
}

#[tokio::test(start_paused = true)]
async fn half_open_lets_one_probe_through_while_concurrent_execs_skip_to_the_secondary() {
    for pair in representative_pairs() {
        // After the outage the primary answers, slowly: the probe is still out while the other
        // execs ask the breaker.
        let slow = Step::ok("from a").chunks(2).chunk_delay_ms(500);
        let on_a = Scenario::new()
            .then(slow)
            .otherwise(Step::ok("from a"))
            .with_outage(Outage::new(Duration::ZERO, Duration::from_secs(1)));
        let case = Case::start(pair, on_a, Scenario::new().otherwise(Step::ok("from b"))).await;
        let runtime = case.builder.clone().with_policy(QUICK).with_breaker(small_breaker()).build().unwrap();
        let label = case.label();
        from_secondary(&case, runtime.exec("hi").await);
        assert_eq!(case.requests(), (3, 1), "{label}: open");

        tokio::time::advance(Duration::from_secs(2)).await;
        let mut execs = tokio::task::JoinSet::new();
        for _ in 0..5 {
            let runtime = runtime.clone();
            execs.spawn(async move { runtime.exec("hi").await });
        }
        // Halfway through the probe's slow answer: the probe is out, the others have skipped.
        tokio::time::sleep(Duration::from_millis(250)).await;
        assert_eq!(case.requests(), (4, 5), "{label}");
        assert!(matches!(breakers(&runtime)[0], Some(BreakerState::HalfOpen { .. })), "{label}");
        let mut targets = Vec::new();
        while let Some(outcome) = execs.join_next().await {
            let reply = outcome.unwrap().unwrap_or_else(|error| panic!("{label}: {error}"));
            if reply.target() == Some(case.secondary_name().as_str()) {
                let because = the_move(&case, reply.decisions());
                assert!(
                    matches!(because, MoveReason::BreakerOpen(BreakerState::HalfOpen { .. })),
                    "{label}: {because:?}"
                );
            }
            targets.push(reply.target().unwrap().to_owned());
        }
        targets.sort();
        let mut expected = vec![case.secondary_name(); 4];
        expected.push(case.primary_name());
        expected.sort();
        assert_eq!(targets, expected, "{label}: one probe, four skips");
        assert_eq!(case.requests(), (4, 5), "{label}");
        assert_eq!(breakers(&runtime)[0], Some(BreakerState::Closed), "{label}: the probe's answer closed it");
        case.shutdown().await;
    }
}

#[tokio::test(start_paused = true)]
async fn a_429_whose_retry_after_is_honoured_does_not_count_against_the_breaker() {
    for pair in representative_pairs() {
        // Three 429s would open the small breaker if they counted; the cooldown handles them.
        let on_a =
            Scenario::new().then_times(3, Step::http_error(429).retry_after_secs(1)).otherwise(Step::ok("from a"));
        let case = Case::start(pair, on_a, Scenario::new().otherwise(Step::ok("from b"))).await;
        let runtime = case.builder.clone().with_policy(QUICK).with_breaker(small_breaker()).build().unwrap();
        let label = case.label();
        let reply = runtime.exec("hi").await.unwrap_or_else(|error| panic!("{label}: {error}"));
        assert_eq!(reply.target(), Some(case.primary_name().as_str()), "{label}");
        assert_eq!(case.requests(), (4, 0), "{label}: a brief 429 must not open the breaker");
        assert_eq!(breakers(&runtime)[0], Some(BreakerState::Closed), "{label}");
        case.shutdown().await;
    }
}

#[tokio::test(start_paused = true)]
async fn a_wobble_of_one_failure_in_three_keeps_the_standard_breaker_closed_and_the_calls_on_the_primary() {
    let (primary, secondary) = (wires::named("openai"), wires::named("anthropic"));
    // Every third request fails: at most a third of the calls in any window, from the first on.
    let on_a = (0..90).fold(Scenario::new(), |scenario, n| {
        if n % 3 == 2 { scenario.then(Step::http_error(503)) } else { scenario.then(Step::ok("from a")) }
    });
    let case = Case::start((primary, secondary), on_a, Scenario::new().otherwise(Step::ok("from b"))).await;
    let runtime = case.builder.clone().with_policy(QUICK).with_breaker(BreakerSettings::standard()).build().unwrap();
    for n in 0..60 {
        let reply = runtime.exec("hi").await.unwrap_or_else(|error| panic!("exec {n}: {error}"));
        assert_eq!(reply.target(), Some(case.primary_name().as_str()), "exec {n}: {:?}", reply.decisions());
    }
    // 60 answers and 29 failures, each retried once on the primary; none sent to the secondary.
    assert_eq!(case.requests(), (89, 0));
    assert_eq!(breakers(&runtime)[0], Some(BreakerState::Closed));
    case.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_probe_whose_exec_is_dropped_is_given_back_and_the_next_exec_probes_at_once() {
    for pair in representative_pairs() {
        let on_a = Scenario::new()
            .then(Step::hang())
            .otherwise(Step::ok("from a"))
            .with_outage(Outage::new(Duration::ZERO, Duration::from_secs(1)));
        let case = Case::start(pair, on_a, Scenario::new().otherwise(Step::ok("from b"))).await;
        let runtime = case.builder.clone().with_policy(QUICK).with_breaker(small_breaker()).build().unwrap();
        let label = case.label();
        from_secondary(&case, runtime.exec("hi").await);
        assert_eq!(case.requests(), (3, 1), "{label}: open");

        // The probe hangs and its exec is dropped: its admission, dropped with it, gives the probe
        // back (before, the target stayed half-open for a whole open period, every exec skipping it).
        tokio::time::advance(Duration::from_secs(2)).await;
        let dropped = tokio::time::timeout(Duration::from_millis(100), runtime.exec("hi")).await;
        assert!(dropped.is_err(), "{label}: {dropped:?}");
        assert_eq!(case.requests(), (4, 1), "{label}: the probe reached the primary");
        let half_open = breakers(&runtime)[0];
        assert!(matches!(half_open, Some(BreakerState::Open { left: Duration::ZERO, .. })), "{label}: {half_open:?}");
        // The next exec is the probe, at once; the primary answers it and the breaker closes.
        let reply = runtime.exec("hi").await.unwrap_or_else(|error| panic!("{label}: {error}"));
        assert_eq!((reply.text(), reply.target()), ("from a", Some(case.primary_name().as_str())), "{label}");
        assert_eq!(case.requests(), (5, 1), "{label}");
        assert_eq!(breakers(&runtime)[0], Some(BreakerState::Closed), "{label}");
        case.shutdown().await;
    }
}

#[tokio::test(start_paused = true)]
async fn with_every_target_open_an_exec_ends_at_once_without_a_request() {
    let outage = Duration::from_secs(60);
    for pair in representative_pairs() {
        let down = || Scenario::new().otherwise(Step::ok("up")).with_outage(Outage::new(Duration::ZERO, outage));
        let case = Case::start(pair, down(), down()).await;
        let runtime = case.builder.clone().with_policy(QUICK).with_breaker(small_breaker()).build().unwrap();
        let label = case.label();
        // Three failures open each breaker in turn; the last target's next call is refused.
        let error = runtime.exec("hi").await.expect_err(&label);
        assert_eq!((error.kind(), error.target()), (ExecErrorKind::Refused, Some(case.secondary_name().as_str())));
        assert_eq!(case.requests(), (3, 3), "{label}");
        assert!(breakers(&runtime).iter().all(|state| matches!(state, Some(BreakerState::Open { .. }))), "{label}");

        let started = tokio::time::Instant::now();
        let error = runtime.exec("hi").await.expect_err(&label);
        assert_eq!(started.elapsed(), Duration::ZERO, "{label}");
        assert_eq!(error.kind(), ExecErrorKind::Refused, "{label}: {error}");
        let refusal =
            format!("every target's circuit breaker is open: the last, `{}`, is open for", case.secondary_name());
        assert!(error.stopped_by().is_some_and(|why| why.starts_with(&refusal)), "{label}: {error}");
        assert_eq!(case.requests(), (3, 3), "{label}: no request to either");

        // Both recover; the first exec after the open period probes the primary, which closes.
        tokio::time::advance(outage).await;
        let reply = runtime.exec("hi").await.unwrap_or_else(|error| panic!("{label}: {error}"));
        assert_eq!((reply.text(), reply.target()), ("up", Some(case.primary_name().as_str())), "{label}");
        assert_eq!(breakers(&runtime)[0], Some(BreakerState::Closed), "{label}");
        assert_eq!(case.requests(), (4, 3), "{label}");
        case.shutdown().await;
    }
}
