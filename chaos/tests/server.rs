//! Binding, stopping, routes, HTTP details, and a real HTTP client (reqwest) against the faults.

use crate::common;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use agentic_chaos::{ChaosServer, Scenario, Step, StepKind};
use common::{Client, End, WireFormat, model};
use tokio::net::TcpStream;

#[tokio::test]
async fn binds_loopback_on_a_port_the_system_picks() {
    let a = ChaosServer::start(Scenario::new()).await.unwrap();
    let b = ChaosServer::start(Scenario::new()).await.unwrap();
    assert_eq!(a.addr().ip(), IpAddr::V4(Ipv4Addr::LOCALHOST));
    assert_ne!(a.addr().port(), 0);
    assert_ne!(a.addr().port(), b.addr().port());
    let port = a.addr().port();
    assert_eq!(a.openai_base_url(), format!("http://127.0.0.1:{port}/v1"));
    assert_eq!(a.anthropic_base_url(), format!("http://127.0.0.1:{port}"));
    for wire in WireFormat::ALL {
        // A client posts to its base URL and the rest of the wire's path.
        let url = format!("http://127.0.0.1:{port}{}", wire.request_path("m", true));
        assert!(url.starts_with(&a.base_url(wire)), "{wire:?}: {url} under {}", a.base_url(wire));
        assert_eq!(a.base_url(wire), format!("http://127.0.0.1:{port}{}", wire.base_path()));
    }
}

#[tokio::test]
async fn an_unknown_path_is_a_404_naming_every_route() {
    let server = ChaosServer::start(Scenario::new()).await.unwrap();
    let mut client = Client::connect(server.addr()).await;
    let r = client.request("POST", "/v2/nothing", &[], "{}").await.response();
    assert_eq!(r.status, 404);
    assert_eq!(
        r.json()["error"]["message"],
        "no route for POST /v2/nothing; the chaos server answers POST /v1/chat/completions (OpenAI), \
         POST /v1/messages (Anthropic), POST /v1beta/models/{model}:streamGenerateContent (Gemini) \
         and POST /v1/responses (OpenAI Responses)"
    );
    assert_eq!(server.journal()[0].wire, None);
}

#[test]
fn every_wire_is_named_routed_and_journaled_by_one_name() {
    for wire in WireFormat::ALL {
        assert_eq!(WireFormat::from_name(wire.name()), Some(wire));
        assert_eq!(serde_json::to_value(wire).unwrap(), wire.name(), "the journal's name");
        assert_eq!(WireFormat::from_path(wire.path()), Some(wire));
    }
    let names: Vec<_> = WireFormat::ALL.iter().map(|wire| wire.name()).collect();
    assert_eq!(names[..2], ["openai", "anthropic"], "the first wires keep their place");
    assert_eq!(WireFormat::from_name("nope"), None);
}

#[tokio::test]
async fn start_on_a_taken_port_fails() {
    let a = ChaosServer::start(Scenario::new()).await.unwrap();
    let err = ChaosServer::start_on(a.addr(), Scenario::new()).await.unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::AddrInUse);
    let chosen = ChaosServer::start_on(SocketAddr::from(([127, 0, 0, 1], 0)), Scenario::new()).await.unwrap();
    assert_ne!(chosen.addr().port(), 0);
}

#[tokio::test]
async fn shutdown_closes_the_listener_and_connections() {
    let server = ChaosServer::start(Scenario::new()).await.unwrap();
    let addr = server.addr();
    let mut idle = Client::connect(addr).await;
    assert_eq!(idle.model(WireFormat::OpenAi, true).await.response().status, 200);
    server.shutdown().await;
    assert!(idle.is_closed().await);
    assert!(TcpStream::connect(addr).await.is_err());
}

