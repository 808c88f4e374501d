//! The steps of a scenario: what the server does with one request.

use serde::{Deserialize, Serialize};

use crate::usage::TokenUsage;

/// The text an `ok` reply (and the partial stream of a fault) carries when none is given.
pub const DEFAULT_TEXT: &str = "Hello from the chaos server.";

/// The pause, in milliseconds, between two pieces of an endless answer (a flood, an endless text
/// or body) when none is given.
pub const DEFAULT_INTERVAL_MS: u64 = 10;

/// The kind of a [`Step`], as named in scenario files and in the [journal](crate::JournalEntry).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum StepKind {
    /// A complete, successful answer.
    Ok,
    /// An HTTP error status with a provider-shaped body.
    HttpError,
    /// The request is read and the socket closed without any response.
    CloseBeforeHeaders,
    /// The stream is cut mid-body: the client sees a body error, not a clean end.
    DropStream,
    /// The stream ends cleanly but without its final events (`message_stop`, `[DONE]`).
    Truncate,
    /// An SSE error event in the middle of the stream.
    SseError,
    /// A pause of some milliseconds, then the answer goes on.
    Stall,
    /// No answer at all (or no more of it) until the client hangs up or the server stops.
    Hang,
    /// A `data:` line that is not valid JSON, in the middle of the stream.
    MalformedChunk,
    /// The provider's real 400 "context too long" answer.
    ContextOverflow,
    /// The provider's real 401 "bad API key" answer.
    InvalidApiKey,
    /// A successful answer whose content is one or more tool calls.
    ToolUse,
    /// After the headers (and maybe some chunks), keep-alive comments or pings and nothing else,
    /// until the client hangs up.
    KeepAliveFlood,
    /// Valid chunks with empty text, endlessly, until the client hangs up.
    EmptyChunkFlood,
    /// Valid text chunks, endlessly, until the client hangs up.
    EndlessText,
    /// A 200 `application/json` body that starts a JSON object and never ends.
    EndlessJson,
    /// A 200 whose content type is not an event stream nor JSON (an HTML login page by default).
    WrongContentType,
    /// A redirect (301, 302, 303, 307 or 308) with an empty body, to another URL or back to the
    /// request's own.
    Redirect,
    /// A 200 that is not an answer: an empty object, a health check, a list of models, a stream
    /// with no content.
    NotAnAnswer,
    /// A response head past a client's limits (too many headers, a huge one) or malformed.
    BadHead,
    /// A 200 event stream whose body is the provider's JSON error as one bare line.
    BareJsonError,
}

impl StepKind {
    /// The snake_case name used in scenario files and in the journal, e.g. `"http_error"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::HttpError => "http_error",
            Self::CloseBeforeHeaders => "close_before_headers",
            Self::DropStream => "drop_stream",
            Self::Truncate => "truncate",
            Self::SseError => "sse_error",
            Self::Stall => "stall",
            Self::Hang => "hang",
            Self::MalformedChunk => "malformed_chunk",
            Self::ContextOverflow => "context_overflow",
            Self::InvalidApiKey => "invalid_api_key",
            Self::ToolUse => "tool_use",
            Self::KeepAliveFlood => "keep_alive_flood",
            Self::EmptyChunkFlood => "empty_chunk_flood",
            Self::EndlessText => "endless_text",
            Self::EndlessJson => "endless_json",
            Self::WrongContentType => "wrong_content_type",
            Self::Redirect => "redirect",
            Self::NotAnAnswer => "not_an_answer",
            Self::BadHead => "bad_head",
            Self::BareJsonError => "bare_json_error",
        }
    }
}

impl std::fmt::Display for StepKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the server does with one request.
///
/// Build a step with one of the constructors (`Step::ok`, `Step::http_error`, ...), refine it with the
/// builder methods of the type the constructor returns, and hand it to
/// [`Scenario::then`](crate::Scenario::then), which takes anything that converts into a `Step`.
///
/// # Examples
///
/// ```
/// use agentic_chaos::{Step, StepKind};
///
/// let step: Step = Step::http_error(429).retry_after_secs(2).into();
/// assert_eq!(step.kind(), StepKind::HttpError);
/// assert_eq!(Step::drop_stream(3).into_step().kind(), StepKind::DropStream);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Step {
    /// A complete, successful answer.
    Ok(Reply),
    /// An HTTP error status with a provider-shaped body.
    HttpError(HttpError),
    /// The request is read and the socket closed without any response.
    CloseBeforeHeaders,
    /// The stream is cut after some chunks, without its HTTP end: the client sees a body error.
    DropStream(Interrupt),
    /// The stream ends cleanly after some chunks, without its final events.
    Truncate(Interrupt),
    /// An SSE error event after some chunks, then a clean end of the body.
    SseError(SseError),
    /// A pause before the headers or after some chunks, then the rest of the answer.
    Stall(Stall),
    /// No answer (or no more of it) until the client hangs up or the server stops.
    Hang(Hang),
    /// A `data:` line with invalid JSON after some chunks, then the rest of the stream.
    MalformedChunk(Malformed),
    /// The provider's real 400 "context too long" answer.
    ContextOverflow(HttpError),
    /// The provider's real 401 "bad API key" answer.
    InvalidApiKey(HttpError),
    /// A successful answer whose content is one or more tool calls.
    ToolUse(ToolUse),
    /// Keep-alive comments (or Anthropic pings) after the headers, endlessly.
    KeepAliveFlood(KeepAliveFlood),
    /// Valid chunks with empty text, endlessly.
    EmptyChunkFlood(EmptyChunkFlood),
    /// Valid text chunks, endlessly.
    EndlessText(EndlessText),
    /// A 200 `application/json` body that never ends.
    EndlessJson(EndlessJson),
    /// A 200 whose content type is neither an event stream nor JSON.
    WrongContentType(WrongContentType),
    /// A redirect with an empty body.
    Redirect(Redirect),
    /// A 200 that is not an answer.
    NotAnAnswer(NotAnAnswer),
    /// A response head past a client's limits or malformed, then the socket closes.
    BadHead(BadHead),
    /// A 200 event stream whose body is a bare JSON error line.
    BareJsonError(BareJsonError),
}

impl Step {
    /// The kind of this step.
    pub fn kind(&self) -> StepKind {
        match self {
            Self::Ok(_) => StepKind::Ok,
            Self::HttpError(_) => StepKind::HttpError,
            Self::CloseBeforeHeaders => StepKind::CloseBeforeHeaders,
            Self::DropStream(_) => StepKind::DropStream,
            Self::Truncate(_) => StepKind::Truncate,
            Self::SseError(_) => StepKind::SseError,
            Self::Stall(_) => StepKind::Stall,
            Self::Hang(_) => StepKind::Hang,
            Self::MalformedChunk(_) => StepKind::MalformedChunk,
            Self::ContextOverflow(_) => StepKind::ContextOverflow,
            Self::InvalidApiKey(_) => StepKind::InvalidApiKey,
            Self::ToolUse(_) => StepKind::ToolUse,
            Self::KeepAliveFlood(_) => StepKind::KeepAliveFlood,
            Self::EmptyChunkFlood(_) => StepKind::EmptyChunkFlood,
            Self::EndlessText(_) => StepKind::EndlessText,
            Self::EndlessJson(_) => StepKind::EndlessJson,
            Self::WrongContentType(_) => StepKind::WrongContentType,
            Self::Redirect(_) => StepKind::Redirect,
            Self::NotAnAnswer(_) => StepKind::NotAnAnswer,
            Self::BadHead(_) => StepKind::BadHead,
            Self::BareJsonError(_) => StepKind::BareJsonError,
        }
    }

