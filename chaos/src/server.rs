//! The server: the listener, the per-connection loop, the routes and the steps at work.

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;

use crate::boundary;
use crate::context;
use crate::http::{self, Conn, ReadError, Request};
use crate::journal::{JournalEntry, StepRef};
use crate::outage;
use crate::rate_limit::{self, Cost, Keys};
use crate::scenario::{Cursor, Scenario};
use crate::step::{
    DEFAULT_TEXT, EndlessText, Hang, HangAt, HttpError, KeepAliveFlood, NotAnAnswer, Pieces, Preset, Redirect, Reply,
    StatedLimit, Step, ToolUse, WrongContentType,
};
use crate::usage::input_tokens;
use crate::wire::{Asked, ErrorParts, Exchange, NotAnAnswerBody, WireFormat};

/// A running chaos server.
///
/// It serves in a tokio task from [`start`](ChaosServer::start) until the handle is dropped or
/// [`shutdown`](ChaosServer::shutdown) is awaited; dropping it closes the listener and every open
/// connection (promptly, on the runtime's next turn), `shutdown` does so before it returns.
///
/// # Examples
///
/// ```
/// use agentic_chaos::{ChaosServer, Scenario, Step, StepKind};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> std::io::Result<()> {
/// let server = ChaosServer::start(Scenario::new().then(Step::http_error(503))).await?;
/// println!("OPENAI_BASE_URL={}", server.openai_base_url()); // http://127.0.0.1:PORT/v1
/// println!("ANTHROPIC_BASE_URL={}", server.anthropic_base_url()); // http://127.0.0.1:PORT
/// // ... point a client at it ...
/// assert_eq!(server.requests_served(), 0);
/// server.shutdown().await;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct ChaosServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
    /// Connections being served.
    open: AtomicUsize,
}

/// Counts a connection as open while it lives.
struct Open<'a>(&'a AtomicUsize);

impl<'a> Open<'a> {
    fn new(open: &'a AtomicUsize) -> Self {
        open.fetch_add(1, Ordering::Relaxed);
        Self(open)
    }
}

impl Drop for Open<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

#[derive(Debug)]
struct State {
    /// When the scenario started: the server's start or its last reset. tokio's clock, so that a
    /// test on paused time can move the server through its outages.
    started: Instant,
    scenario: Scenario,
    cursor: Cursor,
    journal: Vec<JournalEntry>,
    /// The rate limit's buckets, per key.
    rate: Keys,
}

/// What the server decided for a journaled request.
struct Recorded {
    seq: u64,
    /// The step that answers a model request.
    step: Option<Step>,
    /// The rate-limit headers of its answer.
    rate_headers: Vec<(&'static str, String)>,
}

/// The answer to a model request, chosen under the lock.
struct Chosen {
    step: Step,
    at: StepRef,
    over_window: bool,
    rate_headers: Vec<(&'static str, String)>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves plain data behind; keep serving.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn reset(&self, scenario: Option<Scenario>) {
        let mut state = self.lock();
        if let Some(scenario) = scenario {
            state.scenario = scenario;
        }
        state.started = Instant::now();
        state.cursor = Cursor::default();
        state.journal.clear();
        state.rate = Keys::default();
    }

    /// Journal a request (`asked`: what its wire read in it) and, for a model request, take the
    /// step that answers it.
    fn record(&self, request: &Request, wire: Option<WireFormat>, asked: &Asked<'_>) -> Recorded {
        let mut state = self.lock();
        let now = Instant::now();
        let elapsed = now.saturating_duration_since(state.started);
        let at_ms = u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX);
        let seq = state.journal.len() as u64;
        let context_bytes = context::context_bytes(&asked.conversation);
        let chosen = match (wire, request.method.as_str()) {
            (Some(wire), "POST") => {
                let key = rate_key(request, wire);
                Some(choose(&mut state, wire, key.as_deref(), asked, context_bytes, now))
            }
            _ => None,
        };
        let at = chosen.as_ref().map(|chosen| chosen.at);
        state.journal.push(JournalEntry {
            seq,
            at_ms,
            method: request.method.clone(),
            path: request.path.clone(),
            wire,
            stream: wire.map(|_| asked.stream),
            model: asked.model.clone(),
            step: at,
            agentic_call: request.header("x-agentic-call").map(str::to_owned),
            auth: api_key(request, wire).is_some(),
            tools: asked.tools.clone(),
            schema: asked.schema.clone(),
            messages: asked.conversation.messages,
            context_bytes,
            over_window: chosen.as_ref().is_some_and(|chosen| chosen.over_window),
            outage: at.is_some_and(|at| at.is_outage()),
            rate_limited: at.is_some_and(|at| at.is_rate_limited()),
        });
        match chosen {
            Some(Chosen { step, rate_headers, .. }) => Recorded { seq, step: Some(step), rate_headers },
            None => Recorded { seq, step: None, rate_headers: Vec::new() },
        }
    }
}