#[tokio::test]
async fn dropping_the_handle_stops_the_server() {
    let server = ChaosServer::start(Scenario::new()).await.unwrap();
    let addr = server.addr();
    let mut idle = Client::connect(addr).await;
    assert_eq!(idle.model(WireFormat::Anthropic, false).await.response().status, 200);
    drop(server);
    // The aborted task is dropped on the runtime's next turn; this test's runtime has one thread.
    let mut refused = false;
    for _ in 0..100 {
        tokio::task::yield_now().await;
        if TcpStream::connect(addr).await.is_err() {
            refused = true;
            break;
        }
    }
    assert!(refused, "the listener closes after the handle is dropped");
    assert!(idle.is_closed().await);
}

#[tokio::test]
async fn keep_alive_serves_many_requests_on_one_connection() {
    let server = ChaosServer::start(
        Scenario::new().then(Step::http_error(500)).then(Step::truncate(1)).then(Step::sse_error(1)),
    )
    .await
    .unwrap();
    let mut client = Client::connect(server.addr()).await;
    let mut seen = Vec::new();
    for wire in [WireFormat::OpenAi, WireFormat::Anthropic, WireFormat::OpenAi, WireFormat::Anthropic] {
        let r = client.model(wire, true).await.response();
        seen.push((r.status, r.end));
    }
    assert_eq!(seen, [(500, End::Clean), (200, End::Clean), (200, End::Clean), (200, End::Clean)]);
    // `connection: close` is honoured.
    let r = client.request("POST", "/v1/messages", &[("connection", "close")], &common::body(true)).await.response();
    assert_eq!(r.header("connection"), Some("close"));
    assert!(client.is_closed().await);
}

#[tokio::test]
async fn pipelined_requests_are_answered_in_order() {
    let server = ChaosServer::start(Scenario::new().then(Step::http_error(503))).await.unwrap();
    let mut client = Client::connect(server.addr()).await;
    let body = common::body(false);
    let one = format!("POST /v1/messages HTTP/1.1\r\nhost: x\r\ncontent-length: {}\r\n\r\n{body}", body.len());
    client.send_raw(format!("{one}{one}").as_bytes()).await;
    assert_eq!(client.read_response().await.response().status, 503);
    assert_eq!(client.read_response().await.response().status, 200);
}

#[tokio::test]
async fn other_paths_are_404_and_other_methods_405_without_using_a_step() {
    let server = ChaosServer::start(Scenario::new().then(Step::http_error(503))).await.unwrap();
    let mut client = Client::connect(server.addr()).await;
    let r = client.request("POST", "/v1/completions", &[], "{}").await.response();
    assert_eq!(r.status, 404);
    assert!(r.json()["error"]["message"].as_str().unwrap().contains("/v1/messages"));
    let r = client.request("GET", "/v1/messages", &[], "").await.response();
    assert_eq!(r.status, 405);
    assert_eq!(r.header("allow"), Some("POST"));
    let r = client.request("GET", "/_chaos/nothing", &[], "").await.response();
    assert_eq!(r.status, 404);
    // The first step is still unused.
    assert_eq!(client.model(WireFormat::OpenAi, true).await.response().status, 503);
    let journal = server.journal();
    assert_eq!(journal.len(), 3, "404 and 405 are journaled, control routes are not");
    assert_eq!((journal[0].wire, journal[0].step), (None, None));
    assert_eq!(journal[1].wire, Some(WireFormat::Anthropic));
    assert_eq!(journal[1].step, None);
    assert_eq!(journal[2].step.unwrap().kind, StepKind::HttpError);
}

#[tokio::test]
async fn chunked_request_bodies_and_expect_continue_are_understood() {
    let server = ChaosServer::start(Scenario::new()).await.unwrap();
    let mut client = Client::connect(server.addr()).await;
    let body = common::body(true);
    let (a, b) = body.split_at(10);
    let request = format!(
        "POST /v1/messages HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\nexpect: 100-continue\r\n\r\n\
         {:x}\r\n{a}\r\n{:x}\r\n{b}\r\n0\r\n\r\n",
        a.len(),
        b.len()
    );
    client.send_raw(request.as_bytes()).await;
    let r = client.read_response().await.response();
    assert_eq!(r.status, 200);
    assert_eq!(server.journal()[0].stream, Some(true));
    assert_eq!(server.journal()[0].model.as_deref(), Some("test-model"));
}

