//! `AnthropicProvider` against a raw-TCP server: every event type, every failure kind typed and
//! classified, and the key never shown.

use crate::providers_support;

use std::time::Duration;

use agentic_runtime::classify::{ExecAction, exec_verdict, is_retryable_error};
use agentic_runtime::message::{AssistantMessage, ContentBlock, StopReason, Usage};
use agentic_runtime::provider::TransportKind;
use agentic_runtime::provider::{AnthropicProvider, Provider, ResponseSchema, StreamEvent};
use agentic_runtime::{RetryPolicy, Runtime};
use providers_support::{CANARY, Reply, Server, assert_no_canary, call, events, model_of, schema_call};
use serde_json::{Value, json};

fn provider(server: &Server) -> AnthropicProvider {
    AnthropicProvider::new(server.url(), Some(CANARY.to_owned())).with_model("claude-test")
}

/// One SSE event, named as the API names it (the `type` in the data says the same).
fn event(data: Value) -> String {
    format!("event: {}\ndata: {data}\n\n", data["type"].as_str().unwrap())
}

fn message_start() -> String {
    event(
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "claude-test", "stop_reason": null, "usage": {"input_tokens": 10, "output_tokens": 1}}}),
    )
}

fn text_delta(index: u32, text: &str) -> String {
    event(json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}}))
}

fn json_delta(index: u32, partial: &str) -> String {
    event(
        json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": partial}}),
    )
}

fn block_start(index: u32, block: Value) -> String {
    event(json!({"type": "content_block_start", "index": index, "content_block": block}))
}

fn block_stop(index: u32) -> String {
    event(json!({"type": "content_block_stop", "index": index}))
}

fn message_delta(stop_reason: &str) -> String {
    event(
        json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null}, "usage": {"output_tokens": 15}}),
    )
}

fn message_stop() -> String {
    event(json!({"type": "message_stop"}))
}

fn ping() -> String {
    event(json!({"type": "ping"}))
}

fn text_stream(texts: &[&str], stop_reason: &str) -> String {
    let mut stream = message_start() + &block_start(0, json!({"type": "text", "text": ""})) + &ping();
    for text in texts {
        stream.push_str(&text_delta(0, text));
    }
    stream + &block_stop(0) + &message_delta(stop_reason) + &message_stop()
}

fn error_event(kind: &str, message: &str) -> String {
    event(json!({"type": "error", "error": {"type": kind, "message": message}}))
}

fn verdicts(message: &AssistantMessage) -> (bool, ExecAction) {
    (is_retryable_error(message).retryable, exec_verdict(message.error_text(), message.error.as_ref()).action)
}

fn transport_kind(message: &AssistantMessage) -> Option<TransportKind> {
    message.error.as_ref().and_then(|error| error.transport_kind())
}

#[tokio::test]
async fn streams_text_split_byte_by_byte_with_crlf_and_sends_the_request() {
    let stream =
        format!(": hello\n\n{}", text_stream(&["Hel", "lo, w\u{e9}", "rld."], "end_turn")).replace('\n', "\r\n");
    let server = Server::start([Reply::sse_bytewise(&stream)]).await;
    let message = call(&provider(&server).with_max_tokens(50).with_temperature(1.0), None).await;
    // `message_start`'s input tokens, `message_delta`'s output tokens.
    let mut expected = AssistantMessage::text("Hello, w\u{e9}rld.");
    expected.usage = Some(Usage::new(10, 15));
    assert_eq!(message, expected);

    let [request] = server.requests().try_into().unwrap();
    assert_eq!((request.method.as_str(), request.path.as_str()), ("POST", "/v1/messages"));
    assert_eq!(request.header("x-api-key"), Some(CANARY));
    assert_eq!(request.header("authorization"), None);
    assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(request.header("content-type"), Some("application/json"));
    assert_eq!(request.header("x-agentic-call"), Some("3"));
    assert_eq!(
        request.body,
        json!({
            "model": "claude-test",
            "max_tokens": 50,
            "stream": true,
            "temperature": 1.0,
            "system": "Answer briefly.",
            "messages": [{"role": "user", "content": [{"type": "text", "text": "What is the answer?"}]}],
        })
    );
}

