//! Every step kind, on both wire formats, streamed and not.

use crate::common;

use agentic_chaos::{ChaosServer, MalformedShape, Scenario, Step, StepKind};
use common::{Client, End, WireFormat, model, stream_text, whole_text};
use serde_json::{Value, json};

async fn serve(step: impl Into<Step>) -> ChaosServer {
    ChaosServer::start(Scenario::new().then_times(100, step)).await.expect("start the server")
}

fn event_names(events: &[common::Event]) -> Vec<&str> {
    events.iter().map(|e| e.event.as_deref().unwrap_or("")).collect()
}

#[tokio::test]
async fn ok_streams_anthropic_events_exactly() {
    let server = serve(Step::ok("The answer is 42.")).await;
    let r = model(server.addr(), WireFormat::Anthropic, true).await.response();
    assert_eq!(r.status, 200);
    assert_eq!(r.end, End::Clean);
    assert_eq!(r.header("content-type"), Some("text/event-stream; charset=utf-8"));
    assert!(r.header("request-id").is_some());
    let events = r.events();
    assert_eq!(
        event_names(&events),
        [
            "message_start",
            "content_block_start",
            "ping",
            "content_block_delta",
            "content_block_delta",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ]
    );
    let start = events[0].json();
    assert_eq!(start["message"]["role"], "assistant");
    assert_eq!(start["message"]["model"], "test-model");
    assert_eq!(start["message"]["content"], json!([]));
    assert_eq!(events[1].json()["content_block"], json!({"type": "text", "text": ""}));
    assert_eq!(events[2].json(), json!({"type": "ping"}));
    assert_eq!(
        events[3].json(),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "The "}})
    );
    assert_eq!(events[8].json()["delta"]["stop_reason"], "end_turn");
    assert_eq!(events[8].json()["usage"]["output_tokens"], 4);
    assert_eq!(stream_text(WireFormat::Anthropic, &events), ("The answer is 42.".to_owned(), true));
}

#[tokio::test]
async fn ok_streams_openai_chunks_exactly() {
    let server = serve(Step::ok("The answer is 42.").chunks(2)).await;
    let r = model(server.addr(), WireFormat::OpenAi, true).await.response();
    assert_eq!(r.status, 200);
    assert_eq!(r.end, End::Clean);
    assert_eq!(r.header("content-type"), Some("text/event-stream; charset=utf-8"));
    assert!(r.header("x-request-id").is_some());
    let events = r.events();
    assert_eq!(events.len(), 4, "2 text chunks, the stop chunk, [DONE]: {events:?}");
    assert!(events.iter().all(|e| e.event.is_none()));
    let first = events[0].json();
    assert_eq!(first["object"], "chat.completion.chunk");
    assert_eq!(first["model"], "test-model");
    assert_eq!(first["choices"][0]["delta"], json!({"role": "assistant", "content": "The answe"}));
    assert_eq!(first["choices"][0]["finish_reason"], Value::Null);
    assert_eq!(events[1].json()["choices"][0]["delta"], json!({"content": "r is 42."}));
    let stop = events[2].json();
    assert_eq!(stop["choices"][0]["finish_reason"], "stop");
    assert_eq!(stop["choices"][0]["delta"], json!({}));
    assert_eq!(stop["id"], first["id"]);
    assert_eq!(events[3].data, "[DONE]");
}

#[tokio::test]
async fn openai_usage_chunk_comes_when_asked_for() {
    let server = serve(Step::ok("a b")).await;
    let mut client = Client::connect(server.addr()).await;
    let body = r#"{"model":"m","messages":[],"stream":true,"stream_options":{"include_usage":true}}"#;
    let r = client.request("POST", "/v1/chat/completions", &[], body).await.response();
    let events = r.events();
    let usage = events[events.len() - 2].json();
    assert_eq!(usage["choices"], json!([]));
    assert_eq!(usage["usage"]["completion_tokens"], 2);
    assert_eq!(events.last().unwrap().data, "[DONE]");
}

