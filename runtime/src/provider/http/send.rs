//! Sending one request and reading a response's first bytes, wire-neutral: the request built
//! (content type, SSE `accept`, `x-agentic-call`), the key's header marked sensitive, the JSON-mode
//! style fallback, bounded reads of a body, the kind of a 2xx body, and reqwest's errors typed by
//! transport kind without the URL or the key.

use std::time::Duration;

use reqwest::header::HeaderMap;

use super::super::boundary::{CERTIFICATE_FIX, HEAD_FIX, bad_head, cause, certificate_refused};
use super::super::secret::{Secret, display_url, redact};
use super::super::{CallBounds, Request};
use super::errors::BodyEnd;
use crate::error::{ModelError, TransportKind};

/// Reads at most `limit` bytes of `response`'s body; the flag says whether the body was longer.
/// A body that fails mid-way keeps what arrived (the status already says what happened).
pub(crate) async fn read_capped(response: &mut reqwest::Response, limit: usize) -> (Vec<u8>, bool) {
    let (body, end) = read_bounded(response, limit, None).await;
    (body, end == BodyEnd::Cut)
}

/// Reads at most `limit` bytes of `response`'s body, until `deadline` if there is one.
pub(super) async fn read_bounded(
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
pub(super) fn error_body_deadline(bounds: &CallBounds, started: tokio::time::Instant) -> tokio::time::Instant {
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
pub(super) enum BodyKind {
    /// An event stream, or no content type at all (some local servers send none).
    Stream,
    /// A whole JSON answer: a server that ignored `"stream": true`, or an error object.
    Json,
    /// Anything else, e.g. a proxy's HTML login page: the content type as sent.
    Other(String),
}

pub(super) fn body_kind(response: &reqwest::Response) -> BodyKind {
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

pub(crate) use crate::util::causes::describe;

/// A streamed JSON `POST` to `url` with `headers`, the `x-agentic-call` header and the call's timeout.
/// A request that cannot be built (an invalid base URL) is a programming error.
pub(crate) fn post(
    client: &reqwest::Client,
    url: &str,
    mut headers: HeaderMap,
    body: &serde_json::Value,
    request: &Request<'_>,
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
    /// Whether the first response (its status and its body, read to [`MAX_ERROR_BODY`](super::errors::MAX_ERROR_BODY)) calls for it.
    pub(crate) applies: fn(u16, &str) -> bool,
}
