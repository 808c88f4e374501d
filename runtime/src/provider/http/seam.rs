//! The seam between the plumbing and a wire: [`Codec`] (everything a call sends, and the wire's
//! data), [`Decoder`] (everything a call reads) and [`Out`] (where a decoder writes what it read).
//!
//! # Writing a wire
//!
//! A wire is one file in `provider/wire/` (see `wire/openai.rs`, the model to copy), with its
//! stream's reading in a file of its own beside it when it is long (`wire/openai/events.rs`):
//!
//! 1. **The wire type**: `pub struct X;` (`#[derive(Debug, Clone, Copy, Default)]`), whose docs are
//!    the wire's page: what it sends and reads, and its settings (the variables `from_env` reads,
//!    the default base URL and model, the field `with_max_tokens` sets). Then `impl Wire for X {}`
//!    (the public, sealed bound of `HttpProvider`) and the name users know it by:
//!    `pub type XProvider = HttpProvider<X>;`. The generic `HttpProvider<W>` (`wire/http_provider.rs`)
//!    is every wire's public block (`new`, `from_env`, `with_model`, `with_max_tokens`, the
//!    accessors, the `Provider` impl and a redacted `Debug`): a wire writes none of it.
//! 2. **`impl Codec for X`**: the data (the provider name, the environment, the default model and
//!    token limit, the auth header) and the request (the URL, the static headers, the body, the
//!    fallback, the decoder of one call). Everything here is pure: no IO, no key (the plumbing puts
//!    the key in [`Codec::AUTH`]'s header, marked sensitive). (There is no `KIND` constant: the
//!    registry maps a `WireKind` to its type, and the plumbing never needs the reverse, so `http/`
//!    does not depend on `wire/`.)
//! 3. **The decoder** (`struct XDecoder`, the state of one call) **and `impl Decoder`**: each SSE event
//!    becomes calls on [`Out`] (text, tool calls, usage, the model, done, an error). It never sees the
//!    key: [`Out::error`] redacts and types what [`ErrorFacts`] say.
//! 4. **Its error vocabulary**: `fn vocabulary(&str) -> Option<(&'static str, u16)>`, the wire's own
//!    type and code names with the HTTP status the API gives the same failure
//!    (`server_is_overloaded` -> `("ServiceUnavailableError", 503)`), applied with
//!    [`ErrorFacts::typed_by`]. The shared spellings ([`shared_type`](super::errors::shared_type)) are
//!    consulted after it: put only the names no other wire carries there (OpenAI's and Anthropic's
//!    are all shared, so those two wires need no table).
//! 5. **Tests**: the body it sends, the events it reads ([`replay`](super::driver::replay)), its errors.
//!
//! Then one entry in the registry (`provider/wire/mod.rs`, `WireKind`): the compiler lists each
//! `match` to extend. Nothing in `http/` changes.
//!
//! What the plumbing guarantees whatever the wire: the connect and headers bounds, the error body's
//! bound and its cut marker, the redaction of every server text, the hints of the headers (which win
//! over a body's), a JSON body instead of a stream (an error object, or a whole answer for
//! [`Decoder::whole`]), a body that is not a stream, a stream cut mid-event, a stream that ends
//! without its final event ([`Decoder::completed`]), and a stream that brought events but no answer.

use reqwest::header::HeaderMap;
use serde_json::Value;

use super::super::secret::Secret;
use super::super::sse::SseEvent;
use super::super::{Request, StreamEvent};
use super::decode::DecodeError;
use super::endpoint::Endpoint;
use super::env::EnvNames;
use super::errors::{ErrorFacts, error_event};
use crate::error::ModelError;
use crate::message::StopReason;
use crate::message::usage::Usage;

