//! The journal: one entry per request the server answered or refused.

use serde::{Deserialize, Serialize};

use crate::step::StepKind;
use crate::wire::WireFormat;

/// One request, as the server saw it.
///
/// Requests to the control endpoints (`/_chaos/...`) are not journaled. The API key is never
/// recorded: only whether an `authorization`, `x-api-key` or `api-key` header was present.
///
/// Over HTTP (`GET /_chaos/journal`) an entry reads:
///
/// ```json
/// {"seq": 0, "at_ms": 3, "method": "POST", "path": "/v1/messages", "wire": "anthropic",
///  "stream": true, "model": "claude-x", "step": {"index": 0, "kind": "http_error", "repeat": 1},
///  "agentic_call": "1", "auth": true, "tools": ["get_weather"], "schema": null,
///  "messages": 3, "context_bytes": 412, "over_window": false, "outage": false, "rate_limited": false}
/// ```
///
/// A request larger than the scenario's [context window](crate::Scenario::with_context_window)
/// reads `"over_window": true` and `"step": {"index": null, "kind": "context_overflow", "repeat":
/// 0}`: no step of the scenario answered it. A request that arrived during an
/// [outage](crate::Scenario::with_outage) reads `"outage": true` and `"step": {"index": null,
/// "kind": "http_error", "repeat": 0, "outage": 1}` (the outage's step and the window's position).
/// A request the scenario's [rate limit](crate::Scenario::with_rate_limit) refused reads
/// `"rate_limited": true` and `"step": {"index": null, "kind": "http_error", "repeat": 0,
/// "rate_limited": true}`: the 429 is no step's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct JournalEntry {
    /// The request's number, from 0, in arrival order.
    pub seq: u64,
    /// Milliseconds since the server started (or was last reset) when the request had been read:
    /// the scenario's clock, which [outages](crate::Scenario::with_outage) are measured on.
    pub at_ms: u64,
    /// The HTTP method.
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// The wire format, for a request to a model endpoint.
    pub wire: Option<WireFormat>,
    /// Whether the request asked for a stream (its body's `"stream": true`, or Gemini's path), for a
    /// request to a model endpoint.
    pub stream: Option<bool>,
    /// The `model` the body named, if any.
    pub model: Option<String>,
    /// The step that answered; `None` for requests that no step answers (404, 405, 400).
    pub step: Option<StepRef>,
    /// The `x-agentic-call` header (the call's number within its exec), if sent.
    pub agentic_call: Option<String>,
    /// Whether an `authorization`, `x-api-key` or `api-key` header was present (never its value).
    pub auth: bool,
    /// The names of the tools the request offered (OpenAI `tools[].function.name`, Anthropic
    /// `tools[].name`), in order; empty when it offered none.
    #[serde(default)]
    pub tools: Vec<String>,
    /// The name of the schema the answer was asked to follow, if any: OpenAI
    /// `response_format.json_schema.name`, or Anthropic's forced tool (`tool_choice: {"type":
    /// "tool", "name"}`).
    #[serde(default)]
    pub schema: Option<String>,
    /// The most output tokens the request allowed, when it set a limit: Chat Completions
    /// `max_tokens` (or `max_completion_tokens`), Anthropic `max_tokens`, Gemini
    /// `generationConfig.maxOutputTokens`, Responses `max_output_tokens`.
    #[serde(default)]
    pub max_tokens: Option<u64>,
    /// How many messages the request's `messages` array held; 0 without one (or without a JSON
    /// body).
    #[serde(default)]
    pub messages: usize,
    /// The size of the request's conversation in bytes, by the [rule](crate#context-window) the
    /// context window applies (computed with or without a window); 0 without a JSON body.
    #[serde(default)]
    pub context_bytes: usize,
    /// Whether the scenario's context window refused the request: it was larger than the window,
    /// got the provider's context-overflow answer, and consumed no step.
    #[serde(default)]
    pub over_window: bool,
    /// Whether an [outage](crate::Scenario::with_outage) answered the request: it arrived during
    /// one of the scenario's outage windows, got that outage's step, and consumed no step
    /// ([`StepRef::outage`] says which window).
    #[serde(default)]
    pub outage: bool,
    /// Whether the scenario's [rate limit](crate::Scenario::with_rate_limit) refused the request:
    /// it did not fit the key's buckets, got a 429, consumed no step and was charged nothing.
    #[serde(default)]
    pub rate_limited: bool,
    /// The conversation the request belongs to, for a scenario scripted
    /// [per conversation](crate::Scenario::per_conversation): numbered from 0 in the order the
    /// server first saw each (since its start or last reset; a forgotten conversation that comes
    /// back gets a new number). `None` (and absent from the JSON) for a scenario whose script every
    /// request shares, and for a request to no model route.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation: Option<u64>,
    /// The tool the request's forced tool choice made the answer call instead of what its step
    /// scripted: a text sent as that tool's arguments, or a call of another tool (or several
    /// calls) made one call of it (see [Forced tool choice](crate#forced-tool-choice)). `None`
    /// (and absent from the JSON) when the answer went out as scripted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forced_tool: Option<String>,
}

/// Which step of the scenario answered a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct StepRef {
    /// The step's position in the scenario's `steps`, from 0; `None` for the default step, and
    /// for the context window's, an outage's and the rate limit's answers (then `repeat` is 0).
    pub index: Option<usize>,
    /// The step's kind.
    pub kind: StepKind,
    /// Which of the step's requests this was, from 1 (for the default step: how many requests it
    /// has answered, this one included); 0 for the context window's, an outage's and the rate
    /// limit's answers, which are no step's.
    pub repeat: u32,
    /// The position of the [outage](crate::Scenario::with_outage) window that answered, from 0
    /// in the scenario's `outages`; `None` otherwise (and absent from the JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outage: Option<usize>,
    /// Whether the scenario's [rate limit](crate::Scenario::with_rate_limit) answered, with its
    /// 429, rather than a step (absent from the JSON when false).
    #[serde(default, skip_serializing_if = "is_false")]
    pub rate_limited: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl StepRef {
    /// Whether the default step answered.
    pub fn is_default(&self) -> bool {
        self.index.is_none() && !self.is_context_window() && !self.is_outage() && !self.rate_limited
    }

    /// Whether the scenario's context window answered, rather than a step: the request was larger
    /// than the window (see [`JournalEntry::over_window`]).
    pub fn is_context_window(&self) -> bool {
        self.index.is_none() && self.repeat == 0 && !self.is_outage() && !self.rate_limited
    }

    /// Whether an outage answered, rather than a step: the request arrived during one of the
    /// scenario's outage windows (see [`JournalEntry::outage`]).
    pub fn is_outage(&self) -> bool {
        self.outage.is_some()
    }

    /// Whether the scenario's rate limit answered, with a 429, rather than a step (see
    /// [`JournalEntry::rate_limited`]).
    pub fn is_rate_limited(&self) -> bool {
        self.rate_limited
    }
}
