//! The error steps: an HTTP error with a provider's body (and its presets), an error event
//! mid-stream, a JSON error sent bare on a 200, and the key a body may echo.

use super::*;

/// Which preset body an [`HttpError`] renders.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Preset {
    Generic,
    ContextOverflow,
    InvalidApiKey,
}

/// An HTTP error answer: the `http_error`, `context_overflow` and `invalid_api_key` steps.
///
/// The body has the shape of the request's wire, with the type, message and code the real API
/// sends with the status unless set: each wire's module has its table
/// ([`openai`](crate::wire::openai#errors), [`anthropic`](crate::wire::anthropic#errors)) and
/// says which of the options (`code`, `param`) it renders.
///
/// # Examples
///
/// ```
/// use agentic_chaos::Step;
///
/// let rate_limited = Step::http_error(429).retry_after_secs(2).should_retry(true);
/// let overloaded = Step::http_error(529).message("Overloaded").retry_after_ms(150);
/// let odd = Step::http_error(500).body("<html>Bad gateway</html>").header("content-type", "text/html");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpError {
    pub(crate) status: u16,
    pub(crate) preset: Preset,
    pub(crate) retry_after: Option<String>,
    pub(crate) retry_after_ms: Option<u64>,
    pub(crate) should_retry: Option<bool>,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) error_type: Option<String>,
    pub(crate) message: Option<String>,
    pub(crate) code: Option<String>,
    pub(crate) param: Option<String>,
    pub(crate) body: Option<String>,
    pub(crate) endless: Option<u64>,
    pub(crate) echo_key: Option<EchoKey>,
    pub(crate) stall_body_after: Option<u64>,
    pub(crate) stated_limit: Option<StatedLimit>,
}

impl HttpError {
    pub(crate) fn new(status: u16, preset: Preset) -> Self {
        Self {
            status,
            preset,
            retry_after: None,
            retry_after_ms: None,
            should_retry: None,
            headers: Vec::new(),
            error_type: None,
            message: None,
            code: None,
            param: None,
            body: None,
            endless: None,
            echo_key: None,
            stall_body_after: None,
            stated_limit: None,
        }
    }

    /// The HTTP status.
    pub fn status_code(&self) -> u16 {
        self.status
    }

    /// Replace the status (for `context_overflow` and `invalid_api_key`, whose defaults are 400 and
    /// 401).
    pub fn status(mut self, status: u16) -> Self {
        self.status = status;
        self
    }

    /// Send `retry-after: SECS`.
    ///
    /// # Default
    ///
    /// No `retry-after` header.
    pub fn retry_after_secs(mut self, secs: u64) -> Self {
        self.retry_after = Some(secs.to_string());
        self
    }

    /// Send `retry-after` with any value, e.g. an HTTP-date `"Wed, 21 Oct 2015 07:28:00 GMT"`.
    ///
    /// # Panics
    ///
    /// If the value contains CR, LF or NUL.
    pub fn retry_after(mut self, value: impl Into<String>) -> Self {
        let value = value.into();
        check_header("retry-after", &value);
        self.retry_after = Some(value);
        self
    }

    /// Send `retry-after-ms: MS`.
    ///
    /// # Default
    ///
    /// No `retry-after-ms` header.
    pub fn retry_after_ms(mut self, ms: u64) -> Self {
        self.retry_after_ms = Some(ms);
        self
    }

    /// Send `x-should-retry: true` or `false`.
    ///
    /// # Default
    ///
    /// No `x-should-retry` header.
    pub fn should_retry(mut self, retry: bool) -> Self {
        self.should_retry = Some(retry);
        self
    }

    /// The error's `param` in an OpenAI body (Anthropic bodies have none).
    ///
    /// # Default
    ///
    /// `null` (`"messages"` for `context_overflow`).
    pub fn param(mut self, param: impl Into<String>) -> Self {
        self.param = Some(param.into());
        self
    }

    /// Send this exact body instead of the provider-shaped one (e.g. an HTML page from a proxy, or
    /// an oversized body). The content type stays `application/json` unless a header overrides it.
    pub fn body(mut self, body: impl Into<String>) -> Self {
        self.body = Some(body.into());
        self
    }

