//! What the HTTP providers share: the client, the API key kept secret, the server's retry hints,
//! error bodies read to a bound and parsed, reqwest errors typed by transport kind, and the driver
//! that turns one streamed response into [`StreamEvent`]s.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::fmt;
use std::time::{Duration, SystemTime};

use reqwest::header::HeaderMap;

use super::boundary::{CERTIFICATE_FIX, HEAD_FIX, bad_head, cause, certificate_refused, redirect_error};
use super::google_rpc::parse_seconds;
pub(crate) use super::secret::Secret;
use super::secret::{display_url, redact};
use super::sse::{MAX_EVENT, SseDecoder, SseEvent};
use super::{CallBounds, EventStream, StreamEvent};
use crate::error::model_error::NOT_A_STREAM;
use crate::error::{ModelError, TransportKind};
use crate::message::StopReason;
use crate::policy::rules::{format_ms, millis};

/// The most bytes of an error response body read and kept (16 KiB); the rest is cut.
pub(crate) const MAX_ERROR_BODY: usize = 16 * 1024;

/// A provider's configuration from the environment is incomplete or invalid (see
/// [`OpenAiProvider::from_env`] and [`AnthropicProvider::from_env`]). Its text names the
/// environment variable to set.
///
/// [`OpenAiProvider::from_env`]: crate::provider::OpenAiProvider::from_env
/// [`AnthropicProvider::from_env`]: crate::provider::AnthropicProvider::from_env
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// No API key, and the base URL is the provider's own (a local server needs none).
    #[error(
        "{provider}: no API key: set {key_variable} to your API key \
         (or set {base_url_variable} to a server that needs none)"
    )]
    MissingApiKey {
        /// The provider, e.g. `"openai"`.
        provider: &'static str,
        /// The variable that holds the key, e.g. `OPENAI_API_KEY`.
        key_variable: &'static str,
        /// The variable that holds the base URL, e.g. `OPENAI_BASE_URL`.
        base_url_variable: &'static str,
    },
    /// The base URL is not an absolute `http` or `https` URL.
    #[error("{variable} is not a valid base URL ({reason}): set it to e.g. {example}")]
    InvalidBaseUrl {
        /// The variable that holds it, e.g. `OPENAI_BASE_URL`.
        variable: &'static str,
        /// What is wrong with it.
        reason: String,
        /// A valid value.
        example: &'static str,
    },
}

/// The environment variables and defaults of one provider.
pub(crate) struct EnvNames {
    /// e.g. `"openai"`.
    pub(crate) provider: &'static str,
    /// e.g. `OPENAI_API_KEY`.
    pub(crate) key: &'static str,
    /// e.g. `OPENAI_BASE_URL`.
    pub(crate) base_url: &'static str,
    /// The provider's own base URL (a key is required there).
    pub(crate) default_base_url: &'static str,
}

impl EnvNames {
    /// The base URL and key from `lookup`, checked: a valid URL, and a key unless the URL is a
    /// server of the user's own.
    pub(crate) fn read(
        &self,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<(String, Option<String>), ConfigError> {
        let api_key = non_empty(&lookup, self.key);
        let base_url = match non_empty(&lookup, self.base_url) {
            Some(url) => check_base_url(&url).map_err(|reason| ConfigError::InvalidBaseUrl {
                variable: self.base_url,
                reason,
                example: self.default_base_url,
            })?,
            None => self.default_base_url.to_owned(),
        };
        if api_key.is_none() && base_url == self.default_base_url {
            return Err(ConfigError::MissingApiKey {
                provider: self.provider,
                key_variable: self.key,
                base_url_variable: self.base_url,
            });
        }
        Ok((base_url, api_key))
    }
}

/// What both HTTP providers hold: the client, where to send, the key, the model and the sampling
/// temperature.
#[derive(Clone)]
pub(crate) struct Endpoint {
    clients: Clients,
    pub(crate) base_url: String,
    /// The base URL's host and port, parsed once: every call's span records them.
    server: Option<(String, u16)>,
    pub(crate) api_key: Option<Secret>,
    pub(crate) model: String,
    pub(crate) temperature: Option<f32>,
}

impl Endpoint {
    pub(crate) fn new(base_url: String, api_key: Option<String>, model: &str) -> Self {
        let base_url = trim_base_url(&base_url).to_owned();
        Self {
            clients: Clients::default(),
            server: server_of(&base_url),
            base_url,
            api_key: Secret::new(api_key),
            model: model.to_owned(),
            temperature: None,
        }
    }

    /// The server's host and port (`server.address`, `server.port` in traces); `None` for an
    /// invalid base URL.
    pub(crate) fn server(&self) -> Option<(&str, u16)> {
        self.server.as_ref().map(|(host, port)| (host.as_str(), *port))
    }

    /// The URL to post to: `path` (e.g. `/chat/completions`) after the base URL's path and before its
    /// query, which is kept (Azure's `?api-version=...`). A base URL with a fragment is refused as a
    /// programming error: a fragment is never sent, so `/v1#x` would post to `/v1` (from the
    /// environment, [`EnvNames::read`] refuses it first, as a [`ConfigError`]).
    pub(crate) fn url(&self, path: &str) -> Result<String, ModelError> {
        join_path(&self.base_url, path).map_err(|reason| {
            let text = format!("the base URL `{}` {reason}", display_url(&self.base_url));
            ModelError::programming("ConfigError", redact(&text, self.api_key.as_ref()))
        })
    }

    /// The HTTP client whose connections time out after `connect` (built once per value).
    pub(crate) fn client(&self, connect: Duration) -> Result<reqwest::Client, ModelError> {
        self.clients.get(connect)
    }

    /// `"<provider>:<fingerprint>"`: the first 16 hex digits of SHA-256 over the base URL and the
    /// key, so that calls with the same key share a retry budget and cooldowns, and the key itself
    /// never leaves the process. A one-way hash, because the fingerprint does leave it (a fleet's
    /// Redis keys), and a fixed one, because every process of a fleet, whatever its build, must
    /// compute the same (std's hasher may change between Rust releases). ring's SHA-256: rustls
    /// builds it anyway.
    pub(crate) fn scope(&self, provider: &str) -> String {
        let mut hasher = ring::digest::Context::new(&ring::digest::SHA256);
        hasher.update(self.base_url.as_bytes());
        hasher.update(&[0]);
        hasher.update(self.api_key.as_ref().map_or("", Secret::expose).as_bytes());
        let digest = hasher.finish();
        let hex: String = digest.as_ref()[..8].iter().map(|byte| format!("{byte:02x}")).collect();
        format!("{provider}:{hex}")
    }

    /// The shared Debug fields; the key shows as `<redacted>`.
    pub(crate) fn debug_fields<'a, 'b>(&self, f: &'a mut fmt::DebugStruct<'a, 'b>) -> &'a mut fmt::DebugStruct<'a, 'b> {
        f.field("base_url", &redact(&display_url(&self.base_url), self.api_key.as_ref()))
            .field("api_key", &self.api_key)
            .field("model", &self.model)
            .field("temperature", &self.temperature)
    }
}

/// The HTTP clients of one provider, one per connect timeout in use (reqwest sets that timeout per
/// client, not per request). A program uses one or two policies, so the list stays short; past
/// [`Clients::MAX`] values the oldest is dropped.
#[derive(Clone, Default)]
struct Clients(std::sync::Arc<std::sync::Mutex<Vec<(Duration, reqwest::Client)>>>);

impl Clients {
    const MAX: usize = 8;

