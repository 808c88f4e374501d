//! The steps of a scenario: what the server does with one request.

use serde::{Deserialize, Serialize};

use crate::usage::TokenUsage;

/// The text an `ok` step's completion (and the partial stream of a fault) carries when none is given.
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
    Ok(Completion),
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

    /// A successful answer with `text`, streamed one chunk per word unless [`Completion::chunks`] says
    /// otherwise.
    pub fn ok(text: impl Into<String>) -> Completion {
        Completion::new(text)
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
            Self::Ok(completion)
            | Self::Stall(Stall { completion, .. })
            | Self::MalformedChunk(Malformed { completion, .. }) => completion.cut_by_token_limit,
            _ => false,
        }
    }

    /// The token counts this step pins; every count follows the rule for a step that sends no
    /// answer.
    pub(crate) fn usage(&self) -> TokenUsage {
        match self {
            Self::Ok(completion)
            | Self::DropStream(Interrupt { completion, .. })
            | Self::Truncate(Interrupt { completion, .. })
            | Self::SseError(SseError { completion, .. })
            | Self::Stall(Stall { completion, .. })
            | Self::Hang(Hang { completion, .. })
            | Self::MalformedChunk(Malformed { completion, .. })
            | Self::KeepAliveFlood(KeepAliveFlood { completion, .. })
            | Self::EmptyChunkFlood(EmptyChunkFlood { completion, .. })
            | Self::EndlessText(EndlessText { completion, .. }) => completion.usage,
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

macro_rules! completion_setters {
    ($ty:ident) => {
        impl $ty {
            /// The text whose first chunks are sent (see [`Completion::new`]).
            ///
            /// # Default
            ///
            /// [`DEFAULT_TEXT`].
            pub fn text(mut self, text: impl Into<String>) -> Self {
                self.completion.text = text.into();
                self
            }

            /// Split the text into `n` chunks (see [`Completion::chunks`]).
            ///
            /// # Default
            ///
            /// One chunk per word.
            pub fn chunks(mut self, n: u32) -> Self {
                self.completion = self.completion.chunks(n);
                self
            }

            /// Wait `ms` milliseconds before each text chunk (see [`Completion::chunk_delay_ms`]).
            ///
            /// # Default
            ///
            /// 0.
            pub fn chunk_delay_ms(mut self, ms: u64) -> Self {
                self.completion.chunk_delay_ms = ms;
                self
            }

            /// Add a response header.
            ///
            /// # Panics
            ///
            /// If the name is not an HTTP token or the value contains CR, LF or NUL.
            pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
                self.completion = self.completion.header(name, value);
                self
            }

            /// Pin the counts of the usage the answer reports, as far as it gets (see
            /// [`Completion::usage`]).
            ///
            /// # Default
            ///
            /// The counts of the [rule](crate#token-usage).
            pub fn usage(mut self, usage: TokenUsage) -> Self {
                self.completion.usage = usage;
                self
            }
        }
    };
}

/// `cut_by_token_limit` for the steps whose answer, after its fault, ends like an `ok` answer.
macro_rules! cut_setter {
    ($ty:ident) => {
        impl $ty {
            /// End the answer as one that the token limit cut (see [`Completion::cut_by_token_limit`]).
            ///
            /// # Default
            ///
            /// The answer ends normally.
            pub fn cut_by_token_limit(mut self) -> Self {
                self.completion.cut_by_token_limit = true;
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

mod boundary;
mod completion;
mod errors;
mod floods;
mod stream;
mod tool_use;

pub use boundary::*;
pub use completion::*;
pub use errors::*;
pub use floods::*;
pub use stream::*;
pub use tool_use::*;

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
    Completion => |r| Step::Ok(r);
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
        let completion = Completion::new("abc").chunks(u32::MAX);
        assert_eq!(completion.chunk_count(), u32::MAX as usize);
        let first: Vec<&str> = completion.pieces().take(5).collect();
        assert_eq!(first, ["a", "b", "c", "", ""]);
    }

    #[test]
    fn even_split_covers_the_text() {
        assert_eq!(split_even("abcdefg", 3), ["abc", "de", "fg"]);
        assert_eq!(split_even("ab", 3), ["a", "b", ""]);
        assert_eq!(split_even("héllo", 1), ["héllo"]);
    }
}
