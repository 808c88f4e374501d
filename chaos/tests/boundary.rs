//! The faults at the trust boundary, over a real socket: redirects, error bodies that stall,
//! 200s that are not answers, heads past a client's limits, a bare JSON error on an event stream,
//! a stream that stops after its opening events, and terminal escapes in error messages.

mod common;

use std::time::Duration;

use agentic_chaos::{ChaosServer, NotAnAnswer, Redirect, Scenario, Step, StepKind};
use common::{BOTH, Client, WireFormat, ask, leave_and_expect_nothing_more};
use serde_json::{Value, json};

/// How long a test waits to see that nothing more comes (paused time: instant).
const SILENCE: Duration = Duration::from_secs(60);

async fn serve(step: impl Into<Step>) -> ChaosServer {
    ChaosServer::start(Scenario::new().then_times(100, step)).await.expect("start the server")
}

fn id_header(wire: WireFormat, seq: usize) -> String {
    let name = match wire {
        WireFormat::OpenAi => "x-request-id",
        _ => "request-id",
    };
    format!("{name}: req_chaos{seq:012}")
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
    for wire in BOTH {
        for stream in [true, false] {
            let mut client = Client::connect(server.addr()).await;
            client.send_model(wire, stream, &[]).await;
            let expected = format!(
                "HTTP/1.1 307 Temporary Redirect\r\nserver: agentic-chaos\r\nlocation: http://{}{}\r\n\
                 content-length: 0\r\n{}\r\n\r\n",
                server.addr(),
                wire.path(),
                id_header(wire, seq)
            );
            assert_eq!(raw_head(&mut client).await, expected, "{wire:?} stream {stream}");
            seq += 1;
        }
    }
    let kinds: Vec<_> = server.journal().iter().map(|e| e.step.unwrap().kind).collect();
    assert_eq!(kinds, [StepKind::Redirect; 4]);
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
        for wire in BOTH {
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
        for wire in BOTH {
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
        (NotAnAnswer::NoChoices, _) => Ok(json!({
            "id": format!("msg_chaos{seq:016}"), "type": "message", "role": "assistant", "model": "test-model",
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 0},
        })),
        (NotAnAnswer::ModelsList, _) => {
            Ok(json!({"object": "list", "data": [{"id": "test-model", "object": "model", "owned_by": "chaos"}]}))
        }
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
    body.filter_map(|json| serde_json::from_str::<Value>(json).ok()?.get("created").cloned())
        .next()
        .unwrap_or(Value::Null)
}

#[tokio::test]
async fn not_an_answer_sends_each_shape_on_both_wires_streamed_or_not() {
    for shape in NotAnAnswer::ALL {
        let server = serve(Step::not_an_answer(shape)).await;
        let mut client = Client::connect(server.addr()).await;
        let mut seq = 0;
        for wire in BOTH {
            for stream in [true, false] {
                let r = client.model(wire, stream).await.response();
                assert_eq!(r.status, 200);
                let (id_name, id) =
                    id_header(wire, seq).split_once(": ").map(|(n, v)| (n.to_owned(), v.to_owned())).unwrap();
                assert_eq!(r.header(&id_name), Some(id.as_str()));
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
        assert_eq!(kinds, [StepKind::NotAnAnswer; 4], "one keep-alive connection, one step per request");
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
            id_header(WireFormat::Anthropic, 0)
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
