//! The faults that never end or never start: hangs at every point of a response, floods of
//! keep-alives, empty chunks and text, endless bodies, a wrong content type, errors that echo the
//! key. All on paused time: a silence is a timeout that fires, once every byte the server sent
//! has been read.

use crate::common;

use std::time::Duration;

use agentic_chaos::{ChaosServer, EchoKey, Scenario, Step, StepKind, WrongContentType};
use common::{Client, Response, WireFormat, ask, leave_and_expect_nothing_more, wait_for};
use serde_json::{Value, json};

const SILENCE: Duration = Duration::from_secs(60);

async fn serve(step: impl Into<Step>) -> ChaosServer {
    ChaosServer::start(Scenario::new().then_times(100, step)).await.expect("start the server")
}

async fn head_of(client: &mut Client) -> Response {
    client.read_head().await.expect("a response head")
}

fn request_id(seq: usize) -> String {
    format!("req_chaos{seq:012}")
}

/// The request id header's line for request `seq`, if the wire sends one (Google sends none).
fn id_line(wire: WireFormat, seq: usize) -> String {
    let name = match wire {
        WireFormat::OpenAi | WireFormat::Responses => "x-request-id",
        WireFormat::Gemini => return String::new(),
        _ => "request-id",
    };
    format!("{name}: {}\r\n", request_id(seq))
}

/// An SSE event's parts: its `event:` name and its `data:` JSON.
#[track_caller]
fn event(chunk: &str) -> (Option<String>, Value) {
    let body = chunk.strip_suffix("\n\n").unwrap_or_else(|| panic!("{chunk:?} ends an event"));
    let (name, data) = match body.split_once('\n') {
        Some((line, data)) => (Some(line.strip_prefix("event: ").expect("an event line").to_owned()), data),
        None => (None, body),
    };
    let data = data.strip_prefix("data: ").unwrap_or_else(|| panic!("{chunk:?} has a data line"));
    (name, serde_json::from_str(data).unwrap_or_else(|e| panic!("{data:?} is not JSON: {e}")))
}

/// Reads the events that open an Anthropic stream.
async fn anthropic_preamble(client: &mut Client) {
    for name in ["message_start", "content_block_start", "ping"] {
        assert_eq!(event(&client.chunk_text().await).0.as_deref(), Some(name));
    }
}

/// Reads the Responses events before the first text piece.
async fn responses_preamble(client: &mut Client) {
    for name in
        ["response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"]
    {
        assert_eq!(event(&client.chunk_text().await).0.as_deref(), Some(name));
    }
}

// 1. Before the headers.

#[tokio::test(start_paused = true)]
async fn hang_before_headers_is_silent_until_the_client_leaves() {
    let server = serve(Step::hang()).await;
    for wire in WireFormat::ALL {
        for stream in [true, false] {
            let mut client = ask(&server, wire, stream).await;
            assert!(client.silent_for(SILENCE).await, "{wire:?} stream {stream}: not a byte");
            leave_and_expect_nothing_more(client, &server).await;
        }
    }
}

// 2. In the headers.

#[tokio::test(start_paused = true)]
async fn hang_in_headers_sends_the_head_without_its_end() {
    let server = serve(Step::hang().in_headers()).await;
    for wire in WireFormat::ALL {
        let mut client = ask(&server, wire, true).await;
        let expected = format!(
            "HTTP/1.1 200 OK\r\nserver: agentic-chaos\r\ncontent-type: text/event-stream; charset=utf-8\r\n\
             cache-control: no-cache\r\ntransfer-encoding: chunked\r\n{}",
            id_line(wire, server.requests_served() - 1)
        );
        let got = client.read_exactly(expected.len()).await;
        assert_eq!(String::from_utf8(got).unwrap(), expected);
        assert!(client.silent_for(SILENCE).await, "{wire:?}: the blank line never comes");
        leave_and_expect_nothing_more(client, &server).await;

        let mut client = ask(&server, wire, false).await;
        let start = "HTTP/1.1 200 OK\r\nserver: agentic-chaos\r\ncontent-type: application/json\r\ncontent-length: ";
        let got = String::from_utf8(client.read_exactly(start.len()).await).unwrap();
        assert_eq!(got, start);
        let rest = match id_line(wire, server.requests_served() - 1) {
            line if line.is_empty() => client.read_until("\r\n").await,
            line => client.read_until(&line).await,
        };
        let length = rest.split("\r\n").next().unwrap();
        assert!(length.parse::<usize>().unwrap() > 100, "the whole answer's length: {rest:?}");
        assert!(client.silent_for(SILENCE).await, "{wire:?}: the blank line never comes");
        leave_and_expect_nothing_more(client, &server).await;
    }
}

