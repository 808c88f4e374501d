//! OpenAI's Responses wire against the chaos server speaking it (`/v1/responses`), on tokio's paused
//! clock: answers with their usage, HTTP errors and their hints, failures inside a 200 stream
//! (`response.failed`, `error` events) classified like the same HTTP error, incomplete and
//! truncated answers, tool calls through the tool loop, and typed answers.

use std::time::Duration;

use agentic_chaos::{ChaosServer, Scenario, Step, TokenUsage, WireFormat};
use agentic_runtime::decision::Verdict;
use agentic_runtime::message::{StopReason, Usage};
use agentic_runtime::provider::ResponsesProvider;
use agentic_runtime::{ExecErrorKind, Runtime, Toolbox};
use serde_json::json;

async fn runtime(scenario: Scenario) -> (ChaosServer, Runtime) {
    let server = ChaosServer::start(scenario).await.unwrap();
    let provider = ResponsesProvider::new(server.base_url(WireFormat::Responses), Some("sk-test-key".to_owned()));
    (server, Runtime::builder(provider.with_model("chaos")).with_jitter_seed(7).build().unwrap())
}

/// Every request reached the Responses route and was journaled as that wire.
fn all_responses(server: &ChaosServer) -> usize {
    let journal = server.journal();
    assert!(journal.iter().all(|entry| entry.wire == Some(WireFormat::Responses)), "{journal:?}");
    assert!(journal.iter().all(|entry| entry.path == "/v1/responses" && entry.auth), "{journal:?}");
    journal.len()
}

#[tokio::test(start_paused = true)]
async fn an_answer_reports_its_usage_with_the_cached_tokens() {
    // 10 reasoning tokens: part of Responses' `output_tokens` (30 + 10), counted once.
    let answer =
        Step::ok("Hello from Responses.").usage(TokenUsage::new(120, 30).with_cache_read(100).with_reasoning(10));
    let (server, runtime) = runtime(Scenario::new().otherwise(answer)).await;
    let reply = runtime.exec("hi").await.unwrap();
    assert_eq!(reply.text(), "Hello from Responses.");
    assert_eq!(reply.stop_reason(), StopReason::Stop);
    assert_eq!(reply.usage(), Some(Usage::new(120, 40).with_cache_read(100)));
    assert_eq!(all_responses(&server), 1);
}

#[tokio::test(start_paused = true)]
async fn transient_http_errors_are_retried_and_permanent_ones_are_not() {
    for status in [429, 500, 502, 503, 504] {
        let scenario = Scenario::new().then(Step::http_error(status)).otherwise(Step::ok("the answer"));
        let (server, runtime) = runtime(scenario).await;
        let reply = runtime.exec("hi").await.unwrap();
        assert_eq!((reply.text(), all_responses(&server)), ("the answer", 2), "{status}");
    }
    for status in [400, 401, 403, 404] {
        let (server, runtime) = runtime(Scenario::new().otherwise(Step::http_error(status))).await;
        let error = runtime.exec("hi").await.unwrap_err();
        assert_eq!((error.kind(), all_responses(&server)), (ExecErrorKind::Permanent, 1), "{status}: {error}");
    }
    let (server, runtime) = runtime(Scenario::new().otherwise(Step::invalid_api_key())).await;
    let error = runtime.exec("hi").await.unwrap_err();
    assert_eq!((error.kind(), all_responses(&server)), (ExecErrorKind::Permanent, 1), "{error}");
    assert_eq!(error.model_error().and_then(|error| error.code()), Some("invalid_api_key"));
}

#[tokio::test(start_paused = true)]
async fn retry_after_and_retry_after_ms_are_waited() {
    for (limited, wait) in [
        (Step::http_error(429).retry_after_secs(3), Duration::from_secs(3)),
        (Step::http_error(429).retry_after_ms(2500), Duration::from_millis(2500)),
    ] {
        let (server, runtime) = runtime(Scenario::new().then(limited).otherwise(Step::ok("the answer"))).await;
        let reply = runtime.exec("hi").await.unwrap();
        assert_eq!((reply.text(), all_responses(&server)), ("the answer", 2));
        let decision = &reply.decisions()[0];
        assert_eq!(decision.verdict(), Verdict::Retry);
        assert!(decision.delay().unwrap() >= wait, "{decision:?}");
    }
}

/// A `response.failed` with `server_error` after two chunks: retried as a 500 would be, and the text
/// streamed before it is never the answer.
#[tokio::test(start_paused = true)]
async fn a_failed_response_mid_stream_is_retried_like_a_500() {
    let failed = Step::sse_error(2).text("partial text that must never be returned");
    let (server, runtime) = runtime(Scenario::new().then(failed).otherwise(Step::ok("the answer"))).await;
    let reply = runtime.exec("hi").await.unwrap();
    assert_eq!((reply.text(), all_responses(&server)), ("the answer", 2));
    let decision = &reply.decisions()[0];
    assert_eq!(decision.verdict(), Verdict::Retry);
    assert!(!decision.error().contains("partial text"), "{decision:?}");
}

