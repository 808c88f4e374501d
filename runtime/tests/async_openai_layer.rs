//! `tower::RetryLayer` as async-openai's HTTP service (`Client::with_http_service`) against the
//! chaos server: the adapters' shared checks through async-openai's own door (its
//! `HttpRequestFactory`, sent again for each call, and `ReqwestService`), then async-openai's client
//! on top: streamed and whole chat completions through the hints, async-openai reading the error
//! response the layers gave back, and a call cut at its limit boxed in `OpenAIError`.

#[macro_use]
mod adapters_support;

use std::time::Duration;

use adapters_support::{Answer, KEY, Refused, chat_body, chat_url, layer, start};
use agentic_chaos::{ChaosServer, Scenario, Step};
use agentic_runtime::resilient::Failure;
use agentic_runtime::tower::RetryLayer;
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
    let refused = |failure: Failure<OpenAIError>| Refused { kind: Some(failure.kind()), text: failure.to_string() };
    let response = service.oneshot(factory).await.map_err(refused)?;
    let (status, headers) = (response.status().as_u16(), response.headers().clone());
    Ok(Answer { status, headers, body: response.text().await.map_err(Refused::client)? })
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

fn status(error: &OpenAIError) -> Option<u16> {
    match error {
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
        let delay = decisions.lock().unwrap()[0].delay.unwrap();
        assert!(delay >= Duration::from_secs(2) && delay <= Duration::from_millis(2500), "{delay:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn x_should_retry_false_is_one_request_and_async_openai_reads_the_error() {
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
    let policy = RetryPolicy::new().with_timeout_ms(Some(1000)).with_max_retries(1).with_session_retries(0);
    let (layer, _) = layer(policy);
    let error = create(&client(&server, &layer)).await.unwrap_err();
    let OpenAIError::Boxed(boxed) = error else { panic!("not boxed: {error}") };
    let failure = boxed.downcast_ref::<Failure<OpenAIError>>().expect("the layer's failure");
    assert_eq!(failure.kind(), ExecErrorKind::Exhausted);
    assert!(failure.to_string().contains("timed out after 1 s"), "{failure}");
}
