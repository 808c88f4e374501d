//! The tool-use answer: text and tool calls, their arguments cut into pieces.

use super::*;

/// An answer whose content is tool calls: the `tool_use` step.
///
/// Every call gets a deterministic id that is unique per request: OpenAI `call_chaos{seq}_{i}`,
/// Anthropic `toolu_chaos{seq}_{i}` (`seq` is the request's journal number, `i` the call's place,
/// from 0). Each call's arguments (its `input` as compact JSON) are split into
/// [`argument_chunks`](ToolUse::argument_chunks) pieces of about the same length.
///
/// Streamed, OpenAI: an optional text chunk, then per call a chunk
/// `delta.tool_calls[{index, id, type: "function", function: {name, arguments: ""}}]` and one
/// chunk `delta.tool_calls[{index, function: {arguments}}]` per piece, then a chunk with
/// `finish_reason: "tool_calls"`, a usage chunk if asked, and `data: [DONE]`. Anthropic:
/// `message_start`, an optional text block, then per call a `content_block_start` with
/// `{"type": "tool_use", "id", "name", "input": {}}`, one `content_block_delta` with an
/// `input_json_delta` (`partial_json`) per piece and a `content_block_stop`, then `message_delta`
/// with `stop_reason: "tool_use"` and `message_stop`.
///
/// Not streamed: OpenAI `message.tool_calls[{id, type: "function", function: {name, arguments}}]`
/// (`content` is the text or `null`) with `finish_reason: "tool_calls"`; Anthropic `content` with
/// the text block (if any) and the `tool_use` blocks, `stop_reason: "tool_use"`.
///
/// # Examples
///
/// ```
/// use agentic_chaos::{Step, StepKind};
/// use serde_json::json;
///
/// let step = Step::tool_use("get_weather", json!({"city": "Paris"}))
///     .call("get_time", json!({"zone": "CET"}))
///     .text("Let me check.")
///     .argument_chunks(4);
/// assert_eq!(step.calls().len(), 2);
/// assert_eq!(step.into_step().kind(), StepKind::ToolUse);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ToolUse {
    pub(crate) calls: Vec<(String, serde_json::Value)>,
    pub(crate) text: Option<String>,
    pub(crate) argument_chunks: u32,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) usage: TokenUsage,
    pub(crate) reasoning: Option<String>,
}

impl ToolUse {
    /// How many pieces each call's arguments are streamed in, unless set.
    pub const DEFAULT_ARGUMENT_CHUNKS: u32 = 3;

    pub(super) fn new() -> Self {
        Self {
            calls: Vec::new(),
            text: None,
            argument_chunks: Self::DEFAULT_ARGUMENT_CHUNKS,
            headers: Vec::new(),
            usage: TokenUsage::default(),
            reasoning: None,
        }
    }

    /// Stream `reasoning` before the text and the calls, in each wire's shape (see
    /// [`Completion::reasoning`]).
    ///
    /// # Default
    ///
    /// None.
    pub fn reasoning(mut self, reasoning: impl Into<String>) -> Self {
        self.reasoning = Some(reasoning.into()).filter(|reasoning: &String| !reasoning.is_empty());
        self
    }

    /// Add a call of the tool `name` with the arguments `input`, after the others.
    pub fn call(mut self, name: impl Into<String>, input: serde_json::Value) -> Self {
        self.calls.push((name.into(), input));
        self
    }

    /// Text the model says before its calls.
    ///
    /// # Default
    ///
    /// None.
    pub fn text(mut self, text: impl Into<String>) -> Self {
        self.text = Some(text.into());
        self
    }

    /// Stream each call's arguments in `n` pieces (at least 1; fewer when the JSON text is shorter).
    ///
    /// # Default
    ///
    /// 3 ([`ToolUse::DEFAULT_ARGUMENT_CHUNKS`]).
    pub fn argument_chunks(mut self, n: u32) -> Self {
        self.argument_chunks = n.max(1);
        self
    }

    /// Pin the counts of the usage the answer reports (see [`Completion::usage`]).
    ///
    /// # Default
    ///
    /// The counts of the [rule](crate#token-usage).
    pub fn usage(mut self, usage: TokenUsage) -> Self {
        self.usage = usage;
        self
    }

    /// The calls: each tool's name and arguments, in order.
    pub fn calls(&self) -> &[(String, serde_json::Value)] {
        &self.calls
    }

    /// This answer as the completion a rich stream renders: its reasoning, its text as one chunk
    /// (none without text), its calls.
    pub(crate) fn as_completion(&self) -> Completion {
        Completion {
            text: self.text.clone().unwrap_or_default(),
            chunks: Some(1),
            reasoning: self.reasoning.clone(),
            calls: self.calls.clone(),
            argument_chunks: self.argument_chunks,
            headers: self.headers.clone(),
            usage: self.usage,
            ..Completion::default()
        }
    }
}

header_setter!(ToolUse);