// 3. After the headers.

#[tokio::test(start_paused = true)]
async fn hang_after_headers_sends_the_whole_head_and_no_body() {
    let server = serve(Step::hang().after_headers()).await;
    for wire in WireFormat::ALL {
        for stream in [true, false] {
            let mut client = ask(&server, wire, stream).await;
            let head = head_of(&mut client).await;
            assert_eq!(head.status, 200);
            if stream {
                assert_eq!(head.header("content-type"), Some("text/event-stream; charset=utf-8"));
                assert_eq!(head.header("transfer-encoding"), Some("chunked"));
            } else {
                assert_eq!(head.header("content-type"), Some("application/json"));
                assert!(head.header("content-length").unwrap().parse::<usize>().unwrap() > 100);
            }
            assert!(client.silent_for(SILENCE).await, "{wire:?} stream {stream}: no body byte");
            leave_and_expect_nothing_more(client, &server).await;
        }
    }
}

// 4. After some chunks.

#[tokio::test(start_paused = true)]
async fn hang_after_chunks_is_silent_after_k_chunks() {
    let server = serve(Step::hang().after_chunks(2).text("one two three")).await;
    for wire in WireFormat::ALL {
        let mut client = ask(&server, wire, true).await;
        assert_eq!(head_of(&mut client).await.status, 200);
        if wire == WireFormat::Anthropic {
            anthropic_preamble(&mut client).await;
        }
        if wire == WireFormat::Responses {
            responses_preamble(&mut client).await;
        }
        let mut text = String::new();
        for _ in 0..2 {
            let (_, data) = event(&client.chunk_text().await);
            let piece = data.pointer("/choices/0/delta/content").or_else(|| data.pointer("/delta/text"));
            let piece = piece.or_else(|| data.pointer("/candidates/0/content/parts/0/text"));
            let piece = piece.or_else(|| data.get("delta").filter(|delta| delta.is_string()));
            text.push_str(piece.and_then(Value::as_str).unwrap());
        }
        assert_eq!(text, "one two ");
        assert!(client.silent_for(SILENCE).await, "{wire:?}: nothing after two chunks");
        leave_and_expect_nothing_more(client, &server).await;
    }
}

// 5. Keep-alives.

#[tokio::test(start_paused = true)]
async fn keep_alive_flood_sends_comments_right_after_the_headers() {
    let server = serve(Step::keep_alive_flood().interval_ms(0)).await;
    for wire in WireFormat::ALL {
        let mut client = ask(&server, wire, true).await;
        let head = head_of(&mut client).await;
        assert_eq!(head.status, 200);
        assert_eq!(head.header("content-type"), Some("text/event-stream; charset=utf-8"));
        for _ in 0..2_000 {
            assert_eq!(client.chunk_text().await, ": keep-alive\n\n");
        }
        drop(client);
        wait_for(|| server.open_connections() == 0, "the flood ending").await;
    }
    let kinds: Vec<StepKind> = server.journal().iter().map(|e| e.step.unwrap().kind).collect();
    assert_eq!(kinds, [StepKind::KeepAliveFlood; WireFormat::ALL.len()]);
}

