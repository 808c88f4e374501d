//! What counts as an answer (docs/design.md §3), on every wire (`wires::all`) against the chaos server, on tokio's
//! paused clock: a 2xx that is not an answer is a classified error that says what came back, never
//! an empty success; a bare JSON error line in an event stream is the error it says; and on a wire
//! that sends heartbeats, a stream that started and then went silent ends at the idle bound.

use agentic_runtime::exec::RuntimeBuilder;
use std::time::Duration;

use agentic_chaos::{ChaosServer, NotAnAnswer, Scenario, Step};
use agentic_runtime::message::Message;
use agentic_runtime::message::{ContentBlock, StopReason};
use agentic_runtime::policy::Jitter;
use agentic_runtime::provider::Request;
use agentic_runtime::{ExecError, ExecErrorKind, Reply, RetryPolicy, exec};
use agentic_test_support::wires::{self, Wire, named};

/// The canary key: it must never appear in any error or text.
const CANARY: &str = "sk-canary-SECRET123";

/// The default counts (3 session retries in each of 3 exec attempts: 12 calls), exact delays.
const POLICY: RetryPolicy = RetryPolicy::new().with_jitter(Jitter::None);

/// What a wire's `NotAnAnswerError` says its whole answer is, where the test knows the wire's text;
/// for another wire the rest of the message is checked.
fn answer(wire: Wire) -> Option<&'static str> {
    match wire.name() {
        "openai" => Some("a chat completion (an object with `choices`)"),
        "anthropic" => Some("a message (an object with `\"type\": \"message\"` and `content`)"),
        _ => None,
    }
}

struct Run {
    outcome: Result<Reply, ExecError>,
    requests: usize,
}

impl Run {
    fn error(&self, wire: Wire) -> &ExecError {
        match &self.outcome {
            Ok(reply) => panic!("{wire}: expected a failure, got the answer {:?}", reply.text()),
            Err(error) => error,
        }
    }

    fn reply(&self, wire: Wire) -> &Reply {
        match &self.outcome {
            Ok(reply) => reply,
            Err(error) => panic!("{wire}: expected an answer, got {error}"),
        }
    }
}

async fn exec(wire: Wire, scenario: Scenario, policy: &RetryPolicy) -> Run {
    let server = ChaosServer::start(scenario).await.expect("the chaos server starts");
    let runtime = RuntimeBuilder::from_shared(wire.provider_at(&wire.base_url(&server), Some(CANARY), None))
        .with_retry_quota(None)
        .build()
        .unwrap();
    let outcome = runtime.request("What is the answer?").policy(policy).send().await;
    if let Err(error) = &outcome {
        let everything = format!("{error} {error:?}");
        assert!(!everything.contains("SECRET123"), "{wire}: the key leaked: {everything}");
    }
    Run { outcome, requests: server.journal().len() }
}

/// A 200 with `content_type` and `body`, for every call.
fn body(content_type: &str, body: &str) -> Scenario {
    Scenario::new().otherwise(Step::wrong_content_type().content_type(content_type).body(body))
}

/// A 200 with `content_type` and `body` once, then a good answer.
fn once_then_ok(content_type: &str, body: &str) -> Scenario {
    Scenario::new()
        .then(Step::wrong_content_type().content_type(content_type).body(body))
        .otherwise(Step::ok("the answer"))
}

/// One SSE event of Anthropic's, named as the API names it.
fn event(data: serde_json::Value) -> String {
    format!("event: {}\ndata: {data}\n\n", data["type"].as_str().unwrap())
}

fn message_start() -> String {
    event(
        serde_json::json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
        "content": [], "model": "claude-test", "stop_reason": null, "usage": {"input_tokens": 3, "output_tokens": 1}}}),
    )
}

#[tokio::test(start_paused = true)]
async fn a_json_body_that_is_not_a_completion_is_a_wrong_base_url_and_permanent() {
    let models = r#"{"object":"list","data":[{"id":"gpt-4o","object":"model"}]}"#;
    for wire in wires::all() {
        for shape in ["{}", r#"{"status":"ok"}"#, "[]", models] {
            let run = exec(wire, body("application/json", shape), &POLICY).await;
            let error = run.error(wire);
            assert_eq!((error.kind(), run.requests), (ExecErrorKind::Permanent, 1), "{wire} {shape}");
            let start = format!("NotAnAnswerError: the JSON answer to POST {} is not ", wire.request_path());
            let end = format!(
                ": {shape:?}: check the base URL; it likely points at a health check, a models list or another API \
                 instead of the model API"
            );
            let attempt = &error.attempt_errors()[0];
            assert!(attempt.starts_with(&start) && attempt.ends_with(&end), "{wire} {shape}: {attempt}");
            if let Some(answer) = answer(wire) {
                assert_eq!(error.attempt_errors(), [format!("{start}{answer}{end}")], "{wire} {shape}");
            }
        }
    }
}