    /// Never end the body: send it chunked (no `content-length`), then a newline every
    /// [`DEFAULT_INTERVAL_MS`] milliseconds, until the client hangs up
    /// or the server stops. `endless_body` in a scenario file.
    ///
    /// # Default
    ///
    /// The body ends.
    pub fn endless_body(mut self) -> Self {
        self.endless = Some(self.endless.unwrap_or(crate::DEFAULT_INTERVAL_MS));
        self.stall_body_after = None;
        self
    }

    /// With an endless body: the pause between two newlines; 0 sends them as fast as the client
    /// reads. Implies [`endless_body`](HttpError::endless_body).
    ///
    /// # Default
    ///
    /// [`DEFAULT_INTERVAL_MS`].
    pub fn interval_ms(mut self, ms: u64) -> Self {
        self.endless = Some(ms);
        self.stall_body_after = None;
        self
    }

    /// Send the head (with the `content-length` of the whole body) and the body's first `bytes`
    /// bytes, then nothing more until the client hangs up or the server stops, as a
    /// [`hang`](Step::hang) does: an error whose body never finishes arriving. 0 sends the head
    /// only; a count at or past the body's length sends the whole body (and then the connection
    /// stays silent). `stall_body_after` in a scenario file, which refuses it with `endless_body`;
    /// here the last of [`endless_body`](HttpError::endless_body) and this one wins.
    ///
    /// # Default
    ///
    /// The whole body, at once.
    ///
    /// # Examples
    ///
    /// ```
    /// use agentic_chaos::Step;
    ///
    /// let slow_429 = Step::http_error(429).retry_after_secs(1).stall_body_after(10);
    /// let head_only = Step::invalid_api_key().stall_body_after(0);
    /// ```
    pub fn stall_body_after(mut self, bytes: u64) -> Self {
        self.stall_body_after = Some(bytes);
        self.endless = None;
        self
    }

    /// State the rate limit in the error body, as OpenRouter does (see [`StatedLimit`]): the error
    /// object gets `"code": <status>` (a number, unless [`code`](HttpError::code) is set) and
    /// `"metadata": {"headers": {"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"},
    /// "provider_name": null}`. A custom [`body`](HttpError::body) is sent as it is, without it.
    ///
    /// # Default
    ///
    /// No statement in the body.
    ///
    /// # Examples
    ///
    /// ```
    /// use agentic_chaos::{StatedLimit, Step};
    ///
    /// // OpenRouter's free models, their daily quota spent, five hours before it refills.
    /// let spent = Step::http_error(429)
    ///     .message("Rate limit exceeded: free-models-per-day. Add 10 credits to unlock 1000 free model requests per day")
    ///     .stated_limit(StatedLimit::new(50, 0, 5 * 3_600_000));
    /// ```
    pub fn stated_limit(mut self, limit: StatedLimit) -> Self {
        self.stated_limit = Some(limit);
        self
    }

    /// Echo a fragment of the request's API key in the error message (or after a custom
    /// [`body`](HttpError::body)), as some servers and proxies do: a canary for a client that
    /// must never log or show any piece of its key. See [`EchoKey`].
    ///
    /// # Default
    ///
    /// No echo.
    pub fn echo_key(mut self, echo: EchoKey) -> Self {
        self.echo_key = Some(echo);
        self
    }
}

error_setters!(HttpError, type: "By status and provider, see the table above.", message: "By status and provider.",
    code: "By status, see the table above; `null` where none is given.");

