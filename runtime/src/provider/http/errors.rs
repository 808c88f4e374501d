//! Errors as the servers send them, typed: [`ErrorFacts`] (what one error says, before redaction),
//! the body shapes any server or gateway sends ([`ErrorFacts::parse`]), the shared spelling table
//! consulted after a wire's own, and the `ModelError`s of an HTTP error, an error event, a
//! malformed chunk and a body that is no answer. All redaction of a server's text is here (and in
//! [`Out::error`](super::seam::Out::error), which calls [`error_event`]): no wire sees the key.

use std::borrow::Cow;
use std::time::{Duration, SystemTime};

use super::super::StreamEvent;
use super::super::google_rpc::{Details, status_kind};
use super::super::secret::{Secret, redact};
use super::super::stated_limit::BodyLimit;
use super::decode::DecodeError;
use crate::classify::patterns::QUOTA_UNTIL_RESET;
use crate::error::model_error::NOT_A_STREAM;
use crate::error::unreadable::{MALFORMED, UNREADABLE};
use crate::error::{ModelError, TransportKind};

/// The most bytes of an error response body read and kept (16 KiB); the rest is cut.
pub(crate) const MAX_ERROR_BODY: usize = 16 * 1024;

/// What one error says, as its wire read it and before any redaction: the message, the type as
/// written, the HTTP status (for an error inside a stream: the status the API gives the same
/// failure), the most specific code, the body's hints, and the (kind, status) its wire's vocabulary
/// gives it. A wire builds these with [`ErrorFacts::parse`] or [`ErrorFacts::from_error`] (the
/// shapes every server sends) or by hand for shapes of its own, types them with
/// [`ErrorFacts::typed_by`], and hands them to [`Out::error`](super::seam::Out::error) or returns them
/// from [`Decoder::error_body`](super::seam::Decoder::error_body); the plumbing redacts and builds the
/// [`ModelError`].
///
/// The generic shapes: `{"error": {"message", "type", "code"}}` (OpenAI), `{"type": "error",
/// "error": {"type", "message"}}` (Anthropic), `{"error": {"code", "message", "status", "details"}}`
/// (Google's, [`google_rpc`](super::super::google_rpc)), `{"error": "text"}`, `{"message": ..}` or
/// `{"detail": ..}`, possibly inside a one-element array.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct ErrorFacts {
    /// The message, when the body had one.
    pub(crate) message: Option<String>,
    /// The error's type as written (`type`, or Google's `status`): it becomes the kind when no table
    /// knows it and it reads like one (`overloaded_error` -> `OverloadedError`).
    pub(crate) kind: Option<String>,
    /// The most specific code as written: `code` when it is a string (`rate_limit_exceeded`,
    /// `context_length_exceeded`), a spent quota's ([`Details`]), an `ErrorInfo.reason`.
    pub(crate) code: Option<String>,
    /// The HTTP status: a numeric `code` (vLLM and Google send the status there), or for an error
    /// inside a 200 stream the status the API gives the same failure over HTTP.
    pub(crate) status: Option<u16>,
    /// The server's requested wait, from the body (Google's `RetryInfo.retryDelay`); a header's wins.
    pub(crate) retry_after: Option<Duration>,
    /// Whether the body says to retry (a header's `x-should-retry` wins).
    pub(crate) should_retry: Option<bool>,
    /// A limit the body states spent (OpenRouter's `metadata.headers`), judged when the error is
    /// built ([`ErrorFacts::judged_at`]): the server's wait, or a quota spent until its reset.
    pub(crate) stated: Option<BodyLimit>,
    /// The SDK-style kind and equivalent HTTP status the wire's own vocabulary gives this error
    /// ([`ErrorFacts::typed_by`]); without, the shared spellings ([`shared_type`]) are consulted.
    pub(crate) typed: Option<(&'static str, u16)>,
}

