//! What an [`ExecStream`](crate::exec::ExecStream) yields, and what it does once text was shown.

use std::time::Duration;

use serde_json::Value;

use crate::answer::{ExecError, Reply};
use crate::decision::Decision;

/// One event of a streamed exec ([`Runtime::exec_stream`](crate::Runtime::exec_stream)), in the
/// order it happened.
///
/// The contract: a consumer that appends each [`ExecEvent::TextDelta`] to the current model turn's
/// text, clears that text at each [`ExecEvent::Rewind`] and starts a new turn after each
/// [`ExecEvent::ToolResult`] ends with the last turn's text equal to the reply's
/// [`Reply::text`]. Every [`ExecEvent::ToolCall`] has one [`ExecEvent::ToolResult`] after it, with
/// the same `id`. A failure before anything of its call was shown is invisible (no rewind); the
/// last event is always [`ExecEvent::Done`].
#[derive(Debug)]
#[non_exhaustive]
pub enum ExecEvent {
    /// More of the answer's text, as the model wrote it.
    TextDelta(String),
    /// More of the reasoning the model shows while it thinks, where the wire sends it (Anthropic's
    /// thinking, Gemini's thoughts, the Responses API's reasoning summary, `reasoning_content`).
    /// Never part of the answer; a rewind voids it with the turn's text.
    ReasoningDelta(String),
    /// The model asked for a tool, once its call was complete (name and arguments); the tool runs
    /// after it.
    #[non_exhaustive]
    ToolCall {
        /// The call's id, echoed by its [`ExecEvent::ToolResult`].
        id: String,
        /// The tool the model named.
        name: String,
        /// The arguments the model sent.
        arguments: Value,
    },
    /// A tool returned (or failed, or was not run): what goes back to the model.
    #[non_exhaustive]
    ToolResult {
        /// The id of the [`ExecEvent::ToolCall`] it answers.
        id: String,
        /// The tool.
        name: String,
        /// The result text, or the error text the model sees.
        content: String,
        /// True when the call failed (the tool's error, an unknown tool, bad arguments, a
        /// timeout, a panic).
        is_error: bool,
    },
    /// Everything shown since the start of the current model turn (text and reasoning) is void:
    /// the call that showed it failed, and what follows replaces it. Sent only when something of
    /// the failed call was shown, right after the [`ExecEvent::Decision`] that made another call.
    #[non_exhaustive]
    Rewind {
        /// The exec attempt (from 1) whose call failed.
        attempt: u32,
        /// The model call (from 1, across both layers and every target) that failed.
        call: u32,
        /// Why, as `"<Kind>: <text>"` (the decision's [`Decision::error`]).
        error: String,
        /// The wait before the next call, when there is one.
        wait: Option<Duration>,
        /// The target the next call goes to, as [`Runtime::targets`](crate::Runtime::targets)
        /// names it (`None` on a runtime without fallbacks).
        target: Option<String>,
    },
    /// A decision of either layer, as it was made: the same as the reply's
    /// [`Reply::decisions`] (or the error's), one at a time.
    Decision(Decision),
    /// The last event: exactly what [`Runtime::exec`](crate::Runtime::exec) would have returned,
    /// its usage counting every attempt, failed ones included.
    Done(Result<Reply, ExecError>),
}

/// What a streamed exec does once something of a call reached the caller (the commit point) and
/// that call fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum StreamMode {
    /// Retry as `exec` would, and say so: an [`ExecEvent::Rewind`] voids what the failed call
    /// showed, and the next call streams its turn from the start (on the next target, across wires,
    /// when the exec falls back). The default for a text answer.
    #[default]
    Replay,
    /// Show nothing of a call until its turn is accepted (the answer passed the schema and the
    /// validator, or the model asked for tools): no rewind is ever needed, and the text comes in
    /// one piece per turn. The default for a request with a schema.
    Buffer,
    /// Stop at the first failure after something was shown: the exec ends with an error of kind
    /// `refused` ([`Refusal::Committed`](crate::storm::Refusal::Committed)); a failure before the
    /// first delta is retried as usual.
    Fail,
}