#[tokio::test(start_paused = true)]
async fn keep_alive_flood_waits_its_interval_between_keep_alives() {
    let server = serve(Step::keep_alive_flood()).await;
    let mut client = ask(&server, WireFormat::OpenAi, true).await;
    head_of(&mut client).await;
    let started = tokio::time::Instant::now();
    for _ in 0..10 {
        assert_eq!(client.chunk_text().await, ": keep-alive\n\n");
    }
    // Nine pauses at least separate the ten. The paused clock can jump to the server's next
    // wake-up before this task sees bytes already sent, so `started` may come a pause late: the
    // bound leaves room for that.
    assert!(started.elapsed() >= Duration::from_millis(5 * agentic_chaos::DEFAULT_INTERVAL_MS));
}

#[tokio::test(start_paused = true)]
async fn keep_alive_flood_pings_anthropic_clients_after_the_first_chunks() {
    let server = serve(Step::keep_alive_flood().ping().after_chunks(1).text("first second").interval_ms(0)).await;
    let mut client = ask(&server, WireFormat::Anthropic, true).await;
    head_of(&mut client).await;
    anthropic_preamble(&mut client).await;
    let (name, data) = event(&client.chunk_text().await);
    assert_eq!(name.as_deref(), Some("content_block_delta"));
    assert_eq!(data["delta"], json!({"type": "text_delta", "text": "first "}));
    for _ in 0..500 {
        assert_eq!(client.chunk_text().await, "event: ping\ndata: {\"type\":\"ping\"}\n\n");
    }

    // OpenAI has no ping event: comments.
    let mut client = ask(&server, WireFormat::OpenAi, true).await;
    head_of(&mut client).await;
    let (_, data) = event(&client.chunk_text().await);
    assert_eq!(data["choices"][0]["delta"], json!({"role": "assistant", "content": "first "}));
    for _ in 0..500 {
        assert_eq!(client.chunk_text().await, ": keep-alive\n\n");
    }
}

#[tokio::test(start_paused = true)]
async fn keep_alive_flood_without_stream_sends_newlines() {
    let server = serve(Step::keep_alive_flood().interval_ms(0)).await;
    for wire in WireFormat::ALL {
        let mut client = ask(&server, wire, false).await;
        let head = head_of(&mut client).await;
        assert_eq!((head.status, head.header("content-type")), (200, Some("application/json")));
        assert_eq!(head.header("transfer-encoding"), Some("chunked"));
        for _ in 0..1_000 {
            assert_eq!(client.chunk_text().await, blank_line());
        }
    }
}

/// What an unpaced flood of blank lines sends per chunk: 1023 blanks and a newline.
fn blank_line() -> String {
    format!("{}\n", " ".repeat(1023))
}

// 6. Empty chunks.

#[tokio::test(start_paused = true)]
async fn empty_chunk_flood_sends_valid_empty_chunks_after_the_first_ones() {
    let server = serve(Step::empty_chunk_flood().after_chunks(1).text("Hi there").interval_ms(0)).await;

    let mut client = ask(&server, WireFormat::OpenAi, true).await;
    head_of(&mut client).await;
    let (_, first) = event(&client.chunk_text().await);
    assert_eq!(first["choices"][0]["delta"], json!({"role": "assistant", "content": "Hi "}));
    for _ in 0..1_000 {
        let (name, chunk) = event(&client.chunk_text().await);
        assert_eq!(name, None);
        assert_eq!(chunk["object"], "chat.completion.chunk");
        assert_eq!(chunk["id"], first["id"]);
        assert_eq!(
            chunk["choices"],
            json!([{"index": 0, "delta": {"content": ""}, "logprobs": null, "finish_reason": null}])
        );
    }

    let mut client = ask(&server, WireFormat::Anthropic, true).await;
    head_of(&mut client).await;
    anthropic_preamble(&mut client).await;
    let (_, first) = event(&client.chunk_text().await);
    assert_eq!(first["delta"]["text"], "Hi ");
    for _ in 0..1_000 {
        let (name, delta) = event(&client.chunk_text().await);
        assert_eq!(name.as_deref(), Some("content_block_delta"));
        assert_eq!(
            delta,
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": ""}})
        );
    }
}