/// A rate limit an [`HttpError`] states in its body rather than in its headers, as OpenRouter
/// does: `stated_limit` of `http_error` in a scenario file, `{"limit": 50, "remaining": 0,
/// "reset_in_ms": 18000000}`.
///
/// The error object carries `"metadata": {"headers": {"X-RateLimit-Limit": "50",
/// "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "<ms since the UNIX epoch>"},
/// "provider_name": null}`, the reset `reset_in_ms` after the server's clock when it answers, each
/// value a string as OpenRouter writes them.
///
/// # Examples
///
/// ```
/// use agentic_chaos::StatedLimit;
///
/// let per_minute = StatedLimit::new(20, 0, 40_000);
/// assert_eq!((per_minute.limit, per_minute.remaining, per_minute.reset_in_ms), (20, 0, 40_000));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StatedLimit {
    /// `X-RateLimit-Limit`: the requests the period allows.
    pub limit: u64,
    /// `X-RateLimit-Remaining`: the requests left (0: spent).
    pub remaining: u64,
    /// How long after the answer `X-RateLimit-Reset` is.
    pub reset_in_ms: u64,
}

impl StatedLimit {
    /// A limit of `limit` requests with `remaining` left, refilled `reset_in_ms` after the answer.
    pub const fn new(limit: u64, remaining: u64, reset_in_ms: u64) -> Self {
        Self { limit, remaining, reset_in_ms }
    }

    /// The `metadata` of an error object that states this limit, `now_ms` the server's clock in
    /// ms since the UNIX epoch.
    pub(crate) fn metadata(&self, now_ms: u64) -> serde_json::Value {
        serde_json::json!({
            "headers": {
                "X-RateLimit-Limit": self.limit.to_string(),
                "X-RateLimit-Remaining": self.remaining.to_string(),
                "X-RateLimit-Reset": now_ms.saturating_add(self.reset_in_ms).to_string(),
            },
            "provider_name": null,
        })
    }
}

/// Which piece of the request's API key an error echoes: the `echo_key` field of `http_error`,
/// `context_overflow`, `invalid_api_key` and `sse_error`.
///
/// The key is the request's `x-api-key` header, or the token of its `authorization: Bearer`
/// header, or its `api-key` header (the request's own wire format's header first). The fragment
/// is appended to the error's message after a space (it is the whole message when that is empty;
/// after a custom `body`, it is appended to the body after a space). A request without a key gets
/// no echo. The server keeps no trace of the key: the journal records only whether one was sent.
///
/// For the key `sk-ant-api03-abcdefghijklmnop`:
///
/// | value | JSON | echoes |
/// | --- | --- | --- |
/// | [`Whole`](EchoKey::Whole) | `"whole"` | `sk-ant-api03-abcdefghijklmnop` |
/// | [`First12`](EchoKey::First12) | `"first12"` | `sk-ant-api03` |
/// | [`Last12`](EchoKey::Last12) | `"last12"` | `efghijklmnop` |
/// | [`WithoutPrefix`](EchoKey::WithoutPrefix) | `"without_prefix"` | `ant-api03-abcdefghijklmnop` (all after the first `-`; the whole key if it has none) |
///
/// # Examples
///
/// ```
/// use agentic_chaos::{EchoKey, Step};
///
/// let leaky = Step::invalid_api_key().echo_key(EchoKey::Last12);
/// assert_eq!(EchoKey::First12.fragment("sk-ant-api03-abcdefghijklmnop"), "sk-ant-api03");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum EchoKey {
    /// The whole key.
    #[serde(rename = "whole")]
    Whole,
    /// Its first 12 characters (the whole key if shorter).
    #[serde(rename = "first12")]
    First12,
    /// Its last 12 characters (the whole key if shorter).
    #[serde(rename = "last12")]
    Last12,
    /// All after its first `-`, e.g. without `sk-` (the whole key if it has no `-`).
    #[serde(rename = "without_prefix")]
    WithoutPrefix,
}

impl EchoKey {
    /// The piece of `key` this echo sends.
    pub fn fragment(self, key: &str) -> &str {
        let chars = key.chars().count();
        match self {
            Self::Whole => key,
            Self::First12 => key.char_indices().nth(12).map_or(key, |(at, _)| &key[..at]),
            Self::Last12 => key.char_indices().nth(chars.saturating_sub(12)).map_or(key, |(at, _)| &key[at..]),
            Self::WithoutPrefix => key.split_once('-').map_or(key, |(_, rest)| rest),
        }
    }

