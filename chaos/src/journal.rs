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
///  "messages": 3, "context_bytes": 412, "over_window": false}
/// ```
///
/// A request larger than the scenario's [context window](crate::Scenario::with_context_window)
/// reads `"over_window": true` and `"step": {"index": null, "kind": "context_overflow", "repeat":
/// 0}`: no step of the scenario answered it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct JournalEntry {
    /// The request's number, from 0, in arrival order.
    pub seq: u64,
    /// Milliseconds since the server started when the request had been read.
    pub at_ms: u64,
    /// The HTTP method.
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// The wire format, for the two model endpoints.
    pub wire: Option<WireFormat>,
    /// Whether the body asked for a stream (`"stream": true`), for the two model endpoints.
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
}

/// Which step of the scenario answered a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct StepRef {
    /// The step's position in the scenario's `steps`, from 0; `None` for the default step, and
    /// for the context window's answer (then `repeat` is 0).
    pub index: Option<usize>,
    /// The step's kind.
    pub kind: StepKind,
    /// Which of the step's requests this was, from 1 (for the default step: how many requests it
    /// has answered, this one included); 0 for the context window's answer, which is no step's.
    pub repeat: u32,
}

impl StepRef {
    /// Whether the default step answered.
    pub fn is_default(&self) -> bool {
        self.index.is_none() && !self.is_context_window()
    }

    /// Whether the scenario's context window answered, rather than a step: the request was larger
    /// than the window (see [`JournalEntry::over_window`]).
    pub fn is_context_window(&self) -> bool {
        self.index.is_none() && self.repeat == 0
    }
}