/// The answer to a model request arriving `now`: an outage's step (a server that is down answers
/// before it reads or counts the request), else the rate limit's 429 when the request does not fit
/// its key's buckets, else the context window's overflow answer, else the next step. Only a
/// request the rate limit admits takes a step, and only one that reaches the rate limit is
/// charged; every one gets the rate-limit headers of the key's buckets, after its charge.
fn choose(
    state: &mut State,
    wire: WireFormat,
    key: Option<&str>,
    asked: &Asked<'_>,
    bytes: usize,
    now: Instant,
) -> Chosen {
    let State { scenario, cursor, rate, started, .. } = state;
    let limit = scenario.rate_limit;
    let mut levels = Vec::new();
    let mut charge = |cost| match &limit {
        Some(limit) => {
            let (verdict, after) = rate.charge(limit, key, now, cost);
            levels = after;
            verdict
        }
        None => Ok(()),
    };
    let (step, at, over_window) = match outage::answer(&scenario.outages, now.saturating_duration_since(*started)) {
        Some((step, at)) => {
            let _ = charge(None);
            (step, at, false)
        }
        None => {
            let fits = scenario.fits(bytes);
            let mut next = cursor.clone();
            let (step, at) = if fits { next.next(scenario) } else { context::overflow_answer() };
            match charge(Some(Cost::of(&step, &asked.conversation))) {
                Err(refusal) => {
                    let (step, at) = refusal.step(wire.rate_limit_headers());
                    (step, at, false)
                }
                Ok(()) => {
                    *cursor = next;
                    (step, at, !fits)
                }
            }
        }
    };
    let rate_headers = rate_limit::headers(wire.rate_limit_headers(), &levels, SystemTime::now());
    Chosen { step, at, over_window, rate_headers }
}

impl ChaosServer {
    /// Start serving `scenario` on 127.0.0.1, on a port the system picks.
    ///
    /// # Errors
    ///
    /// If the socket cannot be bound.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime.
    pub async fn start(scenario: Scenario) -> io::Result<Self> {
        Self::start_on(SocketAddr::from(([127, 0, 0, 1], 0)), scenario).await
    }

    /// Start serving `scenario` on `addr` (port 0: the system picks one). Anything but a loopback
    /// address exposes the server beyond this machine.
    ///
    /// # Errors
    ///
    /// If the socket cannot be bound (e.g. the port is taken).
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime.
    pub async fn start_on(addr: SocketAddr, scenario: Scenario) -> io::Result<Self> {
        let listener = listen(addr)?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                started: Instant::now(),
                scenario,
                cursor: Cursor::default(),
                journal: Vec::new(),
                rate: Keys::default(),
            }),
            open: AtomicUsize::new(0),
        });
        let (stop, stopped) = watch::channel(false);
        let task = tokio::spawn(accept_loop(listener, Arc::clone(&shared), stopped));
        Ok(Self { addr, shared, stop, task })
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The base URL for clients of `wire`: `http://127.0.0.1:PORT` and the wire's
    /// [`base_path`](WireFormat::base_path), the URL its SDK appends its own path to.
    pub fn base_url(&self, wire: WireFormat) -> String {
        format!("http://{}{}", self.addr, wire.base_path())
    }

    /// The base URL for OpenAI-compatible clients, `http://127.0.0.1:PORT/v1`; they POST to
    /// `{base}/chat/completions`.
    pub fn openai_base_url(&self) -> String {
        self.base_url(WireFormat::OpenAi)
    }

    /// The base URL for Anthropic clients, `http://127.0.0.1:PORT`; they POST to
    /// `{base}/v1/messages`.
    pub fn anthropic_base_url(&self) -> String {
        self.base_url(WireFormat::Anthropic)
    }

    /// Every request since the start (or the last reset), in arrival order.
    pub fn journal(&self) -> Vec<JournalEntry> {
        self.shared.lock().journal.clone()
    }

    /// How many requests the journal holds: every request since the start (or the last reset)
    /// except those to `/_chaos/...`.
    pub fn requests_served(&self) -> usize {
        self.shared.lock().journal.len()
    }

    /// How many connections the server holds open right now: a connection stays open while a
    /// response is written (a flood or a hang included) and, between requests, while the client
    /// keeps it alive. A test can wait for it to fall to 0 to see that the server let go of a
    /// client that hung up.
    pub fn open_connections(&self) -> usize {
        self.shared.open.load(Ordering::Relaxed)
    }

    /// Start the scenario over from its first step and clear the journal; the scenario's clock
    /// (the journal's `at_ms`, the [outages](Scenario::with_outage)) starts again at 0.
    pub fn reset(&self) {
        self.shared.reset(None);
    }

    /// Serve `scenario` from its first step on, and clear the journal; its clock (the journal's
    /// `at_ms`, its [outages](Scenario::with_outage)) starts at 0 now.
    pub fn set_scenario(&self, scenario: Scenario) {
        self.shared.reset(Some(scenario));
    }

    /// Stop: close the listener and every connection, then return.
    pub async fn shutdown(mut self) {
        let _ = self.stop.send(true);
        let _ = (&mut self.task).await;
    }
}