    /// `message` with the fragment of `key` appended after a space.
    pub(crate) fn append(self, message: &str, key: Option<&str>) -> String {
        match key.map(|key| self.fragment(key)) {
            None | Some("") => message.to_owned(),
            Some(fragment) if message.is_empty() => fragment.to_owned(),
            Some(fragment) => format!("{message} {fragment}"),
        }
    }
}

/// An SSE error event in the middle of a stream: the `sse_error` step.
///
/// Anthropic: `event: error` + `data: {"type":"error","error":{"type":"overloaded_error",
/// "message":"Overloaded"}}`; OpenAI: `data: {"error":{"message":"The server had an error while
/// processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`.
/// The body then ends cleanly, without the final events.
///
/// A non-streaming request gets an HTTP error with the same body instead, with
/// [`status`](SseError::status) or a status that fits the type (`overloaded_error`: 529 for
/// Anthropic, 503 for OpenAI; `rate_limit_error`: 429; `invalid_request_error`: 400; others 500).
///
/// # Examples
///
/// ```
/// use agentic_chaos::Step;
///
/// let overloaded = Step::sse_error(2);
/// let empty = Step::sse_error(0).error_type("api_error").message("");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseError {
    pub(crate) after_chunks: u32,
    pub(crate) completion: Completion,
    pub(crate) error_type: Option<String>,
    pub(crate) message: Option<String>,
    pub(crate) code: Option<String>,
    pub(crate) status: Option<u16>,
    pub(crate) echo_key: Option<EchoKey>,
}

impl SseError {
    pub(super) fn new(after_chunks: u32) -> Self {
        Self {
            after_chunks,
            completion: Completion::default(),
            error_type: None,
            message: None,
            code: None,
            status: None,
            echo_key: None,
        }
    }

    /// Echo a fragment of the request's API key in the error's message (see [`EchoKey`]).
    ///
    /// # Default
    ///
    /// No echo.
    pub fn echo_key(mut self, echo: EchoKey) -> Self {
        self.echo_key = Some(echo);
        self
    }

    /// The HTTP status a non-streaming request gets instead of the event.
    ///
    /// # Default
    ///
    /// By type, see above.
    pub fn status(mut self, status: u16) -> Self {
        self.status = Some(status);
        self
    }
}

completion_setters!(SseError);
error_setters!(SseError, type: "`overloaded_error` (Anthropic), `server_error` (OpenAI).",
    message: "`Overloaded` (Anthropic), `The server had an error while processing your request. Sorry about that!` (OpenAI).",
    code: "`null`.");

/// A provider's JSON error where an event stream was promised: the `bare_json_error` step, as
/// some proxies and gateways answer a streaming request they refuse.
///
/// Whether or not the request asked for a stream: status 200, `content-type: text/event-stream;
/// charset=utf-8`, a chunked body that is the error's JSON and a newline, one bare line with no
/// `data:` nor `event:` field, then a clean end of the body. By default the provider's answer to
/// a bad key: OpenAI `{"error":{"message":"Incorrect API key provided: sk-****.",
/// "type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`, Anthropic
/// `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`.
///
/// # Examples
///
/// ```
/// use agentic_chaos::Step;
///
/// let bad_key = Step::bare_json_error();
/// let quota = Step::bare_json_error().error_type("insufficient_quota").message("You exceeded your quota.");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BareJsonError {
    pub(crate) error_type: Option<String>,
    pub(crate) message: Option<String>,
    pub(crate) code: Option<String>,
    pub(crate) headers: Vec<(String, String)>,
}

impl BareJsonError {
    pub(super) fn new() -> Self {
        Self { error_type: None, message: None, code: None, headers: Vec::new() }
    }
}

error_setters!(BareJsonError, type: "`invalid_request_error` (OpenAI), `authentication_error` (Anthropic).",
    message: "`Incorrect API key provided: sk-****.` (OpenAI), `invalid x-api-key` (Anthropic).",
    code: "`invalid_api_key`.");

header_setter!(HttpError, BareJsonError);
