//! The wire formats: which APIs the server speaks, and the seam a wire implements.
//!
//! Each wire is one file ([`openai`], [`anthropic`], [`gemini`], [`responses`]) implementing the
//! crate's `Render` trait (`render.rs`, with the `Exchange` that hands a wire the facts of one
//! answer): how its requests are routed and read, and the bytes of each answer, error and event.
//! `shared.rs` holds what several wires share (SSE framing, error parts, the readers of the
//! OpenAI and Anthropic request shapes). The server's loop decides *when* (headers, chunk *k*,
//! faults, floods, hangs); the wire decides *which bytes*. This file is the only one that names
//! every wire: [`WireFormat`], [`ALL`](WireFormat::ALL) and the arms of `WireFormat::render`.
//!
//! # Adding a wire
//!
//! One file `wire/<name>.rs` with a unit struct implementing `Render` (its rustdoc tables say
//! which step options it renders and which it ignores), one [`WireFormat`] variant with its serde
//! name, appended to [`ALL`](WireFormat::ALL), and its arm in `WireFormat::render` and `name`. Nothing
//! else: the server, the steps, the journal and the size rules know no wire. Its file's tests
//! check that `Render::read_back` reads what it renders (the trait's rustdoc, in the source, is
//! the manual: what each method must produce).

pub mod anthropic;
pub mod gemini;
pub mod openai;
pub(crate) mod render;
pub mod responses;
pub(crate) mod shared;

use serde::{Deserialize, Serialize};

use crate::conversation::Conversation;
use crate::forced::ToolChoice;
use render::Render;

/// The API a request spoke, told by its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum WireFormat {
    /// OpenAI-compatible chat completions: `POST /v1/chat/completions`.
    #[serde(rename = "openai")]
    OpenAi,
    /// Anthropic messages: `POST /v1/messages`.
    #[serde(rename = "anthropic")]
    Anthropic,
    /// Google Gemini: `POST /v1beta/models/{model}:streamGenerateContent` (and `:generateContent`).
    #[serde(rename = "gemini")]
    Gemini,
    /// OpenAI's Responses: `POST /v1/responses`.
    #[serde(rename = "responses")]
    Responses,
}

impl WireFormat {
    /// Every wire the server speaks, in the order the journal and the registries name them; a new
    /// wire is appended.
    pub const ALL: [Self; 4] = [Self::OpenAi, Self::Anthropic, Self::Gemini, Self::Responses];

    /// The wire's name, as the journal spells it (`openai`, `anthropic`).
    pub const fn name(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::Anthropic => "anthropic",
            Self::Gemini => "gemini",
            Self::Responses => "responses",
        }
    }

    /// The wire named `name` (as [`name`](Self::name) spells it), if any.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|wire| wire.name() == name)
    }

    /// The code that routes, reads and renders this wire.
    pub(crate) fn render(self) -> &'static dyn Render {
        match self {
            Self::OpenAi => &openai::OpenAi,
            Self::Anthropic => &anthropic::Anthropic,
            Self::Gemini => &gemini::Gemini,
            Self::Responses => &responses::Responses,
        }
    }

    /// The format served at `path` (without its query), if any.
    pub fn from_path(path: &str) -> Option<Self> {
        Self::route(path).map(|(wire, _)| wire)
    }

    /// The first wire of [`ALL`](Self::ALL) whose route matches `path`, and what the path says.
    pub(crate) fn route(path: &str) -> Option<(Self, Route)> {
        Self::ALL.into_iter().find_map(|wire| wire.render().route(path).map(|route| (wire, route)))
    }

    /// The path this format is served at, as the server's error texts name it.
    pub fn path(self) -> &'static str {
        self.render().names().path
    }

    /// The path a client posts a request for `model` to; `stream` matters to a wire whose path
    /// tells a streamed request from a whole one.
    pub fn request_path(self, model: &str, stream: bool) -> String {
        self.render().request_path(model, stream)
    }

    /// The family of rate-limit headers this wire's API reports its limits in, if any.
    pub(crate) fn rate_limit_headers(self) -> Option<RateLimitHeaders> {
        self.render().names().rate_limit_headers
    }

    /// What a client's base URL adds after `http://HOST:PORT` (`/v1` for OpenAI, nothing for
    /// Anthropic): its SDK appends the rest of [`path`](Self::path).
    pub fn base_path(self) -> &'static str {
        self.render().names().base_path
    }

    /// The text and whether the answer finished, read back from a response body of this wire:
    /// an event stream, or a whole JSON answer (told apart by its first byte). The reference
    /// reader the tests use; a stream without the event that carries the finish is unfinished.
    #[doc(hidden)]
    pub fn read_back(self, body: &[u8]) -> (String, bool) {
        self.render().read_back(body)
    }
}

/// What a request's path says, beyond its wire: the model and the stream flag of a wire that
/// carries them in the path (Gemini's `/v1beta/models/{model}:streamGenerateContent`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Route {
    /// The model named in the path.
    pub(crate) model: Option<String>,
    /// Whether the path asks for a stream; `None` when the body says.
    pub(crate) stream: Option<bool>,
}

/// The facts of a request the server acts on and journals, read by its wire.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Asked<'a> {
    /// The model asked for (from the body or the path).
    pub(crate) model: Option<String>,
    /// Whether it asks for a stream.
    pub(crate) stream: bool,
    /// Whether a streamed answer should carry its usage: OpenAI's
    /// `stream_options.include_usage`; always true on wires that always send it.
    pub(crate) usage_asked: bool,
    /// What the request lets the model do with its tools: a forced call turns a text answer into
    /// a call, as a real model answers (see [`ToolChoice`]).
    pub(crate) tool_choice: ToolChoice,
    /// The name of the schema the answer must follow, if any.
    pub(crate) schema: Option<String>,
    /// The names of the tools offered.
    pub(crate) tools: Vec<String>,
    /// The most output tokens the request allows, in the wire's field for it.
    pub(crate) max_tokens: Option<u64>,
    /// The conversation the size rules count.
    pub(crate) conversation: Conversation<'a>,
}

/// A 200 that is not an answer (a `not_an_answer` step): one JSON body, or the events of a
/// stream that ends cleanly.
pub(crate) enum NotAnAnswerBody {
    Json(String),
    Events(Vec<String>),
}
/// The fixed names of a wire, for [`Render::names`].
#[derive(Debug)]
pub(crate) struct Names {
    /// How the wire names itself in the 404 text (`OpenAI`).
    pub(crate) label: &'static str,
    /// The path the wire is served at, as the 404 and 405 texts name it.
    pub(crate) path: &'static str,
    /// What a client's base URL adds after `http://HOST:PORT`.
    pub(crate) base_path: &'static str,
    /// The headers the wire carries its API key in, its preferred first (lowercase);
    /// `authorization` is read as a bearer token.
    pub(crate) key_headers: &'static [&'static str],
    /// The request id header every answer carries, if the API sends one.
    pub(crate) request_id_header: Option<&'static str>,
    /// The family of rate-limit headers the API reports its limits in, if any.
    pub(crate) rate_limit_headers: Option<RateLimitHeaders>,
}

/// A family of rate-limit headers: which names a wire reports a scenario's
/// [rate limit](crate::Scenario::with_rate_limit) in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RateLimitHeaders {
    /// `x-ratelimit-{limit,remaining,reset}-{requests,tokens}`, resets as Go durations.
    OpenAi,
    /// `anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{limit,remaining,reset}`,
    /// resets as RFC 3339 instants.
    Anthropic,
}