#[tokio::test(start_paused = true)]
async fn empty_chunk_flood_from_the_start_gives_openai_the_role_first() {
    let server = serve(Step::empty_chunk_flood().interval_ms(0)).await;
    let mut client = ask(&server, WireFormat::OpenAi, true).await;
    head_of(&mut client).await;
    let (_, first) = event(&client.chunk_text().await);
    assert_eq!(first["choices"][0]["delta"], json!({"role": "assistant", "content": ""}));
    let (_, second) = event(&client.chunk_text().await);
    assert_eq!(second["choices"][0]["delta"], json!({"content": ""}));
}

// 7. An endless answer.

#[tokio::test(start_paused = true)]
async fn endless_text_keeps_coming_after_a_mebibyte() {
    let server = serve(Step::endless_text().text("all work and no play ").interval_ms(0)).await;
    for wire in WireFormat::ALL {
        let mut client = ask(&server, wire, true).await;
        head_of(&mut client).await;
        if wire == WireFormat::Anthropic {
            anthropic_preamble(&mut client).await;
        }
        if wire == WireFormat::Responses {
            responses_preamble(&mut client).await;
        }
        let (mut received, mut text, mut chunks) = (0, String::new(), 0);
        while received <= 1024 * 1024 {
            let chunk = client.chunk_text().await;
            received += chunk.len();
            let (name, data) = event(&chunk);
            let piece = match wire {
                WireFormat::OpenAi => data["choices"][0]["delta"]["content"].as_str().unwrap().to_owned(),
                WireFormat::Gemini => data["candidates"][0]["content"]["parts"][0]["text"].as_str().unwrap().to_owned(),
                WireFormat::Responses => {
                    assert_eq!(name.as_deref(), Some("response.output_text.delta"));
                    data["delta"].as_str().unwrap().to_owned()
                }
                _ => {
                    assert_eq!(name.as_deref(), Some("content_block_delta"));
                    data["delta"]["text"].as_str().unwrap().to_owned()
                }
            };
            assert!(!piece.is_empty());
            if chunks < 50 {
                text.push_str(&piece);
            }
            chunks += 1;
        }
        assert!(text.starts_with("all work and no play all work and no play all "), "{text}");
        assert!(chunks > 1024 * 1024 / 400, "{chunks} chunks");
        drop(client);
        wait_for(|| server.open_connections() == 0, "the endless answer ending").await;
    }
}

#[tokio::test(start_paused = true)]
async fn endless_text_without_stream_is_a_json_string_that_never_closes() {
    let server = serve(Step::endless_text().text("more ").interval_ms(0)).await;
    for wire in WireFormat::ALL {
        let mut client = ask(&server, wire, false).await;
        let head = head_of(&mut client).await;
        assert_eq!((head.status, head.header("content-type")), (200, Some("application/json")));
        let opening = client.chunk_text().await;
        let expected = match wire {
            WireFormat::OpenAi => {
                r#""model":"test-model","choices":[{"index":0,"message":{"role":"assistant","content":""#
            }
            WireFormat::Gemini => r#"","candidates":[{"index":0,"content":{"role":"model","parts":[{"text":""#,
            WireFormat::Responses => {
                r#""model":"test-model","status":"completed","output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":""#
            }
            _ => r#"","type":"message","role":"assistant","model":"test-model","content":[{"type":"text","text":""#,
        };
        assert!(opening.ends_with(expected), "{opening}");
        let mut body = String::new();
        while body.len() < 256 * 1024 {
            body.push_str(&client.chunk_text().await);
        }
        assert!(body.starts_with(&"more ".repeat(1000)), "the text over and over");
    }
}