    /// A successful answer with `text`, streamed one chunk per word unless [`Reply::chunks`] says
    /// otherwise.
    pub fn ok(text: impl Into<String>) -> Reply {
        Reply::new(text)
    }

    /// An HTTP error with `status` and a body shaped like the provider's (see [`HttpError`] for the
    /// defaults per status). A scenario file refuses a status outside 400–599; here the status is
    /// sent as given.
    pub fn http_error(status: u16) -> HttpError {
        HttpError::new(status, Preset::Generic)
    }

    /// The provider's real 400 answer to a prompt that does not fit the context window.
    ///
    /// OpenAI: `{"error":{"message":"This model's maximum context length is 128000 tokens. However,
    /// your messages resulted in 250000 tokens. Please reduce the length of the messages.",
    /// "type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`;
    /// Anthropic: `{"type":"error","error":{"type":"invalid_request_error",
    /// "message":"prompt is too long: 250000 tokens > 200000 maximum"}}`.
    pub fn context_overflow() -> HttpError {
        HttpError::new(400, Preset::ContextOverflow)
    }

    /// The provider's real 401 answer to a bad API key.
    ///
    /// OpenAI: `{"error":{"message":"Incorrect API key provided: sk-****. You can find your API key
    /// at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,
    /// "code":"invalid_api_key"}}`; Anthropic: `{"type":"error","error":{"type":"authentication_error",
    /// "message":"invalid x-api-key"}}`.
    pub fn invalid_api_key() -> HttpError {
        HttpError::new(401, Preset::InvalidApiKey)
    }

    /// Read the request, then close the socket without sending a single byte.
    pub fn close_before_headers() -> Step {
        Step::CloseBeforeHeaders
    }

    /// Send the headers and `after_chunks` text chunks, then cut the connection without ending the
    /// HTTP body, so that the client sees a body error.
    pub fn drop_stream(after_chunks: u32) -> Interrupt {
        Interrupt::new(after_chunks, InterruptKind::Drop)
    }

    /// Send the headers and `after_chunks` text chunks, then end the body cleanly without the final
    /// events (Anthropic's `content_block_stop`, `message_delta`, `message_stop`; OpenAI's finishing
    /// chunk and `data: [DONE]`).
    pub fn truncate(after_chunks: u32) -> Interrupt {
        Interrupt::new(after_chunks, InterruptKind::Truncate)
    }

    /// Send `after_chunks` text chunks, then an SSE error event, then end the body cleanly.
    pub fn sse_error(after_chunks: u32) -> SseError {
        SseError::new(after_chunks)
    }

    /// Wait `ms` milliseconds before the headers, then answer like an `ok` step. Call
    /// [`Stall::after_chunks`] to stall in the middle of the stream instead.
    pub fn stall(ms: u64) -> Stall {
        Stall::new(ms)
    }

    /// Never answer: the connection stays open, silent, until the client hangs up or the server
    /// stops. Call [`Hang::in_headers`], [`Hang::after_headers`] or [`Hang::after_chunks`] to hang
    /// later in the response instead.
    pub fn hang() -> Hang {
        Hang::new()
    }

    /// Send `after_chunks` text chunks, then a `data:` line that is not valid JSON, then the rest
    /// of the stream as usual.
    pub fn malformed_chunk(after_chunks: u32) -> Malformed {
        Malformed::new(after_chunks)
    }

    /// A successful answer that calls the tool `name` with the arguments `input` (a JSON object);
    /// add more calls with [`ToolUse::call`]. See [`ToolUse`] for the wire formats.
    pub fn tool_use(name: impl Into<String>, input: serde_json::Value) -> ToolUse {
        ToolUse::new().call(name, input)
    }

    /// Send the headers of a 200 event stream, then keep-alive comments (`: keep-alive`) every
    /// [`interval_ms`](KeepAliveFlood::interval_ms) and nothing else, until the client hangs up. See
    /// [`KeepAliveFlood`].
    pub fn keep_alive_flood() -> KeepAliveFlood {
        KeepAliveFlood::new()
    }

    /// Send the start of a streamed answer, then valid chunks whose text is empty, endlessly, until
    /// the client hangs up. See [`EmptyChunkFlood`].
    pub fn empty_chunk_flood() -> EmptyChunkFlood {
        EmptyChunkFlood::new()
    }

    /// Stream an answer that never ends: the text's chunks over and over, until the client hangs
    /// up. See [`EndlessText`].
    pub fn endless_text() -> EndlessText {
        EndlessText::new()
    }

    /// Answer 200 `application/json` with a body that opens a JSON object and then sends whitespace
    /// forever, until the client hangs up. See [`EndlessJson`].
    pub fn endless_json() -> EndlessJson {
        EndlessJson::new()
    }

    /// Answer 200 with a body that is not what a model endpoint sends: by default an HTML login
    /// page, `text/html; charset=utf-8`. See [`WrongContentType`].
    pub fn wrong_content_type() -> WrongContentType {
        WrongContentType::new()
    }

    /// Answer with a redirect: status 307 and a `location` back to the request's own URL unless
    /// set, an empty body. See [`Redirect`].
    pub fn redirect() -> Redirect {
        Redirect::new()
    }

    /// Answer 200 with a body of the given `shape` that is well formed and not an answer: no
    /// text, no tool call, no stop reason. See [`NotAnAnswer`].
    ///
    /// ```
    /// use agentic_chaos::{NotAnAnswer, Scenario, Step};
    ///
    /// let health_check = Scenario::new().then(Step::not_an_answer(NotAnAnswer::StatusOk));
    /// ```
    pub fn not_an_answer(shape: NotAnAnswer) -> Step {
        Step::NotAnAnswer(shape)
    }

    /// Answer with a response head of the given `shape`, past what a client should accept or
    /// not HTTP at all, then close the socket. See [`BadHead`].
    ///
    /// ```
    /// use agentic_chaos::{BadHead, Scenario, Step};
    ///
    /// let too_many = Scenario::new().then(Step::bad_head(BadHead::ManyHeaders));
    /// ```
    pub fn bad_head(shape: BadHead) -> Step {
        Step::BadHead(shape)
    }

    /// Answer 200 `text/event-stream` with the provider's JSON error (a bad key by default) as
    /// the body's one line, no `data:` nor `event:`, then a clean end. See [`BareJsonError`].
    pub fn bare_json_error() -> BareJsonError {
        BareJsonError::new()
    }

    /// This step, for chaining where a `Step` is needed rather than `impl Into<Step>`.
    pub fn into_step(self) -> Step {
        self
    }

    /// Whether the answer ends as one that the token limit cut (only a step whose answer ends
    /// like an `ok` answer can be).
    pub(crate) fn cut_by_token_limit(&self) -> bool {
        match self {
            Self::Ok(reply) | Self::Stall(Stall { reply, .. }) | Self::MalformedChunk(Malformed { reply, .. }) => {
                reply.cut_by_token_limit
            }
            _ => false,
        }
    }

