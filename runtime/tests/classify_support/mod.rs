//! What the tests of `Classify` for other clients' errors share: the steps every client is judged
//! on, the chaos server playing one, and the verdict our own `OpenAiProvider` gives the same step
//! (the verdict each client's error must get).
#![allow(dead_code)] // each test file uses part of it

use agentic_chaos::{ChaosServer, Scenario, Step};
use agentic_runtime::message::Message;
use agentic_runtime::provider::ModelError;
use agentic_runtime::provider::{OpenAiProvider, Provider, Request, StreamEvent};
use agentic_runtime::resilient::{Classification, Classify};
use futures_util::StreamExt as _;

/// The key every client sends.
pub const KEY: &str = "sk-test";

/// The model every client asks for.
pub const MODEL: &str = "test-model";

/// A step, named for the assertion messages.
pub struct Case {
    pub name: &'static str,
    pub step: Step,
    /// The response carries a header hint (`Retry-After`, `retry-after-ms`, `x-should-retry`).
    pub hinted: bool,
}

/// The steps every client is judged on (a 429 with each hint, 5xx, a refused key, an overflow, a
/// connection closed, broken streams), each a fresh `Step`.
pub fn cases() -> Vec<Case> {
    let case = |name, step: Step, hinted| Case { name, step, hinted };
    vec![
        case("429 Retry-After: 2", Step::http_error(429).retry_after_secs(2).into(), true),
        case("429 retry-after-ms: 1500", Step::http_error(429).retry_after_ms(1500).into(), true),
        case("503 x-should-retry: false", Step::http_error(503).should_retry(false).into(), true),
        case("503", Step::http_error(503).into(), false),
        case("401 invalid API key", Step::invalid_api_key().into(), false),
        case("400 context overflow", Step::context_overflow().into(), false),
        case("closed before headers", Step::close_before_headers(), false),
    ]
}

/// Streams that fail after their headers, whose failure every client keeps as our provider reads
/// it (the chunk, the error event's body): a chunk that is not JSON, an error event of a retryable
/// type and one of a permanent type.
pub fn failing_streams() -> Vec<Case> {
    let case = |name, step: Step| Case { name, step, hinted: false };
    vec![
        case("a malformed chunk", Step::malformed_chunk(1).into()),
        case("an error event", Step::sse_error(1).into()),
        case("a bad request's error event", Step::sse_error(1).error_type("invalid_request_error").into()),
    ]
}

/// The client's verdict is ours, whole.
pub fn whole(case: &Case, theirs: &Classification, ours: &Classification) {
    assert_eq!(theirs, ours, "{}", case.name);
}

/// A chaos server that plays `step` to every request.
pub async fn serve(step: Step) -> ChaosServer {
    ChaosServer::start(Scenario::new().otherwise(step)).await.expect("the chaos server starts")
}

/// The error our `OpenAiProvider` yields against a server playing `step`.
pub async fn our_error(step: Step) -> ModelError {
    let server = serve(step).await;
    let provider = OpenAiProvider::new(server.openai_base_url(), Some(KEY.to_owned())).with_model(MODEL);
    let messages = [Message::user("What is the answer?")];
    let items: Vec<_> = provider.stream(&Request::new(&messages)).collect().await;
    items
        .into_iter()
        .find_map(|item| match item {
            Err(error) | Ok(StreamEvent::Error { error: Some(error), .. }) => Some(error),
            _ => None,
        })
        .expect("our provider fails on an error step")
}

/// The verdict our provider's error gets for `step`.
pub async fn ours(step: Step) -> Classification {
    our_error(step).await.classify()
}

/// For each of `cases`: the verdict of the client's error (`error_of` the step) and ours, to `compare`.
pub async fn each_case<E, Fut>(
    cases: Vec<Case>,
    error_of: impl Fn(Step) -> Fut,
    compare: fn(&Case, &Classification, &Classification),
) where
    E: Classify,
    Fut: Future<Output = E>,
{
    for case in cases {
        let theirs = error_of(case.step.clone()).await.classify();
        let ours = ours(case.step.clone()).await;
        compare(&case, &theirs, &ours);
    }
}
