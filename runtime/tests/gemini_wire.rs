//! `GeminiProvider` against the chaos server speaking Gemini (`/v1beta/models/{model}:streamGenerateContent`),
//! on tokio's paused clock: answers with usage, each transient and permanent error with its request
//! count, the server's hints (headers and `RetryInfo`), failures inside a 200 stream, a stream without
//! its finish reason, tool calls through the tool loop, a typed answer and a safety block.

use std::time::Duration;

use agentic_chaos::{ChaosServer, Scenario, Step, TokenUsage, WireFormat};
use agentic_runtime::decision::Verdict;
use agentic_runtime::message::Usage;
use agentic_runtime::provider::GeminiProvider;
use agentic_runtime::{ExecErrorKind, Runtime, Toolbox};
use serde_json::json;

const KEY: &str = "AIza-chaos-SECRET-7f3a";

async fn runtime(scenario: Scenario) -> (ChaosServer, Runtime) {
    let server = ChaosServer::start(scenario).await.unwrap();
    let provider =
        GeminiProvider::new(server.base_url(WireFormat::Gemini), Some(KEY.to_owned())).with_model("gemini-test");
    (server, Runtime::builder(provider).with_jitter_seed(7).build().unwrap())
}

/// Google's 429 body: a per-minute (or daily) `QuotaFailure` and a `RetryInfo`.
fn quota_body(quota_id: &str, retry_delay: &str) -> String {
    json!({"error": {"code": 429, "message": "Resource has been exhausted (e.g. check quota).", "status": "RESOURCE_EXHAUSTED",
        "details": [
            {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{"quotaId": quota_id}]},
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": retry_delay},
        ]}})
    .to_string()
}

#[tokio::test(start_paused = true)]
async fn an_answer_reports_its_usage_with_the_cached_and_thinking_tokens() {
    let usage = TokenUsage::new(120, 7).with_cache_read(100).with_reasoning(40);
    let (server, runtime) = runtime(Scenario::new().otherwise(Step::ok("the answer").usage(usage))).await;
    let reply = runtime.exec("hi").await.unwrap();
    assert_eq!(reply.text(), "the answer");
    // Thinking is billed as output: candidates plus thoughts.
    assert_eq!(reply.total_usage(), Usage::new(120, 47).with_cache_read(100));
    let journal = server.journal();
    assert_eq!(journal.len(), 1);
    let entry = &journal[0];
    assert_eq!(
        (entry.wire, entry.stream, entry.model.as_deref()),
        (Some(WireFormat::Gemini), Some(true), Some("gemini-test"))
    );
    assert!(entry.auth, "the key went in x-goog-api-key");
    assert!(!entry.path.contains(KEY) && !entry.path.contains("key="), "{}", entry.path);
}

#[tokio::test(start_paused = true)]
async fn retry_info_is_the_servers_hint() {
    let limited = Step::http_error(429).body(quota_body("GenerateRequestsPerMinutePerProjectPerModel-FreeTier", "34s"));
    let (server, runtime) = runtime(Scenario::new().then(limited).otherwise(Step::ok("the answer"))).await;
    let reply = runtime.exec("hi").await.unwrap();
    assert_eq!((reply.text(), server.journal().len()), ("the answer", 2));
    let decision = &reply.decisions()[0];
    assert_eq!(decision.verdict(), Verdict::Retry);
    assert!(decision.delay().unwrap() >= Duration::from_secs(34), "{decision:?}");
    assert!(decision.error().contains("(RESOURCE_EXHAUSTED)"), "{}", decision.error());
}

#[tokio::test(start_paused = true)]
async fn the_transient_statuses_are_retried_with_googles_own_bodies() {
    for (status, name) in
        [(429, "RESOURCE_EXHAUSTED"), (503, "UNAVAILABLE"), (500, "INTERNAL"), (504, "DEADLINE_EXCEEDED")]
    {
        let (server, runtime) =
            runtime(Scenario::new().then(Step::http_error(status)).otherwise(Step::ok("the answer"))).await;
        let reply = runtime.exec("hi").await.unwrap();
        assert_eq!((reply.text(), server.journal().len()), ("the answer", 2), "{status}");
        let decision = &reply.decisions()[0];
        assert_eq!(decision.verdict(), Verdict::Retry, "{status}");
        assert!(
            decision.error().contains(&format!("{status} ")) && decision.error().contains(name),
            "{}",
            decision.error()
        );
    }
}