    /// The token counts this step pins; every count follows the rule for a step that sends no
    /// answer.
    pub(crate) fn usage(&self) -> TokenUsage {
        match self {
            Self::Ok(reply)
            | Self::DropStream(Interrupt { reply, .. })
            | Self::Truncate(Interrupt { reply, .. })
            | Self::SseError(SseError { reply, .. })
            | Self::Stall(Stall { reply, .. })
            | Self::Hang(Hang { reply, .. })
            | Self::MalformedChunk(Malformed { reply, .. })
            | Self::KeepAliveFlood(KeepAliveFlood { reply, .. })
            | Self::EmptyChunkFlood(EmptyChunkFlood { reply, .. })
            | Self::EndlessText(EndlessText { reply, .. }) => reply.usage,
            Self::ToolUse(t) => t.usage,
            Self::HttpError(_)
            | Self::CloseBeforeHeaders
            | Self::ContextOverflow(_)
            | Self::InvalidApiKey(_)
            | Self::EndlessJson(_)
            | Self::WrongContentType(_)
            | Self::Redirect(_)
            | Self::NotAnAnswer(_)
            | Self::BadHead(_)
            | Self::BareJsonError(_) => TokenUsage::default(),
        }
    }
}

fn check_header(name: &str, value: &str) {
    assert!(valid_header_name(name), "invalid header name {name:?}: use letters, digits and `-`");
    assert!(valid_header_value(value), "invalid value for header {name:?}: it must not contain CR, LF or NUL");
}

/// The text of an answer and how it is streamed; the `ok` step, and the part of a faulty stream
/// that is sent before the fault.
///
/// # Default
///
/// Text [`DEFAULT_TEXT`], one chunk per word (each word keeps the space after it), no delay, the
/// usage by the [rule](crate#token-usage).
///
/// # Examples
///
/// ```
/// use agentic_chaos::Step;
///
/// let step = Step::ok("The answer is 42.").chunks(2).chunk_delay_ms(5);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub(crate) text: String,
    pub(crate) chunks: Option<u32>,
    pub(crate) chunk_delay_ms: u64,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) usage: TokenUsage,
    /// The answer ends as one the token limit cut (see [`Reply::cut_by_token_limit`]).
    pub(crate) cut_by_token_limit: bool,
}

impl Default for Reply {
    fn default() -> Self {
        Self::new(DEFAULT_TEXT)
    }
}

impl Reply {
    /// A reply with `text`.
    pub fn new(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            chunks: None,
            chunk_delay_ms: 0,
            headers: Vec::new(),
            usage: TokenUsage::default(),
            cut_by_token_limit: false,
        }
    }

    /// Split the text into `n` chunks of about the same number of characters (at least 1).
    ///
    /// # Default
    ///
    /// One chunk per word.
    pub fn chunks(mut self, n: u32) -> Self {
        self.chunks = Some(n.max(1));
        self
    }

    /// Wait `ms` milliseconds before each text chunk. A non-streaming request waits the sum before
    /// its answer.
    ///
    /// # Default
    ///
    /// 0.
    pub fn chunk_delay_ms(mut self, ms: u64) -> Self {
        self.chunk_delay_ms = ms;
        self
    }

    /// Pin the counts of the usage the answer reports (OpenAI's usage chunk or body, Anthropic's
    /// `message_start` and `message_delta`).
    ///
    /// # Default
    ///
    /// The counts of the [rule](crate#token-usage).
    pub fn usage(mut self, usage: TokenUsage) -> Self {
        self.usage = usage;
        self
    }

    /// End the answer as one that the token limit cut: OpenAI `finish_reason: "length"`,
    /// Anthropic `stop_reason: "max_tokens"` (also when a forced tool answers, `tool_choice.type ==
    /// "tool"`: its `tool_use` block then ends with `max_tokens`), streamed or not. The text is
    /// sent as given, so give the cut text itself, e.g. JSON that stops mid-string. In a scenario
    /// file: `"stop": "length"`.
    ///
    /// # Default
    ///
    /// The answer ends normally: `"stop"` / `"end_turn"` (`"tool_use"` for a forced tool).
    pub fn cut_by_token_limit(mut self) -> Self {
        self.cut_by_token_limit = true;
        self
    }

    /// The text of the answer.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The text cut into the chunks that the stream sends, lazily: a count as large as
    /// `chunks(u32::MAX)` costs no memory, only time.
    pub fn pieces(&self) -> impl Iterator<Item = &str> + '_ {
        match self.chunks {
            None => Pieces::words(&self.text),
            Some(n) => Pieces::even(&self.text, n as usize),
        }
    }

    /// How many chunks [`pieces`](Reply::pieces) yields.
    pub(crate) fn chunk_count(&self) -> usize {
        match self.chunks {
            None => Pieces::words(&self.text).count(),
            Some(n) => n as usize,
        }
    }
}

/// The chunks of a text, cut on the fly.
#[derive(Debug, Clone)]
pub(crate) enum Pieces<'a> {
    /// Words, each keeping the whitespace that follows it (the first also what precedes it); one
    /// empty piece for an empty text.
    Words { rest: &'a str, started: bool },
    /// `left` more pieces of about the same number of characters; the first `extra` take one more.
    Even { rest: &'a str, base: usize, extra: usize, left: usize },
}

impl<'a> Pieces<'a> {
    pub(crate) fn words(text: &'a str) -> Self {
        Self::Words { rest: text, started: false }
    }

    pub(crate) fn even(text: &'a str, n: usize) -> Self {
        let n = n.max(1);
        let chars = text.chars().count();
        Self::Even { rest: text, base: chars / n, extra: chars % n, left: n }
    }
}

impl<'a> Iterator for Pieces<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        match self {
            Self::Words { rest, started } => {
                if rest.is_empty() {
                    return if std::mem::replace(started, true) { None } else { Some("") };
                }
                *started = true;
                let (piece, tail) = rest.split_at(word_end(rest));
                *rest = tail;
                Some(piece)
            }
            Self::Even { rest, base, extra, left } => {
                if *left == 0 {
                    return None;
                }
                *left -= 1;
                let len = *base + usize::from(*extra > 0);
                *extra = extra.saturating_sub(1);
                let at = rest.char_indices().nth(len).map_or(rest.len(), |(at, _)| at);
                let (piece, tail) = rest.split_at(at);
                *rest = tail;
                Some(piece)
            }
        }
    }
}

/// The end of the first word of `text` and the whitespace around it.
fn word_end(text: &str) -> usize {
    let lead = text.len() - text.trim_start().len();
    let word = text[lead..].find(char::is_whitespace).map_or(text.len(), |at| lead + at);
    let after = &text[word..];
    word + (after.len() - after.trim_start().len())
}

/// `n` pieces of about the same number of characters; the first ones take the remainder.
pub(crate) fn split_even(text: &str, n: usize) -> Vec<String> {
    Pieces::even(text, n).map(str::to_owned).collect()
}