    fn get(&self, connect: Duration) -> Result<reqwest::Client, ModelError> {
        let mut clients = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((_, client)) = clients.iter().find(|(timeout, _)| *timeout == connect) {
            return Ok(client.clone());
        }
        let client = client(connect)?;
        if clients.len() >= Self::MAX {
            clients.remove(0);
        }
        clients.push((connect, client.clone()));
        Ok(client)
    }
}

/// An HTTP client (rustls, HTTP/1.1, the system's proxy settings) whose connections time out after
/// `connect`: a connection that is never accepted must not hold a call until the kernel gives up
/// (minutes); it becomes a retryable timeout.
///
/// It follows no redirect: a model API answers a POST itself, and reqwest, following one to another
/// port or host, would send it the `x-api-key` header (it strips only `Authorization` and cookies)
/// and, on a 307 or 308, the prompt; a 3xx becomes a permanent error instead ([`redirect_error`]).
pub(crate) fn client(connect: Duration) -> Result<reqwest::Client, ModelError> {
    reqwest::Client::builder()
        .user_agent(concat!("agentic-runtime/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(connect)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|error| {
            ModelError::programming("ConfigError", format!("cannot build the HTTP client: {}", describe(&error)))
        })
}

/// Checks a base URL: absolute, `http` or `https`, no fragment. Returns it without a trailing `/`.
pub(crate) fn check_base_url(url: &str) -> Result<String, String> {
    let trimmed = trim_base_url(url);
    let parsed = reqwest::Url::parse(trimmed).map_err(|error| error.to_string())?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!("scheme `{}` is not http or https", parsed.scheme()));
    }
    join_path(trimmed, "").map_err(|reason| format!("it {reason}"))?;
    Ok(trimmed.to_owned())
}

/// `url` without surrounding whitespace, and without a trailing `/` unless it ends a query (where it
/// may be part of a value: [`join_path`] drops the path's own).
fn trim_base_url(url: &str) -> &str {
    let url = url.trim();
    if url.contains('?') { url } else { url.trim_end_matches('/') }
}

/// `base` with `path` appended to its path, before its query (`https://h/v1?v=1` and `/x` give
/// `https://h/v1/x?v=1`), the path's trailing `/` dropped; an error for a base with a fragment.
/// Text only: nothing is decoded or normalized, the URL is checked when the request is built.
fn join_path(base: &str, path: &str) -> Result<String, &'static str> {
    if base.contains('#') {
        return Err("has a fragment (`#...`), which is never sent to the server (calls would go to the URL \
             without it): remove it, and put what it holds in the path or the query");
    }
    let (before, query) = match base.split_once('?') {
        Some((before, query)) => (before, Some(query)),
        None => (base, None),
    };
    let mut url = format!("{}{path}", before.trim_end_matches('/'));
    if let Some(query) = query {
        url.push('?');
        url.push_str(query);
    }
    Ok(url)
}

/// The host and port of `base_url`: the port the URL names, else its scheme's (80, 443); an IPv6
/// address without its brackets, as OpenTelemetry's `server.address` wants it.
fn server_of(base_url: &str) -> Option<(String, u16)> {
    let url = reqwest::Url::parse(base_url).ok()?;
    let host = url.host_str().filter(|host| !host.is_empty())?;
    let host = host.strip_prefix('[').and_then(|host| host.strip_suffix(']')).unwrap_or(host);
    Some((host.to_owned(), url.port_or_known_default()?))
}

/// The token count at `key` of a usage object, when it is a non-negative integer: a count of
/// another type is left out rather than failing the call.
pub(crate) fn tokens(usage: &serde_json::Value, key: &str) -> Option<u64> {
    usage.get(key).and_then(serde_json::Value::as_u64)
}

/// Reads a configuration variable through `lookup`; an empty value counts as unset.
pub(crate) fn non_empty(lookup: &impl Fn(&str) -> Option<String>, name: &str) -> Option<String> {
    lookup(name).map(|value| value.trim().to_owned()).filter(|value| !value.is_empty())
}

/// The server's retry hints, from the response headers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Hints {
    /// `retry-after-ms`, else `Retry-After` (seconds or an HTTP-date relative to `now`).
    pub(crate) retry_after: Option<Duration>,
    /// `x-should-retry: true|false`.
    pub(crate) should_retry: Option<bool>,
}

impl Hints {
    /// Reads the hints from `headers`; an HTTP-date is measured from `now` (a past date is 0 s).
    pub(crate) fn from_headers(headers: &HeaderMap, now: SystemTime) -> Self {
        let header = |name: &str| headers.get(name).and_then(|value| value.to_str().ok()).map(str::trim);
        let retry_after = header("retry-after-ms")
            .and_then(|ms| parse_seconds(ms, 1000.0))
            .or_else(|| header("retry-after").and_then(|value| parse_retry_after(value, now)));
        let should_retry = header("x-should-retry").and_then(|value| match value.to_ascii_lowercase().as_str() {
            "true" => Some(true),
            "false" => Some(false),
            _ => None,
        });
        Self { retry_after, should_retry }
    }

    /// `error` with these hints.
    pub(crate) fn apply(self, mut error: ModelError) -> ModelError {
        if let Some(wait) = self.retry_after {
            error = error.with_retry_after(wait);
        }
        if let Some(should_retry) = self.should_retry {
            error = error.with_should_retry(should_retry);
        }
        error
    }
}

/// `Retry-After`: delay-seconds, or an HTTP-date.
fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    parse_seconds(value, 1.0).or_else(|| {
        let date = httpdate::parse_http_date(value).ok()?;
        Some(date.duration_since(now).unwrap_or(Duration::ZERO))
    })
}

/// What a provider's error body says: `{"error": {"message", "type", "code"}}` (OpenAI),
/// `{"type": "error", "error": {"type", "message"}}` (Anthropic), `{"error": {"code", "message",
/// "status", "details"}}` (Google's, [`google_rpc`](super::google_rpc)), `{"error": "text"}`,
/// `{"message": ..}` or `{"detail": ..}`, possibly inside a one-element array.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct ErrorBody {
    /// The message, when the body had one.
    pub(crate) message: Option<String>,
    /// The error's `type`.
    pub(crate) kind: Option<String>,
    /// The error's `code` when it is a string.
    pub(crate) code: Option<String>,
    /// The error's `code` when it is a number (vLLM and Google send the HTTP status there).
    pub(crate) status: Option<u16>,
    /// The server's requested wait, from the body (Google's `RetryInfo.retryDelay`).
    pub(crate) retry_after: Option<Duration>,
}

impl ErrorBody {
    /// Parses a JSON error body; `None` when it is not JSON or has none of the known shapes.
    pub(crate) fn parse(value: &serde_json::Value) -> Option<Self> {
        let value = match value {
            serde_json::Value::Array(items) => items.first()?,
            other => other,
        };
        let object = value.as_object()?;
        if let Some(parsed) = object.get("error").and_then(Self::from_error) {
            return Some(parsed);
        }
        let message = string(object.get("message")).or_else(|| string(object.get("detail")))?;
        Some(Self { message: Some(message), code: string(object.get("code")), ..Self::default() })
    }