#[tokio::test]
async fn a_malformed_request_gets_400_and_is_not_journaled() {
    let server = ChaosServer::start(Scenario::new()).await.unwrap();
    let mut client = Client::connect(server.addr()).await;
    client.send_raw(b"THIS IS NOT HTTP\r\n\r\n").await;
    let r = client.read_response().await.response();
    assert_eq!(r.status, 400);
    assert!(client.is_closed().await);
    assert_eq!(server.requests_served(), 0);
}

async fn reqwest_post(url: &str, stream: bool) -> reqwest::Result<reqwest::Response> {
    agentic_test_support::http::client()
        .post(url)
        .header("content-type", "application/json")
        .header("x-api-key", "sk-test")
        .body(common::body(stream))
        .send()
        .await
}

/// Read a reqwest body to its end: the bytes, and the error that ended it, if any.
async fn reqwest_body(mut response: reqwest::Response) -> (String, Option<reqwest::Error>) {
    let mut body = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(bytes)) => body.extend_from_slice(&bytes),
            Ok(None) => return (String::from_utf8(body).unwrap(), None),
            Err(e) => return (String::from_utf8(body).unwrap(), Some(e)),
        }
    }
}

#[tokio::test]
async fn a_real_client_sees_each_fault_as_intended() {
    let server = ChaosServer::start(
        Scenario::new()
            .then(Step::close_before_headers())
            .then(Step::drop_stream(2).text("one two three"))
            .then(Step::truncate(1).text("one two three"))
            .then(Step::http_error(429).retry_after_secs(1))
            .otherwise(Step::ok("all good")),
    )
    .await
    .unwrap();
    let messages = format!("{}/v1/messages", server.anthropic_base_url());
    let completions = format!("{}/chat/completions", server.openai_base_url());

    let err = reqwest_post(&messages, true).await.unwrap_err();
    assert!(!err.is_status(), "no response at all: {err:?}");

    let response = reqwest_post(&completions, true).await.unwrap();
    assert_eq!(response.status(), 200);
    let (body, error) = reqwest_body(response).await;
    assert!(error.is_some(), "a dropped stream is a body error");
    assert!(body.contains("one two ") || body.contains(r#""content":"two ""#));
    assert!(!body.contains("three"));

    let response = reqwest_post(&messages, true).await.unwrap();
    let (body, error) = reqwest_body(response).await;
    assert!(error.is_none(), "a truncated stream ends cleanly: {error:?}");
    assert!(!body.contains("message_stop"));

    let response = reqwest_post(&completions, false).await.unwrap();
    assert_eq!(response.status(), 429);
    assert_eq!(response.headers()["retry-after"], "1");

    let response = reqwest_post(&completions, false).await.unwrap();
    let json: serde_json::Value = serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
    assert_eq!(json["choices"][0]["message"]["content"], "all good");

    let response = reqwest_post(&messages, true).await.unwrap();
    let (body, error) = reqwest_body(response).await;
    assert!(error.is_none());
    let events = common::parse_events(&body);
    assert_eq!(common::stream_text(WireFormat::Anthropic, &events), ("all good".to_owned(), true));
    assert_eq!(server.requests_served(), 6);
    assert!(server.journal().iter().all(|e| e.auth));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_clients_each_get_one_step() {
    let server = ChaosServer::start(Scenario::new().then_times(10, Step::http_error(503))).await.unwrap();
    let addr = server.addr();
    let mut tasks = Vec::new();
    for i in 0..20 {
        let wire = if i % 2 == 0 { WireFormat::OpenAi } else { WireFormat::Anthropic };
        tasks.push(tokio::spawn(async move { model(addr, wire, i % 3 == 0).await.response().status }));
    }
    let mut statuses = Vec::new();
    for task in tasks {
        statuses.push(task.await.unwrap());
    }
    assert_eq!(statuses.iter().filter(|s| **s == 503).count(), 10);
    assert_eq!(statuses.iter().filter(|s| **s == 200).count(), 10);
    let journal = server.journal();
    let seqs: Vec<u64> = journal.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (0..20).collect::<Vec<_>>());
}
