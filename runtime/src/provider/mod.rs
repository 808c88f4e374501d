//! Providers: one streamed model call each. `HttpProvider` (feature `providers`, on by default)
//! talks to real model APIs over HTTP with streaming SSE, in the format of one wire
//! (`OpenAiProvider`, `AnthropicProvider`, `GeminiProvider`, `ResponsesProvider`);
//! [`ScriptedProvider`] plays a script, for tests. A provider of your own implements [`Provider`]
//! with the core alone: the request and event types, the typed errors ([`ModelError`]) and the
//! event-stream decoder ([`sse`]) need no HTTP stack.

#[cfg(feature = "providers")]
mod api_key;
#[cfg(feature = "providers")]
pub(crate) mod boundary;
pub(crate) mod fuzz;
#[cfg(feature = "providers")]
pub(crate) mod fuzz_http;
#[cfg(feature = "providers")]
mod google_rpc;
#[cfg(feature = "providers")]
mod http;
// Used by the adapters only (the tower layer, `Classify` for other clients' errors).
#[cfg(any(feature = "async-openai", feature = "genai"))]
pub(crate) use http::response_error;
#[cfg(feature = "tower")]
pub(crate) use http::response_error_redacted;
#[cfg(any(feature = "tower", feature = "genai"))]
pub(crate) use http::{BodyEnd, MAX_ERROR_BODY};
#[cfg(feature = "genai")]
pub(crate) use http::{empty_answer, event_error, not_a_stream};
#[cfg(any(feature = "async-openai", feature = "genai"))]
pub(crate) use http::{malformed, undecodable_answer};
#[cfg(feature = "providers")]
pub(crate) use secret::Secret;
#[cfg(feature = "tower")]
pub(crate) use secret::redact;
mod scripted;
#[cfg(feature = "providers")]
mod secret;
pub mod sse;
#[cfg(feature = "providers")]
mod stated_limit;
#[cfg(feature = "providers")]
mod wire;

use std::pin::Pin;
use std::time::Duration;

use futures_core::Stream;

use crate::message::{Message, StopReason};
use crate::policy::RetryPolicy;
use crate::tool::ToolSpec;

pub use crate::error::{ModelError, TransportKind};
#[cfg(feature = "providers")]
#[cfg_attr(docsrs, doc(cfg(feature = "providers")))]
pub use api_key::ApiKey;
#[cfg(feature = "providers")]
#[cfg_attr(docsrs, doc(cfg(feature = "providers")))]
pub use google_rpc::quoted_retry_delay;
#[cfg(feature = "providers")]
#[cfg_attr(docsrs, doc(cfg(feature = "providers")))]
pub use http::env::ConfigError;
pub use scripted::{RecordedRequest, Scripted, ScriptedProvider};
#[cfg(feature = "providers")]
#[cfg_attr(docsrs, doc(cfg(feature = "providers")))]
pub use secret::display_url;
/// The HTTP provider ([`HttpProvider`]), its wires and their registry ([`WireKind`]).
#[cfg(feature = "providers")]
#[cfg_attr(docsrs, doc(cfg(feature = "providers")))]
pub use wire::*;

/// What one model call is asked.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Request<'a> {
    /// The system instruction, if any.
    pub system: Option<&'a str>,
    /// The conversation so far; the last message is the one to answer.
    pub messages: &'a [Message],
    /// The time this call may take (the runtime enforces it too).
    pub timeout: Option<Duration>,
    /// The agent function making the call, when known.
    pub function: Option<&'a str>,
    /// The model call's number within its exec, from 1 (HTTP providers send it as `x-agentic-call`).
    pub call: u32,
    /// The tools offered to the model (none: the request says nothing about tools).
    pub tools: &'a [ToolSpec],
    /// How long each phase of the call may take and how large its answer may grow. HTTP providers
    /// apply `connect` and `headers`; the agent applies the rest to every provider.
    pub bounds: CallBounds,
    /// The shape the answer must have, when the caller wants data (`Runtime::exec_json`): each wire
    /// format asks for it its own way, and the answer's text is the JSON.
    pub schema: Option<&'a ResponseSchema>,
    /// The most output tokens this call may have, when the exec's spend limits bound it
    /// (`UsageLimits`): a provider sends the smaller of it and its own limit, so that the server
    /// stops itself. `None`: the provider's own limit alone.
    pub max_tokens: Option<u64>,
}