#[tokio::test]
async fn ok_answers_whole_json_without_stream() {
    let server = serve(Step::ok("Plain answer.").chunk_delay_ms(1)).await;
    let r = model(server.addr(), WireFormat::OpenAi, false).await.response();
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    let body = r.json();
    assert_eq!(body["object"], "chat.completion");
    assert_eq!(body["choices"][0]["message"]["role"], "assistant");
    assert_eq!(body["choices"][0]["message"]["content"], "Plain answer.");
    assert_eq!(body["choices"][0]["finish_reason"], "stop");

    let r = model(server.addr(), WireFormat::Anthropic, false).await.response();
    let body = r.json();
    assert_eq!(body["type"], "message");
    assert_eq!(body["role"], "assistant");
    assert_eq!(body["content"], json!([{"type": "text", "text": "Plain answer."}]));
    assert_eq!(body["stop_reason"], "end_turn");
}

#[tokio::test]
async fn ok_with_chunk_delay_still_streams_every_chunk() {
    let server = serve(Step::ok("one two three").chunk_delay_ms(2)).await;
    for wire in WireFormat::ALL {
        let started = tokio::time::Instant::now();
        let r = model(server.addr(), wire, true).await.response();
        assert!(started.elapsed() >= std::time::Duration::from_millis(6));
        assert_eq!(r.end, End::Clean);
        assert_eq!(stream_text(wire, &r.events()), ("one two three".to_owned(), true));
    }
}

#[tokio::test]
async fn http_error_sends_status_headers_and_provider_body() {
    let step =
        Step::http_error(429).retry_after_secs(2).retry_after_ms(1500).should_retry(true).header("x-extra", "yes");
    let server = serve(step).await;
    for wire in WireFormat::ALL {
        for stream in [true, false] {
            let r = model(server.addr(), wire, stream).await.response();
            assert_eq!(r.status, 429);
            assert_eq!(r.end, End::Clean);
            assert_eq!(r.header("retry-after"), Some("2"));
            assert_eq!(r.header("retry-after-ms"), Some("1500"));
            assert_eq!(r.header("x-should-retry"), Some("true"));
            assert_eq!(r.header("x-extra"), Some("yes"));
            assert_eq!(r.header("content-type"), Some("application/json"));
            let expected = match wire {
                WireFormat::OpenAi | WireFormat::Responses => json!({"error": {
                    "message": "Rate limit reached for requests. Please try again later.",
                    "type": "requests", "param": null, "code": "rate_limit_exceeded"}}),
                WireFormat::Gemini => {
                    let error = r.json()["error"].clone();
                    assert_eq!(
                        error["details"][0]["violations"][0]["quotaId"],
                        "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"
                    );
                    json!({"error": {"code": 429, "message": "Resource has been exhausted (e.g. check quota).",
                        "status": "RESOURCE_EXHAUSTED", "details": error["details"]}})
                }
                _ => json!({"type": "error", "error": {
                    "type": "rate_limit_error",
                    "message": "Number of requests has exceeded your rate limit. Please try again later."}}),
            };
            assert_eq!(r.json(), expected);
        }
    }
}

#[tokio::test]
async fn http_error_types_follow_the_status() {
    let cases = [
        (400, "invalid_request_error", "invalid_request_error"),
        (401, "authentication_error", "invalid_request_error"),
        (403, "permission_error", "invalid_request_error"),
        (404, "not_found_error", "invalid_request_error"),
        (413, "request_too_large", "invalid_request_error"),
        (500, "api_error", "server_error"),
        (502, "api_error", "server_error"),
        (503, "overloaded_error", "server_error"),
        (504, "timeout_error", "server_error"),
        (529, "overloaded_error", "server_error"),
    ];
    for (status, anthropic, openai) in cases {
        let server = serve(Step::http_error(status)).await;
        let a = model(server.addr(), WireFormat::Anthropic, true).await.response();
        assert_eq!(a.status, status);
        assert_eq!(a.json()["type"], "error");
        assert_eq!(a.json()["error"]["type"], anthropic, "{status}");
        assert!(!a.json()["error"]["message"].as_str().unwrap().is_empty());
        let o = model(server.addr(), WireFormat::OpenAi, true).await.response();
        assert_eq!(o.status, status);
        assert_eq!(o.json()["error"]["type"], openai, "{status}");
        assert!(o.json()["error"].get("param").is_some());
        assert!(o.json()["error"].get("code").is_some());
    }
}