    /// Parses the value of an `"error"` field: an object with `message`, `type` and `code`, or a string.
    pub(crate) fn from_error(error: &serde_json::Value) -> Option<Self> {
        match error {
            serde_json::Value::Object(error) => {
                let details = super::google_rpc::Details::read(error.get("details"));
                // A quota spent for the day (or for good) says more than the status beside it.
                let code = details.quota.map(str::to_owned).or_else(|| string(error.get("code")));
                Some(Self {
                    message: string(error.get("message")),
                    // Google's canonical status (`RESOURCE_EXHAUSTED`) stands where others put a type.
                    kind: string(error.get("type")).or_else(|| string(error.get("status"))),
                    code: code.filter(|code| !code.is_empty()),
                    status: error
                        .get("code")
                        .and_then(serde_json::Value::as_u64)
                        .and_then(|code| u16::try_from(code).ok()),
                    retry_after: details.retry_delay,
                })
            }
            serde_json::Value::String(message) => Some(Self { message: Some(message.clone()), ..Self::default() }),
            _ => None,
        }
    }

    /// The code to type the error with: the `code`, else the `type`.
    pub(crate) fn typed_code(&self) -> Option<&str> {
        self.code.as_deref().or(self.kind.as_deref()).filter(|code| !code.is_empty())
    }
}

fn string(value: Option<&serde_json::Value>) -> Option<String> {
    value.and_then(serde_json::Value::as_str).map(str::to_owned)
}

/// The SDK-style kind and the HTTP status of a provider error `type` (Anthropic's and OpenAI's
/// names), for errors that arrive inside a stream: the status the API gives the same error over
/// HTTP, so that the classifiers treat both alike. `None` for an unknown type.
pub(crate) fn error_type(kind: &str) -> Option<(&'static str, u16)> {
    Some(match kind {
        "invalid_request_error" => ("BadRequestError", 400),
        "authentication_error" | "invalid_api_key" => ("AuthenticationError", 401),
        "billing_error" => ("BillingError", 402),
        "permission_error" | "permission_denied" => ("PermissionDeniedError", 403),
        "not_found_error" | "model_not_found" => ("NotFoundError", 404),
        "request_too_large" => ("RequestTooLargeError", 413),
        "rate_limit_error" | "rate_limit_exceeded" | "requests" | "tokens" | "insufficient_quota" => {
            ("RateLimitError", 429)
        }
        "api_error" | "server_error" | "internal_error" => ("InternalServerError", 500),
        "timeout_error" => ("GatewayTimeoutError", 504),
        "overloaded_error" => ("OverloadedError", 529),
        _ => return super::google_rpc::status_kind(kind),
    })
}

/// The typed error of an error event inside a stream, and its text as sent (the key redacted).
///
/// The kind comes from the error's `type` (`overloaded_error` -> `OverloadedError`; a type that is
/// already a kind name, as vLLM sends, is kept; else `APIError`), the status from a numeric `code`
/// or from the type ([`error_type`]), the code from `code`, else `type`.
pub(crate) fn error_event(body: &ErrorBody, secret: Option<&Secret>) -> StreamEvent {
    let message = redact(body.message.as_deref().unwrap_or(""), secret);
    // The type becomes the kind: redacted too, in case the server echoes the key there.
    let written = body.kind.as_deref().map(|kind| redact(kind, secret));
    // The code is the more specific of the two (OpenAI: type `invalid_request_error`, code
    // `invalid_api_key`): a code the table knows types the error, else the type does.
    let known = body.code.as_deref().and_then(error_type).or_else(|| written.as_deref().and_then(error_type));
    let kind: Cow<'static, str> = match (written.as_deref(), known) {
        (_, Some((kind, _))) => Cow::Borrowed(kind),
        (Some(kind), None) if crate::error::model_error::split_kind(kind).is_some() => Cow::Owned(kind.to_owned()),
        (Some(kind), None) if kind.ends_with("_error") => Cow::Owned(camel_case(kind)),
        _ => match body.status {
            Some(status) => Cow::Owned(ModelError::http(status, "").kind().to_owned()),
            None => Cow::Borrowed("APIError"),
        },
    };
    let mut error = ModelError::new(kind, message.clone());
    if let Some(status) = body.status.filter(|status| (100..=599).contains(status)).or(known.map(|(_, status)| status))
    {
        error = error.with_status(status);
    }
    if let Some(code) = body.typed_code() {
        error = error.with_code(redact(code, secret));
    }
    if let Some(wait) = body.retry_after {
        error = error.with_retry_after(wait);
    }
    StreamEvent::Error { message, error: Some(error) }
}

/// `overloaded_error` -> `OverloadedError`.
fn camel_case(snake: &str) -> String {
    snake
        .split('_')
        .filter(|word| !word.is_empty())
        .map(|word| {
            let mut chars = word.chars();
            chars.next().map(|first| first.to_ascii_uppercase().to_string() + chars.as_str()).unwrap_or_default()
        })
        .collect()
}

/// The error of an HTTP response with status `status` and (bounded) body `body`: the provider's
/// message and code when the body is a known JSON shape, else the body's text; `"status code (no
/// body)"` for an empty body (as the OpenAI SDKs say, which the overflow rule knows for 400 and 413).
pub(crate) fn http_error(status: u16, body: &[u8], cut: bool, secret: Option<&Secret>) -> ModelError {
    http_error_of(status, body, if cut { BodyEnd::Cut } else { BodyEnd::Whole }, secret)
}

/// [`http_error`] of a body read as far as `end` says: a stalled body keeps what arrived, and says
/// so (never "no body", which the overflow rule would read as a bodiless 400).
pub(crate) fn http_error_of(status: u16, body: &[u8], end: BodyEnd, secret: Option<&Secret>) -> ModelError {
    let cut = end == BodyEnd::Cut;
    let text = String::from_utf8_lossy(body);
    let text = if end == BodyEnd::Whole { &text } else { text.trim_end_matches('\u{fffd}') };
    let parsed = if cut {
        None
    } else {
        serde_json::from_str::<serde_json::Value>(text).ok().as_ref().and_then(ErrorBody::parse)
    };
    let retry_after = parsed.as_ref().and_then(|parsed| parsed.retry_after);
    let (mut message, code) = match parsed {
        Some(parsed) => {
            let code = parsed.typed_code().map(str::to_owned);
            let mut message = parsed.message.unwrap_or_default();
            if let Some(code) = code.as_deref().filter(|code| !message.contains(code)) {
                message = if message.is_empty() { code.to_owned() } else { format!("{message} ({code})") };
            }
            (message, code)
        }
        None if text.trim().is_empty() && end == BodyEnd::Whole => ("status code (no body)".to_owned(), None),
        None => (text.trim().to_owned(), None),
    };
    match end {
        BodyEnd::Whole => {}
        BodyEnd::Cut => message.push_str(&format!(" (error body cut at {} KiB)", MAX_ERROR_BODY / 1024)),
        BodyEnd::Stalled => {
            let note = format!("(error body stalled after {} bytes)", body.len());
            message = if message.is_empty() { note } else { format!("{message} {note}") };
        }
    }
    let mut error = ModelError::http(status, redact(&message, secret));
    if let Some(code) = code {
        error = error.with_code(redact(&code, secret));
    }
    // The body's hint; a header's, applied after by the caller, wins.
    match retry_after {
        Some(wait) => error.with_retry_after(wait),
        None => error,
    }
}