/// The JSON schema an answer must follow, with a name for it (OpenAI's `json_schema.name`,
/// Anthropic's forced tool's name).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ResponseSchema {
    /// A name of letters, digits, `_` and `-` (at most 64), e.g. `"Invoice"`.
    pub name: String,
    /// The JSON schema of the answer (an object schema).
    pub schema: serde_json::Value,
}

impl ResponseSchema {
    /// The schema `schema`, named `name` (characters other than letters, digits, `_` and `-` become
    /// `_`; the name is cut to 64 characters, as the APIs require).
    pub fn new(name: &str, schema: serde_json::Value) -> Self {
        let name: String = name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' })
            .take(64)
            .collect();
        let name = if name.is_empty() { "answer".to_owned() } else { name };
        Self { name, schema }
    }
}

impl<'a> Request<'a> {
    /// A request for `messages` with no system instruction, timeout, function name or tools (call 1),
    /// and the default [`CallBounds`].
    pub fn new(messages: &'a [Message]) -> Self {
        Self {
            system: None,
            messages,
            timeout: None,
            function: None,
            call: 1,
            tools: &[],
            bounds: CallBounds::DEFAULT,
            schema: None,
            max_tokens: None,
        }
    }
}

/// The bounds of one model call besides its total time (the request's `timeout`): every phase of a
/// call has one, so that no fault of the server holds a call forever, and the answer has a size
/// bound, so that no stream grows memory without bound. Each comes from a policy key of the same
/// name; see [`RetryPolicy`] for the defaults and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct CallBounds {
    /// Establishing the connection (`connect_timeout_ms`).
    pub connect: Duration,
    /// From sending the request to the complete response headers (`headers_timeout_ms`).
    pub headers: Duration,
    /// From the start of the call to the first content (`first_token_timeout_ms`).
    pub first_token: Duration,
    /// Without new content once the answer flows (`idle_timeout_ms`).
    pub idle: Duration,
    /// The answer's text and tool-call arguments, in bytes (`max_answer_bytes`).
    pub max_answer_bytes: u64,
}

impl CallBounds {
    /// The bounds of the default policy.
    pub const DEFAULT: CallBounds = CallBounds::of(&RetryPolicy::new());

    /// The bounds `policy` sets.
    pub const fn of(policy: &RetryPolicy) -> CallBounds {
        CallBounds {
            connect: policy.connect_timeout(),
            headers: policy.headers_timeout(),
            first_token: policy.first_token_timeout(),
            idle: policy.idle_timeout(),
            max_answer_bytes: policy.max_answer_bytes(),
        }
    }
}