#[tokio::test(start_paused = true)]
async fn retry_after_and_retry_after_ms_headers_are_floors_on_this_wire_too() {
    for (step, floor) in [
        (Step::http_error(503).retry_after_secs(3), Duration::from_secs(3)),
        (Step::http_error(429).retry_after_ms(1_500), Duration::from_millis(1_500)),
    ] {
        let (server, runtime) = runtime(Scenario::new().then(step).otherwise(Step::ok("the answer"))).await;
        let reply = runtime.exec("hi").await.unwrap();
        assert_eq!(server.journal().len(), 2);
        assert!(reply.decisions()[0].delay().unwrap() >= floor, "{:?}", reply.decisions());
    }
}

#[tokio::test(start_paused = true)]
async fn the_permanent_errors_stop_at_the_first_request() {
    let daily = Step::http_error(429).body(quota_body("GenerateRequestsPerDayPerProjectPerModel-FreeTier", "20s"));
    for (step, expected) in [
        (Step::http_error(400), "INVALID_ARGUMENT"),
        (Step::http_error(403), "PERMISSION_DENIED"),
        (Step::http_error(401), "UNAUTHENTICATED"),
        (Step::invalid_api_key(), "API key not valid"),
        (daily, "daily_quota_exhausted"),
    ] {
        let (server, runtime) = runtime(Scenario::new().otherwise(step)).await;
        let error = runtime.exec("hi").await.unwrap_err();
        assert_eq!((error.kind(), server.journal().len()), (ExecErrorKind::Permanent, 1), "{expected}: {error}");
        assert!(error.attempt_errors()[0].contains(expected), "{expected}: {error}");
        assert!(!format!("{error} {error:?}").contains("SECRET"), "{error}");
    }
}

/// An error object in a `data:` line of a 200: typed like the same error with its status, and the
/// text streamed before it is never the answer.
#[tokio::test(start_paused = true)]
async fn an_error_inside_the_stream_is_retried_and_its_text_dropped() {
    let fail = Step::sse_error(2).text("never the answer");
    let (server, runtime) = runtime(Scenario::new().then(fail).otherwise(Step::ok("the answer"))).await;
    let reply = runtime.exec("hi").await.unwrap();
    assert_eq!((reply.text(), server.journal().len()), ("the answer", 2));
    let decision = &reply.decisions()[0];
    // `UNAVAILABLE`, typed as the 503 the API answers the same failure with.
    assert_eq!(decision.error(), "ServiceUnavailableError: The model is overloaded. Please try again later.");
    assert_eq!(decision.verdict(), Verdict::Retry);
}

/// Gemini has no end marker: a body that ends before the chunk with `finishReason` was cut.
#[tokio::test(start_paused = true)]
async fn a_stream_without_its_finish_reason_is_retried() {
    let (server, runtime) = runtime(Scenario::new().then(Step::truncate(2)).otherwise(Step::ok("the answer"))).await;
    let reply = runtime.exec("hi").await.unwrap();
    assert_eq!((reply.text(), server.journal().len()), ("the answer", 2));
    let decision = &reply.decisions()[0];
    assert!(decision.error().contains("stream ended") || decision.error().contains("truncated"), "{decision:?}");
}