#[tokio::test(start_paused = true)]
async fn every_chaos_not_an_answer_shape_is_a_classified_error() {
    for wire in wires::all() {
        for shape in NotAnAnswer::ALL {
            let run = exec(wire, Scenario::new().otherwise(Step::not_an_answer(shape)), &POLICY).await;
            let error = run.error(wire);
            let attempt = &error.attempt_errors()[0];
            let wrong_url = matches!(
                shape,
                NotAnAnswer::JsonObject | NotAnAnswer::StatusOk | NotAnAnswer::JsonArray | NotAnAnswer::ModelsList
            );
            if wrong_url {
                // The same request gets the same body: one request, and the message says where it went.
                assert_eq!((error.kind(), run.requests), (ExecErrorKind::Permanent, 1), "{wire} {shape:?}");
                let start = format!("NotAnAnswerError: the JSON answer to POST {} is not ", wire.request_path());
                assert!(attempt.starts_with(&start), "{wire} {shape:?}: {attempt}");
                if let Some(answer) = answer(wire) {
                    assert!(attempt.starts_with(&format!("{start}{answer}: ")), "{wire} {shape:?}: {attempt}");
                }
                assert!(attempt.ends_with(": check the base URL; it likely points at a health check, a models list or another API instead of the model API"), "{wire} {shape:?}: {attempt}");
            } else {
                // Shaped like an answer, but empty: a reply cut short, retried as the policy says.
                assert_eq!((error.kind(), run.requests), (ExecErrorKind::Exhausted, 12), "{wire} {shape:?}");
                let start = "IncompleteStreamError: the answer ended without content, tool calls or a finish reason: ";
                assert!(attempt.starts_with(start), "{wire} {shape:?}: {attempt}");
            }
            assert!(!attempt.chars().any(char::is_control), "{wire} {shape:?}: {attempt:?}");
        }
    }
}

