//! The rate limits a response's headers state reach the runtime as the call's first event
//! (`StreamEvent::RateLimits`, docs/design.md §10), on every wire (`wires::all`) against the chaos server:
//! on a 200 stream, a 2xx JSON body and a 429 (before its error), both header families; never
//! from a redirect, and not at all from a response without such headers. A first response that
//! its fallback replaces states its own limits, before the fallback's.

use std::time::Duration;

use agentic_chaos::{ChaosServer, Scenario, Step};
use agentic_runtime::message::Message;
use agentic_runtime::provider::ModelError;
use agentic_runtime::provider::{Request, ResponseSchema, StreamEvent};
use agentic_runtime::storm::pace::{Limit, LimitKind, RateLimits};
use agentic_test_support::wires::{self, Wire, named};
use futures_util::StreamExt as _;

/// OpenAI's family: 60 requests (59 left, full in 1.5 s) and 1000 tokens (400 left, in 6 m).
const OPENAI: [(&str, &str); 6] = [
    ("x-ratelimit-limit-requests", "60"),
    ("x-ratelimit-remaining-requests", "59"),
    ("x-ratelimit-reset-requests", "1.5s"),
    ("x-ratelimit-limit-tokens", "1000"),
    ("x-ratelimit-remaining-tokens", "400"),
    ("x-ratelimit-reset-tokens", "6m0s"),
];

/// Anthropic's family, requests only, with a reset in the past (so the test needs no clock).
const ANTHROPIC: [(&str, &str); 3] = [
    ("anthropic-ratelimit-requests-limit", "50"),
    ("anthropic-ratelimit-requests-remaining", "0"),
    ("anthropic-ratelimit-requests-reset", "2020-01-01T00:00:00Z"),
];

fn openai_limits() -> RateLimits {
    RateLimits::new()
        .with(LimitKind::Requests, Limit::new(60, 59, Duration::from_millis(1500)))
        .with(LimitKind::Tokens, Limit::new(1000, 400, Duration::from_secs(360)))
}

fn anthropic_limits() -> RateLimits {
    let requests = Limit::new(50, 0, Duration::ZERO).with_window(Duration::from_secs(60));
    RateLimits::new().with(LimitKind::Requests, requests).with_cached_reads_free()
}

/// What one call of `wire` against a chaos server playing `step` yields.
async fn call(wire: Wire, step: impl Into<agentic_chaos::Step>) -> Vec<Result<StreamEvent, ModelError>> {
    let server = ChaosServer::start(Scenario::new().otherwise(step)).await.expect("the chaos server starts");
    let provider = wire.provider(&server);
    let messages = [Message::user("What is the answer?")];
    let request = Request::new(&messages);
    provider.stream(&request).collect().await
}

fn limits_in(items: &[Result<StreamEvent, ModelError>]) -> usize {
    items.iter().filter(|item| matches!(item, Ok(StreamEvent::RateLimits(_)))).count()
}

/// The items hold exactly one `RateLimits`, first, equal to `expected`, and something after it.
fn first_is(wire: Wire, items: &[Result<StreamEvent, ModelError>], expected: RateLimits) {
    match items.first() {
        Some(Ok(StreamEvent::RateLimits(limits))) => assert_eq!(**limits, expected, "{wire}"),
        other => panic!("{wire}: the first item is {other:?}, not the rate limits"),
    }
    assert_eq!(limits_in(items), 1, "{wire}: {items:?}");
    assert!(items.len() > 1, "{wire}: {items:?}");
}