/// How a bounded read of a body ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyEnd {
    /// The body ended (or failed mid-way: what arrived is kept, the status says what happened).
    Whole,
    /// The body was longer than the bound: the rest is cut.
    Cut,
    /// No more bytes came before the deadline: what arrived is kept.
    Stalled,
}

/// Reads at most `limit` bytes of `response`'s body; the flag says whether the body was longer.
/// A body that fails mid-way keeps what arrived (the status already says what happened).
pub(crate) async fn read_capped(response: &mut reqwest::Response, limit: usize) -> (Vec<u8>, bool) {
    let (body, end) = read_bounded(response, limit, None).await;
    (body, end == BodyEnd::Cut)
}

/// Reads at most `limit` bytes of `response`'s body, until `deadline` if there is one.
async fn read_bounded(
    response: &mut reqwest::Response,
    limit: usize,
    deadline: Option<tokio::time::Instant>,
) -> (Vec<u8>, BodyEnd) {
    let mut body = Vec::new();
    loop {
        let chunk = match deadline {
            Some(deadline) => match tokio::time::timeout_at(deadline, response.chunk()).await {
                Ok(chunk) => chunk,
                Err(_) => return (body, BodyEnd::Stalled),
            },
            None => response.chunk().await,
        };
        let Ok(Some(chunk)) = chunk else { return (body, BodyEnd::Whole) };
        let room = limit - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return (body, BodyEnd::Cut);
        }
        body.extend_from_slice(&chunk);
    }
}

/// When the read of an error body whose response came at `now` gives up: after the idle bound
/// (an error body comes at once or not at all), and before the first-token bound of a call that
/// started at `started` runs out, so that the status, what arrived of the body and the hints are
/// not lost to that timeout.
fn error_body_deadline(bounds: &CallBounds, started: tokio::time::Instant) -> tokio::time::Instant {
    let now = tokio::time::Instant::now();
    let idle = now.checked_add(bounds.idle);
    let first_token = started.checked_add(bounds.first_token);
    // A bound too far to represent is no bound; the other one (or a day) still holds the read.
    [idle, first_token].into_iter().flatten().min().unwrap_or_else(|| now + Duration::from_secs(86_400))
}

/// Where a reqwest error happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Before the response headers.
    Send,
    /// While reading the streamed body.
    Body,
}

/// A reqwest error as a typed transport error: a refused certificate or a bad response head
/// (permanent: configuration, not waiting, fixes them), a timeout, a refused or failed connection,
/// a connection closed before the headers (reset), or a body broken mid-way (a dropped stream). The
/// text carries reqwest's cause chain, without the URL, and never the key.
pub(crate) fn transport_error(error: reqwest::Error, phase: Phase, secret: Option<&Secret>) -> ModelError {
    let (kind, context, fix) = if let Some(refused) = cause::<rustls::Error>(&error).and_then(certificate_refused) {
        (TransportKind::Certificate, refused, CERTIFICATE_FIX)
    } else if error.is_timeout() {
        (TransportKind::Timeout, "request timed out", "")
    } else if error.is_connect() {
        (TransportKind::Connect, "connection error", "")
    } else if let Some(head) = cause::<hyper::Error>(&error).filter(|_| phase == Phase::Send).and_then(bad_head) {
        (TransportKind::BadHead, head, HEAD_FIX)
    } else if phase == Phase::Send {
        (TransportKind::Reset, "connection closed before the response headers (reset before headers)", "")
    } else {
        (TransportKind::StreamDropped, "stream ended unexpectedly: the connection dropped mid-way", "")
    };
    let cause = describe(&error.without_url());
    ModelError::transport(kind, redact(&format!("{context}: {cause}{fix}"), secret))
}

/// What a successful response's body is, by its content type.
enum BodyKind {
    /// An event stream, or no content type at all (some local servers send none).
    Stream,
    /// A whole JSON answer: a server that ignored `"stream": true`, or an error object.
    Json,
    /// Anything else, e.g. a proxy's HTML login page: the content type as sent.
    Other(String),
}

fn body_kind(response: &reqwest::Response) -> BodyKind {
    let Some(value) = response.headers().get(reqwest::header::CONTENT_TYPE) else { return BodyKind::Stream };
    let text = String::from_utf8_lossy(value.as_bytes());
    let essence = text.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    if essence == "text/event-stream" {
        BodyKind::Stream
    } else if essence == "application/json" || essence.ends_with("+json") {
        BodyKind::Json
    } else {
        BodyKind::Other(text.chars().take(100).collect())
    }
}

/// A `2xx` whose body is neither an event stream nor JSON: a wrong base URL, or a proxy's login page.
/// The same request gets the same page, so it is permanent (code [`NOT_A_STREAM`]); the text names
/// the status, the content type and the URL's path (never its host's secrets or the query).
fn not_a_stream(status: reqwest::StatusCode, content_type: &str, path: &str, secret: Option<&Secret>) -> ModelError {
    let text = format!(
        "{} from POST {path} is `{content_type}`, not an event stream (`text/event-stream`): check the base \
         URL; a web page or a proxy's login page answered instead of the model API",
        status
    );
    ModelError::new("UnexpectedContentTypeError", redact(&text, secret))
        .with_status(status.as_u16())
        .with_code(NOT_A_STREAM)
}