impl Drop for ChaosServer {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        // Dropping the accept loop drops its JoinSet, which aborts every connection.
        self.task.abort();
    }
}

/// Connections the kernel may queue before the server accepts them. tokio's `TcpListener::bind`
/// asks for 128, which drops connections when thousands of clients connect at once (a load test).
const BACKLOG: u32 = 4096;

/// A listener on `addr` with a deep accept queue.
fn listen(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = if addr.is_ipv4() { tokio::net::TcpSocket::new_v4()? } else { tokio::net::TcpSocket::new_v6()? };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(BACKLOG)
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>, mut stopped: watch::Receiver<bool>) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let _ = stream.set_nodelay(true);
                    connections.spawn(serve(stream, Arc::clone(&shared)));
                }
                // Out of file descriptors or similar: give the system a moment.
                Err(_) => tokio::time::sleep(Duration::from_millis(5)).await,
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            _ = stopped.changed() => break,
        }
    }
    drop(listener);
    connections.shutdown().await;
}

/// What happens to the connection after a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum After {
    KeepAlive,
    Close,
}

async fn serve(stream: TcpStream, shared: Arc<Shared>) {
    let _open = Open::new(&shared.open);
    let mut conn = Conn::new(stream);
    loop {
        let request = match conn.read_request().await {
            Ok(Some(request)) => request,
            Ok(None) | Err(ReadError::Io) => return,
            Err(ReadError::Bad { status, message }) => {
                let body = generic_error(status, message);
                send_json(&mut conn, status, &body, &[], false);
                let _ = conn.flush().await;
                return;
            }
        };
        let keep_alive = request.keep_alive;
        let after = match respond(&mut conn, &shared, request).await {
            Ok(after) => after,
            Err(_) => After::Close,
        };
        if after == After::Close || !keep_alive || conn.flush().await.is_err() {
            let _ = conn.flush().await;
            return;
        }
    }
}

fn generic_error(status: u16, message: &str) -> String {
    let error_type = match status {
        404 => "not_found_error",
        405 => "method_not_allowed",
        413 => "request_too_large",
        _ => "invalid_request_error",
    };
    json!({"error": {"type": error_type, "message": message}}).to_string()
}

fn send_json(conn: &mut Conn, status: u16, body: &str, headers: &[(&str, &str)], keep_alive: bool) {
    let length = body.len().to_string();
    let mut all = vec![("content-type", "application/json"), ("content-length", length.as_str())];
    all.extend_from_slice(headers);
    conn.send(&http::head(status, &all, keep_alive));
    conn.send(body.as_bytes());
}

async fn respond(conn: &mut Conn, shared: &Shared, request: Request) -> io::Result<After> {
    let keep_alive = request.keep_alive;
    if let Some(control) = request.path.strip_prefix("/_chaos/") {
        control_route(conn, shared, &request, control);
        return Ok(After::KeepAlive);
    }
    let route = WireFormat::route(&request.path);
    let body: Option<Value> = route.as_ref().and_then(|_| serde_json::from_slice(&request.body).ok());
    let wire = route.as_ref().map(|(wire, _)| *wire);
    let asked = match route {
        Some((wire, route)) => wire.render().read(body.as_ref(), route),
        None => Asked::default(),
    };
    let Recorded { seq, step, rate_headers } = shared.record(&request, wire, &asked);
    let (Some(wire), Some(step)) = (wire, step) else {
        let (status, message, allow) = match wire {
            Some(wire) => (405, format!("{} accepts only POST", wire.path()), Some(("allow", "POST"))),
            None => (404, format!("no route for {} {}; {}", request.method, request.path, routes()), None),
        };
        let body = generic_error(status, &message);
        send_json(conn, status, &body, allow.as_slice(), keep_alive);
        return Ok(After::KeepAlive);
    };
    let pinned = step.usage();
    let exchange = Exchange {
        render: wire.render(),
        seq,
        model: asked.model.unwrap_or_else(|| "chaos-model".to_owned()),
        created: SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()),
        input_tokens: input_tokens(&pinned, &asked.conversation),
        usage: pinned,
        usage_asked: asked.usage_asked,
        answer_tool: asked.answer_tool,
        cut_by_token_limit: step.cut_by_token_limit(),
    };
    let api_key = api_key(&request, Some(wire));
    let path = request.path;
    let mut answer = Answer { conn, exchange, stream: asked.stream, keep_alive, api_key, path, rate_headers };
    answer.step(step).await
}

/// The routes the server answers, for the 404 text: "the chaos server answers POST
/// /v1/chat/completions (OpenAI) and POST /v1/messages (Anthropic)".
fn routes() -> String {
    let routes: Vec<String> =
        WireFormat::ALL.iter().map(|wire| format!("POST {} ({})", wire.path(), wire.render().names().label)).collect();
    let text = match routes.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    };
    format!("the chaos server answers {text}")
}