macro_rules! reply_setters {
    ($ty:ident) => {
        impl $ty {
            /// The text whose first chunks are sent (see [`Reply::new`]).
            ///
            /// # Default
            ///
            /// [`DEFAULT_TEXT`].
            pub fn text(mut self, text: impl Into<String>) -> Self {
                self.reply.text = text.into();
                self
            }

            /// Split the text into `n` chunks (see [`Reply::chunks`]).
            ///
            /// # Default
            ///
            /// One chunk per word.
            pub fn chunks(mut self, n: u32) -> Self {
                self.reply = self.reply.chunks(n);
                self
            }

            /// Wait `ms` milliseconds before each text chunk (see [`Reply::chunk_delay_ms`]).
            ///
            /// # Default
            ///
            /// 0.
            pub fn chunk_delay_ms(mut self, ms: u64) -> Self {
                self.reply.chunk_delay_ms = ms;
                self
            }

            /// Add a response header.
            ///
            /// # Panics
            ///
            /// If the name is not an HTTP token or the value contains CR, LF or NUL.
            pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
                self.reply = self.reply.header(name, value);
                self
            }

            /// Pin the counts of the usage the answer reports, as far as it gets (see
            /// [`Reply::usage`]).
            ///
            /// # Default
            ///
            /// The counts of the [rule](crate#token-usage).
            pub fn usage(mut self, usage: TokenUsage) -> Self {
                self.reply.usage = usage;
                self
            }
        }
    };
}

/// `cut_by_token_limit` for the steps whose answer, after its fault, ends like an `ok` answer.
macro_rules! cut_setter {
    ($ty:ident) => {
        impl $ty {
            /// End the answer as one that the token limit cut (see [`Reply::cut_by_token_limit`]).
            ///
            /// # Default
            ///
            /// The answer ends normally.
            pub fn cut_by_token_limit(mut self) -> Self {
                self.reply.cut_by_token_limit = true;
                self
            }
        }
    };
}

/// `error_type`, `message` and `code` for the steps that send an error body, each with the
/// defaults of its step.
macro_rules! error_setters {
    ($ty:ident, type: $t:literal, message: $m:literal, code: $c:literal) => {
        impl $ty {
            /// The error's `type`.
            ///
            /// # Default
            ///
            #[doc = $t]
            pub fn error_type(mut self, error_type: impl Into<String>) -> Self {
                self.error_type = Some(error_type.into());
                self
            }

            /// The error's `message`, possibly empty.
            ///
            /// # Default
            ///
            #[doc = $m]
            pub fn message(mut self, message: impl Into<String>) -> Self {
                self.message = Some(message.into());
                self
            }

            /// The error's `code` (OpenAI only: Anthropic bodies have none).
            ///
            /// # Default
            ///
            #[doc = $c]
            pub fn code(mut self, code: impl Into<String>) -> Self {
                self.code = Some(code.into());
                self
            }
        }
    };
}

/// Which preset body an [`HttpError`] renders.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Preset {
    Generic,
    ContextOverflow,
    InvalidApiKey,
}

/// An HTTP error answer: the `http_error`, `context_overflow` and `invalid_api_key` steps.
///
/// The body has the shape of the request's provider — OpenAI
/// `{"error":{"message","type","param","code"}}`, Anthropic `{"type":"error","error":{"type","message"}}`
/// — with a type and message chosen by status unless set:
///
/// | status | Anthropic `type` | OpenAI `type` (`code`) |
/// | --- | --- | --- |
/// | 400 | `invalid_request_error` | `invalid_request_error` |
/// | 401 | `authentication_error` | `invalid_request_error` (`invalid_api_key`) |
/// | 402 | `billing_error` | `invalid_request_error` |
/// | 403 | `permission_error` | `invalid_request_error` |
/// | 404 | `not_found_error` | `invalid_request_error` (`model_not_found`) |
/// | 409 | `conflict_error` | `invalid_request_error` |
/// | 413 | `request_too_large` | `invalid_request_error` |
/// | 429 | `rate_limit_error` | `requests` (`rate_limit_exceeded`) |
/// | 500, other 5xx | `api_error` | `server_error` |
/// | 503, 529 | `overloaded_error` | `server_error` |
/// | 504 | `timeout_error` | `server_error` |
/// | other 4xx | `invalid_request_error` | `invalid_request_error` |
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

/// How an [`Interrupt`] ends the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum InterruptKind {
    Drop,
    Truncate,
}

/// A stream cut short after some chunks: the `drop_stream` and `truncate` steps.
///
/// A non-streaming request gets the headers (with the full `content-length`) and half of the JSON
/// body: `drop_stream` then cuts the connection, `truncate` declares only that half and ends
/// cleanly, so the client gets a body that is not valid JSON.
///
/// # Examples
///
/// ```
/// use agentic_chaos::Step;
///
/// let cut = Step::drop_stream(2).text("one two three four");
/// let short = Step::truncate(1).chunks(4);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interrupt {
    pub(crate) after_chunks: u32,
    pub(crate) kind: InterruptKind,
    pub(crate) reply: Reply,
}

impl Interrupt {
    fn new(after_chunks: u32, kind: InterruptKind) -> Self {
        Self { after_chunks, kind, reply: Reply::default() }
    }
}

reply_setters!(Interrupt);

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
    pub(crate) reply: Reply,
    pub(crate) error_type: Option<String>,
    pub(crate) message: Option<String>,
    pub(crate) code: Option<String>,
    pub(crate) status: Option<u16>,
    pub(crate) echo_key: Option<EchoKey>,
}

impl SseError {
    fn new(after_chunks: u32) -> Self {
        Self {
            after_chunks,
            reply: Reply::default(),
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

reply_setters!(SseError);
error_setters!(SseError, type: "`overloaded_error` (Anthropic), `server_error` (OpenAI).",
    message: "`Overloaded` (Anthropic), `The server had an error while processing your request. Sorry about that!` (OpenAI).",
    code: "`null`.");

/// A pause: the `stall` step. After the pause the answer goes on as in an `ok` step.
///
/// By default the pause comes before the headers; with [`after_chunks`](Stall::after_chunks) it
/// comes after that many text chunks (a non-streaming request then gets its headers, the pause,
/// and its body).
///
/// # Examples
///
/// ```
/// use agentic_chaos::Step;
///
/// let slow_start = Step::stall(20);
/// let slow_middle = Step::stall(20).after_chunks(2).text("one two three");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stall {
    pub(crate) ms: u64,
    pub(crate) after_chunks: Option<u32>,
    pub(crate) reply: Reply,
}

impl Stall {
    fn new(ms: u64) -> Self {
        Self { ms, after_chunks: None, reply: Reply::default() }
    }

    /// Pause after `k` text chunks instead of before the headers.
    pub fn after_chunks(mut self, k: u32) -> Self {
        self.after_chunks = Some(k);
        self
    }
}

reply_setters!(Stall);
cut_setter!(Stall);

/// Silence until the client hangs up or the server stops: the `hang` step.
///
/// By default nothing is sent, not even the headers. Later points:
///
/// | builder | JSON | sent before the silence |
/// | --- | --- | --- |
/// | [`in_headers`](Hang::in_headers) | `"at": "in_headers"` | the status line and every header line of the answer, but not the blank line that ends the head |
/// | [`after_headers`](Hang::after_headers) | `"at": "after_headers"` | the whole head (a 200 event stream, or `application/json` with the full `content-length` when not streamed), no body byte |
/// | [`after_start`](Hang::after_start) | `"at": "after_start"` | the head and the stream's opening event alone, then nothing at all, not even a ping: OpenAI a chunk whose delta is `{"role":"assistant"}`, Anthropic `message_start` (not streamed: the head, chunked, and the answer object's opening, as [`EndlessJson`] sends it) |
/// | [`after_chunks(k)`](Hang::after_chunks) | `"after_chunks": k` | the head, the stream's first events and `k` text chunks (not streamed: the head) |
///
/// Use it to test timeouts and deadlines.
///
/// # Examples
///
/// ```
/// use agentic_chaos::Step;
///
/// let silent = Step::hang();
/// let half_a_head = Step::hang().in_headers();
/// let no_body = Step::hang().after_headers();
/// let started = Step::hang().after_start();
/// let stuck = Step::hang().after_chunks(1);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hang {
    pub(crate) at: HangAt,
    pub(crate) reply: Reply,
}

/// Where a [`Hang`] falls silent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HangAt {
    BeforeHeaders,
    InHeaders,
    AfterHeaders,
    AfterStart,
    AfterChunks(u32),
}