/// An error and its causes, joined with `": "`.
pub(crate) fn describe(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.ends_with(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// A malformed chunk: typed as a corrupted stream (retryable), with a short excerpt of the data.
pub(crate) fn malformed(data: &str, error: &serde_json::Error, secret: Option<&Secret>) -> ModelError {
    ModelError::transport(TransportKind::Corrupted, format!("malformed chunk: {error}: {}", excerpt(data, secret)))
}

/// A short excerpt of what a server sent, for a message: the key redacted first (so that no cut can
/// leave a piece of it), then at most 120 characters, quoted, with control characters escaped.
pub(crate) fn excerpt(data: &str, secret: Option<&Secret>) -> String {
    const EXCERPT: usize = 120;
    let data = redact(data.trim(), secret);
    match data.char_indices().nth(EXCERPT) {
        Some((end, _)) => format!("{:?}...", &data[..end]),
        None => format!("{data:?}"),
    }
}

/// A 2xx JSON body that is not the wire's answer at all (`{}`, `{"status": "ok"}`, a models list):
/// what a health check or another API answers, so the base URL is likely wrong. Permanent, as a
/// page that is not a stream is (code [`NOT_A_STREAM`]): the same request gets the same body.
fn not_an_answer(path: &str, answer: &str, body: &str, secret: Option<&Secret>) -> ModelError {
    let text = format!(
        "the JSON answer to POST {path} is not {answer}: {}: check the base URL; it likely points at a \
         health check, a models list or another API instead of the model API",
        excerpt(body, secret)
    );
    ModelError::new("NotAnAnswerError", redact(&text, secret)).with_code(NOT_A_STREAM)
}

/// An answer with no content, no tool calls and no finish reason: a reply cut short, as a stream
/// without its final event is (retryable). `what` says what came back.
fn empty_answer(what: &str) -> ModelError {
    ModelError::transport(
        TransportKind::Truncated,
        format!("the answer ended without content, tool calls or a finish reason: {what}"),
    )
}

/// Whether `event` is part of the answer: text or a tool call.
pub(crate) fn is_content(event: &StreamEvent) -> bool {
    matches!(event, StreamEvent::TextDelta(_) | StreamEvent::ToolCallStart { .. } | StreamEvent::ToolCallDelta { .. })
}

/// One wire format's reading of the SSE events of a streamed answer.
pub(crate) trait Wire: Send + 'static {
    /// Handles one event: appends the stream events it yields to `out`. Returns an error for a
    /// malformed event. A [`StreamEvent::Done`] or [`StreamEvent::Error`] ends the call.
    fn on_event(
        &mut self,
        event: &SseEvent,
        out: &mut Vec<StreamEvent>,
        secret: Option<&Secret>,
    ) -> Result<(), ModelError>;

    /// When the body ends (cleanly or not) before the final event: the stop reason to finish with
    /// if the provider already said the answer is complete, else `None` (a truncated or dropped stream).
    fn completed(&self) -> Option<StopReason> {
        None
    }

    /// Handles a whole (not streamed) JSON answer, from a server that ignored `"stream": true`:
    /// appends its events and a final [`StreamEvent::Done`] to `out`.
    fn whole(&mut self, answer: &serde_json::Value, out: &mut Vec<StreamEvent>) -> Result<(), serde_json::Error>;

    /// What this wire's whole answer is, for the message when a JSON body is not one, e.g. "a chat
    /// completion (an object with `choices`)".
    const ANSWER: &'static str;

    /// Whether a JSON body (not an error object) is shaped like this wire's whole answer at all;
    /// anything else is what a wrong base URL gets.
    fn is_answer(answer: &serde_json::Value) -> bool;

    /// Whether the server sent an explicit finish reason (a `finish_reason`, a `stop_reason`): with
    /// one, an answer without content is an answer (an empty `stop`); without, it is none.
    fn finished(&self) -> bool;
}

/// A streamed JSON `POST` to `url` with `headers`, the `x-agentic-call` header and the call's timeout.
/// A request that cannot be built (an invalid base URL) is a programming error.
pub(crate) fn post(
    client: &reqwest::Client,
    url: &str,
    mut headers: HeaderMap,
    body: &serde_json::Value,
    request: &super::Request<'_>,
    secret: Option<&Secret>,
) -> Result<reqwest::Request, ModelError> {
    use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderValue};
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
    headers.insert("x-agentic-call", HeaderValue::from(request.call));
    let body = serde_json::to_vec(body)
        .map_err(|error| ModelError::programming("TypeError", format!("cannot serialize the request: {error}")))?;
    // The call's own time limits are the agent's (it names the bound that ran out); reqwest's
    // per-request timeout would cut the call first with a text that names none.
    client.post(url).headers(headers).body(body).build().map_err(|error| {
        let text = format!("cannot build a request to `{}`: {}", display_url(url), describe(&error.without_url()));
        ModelError::programming("ConfigError", redact(&text, secret))
    })
}

/// A header holding the key, marked sensitive (hidden from reqwest's Debug output). A key that
/// cannot be a header value is a programming error; its text does not show the key.
pub(crate) fn secret_header(prefix: &str, secret: &Secret) -> Result<reqwest::header::HeaderValue, ModelError> {
    let mut value = reqwest::header::HeaderValue::from_str(&format!("{prefix}{}", secret.expose())).map_err(|_| {
        ModelError::programming(
            "ConfigError",
            "the API key contains characters that are not allowed in an HTTP header (a newline or a control character?)",
        )
    })?;
    value.set_sensitive(true);
    Ok(value)
}

/// A second request sent once, at once, within the same call, when the first is refused with an
/// error that `applies` to (its status and body): e.g. a server that does not know an option gets
/// the request without it, and the caller never sees the first error.
pub(crate) struct Fallback {
    /// The request to send instead.
    pub(crate) request: reqwest::Request,
    /// Whether the first response (its status and its body, read to [`MAX_ERROR_BODY`]) calls for it.
    pub(crate) applies: fn(u16, &str) -> bool,
}

/// Sends `request` and streams the response through `wire`, within `bounds.connect` (the client's)
/// and `bounds.headers`; `fallback`, if the first response calls for it.
pub(crate) fn stream_call<W: Wire>(
    client: reqwest::Client,
    request: reqwest::Request,
    fallback: Option<Fallback>,
    wire: W,
    secret: Option<Secret>,
    bounds: CallBounds,
) -> EventStream<'static> {
    let path = request.url().path().to_owned();
    let driver = Driver { start: Some((client, request)), fallback, ..Driver::new(bounds, wire, secret, path) };
    Box::pin(futures_util::stream::unfold(driver, |mut driver| async move {
        let item = driver.next().await?;
        Some((item, driver))
    }))
}

/// A stream that fails at once with `error`.
pub(crate) fn failed(error: ModelError) -> EventStream<'static> {
    Box::pin(futures_util::stream::iter([Err(error)]))
}

type Item = Result<StreamEvent, ModelError>;

struct Driver<W> {
    bounds: CallBounds,
    start: Option<(reqwest::Client, reqwest::Request)>,
    fallback: Option<Fallback>,
    response: Option<reqwest::Response>,
    decoder: SseDecoder,
    wire: W,
    secret: Option<Secret>,
    events: Vec<SseEvent>,
    out: Vec<StreamEvent>,
    queue: VecDeque<Item>,
    ended: bool,
    /// The path posted to, for the message when a JSON body is not an answer.
    path: String,
    /// What the stream brought before its answer: its events, and an excerpt of the first.
    seen: Seen,
}

/// The events of a stream so far, until content comes: enough to say what came back when none did.
/// The first is kept as the decoder made it (moved, not copied: the success path pays nothing).
#[derive(Default)]
struct Seen {
    events: u32,
    first: Option<SseEvent>,
    answered: bool,
}

impl<W: Wire> Driver<W> {
    fn new(bounds: CallBounds, wire: W, secret: Option<Secret>, path: String) -> Self {
        Driver {
            bounds,
            start: None,
            fallback: None,
            response: None,
            decoder: SseDecoder::new(),
            wire,
            secret,
            events: Vec::new(),
            out: Vec::new(),
            queue: VecDeque::new(),
            ended: false,
            path,
            seen: Seen::default(),
        }
    }

    async fn next(&mut self) -> Option<Item> {
        loop {
            if let Some(item) = self.queue.pop_front() {
                return Some(item);
            }
            if self.ended {
                return None;
            }
            if let Some((client, request)) = self.start.take() {
                self.send(client, request).await;
                continue;
            }
            let Some(response) = self.response.as_mut() else {
                self.ended = true;
                continue;
            };
            match response.chunk().await {
                Ok(Some(bytes)) => self.feed(&bytes),
                Ok(None) => self.end_of_body(None),
                Err(error) => self.end_of_body(Some(error)),
            }
        }
    }