fn control_route(conn: &mut Conn, shared: &Shared, request: &Request, route: &str) {
    let keep_alive = request.keep_alive;
    match (request.method.as_str(), route) {
        ("GET", "journal") => {
            let body = serde_json::to_string(&shared.lock().journal).expect("the journal serializes");
            send_json(conn, 200, &body, &[], keep_alive);
        }
        ("POST", "reset") => {
            let text = String::from_utf8_lossy(&request.body);
            if text.trim().is_empty() {
                shared.reset(None);
            } else {
                match Scenario::from_json_str(&text) {
                    Ok(scenario) => shared.reset(Some(scenario)),
                    Err(e) => {
                        let body = generic_error(400, &e.to_string());
                        send_json(conn, 400, &body, &[], keep_alive);
                        return;
                    }
                }
            }
            send_json(conn, 200, r#"{"reset":true}"#, &[], keep_alive);
        }
        (_, "journal" | "reset") => {
            let body = generic_error(405, "use GET /_chaos/journal and POST /_chaos/reset");
            send_json(conn, 405, &body, &[], keep_alive);
        }
        _ => {
            let body = generic_error(404, "the control routes are GET /_chaos/journal and POST /_chaos/reset");
            send_json(conn, 404, &body, &[], keep_alive);
        }
    }
}

/// A fault in the middle of an answer, after some text chunks.
enum Fault {
    None,
    Drop(u32),
    Truncate(u32),
    SseError(u32, ErrorParts, u16),
    Malformed(u32, String),
    Stall(u32, u64),
    Hang(u32),
    Flood(u32, FloodOf, u64),
}

impl Fault {
    fn after_chunks(&self) -> Option<u32> {
        match self {
            Self::None => None,
            Self::Drop(k)
            | Self::Truncate(k)
            | Self::SseError(k, ..)
            | Self::Malformed(k, _)
            | Self::Stall(k, _)
            | Self::Hang(k)
            | Self::Flood(k, ..) => Some(*k),
        }
    }
}

/// What a flood sends over and over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FloodOf {
    /// Keep-alive comments, or Anthropic pings.
    KeepAlive { ping: bool },
    /// Text chunks with empty text.
    EmptyChunks,
    /// Newlines: JSON whitespace.
    Newlines,
}

/// One model request being answered.
struct Answer<'a> {
    conn: &'a mut Conn,
    exchange: Exchange,
    stream: bool,
    keep_alive: bool,
    /// The request's API key, for an error that echoes a piece of it; never stored beyond the
    /// answer.
    api_key: Option<String>,
    /// The request's path, without its query: where a redirect loop points.
    path: String,
    /// The rate-limit headers every response to the request carries (none without a rate limit).
    rate_headers: Vec<(&'static str, String)>,
}

/// The API key a request carries: in the headers of its own wire first, then in every other
/// wire's (in [`WireFormat::ALL`]'s order), then Azure's `api-key`. `authorization` is read as a
/// bearer token (its value whole when it names another scheme).
fn api_key(request: &Request, wire: Option<WireFormat>) -> Option<String> {
    let own = wire.map_or(&[][..], |wire| wire.render().names().key_headers);
    let others = WireFormat::ALL.into_iter().filter(|other| Some(*other) != wire);
    let names = own.iter().chain(others.flat_map(|other| other.render().names().key_headers)).chain(&["api-key"]);
    let found = names.filter_map(|name| request.header(name).map(|value| (*name, value))).next();
    found.map(|(name, value)| match name {
        "authorization" => {
            let token = value.split_once(' ').filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"));
            token.map_or(value, |(_, token)| token.trim()).to_owned()
        }
        _ => value.to_owned(),
    })
}

/// The key a request's rate limit is counted under: its API key (as [`api_key`] finds it) or its
/// `key` query parameter (Gemini's); `None` (one anonymous key) without either.
fn rate_key(request: &Request, wire: WireFormat) -> Option<String> {
    api_key(request, Some(wire)).or_else(|| request.query_param("key").map(str::to_owned))
}

/// An answer's own headers (its request id, its rate-limit headers) as header pairs.
/// The error object `error` of `e` with the rate limit it states, as OpenRouter sends it: the
/// status as its numeric `code` (unless the step sets one), and the limit in `metadata.headers`.
fn stated_limit(error: &mut serde_json::Value, e: &HttpError, limit: &StatedLimit) {
    let Some(error) = error.as_object_mut() else { return };
    let now_ms = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |since| since.as_millis());
    if e.code.is_none() {
        error.insert("code".to_owned(), serde_json::Value::from(e.status));
    }
    error.insert("metadata".to_owned(), limit.metadata(u64::try_from(now_ms).unwrap_or(u64::MAX)));
}

