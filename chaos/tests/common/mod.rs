//! A raw HTTP/1.1 client that reports exactly what came over the wire: the head, the body, and
//! whether the body ended cleanly (per its framing) or was cut.
#![allow(dead_code)]

use std::net::SocketAddr;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

pub use agentic_chaos::WireFormat;

/// How a response's body ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    /// As its framing says: the last chunk, or `content-length` bytes.
    Clean,
    /// The connection closed before the body was complete.
    Cut,
}

/// A response, or a connection closed before any.
#[derive(Debug)]
pub enum Outcome {
    Response(Response),
    ClosedBeforeHeaders,
}

impl Outcome {
    #[track_caller]
    pub fn response(self) -> Response {
        match self {
            Self::Response(r) => r,
            Self::ClosedBeforeHeaders => panic!("the server closed the connection before the headers"),
        }
    }
}

#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub end: End,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8(self.body.clone()).expect("the body is UTF-8")
    }

    #[track_caller]
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("the body is JSON")
    }

    pub fn events(&self) -> Vec<Event> {
        parse_events(&self.text())
    }
}

/// One SSE event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub event: Option<String>,
    pub data: String,
}

impl Event {
    #[track_caller]
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data).unwrap_or_else(|e| panic!("event data {:?} is not JSON: {e}", self.data))
    }
}

/// The events of an SSE body; comment lines (`: ...`) are skipped, as a client skips them.
pub fn parse_events(text: &str) -> Vec<Event> {
    let mut events = Vec::new();
    for block in text.split("\n\n").filter(|b| !b.trim().is_empty()) {
        let mut event = None;
        let mut data = Vec::new();
        for line in block.lines() {
            if let Some(name) = line.strip_prefix("event: ") {
                event = Some(name.to_owned());
            } else if let Some(d) = line.strip_prefix("data: ") {
                data.push(d);
            } else if !line.starts_with(':') {
                panic!("unexpected SSE line {line:?}");
            }
        }
        // A block of comments alone is no event: a client skips it.
        if event.is_some() || !data.is_empty() {
            events.push(Event { event, data: data.join("\n") });
        }
    }
    events
}

/// The text `events` carry in `wire`'s format, and whether the answer finished: the wire's own
/// reference reader, fed the events as they came.
pub fn stream_text(wire: WireFormat, events: &[Event]) -> (String, bool) {
    let bytes: String = events
        .iter()
        .map(|e| match &e.event {
            Some(name) => format!("event: {name}\ndata: {}\n\n", e.data),
            None => format!("data: {}\n\n", e.data),
        })
        .collect();
    wire.read_back(bytes.as_bytes())
}

/// The text of a non-streamed answer.
pub fn whole_text(wire: WireFormat, body: &Value) -> String {
    wire.read_back(body.to_string().as_bytes()).0
}

/// A model request body.
pub fn body(stream: bool) -> String {
    format!(
        r#"{{"model":"test-model","max_tokens":64,"messages":[{{"role":"user","content":"hi"}}],"stream":{stream}}}"#
    )
}

/// One connection, possibly used for several requests.
pub struct Client {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Client {
    pub async fn connect(addr: SocketAddr) -> Self {
        Self { stream: TcpStream::connect(addr).await.expect("connect"), buf: Vec::new() }
    }