// 8. An error whose body never ends.

#[tokio::test(start_paused = true)]
async fn http_error_with_an_endless_body_never_ends() {
    let wires = WireFormat::ALL.len();
    let scenario = Scenario::from_json_str(&format!(
        r#"{{"steps": [{{"kind": "http_error", "status": 503, "endless_body": true, "interval_ms": 0, "times": {wires}}}]}}"#,
    ))
    .unwrap();
    assert_eq!(scenario, Scenario::new().then_times(wires as u32, Step::http_error(503).endless_body().interval_ms(0)));
    let server = ChaosServer::start(scenario).await.unwrap();
    for wire in WireFormat::ALL {
        let mut client = ask(&server, wire, true).await;
        let head = head_of(&mut client).await;
        assert_eq!(head.status, 503);
        assert_eq!(head.header("content-type"), Some("application/json"));
        assert_eq!(head.header("transfer-encoding"), Some("chunked"));
        assert_eq!(head.header("content-length"), None);
        let error: Value = serde_json::from_str(&client.chunk_text().await).unwrap();
        assert!(error["error"]["message"].as_str().is_some(), "the provider's body first: {error}");
        for _ in 0..2_000 {
            assert_eq!(client.chunk_text().await, blank_line());
        }
    }
}

// 9. A JSON body that never ends.