#[tokio::test]
async fn stop_reasons_map_and_a_missing_key_sends_no_header() {
    let server = Server::start([
        Reply::sse([text_stream(&["cut"], "max_tokens")]),
        Reply::sse([text_stream(&["ok"], "stop_sequence")]),
    ])
    .await;
    let keyless = AnthropicProvider::new(format!("{}/", server.url()), None);
    let message = call(&keyless, None).await;
    assert_eq!((message.text_content().as_str(), message.stop_reason), ("cut", StopReason::Length));
    assert_eq!(call(&keyless, None).await.stop_reason, StopReason::Stop);
    assert_eq!(server.requests()[0].header("x-api-key"), None);
}

#[tokio::test]
async fn tool_use_blocks_and_input_json_deltas() {
    let stream = [
        message_start(),
        block_start(0, json!({"type": "text", "text": ""})),
        text_delta(0, "Let me check both."),
        block_stop(0),
        block_start(1, json!({"type": "tool_use", "id": "toolu_a", "name": "weather", "input": {}})),
        json_delta(1, ""),
        json_delta(1, "{\"city\": "),
        ping(),
        json_delta(1, "\"Paris\"}"),
        block_stop(1),
        block_start(2, json!({"type": "tool_use", "id": "toolu_b", "name": "clock", "input": {}})),
        block_stop(2),
        block_start(3, json!({"type": "thinking", "thinking": ""})),
        event(
            json!({"type": "content_block_delta", "index": 3, "delta": {"type": "thinking_delta", "thinking": "hmm"}}),
        ),
        block_stop(3),
        event(json!({"type": "some_future_event", "x": 1})),
        message_delta("tool_use"),
        message_stop(),
    ]
    .concat();
    let server = Server::start([Reply::sse_bytewise(&stream)]).await;
    let message = call(&provider(&server), None).await;
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    assert_eq!(
        message.content,
        [
            ContentBlock::text("Let me check both."),
            ContentBlock::ToolUse { id: "toolu_a".into(), name: "weather".into(), input: json!({"city": "Paris"}) },
            ContentBlock::ToolUse { id: "toolu_b".into(), name: "clock".into(), input: json!({}) },
        ]
    );
}

#[tokio::test]
async fn error_events_keep_their_text_as_sent_and_are_typed() {
    let server = Server::start([
        Reply::sse([message_start(), text_delta(0, "partial"), error_event("overloaded_error", "Overloaded")]),
        Reply::sse([message_start(), error_event("overloaded_error", "")]),
        Reply::sse([error_event("api_error", "Internal server error")]),
        Reply::sse([error_event("invalid_request_error", "prompt is too long: 250000 tokens > 200000 maximum")]),
        Reply::sse(["event: error\ndata: {\"error\": {\"type\": \"weird_new_error\", \"message\": \"hm\"}}\n\n"]),
    ])
    .await;
    let provider = provider(&server);

    let message = call(&provider, None).await;
    assert_eq!(message.error_message.as_deref(), Some("Overloaded"));
    assert_eq!(message.text_content(), "partial");
    let typed = message.error.as_ref().unwrap();
    assert_eq!((typed.kind(), typed.code(), typed.status()), ("OverloadedError", Some("overloaded_error"), Some(529)));
    assert_eq!(verdicts(&message), (true, ExecAction::Retry));

    let message = call(&provider, None).await;
    assert_eq!(message.error_message.as_deref(), Some(""));
    assert_eq!(verdicts(&message), (true, ExecAction::Retry));

    let message = call(&provider, None).await;
    assert_eq!(message.error.as_ref().unwrap().status(), Some(500));
    assert_eq!(verdicts(&message), (true, ExecAction::Retry));

    let message = call(&provider, None).await;
    assert_eq!(verdicts(&message), (false, ExecAction::ContextOverflow));

    // No `type` in the data: the SSE event name stands in; an unknown type keeps its name as the kind.
    let message = call(&provider, None).await;
    let typed = message.error.as_ref().unwrap();
    assert_eq!((message.error_text(), typed.kind(), typed.code()), ("hm", "WeirdNewError", Some("weird_new_error")));
}