#[tokio::test]
async fn http_error_body_parts_can_be_overridden() {
    let step = Step::http_error(500).error_type("api_error").message("").code("boom").param("model");
    let server = serve(step).await;
    let o = model(server.addr(), WireFormat::OpenAi, false).await.response();
    assert_eq!(o.json(), json!({"error": {"message": "", "type": "api_error", "param": "model", "code": "boom"}}));
    let a = model(server.addr(), WireFormat::Anthropic, false).await.response();
    assert_eq!(a.json(), json!({"type": "error", "error": {"type": "api_error", "message": ""}}));

    let html = "<html><body>502 Bad Gateway</body></html>";
    let server = serve(
        Step::http_error(502)
            .body(html)
            .header("content-type", "text/html")
            .retry_after("Wed, 21 Oct 2015 07:28:00 GMT"),
    )
    .await;
    for wire in WireFormat::ALL {
        let r = model(server.addr(), wire, true).await.response();
        assert_eq!(r.status, 502);
        assert_eq!(r.text(), html);
        assert_eq!(r.header("content-type"), Some("text/html"));
        assert_eq!(r.header("retry-after"), Some("Wed, 21 Oct 2015 07:28:00 GMT"));
        let content_types = r.headers.iter().filter(|(n, _)| n == "content-type").count();
        assert_eq!(content_types, 1);
    }
}

#[tokio::test]
async fn context_overflow_sends_each_providers_real_body() {
    let server = serve(Step::context_overflow()).await;
    let o = model(server.addr(), WireFormat::OpenAi, true).await.response();
    assert_eq!(o.status, 400);
    assert_eq!(
        o.json(),
        json!({"error": {
            "message": "This model's maximum context length is 128000 tokens. However, your messages resulted in 250000 tokens. Please reduce the length of the messages.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded"}})
    );
    let a = model(server.addr(), WireFormat::Anthropic, false).await.response();
    assert_eq!(a.status, 400);
    assert_eq!(
        a.json(),
        json!({"type": "error", "error": {
            "type": "invalid_request_error",
            "message": "prompt is too long: 250000 tokens > 200000 maximum"}})
    );
    assert!(server.journal().iter().all(|e| e.step.unwrap().kind == StepKind::ContextOverflow));
}

#[tokio::test]
async fn invalid_api_key_sends_each_providers_real_body() {
    let server = serve(Step::invalid_api_key()).await;
    let o = model(server.addr(), WireFormat::OpenAi, false).await.response();
    assert_eq!(o.status, 401);
    assert_eq!(
        o.json(),
        json!({"error": {
            "message": "Incorrect API key provided: sk-****. You can find your API key at https://platform.openai.com/account/api-keys.",
            "type": "invalid_request_error",
            "param": null,
            "code": "invalid_api_key"}})
    );
    let a = model(server.addr(), WireFormat::Anthropic, true).await.response();
    assert_eq!(a.status, 401);
    assert_eq!(
        a.json(),
        json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}})
    );
}

#[tokio::test]
async fn close_before_headers_sends_nothing() {
    let times = 2 * WireFormat::ALL.len() as u32;
    let server = ChaosServer::start(Scenario::new().then_times(times, Step::close_before_headers())).await.unwrap();
    for wire in WireFormat::ALL {
        for stream in [true, false] {
            let mut client = Client::connect(server.addr()).await;
            assert!(matches!(client.model(wire, stream).await, common::Outcome::ClosedBeforeHeaders));
        }
    }
    // The default step answers next.
    let r = model(server.addr(), WireFormat::OpenAi, false).await.response();
    assert_eq!(r.status, 200);
    assert_eq!(server.requests_served(), times as usize + 1);
}

#[tokio::test]
async fn drop_stream_cuts_the_body_after_k_chunks() {
    let server = serve(Step::drop_stream(2).text("one two three four")).await;
    for wire in WireFormat::ALL {
        let mut client = Client::connect(server.addr()).await;
        let r = client.model(wire, true).await.response();
        assert_eq!(r.status, 200);
        assert_eq!(r.end, End::Cut, "a body error, not a clean end");
        let events = r.events();
        assert_eq!(stream_text(wire, &events), ("one two ".to_owned(), false));
        if wire == WireFormat::Anthropic {
            assert_eq!(
                event_names(&events),
                ["message_start", "content_block_start", "ping", "content_block_delta", "content_block_delta"]
            );
        } else if wire == WireFormat::Responses {
            assert_eq!(
                event_names(&events),
                [
                    "response.created",
                    "response.in_progress",
                    "response.output_item.added",
                    "response.content_part.added",
                    "response.output_text.delta",
                    "response.output_text.delta",
                ]
            );
        } else {
            assert_eq!(events.len(), 2);
        }
        assert!(client.is_closed().await);
    }
}

