//! `OpenAiProvider` against a raw-TCP server: the wire format, every failure kind typed and
//! classified, and the key never shown.

use crate::providers_support;

use std::time::{Duration, SystemTime};

use agentic_runtime::classify::{ExecAction, exec_verdict, is_retryable_error};
use agentic_runtime::message::{AssistantMessage, ContentBlock, StopReason, Usage};
use agentic_runtime::provider::TransportKind;
use agentic_runtime::provider::{OpenAiProvider, Provider, ResponseSchema, StreamEvent};
use agentic_runtime::{RetryPolicy, Runtime};
use providers_support::{CANARY, Reply, Server, assert_no_canary, call, events, model_of, schema_call};
use serde_json::json;

fn provider(server: &Server) -> OpenAiProvider {
    OpenAiProvider::new(format!("{}/v1/", server.url()), Some(CANARY.to_owned())).with_model("test-model")
}

fn chunk(delta: serde_json::Value, finish: Option<&str>) -> String {
    let chunk = json!({"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    format!("data: {chunk}\n\n")
}

fn text_stream(texts: &[&str]) -> String {
    let mut stream = chunk(json!({"role": "assistant", "content": ""}), None);
    for text in texts {
        stream.push_str(&chunk(json!({"content": text}), None));
    }
    stream.push_str(&chunk(json!({}), Some("stop")));
    stream.push_str("data: [DONE]\n\n");
    stream
}

/// The error's typed facts and both layers' verdicts.
fn verdicts(message: &AssistantMessage) -> (bool, ExecAction) {
    (is_retryable_error(message).retryable, exec_verdict(message.error_text(), message.error.as_ref()).action)
}

fn transport_kind(message: &AssistantMessage) -> Option<TransportKind> {
    message.error.as_ref().and_then(|error| error.transport_kind())
}

#[tokio::test]
async fn streams_text_split_byte_by_byte_with_crlf_and_comments_and_sends_the_request() {
    let stream =
        format!(": keep-alive\n\n{}", text_stream(&["The answer", " is ", "42 \u{1f600}."])).replace('\n', "\r\n");
    let server = Server::start([Reply::sse_bytewise(&stream)]).await;
    let message = call(&provider(&server).with_max_tokens(100).with_temperature(0.0), None).await;
    assert_eq!(message, AssistantMessage::text("The answer is 42 \u{1f600}."));

    let [request] = server.requests().try_into().unwrap();
    assert_eq!((request.method.as_str(), request.path.as_str()), ("POST", "/v1/chat/completions"));
    assert_eq!(request.header("authorization"), Some(format!("Bearer {CANARY}").as_str()));
    assert_eq!(request.header("x-agentic-call"), Some("3"));
    assert_eq!(request.header("content-type"), Some("application/json"));
    assert_eq!(
        request.body,
        json!({
            "model": "test-model",
            "stream": true,
            "stream_options": {"include_usage": true},
            "max_tokens": 100,
            "temperature": 0.0,
            "messages": [
                {"role": "system", "content": "Answer briefly."},
                {"role": "user", "content": "What is the answer?"},
            ],
        })
    );
}

#[tokio::test]
async fn no_key_no_authorization_header() {
    let server = Server::start([Reply::sse([text_stream(&["ok"])])]).await;
    let provider = OpenAiProvider::new(server.url(), None);
    assert_eq!(call(&provider, None).await.text_content(), "ok");
    assert_eq!(server.requests()[0].header("authorization"), None);
    assert_eq!(server.requests()[0].path, "/chat/completions");
}

#[tokio::test]
async fn multi_line_data_and_cr_line_endings() {
    let stream = "data: {\"choices\":[{\"index\":0,\r\ndata: \"delta\":{\"content\":\"two lines\"}}]}\r\r\
                  data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\r\rdata: [DONE]\r\r";
    let server = Server::start([Reply::sse(stream.as_bytes().chunks(7))]).await;
    let message = call(&provider(&server), None).await;
    assert_eq!((message.text_content().as_str(), message.stop_reason), ("two lines", StopReason::Length));
}

#[tokio::test]
async fn tool_call_deltas_become_tool_use_blocks() {
    let call_start = |index: u32, id: &str, name: &str| json!({"tool_calls": [{"index": index, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]});
    let arguments = |index: u32, text: &str| json!({"tool_calls": [{"index": index, "function": {"arguments": text}}]});
    let stream = [
        chunk(json!({"role": "assistant", "content": "Checking."}), None),
        chunk(call_start(0, "call_w", "weather"), None),
        chunk(arguments(0, "{\"city\""), None),
        chunk(arguments(0, ": \"Paris\"}"), None),
        chunk(call_start(1, "call_t", "time"), None),
        chunk(arguments(1, "{\"tz\": \"CET\"}"), None),
        chunk(call_start(2, "call_x", "broken"), None),
        chunk(arguments(2, "{\"unterminated"), None),
        chunk(json!({}), Some("tool_calls")),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    let server = Server::start([Reply::sse_bytewise(&stream)]).await;
    let message = call(&provider(&server), None).await;
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    assert_eq!(
        message.content,
        [
            ContentBlock::text("Checking."),
            ContentBlock::ToolUse { id: "call_w".into(), name: "weather".into(), input: json!({"city": "Paris"}) },
            ContentBlock::ToolUse { id: "call_t".into(), name: "time".into(), input: json!({"tz": "CET"}) },
            ContentBlock::ToolUse { id: "call_x".into(), name: "broken".into(), input: json!("{\"unterminated") },
        ]
    );
}

#[tokio::test]
async fn a_finish_reason_without_done_completes_and_neither_is_truncated() {
    let finished = [chunk(json!({"content": "done"}), None), chunk(json!({}), Some("stop"))].concat();
    let unfinished = chunk(json!({"content": "half"}), None);
    let server = Server::start([
        Reply::sse_until_close([finished.clone()]),
        Reply::sse_dropped([finished]),
        Reply::sse([unfinished.clone()]),
        Reply::sse_until_close([unfinished.clone(), "data: [DO".to_owned()]),
        Reply::sse_until_close([unfinished, "data: [DONE]\n".to_owned()]),
    ])
    .await;
    let provider = provider(&server);
    for _ in 0..2 {
        let message = call(&provider, None).await;
        assert_eq!((message.text_content().as_str(), message.stop_reason), ("done", StopReason::Stop));
    }

    let truncated = call(&provider, None).await;
    assert_eq!(truncated.error_text(), "IncompleteStreamError: stream ended unexpectedly, before its final event");
    assert_eq!(transport_kind(&truncated), Some(TransportKind::Truncated));
    assert_eq!(verdicts(&truncated), (true, ExecAction::Retry));

    // An event cut before its blank line is discarded, as the SSE standard says, even `[DONE]`.
    for _ in 0..2 {
        let cut = call(&provider, None).await;
        assert_eq!(transport_kind(&cut), Some(TransportKind::Truncated));
        assert!(cut.error_text().contains("in the middle of an event"), "{}", cut.error_text());
    }
}

#[tokio::test]
async fn an_error_object_in_the_stream_is_an_error_event_with_typed_facts() {
    let error = json!({"error": {"message": "The server had an error while processing your request.", "type": "server_error", "code": null}});
    let quota = json!({"error": {"message": "", "type": "insufficient_quota", "code": "insufficient_quota"}});
    let vllm =
        json!({"error": {"object": "error", "message": "prompt too long", "type": "BadRequestError", "code": 400}});
    let server = Server::start([
        Reply::sse([chunk(json!({"content": "partial"}), None), format!("data: {error}\n\n")]),
        Reply::sse([format!("event: error\ndata: {quota}\n\n")]),
        Reply::sse([format!("data: {vllm}\n\n")]),
    ])
    .await;
    let provider = provider(&server);

    let message = call(&provider, None).await;
    assert_eq!(message.error_message.as_deref(), Some("The server had an error while processing your request."));
    assert_eq!(message.text_content(), "partial");
    let typed = message.error.as_ref().unwrap();
    assert_eq!((typed.kind(), typed.code(), typed.status()), ("InternalServerError", Some("server_error"), Some(500)));
    assert_eq!(verdicts(&message), (true, ExecAction::Retry));

    let message = call(&provider, None).await;
    assert_eq!(message.error_message.as_deref(), Some(""));
    assert_eq!(message.error.as_ref().unwrap().code(), Some("insufficient_quota"));
    assert_eq!(verdicts(&message), (false, ExecAction::FailPermanently));

    let message = call(&provider, None).await;
    let typed = message.error.as_ref().unwrap();
    assert_eq!((typed.kind(), typed.status(), message.error_text()), ("BadRequestError", Some(400), "prompt too long"));
    assert_eq!(verdicts(&message), (false, ExecAction::FailPermanently));
}

#[tokio::test]
async fn a_malformed_chunk_is_a_corrupted_stream_never_a_panic() {
    let server = Server::start([
        Reply::sse([chunk(json!({"content": "a"}), None), "data: {\"choices\": [{\"delta\": \n\n".to_owned()]),
        Reply::sse(["data: {\"choices\": \"not a list\"}\n\n"]),
    ])
    .await;
    let provider = provider(&server);
    for _ in 0..2 {
        let message = call(&provider, None).await;
        assert_eq!(transport_kind(&message), Some(TransportKind::Corrupted));
        assert!(
            message.error_text().starts_with("MalformedStreamError: malformed chunk: "),
            "{}",
            message.error_text()
        );
        assert_eq!(verdicts(&message), (true, ExecAction::Retry));
    }
}

#[tokio::test]
async fn http_errors_keep_status_code_and_every_retry_hint() {
    let rate_limited = json!({"error": {"message": "Rate limit reached for requests", "type": "requests", "param": null, "code": "rate_limit_exceeded"}});
    let later = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(30));
    let server = Server::start([
        Reply::status(
            429,
            &[("retry-after-ms", "1250"), ("retry-after", "9"), ("content-type", "application/json")],
            rate_limited.to_string(),
        ),
        Reply::status(503, &[("retry-after", &later)], "upstream unavailable"),
        Reply::status(500, &[("retry-after", "2"), ("x-should-retry", "false")], ""),
        Reply::status(409, &[("x-should-retry", "true")], "{\"error\": \"lock held\"}"),
    ])
    .await;
    let provider = provider(&server);

    let message = call(&provider, None).await;
    let error = message.error.as_ref().unwrap();
    assert_eq!(message.error_text(), "RateLimitError: 429 Rate limit reached for requests (rate_limit_exceeded)");
    assert_eq!((error.status(), error.code()), (Some(429), Some("rate_limit_exceeded")));
    assert_eq!(error.retry_after(), Some(Duration::from_millis(1250)));
    assert_eq!(verdicts(&message), (true, ExecAction::Retry));

    let message = call(&provider, None).await;
    let error = message.error.as_ref().unwrap();
    assert_eq!(message.error_text(), "ServiceUnavailableError: 503 upstream unavailable");
    let wait = error.retry_after().unwrap();
    assert!(wait > Duration::from_secs(27) && wait <= Duration::from_secs(30), "{wait:?}");

    let message = call(&provider, None).await;
    let error = message.error.as_ref().unwrap();
    assert_eq!(message.error_text(), "InternalServerError: 500 status code (no body)");
    assert_eq!((error.retry_after(), error.should_retry()), (Some(Duration::from_secs(2)), Some(false)));
    assert_eq!(verdicts(&message), (false, ExecAction::FailPermanently));

    let message = call(&provider, None).await;
    assert_eq!(message.error_text(), "ConflictError: 409 lock held");
    assert_eq!(message.error.as_ref().unwrap().should_retry(), Some(true));
    assert_eq!(verdicts(&message), (true, ExecAction::Retry));
}

#[tokio::test]
async fn permanent_http_errors_and_context_overflow() {
    let bad_key = json!({"error": {"message": format!("Incorrect API key provided: {CANARY}."), "type": "invalid_request_error", "param": null, "code": "invalid_api_key"}});
    let overflow = json!({"error": {"message": "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.", "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}});
    let server = Server::start([
        Reply::status(401, &[], bad_key.to_string()),
        Reply::status(400, &[], overflow.to_string()),
        Reply::status(400, &[], ""),
    ])
    .await;
    let provider = provider(&server);

    let message = call(&provider, None).await;
    assert_eq!(
        message.error_text(),
        "AuthenticationError: 401 Incorrect API key provided: <redacted>. (invalid_api_key)"
    );
    assert_eq!(verdicts(&message), (false, ExecAction::FailPermanently));
    assert_no_canary(&message);

    let message = call(&provider, None).await;
    assert_eq!(message.error.as_ref().unwrap().code(), Some("context_length_exceeded"));
    assert_eq!(verdicts(&message), (false, ExecAction::ContextOverflow));

    // A bodiless 400 reads as the SDKs' "400 status code (no body)": context overflow on some servers.
    let message = call(&provider, None).await;
    assert_eq!(message.error_text(), "BadRequestError: 400 status code (no body)");
    assert_eq!(verdicts(&message), (false, ExecAction::ContextOverflow));
}

#[tokio::test]
async fn an_oversized_error_body_is_cut_and_says_so() {
    let huge = format!("{CANARY} {}", "x".repeat(200 * 1024));
    let server = Server::start([Reply::status(502, &[], huge)]).await;
    let message = call(&provider(&server), None).await;
    let text = message.error_text();
    assert!(text.starts_with("BadGatewayError: 502 <redacted> xxx"), "{}", &text[..60]);
    assert!(text.ends_with("x (error body cut at 16 KiB)"), "{}", &text[text.len() - 60..]);
    assert!(text.len() < 17 * 1024, "{}", text.len());
    assert_eq!(verdicts(&message), (true, ExecAction::Retry));
    assert_no_canary(&message);
}

#[tokio::test]
async fn transport_failures_are_typed() {
    // Connection refused: a port that was just free.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let refused = OpenAiProvider::new(format!("http://127.0.0.1:{port}/v1"), Some(CANARY.to_owned()));
    let message = call(&refused, None).await;
    assert_eq!(transport_kind(&message), Some(TransportKind::Connect));
    assert!(message.error_text().starts_with("ConnectionError: connection error: "), "{}", message.error_text());
    assert!(!message.error_text().contains("127.0.0.1"), "no URL in texts: {}", message.error_text());
    assert_eq!(verdicts(&message), (true, ExecAction::Retry));
    assert_no_canary(&message);

    let server = Server::start([
        Reply::close(),
        Reply::sse_dropped([chunk(json!({"content": "par"}), None), chunk(json!({"content": "tial"}), None)]),
        Reply::hang(),
        Reply::sse_stalled([chunk(json!({"content": "slow"}), None)]),
    ])
    .await;
    let provider = provider(&server);

    let message = call(&provider, None).await;
    assert_eq!(transport_kind(&message), Some(TransportKind::Reset));
    assert!(message.error_text().contains("reset before headers"), "{}", message.error_text());
    assert_eq!(verdicts(&message), (true, ExecAction::Retry));

    let message = call(&provider, None).await;
    assert_eq!(transport_kind(&message), Some(TransportKind::StreamDropped));
    assert!(
        message.error_text().starts_with("StreamDroppedError: stream ended unexpectedly"),
        "{}",
        message.error_text()
    );
    assert_eq!(verdicts(&message), (true, ExecAction::Retry));

    for _ in 0..2 {
        let message = call(&provider, Some(Duration::from_millis(50))).await;
        assert_eq!(transport_kind(&message), Some(TransportKind::Timeout), "{}", message.error_text());
        assert!(
            message.error_text().starts_with("TimeoutError: model call timed out after 0.05 s"),
            "{}",
            message.error_text()
        );
        assert_eq!(verdicts(&message), (true, ExecAction::Retry));
        assert_no_canary(&message);
    }
}

#[tokio::test]
async fn the_key_never_appears_through_any_failure() {
    let echo = format!(
        "{{\"error\": {{\"message\": \"key {CANARY} rejected\", \"type\": \"{CANARY}\", \"code\": \"{CANARY}\"}}}}"
    );
    let server = Server::start([
        Reply::status(401, &[], &echo),
        Reply::status(429, &[], &echo),
        Reply::status(500, &[], format!("<html>{CANARY}</html>")),
        Reply::sse([format!("data: {echo}\n\n")]),
        Reply::sse([format!("data: {{\"broken\": \"{CANARY}\n\n")]),
        Reply::close(),
        Reply::sse_dropped([chunk(json!({"content": CANARY}), None)]),
        Reply::hang(),
    ])
    .await;
    let provider = provider(&server);
    for round in 0..8 {
        let message = call(&provider, Some(Duration::from_millis(50))).await;
        assert!(message.is_error(), "round {round}: {message:?}");
        assert_no_canary(&message);
    }
    let debug = format!("{provider:?}");
    assert!(!debug.contains("SECRET123") && debug.contains("api_key: Some(<redacted>)"), "{debug}");
}

#[tokio::test]
async fn exec_retries_over_the_wire_with_the_call_number_in_each_request() {
    let server = Server::start([
        Reply::status(
            503,
            &[("retry-after-ms", "1")],
            "{\"error\": {\"message\": \"overloaded\", \"type\": \"server_error\"}}",
        ),
        Reply::sse_dropped([chunk(json!({"content": "lost"}), None)]),
        Reply::sse([text_stream(&["The answer is 42."])]),
    ])
    .await;
    let policy = RetryPolicy::new().with_session_base_delay_ms(1).with_exec_base_delay_ms(1).with_timeout_ms(5_000);
    let runtime = Runtime::builder(provider(&server)).with_policy(policy).build().unwrap();
    let reply = runtime.exec("What is the answer?").await.unwrap();
    assert_eq!((reply.text(), reply.calls()), ("The answer is 42.", 3));
    let calls: Vec<_> =
        server.requests().iter().map(|request| request.header("x-agentic-call").unwrap().to_owned()).collect();
    assert_eq!(calls, ["1", "2", "3"]);
    // Every request carried the same prompt: the failed answers were not left in the history.
    assert!(server.requests().iter().all(|request| request.body["messages"].as_array().unwrap().len() == 1));
}

#[tokio::test]
async fn a_server_that_ignores_stream_true_is_understood() {
    let json_type = [("content-type", "application/json; charset=utf-8")];
    let completion = json!({"id": "c", "object": "chat.completion", "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": "Looking.", "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{\"a\": 1}"}}]}}]});
    let error = json!({"error": {"message": "busy", "type": "server_error", "code": null}});
    let server = Server::start([
        Reply::status(200, &json_type, completion.to_string()),
        Reply::status(200, &json_type, error.to_string()),
        Reply::status(200, &json_type, "{\"choices\": "),
    ])
    .await;
    let provider = provider(&server);
    let message = call(&provider, None).await;
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    assert_eq!(
        message.content,
        [
            ContentBlock::text("Looking."),
            ContentBlock::ToolUse { id: "call_1".into(), name: "f".into(), input: json!({"a": 1}) }
        ]
    );
    let message = call(&provider, None).await;
    assert_eq!((message.error_text(), message.error.as_ref().unwrap().status()), ("busy", Some(500)));
    let message = call(&provider, None).await;
    assert_eq!(transport_kind(&message), Some(TransportKind::Corrupted));
}

