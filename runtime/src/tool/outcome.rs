//! What a tool call gave, and the message that answers one turn's calls.

use serde_json::Value;

use crate::message::{ContentBlock, Message};

/// What one tool call gave: the call, its result text and whether it is an error.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolOutcome {
    /// The call's id (the [`ContentBlock::ToolUse`]'s), echoed by the result.
    pub call_id: String,
    /// The tool the model named.
    pub tool: String,
    /// The arguments the model sent.
    pub input: Value,
    /// The result text, or the error text.
    pub content: String,
    /// True when the call failed (the tool's error, an unknown tool, bad arguments, a panic, a
    /// timeout).
    pub is_error: bool,
}

impl ToolOutcome {
    /// The [`ContentBlock::ToolResult`] that answers the call.
    pub fn to_block(&self) -> ContentBlock {
        ContentBlock::ToolResult {
            tool_use_id: self.call_id.clone(),
            content: self.content.clone(),
            is_error: self.is_error,
        }
    }

    /// The [`ContentBlock::ToolResult`] that answers the call, without copying.
    pub fn into_block(self) -> ContentBlock {
        ContentBlock::ToolResult { tool_use_id: self.call_id, content: self.content, is_error: self.is_error }
    }
}

/// The user message that answers one turn's calls: their results, in call order.
pub fn results_message(outcomes: impl IntoIterator<Item = ToolOutcome>) -> Message {
    Message::User { content: outcomes.into_iter().map(ToolOutcome::into_block).collect() }
}