impl Hang {
    fn new() -> Self {
        Self { at: HangAt::BeforeHeaders, reply: Reply::default() }
    }

    /// Hang after the headers and `k` text chunks instead of before the headers.
    pub fn after_chunks(mut self, k: u32) -> Self {
        self.at = HangAt::AfterChunks(k);
        self
    }

    /// Hang in the middle of the head: after the status line and the header lines, before the
    /// blank line that ends the head.
    pub fn in_headers(mut self) -> Self {
        self.at = HangAt::InHeaders;
        self
    }

    /// Hang after the whole head, before the first byte of the body.
    pub fn after_headers(mut self) -> Self {
        self.at = HangAt::AfterHeaders;
        self
    }

    /// Hang after the head and the stream's opening event (OpenAI the role chunk, Anthropic
    /// `message_start`), before any content block or ping: the silence of a stream that has
    /// started and sends no heartbeat. [`after_chunks(0)`](Hang::after_chunks) sends Anthropic's
    /// `content_block_start` and `ping` too.
    pub fn after_start(mut self) -> Self {
        self.at = HangAt::AfterStart;
        self
    }
}

reply_setters!(Hang);

/// A chunk that is not valid JSON in the middle of the stream: the `malformed_chunk` step.
///
/// After `after_chunks` text chunks the stream carries a text chunk cut off mid-JSON — OpenAI
/// `data: {"id":"chatcmpl-chaos","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":`,
/// Anthropic `event: content_block_delta` + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`
/// — then goes on to its normal end. A non-streaming request gets a 200 whose body is that text.
///
/// # Examples
///
/// ```
/// use agentic_chaos::Step;
///
/// let garbled = Step::malformed_chunk(1).data("{not json");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed {
    pub(crate) after_chunks: u32,
    pub(crate) reply: Reply,
    pub(crate) data: Option<String>,
}

impl Malformed {
    fn new(after_chunks: u32) -> Self {
        Self { after_chunks, reply: Reply::default(), data: None }
    }

    /// The text after `data: ` (one line).
    ///
    /// # Default
    ///
    /// A text chunk of the request's wire format, cut off mid-JSON (see above).
    ///
    /// # Panics
    ///
    /// If the text contains CR or LF (it would no longer be one line).
    pub fn data(mut self, data: impl Into<String>) -> Self {
        let data = data.into();
        assert!(!data.contains(['\r', '\n']), "the malformed chunk's data must be one line, without CR or LF");
        self.data = Some(data);
        self
    }
}

reply_setters!(Malformed);
cut_setter!(Malformed);

/// An answer whose content is tool calls: the `tool_use` step.
///
/// Every call gets a deterministic id that is unique per request: OpenAI `call_chaos{seq}_{i}`,
/// Anthropic `toolu_chaos{seq}_{i}` (`seq` is the request's journal number, `i` the call's place,
/// from 0). Each call's arguments (its `input` as compact JSON) are split into
/// [`argument_chunks`](ToolUse::argument_chunks) pieces of about the same length.
///
/// Streamed, OpenAI: an optional text chunk, then per call a chunk
/// `delta.tool_calls[{index, id, type: "function", function: {name, arguments: ""}}]` and one
/// chunk `delta.tool_calls[{index, function: {arguments}}]` per piece, then a chunk with
/// `finish_reason: "tool_calls"`, a usage chunk if asked, and `data: [DONE]`. Anthropic:
/// `message_start`, an optional text block, then per call a `content_block_start` with
/// `{"type": "tool_use", "id", "name", "input": {}}`, one `content_block_delta` with an
/// `input_json_delta` (`partial_json`) per piece and a `content_block_stop`, then `message_delta`
/// with `stop_reason: "tool_use"` and `message_stop`.
///
/// Not streamed: OpenAI `message.tool_calls[{id, type: "function", function: {name, arguments}}]`
/// (`content` is the text or `null`) with `finish_reason: "tool_calls"`; Anthropic `content` with
/// the text block (if any) and the `tool_use` blocks, `stop_reason: "tool_use"`.
///
/// # Examples
///
/// ```
/// use agentic_chaos::{Step, StepKind};
/// use serde_json::json;
///
/// let step = Step::tool_use("get_weather", json!({"city": "Paris"}))
///     .call("get_time", json!({"zone": "CET"}))
///     .text("Let me check.")
///     .argument_chunks(4);
/// assert_eq!(step.calls().len(), 2);
/// assert_eq!(step.into_step().kind(), StepKind::ToolUse);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ToolUse {
    pub(crate) calls: Vec<(String, serde_json::Value)>,
    pub(crate) text: Option<String>,
    pub(crate) argument_chunks: u32,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) usage: TokenUsage,
}

impl ToolUse {
    /// How many pieces each call's arguments are streamed in, unless set.
    pub const DEFAULT_ARGUMENT_CHUNKS: u32 = 3;

    fn new() -> Self {
        Self {
            calls: Vec::new(),
            text: None,
            argument_chunks: Self::DEFAULT_ARGUMENT_CHUNKS,
            headers: Vec::new(),
            usage: TokenUsage::default(),
        }
    }

    /// Add a call of the tool `name` with the arguments `input`, after the others.
    pub fn call(mut self, name: impl Into<String>, input: serde_json::Value) -> Self {
        self.calls.push((name.into(), input));
        self
    }

    /// Text the model says before its calls.
    ///
    /// # Default
    ///
    /// None.
    pub fn text(mut self, text: impl Into<String>) -> Self {
        self.text = Some(text.into());
        self
    }

    /// Stream each call's arguments in `n` pieces (at least 1; fewer when the JSON text is shorter).
    ///
    /// # Default
    ///
    /// 3 ([`ToolUse::DEFAULT_ARGUMENT_CHUNKS`]).
    pub fn argument_chunks(mut self, n: u32) -> Self {
        self.argument_chunks = n.max(1);
        self
    }

    /// Pin the counts of the usage the answer reports (see [`Reply::usage`]).
    ///
    /// # Default
    ///
    /// The counts of the [rule](crate#token-usage).
    pub fn usage(mut self, usage: TokenUsage) -> Self {
        self.usage = usage;
        self
    }

    /// The calls: each tool's name and arguments, in order.
    pub fn calls(&self) -> &[(String, serde_json::Value)] {
        &self.calls
    }

    /// Each call's arguments as the JSON text the wire carries, cut into the streamed pieces.
    pub(crate) fn argument_pieces(&self, input: &serde_json::Value) -> Vec<String> {
        let text = input.to_string();
        let n = (self.argument_chunks as usize).min(text.chars().count()).max(1);
        split_even(&text, n)
    }
}