#[tokio::test(start_paused = true)]
async fn an_empty_answer_shaped_like_one_is_a_truncated_answer_and_retried() {
    for (wire, shape) in [
        (named("openai"), r#"{"choices":[]}"#),
        (named("openai"), r#"{"object":"chat.completion","choices":[{"index":0,"message":{"content":null}}]}"#),
        (named("anthropic"), r#"{"type":"message","content":[],"stop_reason":null}"#),
    ] {
        let run = exec(wire, once_then_ok("application/json", shape), &POLICY).await;
        let reply = run.reply(wire);
        assert_eq!((reply.text(), run.requests), ("the answer", 2), "{wire} {shape}");
        let expected = format!(
            "IncompleteStreamError: the answer ended without content, tool calls or a finish reason: the JSON \
             answer was {shape:?}"
        );
        assert_eq!(reply.decisions()[0].error(), expected, "{wire} {shape}");

        // Every call alike: the policy's 12 calls, then exhausted.
        let run = exec(wire, body("application/json", shape), &POLICY).await;
        assert_eq!((run.error(wire).kind(), run.requests), (ExecErrorKind::Exhausted, 12), "{wire} {shape}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_stream_without_content_tool_calls_or_a_finish_reason_is_truncated() {
    let empty_chunk = r#"{"id":"c1","choices":[{"index":0,"delta":{}}]}"#;
    let anthropic = message_start() + &event(serde_json::json!({"type": "message_stop"}));
    for (wire, stream, events, first) in [
        (named("openai"), "data: [DONE]\n\n".to_owned(), "1 event", "[DONE]".to_owned()),
        (named("openai"), format!("data: {empty_chunk}\n\ndata: [DONE]\n\n"), "2 events", empty_chunk.to_owned()),
        (named("anthropic"), anthropic.clone(), "2 events", anthropic.lines().nth(1).unwrap()[6..].to_owned()),
    ] {
        let run = exec(wire, once_then_ok("text/event-stream", &stream), &POLICY).await;
        let reply = run.reply(wire);
        assert_eq!((reply.text(), run.requests), ("the answer", 2), "{wire} {stream}");
        let expected = format!(
            "IncompleteStreamError: the answer ended without content, tool calls or a finish reason: the stream \
             ended after {events} (the first: {})",
            excerpt(&first)
        );
        assert_eq!(reply.decisions()[0].error(), expected, "{wire} {stream}");
    }
}

/// What a message quotes of `data`: its first 120 characters, quoted and escaped.
fn excerpt(data: &str) -> String {
    match data.char_indices().nth(120) {
        Some((end, _)) => format!("{:?}...", &data[..end]),
        None => format!("{data:?}"),
    }
}

/// One call through `exec::call_once`, as the session layer makes it.
async fn call(wire: Wire, step: impl Into<Step>) -> agentic_runtime::message::AssistantMessage {
    let server = ChaosServer::start(Scenario::new().otherwise(step)).await.expect("the chaos server starts");
    let history = [Message::user("What is the answer?")];
    exec::call_once(&*wire.provider_at(&wire.base_url(&server), Some(CANARY), None), &Request::new(&history), None)
        .await
        .unwrap_or_else(|error| panic!("{wire}: not a programming error, got {error}"))
}

#[tokio::test(start_paused = true)]
async fn an_explicit_finish_reason_with_empty_text_and_a_tool_call_stay_answers() {
    let openai_stop = |reason: &str| {
        format!(r#"{{"choices":[{{"index":0,"message":{{"content":""}},"finish_reason":"{reason}"}}]}}"#)
    };
    for (wire, shape, stop_reason) in [
        (named("openai"), openai_stop("stop"), StopReason::Stop),
        (named("openai"), openai_stop("length"), StopReason::Length),
        (
            named("anthropic"),
            r#"{"type":"message","content":[],"stop_reason":"end_turn"}"#.to_owned(),
            StopReason::Stop,
        ),
        (
            named("anthropic"),
            r#"{"type":"message","content":[],"stop_reason":"max_tokens"}"#.to_owned(),
            StopReason::Length,
        ),
    ] {
        let message = call(wire, Step::wrong_content_type().content_type("application/json").body(shape.clone())).await;
        assert_eq!((message.text_content().as_str(), message.stop_reason), ("", stop_reason), "{wire} {shape}");
    }
    let streams = [
        (
            named("openai"),
            "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"
                .to_owned(),
        ),
        (
            named("anthropic"),
            message_start()
                + &event(serde_json::json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}}))
                + &event(serde_json::json!({"type": "message_stop"})),
        ),
    ];
    for (wire, stream) in streams {
        let message = call(wire, Step::wrong_content_type().content_type("text/event-stream").body(stream)).await;
        assert_eq!((message.text_content().as_str(), message.stop_reason), ("", StopReason::Stop), "{wire}");
    }
    for wire in wires::all() {
        let message = call(wire, Step::tool_use("get_weather", serde_json::json!({"city": "Paris"}))).await;
        assert_eq!(message.stop_reason, StopReason::ToolUse, "{wire}: {message:?}");
        assert!(
            matches!(&message.content[..], [ContentBlock::ToolUse { name, .. }] if name == "get_weather"),
            "{wire}: {message:?}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_bare_json_error_line_in_an_event_stream_is_the_error_it_says() {
    let openai_key = format!(
        r#"{{"error":{{"message":"Incorrect API key provided: {CANARY}.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}}}"#
    );
    let anthropic_key = r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#;
    for (wire, line, attempt) in [
        (named("openai"), openai_key.as_str(), "AuthenticationError: Incorrect API key provided: <redacted>."),
        (named("anthropic"), anthropic_key, "AuthenticationError: invalid x-api-key"),
    ] {
        let run = exec(wire, body("text/event-stream", &format!("{line}\n")), &POLICY).await;
        let error = run.error(wire);
        assert_eq!((error.kind(), run.requests), (ExecErrorKind::Permanent, 1), "{wire}: {error}");
        assert_eq!(error.attempt_errors(), [attempt], "{wire}");
    }
    // Retryable by its type; pretty-printed on several lines, it is read whole at the end of the body.
    let overloaded = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    let pretty = "{\n  \"error\": {\n    \"type\": \"overloaded_error\",\n    \"message\": \"Overloaded\"\n  }\n}\n";
    for wire in wires::all() {
        for line in [format!("{overloaded}\n"), pretty.to_owned()] {
            let run = exec(wire, once_then_ok("text/event-stream", &line), &POLICY).await;
            let reply = run.reply(wire);
            assert_eq!((reply.text(), run.requests), ("the answer", 2), "{wire} {line}");
            // Typed by the error vocabulary the body speaks, OpenAI's and Anthropic's.
            if answer(wire).is_some() {
                assert_eq!(reply.decisions()[0].error(), "OverloadedError: Overloaded", "{wire} {line}");
            }
        }
    }
}

#[tokio::test(start_paused = true)]
async fn the_chaos_bare_json_error_is_typed_by_its_code_then_its_type() {
    for wire in wires::all() {
        let run = exec(wire, Scenario::new().otherwise(Step::bare_json_error()), &POLICY).await;
        let error = run.error(wire);
        assert_eq!((error.kind(), run.requests), (ExecErrorKind::Permanent, 1), "{wire}: {error}");
        let attempt = match wire.name() {
            "openai" => Some("AuthenticationError: Incorrect API key provided: sk-****."),
            "anthropic" => Some("AuthenticationError: invalid x-api-key"),
            _ => None,
        };
        if let Some(attempt) = attempt {
            assert_eq!(error.attempt_errors(), [attempt], "{wire}");
        }

        // A code of its own: the default one (`invalid_api_key`) would type it, being the more specific.
        let overloaded =
            Step::bare_json_error().error_type("overloaded_error").code("overloaded").message("Overloaded");
        let run = exec(wire, Scenario::new().then(overloaded).otherwise(Step::ok("the answer")), &POLICY).await;
        let reply = run.reply(wire);
        assert_eq!((reply.text(), run.requests), ("the answer", 2), "{wire}");
        if attempt.is_some() {
            assert_eq!(reply.decisions()[0].error(), "OverloadedError: Overloaded", "{wire}");
        }
    }
}

/// Short bounds, one call: the call's own bound is what ends it.
const ONE_CALL: RetryPolicy = RetryPolicy::new()
    .with_max_retries(1)
    .with_session_retries(0)
    .with_first_token_timeout_ms(30_000)
    .with_idle_timeout_ms(5_000);

#[tokio::test(start_paused = true)]
async fn silence_after_the_stream_started_ends_at_the_idle_bound_where_the_wire_sends_heartbeats() {
    // Anthropic: `message_start` alone, or with a block's start and a ping, then nothing at all.
    for hang in [Step::hang().after_start(), Step::hang().after_chunks(0)] {
        let run = exec(named("anthropic"), Scenario::new().otherwise(hang.clone()), &ONE_CALL).await;
        let error = run.error(named("anthropic"));
        assert_eq!(
            error.attempt_errors(),
            ["TimeoutError: model call timed out: the stream started, then nothing came for 5 s, not even a \
              heartbeat (`idle_timeout_ms` = 5000): this wire sends heartbeats while the model thinks, so the \
              stream is dead"],
            "{hang:?}"
        );
        let facts = (error.kind(), error.elapsed(), run.requests);
        assert_eq!(facts, (ExecErrorKind::Exhausted, Duration::from_secs(5), 1), "{hang:?}");
    }

    // Chat Completions sends no heartbeats: a reasoning model may think in silence, after the role
    // chunk too, until the first token's bound.
    for hang in [Step::hang().after_start(), Step::hang().after_chunks(0)] {
        let run = exec(named("openai"), Scenario::new().otherwise(hang.clone()), &ONE_CALL).await;
        let error = run.error(named("openai"));
        assert_eq!(
            error.attempt_errors(),
            ["TimeoutError: model call timed out: no content after 30 s (`first_token_timeout_ms` = 30000)"],
            "{hang:?}"
        );
        assert_eq!((error.elapsed(), run.requests), (Duration::from_secs(30), 1), "{hang:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn pings_alone_still_end_at_the_first_token_bound() {
    let pings = Scenario::new().otherwise(Step::keep_alive_flood().ping().interval_ms(1_000));
    let run = exec(named("anthropic"), pings, &ONE_CALL).await;
    let error = run.error(named("anthropic"));
    assert_eq!(
        error.attempt_errors(),
        ["TimeoutError: model call timed out: no content after 30 s (`first_token_timeout_ms` = 30000)"]
    );
    assert_eq!((error.elapsed(), run.requests), (Duration::from_secs(30), 1));
}
