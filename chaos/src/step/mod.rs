//! The steps of a scenario: what the server does with one request.

use serde::{Deserialize, Serialize};

use crate::usage::TokenUsage;

/// The text an `ok` step's completion (and the partial stream of a fault) carries when none is given.
pub const DEFAULT_TEXT: &str = "Hello from the chaos server.";

/// The pause, in milliseconds, between two pieces of an endless answer (a flood, an endless text
/// or body) when none is given.
pub const DEFAULT_INTERVAL_MS: u64 = 10;

impl Step {
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

    /// How many chunks this step's streamed answer has, on every wire alike: the reasoning's
    /// pieces (one per word), the text's (one per word, or `chunks`), then each tool call's
    /// argument pieces; `None` for a step that streams no answer (an error, a hang before the
    /// headers, a body that is no answer) or never ends one (the floods, `endless_text`). A fault's
    /// `after_chunks` counts these: `after_chunks(k)` with `k` below the count cuts the answer
    /// after its first `k` chunks, with `k` equal to it after all of them, before the finish.
    ///
    /// ```
    /// use agentic_chaos::Step;
    /// use serde_json::json;
    ///
    /// assert_eq!(Step::ok("one two three").into_step().chunk_count(), Some(3));
    /// let thought = Step::ok("four").reasoning("two and two").into_step();
    /// assert_eq!(thought.chunk_count(), Some(4));
    /// // A call of `{"city":"Paris"}` in 3 argument pieces, after the text's 2 chunks.
    /// let cut = Step::drop_stream(4).text("Let me").call("get_weather", json!({"city": "Paris"}));
    /// assert_eq!(cut.into_step().chunk_count(), Some(5));
    /// let call = Step::tool_use("get_weather", json!({"city": "Paris"})).argument_chunks(2);
    /// assert_eq!(call.into_step().chunk_count(), Some(2));
    /// ```
    pub fn chunk_count(&self) -> Option<usize> {
        match self {
            Self::ToolUse(t) => Some(t.as_completion().chunk_count()),
            Self::Hang(Hang { at: HangAt::AfterChunks(_), completion }) => Some(completion.chunk_count()),
            Self::Hang(_) | Self::KeepAliveFlood(_) | Self::EmptyChunkFlood(_) | Self::EndlessText(_) => None,
            step => step.completion().map(Completion::chunk_count),
        }
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

    /// The completion whose text this step sends, all of it or the part before its fault; `None`
    /// for a step that sends no answer text (an error, a tool use, a body that is no answer).
    pub(crate) fn completion(&self) -> Option<&Completion> {
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
            | Self::EndlessText(EndlessText { completion, .. }) => Some(completion),
            Self::HttpError(_)
            | Self::CloseBeforeHeaders
            | Self::ContextOverflow(_)
            | Self::InvalidApiKey(_)
            | Self::ToolUse(_)
            | Self::EndlessJson(_)
            | Self::WrongContentType(_)
            | Self::Redirect(_)
            | Self::NotAnAnswer(_)
            | Self::BadHead(_)
            | Self::BareJsonError(_) => None,
        }
    }

    /// The token counts this step pins; every count follows the rule for a step that sends no
    /// answer.
    pub(crate) fn usage(&self) -> TokenUsage {
        match self {
            Self::ToolUse(t) => t.usage,
            step => step.completion().map_or_else(TokenUsage::default, |completion| completion.usage),
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

/// `reasoning`, `call` and `argument_chunks` for the mid-stream faults: the answer they cut may
/// show reasoning first, and may be a tool call, cut in the middle of its arguments.
macro_rules! rich_setters {
    ($($ty:ident),*) => {
        $(impl $ty {
            /// Stream reasoning before the text (see [`Completion::reasoning`]); its pieces come
            /// first among the chunks `after_chunks` counts.
            ///
            /// # Default
            ///
            /// None.
            pub fn reasoning(mut self, reasoning: impl Into<String>) -> Self {
                self.completion.reasoning = Some(reasoning.into()).filter(|reasoning: &String| !reasoning.is_empty());
                self
            }

            /// Make the answer a tool call: add a call of the tool `name` with the arguments `input`
            /// after the others, streamed after the text (none if the text is empty) as a
            /// `tool_use` step streams its calls, each call's arguments in
            /// [`argument_chunks`](Self::argument_chunks) pieces. The chunks `after_chunks` counts
            /// are then the text's, then the calls' argument pieces (see [`Step::chunk_count`]), so
            /// a fault can fall in the middle of a call. Gemini sends a call whole: its argument
            /// pieces but the last go as SSE comments, which carry nothing, and the last is the
            /// whole call. The answer, when it ends, ends as a tool call.
            pub fn call(mut self, name: impl Into<String>, input: serde_json::Value) -> Self {
                self.completion.calls.push((name.into(), input));
                self
            }

            /// Stream each call's arguments in `n` pieces (at least 1; fewer when the JSON text is
            /// shorter).
            ///
            /// # Default
            ///
            /// 3 ([`ToolUse::DEFAULT_ARGUMENT_CHUNKS`]).
            pub fn argument_chunks(mut self, n: u32) -> Self {
                self.completion.argument_chunks = n.max(1);
                self
            }
        })*
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

rich_setters!(Interrupt, SseError, Malformed, Stall);

mod boundary;
mod completion;
mod errors;
mod floods;
mod kind;
mod stream;
mod tool_use;

pub use boundary::*;
pub use completion::*;
pub use errors::*;
pub use floods::*;
pub use kind::{Step, StepKind};
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
        assert_eq!(completion.text_chunk_count(), u32::MAX as usize);
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