impl Default for CallBounds {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// One event of a streamed model call.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum StreamEvent {
    /// More answer text.
    TextDelta(String),
    /// The call finished.
    Done {
        /// Why the model stopped.
        stop_reason: StopReason,
    },
    /// The model starts a tool call (or, for a call already started, sends its id or name late).
    ///
    /// The agent assembles the calls of one answer into [`ContentBlock::ToolUse`] blocks, in the
    /// order they start, after the text.
    ///
    /// [`ContentBlock::ToolUse`]: crate::message::ContentBlock::ToolUse
    ToolCallStart {
        /// Identifies the call within this answer (the provider's tool-call or content-block index).
        index: u32,
        /// The call's id (empty when not sent yet; the agent makes one if it never comes).
        id: String,
        /// The tool's name (empty when not sent yet).
        name: String,
    },
    /// More of a tool call's arguments: a fragment of JSON text, parsed when the call is complete.
    ToolCallDelta {
        /// The call, as in [`StreamEvent::ToolCallStart`].
        index: u32,
        /// The fragment.
        arguments: String,
    },
    /// The tokens the call has used so far, as the server reported them: each `Usage` event replaces
    /// the one before (a provider whose server reports usage in parts sends the parts merged).
    Usage(crate::message::Usage),
    /// The model that answers, as the server named it (`gen_ai.response.model` in traces).
    Model(String),
    /// The server showed the call is alive without sending content: an event that carries none
    /// (Anthropic's `message_start`, a `ping`, a thinking block's signature).
    ///
    /// Only a wire whose server sends heartbeats while the model thinks sends it, one for each such
    /// event; that is how a provider says its wire promises them. Once one came, silence before the
    /// first content is bounded by `idle_timeout_ms` from the last event as well as by
    /// `first_token_timeout_ms` from the start: a stream that started and then went silent is dead,
    /// and heartbeats never extend the first-token bound. Once content flows, only content resets
    /// the idle clock. A wire whose server may say nothing while a reasoning model thinks (Chat
    /// Completions) sends none, and its first content has `first_token_timeout_ms` alone.
    Heartbeat,
    /// Reasoning the model shows while it thinks (Anthropic's thinking deltas, Gemini's thought
    /// parts, the Responses API's reasoning summary, a Chat Completions server's
    /// `reasoning_content`): handed to a streaming caller as it comes (`ExecEvent::ReasoningDelta`),
    /// never part of the answer. For the call's clocks it is a [`StreamEvent::Heartbeat`]: it proves
    /// the call alive but is not content, so the first-token bound still holds.
    ReasoningDelta(String),
    /// The rate limits the server stated on this call's response (its headers), successes and
    /// failures alike: the runtime paces the scope's later calls by them (`RuntimeBuilder::with_pacing`).
    /// HTTP providers send it first, before any other event, when the response carries any.
    /// Boxed: every event of every call is moved through the stream, and most carry no limits.
    RateLimits(Box<crate::storm::pace::RateLimits>),
    /// The provider sent an error event; it becomes the final message as it is.
    Error {
        /// The event's text, as sent (possibly empty).
        message: String,
        /// The typed facts, when the event carried any.
        error: Option<ModelError>,
    },
}

/// The events of one call. An `Err` item is an error raised while streaming: the agent turns it into
/// an error message `"<Kind>: <text>"`, except a programming error, which goes straight to the caller.
pub type EventStream<'a> = Pin<Box<dyn Stream<Item = Result<StreamEvent, ModelError>> + Send + 'a>>;

/// A model API: makes one streamed call per [`Provider::stream`].
pub trait Provider: Send + Sync + 'static {
    /// A short name for logs and traces, e.g. `"openai"`.
    fn name(&self) -> &str;

    /// Starts one call.
    fn stream<'a>(&'a self, request: &'a Request<'a>) -> EventStream<'a>;

    /// The model asked for, for traces (`gen_ai.request.model`).
    ///
    /// # Default
    /// `None`
    fn model(&self) -> Option<&str> {
        None
    }

    /// The server's host and port, for traces (`server.address`, `server.port`).
    ///
    /// # Default
    /// `None`
    fn server(&self) -> Option<(&str, u16)> {
        None
    }

    /// The model's context window in tokens, when known: an exec whose conversation overflows this
    /// target moves to the next target of the runtime (`RuntimeBuilder::with_fallback`) when that one
    /// declares a larger window, instead of compacting (docs/design.md §12).
    ///
    /// # Default
    /// `None`: unknown, so an overflow never moves an exec on.
    fn context_window(&self) -> Option<u64> {
        None
    }

    /// The most tokens an answer may have, when the provider asks for a limit (Anthropic's
    /// `max_tokens`, and `with_max_tokens` on the other HTTP providers): the pacer's estimate of a
    /// call's output tokens, reserved against the token limits before the call is sent and
    /// reconciled with the usage its answer reports (`RuntimeBuilder::with_pacing`).
    ///
    /// # Default
    /// `None`: no limit is sent, so the pacer estimates the output from the scope's recent answers.
    fn max_output_tokens(&self) -> Option<u64> {
        None
    }

    /// What the retry quota and the cooldowns are shared by: one provider endpoint and API key.
    /// HTTP providers answer `"<name>:<fingerprint>"`, a hash of the base URL and the key (never the
    /// key itself), so a fleet sharing a store shares them per key.
    ///
    /// # Default
    /// [`Provider::name`]
    fn scope(&self) -> String {
        self.name().to_owned()
    }
}