#[tokio::test(start_paused = true)]
async fn endless_json_opens_an_object_then_sends_whitespace() {
    let server = serve(Step::endless_json().interval_ms(0)).await;
    for wire in WireFormat::ALL {
        for stream in [true, false] {
            let mut client = ask(&server, wire, stream).await;
            let seq = server.requests_served() - 1;
            let head = head_of(&mut client).await;
            assert_eq!((head.status, head.header("content-type")), (200, Some("application/json")));
            assert_eq!(head.header("transfer-encoding"), Some("chunked"));
            let opening = client.chunk_text().await;
            match wire {
                WireFormat::OpenAi => {
                    assert!(opening.starts_with(&format!(
                        r#"{{"id":"chatcmpl-chaos{seq:012}","object":"chat.completion","created":"#
                    )));
                    assert!(opening.ends_with(r#","model":"test-model","#), "{opening}");
                }
                WireFormat::Gemini => assert_eq!(
                    opening,
                    format!(r#"{{"modelVersion":"test-model","responseId":"chaos-response-{seq:012}","#)
                ),
                WireFormat::Responses => {
                    let start = format!(r#"{{"id":"resp_chaos{seq:016}","object":"response","created_at":"#);
                    assert!(opening.starts_with(&start) && opening.ends_with(r#","model":"test-model","#), "{opening}");
                }
                _ => assert_eq!(
                    opening,
                    format!(r#"{{"id":"msg_chaos{seq:016}","type":"message","role":"assistant","model":"test-model","#)
                ),
            }
            for _ in 0..1_000 {
                assert_eq!(client.chunk_text().await, blank_line());
            }
        }
    }
}

#[tokio::test(start_paused = true)]
async fn endless_json_with_a_long_interval_stalls_after_the_opening() {
    let server = serve(Step::endless_json().interval_ms(3_600_000)).await;
    let mut client = ask(&server, WireFormat::Anthropic, false).await;
    head_of(&mut client).await;
    assert!(client.chunk_text().await.starts_with(r#"{"id":"msg_chaos"#));
    assert!(client.silent_for(SILENCE).await);
    leave_and_expect_nothing_more(client, &server).await;
}

// 10. Not an event stream.

#[tokio::test]
async fn wrong_content_type_sends_a_login_page() {
    let server = ChaosServer::start(
        Scenario::new()
            .then_times(2 * WireFormat::ALL.len() as u32, Step::wrong_content_type())
            .then(Step::wrong_content_type().content_type("text/plain").body("upstream said no")),
    )
    .await
    .unwrap();
    for wire in WireFormat::ALL {
        for stream in [true, false] {
            let r = common::model(server.addr(), wire, stream).await.response();
            assert_eq!(r.status, 200);
            assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
            assert_eq!(r.text(), WrongContentType::DEFAULT_BODY);
            assert!(r.text().starts_with("<!DOCTYPE html>\n<html><head><title>Sign in</title>"));
            assert!(r.text().contains(r#"<input name="password" type="password">"#));
        }
    }
    let r = common::model(server.addr(), WireFormat::OpenAi, true).await.response();
    assert_eq!((r.header("content-type"), r.text().as_str()), (Some("text/plain"), "upstream said no"));
}

// 11. Errors that echo the key.

const KEY: &str = "sk-ant-api03-CANARYabcdefgh";

fn key_header(wire: WireFormat) -> (&'static str, String) {
    match wire {
        WireFormat::OpenAi | WireFormat::Responses => ("authorization", format!("Bearer {KEY}")),
        _ => ("x-api-key", KEY.to_owned()),
    }
}

async fn error_message(server: &ChaosServer, wire: WireFormat, stream: bool, with_key: bool) -> String {
    let (name, value) = key_header(wire);
    let headers: &[(&str, &str)] = if with_key { &[(name, &value)] } else { &[] };
    let mut client = Client::connect(server.addr()).await;
    client.send_model(wire, stream, headers).await;
    let r = client.read_response().await.response();
    let body =
        if r.header("content-type") == Some("application/json") { r.json() } else { r.events().last().unwrap().json() };
    // A failed response (Responses) carries its error in the response.
    let message = body.pointer("/error/message").or_else(|| body.pointer("/response/error/message"));
    message.and_then(Value::as_str).unwrap().to_owned()
}

#[tokio::test]
async fn errors_echo_the_fragment_of_the_key_they_are_told_to() {
    let cases = [
        (EchoKey::Whole, KEY),
        (EchoKey::First12, "sk-ant-api03"),
        (EchoKey::Last12, "NARYabcdefgh"),
        (EchoKey::WithoutPrefix, "ant-api03-CANARYabcdefgh"),
    ];
    for (echo, fragment) in cases {
        assert_eq!(echo.fragment(KEY), fragment);
        let server = serve(Step::http_error(401).message("Invalid key:").echo_key(echo)).await;
        for wire in WireFormat::ALL {
            assert_eq!(error_message(&server, wire, true, true).await, format!("Invalid key: {fragment}"));
            assert_eq!(error_message(&server, wire, false, false).await, "Invalid key:", "no key, no echo");
        }
        let server = serve(Step::sse_error(1).message("").echo_key(echo)).await;
        for wire in WireFormat::ALL {
            assert_eq!(error_message(&server, wire, true, true).await, fragment, "{wire:?} streamed event");
        }
    }
    let server = serve(Step::invalid_api_key().echo_key(EchoKey::Last12)).await;
    assert_eq!(error_message(&server, WireFormat::Anthropic, false, true).await, "invalid x-api-key NARYabcdefgh");
}

#[tokio::test]
async fn a_custom_body_gets_the_fragment_appended_and_the_journal_keeps_no_trace() {
    let server = serve(Step::http_error(403).body("<html>denied</html>").echo_key(EchoKey::WithoutPrefix)).await;
    let mut client = Client::connect(server.addr()).await;
    let (name, value) = key_header(WireFormat::OpenAi);
    client.send_model(WireFormat::OpenAi, false, &[(name, &value)]).await;
    let r = client.read_response().await.response();
    assert_eq!(r.text(), "<html>denied</html> ant-api03-CANARYabcdefgh");

    let journal = client.request("GET", "/_chaos/journal", &[], "").await.response().text();
    assert!(journal.contains(r#""auth":true"#), "{journal}");
    let debug = format!("{:?}", server.journal());
    for trace in [journal, debug] {
        assert!(!trace.contains("CANARY") && !trace.contains("api03"), "{trace}");
    }
}

// 12. A Retry-After no clock can hold.

#[tokio::test]
async fn retry_after_sends_values_too_large_for_any_clock() {
    let json = r#"{"steps": [
        {"kind": "http_error", "status": 429, "retry_after": "1e300"},
        {"kind": "http_error", "status": 429, "retry_after": "99999999999999999999999"},
        {"kind": "http_error", "status": 429, "retry_after": "007"}
    ]}"#;
    let scenario = Scenario::from_json_str(json).unwrap();
    assert_eq!(Scenario::from_json_str(&scenario.to_json()).unwrap(), scenario, "strings stay strings");
    let server = ChaosServer::start(scenario).await.unwrap();
    for expected in ["1e300", "99999999999999999999999", "007"] {
        let r = common::model(server.addr(), WireFormat::OpenAi, true).await.response();
        assert_eq!((r.status, r.header("retry-after")), (429, Some(expected)));
    }
}

// Floods end with their client, and with the server.

#[tokio::test(start_paused = true)]
async fn every_flood_ends_when_its_client_hangs_up_even_unread() {
    let floods: [Step; 6] = [
        Step::keep_alive_flood().interval_ms(0).into(),
        Step::empty_chunk_flood().interval_ms(0).into(),
        Step::endless_text().interval_ms(0).into(),
        Step::endless_json().into(),
        Step::http_error(500).endless_body().into(),
        Step::ok("abc").chunks(u32::MAX).into(),
    ];
    for flood in floods {
        let server = ChaosServer::start(Scenario::new().then_times(2, flood.clone())).await.unwrap();
        // One client reads a little, the other nothing at all: the server blocks on its writes.
        let mut reader = ask(&server, WireFormat::Anthropic, true).await;
        head_of(&mut reader).await;
        reader.read_exactly(1024).await;
        let idle = ask(&server, WireFormat::OpenAi, true).await;
        assert_eq!(server.open_connections(), 2);
        drop(reader);
        drop(idle);
        wait_for(|| server.open_connections() == 0, &format!("{:?} ending", flood.kind())).await;
        let r = common::model(server.addr(), WireFormat::OpenAi, false).await.response();
        assert_eq!(r.status, 200, "the server goes on serving");
    }
}

#[tokio::test(start_paused = true)]
async fn a_flood_ends_when_the_server_stops() {
    let server = serve(Step::endless_text().interval_ms(0)).await;
    let _idle = ask(&server, WireFormat::OpenAi, true).await;
    let mut reader = ask(&server, WireFormat::Anthropic, true).await;
    head_of(&mut reader).await;
    server.shutdown().await;
    let rest = reader.read_response_rest().await;
    assert!(!rest.contains("message_stop"), "cut, never finished");
}

#[tokio::test(start_paused = true)]
async fn a_huge_chunk_count_from_rust_is_served_without_allocating_it() {
    let server = serve(Step::ok("abc").chunks(u32::MAX)).await;
    let r = common::model(server.addr(), WireFormat::OpenAi, false).await.response();
    assert_eq!(r.json()["choices"][0]["message"]["content"], "abc");
    assert_eq!(r.json()["usage"]["completion_tokens"], u64::from(u32::MAX));

    let mut client = ask(&server, WireFormat::OpenAi, true).await;
    head_of(&mut client).await;
    let mut pieces = Vec::new();
    for _ in 0..1_000 {
        let (_, chunk) = event(&client.chunk_text().await);
        pieces.push(chunk["choices"][0]["delta"]["content"].as_str().unwrap().to_owned());
    }
    assert_eq!(pieces[..4], ["a", "b", "c", ""]);
    assert!(pieces[3..].iter().all(String::is_empty));
}
