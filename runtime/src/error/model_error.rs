use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

/// The code of a successful HTTP response that is no answer at all: its content type is neither an
/// event stream nor JSON (a proxy's login page), or its JSON is not the wire's answer (a health
/// check, a models list): a wrong base URL. Permanent: the same request gets the same body.
pub(crate) const NOT_A_STREAM: &str = "unexpected_content_type";

/// How a connection or a stream failed below HTTP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TransportKind {
    /// The connection could not be made.
    Connect,
    /// The call took longer than its timeout.
    Timeout,
    /// The connection was reset or closed before the response headers.
    Reset,
    /// The stream stopped before its final event.
    StreamDropped,
    /// The stream ended cleanly but without its final event.
    Truncated,
    /// The stream carried data that could not be parsed.
    Corrupted,
    /// The server's TLS certificate was refused (not trusted, expired, for another name): fixed by
    /// configuration, not by waiting, so permanent.
    Certificate,
    /// The response head (status line and headers) was malformed or over the client's limits: the
    /// same server sends the same head, so permanent.
    BadHead,
}

impl TransportKind {
    /// The error kind name used in `"<Kind>: <text>"`.
    pub const fn kind_name(self) -> &'static str {
        match self {
            TransportKind::Connect => "ConnectionError",
            TransportKind::Timeout => "TimeoutError",
            TransportKind::Reset => "ConnectionResetError",
            TransportKind::StreamDropped => "StreamDroppedError",
            TransportKind::Truncated => "IncompleteStreamError",
            TransportKind::Corrupted => "MalformedStreamError",
            TransportKind::Certificate => "CertificateError",
            TransportKind::BadHead => "MalformedResponseError",
        }
    }

    /// A short description for reasons: `connect`, `timeout`, ...
    pub const fn name(self) -> &'static str {
        match self {
            TransportKind::Connect => "connect",
            TransportKind::Timeout => "timeout",
            TransportKind::Reset => "reset",
            TransportKind::StreamDropped => "stream dropped",
            TransportKind::Truncated => "stream truncated",
            TransportKind::Corrupted => "stream corrupted",
            TransportKind::Certificate => "certificate refused",
            TransportKind::BadHead => "bad response head",
        }
    }

    /// True for the failures another attempt cannot fix ([`TransportKind::Certificate`],
    /// [`TransportKind::BadHead`]); every other transport failure is transient.
    pub const fn is_permanent(self) -> bool {
        matches!(self, TransportKind::Certificate | TransportKind::BadHead)
    }
}

/// The typed failure of one model call: what the provider or the transport said, as data.
///
/// Its Display is `"<Kind>: <text>"` (only `<Kind>` when the text is empty), e.g.
/// `"RateLimitError: 429 Too Many Requests"`. It never holds an API key.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use agentic_runtime::provider::ModelError;
///
/// let err = ModelError::http(429, "Too Many Requests").with_retry_after(Duration::from_secs(2));
/// assert_eq!(err.to_string(), "RateLimitError: 429 Too Many Requests");
/// assert_eq!(err.status(), Some(429));
/// ```
#[derive(Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct ModelError {
    /// Boxed: a model call's final message carries an `Option<ModelError>` (and a stream event a
    /// `Result<_, ModelError>`) through every layer, success path included; a failure can pay for
    /// the allocation.
    inner: Box<Facts>,
}

// Serialized as its facts, so that a durable engine's journal keeps a failed call typed
// (docs/design.md §24); read back, the kind is owned.
#[derive(Clone, PartialEq, serde::Serialize, serde::Deserialize)]
struct Facts {
    kind: Cow<'static, str>,
    message: String,
    status: Option<u16>,
    retry_after: Option<Duration>,
    should_retry: Option<bool>,
    code: Option<String>,
    transport: Option<TransportKind>,
    programming: bool,
}