/// What a wire sends, and its data: implemented by the wire's type (`OpenAi`, a unit struct), so
/// that [`stream_call`](super::stream_call)`::<W>` is one monomorphic copy per wire. The provider
/// (`HttpProvider<W>`) holds the [`Endpoint`] (where the call goes and the caller's settings) and
/// hands it to each method.
pub(crate) trait Codec: Clone + Default + std::fmt::Debug + Send + Sync + 'static {
    /// What `Provider::name()` returns: both the OpenTelemetry `gen_ai.provider.name` and the scope
    /// prefix (`openai:<fingerprint>`), so calls that share it share a retry quota and cooldowns.
    /// `openai`, `anthropic`, `gcp.gemini`; a wire that shares another's keys and rate limits (OpenAI
    /// Responses) shares its name. Never rename one: a fleet's Redis keys are named by it.
    const PROVIDER: &'static str;

    /// The environment variables of `from_env` (and `agentic ask`) and the default base URL.
    const ENV: EnvNames;

    /// The model asked for when the caller names none.
    const DEFAULT_MODEL: &'static str;

    /// The token limit the body asks for when the caller sets none (`with_max_tokens`). The
    /// default, `None`: the wire sends none, the server's default holds; a wire whose API requires
    /// one (Anthropic's) gives it here.
    const DEFAULT_MAX_TOKENS: Option<u32> = None;

    /// Where the key goes. The plumbing builds the header from the endpoint's key and marks it
    /// sensitive (hidden from Debug output); without a key, no header is sent.
    const AUTH: Auth;

    /// The state of one call's reading.
    type Decoder: Decoder;

    /// The URL to post `request` to, usually `endpoint.url("/chat/completions")` (which keeps a
    /// base URL's query). A wire that puts the model in the path encodes it as one segment; the key
    /// never goes in the URL.
    fn url(&self, endpoint: &Endpoint, request: &Request<'_>) -> Result<String, ModelError>;

    /// Static headers besides the key's (e.g. `anthropic-version`). The default adds none.
    fn headers(&self, headers: &mut HeaderMap) {
        let _ = headers;
    }

    /// The JSON body of `request` to `endpoint` (its model, temperature and token limit): the
    /// system text, the messages with their tool calls and tool results, the tools, the token
    /// limit, the temperature, and the schema of a typed answer, asked as `form` says (only a wire
    /// with a [`Codec::fallback`] is asked for [`Form::Fallback`]).
    fn body(&self, endpoint: &Endpoint, request: &Request<'_>, form: Form) -> Value;

    /// Whether a refused first request is sent again at once in [`Form::Fallback`], within the same
    /// call: a predicate on the first response's status and (bounded) body, e.g. OpenAI's JSON mode
    /// for a server that refuses structured outputs. The default, `None`: never.
    fn fallback(&self, request: &Request<'_>) -> Option<fn(u16, &str) -> bool> {
        let _ = request;
        None
    }

    /// The reading state of one call of `request` (e.g. the tool that carries a typed answer).
    fn decoder(&self, request: &Request<'_>) -> Self::Decoder;
}

/// Which form of a request's body [`Codec::body`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Form {
    /// The request as the wire asks it first.
    Primary,
    /// The second request of a call whose first was refused as [`Codec::fallback`] says.
    Fallback,
}

/// The header that carries the key: `name: {prefix}{key}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Auth {
    /// The header's name, lowercase (`authorization`, `x-api-key`, `x-goog-api-key`).
    pub(crate) header: &'static str,
    /// What goes before the key (`"Bearer "`), or nothing.
    pub(crate) prefix: &'static str,
}

/// What a wire reads: one per call, no IO, and never the key.
pub(crate) trait Decoder: Send + 'static {
    /// What this wire's whole answer is, for the message when a 2xx JSON body is not one, e.g. "a
    /// chat completion (an object with `choices`)".
    const ANSWER: &'static str;

    /// Reads one SSE event: calls `out` for what it says. An error is an event it could not read
    /// (the driver reports it, with an excerpt: a corrupted stream, or a shape this wire does not
    /// read, [`DecodeError`]). [`Out::done`] and [`Out::error`] end the call.
    fn event(&mut self, event: &SseEvent, out: &mut Out<'_>) -> Result<(), DecodeError>;

    /// When the body ends (cleanly or not) before the final event: the stop reason to finish with if
    /// the server already said the answer is complete (OpenAI's `finish_reason`), else `None`, a
    /// truncated or dropped stream. The default: `None`.
    fn completed(&self) -> Option<StopReason> {
        None
    }

    /// Reads a whole (not streamed) JSON answer, from a server that ignored streaming: its events,
    /// then [`Out::done`].
    fn whole(&mut self, answer: &Value, out: &mut Out<'_>) -> Result<(), DecodeError>;

    /// Whether a 2xx JSON body (not an error object) is shaped like this wire's whole answer at all;
    /// anything else is what a wrong base URL gets.
    fn is_answer(answer: &Value) -> bool;

    /// Whether the server sent an explicit finish reason: with one, an answer without content is an
    /// answer (an empty `stop`); without, it is none (a truncated reply).
    fn finished(&self) -> bool;

    /// What an HTTP error body, or the error object of a 2xx JSON body, says: the wire's reading of
    /// its error shapes, typed by its vocabulary. The default reads the generic shapes
    /// ([`ErrorFacts::parse`]).
    fn error_body(body: &Value) -> Option<ErrorFacts> {
        ErrorFacts::parse(body)
    }
}

/// Where a decoder writes what it read: owned by the plumbing, which reports the model once,
/// redacts and types errors, and keeps the key from the wire's code.
pub(crate) struct Out<'a> {
    events: &'a mut Vec<StreamEvent>,
    secret: Option<&'a Secret>,
    model_sent: &'a mut bool,
}

