//! `Classify for OpenAIError` against the chaos server: an `async_openai::Client` on the chaos
//! server's OpenAI endpoint, through a bare `ReqwestService` (so that async-openai's own
//! `OpenAIRetryLayer`, which its default executor puts in, retries nothing), gets for each failure
//! of `classify_support::cases` the action our own `OpenAiProvider` gets of the same response, on
//! `chat().create` and `chat().create_stream` alike; and `Resilient` around `chat().create` goes
//! through a 503 to the answer.

mod classify_support;

use agentic_chaos::{ChaosServer, NotAnAnswer, Scenario, Step};
use agentic_runtime::RetryPolicy;
use agentic_runtime::classify::ExecAction;
use agentic_runtime::resilient::{Classification, Classify, Resilient};
use async_openai::Client;
use async_openai::config::OpenAIConfig;
use async_openai::error::OpenAIError;
use async_openai::middleware::ReqwestService;
use async_openai::types::chat::{
    ChatCompletionRequestUserMessage, CreateChatCompletionRequest, CreateChatCompletionRequestArgs,
};
use classify_support::{Case, KEY, MODEL, cases, each_case, failing_streams, ours, serve, whole};
use futures_util::StreamExt as _;

fn client(server: &ChaosServer) -> Client<OpenAIConfig> {
    let config = OpenAIConfig::new().with_api_base(server.openai_base_url()).with_api_key(KEY);
    Client::with_config(config).with_http_service(ReqwestService::new(reqwest_013::Client::new()))
}

fn question() -> CreateChatCompletionRequest {
    CreateChatCompletionRequestArgs::default()
        .model(MODEL)
        .messages([ChatCompletionRequestUserMessage::from("What is the answer?").into()])
        .build()
        .expect("the request builds")
}

/// async-openai's error of one `chat().create` against a server playing `step`.
async fn create_error(step: Step) -> OpenAIError {
    let server = serve(step).await;
    client(&server).chat().create(question()).await.expect_err("the call fails")
}

/// async-openai's error of one `chat().create_stream`: the call's, or the stream's first.
async fn stream_error(step: Step) -> OpenAIError {
    let server = serve(step).await;
    match client(&server).chat().create_stream(question()).await {
        Err(error) => error,
        Ok(stream) => {
            let items: Vec<_> = stream.collect().await;
            items.into_iter().find_map(Result::err).expect("the stream fails")
        }
    }
}

/// The verdict of async-openai's error is ours, whole, where the body decides it (async-openai keeps
/// the body); where the headers do, only what they do not decide: async-openai keeps no headers,
/// so no `Retry-After` reaches its error (the tower layer in `with_http_service` reads them) and
/// `x-should-retry: false` cannot stop the retry of a 503. A connection closed before the headers:
/// the action, since async-openai hands over reqwest's error, judged by reqwest's rules, not the
/// phase our provider's driver knows.
fn same_action(case: &Case, theirs: &Classification, ours: &Classification) {
    let name = case.name;
    assert_eq!(theirs.retry_after, None, "{name}: async-openai keeps no header");
    if matches!(case.step, Step::CloseBeforeHeaders) {
        assert_eq!((&theirs.action, &ours.action), (&ExecAction::Retry, &ExecAction::Retry), "{name}");
    } else if !case.hinted {
        assert_eq!(theirs, ours, "{name}");
    } else if ours.action == ExecAction::FailPermanently {
        // `x-should-retry: false` on a 503: only the header said stop.
        assert_eq!(theirs.action, ExecAction::Retry, "{name}");
    } else {
        assert_eq!(theirs.action, ours.action, "{name}");
        assert!(ours.retry_after.is_some(), "{name}: {ours:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_create_calls_errors_get_our_providers_actions() {
    each_case(cases(), create_error, same_action).await;
}

#[tokio::test(start_paused = true)]
async fn a_create_stream_calls_errors_get_our_providers_actions() {
    each_case(cases(), stream_error, same_action).await;
}

/// The body's verdicts are whole: async-openai keeps the body, so the same error text and reason.
#[tokio::test(start_paused = true)]
async fn a_spent_quota_is_permanent_as_ours_says() {
    let quota = || Step::from(Step::http_error(429).code("insufficient_quota"));
    let ours = ours(quota()).await;
    assert_eq!(ours.action, ExecAction::FailPermanently);
    assert_eq!(create_error(quota()).await.classify(), ours);
    assert_eq!(stream_error(quota()).await.classify(), ours);
}

#[tokio::test(start_paused = true)]
async fn resilient_around_create_goes_through_a_503() {
    let scenario = Scenario::new().then(Step::http_error(503)).otherwise(Step::ok("the answer"));
    let server = ChaosServer::start(scenario).await.expect("the chaos server starts");
    let client = client(&server);
    let chat = client.chat();
    let policy = RetryPolicy::new().with_max_retries(3);
    let answer = Resilient::new("async-openai chat", &policy)
        .with_jitter_seed(7)
        .call(|| chat.create(question()))
        .await
        .expect("answered after the 503");
    let text = answer.choices.first().and_then(|choice| choice.message.content.as_deref());
    assert_eq!(text, Some("the answer"));
    assert_eq!(server.requests_served(), 2);
}

/// A stream cut mid-way, a chunk that is not JSON, an error event (of a retryable type and of a
/// permanent one) and a 2xx body that is not an answer: async-openai keeps what our provider reads
/// (the transport error, the chunk, the event's body), so the verdict is ours, whole.
#[tokio::test(start_paused = true)]
async fn streams_and_bodies_that_are_not_answers_get_our_providers_verdicts() {
    each_case(failing_streams(), stream_error, whole).await;
    let dropped = || Step::from(Step::drop_stream(2));
    assert_eq!(stream_error(dropped()).await.classify(), ours(dropped()).await);
    let permanent = ours(Step::sse_error(1).error_type("invalid_request_error").into()).await;
    assert_eq!(permanent.action, ExecAction::FailPermanently);
    // A health check's answer to `create` (to `create_stream` it is no event at all: the stream
    // ends with nothing, no error to judge).
    let health = || Step::not_an_answer(NotAnAnswer::StatusOk);
    let verdict = create_error(health()).await.classify();
    assert_eq!(verdict, ours(health()).await);
    assert_eq!(verdict.action, ExecAction::FailPermanently);
}