#[tokio::test]
async fn a_stream_without_message_stop_is_truncated_or_dropped() {
    let unfinished = [message_start(), text_delta(0, "almost"), message_delta("end_turn")].concat();
    let server = Server::start([
        Reply::sse([unfinished.clone()]),
        Reply::sse_dropped([unfinished.clone()]),
        Reply::sse_until_close([unfinished, "event: message_stop\ndata: {\"type\": \"message_stop\"}\n".to_owned()]),
    ])
    .await;
    let provider = provider(&server);

    let message = call(&provider, None).await;
    assert_eq!(message.error_text(), "IncompleteStreamError: stream ended unexpectedly, before its final event");
    assert_eq!(verdicts(&message), (true, ExecAction::Retry));

    let message = call(&provider, None).await;
    assert_eq!(transport_kind(&message), Some(TransportKind::StreamDropped));
    assert_eq!(verdicts(&message), (true, ExecAction::Retry));

    let message = call(&provider, None).await;
    assert_eq!(transport_kind(&message), Some(TransportKind::Truncated));
}

#[tokio::test]
async fn a_malformed_event_is_a_corrupted_stream() {
    let server = Server::start([
        Reply::sse([
            message_start(),
            "event: content_block_delta\ndata: {\"type\": \"content_block_delta\", \"index\": 0, \"delta\": {\n\n"
                .to_owned(),
        ]),
        Reply::sse([event(
            json!({"type": "content_block_delta", "index": "zero", "delta": {"type": "text_delta", "text": "x"}}),
        )]),
    ])
    .await;
    let provider = provider(&server);
    for _ in 0..2 {
        let message = call(&provider, None).await;
        assert_eq!(transport_kind(&message), Some(TransportKind::Corrupted), "{}", message.error_text());
        assert!(
            message.error_text().starts_with("MalformedStreamError: malformed chunk: "),
            "{}",
            message.error_text()
        );
        assert_eq!(verdicts(&message), (true, ExecAction::Retry));
    }
}

#[tokio::test]
async fn http_errors_with_anthropic_bodies_and_hints() {
    let body = |kind: &str, message: &str| {
        json!({"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_1"}).to_string()
    };
    let server = Server::start([
        Reply::status(529, &[("x-should-retry", "true"), ("retry-after", "3")], body("overloaded_error", "Overloaded")),
        Reply::status(401, &[("x-should-retry", "false")], body("authentication_error", "invalid x-api-key")),
        Reply::status(400, &[], body("invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum")),
        Reply::status(
            429,
            &[("retry-after", "40")],
            body("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"),
        ),
        Reply::status(
            400,
            &[],
            body("invalid_request_error", "Your credit balance is too low to access the Anthropic API."),
        ),
    ])
    .await;
    let provider = provider(&server);

    let message = call(&provider, None).await;
    let error = message.error.as_ref().unwrap();
    assert_eq!(message.error_text(), "OverloadedError: 529 Overloaded (overloaded_error)");
    assert_eq!((error.status(), error.code(), error.should_retry()), (Some(529), Some("overloaded_error"), Some(true)));
    assert_eq!(error.retry_after(), Some(Duration::from_secs(3)));
    assert_eq!(verdicts(&message), (true, ExecAction::Retry));

    let message = call(&provider, None).await;
    assert_eq!(message.error_text(), "AuthenticationError: 401 invalid x-api-key (authentication_error)");
    assert_eq!(verdicts(&message), (false, ExecAction::FailPermanently));

    let message = call(&provider, None).await;
    assert_eq!(verdicts(&message), (false, ExecAction::ContextOverflow));

    let message = call(&provider, None).await;
    assert_eq!(message.error.as_ref().unwrap().retry_after(), Some(Duration::from_secs(40)));
    assert_eq!(verdicts(&message), (true, ExecAction::Retry));

    let message = call(&provider, None).await;
    assert_eq!(verdicts(&message), (false, ExecAction::FailPermanently));
}