impl<'a> Out<'a> {
    /// A sink that appends to `events`; `model_sent` says whether the model was already reported.
    pub(super) fn new(events: &'a mut Vec<StreamEvent>, secret: Option<&'a Secret>, model_sent: &'a mut bool) -> Self {
        Self { events, secret, model_sent }
    }

    /// A piece of the answer's text (an empty one is dropped).
    #[inline]
    pub(crate) fn text(&mut self, text: impl Into<String>) {
        let text = text.into();
        if !text.is_empty() {
            self.events.push(StreamEvent::TextDelta(text));
        }
    }

    /// The start of tool call `index` (its id and name; either may be empty when the wire sends it
    /// later or never: the agent mints an id).
    #[inline]
    pub(crate) fn tool_start(&mut self, index: u32, id: String, name: String) {
        self.events.push(StreamEvent::ToolCallStart { index, id, name });
    }

    /// A fragment of tool call `index`'s JSON arguments (an empty one is dropped).
    #[inline]
    pub(crate) fn tool_args(&mut self, index: u32, arguments: String) {
        if !arguments.is_empty() {
            self.events.push(StreamEvent::ToolCallDelta { index, arguments });
        }
    }

    /// The call's usage so far; it replaces the one reported before.
    #[inline]
    pub(crate) fn usage(&mut self, usage: Usage) {
        self.events.push(StreamEvent::Usage(usage));
    }

    /// The answering model: the first non-empty name is reported, the rest (every chunk may repeat it)
    /// cost nothing.
    #[inline]
    pub(crate) fn model(&mut self, model: &str) {
        if !*self.model_sent && !model.is_empty() {
            *self.model_sent = true;
            self.events.push(StreamEvent::Model(model.to_owned()));
        }
    }

    /// A sign of life without content (a ping, a signature delta): the idle bound starts again.
    #[inline]
    pub(crate) fn heartbeat(&mut self) {
        self.events.push(StreamEvent::Heartbeat);
    }

    /// A piece of the reasoning the model shows (an empty one is dropped): never the answer's
    /// text, and for the call's clocks a heartbeat.
    #[inline]
    pub(crate) fn reasoning(&mut self, text: impl Into<String>) {
        let text = text.into();
        if !text.is_empty() {
            self.events.push(StreamEvent::ReasoningDelta(text));
        }
    }

    /// The answer is complete: the call ends.
    #[inline]
    pub(crate) fn done(&mut self, stop_reason: StopReason) {
        self.events.push(StreamEvent::Done { stop_reason });
    }

    /// The call failed with what `facts` say (an error inside the stream): redacted and typed here,
    /// the wire's vocabulary first, then the shared spellings. The call ends; text streamed before
    /// it is never an answer.
    #[cold]
    pub(crate) fn error(&mut self, facts: ErrorFacts) {
        self.events.push(error_event(&facts, self.secret));
    }

    /// How many events were written so far: with [`Out::alive_since`], whether an event brought
    /// content or reasoning.
    #[inline]
    pub(crate) fn mark(&self) -> usize {
        self.events.len()
    }

    /// Whether anything that proves the call alive was written since `mark`: content, or reasoning
    /// (itself a heartbeat, so none is added for it).
    #[inline]
    pub(crate) fn alive_since(&self, mark: usize) -> bool {
        self.events.get(mark..).is_some_and(|events| {
            events.iter().any(|event| is_content(event) || matches!(event, StreamEvent::ReasoningDelta(_)))
        })
    }
}

/// Whether `event` is part of the answer: text or a tool call.
pub(crate) fn is_content(event: &StreamEvent) -> bool {
    matches!(event, StreamEvent::TextDelta(_) | StreamEvent::ToolCallStart { .. } | StreamEvent::ToolCallDelta { .. })
}