    pub async fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).await.expect("write the request");
    }

    pub async fn request(&mut self, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Outcome {
        let mut request = format!("{method} {path} HTTP/1.1\r\nhost: chaos.test\r\ncontent-length: {}\r\n", body.len());
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str("\r\n");
        request.push_str(body);
        self.send_raw(request.as_bytes()).await;
        self.read_response().await
    }

    /// POST a model request in `wire`'s format.
    pub async fn model(&mut self, wire: WireFormat, stream: bool) -> Outcome {
        let path = wire.request_path("test-model", stream);
        self.request("POST", &path, &[("content-type", "application/json")], &body(stream)).await
    }

    async fn fill(&mut self) -> usize {
        let mut chunk = [0u8; 8192];
        let n = self.stream.read(&mut chunk).await.unwrap_or(0);
        self.buf.extend_from_slice(&chunk[..n]);
        n
    }

    async fn line(&mut self) -> Option<String> {
        loop {
            if let Some(i) = self.buf.windows(2).position(|w| w == b"\r\n") {
                let line = String::from_utf8(self.buf[..i].to_vec()).unwrap();
                self.buf.drain(..i + 2);
                return Some(line);
            }
            if self.fill().await == 0 {
                return None;
            }
        }
    }

    async fn bytes(&mut self, n: usize) -> Option<Vec<u8>> {
        while self.buf.len() < n {
            if self.fill().await == 0 {
                return None;
            }
        }
        Some(self.buf.drain(..n).collect())
    }

    /// The status and headers of a response (the body stays unread), or `None` if the
    /// connection closed before a status line.
    pub async fn read_head(&mut self) -> Option<Response> {
        let Some(status_line) = self.line().await else {
            assert!(self.buf.is_empty(), "partial status line {:?}", self.buf);
            return None;
        };
        let status: u16 = status_line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("bad status line {status_line:?}"));
        assert!(status_line.starts_with("HTTP/1.1 "), "{status_line}");
        let mut headers = Vec::new();
        loop {
            let line = self.line().await.expect("the head ends");
            if line.is_empty() {
                break;
            }
            let (name, value) = line.split_once(':').expect("a header line");
            headers.push((name.to_ascii_lowercase(), value.trim().to_owned()));
        }
        Some(Response { status, headers, body: Vec::new(), end: End::Clean })
    }

    /// The next chunk of a chunked body; `None` at the last chunk or when the connection closes.
    pub async fn read_chunk(&mut self) -> Option<Vec<u8>> {
        let size_line = self.line().await?;
        let size = usize::from_str_radix(&size_line, 16).expect("a chunk size");
        if size == 0 {
            assert_eq!(self.line().await.as_deref(), Some(""), "no trailers");
            return None;
        }
        let data = self.bytes(size + 2).await?;
        assert_eq!(&data[size..], b"\r\n");
        Some(data[..size].to_vec())
    }

    /// The next chunk as text; panics if the body ended.
    pub async fn chunk_text(&mut self) -> String {
        String::from_utf8(self.read_chunk().await.expect("one more chunk")).expect("a UTF-8 chunk")
    }

    /// Exactly `n` raw bytes; panics if the connection closes first.
    pub async fn read_exactly(&mut self, n: usize) -> Vec<u8> {
        self.bytes(n).await.unwrap_or_else(|| panic!("EOF before {n} bytes"))
    }

    /// Whether nothing arrives for `wait`. On paused time the clock jumps as soon as every task
    /// waits, so call it only once all that the server sent has been read (otherwise the jump
    /// can come before the bytes are seen): it then shows that the server sent nothing more.
    pub async fn silent_for(&mut self, wait: std::time::Duration) -> bool {
        self.buf.is_empty() && tokio::time::timeout(wait, self.fill()).await.is_err()
    }

    /// Send a model request in `wire`'s format with extra headers, without reading the answer.
    pub async fn send_model(&mut self, wire: WireFormat, stream: bool, headers: &[(&str, &str)]) {
        let body = body(stream);
        let path = wire.request_path("test-model", stream);
        let mut request = format!("POST {path} HTTP/1.1\r\nhost: chaos.test\r\ncontent-length: {}\r\n", body.len());
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str("\r\n");
        request.push_str(&body);
        self.send_raw(request.as_bytes()).await;
    }

    pub async fn read_response(&mut self) -> Outcome {
        let Some(mut response) = self.read_head().await else {
            return Outcome::ClosedBeforeHeaders;
        };
        let status = response.status;
        if status == 100 {
            return Box::pin(self.read_response()).await;
        }
        if response.header("transfer-encoding") == Some("chunked") {
            loop {
                let Some(size_line) = self.line().await else {
                    response.end = End::Cut;
                    break;
                };
                let size = usize::from_str_radix(&size_line, 16).expect("a chunk size");
                if size == 0 {
                    assert_eq!(self.line().await.as_deref(), Some(""), "no trailers");
                    break;
                }
                let Some(data) = self.bytes(size + 2).await else {
                    response.body.extend_from_slice(&self.buf);
                    response.end = End::Cut;
                    break;
                };
                assert_eq!(&data[size..], b"\r\n");
                response.body.extend_from_slice(&data[..size]);
            }
        } else if let Some(length) = response.header("content-length") {
            let length: usize = length.parse().unwrap();
            match self.bytes(length).await {
                Some(data) => response.body = data,
                None => {
                    response.body = std::mem::take(&mut self.buf);
                    response.end = End::Cut;
                }
            }
        } else {
            panic!("a response without framing");
        }
        Outcome::Response(response)
    }

    /// Close the sending side, as a client that gives up does.
    pub async fn shutdown_write(&mut self) {
        self.stream.shutdown().await.expect("shut down the write side");
    }

    /// Raw input up to and including `needle`.
    pub async fn read_until(&mut self, needle: &str) -> String {
        loop {
            let text = String::from_utf8_lossy(&self.buf).into_owned();
            if let Some(i) = text.find(needle) {
                let end = i + needle.len();
                self.buf.drain(..end);
                return text[..end].to_owned();
            }
            assert!(self.fill().await > 0, "EOF before {needle:?} in {text:?}");
        }
    }

    /// Raw input until the server closes the connection.
    pub async fn read_response_rest(&mut self) -> String {
        while self.fill().await > 0 {}
        String::from_utf8_lossy(&std::mem::take(&mut self.buf)).into_owned()
    }

    /// Whether the server has closed the connection (reads EOF).
    pub async fn is_closed(&mut self) -> bool {
        self.buf.is_empty() && self.fill().await == 0
    }
}

/// Wait until `done` holds, on paused time: 1 ms at a time, at most 10 000 times.
#[track_caller]
pub fn wait_for(mut done: impl FnMut() -> bool, what: &str) -> impl std::future::Future<Output = ()> {
    let what = what.to_owned();
    async move {
        for _ in 0..10_000 {
            if done() {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        panic!("{what} did not happen within 10 s");
    }
}

/// One request on a fresh connection.
pub async fn model(addr: SocketAddr, wire: WireFormat, stream: bool) -> Outcome {
    Client::connect(addr).await.model(wire, stream).await
}

/// A client that has sent a model request and whose request the server has taken.
pub async fn ask(server: &agentic_chaos::ChaosServer, wire: WireFormat, stream: bool) -> Client {
    ask_with(server, wire, stream, &[]).await
}

/// [`ask`] with extra request headers.
pub async fn ask_with(
    server: &agentic_chaos::ChaosServer,
    wire: WireFormat,
    stream: bool,
    headers: &[(&str, &str)],
) -> Client {
    let before = server.requests_served();
    let mut client = Client::connect(server.addr()).await;
    client.send_model(wire, stream, headers).await;
    wait_for(|| server.requests_served() > before, "the request reaching the server").await;
    client
}

/// The client hangs up its side; the server must close the connection without sending more.
pub async fn leave_and_expect_nothing_more(mut client: Client, server: &agentic_chaos::ChaosServer) {
    client.shutdown_write().await;
    assert_eq!(client.read_response_rest().await, "", "nothing more after the silence");
    wait_for(|| server.open_connections() == 0, "the server letting go of the connection").await;
}