// By hand: the box is not part of what the error is.
impl fmt::Debug for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let facts = &self.inner;
        f.debug_struct("ModelError")
            .field("kind", &facts.kind)
            .field("message", &facts.message)
            .field("status", &facts.status)
            .field("retry_after", &facts.retry_after)
            .field("should_retry", &facts.should_retry)
            .field("code", &facts.code)
            .field("transport", &facts.transport)
            .field("programming", &facts.programming)
            .finish()
    }
}

impl ModelError {
    /// An error of kind `kind` (e.g. `"ValueError"`) with `message`, and no typed facts.
    pub fn new(kind: impl Into<Cow<'static, str>>, message: impl Into<String>) -> Self {
        Self {
            inner: Box::new(Facts {
                kind: kind.into(),
                message: message.into(),
                status: None,
                retry_after: None,
                should_retry: None,
                code: None,
                transport: None,
                programming: false,
            }),
        }
    }

    /// An HTTP error response. The kind follows the status (`429` -> `RateLimitError`) and the text
    /// starts with the status: `"RateLimitError: 429 Too Many Requests"`.
    pub fn http(status: u16, message: impl AsRef<str>) -> Self {
        let message = message.as_ref();
        let text = if message.is_empty() { status.to_string() } else { format!("{status} {message}") };
        Self::new(http_kind_name(status), text).with_status(status)
    }

    /// A failure below HTTP (connect, timeout, reset, a dropped, truncated or corrupted stream).
    pub fn transport(kind: TransportKind, message: impl Into<String>) -> Self {
        let mut error = Self::new(kind.kind_name(), message);
        error.inner.transport = Some(kind);
        error
    }

    /// A programming error: misuse of the runtime that no retry can fix (a request that cannot be
    /// built, an unsupported feature). It is returned to the caller at once, never converted.
    pub fn programming(kind: impl Into<Cow<'static, str>>, message: impl Into<String>) -> Self {
        let mut error = Self::new(kind, message);
        error.inner.programming = true;
        error
    }

    /// Parses `"<Kind>: <text>"` (or a bare `"<Kind>"`) into an error of that kind; a text without a
    /// kind-like prefix becomes kind `"ModelError"`.
    pub fn parse(text: &str) -> Self {
        match split_kind(text) {
            Some((kind, rest)) => Self::new(kind.to_owned(), rest.to_owned()),
            None => Self::new("ModelError", text.to_owned()),
        }
    }

    /// The server's requested wait (`retry-after-ms` or `Retry-After`).
    pub fn with_retry_after(mut self, wait: Duration) -> Self {
        self.inner.retry_after = Some(wait);
        self
    }

    /// The server's `x-should-retry` header.
    pub fn with_should_retry(mut self, should_retry: bool) -> Self {
        self.inner.should_retry = Some(should_retry);
        self
    }

    /// The provider's error code, e.g. `"insufficient_quota"`.
    pub fn with_code(mut self, code: impl Into<String>) -> Self {
        self.inner.code = Some(code.into());
        self
    }

    /// Sets the HTTP status.
    pub fn with_status(mut self, status: u16) -> Self {
        self.inner.status = Some(status);
        self
    }

    /// The same error, its message passed through `change` (which takes a key out of it).
    pub(crate) fn map_message(mut self, change: &dyn Fn(&str) -> Cow<'_, str>) -> Self {
        if let Cow::Owned(shown) = change(&self.inner.message) {
            self.inner.message = shown;
        }
        self
    }

    /// The kind, e.g. `"RateLimitError"`.
    pub fn kind(&self) -> &str {
        &self.inner.kind
    }

    /// The text after the kind.
    pub fn message(&self) -> &str {
        &self.inner.message
    }

    /// The HTTP status, if the failure was an HTTP response.
    pub fn status(&self) -> Option<u16> {
        self.inner.status
    }

    /// The server's requested wait.
    pub fn retry_after(&self) -> Option<Duration> {
        self.inner.retry_after
    }

    /// The server's `x-should-retry`.
    pub fn should_retry(&self) -> Option<bool> {
        self.inner.should_retry
    }

