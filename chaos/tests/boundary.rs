//! The faults at the trust boundary, over a real socket: redirects, error bodies that stall,
//! 200s that are not answers, heads past a client's limits, a bare JSON error on an event stream,
//! a stream that stops after its opening events, and terminal escapes in error messages.

use crate::common;

use std::time::Duration;

use agentic_chaos::{BadHead, ChaosServer, NotAnAnswer, Redirect, Scenario, Step, StepKind};
use common::{Client, WireFormat, ask, leave_and_expect_nothing_more};
use serde_json::{Value, json};

/// How long a test waits to see that nothing more comes (paused time: instant).
const SILENCE: Duration = Duration::from_secs(60);

async fn serve(step: impl Into<Step>) -> ChaosServer {
    ChaosServer::start(Scenario::new().then_times(100, step)).await.expect("start the server")
}

fn id_header(wire: WireFormat, seq: usize) -> Option<String> {
    let name = match wire {
        WireFormat::OpenAi | WireFormat::Responses => "x-request-id",
        // Google sends no request id.
        WireFormat::Gemini => return None,
        _ => "request-id",
    };
    Some(format!("{name}: req_chaos{seq:012}"))
}

/// The request id header's line of a head, if the wire sends one.
fn id_line(wire: WireFormat, seq: usize) -> String {
    id_header(wire, seq).map(|header| format!("{header}\r\n")).unwrap_or_default()
}

/// Gemini's response with an empty text and the usage of a 1-token prompt: its opening.
fn gemini_opening(seq: usize) -> Value {
    json!({
        "candidates": [{"content": {"parts": [{"text": ""}], "role": "model"}, "index": 0}],
        "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 0, "totalTokenCount": 1},
        "modelVersion": "test-model", "responseId": format!("chaos-response-{seq:012}"),
    })
}

/// The raw head of the next response, up to and with its blank line.
async fn raw_head(client: &mut Client) -> String {
    client.read_until("\r\n\r\n").await
}

// 1. Redirects.

#[tokio::test]
async fn a_redirect_without_a_location_points_back_at_the_request() {
    let server = serve(Step::redirect()).await;
    let mut seq = 0;
    for wire in WireFormat::ALL {
        for stream in [true, false] {
            let mut client = Client::connect(server.addr()).await;
            client.send_model(wire, stream, &[]).await;
            let expected = format!(
                "HTTP/1.1 307 Temporary Redirect\r\nserver: agentic-chaos\r\nlocation: http://{}{}\r\n\
                 content-length: 0\r\n{}\r\n",
                server.addr(),
                wire.request_path("test-model", stream),
                id_line(wire, seq)
            );
            assert_eq!(raw_head(&mut client).await, expected, "{wire:?} stream {stream}");
            seq += 1;
        }
    }
    let kinds: Vec<_> = server.journal().iter().map(|e| e.step.unwrap().kind).collect();
    assert_eq!(kinds, [StepKind::Redirect; 2 * WireFormat::ALL.len()]);
}

#[tokio::test]
async fn a_redirect_loop_consumes_a_step_per_request_and_drops_the_query() {
    let scenario = Scenario::new().then_times(3, Step::redirect().status(308)).otherwise(Step::ok("landed"));
    let server = ChaosServer::start(scenario).await.unwrap();
    let mut client = Client::connect(server.addr()).await;
    let own = format!("http://{}/v1/chat/completions", server.addr());
    for _ in 0..3 {
        let r =
            client.request("POST", "/v1/chat/completions?api-version=1", &[], &common::body(false)).await.response();
        assert_eq!((r.status, r.header("location"), r.body.len()), (308, Some(own.as_str()), 0));
    }
    let r = client.model(WireFormat::OpenAi, false).await.response();
    assert_eq!(common::whole_text(WireFormat::OpenAi, &r.json()), "landed");
    let steps: Vec<_> = server.journal().iter().map(|e| (e.step.unwrap().kind, e.step.unwrap().repeat)).collect();
    assert_eq!(steps, [(StepKind::Redirect, 1), (StepKind::Redirect, 2), (StepKind::Redirect, 3), (StepKind::Ok, 1)]);
}