#[tokio::test(start_paused = true)]
async fn a_safety_block_is_permanent_at_once() {
    let blocked = Step::malformed_chunk(1).data(r#"{"candidates":[{"finishReason":"SAFETY","index":0}]}"#);
    let (server, runtime) = runtime(Scenario::new().otherwise(blocked)).await;
    let error = runtime.exec("hi").await.unwrap_err();
    assert_eq!((error.kind(), server.journal().len()), (ExecErrorKind::Permanent, 1), "{error}");
    assert!(error.attempt_errors()[0].contains("ContentBlockedError"), "{error}");
}

#[tokio::test(start_paused = true)]
async fn tool_calls_and_their_results_go_round_the_loop() {
    let tools = Toolbox::new().with_fn(
        "get_weather",
        "The weather in a city.",
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        |input| async move { Ok(format!("sunny in {}", input["city"].as_str().unwrap_or("?"))) },
    );
    let scenario = Scenario::new()
        .then(Step::tool_use("get_weather", json!({"city": "Paris"})).text("Let me look."))
        .otherwise(Step::ok("It is sunny in Paris."));
    let server = ChaosServer::start(scenario).await.unwrap();
    let provider = GeminiProvider::new(server.base_url(WireFormat::Gemini), None).with_model("gemini-test");
    let reply = Runtime::builder(provider).with_tools(tools).build().unwrap().exec("Weather in Paris?").await.unwrap();
    assert_eq!((reply.text(), reply.iterations()), ("It is sunny in Paris.", 1));
    let journal = server.journal();
    assert_eq!(journal.len(), 2);
    assert_eq!(journal[0].tools, ["get_weather"]);
    assert_eq!(journal[1].messages, 3, "the prompt, the call, the result");
}

/// Gemini 3 gives each function call an `id`: the next request sends it back with the call and
/// with the `functionResponse` that answers it (before, the call went back without it and the
/// response was matched by name alone); a call without one goes back as before, without.
#[tokio::test(start_paused = true)]
async fn gemini_3s_call_ids_go_back_with_the_call_and_its_response() {
    use crate::providers_support::{Reply, Server};
    let tools = Toolbox::new()
        .with_fn("get_weather", "The weather.", json!({"type": "object"}), |_| async move { Ok("sunny".to_owned()) });
    let call = |id: Option<&str>| {
        let mut call = json!({"name": "get_weather", "args": {"city": "Paris"}});
        if let Some(id) = id {
            call["id"] = json!(id);
        }
        let chunk = json!({"candidates": [{"content": {"role": "model", "parts": [{"functionCall": call}]}, "finishReason": "STOP"}]});
        Reply::sse([format!("data: {chunk}\r\n\r\n")])
    };
    let answer =
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Sunny."}]}, "finishReason": "STOP"}]});
    let answer = || Reply::sse([format!("data: {answer}\r\n\r\n")]);
    for (id, sent) in [(Some("8kw3f0zq"), Some("8kw3f0zq")), (None, None)] {
        let server = Server::start([call(id), answer()]).await;
        let provider = GeminiProvider::new(format!("{}/v1beta", server.url()), None).with_model("gemini-3-pro-preview");
        let reply = Runtime::builder(provider)
            .with_tools(tools.clone())
            .build()
            .unwrap()
            .exec("Weather in Paris?")
            .await
            .unwrap();
        assert_eq!(reply.text(), "Sunny.");
        let requests = server.requests();
        let contents = &requests[1].body["contents"];
        let call = &contents[1]["parts"][0]["functionCall"];
        let response = &contents[2]["parts"][0]["functionResponse"];
        assert_eq!((call["name"].as_str(), response["name"].as_str()), (Some("get_weather"), Some("get_weather")));
        assert_eq!((call["id"].as_str(), response["id"].as_str()), (sent, sent), "{contents}");
    }
}

#[derive(Debug, PartialEq, serde::Deserialize, schemars::JsonSchema)]
struct Invoice {
    currency: String,
    total: f64,
}

#[tokio::test(start_paused = true)]
async fn a_typed_answer_asks_for_the_schema_and_parses() {
    let (server, runtime) = runtime(Scenario::new().otherwise(Step::ok(r#"{"currency": "EUR", "total": 12.5}"#))).await;
    let invoice: Invoice = runtime.exec_json("Invoice: 12.50 EUR").await.unwrap();
    assert_eq!(invoice, Invoice { currency: "EUR".into(), total: 12.5 });
    assert_eq!(server.journal()[0].schema.as_deref(), Some("Invoice"));
}

/// The chaos server's context window counts Gemini's `contents` (texts, `functionCall.args`,
/// `functionResponse.response`): three pages do not fit, the compacted conversation does.
#[tokio::test(start_paused = true)]
async fn a_conversation_too_large_for_the_window_is_compacted_and_fits() {
    use agentic_runtime::compact::DropOldest;
    let pages = Toolbox::new().with_fn("read", "Reads a page", json!({"type": "object"}), |input| async move {
        let head = format!("page {}: ", input["n"]);
        Ok(format!("{head}{}", "x".repeat(1_000 - head.len())))
    });
    let mut scenario = Scenario::new().with_context_window(2_500);
    for n in 1..=3 {
        scenario = scenario.then(Step::tool_use("read", json!({"n": n})));
    }
    let server = ChaosServer::start(scenario.then(Step::ok("The pages say x."))).await.unwrap();
    let provider = GeminiProvider::new(server.base_url(WireFormat::Gemini), None).with_model("gemini-test");
    let runtime = Runtime::builder(provider).with_tools(pages).with_compactor(DropOldest::keeping(2)).build().unwrap();
    let reply = runtime.exec("Read the pages.").await.unwrap();
    assert_eq!(reply.text(), "The pages say x.");
    let journal = server.journal();
    assert_eq!(journal.len(), 5);
    assert!(journal[3].over_window && journal[3].context_bytes > 2_500, "{:?}", journal[3]);
    assert_eq!(journal[3].messages, 7, "the prompt and three turns");
    assert!(!journal[4].over_window && journal[4].messages == 5, "{:?}", journal[4]);
    let compaction = reply.decisions().iter().find(|decision| decision.verdict() == Verdict::Compacted).unwrap();
    assert_eq!(compaction.reason(), "context overflow: compacted 7 → 5 messages by `drop_oldest`");
}