#[tokio::test(start_paused = true)]
async fn a_200_stream_states_its_limits_first_then_answers() {
    for wire in wires::all() {
        let step = OPENAI.iter().fold(Step::ok("the answer"), |step, (name, value)| step.header(*name, *value));
        let items = call(wire, step).await;
        first_is(wire, &items, openai_limits());
        let text: String = items
            .iter()
            .filter_map(|item| match item {
                Ok(StreamEvent::TextDelta(text)) => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(text, "the answer", "{wire}: {items:?}");
        assert!(matches!(items.last(), Some(Ok(StreamEvent::Done { .. }))), "{wire}: {items:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_429_states_its_limits_before_its_error() {
    for wire in wires::all() {
        let step = ANTHROPIC
            .iter()
            .fold(Step::http_error(429).header("retry-after", "2"), |step, (name, value)| step.header(*name, *value));
        let items = call(wire, step).await;
        first_is(wire, &items, anthropic_limits());
        match &items[1..] {
            [Err(error)] => {
                assert_eq!(error.kind(), "RateLimitError", "{wire}: {error}");
                assert_eq!(error.retry_after(), Some(Duration::from_secs(2)), "{wire}: {error}");
            }
            rest => panic!("{wire}: after the limits, {rest:?}"),
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_2xx_json_body_states_its_limits_first() {
    for wire in wires::all() {
        let step = OPENAI.iter().fold(
            Step::wrong_content_type()
                .content_type("application/json")
                .body(r#"{"error": {"message": "overloaded", "type": "overloaded_error"}}"#),
            |step, (name, value)| step.header(*name, *value),
        );
        let items = call(wire, step).await;
        first_is(wire, &items, openai_limits());
        assert!(matches!(&items[1..], [Ok(StreamEvent::Error { .. })]), "{wire}: {items:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_redirect_states_no_limits() {
    for wire in wires::all() {
        let step =
            OPENAI.iter().fold(Step::redirect().location("http://127.0.0.1:9/elsewhere"), |step, (name, value)| {
                step.header(*name, *value)
            });
        let items = call(wire, step).await;
        assert!(matches!(&items[..], [Err(_)]), "{wire}: {items:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_response_without_limit_headers_states_none() {
    for wire in wires::all() {
        for step in [
            Step::ok("the answer").header("x-request-id", "req_1").into(),
            Step::http_error(429).header("retry-after", "1").into(),
            // Half a statement is none: a limit without its reset, and a reset that is no duration.
            Step::ok("the answer")
                .header("x-ratelimit-limit-requests", "60")
                .header("x-ratelimit-remaining-requests", "59")
                .header("x-ratelimit-limit-tokens", "1000")
                .header("x-ratelimit-remaining-tokens", "400")
                .header("x-ratelimit-reset-tokens", "360")
                .into(),
        ] {
            let step: agentic_chaos::Step = step;
            let items = call(wire, step.clone()).await;
            assert_eq!(limits_in(&items), 0, "{wire} {step:?}: {items:?}");
            assert!(!items.is_empty(), "{wire}");
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_refused_first_request_and_its_fallback_each_state_their_limits_in_order() {
    let wire = named("openai");
    let stated = |step_remaining: &str| {
        [
            ("x-ratelimit-limit-requests", "60".to_owned()),
            ("x-ratelimit-remaining-requests", step_remaining.to_owned()),
            ("x-ratelimit-reset-requests", "1s".to_owned()),
        ]
    };
    let refused = stated("59")
        .into_iter()
        .fold(Step::http_error(400).message("Invalid schema for response_format 'Answer'"), |step, (name, value)| {
            step.header(name, value)
        });
    let answered = stated("58").into_iter().fold(Step::ok("{}"), |step, (name, value)| step.header(name, value));
    let server = ChaosServer::start(Scenario::new().then(refused).otherwise(answered)).await.unwrap();
    let provider = wire.provider(&server);
    let messages = [Message::user("What is the answer?")];
    let schema = ResponseSchema::new("Answer", serde_json::json!({"type": "object"}));
    let mut request = Request::new(&messages);
    request.schema = Some(&schema);
    let items: Vec<_> = provider.stream(&request).collect().await;
    let remaining: Vec<u64> = items
        .iter()
        .map_while(|item| match item {
            Ok(StreamEvent::RateLimits(limits)) => limits.get(LimitKind::Requests).map(|limit| limit.remaining),
            _ => None,
        })
        .collect();
    assert_eq!((remaining, limits_in(&items)), (vec![59, 58], 2), "{items:?}");
    assert_eq!(server.journal().len(), 2);
    assert!(matches!(items.last(), Some(Ok(StreamEvent::Done { .. }))), "{items:?}");
}