#[tokio::test(start_paused = true)]
async fn a_rate_limited_response_waits_the_hint_in_its_message() {
    let limited = Step::sse_error(1)
        .code("rate_limit_exceeded")
        .message("Rate limit reached for gpt-4o on tokens per min. Please try again in 7s.");
    let (server, runtime) = runtime(Scenario::new().then(limited).otherwise(Step::ok("the answer"))).await;
    let reply = runtime.exec("hi").await.unwrap();
    assert_eq!((reply.text(), all_responses(&server)), ("the answer", 2));
    assert!(reply.decisions()[0].delay().unwrap() >= Duration::from_secs(7), "{:?}", reply.decisions());
}

/// An `error` event (`server_is_overloaded`) is retried as the 503 it stands for.
#[tokio::test(start_paused = true)]
async fn an_error_event_is_typed_like_the_same_http_error() {
    let overloaded = Step::sse_error(1).code("server_is_overloaded").message("The server is overloaded.");
    let (server, runtime) = runtime(Scenario::new().then(overloaded).otherwise(Step::ok("the answer"))).await;
    let reply = runtime.exec("hi").await.unwrap();
    assert_eq!((reply.text(), all_responses(&server)), ("the answer", 2));
    let decision = &reply.decisions()[0];
    assert_eq!(decision.verdict(), Verdict::Retry);
    assert!(decision.error().starts_with("ServiceUnavailableError: The server is overloaded."), "{decision:?}");
}

#[tokio::test(start_paused = true)]
async fn a_failed_response_that_no_retry_fixes_is_permanent() {
    for (code, kind) in
        [("invalid_prompt", ExecErrorKind::Permanent), ("context_length_exceeded", ExecErrorKind::ContextOverflow)]
    {
        let (server, runtime) = runtime(Scenario::new().otherwise(Step::sse_error(1).code(code))).await;
        let error = runtime.exec("hi").await.unwrap_err();
        assert_eq!((error.kind(), all_responses(&server)), (kind, 1), "{code}: {error}");
        assert_eq!(error.model_error().and_then(|error| error.code()), Some(code));
    }
}

#[tokio::test(start_paused = true)]
async fn an_answer_cut_at_max_output_tokens_ends_as_length() {
    let cut = Step::ok("a long answer, cut").cut_by_token_limit();
    let (server, runtime) = runtime(Scenario::new().otherwise(cut)).await;
    let reply = runtime.exec("hi").await.unwrap();
    assert_eq!((reply.text(), reply.stop_reason()), ("a long answer, cut", StopReason::Length));
    assert_eq!(all_responses(&server), 1);
}

#[tokio::test(start_paused = true)]
async fn a_stream_that_ends_before_response_completed_is_retried() {
    for fault in [Step::truncate(2).into_step(), Step::drop_stream(2).into_step()] {
        let (server, runtime) = runtime(Scenario::new().then(fault).otherwise(Step::ok("the answer"))).await;
        let reply = runtime.exec("hi").await.unwrap();
        assert_eq!((reply.text(), all_responses(&server)), ("the answer", 2));
    }
}

#[tokio::test(start_paused = true)]
async fn tool_calls_and_their_results_go_through_the_tool_loop() {
    let tools = Toolbox::new().with_fn(
        "get_weather",
        "The weather in a city.",
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        |input| async move { Ok(format!("sunny in {}", input["city"].as_str().unwrap_or("?"))) },
    );
    let scenario = Scenario::new()
        .then(Step::tool_use("get_weather", json!({"city": "Paris"})).text("Let me look."))
        .otherwise(Step::ok("It is sunny in Paris."));
    let (server, runtime) = runtime(scenario).await;
    let reply = runtime.request("weather in Paris?").tools(&tools).send().await.unwrap();
    assert_eq!(reply.text(), "It is sunny in Paris.");
    assert_eq!(all_responses(&server), 2);
    let journal = server.journal();
    assert_eq!(journal[0].tools, ["get_weather"]);
    // The second request carries the user's text, the model's text and call, and the result.
    assert_eq!(journal[1].messages, 4, "{:?}", journal[1]);
}

#[derive(Debug, PartialEq, serde::Deserialize, schemars::JsonSchema)]
struct Invoice {
    currency: String,
    total: f64,
}

/// A typed answer: the schema goes as `text.format` (journaled as the request's schema), broken JSON
/// goes back to the model, and the JSON that parses is the answer.
#[tokio::test(start_paused = true)]
async fn a_typed_answer_asks_for_its_schema_and_parses_the_text() {
    let scenario = Scenario::new()
        .then(Step::ok(r#"{"currency": "EUR", "total": "#))
        .otherwise(Step::ok(r#"{"currency": "EUR", "total": 12.5}"#));
    let (server, runtime) = runtime(scenario).await;
    let invoice: Invoice = runtime.exec_json("Invoice: 12.50 EUR").await.unwrap();
    assert_eq!(invoice, Invoice { currency: "EUR".into(), total: 12.5 });
    assert_eq!(all_responses(&server), 2);
    assert!(server.journal().iter().all(|entry| entry.schema.as_deref() == Some("Invoice")), "{:?}", server.journal());
}