macro_rules! interval_setter {
    ($ty:ident) => {
        impl $ty {
            /// The pause between two pieces of the endless part; 0 sends them as fast as the client
            /// reads (the server never buffers ahead of the socket).
            ///
            /// # Default
            ///
            /// [`DEFAULT_INTERVAL_MS`].
            pub fn interval_ms(mut self, ms: u64) -> Self {
                self.interval_ms = ms;
                self
            }
        }
    };
}

/// Keep-alives and nothing else: the `keep_alive_flood` step.
///
/// Streamed: the headers of a 200 event stream, then the SSE comment `: keep-alive` (a line, then
/// a blank line) every [`interval_ms`](KeepAliveFlood::interval_ms), until the client hangs up or the
/// server stops. With [`ping`](KeepAliveFlood::ping), Anthropic requests get what Anthropic really
/// sends instead, `event: ping` + `data: {"type": "ping"}` (OpenAI has no ping event: its requests
/// still get comments). With [`after_chunks(k)`](KeepAliveFlood::after_chunks) the stream's first
/// events (Anthropic `message_start`, `content_block_start`, `ping`) and `k` text chunks come first.
///
/// Not streamed: a 200 `application/json` whose chunked body is a newline every interval, the
/// whitespace some proxies send to keep a long request alive, and never any JSON.
///
/// # Examples
///
/// ```
/// use agentic_chaos::Step;
///
/// let comments = Step::keep_alive_flood();
/// let pings = Step::keep_alive_flood().ping().after_chunks(2).interval_ms(0);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeepAliveFlood {
    pub(crate) after_chunks: Option<u32>,
    pub(crate) interval_ms: u64,
    pub(crate) ping: bool,
    pub(crate) reply: Reply,
}

impl KeepAliveFlood {
    fn new() -> Self {
        Self { after_chunks: None, interval_ms: crate::DEFAULT_INTERVAL_MS, ping: false, reply: Reply::default() }
    }

    /// Send the stream's first events and `k` text chunks before the keep-alives.
    ///
    /// # Default
    ///
    /// The keep-alives come right after the headers, before any event.
    pub fn after_chunks(mut self, k: u32) -> Self {
        self.after_chunks = Some(k);
        self
    }

    /// Anthropic requests get `event: ping` events instead of comments.
    ///
    /// # Default
    ///
    /// Comments for both formats.
    pub fn ping(mut self) -> Self {
        self.ping = true;
        self
    }
}

reply_setters!(KeepAliveFlood);
interval_setter!(KeepAliveFlood);

/// Valid chunks with no text, endlessly: the `empty_chunk_flood` step.
///
/// Streamed: the stream's first events (Anthropic `message_start`, `content_block_start`, `ping`),
/// [`after_chunks`](EmptyChunkFlood::after_chunks) text chunks, then every
/// [`interval_ms`](EmptyChunkFlood::interval_ms) a chunk whose text is empty, until the client hangs
/// up or the server stops: OpenAI `data: {"id":..,"object":"chat.completion.chunk",..,
/// "choices":[{"index":0,"delta":{"content":""},"logprobs":null,"finish_reason":null}]}` (the
/// first chunk of the answer also carries `"role":"assistant"`), Anthropic `event:
/// content_block_delta` + `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":""}}`.
///
/// Not streamed: a 200 `application/json` whose body opens the answer object and then sends a
/// newline every interval, like [`EndlessJson`].
///
/// # Examples
///
/// ```
/// use agentic_chaos::Step;
///
/// let nothing_forever = Step::empty_chunk_flood().after_chunks(1).interval_ms(0);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmptyChunkFlood {
    pub(crate) after_chunks: u32,
    pub(crate) interval_ms: u64,
    pub(crate) reply: Reply,
}

impl EmptyChunkFlood {
    fn new() -> Self {
        Self { after_chunks: 0, interval_ms: crate::DEFAULT_INTERVAL_MS, reply: Reply::default() }
    }

    /// Send `k` text chunks before the empty ones.
    ///
    /// # Default
    ///
    /// 0.
    pub fn after_chunks(mut self, k: u32) -> Self {
        self.after_chunks = k;
        self
    }
}

reply_setters!(EmptyChunkFlood);
interval_setter!(EmptyChunkFlood);

/// An answer that never ends: the `endless_text` step, to prove that a client bounds the memory
/// an answer may take.
///
/// Streamed: the stream's first events, then the text's chunks (see [`Reply::chunks`]; empty
/// chunks are skipped) one every [`interval_ms`](EndlessText::interval_ms), over and over, never
/// the final events, until the client hangs up or the server stops. Not streamed: a 200
/// `application/json` whose body opens the answer object and its text string (OpenAI
/// `choices[0].message.content`, Anthropic `content[0].text`) and then sends the text, over and
/// over, never closing the string.
///
/// An empty text streams [`DEFAULT_TEXT`] instead (a scenario file refuses
/// it).
///
/// # Examples
///
/// ```
/// use agentic_chaos::Step;
///
/// let fast = Step::endless_text().text("all work and no play ").interval_ms(0);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndlessText {
    pub(crate) interval_ms: u64,
    pub(crate) reply: Reply,
}

impl EndlessText {
    fn new() -> Self {
        Self { interval_ms: crate::DEFAULT_INTERVAL_MS, reply: Reply::default() }
    }

    /// The text sent over and over.
    ///
    /// # Default
    ///
    /// [`DEFAULT_TEXT`].
    pub fn text(mut self, text: impl Into<String>) -> Self {
        self.reply.text = text.into();
        self
    }

    /// Split the text into `n` chunks (see [`Reply::chunks`]).
    ///
    /// # Default
    ///
    /// One chunk per word.
    pub fn chunks(mut self, n: u32) -> Self {
        self.reply = self.reply.chunks(n);
        self
    }

    /// Add a response header.
    ///
    /// # Panics
    ///
    /// If the name is not an HTTP token or the value contains CR, LF or NUL.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.reply = self.reply.header(name, value);
        self
    }

    /// Pin the counts of the usage the stream's start reports (Anthropic's `message_start`; see
    /// [`Reply::usage`]).
    ///
    /// # Default
    ///
    /// The counts of the [rule](crate#token-usage).
    pub fn usage(mut self, usage: TokenUsage) -> Self {
        self.reply.usage = usage;
        self
    }
}

interval_setter!(EndlessText);

/// A JSON body that never ends: the `endless_json` step.
///
/// Whether or not the request asked for a stream: a 200 `application/json` with a chunked body
/// that opens the answer object — OpenAI `{"id":"chatcmpl-..","object":"chat.completion",
/// "created":..,"model":"..",`, Anthropic `{"id":"msg_..","type":"message","role":"assistant",
/// "model":"..",` — and then sends a newline every [`interval_ms`](EndlessJson::interval_ms) (valid
/// JSON whitespace), until the client hangs up or the server stops. A very large interval makes it
/// a stall after the opening.
///
/// # Examples
///
/// ```
/// use agentic_chaos::Step;
///
/// let trickle = Step::endless_json();
/// let stalled = Step::endless_json().interval_ms(3_600_000);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndlessJson {
    pub(crate) interval_ms: u64,
    pub(crate) headers: Vec<(String, String)>,
}

impl EndlessJson {
    fn new() -> Self {
        Self { interval_ms: crate::DEFAULT_INTERVAL_MS, headers: Vec::new() }
    }
}

interval_setter!(EndlessJson);