    async fn send(&mut self, client: reqwest::Client, request: reqwest::Request) {
        let started = tokio::time::Instant::now();
        let path = request.url().path().to_owned();
        let headers = self.bounds.headers;
        let sent = match tokio::time::timeout(headers, client.execute(request)).await {
            Ok(sent) => sent,
            Err(_) => {
                let text = format!(
                    "model call timed out: no response headers after {} (`headers_timeout_ms` = {})",
                    format_ms(millis(headers)),
                    millis(headers)
                );
                return self.fail(ModelError::transport(TransportKind::Timeout, text));
            }
        };
        match sent {
            Err(error) if error.is_connect() && error.is_timeout() => {
                let connect = self.bounds.connect;
                let text = format!(
                    "model call timed out: no connection after {} (`connect_timeout_ms` = {})",
                    format_ms(millis(connect)),
                    millis(connect)
                );
                self.fail(ModelError::transport(TransportKind::Timeout, text));
            }
            Err(error) => self.fail(transport_error(error, Phase::Send, self.secret.as_ref())),
            Ok(response) if response.status().is_success() => match body_kind(&response) {
                BodyKind::Stream => self.response = Some(response),
                BodyKind::Json => {
                    let mut response = response;
                    self.whole(&mut response).await;
                }
                BodyKind::Other(content_type) => {
                    let status = response.status();
                    self.fail(not_a_stream(status, &content_type, &path, self.secret.as_ref()));
                }
            },
            // No hints: a redirect is never followed, whatever the server says of retrying.
            Ok(response) if response.status().is_redirection() => {
                self.fail(redirect_error(&response, self.secret.as_ref()))
            }
            Ok(mut response) => {
                let status = response.status().as_u16();
                let hints = Hints::from_headers(response.headers(), SystemTime::now());
                let deadline = error_body_deadline(&self.bounds, started);
                let (body, end) = read_bounded(&mut response, MAX_ERROR_BODY, Some(deadline)).await;
                let text = String::from_utf8_lossy(&body);
                if let Some(fallback) = self.fallback.take_if(|fallback| (fallback.applies)(status, &text)) {
                    self.start = Some((client, fallback.request));
                    return;
                }
                self.fail(hints.apply(http_error_of(status, &body, end, self.secret.as_ref())));
            }
        }
    }

    /// A JSON answer instead of a stream: an error object becomes an error event, an answer its events.
    async fn whole(&mut self, response: &mut reqwest::Response) {
        let (body, cut) = read_capped(response, MAX_EVENT).await;
        self.whole_body(&body, cut);
    }

    /// [`Driver::whole`] once the body is read (`cut`: it was longer than the bound). An error object
    /// becomes an error event; a body that is not shaped like the wire's answer is a wrong base URL;
    /// an answer without content, tool calls or finish reason, a reply cut short.
    fn whole_body(&mut self, body: &[u8], cut: bool) {
        let secret = self.secret.as_ref();
        if cut {
            let text = format!("malformed chunk: a JSON answer larger than {} KiB", MAX_EVENT / 1024);
            return self.fail(ModelError::transport(TransportKind::Corrupted, text));
        }
        let text = String::from_utf8_lossy(body);
        let answer = match serde_json::from_str::<serde_json::Value>(&text) {
            Ok(answer) => answer,
            Err(error) => return self.fail(malformed(&text, &error, secret)),
        };
        let mut out = Vec::new();
        match answer.get("error").filter(|error| !error.is_null()) {
            Some(error) => out.push(error_event(&ErrorBody::from_error(error).unwrap_or_default(), secret)),
            None if !W::is_answer(&answer) => return self.fail(not_an_answer(&self.path, W::ANSWER, &text, secret)),
            None => {
                if let Err(error) = self.wire.whole(&answer, &mut out) {
                    return self.fail(malformed(&text, &error, secret));
                }
                if !self.wire.finished() && !out.iter().any(is_content) {
                    return self.fail(empty_answer(&format!("the JSON answer was {}", excerpt(&text, secret))));
                }
            }
        }
        self.ended = true;
        self.queue.extend(out.into_iter().map(Ok));
    }

    fn feed(&mut self, bytes: &[u8]) {
        if let Err(error) = self.decoder.feed(bytes, &mut self.events) {
            self.fail(error);
            return;
        }
        let mut events = std::mem::take(&mut self.events);
        let mut out = std::mem::take(&mut self.out);
        for event in events.drain(..) {
            let handled = if self.seen.keeps() {
                let first = self.seen.first.insert(event);
                self.wire.on_event(first, &mut out, self.secret.as_ref())
            } else {
                self.wire.on_event(&event, &mut out, self.secret.as_ref())
            };
            for item in out.drain(..) {
                self.push(item);
                if self.ended {
                    break;
                }
            }
            if let Err(error) = handled {
                self.fail(error);
            }
            if self.ended {
                break;
            }
        }
        self.events = events;
        self.out = out;
        // A body that begins with a JSON value (no `data:`) is read as what it is: an error object is
        // the error event it would have been, anything else a whole answer.
        if let Some(json) = self.decoder.take_json().filter(|_| !self.ended) {
            self.whole_body(json.as_bytes(), false);
        }
    }

    /// Queues one event of the wire's: content marks the stream answered; a final event ends the
    /// call, and a `Done` that ends a stream with neither content nor finish reason is no answer.
    fn push(&mut self, item: StreamEvent) {
        self.seen.answered |= is_content(&item);
        match item {
            StreamEvent::Done { .. } if !self.seen.answered && !self.wire.finished() => {
                self.fail(self.seen.no_answer(self.secret.as_ref()))
            }
            StreamEvent::Done { .. } | StreamEvent::Error { .. } => {
                self.queue.push_back(Ok(item));
                self.ended = true;
            }
            item => self.queue.push_back(Ok(item)),
        }
    }

    /// The body ended: cleanly (`None`) or with an error. Without a final event the call either
    /// finishes (the provider already said it was complete), drops (an error), was JSON rather than
    /// events (read as a whole answer), or ends without `Done` (the agent reports a truncated stream;
    /// a stream that brought events but no answer says what came).
    fn end_of_body(&mut self, error: Option<reqwest::Error>) {
        self.ended = true;
        self.response = None;
        if let Some(stop_reason) = self.wire.completed() {
            self.push(StreamEvent::Done { stop_reason });
        } else if let Some(error) = error {
            self.queue.push_back(Err(transport_error(error, Phase::Body, self.secret.as_ref())));
        } else if let Some(body) = self.decoder.take_json_body() {
            self.whole_body(body.as_bytes(), false);
        } else if self.decoder.has_partial_event() {
            // The standard discards an event whose blank line never came: the stream was cut.
            let text = "stream ended unexpectedly, in the middle of an event (before its final event)";
            self.queue.push_back(Err(ModelError::transport(TransportKind::Truncated, text)));
        } else if !self.seen.answered && self.seen.events > 0 {
            self.queue.push_back(Err(self.seen.no_answer(self.secret.as_ref())));
        }
    }