#[tokio::test]
async fn transport_failures_are_typed() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let refused = AnthropicProvider::new(format!("http://127.0.0.1:{port}"), Some(CANARY.to_owned()));
    let message = call(&refused, None).await;
    assert_eq!(transport_kind(&message), Some(TransportKind::Connect));
    assert_eq!(verdicts(&message), (true, ExecAction::Retry));

    let server = Server::start([
        Reply::close(),
        Reply::hang(),
        Reply::sse_stalled([message_start(), text_delta(0, "slow")]),
        Reply::status(500, &[], "x".repeat(100 * 1024)),
    ])
    .await;
    let provider = provider(&server);
    let message = call(&provider, None).await;
    assert_eq!(transport_kind(&message), Some(TransportKind::Reset));
    for _ in 0..2 {
        let message = call(&provider, Some(Duration::from_millis(50))).await;
        assert_eq!(transport_kind(&message), Some(TransportKind::Timeout), "{}", message.error_text());
        assert_eq!(verdicts(&message), (true, ExecAction::Retry));
    }
    let message = call(&provider, None).await;
    assert!(message.error_text().ends_with(" (error body cut at 16 KiB)"));
    assert_eq!(
        message.error_text().len(),
        "InternalServerError: 500 ".len() + 16 * 1024 + " (error body cut at 16 KiB)".len()
    );
}

#[tokio::test]
async fn the_key_never_appears_through_any_failure() {
    let echo = json!({"type": "error", "error": {"type": "authentication_error", "message": format!("invalid x-api-key {CANARY}")}});
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let refused = AnthropicProvider::new(format!("http://127.0.0.1:{port}"), Some(CANARY.to_owned()));
    assert_no_canary(&call(&refused, None).await);

    let server = Server::start([
        Reply::status(401, &[], echo.to_string()),
        Reply::status(529, &[], format!("overloaded {CANARY}")),
        Reply::sse([event(echo.clone())]),
        Reply::sse([format!("event: error\ndata: {{\"oops\": \"{CANARY}\n\n")]),
        Reply::close(),
        Reply::sse_dropped([message_start(), text_delta(0, CANARY)]),
        Reply::sse([message_start(), text_delta(0, CANARY)]),
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
    assert!(!debug.contains("SECRET123") && debug.contains("<redacted>"), "{debug}");
}

#[tokio::test]
async fn exec_survives_an_overloaded_event_and_a_529() {
    let server = Server::start([
        Reply::sse([message_start(), error_event("overloaded_error", "Overloaded")]),
        Reply::status(
            529,
            &[],
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}).to_string(),
        ),
        Reply::sse([text_stream(&["fine"], "end_turn")]),
    ])
    .await;
    let policy = RetryPolicy::new().with_session_base_delay_ms(1).with_exec_base_delay_ms(1).with_timeout_ms(5_000);
    let reply = Runtime::builder(provider(&server)).with_policy(policy).build().unwrap().exec("hi").await.unwrap();
    assert_eq!((reply.text(), reply.calls()), ("fine", 3));
}

