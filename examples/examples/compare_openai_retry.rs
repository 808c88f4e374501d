//! async-openai's own retry (`OpenAIRetryLayer`, what `Client::with_config` sends through) against
//! `agentic_runtime::tower::RetryLayer` as its HTTP service, on the same faults of the embedded
//! chaos server: the requests each made, the time to the answer (or to giving up) on the wall
//! clock, and what the caller got. Both on their defaults. Run by hand:
//!
//! ```text
//! cargo run --release -p agentic-examples --example compare_openai_retry --features async-openai
//! ```

use std::time::Instant;

use agentic_chaos::{ChaosServer, Scenario, Step};
use agentic_runtime::tower::{RetryLayer, last_openai_error};
use async_openai::config::OpenAIConfig;
use async_openai::error::OpenAIError;
use async_openai::middleware::ReqwestService;
use async_openai::types::chat::CreateChatCompletionRequest;
use futures_util::StreamExt as _;

/// A streamed chat completion's outcome, in a few words.
async fn call(client: &async_openai::Client<OpenAIConfig>) -> String {
    let request: CreateChatCompletionRequest = serde_json::from_value(serde_json::json!({
        "model": "test-model",
        "messages": [{"role": "user", "content": "What is the answer?"}],
    }))
    .expect("a chat request");
    let outcome = async {
        let mut chunks = client.chat().create_stream(request).await?;
        let mut text = String::new();
        while let Some(chunk) = chunks.next().await {
            for choice in chunk?.choices {
                text.push_str(choice.delta.content.as_deref().unwrap_or_default());
            }
        }
        Ok::<_, OpenAIError>(text)
    };
    match outcome.await {
        Ok(text) if text == "42" => "answered".to_owned(),
        Ok(text) => format!("answered {text:?}"),
        // Our layer hands its failure back (`Boxed`), holding the `ApiError` async-openai would make.
        Err(error) => match last_openai_error(&error) {
            Some(OpenAIError::ApiError(error)) => format!("error {}", error.status_code.as_u16()),
            _ => format!("error: {}", error.to_string().lines().next().unwrap_or_default()),
        },
    }
}

/// One client's run against a fresh server playing `scenario`: requests, seconds, outcome.
async fn run(scenario: Scenario, ours: bool) -> (usize, f64, String) {
    let server = ChaosServer::start(scenario).await.expect("the chaos server starts");
    let config = OpenAIConfig::new().with_api_base(server.openai_base_url()).with_api_key("sk-compare");
    let client = async_openai::Client::with_config(config);
    let client = if ours {
        client.with_http_service(RetryLayer::default().around(ReqwestService::new(reqwest::Client::new())))
    } else {
        client
    };
    let started = Instant::now();
    let outcome = call(&client).await;
    (server.requests_served(), started.elapsed().as_secs_f64(), outcome)
}

#[tokio::main]
async fn main() {
    let answer = || Step::ok("42");
    let faults: Vec<(&str, Scenario)> = vec![
        (
            "429 Retry-After: 1, twice",
            Scenario::new().then_times(2, Step::http_error(429).retry_after_secs(1)).otherwise(answer()),
        ),
        (
            "429 retry-after-ms: 300, twice",
            Scenario::new().then_times(2, Step::http_error(429).retry_after_ms(300)).otherwise(answer()),
        ),
        (
            "503 x-should-retry: false",
            Scenario::new().then(Step::http_error(503).should_retry(false)).otherwise(answer()),
        ),
        ("503 x 2", Scenario::new().then_times(2, Step::http_error(503)).otherwise(answer())),
        ("503 x 5", Scenario::new().then_times(5, Step::http_error(503)).otherwise(answer())),
        ("401", Scenario::new().then(Step::invalid_api_key()).otherwise(answer())),
        (
            "429 insufficient_quota",
            Scenario::new().then(Step::http_error(429).code("insufficient_quota")).otherwise(answer()),
        ),
        ("closed before headers", Scenario::new().then(Step::close_before_headers()).otherwise(answer())),
    ];
    println!("| fault | OpenAIRetryLayer: requests, time, outcome | RetryLayer: requests, time, outcome |");
    println!("|---|---|---|");
    for (name, scenario) in faults {
        let (theirs_requests, theirs_time, theirs) = run(scenario.clone(), false).await;
        let (ours_requests, ours_time, ours) = run(scenario, true).await;
        println!(
            "| {name} | {theirs_requests}, {theirs_time:.2} s, {theirs} | {ours_requests}, {ours_time:.2} s, {ours} |"
        );
    }
}