    fn fail(&mut self, error: ModelError) {
        self.ended = true;
        self.response = None;
        self.queue.push_back(Err(error));
    }
}

impl Seen {
    /// Counts an event, until content came; true when it is the first, to keep.
    fn keeps(&mut self) -> bool {
        if self.answered {
            return false;
        }
        self.events = self.events.saturating_add(1);
        self.first.is_none()
    }

    /// A stream that ended with no content, tool calls or finish reason: a truncated stream, whose
    /// text says what came back.
    fn no_answer(&self, secret: Option<&Secret>) -> ModelError {
        let first = self.first.as_ref().map_or_else(|| "nothing".to_owned(), |first| excerpt(&first.data, secret));
        let events = if self.events == 1 { "1 event".to_owned() } else { format!("{} events", self.events) };
        empty_answer(&format!("the stream ended after {events} (the first: {first})"))
    }
}

/// Runs `wire`'s driver over a body that arrives in `reads` (an event stream) or, with `whole`, as
/// one JSON answer, without a connection: the items the call would yield. For the fuzz targets.
pub(crate) fn replay<W: Wire>(wire: W, reads: &[&[u8]], whole: bool, secret: Option<Secret>) -> Vec<Item> {
    let mut driver = Driver::new(CallBounds::DEFAULT, wire, secret, "/replay".to_owned());
    if whole {
        driver.whole_body(&reads.concat(), false);
    } else {
        for read in reads.iter().filter(|read| !read.is_empty()) {
            if driver.ended {
                break;
            }
            driver.feed(read);
        }
    }
    if !driver.ended {
        driver.end_of_body(None);
    }
    driver.queue.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, value.parse().unwrap());
        }
        map
    }

    #[test]
    fn retry_after_ms_wins_then_seconds_then_an_http_date() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let hints = |pairs: &[(&'static str, &str)]| Hints::from_headers(&headers(pairs), now);
        assert_eq!(
            hints(&[("retry-after-ms", "1500.5"), ("retry-after", "9")]).retry_after,
            Some(Duration::from_micros(1_500_500))
        );
        assert_eq!(hints(&[("retry-after", " 7 ")]).retry_after, Some(Duration::from_secs(7)));
        assert_eq!(hints(&[("retry-after", "0.25")]).retry_after, Some(Duration::from_millis(250)));
        let later = httpdate::fmt_http_date(now + Duration::from_secs(30));
        assert_eq!(hints(&[("retry-after", &later)]).retry_after, Some(Duration::from_secs(30)));
        let earlier = httpdate::fmt_http_date(now - Duration::from_secs(30));
        assert_eq!(hints(&[("retry-after", &earlier)]).retry_after, Some(Duration::ZERO));
        assert_eq!(hints(&[("retry-after", "soon"), ("retry-after-ms", "-1")]).retry_after, None);
        assert_eq!(hints(&[("retry-after-ms", "NaN")]).retry_after, None);
        assert_eq!(hints(&[("retry-after-ms", "1e300")]).retry_after, Some(Duration::MAX));
        assert_eq!(hints(&[("retry-after", "99999999999999999999999")]).retry_after, Some(Duration::MAX));
        assert_eq!(hints(&[("retry-after", "inf")]).retry_after, Some(Duration::MAX));
    }

    #[test]
    fn should_retry_is_true_false_or_absent() {
        let now = SystemTime::now();
        let should = |value: &str| Hints::from_headers(&headers(&[("x-should-retry", value)]), now).should_retry;
        assert_eq!(should("true"), Some(true));
        assert_eq!(should("FALSE"), Some(false));
        assert_eq!(should("maybe"), None);
        assert_eq!(Hints::from_headers(&HeaderMap::new(), now), Hints::default());
    }

    #[test]
    fn error_bodies_of_every_shape() {
        let openai = br#"{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}"#;
        let error = http_error(429, openai, false, None);
        assert_eq!(error.to_string(), "RateLimitError: 429 Rate limit reached (rate_limit_exceeded)");
        assert_eq!(error.code(), Some("rate_limit_exceeded"));

        let anthropic = br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        let error = http_error(529, anthropic, false, None);
        assert_eq!(error.to_string(), "OverloadedError: 529 Overloaded (overloaded_error)");
        assert_eq!(error.code(), Some("overloaded_error"));

        let ollama = br#"{"error":"model 'x' not found"}"#;
        assert_eq!(http_error(404, ollama, false, None).to_string(), "NotFoundError: 404 model 'x' not found");
        let vllm = br#"{"object":"error","message":"too long","type":"BadRequestError","param":null,"code":400}"#;
        assert_eq!(http_error(400, vllm, false, None).message(), "400 too long");
        let array = br#"[{"error":{"code":429,"message":"Resource exhausted","status":"RESOURCE_EXHAUSTED"}}]"#;
        assert_eq!(http_error(429, array, false, None).message(), "429 Resource exhausted (RESOURCE_EXHAUSTED)");

        // Google's (Gemini, natively and through its OpenAI-compatible endpoint): the status names the
        // error, `RetryInfo` is the server's hint, a daily `QuotaFailure` a quota code.
        let gemini = br#"[{"error":{"code":429,"message":"You exceeded your current quota. Please retry in 34.07s.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":"GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}]},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"34s"}]}}]"#;
        let error = http_error(429, gemini, false, None);
        assert_eq!(error.code(), Some("RESOURCE_EXHAUSTED"));
        assert_eq!(error.retry_after(), Some(Duration::from_secs(34)));
        let daily = br#"{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier"}]},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"43200s"}]}}"#;
        let error = http_error(429, daily, false, None);
        assert_eq!(error.to_string(), "RateLimitError: 429 Quota exceeded (daily_quota_exhausted)");
        assert_eq!(error.code(), Some("daily_quota_exhausted"));

        let html = b"<html><body>502 Bad Gateway</body></html>\n";
        assert_eq!(http_error(502, html, false, None).message(), "502 <html><body>502 Bad Gateway</body></html>");
        assert_eq!(http_error(400, b"", false, None).message(), "400 status code (no body)");
        assert_eq!(http_error(500, b" \n", false, None).to_string(), "InternalServerError: 500 status code (no body)");
    }

    #[test]
    fn a_cut_body_says_so_and_keeps_whole_characters() {
        let body = "\u{e9}".repeat(MAX_ERROR_BODY);
        let cut = &body.as_bytes()[..MAX_ERROR_BODY - 1];
        let error = http_error(500, cut, true, None);
        assert!(error.message().ends_with("\u{e9} (error body cut at 16 KiB)"), "{}", &error.message()[16000..]);
    }

    #[test]
    fn the_key_is_redacted_from_bodies_codes_and_debug() {
        let secret = Secret::new(Some("sk-canary-SECRET123".to_owned()));
        let body = br#"{"error":{"message":"bad key sk-canary-SECRET123","code":"sk-canary-SECRET123"}}"#;
        let error = http_error(401, body, false, secret.as_ref());
        let everything = format!("{error} {error:?} {secret:?}");
        assert!(!everything.contains("SECRET123"), "{everything}");
        assert!(error.message().contains("bad key <redacted>"));
        assert!(Secret::new(Some(String::new())).is_none());
    }

    /// The digest a fleet's Redis keys are named by: pinned, so that processes of older and newer
    /// builds (sha2 then, ring now) keep sharing one retry budget and cooldown per key.
    #[test]
    fn the_scope_is_the_sha256_fingerprint_of_the_url_and_the_key() {
        let endpoint = Endpoint::new("https://api.openai.com/v1".to_owned(), Some("sk-test".to_owned()), "m");
        assert_eq!(endpoint.scope("openai"), "openai:493641ab4f38f29f");
        let local = Endpoint::new("http://127.0.0.1:8080/v1/".to_owned(), None, "m");
        assert_eq!(local.scope("anthropic"), "anthropic:ea69aead76bbb8cd");
    }

    /// A body that is bare JSON, not events: the same items wherever the reads split it, and what it
    /// says when it is an error.
    #[test]
    fn a_bare_json_body_gives_the_same_items_however_it_is_split() {
        use super::super::{anthropic::AnthropicWire, openai::OpenAiWire};
        let error =
            r#"{"error":{"message":"Incorrect API key","type":"invalid_request_error","code":"invalid_api_key"}}"#;
        let pretty = "{\n  \"error\": {\"type\": \"overloaded_error\", \"message\": \"Overloaded\"}\n}";
        for body in [format!("{error}\n"), format!("{error}\ndata: {{}}\n\n"), error.to_owned(), pretty.to_owned()] {
            let bytes = body.as_bytes();
            let openai = |reads: &[&[u8]]| replay(OpenAiWire::default(), reads, false, None);
            let anthropic = |reads: &[&[u8]]| replay(AnthropicWire::default(), reads, false, None);
            let (first, second) = (openai(&[bytes]), anthropic(&[bytes]));
            assert!(matches!(&first[..], [Ok(StreamEvent::Error { error: Some(_), .. })]), "{body}: {first:?}");
            assert_eq!(first, second, "{body}");
            for at in 1..bytes.len() {
                assert_eq!(openai(&[&bytes[..at], &bytes[at..]]), first, "{body} split at {at}");
            }
        }
    }

    #[test]
    fn base_urls_are_checked() {
        assert_eq!(check_base_url("http://127.0.0.1:8080/v1/").unwrap(), "http://127.0.0.1:8080/v1");
        assert!(check_base_url("localhost:8080").is_err());
        assert!(check_base_url("ftp://example.com").is_err());
        assert!(check_base_url("not a url").is_err());
        let azure = "https://x.openai.azure.com/openai/deployments/d?api-version=2024-10-21";
        assert_eq!(check_base_url(azure).unwrap(), azure);
        for fragment in ["http://127.0.0.1:8080/v1#frag", "http://127.0.0.1:8080/v1#", "https://h/v1?a=b#c"] {
            assert!(check_base_url(fragment).unwrap_err().starts_with("it has a fragment (`#...`)"), "{fragment}");
        }
    }

    #[test]
    fn a_base_url_with_a_fragment_from_the_environment_is_a_config_error() {
        let names = EnvNames {
            provider: "anthropic",
            key: "ANTHROPIC_API_KEY",
            base_url: "ANTHROPIC_BASE_URL",
            default_base_url: "https://api.anthropic.com",
        };
        let lookup = |name: &str| (name == "ANTHROPIC_BASE_URL").then(|| "http://127.0.0.1:9/#sk-secret".to_owned());
        let error = names.read(lookup).unwrap_err();
        assert!(matches!(error, ConfigError::InvalidBaseUrl { variable: "ANTHROPIC_BASE_URL", .. }), "{error:?}");
        let text = error.to_string();
        assert!(text.starts_with("ANTHROPIC_BASE_URL is not a valid base URL (it has a fragment (`#...`)"), "{text}");
        assert!(
            text.ends_with(
                "remove it, and put what it holds in the path or the query): set it to e.g. https://api.anthropic.com"
            ),
            "{text}"
        );
        assert!(!text.contains("sk-secret"), "{text}");
    }

    #[test]
    fn the_path_goes_before_the_query() {
        let url = |base: &str| Endpoint::new(base.to_owned(), None, "m").url("/chat/completions");
        assert_eq!(url("http://h:1/v1").unwrap(), "http://h:1/v1/chat/completions");
        assert_eq!(url("http://h:1/v1/").unwrap(), "http://h:1/v1/chat/completions");
        assert_eq!(
            url("https://x.azure.com/openai/deployments/d/?api-version=2024-10-21").unwrap(),
            "https://x.azure.com/openai/deployments/d/chat/completions?api-version=2024-10-21"
        );
        assert_eq!(url("http://h/v1?a=1&b=/x/").unwrap(), "http://h/v1/chat/completions?a=1&b=/x/");
        assert_eq!(url(" http://h/v1/?b=/ ").unwrap(), "http://h/v1/chat/completions?b=/");
        assert_eq!(url("http://h?").unwrap(), "http://h/chat/completions?");
        let key = "sk-canary-SECRET123";
        let fragment = Endpoint::new(format!("http://h/v1?key={key}#{key}"), Some(key.to_owned()), "m");
        let error = fragment.url("/chat/completions").unwrap_err();
        assert!(error.is_programming(), "{error:?}");
        let text = format!("{error} {error:?}");
        assert!(text.contains("`http://h/v1?key=<redacted>#<redacted>` has a fragment"), "{text}");
        assert!(!text.contains("SECRET"), "{text}");
    }

    #[test]
    fn a_stalled_error_body_keeps_its_status_and_what_arrived() {
        let error = http_error_of(401, br#"{"error": {"message": "invalid"#, BodyEnd::Stalled, None);
        assert_eq!(
            error.to_string(),
            r#"AuthenticationError: 401 {"error": {"message": "invalid (error body stalled after 30 bytes)"#
        );
        let whole = br#"{"error": {"message": "Invalid API key", "code": "invalid_api_key"}}"#;
        let error = http_error_of(401, whole, BodyEnd::Stalled, None);
        assert_eq!(error.message(), "401 Invalid API key (invalid_api_key) (error body stalled after 68 bytes)");
        assert_eq!(error.code(), Some("invalid_api_key"));
        // Never "no body": the overflow rule reads a bodiless 400 as a context overflow.
        assert_eq!(http_error_of(400, b"", BodyEnd::Stalled, None).message(), "400 (error body stalled after 0 bytes)");
    }

    #[test]
    fn the_server_is_the_base_urls_host_and_port() {
        let server = |url: &str| Endpoint::new(url.to_owned(), None, "m").server().map(|(h, p)| (h.to_owned(), p));
        assert_eq!(server("https://api.openai.com/v1"), Some(("api.openai.com".to_owned(), 443)));
        assert_eq!(server("http://localhost/v1/"), Some(("localhost".to_owned(), 80)));
        assert_eq!(server(" http://127.0.0.1:8080/v1 "), Some(("127.0.0.1".to_owned(), 8080)));
        assert_eq!(server("https://[::1]:9443"), Some(("::1".to_owned(), 9443)));
        assert_eq!(server("https://user:sk-secret@proxy.example:8443"), Some(("proxy.example".to_owned(), 8443)));
        assert_eq!(server("localhost:8080"), None);
        assert_eq!(server("not a url"), None);
    }
}