#[tokio::test]
async fn a_whole_json_message_is_understood() {
    let json_type = [("content-type", "application/json")];
    let whole = json!({"id": "msg_1", "type": "message", "role": "assistant", "stop_reason": "tool_use", "content": [
        {"type": "text", "text": "Sure."}, {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": [1, 2]}}]});
    let error = json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
    let server = Server::start([
        Reply::status(200, &json_type, whole.to_string()),
        Reply::status(200, &json_type, error.to_string()),
    ])
    .await;
    let provider = provider(&server);
    let message = call(&provider, None).await;
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    assert_eq!(
        message.content,
        [
            ContentBlock::text("Sure."),
            ContentBlock::ToolUse { id: "toolu_1".into(), name: "f".into(), input: json!({"a": [1, 2]}) }
        ]
    );
    let message = call(&provider, None).await;
    assert_eq!(message.error_text(), "Overloaded");
    assert_eq!(verdicts(&message), (true, ExecAction::Retry));
}

/// A `message_start` naming `model`, with `usage`.
fn message_start_with(model: &str, usage: Value) -> String {
    event(json!({"type": "message_start", "message": {"id": "msg_2", "type": "message", "role": "assistant",
        "content": [], "model": model, "stop_reason": null, "usage": usage}}))
}

#[tokio::test]
async fn usage_with_cache_counts_merges_message_start_and_message_delta() {
    let start = json!({"input_tokens": 20, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 2000, "output_tokens": 1});
    // The API's newer `message_delta` repeats the cumulative counts; a `null` count keeps the one before.
    let delta = json!({"output_tokens": 42, "input_tokens": 21, "cache_read_input_tokens": null, "cache_creation_input_tokens": 30});
    let stream = [
        message_start_with("claude-test-20250101", start),
        block_start(0, json!({"type": "text", "text": ""})),
        text_delta(0, "cached"),
        block_stop(0),
        event(json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": delta})),
        message_stop(),
    ]
    .concat();
    let server = Server::start([Reply::sse_bytewise(&stream), Reply::sse([stream.clone()])]).await;
    let provider = provider(&server);
    let message = call(&provider, None).await;
    assert_eq!(message.text_content(), "cached");
    assert_eq!(message.usage, Some(Usage::new(21, 42).with_cache_read(2000).with_cache_creation(30)));

    let events = events(&provider).await;
    assert_eq!(model_of(&events), Some("claude-test-20250101"));
    let last_usage = events.iter().rposition(|event| matches!(event, Ok(StreamEvent::Usage(_)))).unwrap();
    assert_eq!(events[last_usage + 1..], [Ok(StreamEvent::Done { stop_reason: StopReason::Stop })]);
}

#[tokio::test]
async fn no_usage_is_none_and_odd_usage_never_fails_the_call() {
    let bare = event(json!({"type": "message_start", "message": {"id": "msg_3", "content": []}}));
    let odd = message_start_with("claude-test", json!("lots"));
    let finish = text_delta(0, "fine")
        + &event(
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": "2"}}),
        )
        + &message_stop();
    let server = Server::start([Reply::sse([bare + &finish]), Reply::sse([odd + &finish])]).await;
    let provider = provider(&server);
    for _ in 0..2 {
        let message = call(&provider, None).await;
        assert_eq!((message.text_content().as_str(), message.usage, message.is_error()), ("fine", None, false));
    }
}

#[tokio::test]
async fn the_input_tokens_of_a_call_that_fails_mid_stream_are_kept() {
    let server = Server::start([
        Reply::sse_dropped([message_start(), text_delta(0, "par")]),
        Reply::sse([message_start(), text_delta(0, "partial"), error_event("overloaded_error", "Overloaded")]),
    ])
    .await;
    let provider = provider(&server);
    let dropped = call(&provider, None).await;
    assert_eq!(transport_kind(&dropped), Some(TransportKind::StreamDropped));
    assert_eq!(dropped.usage, Some(Usage::new(10, 1)));
    let overloaded = call(&provider, None).await;
    assert_eq!((overloaded.error_text(), overloaded.usage), ("Overloaded", Some(Usage::new(10, 1))));
}

#[test]
fn the_provider_names_its_model_and_server_for_traces() {
    let provider = AnthropicProvider::new("https://proxy.example/", None).with_model("claude-x");
    assert_eq!(
        (Provider::model(&provider), Provider::server(&provider)),
        (Some("claude-x"), Some(("proxy.example", 443)))
    );
    let local = AnthropicProvider::new("http://[::1]:9000", None);
    assert_eq!(
        (Provider::model(&local), Provider::server(&local)),
        (Some(AnthropicProvider::DEFAULT_MODEL), Some(("::1", 9000)))
    );
}

// Paused time: the backoff before the retry passes at once.
#[tokio::test(start_paused = true)]
async fn the_chaos_servers_usage_is_read_offline_failed_calls_included() {
    use agentic_chaos::{ChaosServer, Scenario, Step, TokenUsage};
    let scenario = Scenario::new()
        .then(Step::drop_stream(1))
        .then(Step::ok("The answer is 42.").usage(TokenUsage::default().with_cache_read(300).with_cache_creation(20)));
    let server = ChaosServer::start(scenario).await.unwrap();
    let policy = RetryPolicy::new().with_session_base_delay_ms(1).with_exec_base_delay_ms(1);
    let runtime = Runtime::builder(AnthropicProvider::new(server.anthropic_base_url(), None))
        .with_policy(policy)
        .build()
        .unwrap();
    let reply = runtime.exec("What is the answer?").await.unwrap();
    // The chaos server's rule: the prompt's 4 words in, the answer's 4 chunks out; the dropped call
    // reported its `message_start` (4 in, 1 out) before it broke.
    let answer = Usage::new(4, 4).with_cache_read(300).with_cache_creation(20);
    assert_eq!((reply.text(), reply.calls(), reply.usage()), ("The answer is 42.", 2, Some(answer)));
    assert_eq!(reply.failed_usage(), Usage::new(4, 1));
    assert_eq!(reply.total_usage(), answer + Usage::new(4, 1));
}

fn invoice_schema() -> ResponseSchema {
    ResponseSchema::new(
        "Invoice",
        json!({"type": "object", "properties": {"total": {"type": "number"}}, "required": ["total"]}),
    )
}

/// A forced-tool answer: the answer tool's block with `pieces` as its `input_json_delta`s.
fn answer_stream(tool: &str, pieces: &[&str], stop_reason: &str) -> String {
    let mut stream = message_start()
        + &block_start(0, json!({"type": "tool_use", "id": "toolu_x", "name": tool, "input": {}}))
        + &ping()
        + &json_delta(0, "");
    for piece in pieces {
        stream.push_str(&json_delta(0, piece));
    }
    stream + &block_stop(0) + &message_delta(stop_reason) + &message_stop()
}

#[tokio::test]
async fn a_schema_forces_its_tool_and_the_tools_input_is_the_answers_text() {
    let schema = invoice_schema();
    let server = Server::start([
        Reply::sse_bytewise(&answer_stream("Invoice", &["{\"total\": ", "42.5}"], "tool_use")),
        Reply::sse([answer_stream("Invoice", &["{\"total\": 4"], "max_tokens")]),
        Reply::sse([text_stream(&["plain"], "end_turn")]),
    ])
    .await;
    let message = schema_call(&provider(&server), &schema).await;
    let mut expected = AssistantMessage::text("{\"total\": 42.5}");
    expected.usage = Some(Usage::new(10, 15));
    assert_eq!(message, expected);

    // A cut answer stays a length stop: the core sees the JSON was cut.
    let cut = schema_call(&provider(&server), &schema).await;
    assert_eq!((cut.text_content().as_str(), cut.stop_reason), ("{\"total\": 4", StopReason::Length));

    // Without a schema: no forced tool, no `tool_choice`.
    call(&provider(&server), None).await;
    let requests = server.requests();
    assert_eq!(
        requests[0].body["tools"],
        json!([{
            "name": "Invoice",
            "description": "Answer with this tool: its input is the answer.",
            "input_schema": schema.schema,
        }])
    );
    assert_eq!(requests[0].body["tool_choice"], json!({"type": "tool", "name": "Invoice"}));
    assert!(requests[2].body.get("tools").is_none() && requests[2].body.get("tool_choice").is_none());
}

#[tokio::test]
async fn other_tools_stay_tool_calls_next_to_the_answer_tool() {
    // Only the forced tool's block is text; another tool's block is a tool call as ever.
    let stream = [
        message_start(),
        block_start(0, json!({"type": "tool_use", "id": "toolu_a", "name": "weather", "input": {}})),
        json_delta(0, "{\"city\": \"Paris\"}"),
        block_stop(0),
        block_start(1, json!({"type": "tool_use", "id": "toolu_b", "name": "Invoice", "input": {}})),
        json_delta(1, "{\"total\": 1}"),
        block_stop(1),
        message_delta("tool_use"),
        message_stop(),
    ]
    .concat();
    let server = Server::start([Reply::sse([stream])]).await;
    let message = schema_call(&provider(&server), &invoice_schema()).await;
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    assert_eq!(
        message.content,
        [
            ContentBlock::text("{\"total\": 1}"),
            ContentBlock::ToolUse { id: "toolu_a".into(), name: "weather".into(), input: json!({"city": "Paris"}) },
        ]
    );
}

#[tokio::test]
async fn a_whole_answer_of_the_forced_tool_is_text_too() {
    let body = json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
        "content": [{"type": "tool_use", "id": "toolu_x", "name": "Invoice", "input": {"total": 3}}],
        "stop_reason": "tool_use", "usage": {"input_tokens": 2, "output_tokens": 1}});
    let server = Server::start([Reply::status(200, &[("content-type", "application/json")], body.to_string())]).await;
    let message = schema_call(&provider(&server), &invoice_schema()).await;
    assert_eq!((message.text_content().as_str(), message.stop_reason), ("{\"total\":3}", StopReason::Stop));
}
