//! A tiny raw-TCP HTTP server for the provider tests: it reads each request and writes scripted raw
//! bytes (status lines, headers, SSE bodies in chosen pieces), closing or stalling where told.
//! It binds 127.0.0.1 port 0 and stops when dropped.
#![allow(dead_code)] // each test file uses part of it

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentic_runtime::exec;
use agentic_runtime::message::AssistantMessage;
use agentic_runtime::message::Message;
use agentic_runtime::provider::ModelError;
use agentic_runtime::provider::{Provider, Request, ResponseSchema, StreamEvent};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// The canary key: it must never appear in any error, Debug output or text.
pub const CANARY: &str = "sk-canary-SECRET123";

/// One piece of a scripted answer.
#[derive(Debug, Clone)]
pub enum Part {
    /// Bytes, written and flushed on their own.
    Bytes(Vec<u8>),
    /// Never write again and never close (the client's timeout ends it).
    Hang,
}

/// The bytes written for one request; the connection closes after the last part.
#[derive(Debug, Clone, Default)]
pub struct Reply(pub Vec<Part>);

const SSE_HEAD: &str = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n";

impl Reply {
    /// A complete chunked SSE response, each piece in its own chunk (and its own write).
    pub fn sse<B: AsRef<[u8]>>(pieces: impl IntoIterator<Item = B>) -> Self {
        let mut reply = Self::chunked_head();
        for piece in pieces {
            reply.push_chunk(piece.as_ref());
        }
        reply.0.push(Part::Bytes(b"0\r\n\r\n".to_vec()));
        reply
    }

    /// A chunked SSE response whose body is `stream` written one byte per chunk.
    pub fn sse_bytewise(stream: &str) -> Self {
        Self::sse(stream.as_bytes().chunks(1))
    }

    /// A chunked SSE response that drops after `pieces`: the connection closes without the final
    /// chunk, so the body breaks mid-way.
    pub fn sse_dropped<B: AsRef<[u8]>>(pieces: impl IntoIterator<Item = B>) -> Self {
        let mut reply = Self::chunked_head();
        for piece in pieces {
            reply.push_chunk(piece.as_ref());
        }
        reply
    }

    /// A chunked SSE response that stalls after `pieces`: no more bytes, the connection open.
    pub fn sse_stalled<B: AsRef<[u8]>>(pieces: impl IntoIterator<Item = B>) -> Self {
        let mut reply = Self::sse_dropped(pieces);
        reply.0.push(Part::Hang);
        reply
    }

    /// An SSE response delimited by the connection's close (no length, not chunked): the body
    /// ends cleanly wherever the pieces end.
    pub fn sse_until_close<B: AsRef<[u8]>>(pieces: impl IntoIterator<Item = B>) -> Self {
        let mut parts = vec![Part::Bytes(format!("{SSE_HEAD}connection: close\r\n\r\n").into_bytes())];
        parts.extend(pieces.into_iter().map(|piece| Part::Bytes(piece.as_ref().to_vec())));
        Self(parts)
    }

    /// A complete response with `status`, extra `headers` and `body`.
    pub fn status(status: u16, headers: &[(&str, &str)], body: impl AsRef<[u8]>) -> Self {
        let body = body.as_ref();
        let mut head = format!("HTTP/1.1 {status} Scripted\r\ncontent-length: {}\r\nconnection: close\r\n", body.len());
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        Self(vec![Part::Bytes(head.into_bytes()), Part::Bytes(body.to_vec())])
    }

    /// Closes the connection before writing anything.
    pub fn close() -> Self {
        Self(Vec::new())
    }

    /// Never answers.
    pub fn hang() -> Self {
        Self(vec![Part::Hang])
    }

    fn chunked_head() -> Self {
        Self(vec![Part::Bytes(
            format!("{SSE_HEAD}transfer-encoding: chunked\r\nconnection: close\r\n\r\n").into_bytes(),
        )])
    }

    fn push_chunk(&mut self, piece: &[u8]) {
        if piece.is_empty() {
            return;
        }
        let mut chunk = format!("{:x}\r\n", piece.len()).into_bytes();
        chunk.extend_from_slice(piece);
        chunk.extend_from_slice(b"\r\n");
        self.0.push(Part::Bytes(chunk));
    }
}

/// A request as the server read it.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// `POST`.
    pub method: String,
    /// `/v1/chat/completions`.
    pub path: String,
    /// The headers, names in lower case.
    pub headers: Vec<(String, String)>,
    /// The body, parsed as JSON (`Null` when it is not JSON).
    pub body: serde_json::Value,
    /// The raw request, head and body.
    pub raw: String,
}

