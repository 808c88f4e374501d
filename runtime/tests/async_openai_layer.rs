//! `tower::RetryLayer` as async-openai's HTTP service (`Client::with_http_service`) against the
//! chaos server: the adapters' shared checks through async-openai's own door (its
//! `HttpRequestFactory`, sent again for each call, and `ReqwestService`), then async-openai's client
//! on top: streamed and whole chat completions through the hints, the layers' failure (holding the
//! `ApiError` async-openai would have made) in place of the error response they gave up on, bounded
//! in time and without the key, and a `Resilient` around the client that does not multiply calls.

#[macro_use]
mod adapters_support;

use std::time::Duration;

use adapters_support::{
    Answer, KEY, Refused, assert_no_piece_of_the_key, chat_body, chat_url, layer, start, within_a_minute,
};
use agentic_chaos::{ChaosServer, EchoKey, Scenario, Step};
use agentic_runtime::classify::ExecAction;
use agentic_runtime::resilient::{Classify as _, Failure, Resilient};
use agentic_runtime::tower::{RetryLayer, last_openai_error};
use agentic_runtime::{ExecErrorKind, RetryPolicy};
use async_openai::config::OpenAIConfig;
use async_openai::error::OpenAIError;
use async_openai::middleware::{HttpRequestFactory, ReqwestService};
use async_openai::types::chat::CreateChatCompletionRequest;
use futures_util::StreamExt as _;
use tower::ServiceExt as _;

/// One streamed chat completion request through `layer` around async-openai's `ReqwestService`,
/// from a request factory as async-openai's client makes one (the key named to the layer, which
/// cannot see a request built after it): what came back, or the failure.
async fn send(layer: RetryLayer, server: &ChaosServer) -> Result<Answer, Refused> {
    let url = chat_url(server);
    let factory = HttpRequestFactory::new(move || {
        let request = reqwest_013::Client::new()
            .post(&url)
            .bearer_auth(KEY)
            .header("content-type", "application/json")
            .body(chat_body())
            .build();
        async move { request.map_err(OpenAIError::Reqwest) }
    });
    let service = layer.redacting(KEY).around(ReqwestService::new(reqwest_013::Client::new()));
    let response = match service.oneshot(factory).await {
        Ok(response) => response,
        Err(failure) => return gave_up(failure),
    };
    let (status, headers) = (response.status().as_u16(), response.headers().clone());
    let debug = format!("{response:?}");
    let body = response.text().await.map_err(Refused::client)?;
    Ok(Answer { status, headers: Some(headers), gave_up: None, shown: format!("{debug}\n{body}"), body })
}

/// What async-openai's client gets when the layers gave up: the failure, whose last error is the
/// `ApiError` async-openai would have made of the response (read as the shared checks read a
/// response: its status and body, no headers), or the failure itself.
fn gave_up(failure: Failure<OpenAIError>) -> Result<Answer, Refused> {
    let kind = failure.kind();
    let error = OpenAIError::from(failure);
    let shown = format!("{error}\n{error:?}");
    match last_openai_error(&error) {
        Some(OpenAIError::ApiError(response)) => {
            let status = response.status_code;
            // A 5xx's body is its message, whole; a 4xx's, OpenAI's error object.
            let body = match status.is_server_error() {
                true => response.api_error.message.clone(),
                false => serde_json::json!({"error": response.api_error}).to_string(),
            };
            Ok(Answer { status: status.as_u16(), headers: None, body, gave_up: Some(kind), shown })
        }
        _ => {
            let OpenAIError::Boxed(boxed) = &error else { unreachable!("the layers' failure, boxed") };
            let failure = boxed.downcast_ref::<Failure<OpenAIError>>().expect("the layers' failure");
            Err(Refused { shown, ..Refused::failure(failure) })
        }
    }
}

adapter_tests!(send);

/// An async-openai client on `server` whose HTTP service is `layer` around async-openai's own
/// reqwest service.
fn client(server: &ChaosServer, layer: &RetryLayer) -> async_openai::Client<OpenAIConfig> {
    let config = OpenAIConfig::new().with_api_base(server.openai_base_url()).with_api_key(KEY);
    let service = layer.around(ReqwestService::new(reqwest_013::Client::new()));
    async_openai::Client::with_config(config).with_http_service(service)
}

fn chat_request(stream: bool) -> CreateChatCompletionRequest {
    serde_json::from_value(serde_json::json!({
        "model": "test-model",
        "stream": stream,
        "messages": [{"role": "user", "content": "What is the answer?"}],
    }))
    .unwrap()
}