/// A 200 that is not a model's answer: the `wrong_content_type` step, e.g. the login page of a
/// captive portal or an SSO proxy in front of the API.
///
/// Whether or not the request asked for a stream: status 200, `content-type`
/// [`content_type`](WrongContentType::content_type), a `content-length` and
/// [`body`](WrongContentType::body).
///
/// # Examples
///
/// ```
/// use agentic_chaos::Step;
///
/// let login_page = Step::wrong_content_type();
/// let plain = Step::wrong_content_type().content_type("text/plain").body("upstream said no");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrongContentType {
    pub(crate) content_type: String,
    pub(crate) body: String,
    pub(crate) headers: Vec<(String, String)>,
}

impl WrongContentType {
    /// The content type sent unless set.
    pub const DEFAULT_CONTENT_TYPE: &str = "text/html; charset=utf-8";

    /// The body sent unless set: a small HTML login page.
    pub const DEFAULT_BODY: &str = "<!DOCTYPE html>\n<html><head><title>Sign in</title></head>\n\
        <body><h1>Sign in to continue</h1>\n\
        <form method=\"post\" action=\"/login\"><input name=\"username\"> \
        <input name=\"password\" type=\"password\"> <button>Sign in</button></form>\n\
        </body></html>\n";

    fn new() -> Self {
        Self {
            content_type: Self::DEFAULT_CONTENT_TYPE.to_owned(),
            body: Self::DEFAULT_BODY.to_owned(),
            headers: Vec::new(),
        }
    }

    /// The `content-type` header.
    ///
    /// # Default
    ///
    /// [`WrongContentType::DEFAULT_CONTENT_TYPE`], `text/html; charset=utf-8`.
    ///
    /// # Panics
    ///
    /// If the value contains CR, LF or NUL.
    pub fn content_type(mut self, content_type: impl Into<String>) -> Self {
        let content_type = content_type.into();
        check_header("content-type", &content_type);
        self.content_type = content_type;
        self
    }

    /// The body.
    ///
    /// # Default
    ///
    /// [`WrongContentType::DEFAULT_BODY`], a small HTML login page.
    pub fn body(mut self, body: impl Into<String>) -> Self {
        self.body = body.into();
        self
    }
}

/// A redirect: the `redirect` step, to see that a client does not follow a model endpoint's
/// redirect blindly (to another host, with its key, or round and round).
///
/// Whether or not the request asked for a stream: [`status`](Redirect::status), a `location`
/// header, `content-length: 0` and no body. Without a [`location`](Redirect::location) the
/// `location` is the request's own URL on this server, `http://127.0.0.1:PORT<request path>` (the
/// path without its query): a redirect loop. Every request, a redirected one too, consumes a step
/// as usual, so a loop needs `times` (or the default step) to go on.
///
/// # Examples
///
/// ```
/// use agentic_chaos::{Scenario, Step};
///
/// let elsewhere = Step::redirect().status(308).location("http://127.0.0.1:9/v1/messages");
/// let round_and_round = Scenario::new().then_times(20, Step::redirect());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    pub(crate) status: u16,
    pub(crate) location: Option<String>,
    pub(crate) headers: Vec<(String, String)>,
}

impl Redirect {
    /// The status sent unless set: 307 Temporary Redirect, which a client must repeat with the
    /// same method and body.
    pub const DEFAULT_STATUS: u16 = 307;

    /// The statuses a redirect may have (a scenario file refuses any other).
    pub const STATUSES: [u16; 5] = [301, 302, 303, 307, 308];

    fn new() -> Self {
        Self { status: Self::DEFAULT_STATUS, location: None, headers: Vec::new() }
    }

    /// The status: 301, 302, 303, 307 or 308. A scenario file refuses any other; here the status
    /// is sent as given.
    ///
    /// # Default
    ///
    /// [`Redirect::DEFAULT_STATUS`], 307.
    pub fn status(mut self, status: u16) -> Self {
        self.status = status;
        self
    }

    /// The `location` header: an absolute URL (`scheme://...`). A scenario file refuses any
    /// other; here it is sent as given.
    ///
    /// # Default
    ///
    /// The request's own URL on this server: a redirect loop.
    ///
    /// # Panics
    ///
    /// If the URL contains CR, LF or NUL.
    pub fn location(mut self, url: impl Into<String>) -> Self {
        let url = url.into();
        check_header("location", &url);
        self.location = Some(url);
        self
    }
}

/// Whether `url` is absolute: a scheme (a letter, then letters, digits, `+`, `-` or `.`), then `://`.
pub(crate) fn absolute_url(url: &str) -> bool {
    url.split_once("://").is_some_and(|(scheme, _)| {
        scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    })
}

/// The shape of a 200 that is not an answer: the `not_an_answer` step, whose scenario field
/// `shape` takes the names below.
///
/// Each is served the same whether or not the request asked for a stream, with the request id
/// header, and then the connection stays open for the next request. `<model>` is the request's
/// `model`.
///
/// | shape | JSON | content type | body |
/// | --- | --- | --- | --- |
/// | [`JsonObject`](NotAnAnswer::JsonObject) (the default) | `"json_object"` | `application/json` | `{}` |
/// | [`StatusOk`](NotAnAnswer::StatusOk) | `"status_ok"` | `application/json` | `{"status":"ok"}`, a health check's answer |
/// | [`JsonArray`](NotAnAnswer::JsonArray) | `"json_array"` | `application/json` | `[]` |
/// | [`NoChoices`](NotAnAnswer::NoChoices) | `"no_choices"` | `application/json` | OpenAI `{"id":..,"object":"chat.completion","created":..,"model":<model>,"choices":[]}`; Anthropic `{"id":..,"type":"message","role":"assistant","model":<model>,"content":[],"stop_reason":null,"stop_sequence":null,"usage":{..}}` (0 output tokens) |
/// | [`ModelsList`](NotAnAnswer::ModelsList) | `"models_list"` | `application/json` | `{"object":"list","data":[{"id":<model>,"object":"model","owned_by":"chaos"}]}`, what `GET /v1/models` answers |
/// | [`DoneOnly`](NotAnAnswer::DoneOnly) | `"done_only"` | `text/event-stream` | OpenAI `data: [DONE]` alone; Anthropic `message_start` then `message_stop` (no content block, no `message_delta`) |
/// | [`EmptyChunk`](NotAnAnswer::EmptyChunk) | `"empty_chunk"` | `text/event-stream` | OpenAI one chunk whose delta is `{"role":"assistant"}` alone (`finish_reason: null`), then `data: [DONE]`; Anthropic `message_start`, `content_block_start` (text `""`), `content_block_stop`, `message_stop`, no stop reason |
///
/// JSON bodies have a `content-length`; event streams are chunked and end cleanly.
///
/// # Examples
///
/// ```
/// use agentic_chaos::{NotAnAnswer, Step, StepKind};
///
/// let step = Step::not_an_answer(NotAnAnswer::ModelsList);
/// assert_eq!(step.kind(), StepKind::NotAnAnswer);
/// assert_eq!(NotAnAnswer::default(), NotAnAnswer::JsonObject);
/// assert_eq!(NotAnAnswer::DoneOnly.as_str(), "done_only");
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum NotAnAnswer {
    /// `{}`.
    #[default]
    JsonObject,
    /// `{"status":"ok"}`.
    StatusOk,
    /// `[]`.
    JsonArray,
    /// The provider's answer object with no choice (OpenAI) or no content block (Anthropic).
    NoChoices,
    /// A list of models.
    ModelsList,
    /// A stream that ends at once: OpenAI `[DONE]`, Anthropic `message_start` + `message_stop`.
    DoneOnly,
    /// A stream whose one content chunk or block is empty.
    EmptyChunk,
}