impl ErrorFacts {
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
                let details = Details::read(error.get("details"));
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
                    stated: BodyLimit::read(error.get("metadata")),
                    ..Self::default()
                })
            }
            serde_json::Value::String(message) => Some(Self { message: Some(message.clone()), ..Self::default() }),
            _ => None,
        }
    }

    /// These facts typed by `vocabulary` (a wire's table of its type and code names): its answer for
    /// the code, else for the type. An error no entry names stays untyped, for the shared spellings.
    // The hook for a wire with names of its own (Gemini's, Responses'): OpenAI's and Anthropic's
    // are all shared, so no wire calls it yet.
    #[allow(dead_code)]
    pub(crate) fn typed_by(mut self, vocabulary: fn(&str) -> Option<(&'static str, u16)>) -> Self {
        self.typed = self.typed.or_else(|| {
            // The code is the more specific of the two (OpenAI: type `invalid_request_error`, code
            // `invalid_api_key`).
            self.code.as_deref().and_then(vocabulary).or_else(|| self.kind.as_deref().and_then(vocabulary))
        });
        self
    }

    /// These facts with the body's statement of a spent limit judged at `now`: its wait is the
    /// server's when the body names no other, and a reset an hour or more away is a quota spent
    /// until then ([`QUOTA_UNTIL_RESET`], which says more than the code beside it, as Google's
    /// daily quota does). A reset that has passed says nothing.
    pub(crate) fn judged_at(mut self, now: SystemTime) -> Self {
        let Some(spent) = self.stated.take().and_then(|limit| limit.at(now)) else { return self };
        self.retry_after = self.retry_after.or(Some(spent.wait));
        if spent.quota {
            self.code = Some(QUOTA_UNTIL_RESET.to_owned());
        }
        self
    }

    /// The code to type the error with: the `code`, else the `type`.
    pub(crate) fn typed_code(&self) -> Option<&str> {
        self.code.as_deref().or(self.kind.as_deref()).filter(|code| !code.is_empty())
    }
}

fn string(value: Option<&serde_json::Value>) -> Option<String> {
    value.and_then(serde_json::Value::as_str).map(str::to_owned)
}

/// The shared spellings: the SDK-style kind and HTTP status of the error type and code names that
/// servers and gateways send whatever the wire, consulted after the wire's own vocabulary
/// ([`ErrorFacts::typed`]), so that an error inside a stream gets the status the API gives the same
/// error over HTTP and the classifiers treat both alike. OpenAI's and Anthropic's names are here,
/// not in their wires' files, because gateways (LiteLLM, OpenRouter, vLLM) re-emit each on the
/// other's wire; Google's status names too, which Gemini's OpenAI-compatible endpoint sends. A
/// wire's names that no other wire carries belong in its own file. `None` for an unknown name.
pub(crate) fn shared_type(kind: &str) -> Option<(&'static str, u16)> {
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
        _ => return status_kind(kind),
    })
}

/// The typed error of an error event inside a stream, and its text as sent (the key redacted).
///
/// The kind and equivalent status come from the wire's vocabulary ([`ErrorFacts::typed`]), else from
/// the shared spellings of the code, then of the type ([`shared_type`]); else a type that is already
/// a kind name (as vLLM sends) is kept, a `*_error` type is camel-cased, and a bare status gives
/// its kind (else `APIError`). The status is a numeric `code`'s, else the table's; the code is
/// `code`, else `type`.
#[cold]
pub(crate) fn error_event(facts: &ErrorFacts, secret: Option<&Secret>) -> StreamEvent {
    let error = typed_error(facts, secret);
    StreamEvent::Error { message: error.message().to_owned(), error: Some(error) }
}

/// The typed error of [`error_event`], whose message is the event's text.
fn typed_error(facts: &ErrorFacts, secret: Option<&Secret>) -> ModelError {
    let judged;
    let facts = match facts.stated {
        Some(_) => {
            judged = facts.clone().judged_at(SystemTime::now());
            &judged
        }
        None => facts,
    };
    let message = redact(facts.message.as_deref().unwrap_or(""), secret);
    // The type becomes the kind: redacted too, in case the server echoes the key there.
    let written = facts.kind.as_deref().map(|kind| redact(kind, secret));
    let known = facts
        .typed
        .or_else(|| facts.code.as_deref().and_then(shared_type))
        .or_else(|| written.as_deref().and_then(shared_type));
    let kind: Cow<'static, str> = match (written.as_deref(), known) {
        (_, Some((kind, _))) => Cow::Borrowed(kind),
        (Some(kind), None) if crate::error::model_error::split_kind(kind).is_some() => Cow::Owned(kind.to_owned()),
        (Some(kind), None) if kind.ends_with("_error") => Cow::Owned(camel_case(kind)),
        _ => match facts.status {
            Some(status) => Cow::Owned(ModelError::http(status, "").kind().to_owned()),
            None => Cow::Borrowed("APIError"),
        },
    };
    let mut error = ModelError::new(kind, message);
    if let Some(status) = facts.status.filter(|status| (100..=599).contains(status)).or(known.map(|(_, status)| status))
    {
        error = error.with_status(status);
    }
    if let Some(code) = facts.typed_code() {
        error = error.with_code(redact(code, secret));
    }
    if let Some(wait) = facts.retry_after {
        error = error.with_retry_after(wait);
    }
    match facts.should_retry {
        Some(should_retry) => error.with_should_retry(should_retry),
        None => error,
    }
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
/// The body is read with the generic shapes ([`ErrorFacts::parse`]); a call reads it with its
/// wire's [`Decoder::error_body`](super::seam::Decoder::error_body) ([`http_error_of`]).
pub(crate) fn http_error(status: u16, body: &[u8], cut: bool, secret: Option<&Secret>) -> ModelError {
    http_error_of(status, body, if cut { BodyEnd::Cut } else { BodyEnd::Whole }, ErrorFacts::parse, secret)
}

