//! `agentic ask --stream --json`: each event of the exec as one JSON object on its own line,
//! `{"event": "text_delta", "text": ..}` and so on, the last `{"event": "done", ..}` with the
//! fields `ask --json` prints.

use agentic_runtime::exec::ExecEvent;
use agentic_runtime::policy::rules::millis;
use serde::Serialize;
use serde_json::Value;

use crate::ask_json::{JsonAttempt, JsonOutcome};

/// One event as `--stream --json` prints it.
#[derive(Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub(crate) enum JsonEvent<'a> {
    /// More of the answer's text.
    TextDelta { text: &'a str },
    /// More of the reasoning the model shows.
    ReasoningDelta { text: &'a str },
    /// The model asked for a tool.
    ToolCall { id: &'a str, name: &'a str, arguments: &'a Value },
    /// A tool returned, or failed.
    ToolResult { id: &'a str, name: &'a str, content: &'a str, is_error: bool },
    /// The text and reasoning shown since the current model turn began are void.
    Rewind {
        attempt: u32,
        call: u32,
        error: &'a str,
        /// Absent when no call follows after a wait.
        #[serde(skip_serializing_if = "Option::is_none")]
        wait_ms: Option<u64>,
        /// The target of the next call, on a runtime with fallbacks.
        #[serde(skip_serializing_if = "Option::is_none")]
        target: Option<&'a str>,
    },
    /// A decision of either layer, as `--json` prints it in `attempts`.
    Decision(JsonAttempt<'a>),
    /// The last event: what `--json` prints.
    Done(JsonOutcome<'a>),
}

impl<'a> JsonEvent<'a> {
    /// `event` as `--stream --json` prints it; `None` for an event this CLI does not know (the
    /// runtime's list may grow).
    pub(crate) fn of(event: &'a ExecEvent) -> Option<Self> {
        Some(match event {
            ExecEvent::TextDelta(text) => Self::TextDelta { text },
            ExecEvent::ReasoningDelta(text) => Self::ReasoningDelta { text },
            ExecEvent::ToolCall { id, name, arguments, .. } => Self::ToolCall { id, name, arguments },
            ExecEvent::ToolResult { id, name, content, is_error, .. } => {
                Self::ToolResult { id, name, content, is_error: *is_error }
            }
            ExecEvent::Rewind { attempt, call, error, wait, target, .. } => Self::Rewind {
                attempt: *attempt,
                call: *call,
                error,
                wait_ms: wait.map(millis),
                target: target.as_deref(),
            },
            ExecEvent::Decision(decision) => Self::Decision(JsonAttempt::of(decision)),
            ExecEvent::Done(result) => Self::Done(JsonOutcome::of(result)),
            _ => return None,
        })
    }

    /// The event's line, without the newline.
    pub(crate) fn line(&self) -> String {
        serde_json::to_string(self).expect("plain data serializes")
    }
}