    /// The provider's error code.
    pub fn code(&self) -> Option<&str> {
        self.inner.code.as_deref()
    }

    /// The transport failure, if the failure was below HTTP.
    pub fn transport_kind(&self) -> Option<TransportKind> {
        self.inner.transport
    }

    /// True for programming errors: made by [`ModelError::programming`], or of kind `TypeError` or
    /// `NotImplementedError` (docs/design.md §3).
    pub fn is_programming(&self) -> bool {
        self.inner.programming || is_programming_kind(&self.inner.kind)
    }
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.inner.message.is_empty() {
            f.write_str(&self.inner.kind)
        } else {
            write!(f, "{}: {}", self.inner.kind, self.inner.message)
        }
    }
}

impl std::error::Error for ModelError {}

/// True for the kinds that mark a programming error: `TypeError` and `NotImplementedError`.
pub(crate) fn is_programming_kind(kind: &str) -> bool {
    matches!(kind, "TypeError" | "NotImplementedError")
}

/// Splits `"<Kind>: <text>"` when the prefix looks like an error type name (an identifier ending in
/// `Error` or `Exception`, or a bare such identifier).
pub(crate) fn split_kind(text: &str) -> Option<(&str, &str)> {
    // A type name starts with an uppercase letter; and the text is read only as far as the name
    // goes: the first byte that cannot be part of one must be the `:` (or the end).
    if !text.as_bytes().first().is_some_and(u8::is_ascii_uppercase) {
        return None;
    }
    let length = text.bytes().position(|byte| !IN_TYPE_NAME[usize::from(byte)]);
    let (kind, rest) = match length {
        None => (text, ""),
        Some(length) if text.as_bytes()[length] == b':' => {
            let rest = &text[length + 1..];
            (&text[..length], rest.strip_prefix(' ').unwrap_or(rest))
        }
        Some(_) => return None,
    };
    let looks_like_type = kind.ends_with("Error") || kind.ends_with("Exception");
    looks_like_type.then_some((kind, rest))
}

/// The bytes of a type name: ASCII letters and digits, `_` and `.`.
static IN_TYPE_NAME: [bool; 256] = {
    let mut table = [false; 256];
    let mut byte = 0;
    while byte < 256 {
        let b = byte as u8;
        table[byte] = b.is_ascii_alphanumeric() || b == b'_' || b == b'.';
        byte += 1;
    }
    table
};

/// The SDK-style kind name of an HTTP status.
fn http_kind_name(status: u16) -> &'static str {
    match status {
        400 => "BadRequestError",
        401 => "AuthenticationError",
        402 => "PaymentRequiredError",
        403 => "PermissionDeniedError",
        404 => "NotFoundError",
        408 => "RequestTimeoutError",
        409 => "ConflictError",
        300..=399 => "RedirectError",
        413 => "RequestTooLargeError",
        422 => "UnprocessableEntityError",
        425 => "TooEarlyError",
        429 => "RateLimitError",
        502 => "BadGatewayError",
        503 => "ServiceUnavailableError",
        504 => "GatewayTimeoutError",
        529 => "OverloadedError",
        500..=599 => "InternalServerError",
        _ => "APIStatusError",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_is_kind_colon_text_or_kind_alone() {
        assert_eq!(ModelError::new("ValueError", "").to_string(), "ValueError");
        assert_eq!(ModelError::http(503, "").to_string(), "ServiceUnavailableError: 503");
        assert_eq!(ModelError::http(401, "bad").kind(), "AuthenticationError");
    }

    #[test]
    fn parses_kind_prefixes() {
        let err = ModelError::parse("TypeError: missing argument");
        assert_eq!((err.kind(), err.message()), ("TypeError", "missing argument"));
        assert!(err.is_programming());
        assert!(ModelError::parse("NotImplementedError").is_programming());
        let plain = ModelError::parse("rate limit: slow down");
        assert_eq!((plain.kind(), plain.message()), ("ModelError", "rate limit: slow down"));
    }
}