/// [`http_error`] of a body read as far as `end` says: a stalled body keeps what arrived, and says
/// so (never "no body", which the overflow rule would read as a bodiless 400). `read` is the wire's
/// reading of a JSON body ([`Decoder::error_body`](super::seam::Decoder::error_body)).
#[cold]
pub(crate) fn http_error_of(
    status: u16,
    body: &[u8],
    end: BodyEnd,
    read: fn(&serde_json::Value) -> Option<ErrorFacts>,
    secret: Option<&Secret>,
) -> ModelError {
    let cut = end == BodyEnd::Cut;
    let text = String::from_utf8_lossy(body);
    let text = if end == BodyEnd::Whole { &text } else { text.trim_end_matches('\u{fffd}') };
    let parsed = if cut { None } else { serde_json::from_str::<serde_json::Value>(text).ok().as_ref().and_then(read) };
    let parsed = parsed.map(|parsed| parsed.judged_at(SystemTime::now()));
    let retry_after = parsed.as_ref().and_then(|parsed| parsed.retry_after);
    let should_retry = parsed.as_ref().and_then(|parsed| parsed.should_retry);
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
    // The body's hints; a header's, applied after by the caller, win.
    if let Some(wait) = retry_after {
        error = error.with_retry_after(wait);
    }
    match should_retry {
        Some(should_retry) => error.with_should_retry(should_retry),
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

/// A `2xx` whose body is neither an event stream nor JSON: a wrong base URL, or a proxy's login page.
/// The same request gets the same page, so it is permanent (code [`NOT_A_STREAM`]); the text names
/// the status, the content type and the URL's path (never its host's secrets or the query).
#[cold]
pub(crate) fn not_a_stream(
    status: reqwest::StatusCode,
    content_type: &str,
    path: &str,
    secret: Option<&Secret>,
) -> ModelError {
    let text = format!(
        "{} from POST {path} is `{content_type}`, not an event stream (`text/event-stream`): check the base \
         URL; a web page or a proxy's login page answered instead of the model API",
        status
    );
    ModelError::new("UnexpectedContentTypeError", redact(&text, secret))
        .with_status(status.as_u16())
        .with_code(NOT_A_STREAM)
}

/// A malformed chunk: typed as a corrupted stream (retryable), with a short excerpt of the data.
#[cold]
pub(crate) fn malformed(data: &str, error: &dyn std::fmt::Display, secret: Option<&Secret>) -> ModelError {
    ModelError::transport(TransportKind::Corrupted, format!("{MALFORMED}{error}: {}", excerpt(data, secret)))
}

/// What a server sent that a decoder could not read: a corrupted stream ([`malformed`]), or a
/// shape the wire does not read ([`unreadable`]).
#[cold]
pub(crate) fn undecodable(data: &str, error: DecodeError, secret: Option<&Secret>) -> ModelError {
    match error {
        DecodeError::Corrupted(error) => malformed(data, &error, secret),
        DecodeError::Unreadable(what) => unreadable(&what, data, secret),
    }
}

/// JSON of a shape the wire does not read, `what` naming it: typed as a corrupted stream, so that
/// one call is made again (a proxy may have mangled one answer), and coded [`UNREADABLE`], so that
/// layer 1 knows the second call that fails on the same `what`
/// ([`unreadable_what`](crate::error::unreadable::unreadable_what)) for a format this client does
/// not read and stops. The text: `malformed chunk: {what}: {excerpt}`.
#[cold]
pub(crate) fn unreadable(what: &str, data: &str, secret: Option<&Secret>) -> ModelError {
    let what = redact(what, secret);
    ModelError::transport(TransportKind::Corrupted, format!("{MALFORMED}{what}: {}", excerpt(data, secret)))
        .with_code(UNREADABLE)
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
#[cold]
pub(super) fn not_an_answer(path: &str, answer: &str, body: &str, secret: Option<&Secret>) -> ModelError {
    let text = format!(
        "the JSON answer to POST {path} is not {answer}: {}: check the base URL; it likely points at a \
         health check, a models list or another API instead of the model API",
        excerpt(body, secret)
    );
    ModelError::new("NotAnAnswerError", redact(&text, secret)).with_code(NOT_A_STREAM)
}

/// The error our providers make of a 2xx body, or of one event of a stream, that another client
/// could not decode into what it asked for (`error`, its decoder's): a body that is not JSON, or
/// JSON shaped like an answer (`is_answer`) with a field the client could not read, is a malformed
/// chunk (retryable, as a corrupted stream); an error object, the error event it is
/// ([`event_error`]); any other JSON, no answer (permanent: the base URL likely points at another
/// API). No key to redact: the client's key is its own.
#[cfg(any(feature = "async-openai", feature = "genai"))]
#[cold]
pub(crate) fn undecodable_answer(
    text: &str,
    error: &dyn std::fmt::Display,
    is_answer: fn(&serde_json::Value) -> bool,
) -> ModelError {
    let Some(value) = serde_json::from_str::<serde_json::Value>(text).ok().filter(|value| !is_answer(value)) else {
        return malformed(text, error, None);
    };
    match ErrorFacts::parse(&value) {
        Some(_) => event_error(&value),
        None => not_an_answer("(the client's URL)", "what the client asked for", text, None),
    }
}

/// The typed error of an error event (or a 2xx body that is one), `body` being the event's JSON or
/// the error object inside it (as genai hands it over), as our providers type it ([`error_event`]):
/// by its type and code, since no status came with it.
#[cfg(any(feature = "async-openai", feature = "genai"))]
#[cold]
pub(crate) fn event_error(body: &serde_json::Value) -> ModelError {
    let facts = match body {
        serde_json::Value::Object(object) if !object.contains_key("error") => ErrorFacts::from_error(body),
        _ => ErrorFacts::parse(body),
    };
    typed_error(&facts.unwrap_or_default(), None)
}

/// An answer with no content, no tool calls and no finish reason: a reply cut short, as a stream
/// without its final event is (retryable). `what` says what came back.
#[cold]
pub(crate) fn empty_answer(what: &str) -> ModelError {
    ModelError::transport(
        TransportKind::Truncated,
        format!("the answer ended without content, tool calls or a finish reason: {what}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

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

    /// A wire's vocabulary types an error before the shared spellings do: the code first, then the type.
    #[test]
    fn a_wires_vocabulary_comes_before_the_shared_spellings() {
        fn vocabulary(name: &str) -> Option<(&'static str, u16)> {
            (name == "server_is_overloaded").then_some(("ServiceUnavailableError", 503))
        }
        let facts = |kind: &str, code: &str| ErrorFacts {
            message: Some("busy".into()),
            kind: Some(kind.into()),
            code: Some(code.into()),
            ..ErrorFacts::default()
        };
        let typed = |facts: ErrorFacts| match error_event(&facts, None) {
            StreamEvent::Error { error: Some(error), .. } => (error.kind().to_owned(), error.status()),
            other => panic!("{other:?}"),
        };
        let own = facts("api_error", "server_is_overloaded").typed_by(vocabulary);
        assert_eq!(own.typed, Some(("ServiceUnavailableError", 503)));
        assert_eq!(typed(own), ("ServiceUnavailableError".to_owned(), Some(503)));
        // The type, when the code is unknown to the wire; the shared table, when both are.
        assert_eq!(
            facts("server_is_overloaded", "x").typed_by(vocabulary).typed,
            Some(("ServiceUnavailableError", 503))
        );
        let shared = facts("api_error", "x").typed_by(vocabulary);
        assert_eq!((shared.typed, typed(shared)), (None, ("InternalServerError".to_owned(), Some(500))));
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

    /// OpenRouter's body, its limit stated in `metadata.headers` with the reset `from_now` later.
    fn openrouter(message: &str, remaining: u32, from_now: Duration) -> String {
        let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap();
        openrouter_reset_at(message, remaining, (now + from_now).as_millis())
    }

    /// OpenRouter's body, its limit's reset at `reset` ms since the UNIX epoch.
    fn openrouter_reset_at(message: &str, remaining: u32, reset: u128) -> String {
        format!(
            r#"{{"error":{{"message":"{message}","code":429,"metadata":{{"headers":{{"X-RateLimit-Limit":"50","X-RateLimit-Remaining":"{remaining}","X-RateLimit-Reset":"{reset}"}},"provider_name":null}}}},"user_id":"user_2mBd"}}"#
        )
    }

    /// A limit the body states spent: hours away, a quota (its code says so, and the reset is the
    /// wait); within the hour, the server's wait; with requests left, or a reset passed, nothing.
    #[test]
    fn openrouters_stated_limit_is_the_wait_or_a_spent_quota() {
        let daily = openrouter("Rate limit exceeded: free-models-per-day.", 0, Duration::from_secs(5 * 3600));
        let error = http_error(429, daily.as_bytes(), false, None);
        assert_eq!(error.code(), Some(QUOTA_UNTIL_RESET));
        assert_eq!(error.message(), "429 Rate limit exceeded: free-models-per-day. (quota_spent_until_reset)");
        let wait = error.retry_after().unwrap();
        assert!(wait > Duration::from_secs(4 * 3600) && wait <= Duration::from_secs(5 * 3600), "{wait:?}");

        let per_minute = openrouter("Rate limit exceeded: free-models-per-min.", 0, Duration::from_secs(40));
        let error = http_error(429, per_minute.as_bytes(), false, None);
        assert_eq!(error.code(), None);
        let wait = error.retry_after().unwrap();
        assert!(wait > Duration::from_secs(30) && wait <= Duration::from_secs(40), "{wait:?}");

        let left = openrouter("Rate limit exceeded", 3, Duration::from_secs(5 * 3600));
        let past = openrouter_reset_at("Rate limit exceeded", 0, 1_741_305_600_000);
        for body in [left, past] {
            let error = http_error(429, body.as_bytes(), false, None);
            assert_eq!((error.code(), error.retry_after()), (None, None), "{body}");
        }
        // Inside a stream (an error event of a 200), the same reading.
        let value: serde_json::Value = serde_json::from_str(&daily).unwrap();
        let StreamEvent::Error { error: Some(error), .. } = error_event(&ErrorFacts::parse(&value).unwrap(), None)
        else {
            panic!("an error event")
        };
        assert_eq!((error.status(), error.code()), (Some(429), Some(QUOTA_UNTIL_RESET)));
        // A header's wait wins over the body's, as it does over Google's `RetryInfo`.
        let headers = super::super::hints::Hints { retry_after: Some(Duration::from_secs(2)), should_retry: None };
        let error = headers.apply(http_error(429, per_minute.as_bytes(), false, None));
        assert_eq!(error.retry_after(), Some(Duration::from_secs(2)));
    }

    #[test]
    fn a_stalled_error_body_keeps_its_status_and_what_arrived() {
        let error = http_error_of(401, br#"{"error": {"message": "invalid"#, BodyEnd::Stalled, ErrorFacts::parse, None);
        assert_eq!(
            error.to_string(),
            r#"AuthenticationError: 401 {"error": {"message": "invalid (error body stalled after 30 bytes)"#
        );
        let whole = br#"{"error": {"message": "Invalid API key", "code": "invalid_api_key"}}"#;
        let error = http_error_of(401, whole, BodyEnd::Stalled, ErrorFacts::parse, None);
        assert_eq!(error.message(), "401 Invalid API key (invalid_api_key) (error body stalled after 68 bytes)");
        assert_eq!(error.code(), Some("invalid_api_key"));
        // Never "no body": the overflow rule reads a bodiless 400 as a context overflow.
        assert_eq!(
            http_error_of(400, b"", BodyEnd::Stalled, ErrorFacts::parse, None).message(),
            "400 (error body stalled after 0 bytes)"
        );
    }
}