#[tokio::test]
async fn drop_stream_after_zero_chunks_and_beyond_the_text() {
    let server = ChaosServer::start(Scenario::new().then(Step::drop_stream(0)).then(Step::drop_stream(99).text("a b")))
        .await
        .unwrap();
    let r = model(server.addr(), WireFormat::OpenAi, true).await.response();
    assert_eq!((r.end, r.body.len()), (End::Cut, 0));
    let r = model(server.addr(), WireFormat::Anthropic, true).await.response();
    assert_eq!(r.end, End::Cut);
    assert_eq!(stream_text(WireFormat::Anthropic, &r.events()), ("a b".to_owned(), false));
}

#[tokio::test]
async fn drop_stream_without_stream_cuts_the_json_body() {
    let server = serve(Step::drop_stream(1)).await;
    for wire in WireFormat::ALL {
        let r = model(server.addr(), wire, false).await.response();
        assert_eq!(r.status, 200);
        assert_eq!(r.end, End::Cut);
        let declared: usize = r.header("content-length").unwrap().parse().unwrap();
        assert!(r.body.len() < declared);
    }
}

#[tokio::test]
async fn truncate_ends_cleanly_without_final_events() {
    let server = serve(Step::truncate(1).chunks(3).text("abcdef")).await;
    for wire in WireFormat::ALL {
        let mut client = Client::connect(server.addr()).await;
        let r = client.model(wire, true).await.response();
        assert_eq!(r.end, End::Clean);
        let events = r.events();
        assert_eq!(stream_text(wire, &events), ("ab".to_owned(), false));
        assert!(events.iter().all(|e| e.data != "[DONE]"));
        assert!(events.iter().all(|e| e.event.as_deref() != Some("message_stop")
            && e.event.as_deref() != Some("content_block_stop")));
        assert!(events.iter().all(|e| !e.data.contains(r#""finish_reason":"stop""#)));
        // The connection stays usable.
        let again = client.model(wire, false).await.response();
        assert_eq!(again.status, 200);
        assert_eq!(again.end, End::Clean);
    }
}

#[tokio::test]
async fn truncate_without_stream_sends_half_a_json_body() {
    let server = serve(Step::truncate(1)).await;
    for wire in WireFormat::ALL {
        let r = model(server.addr(), wire, false).await.response();
        assert_eq!(r.end, End::Clean);
        assert!(serde_json::from_slice::<Value>(&r.body).is_err());
    }
}

#[tokio::test]
async fn sse_error_sends_the_providers_error_event() {
    let server = serve(Step::sse_error(2).text("one two three")).await;
    let r = model(server.addr(), WireFormat::Anthropic, true).await.response();
    assert_eq!(r.end, End::Clean);
    let events = r.events();
    let last = events.last().unwrap();
    assert_eq!(last.event.as_deref(), Some("error"));
    assert_eq!(last.json(), json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}));
    assert_eq!(stream_text(WireFormat::Anthropic, &events[..events.len() - 1]), ("one two ".to_owned(), false));

    let r = model(server.addr(), WireFormat::OpenAi, true).await.response();
    assert_eq!(r.end, End::Clean);
    let events = r.events();
    let last = events.last().unwrap();
    assert_eq!(last.event, None);
    assert_eq!(last.json()["error"]["type"], "server_error");
    assert!(last.json()["error"].get("code").is_some());
    assert_eq!(events.len(), 3);
}

#[tokio::test]
async fn sse_error_message_and_type_can_be_set_even_empty() {
    let server = serve(Step::sse_error(0).error_type("api_error").message("")).await;
    for wire in WireFormat::ALL {
        let r = model(server.addr(), wire, true).await.response();
        let last = r.events().last().unwrap().json();
        if wire == WireFormat::Responses {
            // A failed response names its error by code: the type's.
            let error = &last["response"]["error"];
            assert_eq!((&error["code"], &error["message"]), (&json!("server_error"), &json!("")));
            continue;
        }
        // Every other shape nests the error under "error"; Google's names its type `status`.
        let error = last["error"].clone();
        let kind = if wire == WireFormat::Gemini { "status" } else { "type" };
        assert_eq!(error[kind], "api_error");
        assert_eq!(error["message"], "");
    }
}

#[tokio::test]
async fn sse_error_without_stream_is_an_http_error() {
    let server = serve(Step::sse_error(1)).await;
    let a = model(server.addr(), WireFormat::Anthropic, false).await.response();
    assert_eq!(a.status, 529);
    assert_eq!(a.json()["error"]["type"], "overloaded_error");
    let o = model(server.addr(), WireFormat::OpenAi, false).await.response();
    assert_eq!(o.status, 500);

    let server = serve(Step::sse_error(1).error_type("overloaded_error").status(503)).await;
    let o = model(server.addr(), WireFormat::OpenAi, false).await.response();
    assert_eq!(o.status, 503);
    assert_eq!(o.json()["error"]["type"], "overloaded_error");
}

#[tokio::test]
async fn malformed_chunk_sends_invalid_json_then_goes_on() {
    let server = serve(Step::malformed_chunk(1).text("one two")).await;
    for wire in WireFormat::ALL {
        let r = model(server.addr(), wire, true).await.response();
        assert_eq!(r.end, End::Clean);
        let events = r.events();
        let bad: Vec<_> =
            events.iter().filter(|e| e.data != "[DONE]" && serde_json::from_str::<Value>(&e.data).is_err()).collect();
        assert_eq!(bad.len(), 1, "{events:?}");
        let expected = match wire {
            WireFormat::OpenAi => {
                r#"{"id":"chatcmpl-chaos","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"#
            }
            WireFormat::Gemini => r#"{"candidates":[{"content":{"parts":[{"text":"#,
            WireFormat::Responses => {
                r#"{"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":"#
            }
            _ => r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"#,
        };
        assert_eq!(bad[0].data, expected);
        if wire == WireFormat::Anthropic {
            assert_eq!(bad[0].event.as_deref(), Some("content_block_delta"));
        }
        let good: Vec<_> = events
            .iter()
            .filter(|e| e.data == "[DONE]" || serde_json::from_str::<Value>(&e.data).is_ok())
            .cloned()
            .collect();
        assert_eq!(stream_text(wire, &good), ("one two".to_owned(), true));
        let bad_at = events.iter().position(|e| e == bad[0]).unwrap();
        let deltas_before = events[..bad_at]
            .iter()
            .filter(|e| {
                matches!(e.event.as_deref(), Some("content_block_delta" | "response.output_text.delta"))
                    || e.json().pointer("/choices/0/delta/content").is_some()
                    || e.json().pointer("/candidates/0/content/parts/0/text").is_some()
            })
            .count();
        assert_eq!(deltas_before, 1);
    }
}

/// The `unreadable` shape: a whole text event of each wire, valid JSON, one field of another type;
/// a file's `"shape": "unreadable"` is the same step.
#[tokio::test]
async fn malformed_chunk_of_an_unreadable_shape_is_valid_json_of_another_shape() {
    let server = serve(Step::malformed_chunk(1).shape(MalformedShape::Unreadable).text("one two")).await;
    for wire in WireFormat::ALL {
        let r = model(server.addr(), wire, true).await.response();
        assert_eq!(r.end, End::Clean);
        let events = r.events();
        assert!(
            events.iter().all(|e| e.data == "[DONE]" || serde_json::from_str::<Value>(&e.data).is_ok()),
            "{events:?}"
        );
        let (pointer, held) = match wire {
            WireFormat::OpenAi => ("/choices/0/delta/content", json!({"value": "Hello"})),
            WireFormat::Gemini => ("/candidates/0/content/parts/0/text", json!({"value": "Hello"})),
            WireFormat::Responses => ("/output_index", json!("first")),
            _ => ("/index", json!("first")),
        };
        let foreign: Vec<_> =
            events.iter().filter(|e| e.data != "[DONE]" && e.json().pointer(pointer) == Some(&held)).collect();
        assert_eq!(foreign.len(), 1, "{wire:?}: {events:?}");
    }
    let file = r#"{"steps": [], "default": {"kind": "malformed_chunk", "after_chunks": 1, "shape": "unreadable"}}"#;
    let loaded = file.parse::<Scenario>().unwrap();
    let built = Scenario::new().otherwise(Step::malformed_chunk(1).shape(MalformedShape::Unreadable));
    assert_eq!(loaded, built);
    assert_eq!(built.to_json().parse::<Scenario>().unwrap(), built);
    let error = r#"{"steps": [{"kind": "malformed_chunk", "shape": "unread"}]}"#.parse::<Scenario>().unwrap_err();
    assert!(error.to_string().contains("expected one of `cut`, `unreadable`"), "{error}");
}

#[tokio::test]
async fn malformed_chunk_data_can_be_set_and_unstreamed_is_a_bad_body() {
    let server = serve(Step::malformed_chunk(0).data("{not json")).await;
    let r = model(server.addr(), WireFormat::OpenAi, true).await.response();
    assert_eq!(r.events()[0].data, "{not json");
    let r = model(server.addr(), WireFormat::Anthropic, false).await.response();
    assert_eq!(r.status, 200);
    assert_eq!(r.text(), "{not json");
}

#[tokio::test]
async fn stall_before_headers_then_answers() {
    let server = serve(Step::stall(10).text("late")).await;
    for wire in WireFormat::ALL {
        let started = tokio::time::Instant::now();
        let r = model(server.addr(), wire, true).await.response();
        assert!(started.elapsed() >= std::time::Duration::from_millis(10));
        assert_eq!(stream_text(wire, &r.events()), ("late".to_owned(), true));
        let r = model(server.addr(), wire, false).await.response();
        assert_eq!(whole_text(wire, &r.json()), "late");
    }
}

#[tokio::test]
async fn stall_mid_stream_then_finishes() {
    let server = serve(Step::stall(10).after_chunks(1).text("a b c")).await;
    for wire in WireFormat::ALL {
        let started = tokio::time::Instant::now();
        let r = model(server.addr(), wire, true).await.response();
        assert!(started.elapsed() >= std::time::Duration::from_millis(10));
        assert_eq!(r.end, End::Clean);
        assert_eq!(stream_text(wire, &r.events()), ("a b c".to_owned(), true));
        let r = model(server.addr(), wire, false).await.response();
        assert_eq!(whole_text(wire, &r.json()), "a b c");
    }
}

#[tokio::test]
async fn hang_before_headers_lasts_until_the_client_leaves() {
    let server = serve(Step::hang()).await;
    for wire in WireFormat::ALL {
        let mut client = Client::connect(server.addr()).await;
        let body = common::body(true);
        let path = wire.request_path("test-model", true);
        let request = format!("POST {path} HTTP/1.1\r\nhost: x\r\ncontent-length: {}\r\n\r\n{body}", body.len());
        client.send_raw(request.as_bytes()).await;
        client.shutdown_write().await;
        // The server answers nothing, notices the client leaving, and closes.
        assert!(matches!(client.read_response().await, common::Outcome::ClosedBeforeHeaders));
    }
    let kinds: Vec<_> = server.journal().iter().map(|e| e.step.unwrap().kind).collect();
    assert_eq!(kinds, [StepKind::Hang; WireFormat::ALL.len()]);
}

#[tokio::test]
async fn hang_mid_stream_lasts_until_the_server_stops() {
    let server = serve(Step::hang().after_chunks(1).text("first second")).await;
    let mut client = Client::connect(server.addr()).await;
    let mut other = Client::connect(server.addr()).await;
    let body = common::body(true);
    let request = format!("POST /v1/messages HTTP/1.1\r\nhost: x\r\ncontent-length: {}\r\n\r\n{body}", body.len());
    client.send_raw(request.as_bytes()).await;
    // Headers, the preamble and one chunk arrive; then nothing until the server stops.
    let head_and_first = client.read_until("first ").await;
    assert!(head_and_first.starts_with("HTTP/1.1 200 OK"));
    assert!(!head_and_first.contains("second"));
    let pending = tokio::spawn(async move { (client.read_response_rest().await, client) });
    server.shutdown().await;
    let (rest, _client) = pending.await.unwrap();
    assert!(!rest.contains("second"));
    assert!(other.is_closed().await, "shutdown closes idle connections too");
}
