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
///  "agentic_call": "1", "auth": true, "tools": ["get_weather"], "schema": null}
/// ```
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
}

/// Which step of the scenario answered a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct StepRef {
    /// The step's position in the scenario's `steps`, from 0; `None` for the default step.
    pub index: Option<usize>,
    /// The step's kind.
    pub kind: StepKind,
    /// Which of the step's requests this was, from 1 (for the default step: how many requests it
    /// has answered, this one included).
    pub repeat: u32,
}

impl StepRef {
    /// Whether the default step answered.
    pub fn is_default(&self) -> bool {
        self.index.is_none()
    }
}