impl NotAnAnswer {
    /// Every shape, in the order of the table above.
    pub const ALL: [Self; 7] = [
        Self::JsonObject,
        Self::StatusOk,
        Self::JsonArray,
        Self::NoChoices,
        Self::ModelsList,
        Self::DoneOnly,
        Self::EmptyChunk,
    ];

    /// The name used in scenario files, e.g. `"models_list"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::JsonObject => "json_object",
            Self::StatusOk => "status_ok",
            Self::JsonArray => "json_array",
            Self::NoChoices => "no_choices",
            Self::ModelsList => "models_list",
            Self::DoneOnly => "done_only",
            Self::EmptyChunk => "empty_chunk",
        }
    }
}

/// The shape of a response head that a client must refuse: the `bad_head` step, whose scenario
/// field `shape` takes the names below.
///
/// Whether or not the request asked for a stream, the server sends the head, then closes the
/// socket. The well-formed heads declare `content-type: application/json`, `content-length: 0`
/// and `connection: close`, with the request id header.
///
/// | shape | JSON | head |
/// | --- | --- | --- |
/// | [`ManyHeaders`](BadHead::ManyHeaders) (the default) | `"many_headers"` | a 200 with [`BadHead::EXTRA_HEADERS`] (200) extra headers `x-chaos-1: 1` to `x-chaos-200: 200`, past the 100 that common clients (hyper, so reqwest) accept |
/// | [`HugeHeader`](BadHead::HugeHeader) | `"huge_header"` | a 200 with one header `x-chaos-huge` whose value is [`BadHead::HUGE_HEADER_BYTES`] (1 MiB) of `a`, past the 400 KiB or so that hyper (so reqwest) buffers for a head |
/// | [`GarbageStatus`](BadHead::GarbageStatus) | `"garbage_status"` | the status line `HTTP/1.1 abc not-a-status`, then the usual headers |
///
/// # Examples
///
/// ```
/// use agentic_chaos::{BadHead, Step, StepKind};
///
/// assert_eq!(Step::bad_head(BadHead::HugeHeader).kind(), StepKind::BadHead);
/// assert_eq!(BadHead::default(), BadHead::ManyHeaders);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum BadHead {
    /// A 200 with 200 extra headers.
    #[default]
    ManyHeaders,
    /// A 200 with a header of 1 MiB.
    HugeHeader,
    /// A status line whose status is not a number.
    GarbageStatus,
}

impl BadHead {
    /// Every shape, in the order of the table above.
    pub const ALL: [Self; 3] = [Self::ManyHeaders, Self::HugeHeader, Self::GarbageStatus];

    /// How many extra headers [`ManyHeaders`](BadHead::ManyHeaders) sends.
    pub const EXTRA_HEADERS: usize = 200;

    /// The length of the value [`HugeHeader`](BadHead::HugeHeader) sends, in bytes: 1 MiB.
    pub const HUGE_HEADER_BYTES: usize = 1024 * 1024;

    /// The name used in scenario files, e.g. `"huge_header"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::ManyHeaders => "many_headers",
            Self::HugeHeader => "huge_header",
            Self::GarbageStatus => "garbage_status",
        }
    }
}

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
    fn new() -> Self {
        Self { error_type: None, message: None, code: None, headers: Vec::new() }
    }
}

error_setters!(BareJsonError, type: "`invalid_request_error` (OpenAI), `authentication_error` (Anthropic).",
    message: "`Incorrect API key provided: sk-****.` (OpenAI), `invalid x-api-key` (Anthropic).",
    code: "`invalid_api_key`.");

/// `header` for the builders that keep their own response headers.
macro_rules! header_setter {
    ($($ty:ident),*) => {
        $(impl $ty {
            /// Add a response header.
            ///
            /// # Panics
            ///
            /// If the name is not an HTTP token or the value contains CR, LF or NUL.
            pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
                let (name, value) = (name.into(), value.into());
                check_header(&name, &value);
                self.headers.push((name, value));
                self
            }
        })*
    };
}

header_setter!(Reply, HttpError, ToolUse, EndlessJson, WrongContentType, Redirect, BareJsonError);

macro_rules! into_step {
    ($($ty:ty => |$v:ident| $e:expr;)*) => {
        $(impl From<$ty> for Step {
            fn from($v: $ty) -> Step {
                $e
            }
        })*
        $(impl $ty {
            /// This builder as a [`Step`].
            pub fn into_step(self) -> Step {
                self.into()
            }
        })*
    };
}

into_step! {
    Reply => |r| Step::Ok(r);
    HttpError => |e| match e.preset {
        Preset::Generic => Step::HttpError(e),
        Preset::ContextOverflow => Step::ContextOverflow(e),
        Preset::InvalidApiKey => Step::InvalidApiKey(e),
    };
    Interrupt => |i| match i.kind {
        InterruptKind::Drop => Step::DropStream(i),
        InterruptKind::Truncate => Step::Truncate(i),
    };
    SseError => |s| Step::SseError(s);
    Stall => |s| Step::Stall(s);
    Hang => |h| Step::Hang(h);
    Malformed => |m| Step::MalformedChunk(m);
    ToolUse => |t| Step::ToolUse(t);
    KeepAliveFlood => |f| Step::KeepAliveFlood(f);
    EmptyChunkFlood => |f| Step::EmptyChunkFlood(f);
    EndlessText => |e| Step::EndlessText(e);
    EndlessJson => |e| Step::EndlessJson(e);
    WrongContentType => |w| Step::WrongContentType(w);
    Redirect => |r| Step::Redirect(r);
    BareJsonError => |e| Step::BareJsonError(e);
}

/// Whether `name` is an HTTP token (RFC 9110 `tchar`s).
pub(crate) fn valid_header_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// Whether `value` can be sent as a header value without breaking the response.
pub(crate) fn valid_header_value(value: &str) -> bool {
    !value.contains(['\r', '\n', '\0'])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split_words(text: &str) -> Vec<&str> {
        Pieces::words(text).collect()
    }

    #[test]
    fn words_keep_their_spaces() {
        assert_eq!(split_words("a bb  c"), ["a ", "bb  ", "c"]);
        assert_eq!(split_words(""), [""]);
        assert_eq!(split_words("  lead"), ["  lead"]);
        assert_eq!(split_words("end "), ["end "]);
        assert_eq!(split_words("   "), ["   "]);
        assert_eq!(split_words("a\n\tb"), ["a\n\t", "b"]);
    }

    #[test]
    fn a_huge_chunk_count_costs_no_memory() {
        let reply = Reply::new("abc").chunks(u32::MAX);
        assert_eq!(reply.chunk_count(), u32::MAX as usize);
        let first: Vec<&str> = reply.pieces().take(5).collect();
        assert_eq!(first, ["a", "b", "c", "", ""]);
    }

    #[test]
    fn even_split_covers_the_text() {
        assert_eq!(split_even("abcdefg", 3), ["abc", "de", "fg"]);
        assert_eq!(split_even("ab", 3), ["a", "b", ""]);
        assert_eq!(split_even("héllo", 1), ["héllo"]);
    }
}