fn id_header<'a>(id: &'a [(&'static str, String)]) -> impl Iterator<Item = (&'a str, &'a str)> {
    id.iter().map(|(name, id)| (*name, id.as_str()))
}

async fn sleep_ms(ms: u64) {
    if ms > 0 {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
}

/// The text chunks of an endless answer: the non-empty pieces of its text, or of the default
/// text when it has none.
fn non_empty_pieces(reply: &Reply) -> impl Iterator<Item = &str> + '_ {
    let text = if reply.text.is_empty() { DEFAULT_TEXT } else { reply.text.as_str() };
    let pieces = match reply.chunks {
        None => Pieces::words(text),
        Some(n) => Pieces::even(text, n as usize),
    };
    pieces.filter(|piece| !piece.is_empty())
}

/// A string's JSON form without its quotes: what goes between them.
fn json_escaped(text: &str) -> String {
    let quoted = Value::from(text).to_string();
    quoted[1..quoted.len() - 1].to_owned()
}

impl Answer<'_> {
    async fn step(&mut self, step: Step) -> io::Result<After> {
        match step {
            Step::Ok(reply) => self.reply(&reply, Fault::None).await,
            Step::HttpError(e) => self.http_error(&e, Preset::Generic).await,
            Step::ContextOverflow(e) => self.http_error(&e, Preset::ContextOverflow).await,
            Step::InvalidApiKey(e) => self.http_error(&e, Preset::InvalidApiKey).await,
            Step::CloseBeforeHeaders => Ok(After::Close),
            Step::DropStream(i) => self.reply(&i.reply, Fault::Drop(i.after_chunks)).await,
            Step::Truncate(i) => self.reply(&i.reply, Fault::Truncate(i.after_chunks)).await,
            Step::SseError(e) => {
                let mut parts = self.exchange.sse_error_parts(&e);
                if let Some(echo) = e.echo_key {
                    parts.message = echo.append(&parts.message, self.api_key.as_deref());
                }
                let status = e.status.unwrap_or_else(|| self.exchange.status_for_type(&parts.error_type));
                self.reply(&e.reply, Fault::SseError(e.after_chunks, parts, status)).await
            }
            Step::Stall(s) => match s.after_chunks {
                Some(k) => self.reply(&s.reply, Fault::Stall(k, s.ms)).await,
                None => {
                    sleep_ms(s.ms).await;
                    self.reply(&s.reply, Fault::None).await
                }
            },
            Step::Hang(h) => self.hang(&h).await,
            Step::MalformedChunk(m) => {
                let data = m.data.unwrap_or_else(|| self.exchange.default_malformed(m.shape).to_owned());
                self.reply(&m.reply, Fault::Malformed(m.after_chunks, data)).await
            }
            Step::ToolUse(t) => self.tool_use(&t).await,
            Step::KeepAliveFlood(f) => self.keep_alive_flood(&f).await,
            Step::EmptyChunkFlood(f) if self.stream => {
                self.reply(&f.reply, Fault::Flood(f.after_chunks, FloodOf::EmptyChunks, f.interval_ms)).await
            }
            Step::EmptyChunkFlood(f) => self.endless_json(&f.reply.headers, f.interval_ms).await,
            Step::EndlessText(e) => self.endless_text(&e).await,
            Step::EndlessJson(e) => self.endless_json(&e.headers, e.interval_ms).await,
            Step::WrongContentType(w) => {
                self.wrong_content_type(&w);
                Ok(After::KeepAlive)
            }
            Step::Redirect(r) => self.redirect(&r),
            Step::NotAnAnswer(shape) => {
                self.not_an_answer(shape);
                Ok(After::KeepAlive)
            }
            Step::BareJsonError(e) => {
                let line = format!("{}\n", self.exchange.error_json(&self.exchange.bare_json_error_parts(&e)));
                let head = self.stream_head(&e.headers);
                self.conn.send(&head);
                self.conn.send_chunk(line.as_bytes());
                self.conn.send_last_chunk();
                Ok(After::KeepAlive)
            }
            Step::BadHead(shape) => {
                let id = self.request_id();
                let own: Vec<_> = id_header(&id).collect();
                self.conn.send(&boundary::bad_head(shape, &own));
                Ok(After::Close)
            }
        }
    }

    /// The headers every response to the request carries: the request id header (when the wire
    /// sends one) and the rate-limit headers.
    fn request_id(&self) -> Vec<(&'static str, String)> {
        let id = self.exchange.request_id_header();
        id.into_iter().chain(self.rate_headers.iter().cloned()).collect()
    }

    /// The head of a 200 event stream, with chunked framing.
    fn stream_head(&self, extra: &[(String, String)]) -> Vec<u8> {
        let id = self.request_id();
        let mut headers = vec![
            ("content-type", "text/event-stream; charset=utf-8"),
            ("cache-control", "no-cache"),
            ("transfer-encoding", "chunked"),
        ];
        headers.extend(id_header(&id));
        headers.extend(extra.iter().map(|(n, v)| (n.as_str(), v.as_str())));
        http::head(200, &headers, self.keep_alive)
    }

    /// The head of a 200 `application/json` answer: `content-length` when `length` is known,
    /// chunked otherwise.
    fn json_head(&self, length: Option<usize>, extra: &[(String, String)]) -> Vec<u8> {
        let id = self.request_id();
        let length = length.map(|n| n.to_string());
        let mut headers = vec![("content-type", "application/json")];
        match &length {
            Some(length) => headers.push(("content-length", length)),
            None => headers.push(("transfer-encoding", "chunked")),
        }
        headers.extend(id_header(&id));
        headers.extend(extra.iter().map(|(n, v)| (n.as_str(), v.as_str())));
        http::head(200, &headers, self.keep_alive)
    }

    /// The head a reply would have: an event stream, or JSON with the whole body's length.
    fn reply_head(&self, reply: &Reply) -> Vec<u8> {
        if self.stream {
            self.stream_head(&reply.headers)
        } else {
            let body = self.exchange.full_body(&reply.text, reply.chunk_count() as u64);
            self.json_head(Some(body.len()), &reply.headers)
        }
    }

    async fn hang(&mut self, h: &Hang) -> io::Result<After> {
        match h.at {
            HangAt::BeforeHeaders => {}
            HangAt::InHeaders => {
                let head = self.reply_head(&h.reply);
                // Without the blank line that ends the head.
                self.conn.send(&head[..head.len() - 2]);
            }
            HangAt::AfterHeaders => {
                let head = self.reply_head(&h.reply);
                self.conn.send(&head);
            }
            HangAt::AfterStart if self.stream => {
                let head = self.stream_head(&h.reply.headers);
                self.conn.send(&head);
                self.conn.send_chunk(self.exchange.opening().as_bytes());
            }
            HangAt::AfterStart => {
                let head = self.json_head(None, &h.reply.headers);
                self.conn.send(&head);
                self.conn.send_chunk(self.exchange.json_opening().as_bytes());
            }
            HangAt::AfterChunks(k) => return self.reply(&h.reply, Fault::Hang(k)).await,
        }
        self.conn.hang().await;
        Ok(After::Close)
    }

    /// A tool-use answer: streamed events or one JSON body.
    async fn tool_use(&mut self, t: &ToolUse) -> io::Result<After> {
        if self.stream {
            let head = self.stream_head(&t.headers);
            self.conn.send(&head);
            for event in self.exchange.tool_use_events(t) {
                self.conn.send_chunk(event.as_bytes());
                self.conn.flush_if_full().await?;
            }
            self.conn.send_last_chunk();
        } else {
            let body = self.exchange.tool_use_body(t);
            let head = self.json_head(Some(body.len()), &t.headers);
            self.conn.send(&head);
            self.conn.send(body.as_bytes());
        }
        Ok(After::KeepAlive)
    }

    async fn http_error(&mut self, e: &HttpError, preset: Preset) -> io::Result<After> {
        let key = self.api_key.as_deref();
        let body = match &e.body {
            Some(body) => e.echo_key.map_or_else(|| body.clone(), |echo| echo.append(body, key)),
            None => {
                let mut parts = self.exchange.http_error_parts(e, preset);
                if let Some(echo) = e.echo_key {
                    parts.message = echo.append(&parts.message, key);
                }
                let mut body = self.exchange.error_json(&parts);
                if let (Some(limit), Some(error)) = (e.stated_limit, body.get_mut("error")) {
                    stated_limit(error, e, &limit);
                }
                body.to_string()
            }
        };
        let id = self.request_id();
        let length = body.len().to_string();
        let retry_after_ms = e.retry_after_ms.map(|ms| ms.to_string());
        let should_retry = e.should_retry.map(|b| b.to_string());
        let mut headers: Vec<(&str, &str)> = Vec::new();
        if !e.headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("content-type")) {
            headers.push(("content-type", "application/json"));
        }
        match e.endless {
            Some(_) => headers.push(("transfer-encoding", "chunked")),
            None => headers.push(("content-length", &length)),
        }
        headers.extend(id_header(&id));
        if let Some(v) = &e.retry_after {
            headers.push(("retry-after", v));
        }
        if let Some(v) = &retry_after_ms {
            headers.push(("retry-after-ms", v));
        }
        if let Some(v) = &should_retry {
            headers.push(("x-should-retry", v));
        }
        headers.extend(e.headers.iter().map(|(n, v)| (n.as_str(), v.as_str())));
        self.conn.send(&http::head(e.status, &headers, self.keep_alive));
        if let Some(bytes) = e.stall_body_after {
            let sent = usize::try_from(bytes).unwrap_or(usize::MAX).min(body.len());
            self.conn.send(&body.as_bytes()[..sent]);
            self.conn.hang().await;
            return Ok(After::Close);
        }
        let Some(interval_ms) = e.endless else {
            self.conn.send(body.as_bytes());
            return Ok(After::KeepAlive);
        };
        self.conn.send_chunk(body.as_bytes());
        self.flood(FloodOf::Newlines, 0, interval_ms).await
    }

    fn error_response(&mut self, status: u16, parts: &ErrorParts) {
        let body = self.exchange.error_json(parts).to_string();
        let id = self.request_id();
        let headers: Vec<_> = id_header(&id).collect();
        send_json(self.conn, status, &body, &headers, self.keep_alive);
    }

    fn wrong_content_type(&mut self, w: &WrongContentType) {
        let id = self.request_id();
        let length = w.body.len().to_string();
        let mut headers = vec![("content-type", w.content_type.as_str()), ("content-length", &length)];
        headers.extend(id_header(&id));
        headers.extend(w.headers.iter().map(|(n, v)| (n.as_str(), v.as_str())));
        self.conn.send(&http::head(200, &headers, self.keep_alive));
        self.conn.send(w.body.as_bytes());
    }

    /// A redirect with an empty body, to its location or back to the request's own URL.
    fn redirect(&mut self, r: &Redirect) -> io::Result<After> {
        let location = match &r.location {
            Some(url) => url.clone(),
            None => format!("http://{}{}", self.conn.local_addr()?, self.path),
        };
        let id = self.request_id();
        let mut headers = vec![("location", location.as_str()), ("content-length", "0")];
        headers.extend(id_header(&id));
        headers.extend(r.headers.iter().map(|(n, v)| (n.as_str(), v.as_str())));
        self.conn.send(&http::head(r.status, &headers, self.keep_alive));
        Ok(After::KeepAlive)
    }

    /// A 200 that is not an answer: a JSON body, or a stream that ends cleanly.
    fn not_an_answer(&mut self, shape: NotAnAnswer) {
        match self.exchange.not_an_answer(shape) {
            NotAnAnswerBody::Json(body) => {
                let head = self.json_head(Some(body.len()), &[]);
                self.conn.send(&head);
                self.conn.send(body.as_bytes());
            }
            NotAnAnswerBody::Events(events) => {
                let head = self.stream_head(&[]);
                self.conn.send(&head);
                for event in events {
                    self.conn.send_chunk(event.as_bytes());
                }
                self.conn.send_last_chunk();
            }
        }
    }

    async fn keep_alive_flood(&mut self, f: &KeepAliveFlood) -> io::Result<After> {
        let of = FloodOf::KeepAlive { ping: f.ping };
        if !self.stream {
            let head = self.json_head(None, &f.reply.headers);
            self.conn.send(&head);
            return self.flood(FloodOf::Newlines, 0, f.interval_ms).await;
        }
        match f.after_chunks {
            Some(k) => self.reply(&f.reply, Fault::Flood(k, of, f.interval_ms)).await,
            None => {
                let head = self.stream_head(&f.reply.headers);
                self.conn.send(&head);
                self.flood(of, 0, f.interval_ms).await
            }
        }
    }

    /// A 200 `application/json` whose body opens the answer object and then sends newlines.
    async fn endless_json(&mut self, headers: &[(String, String)], interval_ms: u64) -> io::Result<After> {
        let head = self.json_head(None, headers);
        self.conn.send(&head);
        self.conn.send_chunk(self.exchange.json_opening().as_bytes());
        self.flood(FloodOf::Newlines, 0, interval_ms).await
    }

    /// The text's chunks over and over: as stream events, or inside an unclosed JSON string.
    async fn endless_text(&mut self, e: &EndlessText) -> io::Result<After> {
        let interval = Duration::from_millis(e.interval_ms);
        let reply = &e.reply;
        let mut pieces = non_empty_pieces(reply);
        let mut next_piece = move || {
            pieces.next().unwrap_or_else(|| {
                pieces = non_empty_pieces(reply);
                pieces.next().unwrap_or(DEFAULT_TEXT)
            })
        };
        if self.stream {
            let head = self.stream_head(&reply.headers);
            self.conn.send(&head);
            for event in self.exchange.preamble() {
                self.conn.send_chunk(event.as_bytes());
            }
            let exchange = &self.exchange;
            let mut i = 0;
            self.conn
                .flood(interval, |out| {
                    http::chunk_into(out, exchange.chunk(i, next_piece()).as_bytes());
                    i += 1;
                })
                .await;
        } else {
            let head = self.json_head(None, &reply.headers);
            self.conn.send(&head);
            self.conn.send_chunk(self.exchange.text_opening().as_bytes());
            self.conn.flood(interval, |out| http::chunk_into(out, json_escaped(next_piece()).as_bytes())).await;
        }
        Ok(After::Close)
    }

    /// Send `of` over and over until the client leaves; `sent` text chunks came before.
    async fn flood(&mut self, of: FloodOf, sent: usize, interval_ms: u64) -> io::Result<After> {
        /// 1023 blanks and a newline: what an unpaced flood of blank lines sends per chunk.
        const BLANK_LINE: &[u8] = &{
            let mut line = [b' '; 1024];
            line[1023] = b'\n';
            line
        };
        let interval = Duration::from_millis(interval_ms);
        match of {
            FloodOf::KeepAlive { ping } => {
                let event = self.exchange.keep_alive(ping);
                self.conn.flood(interval, |out| http::chunk_into(out, event.as_bytes())).await;
            }
            FloodOf::EmptyChunks => {
                // The first chunk of an OpenAI answer also carries the role.
                let mut first = Some(self.exchange.chunk(sent, ""));
                let rest = self.exchange.chunk(sent.max(1), "");
                self.conn
                    .flood(interval, |out| http::chunk_into(out, first.take().as_ref().unwrap_or(&rest).as_bytes()))
                    .await;
            }
            FloodOf::Newlines => {
                // As fast as the client reads: whole lines of blanks, so that the client spends its
                // time on bytes rather than on the framing of one-byte chunks.
                let piece: &[u8] = if interval.is_zero() { BLANK_LINE } else { b"\n" };
                self.conn.flood(interval, |out| http::chunk_into(out, piece)).await
            }
        }
        Ok(After::Close)
    }

    async fn reply(&mut self, reply: &Reply, fault: Fault) -> io::Result<After> {
        if self.stream { self.stream_reply(reply, fault).await } else { self.whole_reply(reply, fault).await }
    }

    /// A streamed answer: headers, preamble events, text chunks (with the fault after `k` of
    /// them), final events.
    async fn stream_reply(&mut self, reply: &Reply, fault: Fault) -> io::Result<After> {
        let head = self.stream_head(&reply.headers);
        self.conn.send(&head);
        for event in self.exchange.preamble() {
            self.conn.send_chunk(event.as_bytes());
        }
        let count = reply.chunk_count();
        let fault_at = fault.after_chunks().map(|k| (k as usize).min(count));
        for (i, piece) in reply.pieces().enumerate() {
            if fault_at == Some(i) {
                if let Some(after) = self.stream_fault(&fault, i).await? {
                    return Ok(after);
                }
            }
            if reply.chunk_delay_ms > 0 {
                self.conn.flush().await?;
                sleep_ms(reply.chunk_delay_ms).await;
            }
            self.conn.send_chunk(self.exchange.chunk(i, piece).as_bytes());
            self.conn.flush_if_full().await?;
        }
        if fault_at == Some(count) {
            if let Some(after) = self.stream_fault(&fault, count).await? {
                return Ok(after);
            }
        }
        for event in self.exchange.epilogue(count as u64) {
            self.conn.send_chunk(event.as_bytes());
        }
        self.conn.send_last_chunk();
        Ok(After::KeepAlive)
    }

    /// Apply a fault mid-stream, after `sent` chunks; `Some` if the answer ends with it.
    async fn stream_fault(&mut self, fault: &Fault, sent: usize) -> io::Result<Option<After>> {
        match fault {
            Fault::None => Ok(None),
            Fault::Drop(_) => {
                self.conn.flush().await?;
                Ok(Some(After::Close))
            }
            Fault::Truncate(_) => {
                self.conn.send_last_chunk();
                Ok(Some(After::KeepAlive))
            }
            Fault::SseError(_, parts, _) => {
                self.conn.send_chunk(self.exchange.error_event(parts).as_bytes());
                self.conn.send_last_chunk();
                Ok(Some(After::KeepAlive))
            }
            Fault::Malformed(_, data) => {
                self.conn.send_chunk(self.exchange.malformed_event(data).as_bytes());
                Ok(None)
            }
            Fault::Stall(_, ms) => {
                self.conn.flush().await?;
                sleep_ms(*ms).await;
                Ok(None)
            }
            Fault::Hang(_) => {
                self.conn.hang().await;
                Ok(Some(After::Close))
            }
            Fault::Flood(_, of, interval_ms) => self.flood(*of, sent, *interval_ms).await.map(Some),
        }
    }

    /// A non-streamed answer: the whole JSON body, or its faulty counterpart.
    async fn whole_reply(&mut self, reply: &Reply, fault: Fault) -> io::Result<After> {
        let count = reply.chunk_count() as u64;
        sleep_ms(reply.chunk_delay_ms.saturating_mul(count)).await;
        let body = self.exchange.full_body(&reply.text, count);
        let head = |length: usize| self.json_head(Some(length), &reply.headers);
        let half = &body.as_bytes()[..body.len() / 2];
        match fault {
            Fault::None => {
                let head = head(body.len());
                self.conn.send(&head);
                self.conn.send(body.as_bytes());
                Ok(After::KeepAlive)
            }
            Fault::Drop(_) => {
                let head = head(body.len());
                self.conn.send(&head);
                self.conn.send(half);
                self.conn.flush().await?;
                Ok(After::Close)
            }
            Fault::Truncate(_) => {
                let head = head(half.len());
                self.conn.send(&head);
                self.conn.send(half);
                Ok(After::KeepAlive)
            }
            Fault::SseError(_, parts, status) => {
                self.error_response(status, &parts);
                Ok(After::KeepAlive)
            }
            Fault::Malformed(_, data) => {
                let head = head(data.len());
                self.conn.send(&head);
                self.conn.send(data.as_bytes());
                Ok(After::KeepAlive)
            }
            Fault::Stall(_, ms) => {
                let head = head(body.len());
                self.conn.send(&head);
                self.conn.flush().await?;
                sleep_ms(ms).await;
                self.conn.send(body.as_bytes());
                Ok(After::KeepAlive)
            }
            Fault::Hang(_) => {
                let head = head(body.len());
                self.conn.send(&head);
                self.conn.hang().await;
                Ok(After::Close)
            }
            Fault::Flood(_, _, interval_ms) => self.endless_json(&reply.headers, interval_ms).await,
        }
    }
}