/// The last chunk a server sends with `stream_options.include_usage`: no choices, the usage.
fn usage_chunk(usage: serde_json::Value) -> String {
    let chunk = json!({"id": "c1", "object": "chat.completion.chunk", "model": "test-model-2024", "choices": [], "usage": usage});
    format!("data: {chunk}\n\n")
}

#[tokio::test]
async fn the_usage_chunk_after_the_finish_reason_is_read_with_its_cached_tokens() {
    let usage = json!({"prompt_tokens": 120, "completion_tokens": 40, "total_tokens": 160,
        "prompt_tokens_details": {"cached_tokens": 100, "audio_tokens": 0}, "completion_tokens_details": {"reasoning_tokens": 0}});
    let answer = || {
        let mut stream = text_stream(&["The answer is 42."]);
        stream.insert_str(stream.len() - "data: [DONE]\n\n".len(), &usage_chunk(usage.clone()));
        stream
    };
    let uncached = json!({"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10});
    let server = Server::start([
        Reply::sse_bytewise(&answer()),
        Reply::sse([answer()]),
        // No `[DONE]`: the body ends after the usage chunk.
        Reply::sse_until_close([text_stream(&["ok"]).replace("data: [DONE]\n\n", ""), usage_chunk(uncached)]),
    ])
    .await;
    let provider = provider(&server);

    let message = call(&provider, None).await;
    assert_eq!((message.text_content().as_str(), message.stop_reason), ("The answer is 42.", StopReason::Stop));
    assert_eq!(message.usage, Some(Usage::new(120, 40).with_cache_read(100)));
    assert!(server.requests()[0].body["stream_options"]["include_usage"].as_bool().unwrap());

    let events = events(&provider).await;
    assert_eq!(model_of(&events), Some("test-model-2024"), "the model the server named, not the one asked for");
    let usage_at = events.iter().position(|event| matches!(event, Ok(StreamEvent::Usage(_)))).unwrap();
    assert_eq!(events[usage_at + 1..], [Ok(StreamEvent::Done { stop_reason: StopReason::Stop })]);

    assert_eq!(call(&provider, None).await.usage, Some(Usage::new(7, 3)));
}

#[tokio::test]
async fn a_server_that_sends_no_usage_reports_none_and_odd_usage_never_fails_the_call() {
    let odd = [
        chunk(json!({"content": "fine"}), None).replace("\"id\"", "\"usage\":null,\"id\""),
        chunk(json!({}), Some("stop")),
        usage_chunk(json!("many")),
        usage_chunk(json!({"prompt_tokens": "seven", "completion_tokens": -1})),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    let server = Server::start([Reply::sse([text_stream(&["plain"])]), Reply::sse([odd])]).await;
    let provider = provider(&server);
    let message = call(&provider, None).await;
    assert_eq!((message.text_content().as_str(), message.usage), ("plain", None));
    let message = call(&provider, None).await;
    assert_eq!((message.text_content().as_str(), message.usage, message.is_error()), ("fine", None, false));
}

#[tokio::test]
async fn usage_sent_before_a_failure_is_kept_on_the_failed_message() {
    // vLLM's `continuous_usage_stats`: every chunk carries the usage so far.
    let mut with_usage: serde_json::Value =
        serde_json::from_str(chunk(json!({"content": "par"}), None).trim_start_matches("data: ").trim()).unwrap();
    with_usage["usage"] = json!({"prompt_tokens": 9, "completion_tokens": 1, "total_tokens": 10});
    let server = Server::start([Reply::sse_dropped([format!("data: {with_usage}\n\n")])]).await;
    // Through `agent::run`, as every call is made.
    let message = call(&provider(&server), None).await;
    assert_eq!(transport_kind(&message), Some(TransportKind::StreamDropped));
    assert_eq!(message.usage, Some(Usage::new(9, 1)));
}

#[test]
fn the_provider_names_its_model_and_server_for_traces() {
    let provider = OpenAiProvider::new("http://127.0.0.1:8080/v1/", None).with_model("llama3");
    assert_eq!((Provider::model(&provider), Provider::server(&provider)), (Some("llama3"), Some(("127.0.0.1", 8080))));
    let default = OpenAiProvider::new(OpenAiProvider::DEFAULT_BASE_URL, Some(CANARY.to_owned()));
    assert_eq!(
        (Provider::model(&default), Provider::server(&default)),
        (Some(OpenAiProvider::DEFAULT_MODEL), Some(("api.openai.com", 443)))
    );
    assert_eq!(Provider::server(&OpenAiProvider::new("not a url", None)), None);
}

#[tokio::test]
async fn the_chaos_servers_usage_is_read_offline() {
    use agentic_chaos::{ChaosServer, Scenario, Step, TokenUsage};
    let scenario = Scenario::new()
        .then(Step::ok("The answer is 42."))
        .then(Step::ok("Cached.").usage(TokenUsage::new(1200, 2).with_cache_read(1024)));
    let server = ChaosServer::start(scenario).await.unwrap();
    let runtime = Runtime::new(OpenAiProvider::new(server.openai_base_url(), None).with_model("gpt-chaos"));
    // The chaos server's rule: the prompt's 4 words in, the answer's 4 chunks out.
    let reply = runtime.exec("What is the answer?").await.unwrap();
    assert_eq!((reply.text(), reply.usage()), ("The answer is 42.", Some(Usage::new(4, 4))));
    let reply = runtime.exec("Again?").await.unwrap();
    assert_eq!(reply.usage(), Some(Usage::new(1200, 2).with_cache_read(1024)));
}

fn invoice_schema() -> ResponseSchema {
    ResponseSchema::new(
        "Invoice",
        json!({"type": "object", "properties": {"total": {"type": "number"}}, "required": ["total"],
            "additionalProperties": false}),
    )
}

#[tokio::test]
async fn a_schema_asks_for_strict_structured_outputs() {
    let schema = invoice_schema();
    let server =
        Server::start([Reply::sse([text_stream(&["{\"total\":", " 42.5}"])]), Reply::sse([text_stream(&["plain"])])])
            .await;
    let message = schema_call(&provider(&server), &schema).await;
    assert_eq!(message, AssistantMessage::text("{\"total\": 42.5}"));
    call(&provider(&server), None).await;
    let requests = server.requests();
    assert_eq!(
        requests[0].body["response_format"],
        json!({"type": "json_schema", "json_schema": {"name": "Invoice", "schema": schema.schema, "strict": true}})
    );
    assert!(requests[1].body.get("response_format").is_none());
}

#[tokio::test]
async fn a_server_that_refuses_the_schema_is_asked_again_in_json_mode_within_the_call() {
    let refusal = json!({"error": {"message": "Invalid schema for response_format 'Invoice': In context=(), \
        'additionalProperties' is required to be supplied and to be false.", "type": "invalid_request_error",
        "param": "response_format", "code": null}});
    let server = Server::start([
        Reply::status(400, &[("content-type", "application/json")], refusal.to_string()),
        Reply::sse([text_stream(&["{\"total\": 7}"])]),
    ])
    .await;
    let message = schema_call(&provider(&server), &invoice_schema()).await;
    assert_eq!(message, AssistantMessage::text("{\"total\": 7}"));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].body["response_format"]["type"], "json_schema");
    assert_eq!(requests[1].body["response_format"], json!({"type": "json_object"}));
    assert_eq!(requests[1].header("x-agentic-call"), requests[0].header("x-agentic-call"));
    // JSON mode needs the word JSON in the messages and knows no schema: a system message says both.
    let (first, second) =
        (requests[0].body["messages"].as_array().unwrap(), requests[1].body["messages"].as_array().unwrap());
    assert_eq!(second[1..], first[..]);
    assert_eq!(second[0]["role"], "system");
    let instruction = second[0]["content"].as_str().unwrap();
    assert!(instruction.starts_with("Answer with JSON only, following this JSON schema: {"), "{instruction}");
}

#[tokio::test]
async fn other_refusals_and_calls_without_a_schema_are_never_sent_twice() {
    let refusal = json!({"error": {"message": "response_format is not supported", "type": "invalid_request_error"}});
    let other = json!({"error": {"message": "messages is too long", "type": "invalid_request_error"}});
    let server = Server::start([
        // No schema: a 400 naming `response_format` is an error like any other.
        Reply::status(400, &[], refusal.to_string()),
        // A schema, and a 400 about something else: not retried either.
        Reply::status(400, &[], other.to_string()),
        // A schema refused twice: the second refusal is the call's error.
        Reply::status(400, &[], refusal.to_string()),
        Reply::status(400, &[], refusal.to_string()),
    ])
    .await;
    let plain = call(&provider(&server), None).await;
    assert_eq!(plain.error.as_ref().and_then(|error| error.status()), Some(400));
    let schema = invoice_schema();
    let message = schema_call(&provider(&server), &schema).await;
    assert!(message.error_text().contains("messages is too long"), "{}", message.error_text());
    let twice = schema_call(&provider(&server), &schema).await;
    assert!(twice.error_text().contains("response_format is not supported"), "{}", twice.error_text());
    assert_eq!(server.requests().len(), 4);
}