impl Recorded {
    /// The value of header `name`.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(key, _)| key == name).map(|(_, value)| value.as_str())
    }
}

/// The server: answers the n-th connection with the n-th reply (a 500 when they run out).
pub struct Server {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<Recorded>>>,
    task: JoinHandle<()>,
}

impl Server {
    /// Starts a server with `replies`.
    pub async fn start(replies: impl IntoIterator<Item = Reply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local address");
        let requests = Arc::new(Mutex::new(Vec::new()));
        let replies: Vec<Reply> = replies.into_iter().collect();
        let record = Arc::clone(&requests);
        let task = tokio::spawn(async move {
            let mut replies = replies.into_iter();
            loop {
                let Ok((socket, _)) = listener.accept().await else { return };
                let reply = replies.next().unwrap_or_else(|| Reply::status(500, &[], "no scripted reply left"));
                tokio::spawn(serve(socket, reply, Arc::clone(&record)));
            }
        });
        Self { addr, requests, task }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The requests read so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(mut socket: TcpStream, reply: Reply, record: Arc<Mutex<Vec<Recorded>>>) {
    socket.set_nodelay(true).ok();
    let Some(request) = read_request(&mut socket).await else { return };
    record.lock().unwrap().push(request);
    for part in reply.0 {
        match part {
            Part::Bytes(bytes) => {
                if socket.write_all(&bytes).await.is_err() || socket.flush().await.is_err() {
                    return;
                }
                tokio::task::yield_now().await;
            }
            Part::Hang => std::future::pending::<()>().await,
        }
    }
    socket.shutdown().await.ok();
}

async fn read_request(socket: &mut TcpStream) -> Option<Recorded> {
    let mut raw = Vec::new();
    let mut buffer = [0u8; 4096];
    let head_end = loop {
        if let Some(end) = raw.windows(4).position(|window| window == b"\r\n\r\n") {
            break end + 4;
        }
        let read = socket.read(&mut buffer).await.ok()?;
        if read == 0 {
            return None;
        }
        raw.extend_from_slice(&buffer[..read]);
    };
    let head = String::from_utf8_lossy(&raw[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split(' ');
    let (method, path) = (request_line.next()?.to_owned(), request_line.next()?.to_owned());
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(name, _)| name == "content-length")
        .and_then(|(_, value)| value.parse().ok())
        .unwrap_or(0);
    while raw.len() < head_end + length {
        let read = socket.read(&mut buffer).await.ok()?;
        if read == 0 {
            return None;
        }
        raw.extend_from_slice(&buffer[..read]);
    }
    let body = serde_json::from_slice(&raw[head_end..head_end + length]).unwrap_or(serde_json::Value::Null);
    Some(Recorded { method, path, headers, body, raw: String::from_utf8_lossy(&raw).into_owned() })
}

/// One call through `exec::call_once` (as the session layer makes it), with the request's timeout.
pub async fn call(provider: &dyn Provider, timeout: Option<Duration>) -> AssistantMessage {
    let history = [Message::user("What is the answer?")];
    let mut request = Request::new(&history);
    request.system = Some("Answer briefly.");
    request.timeout = timeout;
    request.call = 3;
    exec::call_once(provider, &request, None).await.expect("not a programming error")
}

/// The events of one call, straight from the provider (what `exec::call_once` reads).
pub async fn events(provider: &dyn Provider) -> Vec<Result<StreamEvent, ModelError>> {
    use futures_util::StreamExt as _;
    let history = [Message::user("What is the answer?")];
    let request = Request::new(&history);
    provider.stream(&request).collect().await
}

/// One call through `exec::call_once` whose answer must follow `schema`.
pub async fn schema_call(provider: &dyn Provider, schema: &ResponseSchema) -> AssistantMessage {
    let history = [Message::user("What is the answer? Answer in JSON.")];
    let mut request = Request::new(&history);
    request.schema = Some(schema);
    exec::call_once(provider, &request, None).await.expect("not a programming error")
}

/// The answering model a call's events named, if any.
pub fn model_of(events: &[Result<StreamEvent, ModelError>]) -> Option<&str> {
    events.iter().find_map(|event| match event {
        Ok(StreamEvent::Model(model)) => Some(model.as_str()),
        _ => None,
    })
}

/// Asserts that the canary key appears in no text, Debug output or typed fact of `message`.
pub fn assert_no_canary(message: &AssistantMessage) {
    let everything = format!(
        "{message:?} {} {}",
        message.error_text(),
        message.error.as_ref().map(|error| format!("{error} {error:?} {:?}", error.code())).unwrap_or_default()
    );
    assert!(!everything.contains(CANARY) && !everything.contains("SECRET123"), "the key leaked: {everything}");
}
