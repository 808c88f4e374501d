//! `tower::RetryLayer` as async-openai's HTTP service (`Client::with_http_service`) against the
//! chaos server: streamed and whole chat completions through the server's hints, refusals, bursts,
//! an outage under the runtime's retry budget and a connection closed before the first byte; and
//! the same decisions as an exec over our OpenAI provider on the same responses.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentic_chaos::{ChaosServer, Scenario, Step};
use agentic_runtime::budget::RetryQuota;
use agentic_runtime::resilient::Failure;
use agentic_runtime::tower::RetryLayer;
use agentic_runtime::{Decision, ExecErrorKind, Layer, OpenAiProvider, RetryPolicy, Runtime, Verdict};
use async_openai::config::OpenAIConfig;
use async_openai::error::OpenAIError;
use async_openai::middleware::ReqwestService;
use async_openai::types::chat::CreateChatCompletionRequest;
use futures_util::StreamExt as _;

const KEY: &str = "sk-test-async-openai";

type Decisions = Arc<Mutex<Vec<Decision>>>;

fn seen(layer: RetryLayer) -> (RetryLayer, Decisions) {
    let decisions = Decisions::default();
    let into = decisions.clone();
    (layer.with_jitter_seed(5).with_observer(move |decision| into.lock().unwrap().push(decision.clone())), decisions)
}

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

async fn start(scenario: Scenario) -> ChaosServer {
    ChaosServer::start(scenario).await.expect("the chaos server starts")
}

fn verdicts(decisions: &[Decision]) -> Vec<(Layer, Verdict)> {
    decisions.iter().map(|decision| (decision.layer, decision.verdict)).collect()
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
        let (layer, decisions) = seen(RetryLayer::default());
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
async fn retry_after_ms_is_the_wait() {
    let server =
        start(Scenario::new().then(Step::http_error(429).retry_after_ms(1500)).otherwise(Step::ok("42"))).await;
    let (layer, decisions) = seen(RetryLayer::default());
    assert_eq!(create_stream(&client(&server, &layer)).await.unwrap(), "42");
    let delay = decisions.lock().unwrap()[0].delay.unwrap();
    assert!(delay >= Duration::from_millis(1500) && delay <= Duration::from_millis(1875), "{delay:?}");
}

#[tokio::test(start_paused = true)]
async fn x_should_retry_false_is_one_request_and_async_openai_reads_the_error() {
    let server = start(
        Scenario::new()
            .then(Step::http_error(503).should_retry(false).message("do not retry"))
            .otherwise(Step::ok("42")),
    )
    .await;
    let (layer, _) = seen(RetryLayer::default());
    let error = create_stream(&client(&server, &layer)).await.unwrap_err();
    assert_eq!(status(&error), Some(503), "{error}");
    assert!(error.to_string().contains("do not retry"), "{error}");
    assert_eq!(server.requests_served(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_burst_of_503s_is_ridden_out_and_a_401_is_one_request() {
    let server =
        start(Scenario::new().then_times(5, Step::http_error(503)).otherwise(Step::ok("after the burst"))).await;
    let (layer, _) = seen(RetryLayer::default());
    assert_eq!(create(&client(&server, &layer)).await.unwrap(), "after the burst");
    assert_eq!(server.requests_served(), 6);

    let server = start(Scenario::new().then(Step::invalid_api_key()).otherwise(Step::ok("42"))).await;
    let error = create(&client(&server, &layer)).await.unwrap_err();
    assert_eq!(status(&error), Some(401));
    assert_eq!(server.requests_served(), 1);
    assert!(!error.to_string().contains(KEY));
}

#[tokio::test(start_paused = true)]
async fn a_connection_closed_before_the_first_byte_is_called_again() {
    let server = start(Scenario::new().then(Step::close_before_headers()).otherwise(Step::ok("42"))).await;
    let (layer, decisions) = seen(RetryLayer::default());
    assert_eq!(create_stream(&client(&server, &layer)).await.unwrap(), "42");
    assert_eq!(verdicts(&decisions.lock().unwrap()), [(Layer::Session, Verdict::Retry)]);
}

#[tokio::test(start_paused = true)]
async fn a_call_cut_at_the_policys_limit_is_a_failure_async_openai_boxes() {
    let server = start(Scenario::new().otherwise(Step::hang())).await;
    let policy = RetryPolicy::new().with_timeout_ms(Some(1000)).with_max_retries(1).with_session_retries(0);
    let (layer, _) = seen(RetryLayer::new(policy).unwrap());
    let error = create(&client(&server, &layer)).await.unwrap_err();
    let OpenAIError::Boxed(boxed) = error else { panic!("not boxed: {error}") };
    let failure = boxed.downcast_ref::<Failure<OpenAIError>>().expect("the layer's failure");
    assert_eq!(failure.kind(), ExecErrorKind::Exhausted);
    assert!(failure.to_string().contains("timed out after 1 s"), "{failure}");
}

#[tokio::test(start_paused = true)]
async fn in_an_outage_async_openai_and_our_provider_spend_one_retry_budget() {
    let server = start(Scenario::new().otherwise(Step::http_error(503))).await;
    let provider = OpenAiProvider::new(server.openai_base_url(), Some(KEY.to_owned())).with_model("test-model");
    let quota = RetryQuota::standard().with_min_retries(2).with_retry_percent(0);
    let runtime = Runtime::new(provider).with_retry_quota(Some(quota)).with_jitter_seed(3);
    let layer = RetryLayer::sharing(&runtime, RetryPolicy::new()).unwrap();
    let error = create(&client(&server, &layer)).await.unwrap_err();
    assert_eq!(status(&error), Some(503));
    assert_eq!(server.requests_served(), 3, "two retries, then the budget refused the third");
    let error = runtime.exec("What is the answer?").await.unwrap_err();
    assert_eq!(error.kind(), ExecErrorKind::Budget);
    assert_eq!(server.requests_served(), 4);
}

#[tokio::test(start_paused = true)]
async fn the_layer_in_async_openai_decides_as_an_exec_over_our_provider() {
    let faults: Vec<(&str, Step)> = vec![
        ("429 Retry-After", Step::http_error(429).retry_after_secs(2).into()),
        ("503 x-should-retry: false", Step::http_error(503).should_retry(false).into()),
        ("503", Step::http_error(503).into()),
        ("401", Step::invalid_api_key().into()),
        ("429 insufficient_quota", Step::http_error(429).code("insufficient_quota").into()),
        ("closed before headers", Step::close_before_headers()),
    ];
    for (name, fault) in faults {
        let scenario = || Scenario::new().then_times(2, fault.clone()).otherwise(Step::ok("42"));
        let server = start(scenario()).await;
        let (layer, decisions) = seen(RetryLayer::default());
        let _ = create_stream(&client(&server, &layer)).await;
        let ours = verdicts(&decisions.lock().unwrap());

        let server = start(scenario()).await;
        let provider = OpenAiProvider::new(server.openai_base_url(), Some(KEY.to_owned())).with_model("test-model");
        let runtime = Runtime::new(provider).with_jitter_seed(1);
        let exec = match runtime.exec("What is the answer?").await {
            Ok(reply) => verdicts(reply.decisions()),
            Err(error) => verdicts(error.decisions()),
        };
        assert!(!ours.is_empty(), "{name}");
        assert_eq!(ours, exec, "{name}");
    }
}