/// A whole chat completion's text, or its error.
async fn create(client: &async_openai::Client<OpenAIConfig>) -> Result<String, OpenAIError> {
    let response = client.chat().create(chat_request(false)).await?;
    Ok(response.choices[0].message.content.clone().unwrap_or_default())
}

/// A streamed chat completion's text, or its error.
async fn create_stream(client: &async_openai::Client<OpenAIConfig>) -> Result<String, OpenAIError> {
    let mut chunks = client.chat().create_stream(chat_request(true)).await?;
    let mut text = String::new();
    while let Some(chunk) = chunks.next().await {
        for choice in chunk?.choices {
            text.push_str(choice.delta.content.as_deref().unwrap_or_default());
        }
    }
    Ok(text)
}

/// The status of the `ApiError` async-openai would have made, inside the layers' failure.
fn status(error: &OpenAIError) -> Option<u16> {
    match last_openai_error(error)? {
        OpenAIError::ApiError(response) => Some(response.status_code.as_u16()),
        _ => None,
    }
}

#[tokio::test(start_paused = true)]
async fn a_429_with_retry_after_waits_the_header_streamed_and_whole() {
    for streamed in [true, false] {
        let server =
            start(Scenario::new().then(Step::http_error(429).retry_after_secs(2)).otherwise(Step::ok("42"))).await;
        let (layer, decisions) = layer(RetryPolicy::new());
        let client = client(&server, &layer);
        let started = tokio::time::Instant::now();
        let text = if streamed { create_stream(&client).await } else { create(&client).await };
        assert_eq!(text.unwrap(), "42", "streamed: {streamed}");
        assert!(started.elapsed() >= Duration::from_secs(2));
        assert_eq!(server.requests_served(), 2);
        let delay = decisions.lock().unwrap()[0].delay().unwrap();
        assert!(delay >= Duration::from_secs(2) && delay <= Duration::from_millis(2500), "{delay:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn x_should_retry_false_is_one_request_and_async_openai_gets_the_failure_holding_its_error() {
    let server = start(
        Scenario::new()
            .then(Step::http_error(503).should_retry(false).message("do not retry"))
            .otherwise(Step::ok("42")),
    )
    .await;
    let (layer, _) = layer(RetryPolicy::new());
    let error = create_stream(&client(&server, &layer)).await.unwrap_err();
    assert_eq!(status(&error), Some(503), "{error}");
    assert!(error.to_string().contains("do not retry"), "{error}");
    assert_eq!(server.requests_served(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_call_cut_at_the_policys_limit_is_a_failure_async_openai_boxes() {
    let server = start(Scenario::new().otherwise(Step::hang())).await;
    let policy = RetryPolicy::new().with_timeout_ms(1000).with_max_retries(1).with_session_retries(0);
    let (layer, _) = layer(policy);
    let error = create(&client(&server, &layer)).await.unwrap_err();
    let OpenAIError::Boxed(boxed) = error else { panic!("not boxed: {error}") };
    let failure = boxed.downcast_ref::<Failure<OpenAIError>>().expect("the layer's failure");
    assert_eq!(failure.kind(), ExecErrorKind::Exhausted);
    assert!(failure.to_string().contains("timed out after 1 s"), "{failure}");
}

/// The layers' failure inside what async-openai returned.
fn failure_in(error: &OpenAIError) -> &Failure<OpenAIError> {
    let OpenAIError::Boxed(boxed) = error else { panic!("not the layers' failure: {error}") };
    boxed.downcast_ref::<Failure<OpenAIError>>().expect("the layers' failure")
}

/// A 500 whose body stalls after 28 bytes, `timeout_ms` 2 s and `budget_ms` 5 s: `create` and
/// `create_stream` end at the deadline with the layers' failure, whose last error is the `ApiError`
/// async-openai would have made of what the layer read. Before, async-openai read the handed-back
/// body in full: both were still waiting at 60 s.
#[tokio::test(start_paused = true)]
async fn a_stalled_error_body_ends_create_and_create_stream_at_the_deadline() {
    let body = r#"{"error":{"message":"The server had an error while processing your request."}}"#;
    for streamed in [false, true] {
        let server = start(Scenario::new().otherwise(Step::http_error(500).body(body).stall_body_after(28))).await;
        let (layer, _) = layer(RetryPolicy::new().with_timeout_ms(2_000).with_budget_ms(Some(5_000)));
        let client = client(&server, &layer);
        let started = tokio::time::Instant::now();
        let call = async { if streamed { create_stream(&client).await } else { create(&client).await } };
        let error = within_a_minute(call).await.unwrap_err();
        assert_eq!(started.elapsed(), Duration::from_secs(5), "streamed: {streamed}");
        assert_eq!(failure_in(&error).kind(), ExecErrorKind::Refused);
        let Some(OpenAIError::ApiError(response)) = last_openai_error(&error) else { panic!("{error:?}") };
        assert_eq!((response.status_code.as_u16(), response.api_error.message.as_str()), (500, &body[..28]));
        assert_eq!(error.classify().action, ExecAction::FailPermanently, "a retry around it stops too");
    }
}

/// A 200 whose body stalls: `create` (the whole answer) and `create_stream` (its chunks) end at the
/// deadline, with the body's error.
#[tokio::test(start_paused = true)]
async fn a_stalled_answer_ends_create_and_create_stream_at_the_deadline() {
    for streamed in [false, true] {
        let server = start(Scenario::new().otherwise(Step::hang().after_chunks(1).text("The answer is 42."))).await;
        let (layer, _) = layer(RetryPolicy::new().with_budget_ms(Some(5_000)));
        let client = client(&server, &layer);
        let started = tokio::time::Instant::now();
        let call = async { if streamed { create_stream(&client).await } else { create(&client).await } };
        let error = within_a_minute(call).await.unwrap_err();
        assert_eq!(started.elapsed(), Duration::from_secs(5), "streamed: {streamed}: {error}");
        assert_eq!(server.requests_served(), 1);
    }
}

/// Set up as the README shows (the key named with `redacting`): a 401, 429 or 503 whose message
/// echoes the key gives async-openai's caller an error with no piece of it, in Display or Debug,
/// nor in the `ApiError` inside. Before, the `ApiError` carried the whole key.
#[tokio::test(start_paused = true)]
async fn no_piece_of_the_key_is_in_the_error_async_openai_returns() {
    for status in [401, 429, 503] {
        for echo in [EchoKey::Whole, EchoKey::First12, EchoKey::Last12, EchoKey::WithoutPrefix] {
            let server = start(Scenario::new().otherwise(Step::http_error(status).echo_key(echo))).await;
            let (layer, _) = layer(RetryPolicy::new().with_max_retries(1).with_session_retries(0));
            let client = client(&server, &layer.redacting(KEY));
            let error = create(&client).await.unwrap_err();
            let inner = last_openai_error(&error).expect("the ApiError");
            assert_eq!(status_of(inner), Some(status));
            let shown = format!("{error}\n{error:?}\n{inner}\n{inner:?}");
            assert!(shown.contains("<redacted>"), "{shown}");
            assert_no_piece_of_the_key(&format!("{status} {echo:?}"), &shown);
        }
    }
}

fn status_of(error: &OpenAIError) -> Option<u16> {
    match error {
        OpenAIError::ApiError(response) => Some(response.status_code.as_u16()),
        _ => None,
    }
}

/// Two layers nested through async-openai: a `Resilient` around an async-openai client
/// built on our layer makes no more requests than the layer alone, on an error response (the
/// layer hands async-openai its failure, not the response, so the mark reaches the `Resilient`)
/// and on a transport error. Before, async-openai turned the handed-back 503 into an `ApiError`, a
/// transient one, and the `Resilient` multiplied the layer's calls: 12 requests where it sent 4.
#[tokio::test(start_paused = true)]
async fn resilient_around_a_client_on_our_layer_sends_no_more_requests_than_the_layer() {
    let policy = RetryPolicy::new().with_max_retries(2).with_session_retries(1);
    for step in [Step::from(Step::http_error(503)), Step::close_before_headers()] {
        let alone = start(Scenario::new().otherwise(step.clone())).await;
        let _ = create(&client(&alone, &layer(policy).0)).await.unwrap_err();
        assert_eq!(alone.requests_served(), 4, "{step:?}: two attempts of two calls");

        let nested = start(Scenario::new().otherwise(step.clone())).await;
        let client = client(&nested, &layer(policy).0);
        let outer = RetryPolicy::new().with_max_retries(3);
        let failure = Resilient::new("chat", &outer).with_jitter_seed(2).call(|| create(&client)).await.unwrap_err();
        assert_eq!(nested.requests_served(), 4, "{step:?}: the inner layer's calls, once");
        assert_eq!((failure.kind(), failure.calls()), (ExecErrorKind::Permanent, 1), "{failure}");
        let reason = failure.decisions()[0].reason().to_string();
        assert!(reason.starts_with("an inner retry layer gave up (kind `exhausted`)"), "{reason}");
        let last = failure.last_error().expect("async-openai's error");
        assert_eq!(failure_in(last).kind(), ExecErrorKind::Exhausted);
    }
}