#[tokio::test]
async fn a_redirect_sends_every_status_to_its_location() {
    for status in Redirect::STATUSES {
        let step = Step::redirect().status(status).location("http://127.0.0.1:9/v1/messages").header("x-hop", "1");
        let server = serve(step).await;
        for wire in WireFormat::ALL {
            let r = common::model(server.addr(), wire, true).await.response();
            assert_eq!(r.status, status);
            assert_eq!(r.header("location"), Some("http://127.0.0.1:9/v1/messages"));
            assert_eq!((r.header("content-length"), r.header("x-hop"), r.body.len()), (Some("0"), Some("1"), 0));
        }
    }
}

// 2. Error bodies that stall.

#[tokio::test(start_paused = true)]
async fn an_error_body_stalls_after_n_bytes_under_the_whole_length() {
    let cases: [(Step, u64); 4] = [
        (Step::http_error(429).retry_after_secs(1).into(), 10),
        (Step::context_overflow().into(), 0),
        (Step::invalid_api_key().into(), 25),
        (Step::http_error(503).body("upstream said no").into(), 1_000_000),
    ];
    for (whole, bytes) in cases {
        let stalled = match whole.clone() {
            Step::HttpError(e) | Step::ContextOverflow(e) | Step::InvalidApiKey(e) => e.stall_body_after(bytes),
            other => panic!("not an HTTP error: {other:?}"),
        };
        let (full, server) = (serve(whole).await, serve(stalled).await);
        for wire in WireFormat::ALL {
            for stream in [true, false] {
                let expected = common::model(full.addr(), wire, stream).await.response();
                let mut client = ask(&server, wire, stream).await;
                let head = client.read_head().await.expect("a head");
                assert_eq!(head.status, expected.status);
                let length = expected.body.len();
                assert_eq!(head.header("content-length"), Some(length.to_string().as_str()), "the whole length");
                assert_eq!(head.header("retry-after"), expected.header("retry-after"));
                let sent = (bytes as usize).min(length);
                assert_eq!(client.read_exactly(sent).await, expected.body[..sent], "{wire:?}: the first bytes");
                assert!(client.silent_for(SILENCE).await, "{wire:?} stream {stream}: then silence");
                leave_and_expect_nothing_more(client, &server).await;
            }
        }
    }
}

// 3. 200s that are not answers.

/// The `message_start` event of request `seq` (the test body's prompt is one word).
fn message_start(seq: usize) -> (Option<String>, Value) {
    let message = json!({
        "id": format!("msg_chaos{seq:016}"), "type": "message", "role": "assistant", "model": "test-model",
        "content": [], "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 1},
    });
    (Some("message_start".to_owned()), json!({"type": "message_start", "message": message}))
}

fn anthropic(name: &str, data: Value) -> (Option<String>, Value) {
    (Some(name.to_owned()), data)
}

/// A Responses Response of request `seq` with no output: in progress (no usage yet) or completed
/// (the test body's prompt, read as no `input`, counts one token).
fn response(seq: usize, created: &Value, completed: bool) -> Value {
    let usage = completed.then(|| {
        json!({"input_tokens": 1, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 0,
            "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 1})
    });
    json!({"id": format!("resp_chaos{seq:016}"), "object": "response", "created_at": created,
        "status": if completed { "completed" } else { "in_progress" }, "model": "test-model", "output": [],
        "usage": usage, "error": null, "incomplete_details": null})
}

/// A Responses event of `kind` at `sequence`.
fn responses(kind: &str, sequence: u64, data: Value) -> (Option<String>, Value) {
    let mut data = data;
    data["type"] = Value::from(kind);
    data["sequence_number"] = Value::from(sequence);
    (Some(kind.to_owned()), data)
}

/// What `shape` sends to request `seq` of `wire`: the JSON body, or the stream's events.
fn expected_not_an_answer(
    shape: NotAnAnswer,
    wire: WireFormat,
    seq: usize,
    created: &Value,
) -> Result<Value, Vec<(Option<String>, Value)>> {
    let stop = || anthropic("message_stop", json!({"type": "message_stop"}));
    let openai_start = || {
        let chunk = json!({
            "id": format!("chatcmpl-chaos{seq:012}"), "object": "chat.completion.chunk", "created": created,
            "model": "test-model",
            "choices": [{"index": 0, "delta": {"role": "assistant"}, "logprobs": null, "finish_reason": null}],
        });
        (None, chunk)
    };
    let done = || (None, Value::from("[DONE]"));
    match (shape, wire) {
        (NotAnAnswer::JsonObject, _) => Ok(json!({})),
        (NotAnAnswer::StatusOk, _) => Ok(json!({"status": "ok"})),
        (NotAnAnswer::JsonArray, _) => Ok(json!([])),
        (NotAnAnswer::NoChoices, WireFormat::OpenAi) => Ok(json!({
            "id": format!("chatcmpl-chaos{seq:012}"), "object": "chat.completion", "created": created,
            "model": "test-model", "choices": [],
        })),
        (NotAnAnswer::NoChoices, WireFormat::Gemini) => Ok(json!({
            "candidates": [], "modelVersion": "test-model",
            "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 0, "totalTokenCount": 1},
        })),
        (NotAnAnswer::NoChoices, WireFormat::Responses) => Ok(response(seq, created, true)),
        (NotAnAnswer::DoneOnly, WireFormat::Responses) => Err(vec![
            responses("response.created", 0, json!({"response": response(seq, created, false)})),
            responses("response.completed", 1, json!({"response": response(seq, created, true)})),
        ]),
        (NotAnAnswer::EmptyChunk, WireFormat::Responses) => {
            let item_id = format!("msg_chaos{seq:016}");
            Err(vec![
                responses("response.created", 0, json!({"response": response(seq, created, false)})),
                responses("response.in_progress", 1, json!({"response": response(seq, created, false)})),
                responses(
                    "response.output_item.added",
                    2,
                    json!({"output_index": 0, "item": {"id": item_id,
                    "type": "message", "role": "assistant", "status": "completed", "content": []}}),
                ),
                responses(
                    "response.content_part.added",
                    3,
                    json!({"item_id": item_id, "output_index": 0,
                    "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}}),
                ),
                responses(
                    "response.output_text.delta",
                    4,
                    json!({"item_id": item_id, "output_index": 0,
                    "content_index": 0, "delta": ""}),
                ),
                responses("response.completed", 5, json!({"response": response(seq, created, true)})),
            ])
        }
        (NotAnAnswer::NoChoices, _) => Ok(json!({
            "id": format!("msg_chaos{seq:016}"), "type": "message", "role": "assistant", "model": "test-model",
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 0},
        })),
        (NotAnAnswer::ModelsList, _) => {
            Ok(json!({"object": "list", "data": [{"id": "test-model", "object": "model", "owned_by": "chaos"}]}))
        }
        (NotAnAnswer::DoneOnly, WireFormat::Gemini) => Err(vec![(
            None,
            json!({"modelVersion": "test-model",
            "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 0, "totalTokenCount": 1}}),
        )]),
        (NotAnAnswer::EmptyChunk, WireFormat::Gemini) => Err(vec![(None, gemini_opening(seq))]),
        (NotAnAnswer::DoneOnly, WireFormat::OpenAi) => Err(vec![done()]),
        (NotAnAnswer::DoneOnly, _) => Err(vec![message_start(seq), stop()]),
        (NotAnAnswer::EmptyChunk, WireFormat::OpenAi) => Err(vec![openai_start(), done()]),
        (NotAnAnswer::EmptyChunk, _) => Err(vec![
            message_start(seq),
            anthropic(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            ),
            anthropic("content_block_stop", json!({"type": "content_block_stop", "index": 0})),
            stop(),
        ]),
        (other, _) => panic!("a shape this test does not know: {other:?}"),
    }
}

/// The `created` time an OpenAI body or chunk carries (the clock's: not known in advance).
fn created_in(text: &str) -> Value {
    let body = std::iter::once(text).chain(text.lines().filter_map(|line| line.strip_prefix("data: ")));
    body.filter_map(|json| {
        let value = serde_json::from_str::<Value>(json).ok()?;
        value
            .get("created")
            .or_else(|| value.get("created_at"))
            .or_else(|| value.pointer("/response/created_at"))
            .cloned()
    })
    .next()
    .unwrap_or(Value::Null)
}

#[tokio::test]
async fn not_an_answer_sends_each_shape_on_both_wires_streamed_or_not() {
    for shape in NotAnAnswer::ALL {
        let server = serve(Step::not_an_answer(shape)).await;
        let mut client = Client::connect(server.addr()).await;
        let mut seq = 0;
        for wire in WireFormat::ALL {
            for stream in [true, false] {
                let r = client.model(wire, stream).await.response();
                assert_eq!(r.status, 200);
                if let Some(header) = id_header(wire, seq) {
                    let (id_name, id) = header.split_once(": ").unwrap();
                    assert_eq!(r.header(id_name), Some(id));
                }
                let text = r.text();
                let created = created_in(&text);
                match expected_not_an_answer(shape, wire, seq, &created) {
                    Ok(body) => {
                        assert_eq!(r.header("content-type"), Some("application/json"), "{shape:?}");
                        assert_eq!(r.header("content-length"), Some(text.len().to_string().as_str()));
                        assert_eq!(r.json(), body, "{shape:?} {wire:?} stream {stream}");
                    }
                    Err(events) => {
                        assert_eq!(r.header("content-type"), Some("text/event-stream; charset=utf-8"), "{shape:?}");
                        assert_eq!(r.header("transfer-encoding"), Some("chunked"));
                        assert_eq!(r.end, common::End::Clean);
                        let got: Vec<_> = r
                            .events()
                            .iter()
                            .map(|e| {
                                (
                                    e.event.clone(),
                                    serde_json::from_str(&e.data).unwrap_or_else(|_| Value::from(e.data.as_str())),
                                )
                            })
                            .collect();
                        assert_eq!(got, events, "{shape:?} {wire:?} stream {stream}");
                    }
                }
                seq += 1;
            }
        }
        let kinds: Vec<_> = server.journal().iter().map(|e| e.step.unwrap().kind).collect();
        assert_eq!(
            kinds,
            [StepKind::NotAnAnswer; 2 * WireFormat::ALL.len()],
            "one keep-alive connection, one step per request"
        );
    }
}

#[tokio::test]
async fn the_simple_shapes_are_these_exact_bytes() {
    for (shape, body) in
        [(NotAnAnswer::JsonObject, "{}"), (NotAnAnswer::StatusOk, r#"{"status":"ok"}"#), (NotAnAnswer::JsonArray, "[]")]
    {
        let server = serve(Step::not_an_answer(shape)).await;
        let mut client = Client::connect(server.addr()).await;
        client.send_model(WireFormat::Anthropic, true, &[]).await;
        let expected = format!(
            "HTTP/1.1 200 OK\r\nserver: agentic-chaos\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
             {}\r\n\r\n{body}",
            body.len(),
            id_header(WireFormat::Anthropic, 0).unwrap()
        );
        assert_eq!(String::from_utf8(client.read_exactly(expected.len()).await).unwrap(), expected);
    }
    let server = serve(Step::not_an_answer(NotAnAnswer::DoneOnly)).await;
    let mut client = Client::connect(server.addr()).await;
    client.send_model(WireFormat::OpenAi, true, &[]).await;
    let head = client.read_head().await.unwrap();
    assert_eq!(head.status, 200);
    let body = b"e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n";
    assert_eq!(client.read_exactly(body.len()).await, body);
}

// 4. Heads a client must refuse.

#[tokio::test]
async fn bad_head_sends_its_head_then_closes() {
    let usual = |wire, seq| format!("content-type: application/json\r\ncontent-length: 0\r\n{}", id_line(wire, seq));
    for shape in BadHead::ALL {
        let server = serve(Step::bad_head(shape)).await;
        let mut seq = 0;
        for wire in WireFormat::ALL {
            for stream in [true, false] {
                let mut client = Client::connect(server.addr()).await;
                client.send_model(wire, stream, &[]).await;
                let got = client.read_response_rest().await;
                let extra = match shape {
                    BadHead::ManyHeaders => (1..=200).map(|n| format!("x-chaos-{n}: {n}\r\n")).collect(),
                    BadHead::HugeHeader => format!("x-chaos-huge: {}\r\n", "a".repeat(1 << 20)),
                    _ => String::new(),
                };
                let status = if shape == BadHead::GarbageStatus { "abc not-a-status" } else { "200 OK" };
                let expected = format!(
                    "HTTP/1.1 {status}\r\nserver: agentic-chaos\r\n{}{extra}connection: close\r\n\r\n",
                    usual(wire, seq)
                );
                assert!(got == expected, "{shape:?} {wire:?}: {:?}", &got[..got.len().min(300)]);
                seq += 1;
            }
        }
        let kinds: Vec<_> = server.journal().iter().map(|e| e.step.unwrap().kind).collect();
        assert_eq!(kinds, [StepKind::BadHead; 2 * WireFormat::ALL.len()]);
    }
}

// 5. A bare JSON error on an event stream.

#[tokio::test]
async fn bare_json_error_is_one_bare_line_on_a_200_event_stream() {
    let openai = r#"{"error":{"code":"invalid_api_key","message":"Incorrect API key provided: sk-****.","param":null,"type":"invalid_request_error"}}"#;
    let anthropic = r#"{"error":{"message":"invalid x-api-key","type":"authentication_error"},"type":"error"}"#;
    let server = serve(Step::bare_json_error()).await;
    let mut client = Client::connect(server.addr()).await;
    for (wire, line) in [(WireFormat::OpenAi, openai), (WireFormat::Anthropic, anthropic)] {
        for stream in [true, false] {
            let r = client.model(wire, stream).await.response();
            assert_eq!(r.status, 200);
            assert_eq!(r.header("content-type"), Some("text/event-stream; charset=utf-8"));
            assert_eq!((r.header("transfer-encoding"), r.end.clone()), (Some("chunked"), common::End::Clean));
            assert_eq!(r.text(), format!("{line}\n"), "{wire:?} stream {stream}");
        }
    }
    let server =
        serve(Step::bare_json_error().error_type("insufficient_quota").message("").code("quota").header("x-a", "1"))
            .await;
    let r = common::model(server.addr(), WireFormat::OpenAi, true).await.response();
    assert_eq!(r.header("x-a"), Some("1"));
    assert_eq!(
        r.text(),
        "{\"error\":{\"code\":\"quota\",\"message\":\"\",\"param\":null,\"type\":\"insufficient_quota\"}}\n"
    );
    let r = common::model(server.addr(), WireFormat::Anthropic, true).await.response();
    assert_eq!(r.text(), "{\"error\":{\"message\":\"\",\"type\":\"insufficient_quota\"},\"type\":\"error\"}\n");
    assert_eq!(server.journal()[0].step.unwrap().kind, StepKind::BareJsonError);
}

// 6. A stream that starts and then says nothing, not even a ping.

#[tokio::test(start_paused = true)]
async fn hang_after_start_sends_the_opening_event_alone_then_silence() {
    let server = serve(Step::hang().after_start()).await;
    for wire in WireFormat::ALL {
        let mut client = ask(&server, wire, true).await;
        let seq = server.requests_served() - 1;
        let head = client.read_head().await.expect("a head");
        assert_eq!(head.status, 200);
        assert_eq!(head.header("content-type"), Some("text/event-stream; charset=utf-8"));
        let chunk = client.chunk_text().await;
        let (name, data) = match chunk.strip_prefix("event: ") {
            Some(rest) => {
                let (name, data) = rest.split_once("\ndata: ").expect("a data line");
                (Some(name.to_owned()), data)
            }
            None => (None, chunk.strip_prefix("data: ").expect("a data line")),
        };
        let data: Value = serde_json::from_str(data.strip_suffix("\n\n").expect("one event")).unwrap();
        let expected = match wire {
            WireFormat::OpenAi => (
                None,
                json!({
                    "id": format!("chatcmpl-chaos{seq:012}"), "object": "chat.completion.chunk",
                    "created": data["created"], "model": "test-model",
                    "choices": [{"index": 0, "delta": {"role": "assistant"}, "logprobs": null, "finish_reason": null}],
                }),
            ),
            WireFormat::Gemini => (None, gemini_opening(seq)),
            WireFormat::Responses => (
                Some("response.created".to_owned()),
                json!({
                    "type": "response.created", "sequence_number": 0, "response": {
                        "id": format!("resp_chaos{seq:016}"), "object": "response",
                        "created_at": data["response"]["created_at"], "status": "in_progress",
                        "model": "test-model", "output": [], "usage": null, "error": null, "incomplete_details": null,
                    },
                }),
            ),
            _ => message_start(seq),
        };
        assert_eq!((name, data), expected, "{wire:?}: the opening event alone");
        assert!(client.silent_for(SILENCE).await, "{wire:?}: then nothing, not even a ping");
        leave_and_expect_nothing_more(client, &server).await;

        let mut client = ask(&server, wire, false).await;
        let head = client.read_head().await.expect("a head");
        assert_eq!(head.header("content-type"), Some("application/json"));
        assert_eq!(head.header("transfer-encoding"), Some("chunked"));
        let opening = client.chunk_text().await;
        let (start, end) = match wire {
            WireFormat::OpenAi => (r#"{"id":"chatcmpl-chaos"#, r#""model":"test-model","#),
            WireFormat::Gemini => (r#"{"modelVersion":"test-model","#, r#""responseId":"chaos-response-"#),
            WireFormat::Responses => (r#"{"id":"resp_chaos"#, r#""model":"test-model","#),
            _ => (r#"{"id":"msg_chaos"#, r#""model":"test-model","#),
        };
        assert!(opening.starts_with(start) && opening.contains(end) && opening.ends_with(','), "{opening}");
        assert!(client.silent_for(SILENCE).await, "{wire:?} not streamed: then nothing");
        leave_and_expect_nothing_more(client, &server).await;
    }
}

#[tokio::test(start_paused = true)]
async fn hang_after_zero_chunks_still_sends_anthropic_its_block_start_and_ping() {
    let server = serve(Step::hang().after_chunks(0)).await;
    let mut client = ask(&server, WireFormat::Anthropic, true).await;
    client.read_head().await.expect("a head");
    let mut got = Vec::new();
    for _ in 0..3 {
        got.push(client.chunk_text().await.lines().next().unwrap().to_owned());
    }
    assert_eq!(got, ["event: message_start", "event: content_block_start", "event: ping"]);
    assert!(client.silent_for(SILENCE).await);
    leave_and_expect_nothing_more(client, &server).await;
}

// 7. Terminal escapes in error messages.

/// A scenario file whose error messages carry terminal control sequences: a window title, a
/// line erase with a carriage return, a clipboard write (OSC 52).
const ESCAPES: &str = r#"{"steps": [
  {"kind": "http_error", "status": 400, "message": "\u001b]0;title\u0007"},
  {"kind": "sse_error", "after_chunks": 0, "message": "\u001b[2K\rdone"},
  {"kind": "invalid_api_key", "message": "\u001b]52;c;aGVsbG8=\u0007"},
  {"kind": "bare_json_error", "message": "\u001b]0;title\u0007"}
]}"#;

#[tokio::test]
async fn escapes_in_a_message_go_out_as_json_escapes_never_raw() {
    let cases = [
        ("\u{1b}]0;title\u{7}", r"\u001b]0;title\u0007"),
        ("\u{1b}[2K\rdone", r"\u001b[2K\rdone"),
        ("\u{1b}]52;c;aGVsbG8=\u{7}", r"\u001b]52;c;aGVsbG8=\u0007"),
        ("\u{1b}]0;title\u{7}", r"\u001b]0;title\u0007"),
    ];
    for wire in WireFormat::ALL {
        let server = ChaosServer::start(Scenario::from_json_str(ESCAPES).unwrap()).await.unwrap();
        let mut client = Client::connect(server.addr()).await;
        for (i, (message, escaped)) in cases.iter().enumerate() {
            let r = client.model(wire, true).await.response();
            let body = r.text();
            assert!(body.contains(escaped), "{wire:?} step {i}: {body:?}");
            assert!(
                !body.bytes().any(|b| b == 0x1b || b == 0x07 || b == b'\r'),
                "{wire:?} step {i}: a raw control byte"
            );
            // Read back, the JSON holds the message exactly.
            let json = match i {
                1 => common::parse_events(&body).into_iter().rev().find(|e| e.data.contains("error")).unwrap().json(),
                _ => serde_json::from_str(body.trim_end()).unwrap(),
            };
            // A failed response (Responses) carries its error in the response.
            let sent = json.pointer("/error/message").or_else(|| json.pointer("/response/error/message"));
            assert_eq!(sent.and_then(Value::as_str), Some(*message), "{wire:?} step {i}");
        }
    }
}

// A real client (reqwest, over hyper) against the new faults.

async fn reqwest_post(url: &str) -> reqwest::Result<reqwest::Response> {
    let client = agentic_test_support::http::client();
    client.post(url).header("content-type", "application/json").body(common::body(true)).send().await
}

#[tokio::test]
async fn a_real_client_refuses_every_bad_head() {
    for shape in BadHead::ALL {
        let server = serve(Step::bad_head(shape)).await;
        let err = reqwest_post(&format!("{}/chat/completions", server.openai_base_url())).await.unwrap_err();
        assert!(!err.is_status() && !err.is_redirect(), "{shape:?}: no response at all: {err:?}");
        assert_eq!(server.requests_served(), 1, "{shape:?}");
    }
}

#[tokio::test]
async fn a_real_client_follows_a_redirect_loop_until_its_own_limit() {
    let server = ChaosServer::start(Scenario::new().then_times(50, Step::redirect())).await.unwrap();
    let err = reqwest_post(&format!("{}/v1/messages", server.anthropic_base_url())).await.unwrap_err();
    assert!(err.is_redirect(), "{err:?}");
    let journal = server.journal();
    assert!(journal.len() > 1, "the client came back to the same URL");
    assert!(journal.iter().all(|e| e.path == "/v1/messages" && e.method == "POST" && e.stream == Some(true)));
}
