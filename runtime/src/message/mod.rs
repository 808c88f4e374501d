//! Conversation messages: roles, content blocks and the assistant's final message of one model call.

pub(crate) mod usage;

pub use usage::Usage;

use serde::{Deserialize, Serialize};

use crate::error::ModelError;
use crate::error::model_error::split_kind;

/// One piece of a message's content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ContentBlock {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// The model asks for a tool to be run.
    ToolUse {
        /// The call's id, echoed by the matching [`ContentBlock::ToolResult`].
        id: String,
        /// The tool's name.
        name: String,
        /// The arguments, as JSON.
        input: serde_json::Value,
    },
    /// The result of a tool call, sent back to the model.
    ToolResult {
        /// The id of the [`ContentBlock::ToolUse`] this answers.
        tool_use_id: String,
        /// The result (or the error text).
        content: String,
        /// True when the tool failed: the model decides what to do about it.
        is_error: bool,
    },
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text { text: text.into() }
    }
}

/// The id the agent gives tool call `index` of an answer whose server sent it none: `call_{index}`.
/// One place makes it, so that a wire can tell the ids it may send back to its server (the
/// server's own) from those it must not (ours, which the server never issued).
pub(crate) fn minted_call_id(index: u32) -> String {
    format!("{MINTED_PREFIX}{index}")
}

/// Whether `id` is one [`minted_call_id`] makes.
#[cfg(feature = "providers")]
pub(crate) fn is_minted_call_id(id: &str) -> bool {
    id.strip_prefix(MINTED_PREFIX).is_some_and(|index| index.parse::<u32>().is_ok_and(|n| n.to_string() == index))
}

const MINTED_PREFIX: &str = "call_";

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Role {
    /// The user (or the program acting for it).
    User,
    /// The model.
    Assistant,
}

/// Why the model stopped producing output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum StopReason {
    /// The model finished its answer.
    Stop,
    /// The model asks for tools to be run.
    ToolUse,
    /// The output hit the token limit.
    Length,
    /// The call failed: see [`AssistantMessage::error_message`] and [`AssistantMessage::error`].
    Error,
    /// The call was cancelled.
    Aborted,
}

impl StopReason {
    /// The wire name: `stop`, `tool_use`, `length`, `error`, `aborted`.
    pub const fn name(self) -> &'static str {
        match self {
            StopReason::Stop => "stop",
            StopReason::ToolUse => "tool_use",
            StopReason::Length => "length",
            StopReason::Error => "error",
            StopReason::Aborted => "aborted",
        }
    }

    /// The reason named `name` (as in [`StopReason::name`]).
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "stop" => StopReason::Stop,
            "tool_use" => StopReason::ToolUse,
            "length" => StopReason::Length,
            "error" => StopReason::Error,
            "aborted" => StopReason::Aborted,
            _ => return None,
        })
    }
}

/// The final message of one model call: the answer, or the failure that ended the call.
///
/// A failed call has `stop_reason == StopReason::Error`, an `error_message` (possibly empty: a dropped
/// stream often carries no text) and, when the failure was typed, the [`ModelError`] with its HTTP
/// status, Retry-After, `x-should-retry`, provider code or transport kind.
///
/// It serializes (serde) whole, the typed failure included: a durable run's journal keeps it
/// (docs/design.md §24).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AssistantMessage {
    /// What the model produced (possibly partial when the call failed).
    pub content: Vec<ContentBlock>,
    /// Why the call ended.
    pub stop_reason: StopReason,
    /// The failure's text, when `stop_reason` is `Error`: `"<Kind>: <text>"` for an error raised while
    /// streaming, the text as sent for an error event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    /// The typed failure, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ModelError>,
    /// The tokens the call used, when the server reported them (a failed call's too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<crate::message::Usage>,
}

impl AssistantMessage {
    /// A successful answer made of one text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            content: vec![ContentBlock::text(text)],
            stop_reason: StopReason::Stop,
            error_message: None,
            error: None,
            usage: None,
        }
    }

    /// A failed call whose error arrived as an event in the stream: its text is kept as it is.
    pub fn error_event(text: impl Into<String>, error: Option<ModelError>) -> Self {
        Self {
            content: Vec::new(),
            stop_reason: StopReason::Error,
            error_message: Some(text.into()),
            error,
            usage: None,
        }
    }

    /// A failed call whose error was raised while streaming: the text is `"<Kind>: <text>"`
    /// (only `<Kind>` when the text is empty), and the typed error is kept.
    pub fn from_error(error: ModelError) -> Self {
        Self {
            content: Vec::new(),
            stop_reason: StopReason::Error,
            error_message: Some(error.to_string()),
            error: Some(error),
            usage: None,
        }
    }

    /// True when the message asks for at least one tool call.
    pub fn has_tool_calls(&self) -> bool {
        self.content.iter().any(|block| matches!(block, ContentBlock::ToolUse { .. }))
    }

    /// True when the call failed.
    pub fn is_error(&self) -> bool {
        self.stop_reason == StopReason::Error
    }

    /// The error text ("" when there is none).
    pub fn error_text(&self) -> &str {
        self.error_message.as_deref().unwrap_or("")
    }

    /// The failure as layer 2 sees it, `"<Kind>: <text>"`: a text that already starts with a kind
    /// (an error raised while streaming) is kept; an error event's text gets its typed error's kind,
    /// or `ModelError` (only the kind when the text is empty). Empty for a message that did not fail.
    ///
    /// # Examples
    ///
    /// ```
    /// use agentic_runtime::message::AssistantMessage;
    ///
    /// assert_eq!(AssistantMessage::error_event("Overloaded", None).failure_text(), "ModelError: Overloaded");
    /// assert_eq!(AssistantMessage::error_event("", None).failure_text(), "ModelError");
    /// assert_eq!(AssistantMessage::error_event("RateLimitError: slow", None).failure_text(), "RateLimitError: slow");
    /// ```
    pub fn failure_text(&self) -> String {
        if !self.is_error() {
            return String::new();
        }
        let text = self.error_text();
        if split_kind(text).is_some() {
            return text.to_owned();
        }
        let kind = self.error.as_ref().map_or("ModelError", ModelError::kind);
        if text.is_empty() {
            return kind.to_owned();
        }
        // Built in one allocation of the right size: layer 2 makes one per failed attempt.
        let mut failure = String::with_capacity(kind.len() + 2 + text.len());
        failure.push_str(kind);
        failure.push_str(": ");
        failure.push_str(text);
        failure
    }

    /// The text blocks, concatenated.
    pub fn text_content(&self) -> String {
        let mut out = String::new();
        for block in &self.content {
            if let ContentBlock::Text { text } = block {
                out.push_str(text);
            }
        }
        out
    }

    /// Moves the text out without copying when the message holds exactly one text block.
    pub(crate) fn into_text(mut self) -> String {
        match self.content.as_mut_slice() {
            [ContentBlock::Text { text }] => std::mem::take(text),
            _ => self.text_content(),
        }
    }
}

/// One message of a conversation; it serializes (serde) as an object with its `role`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Message {
    /// A user message.
    User {
        /// Its content.
        content: Vec<ContentBlock>,
    },
    /// A message the model wrote.
    Assistant(AssistantMessage),
}

impl Message {
    /// A user message made of one text block.
    pub fn user(text: impl Into<String>) -> Self {
        Message::User { content: vec![ContentBlock::text(text)] }
    }

    /// Who wrote it.
    pub fn role(&self) -> Role {
        match self {
            Message::User { .. } => Role::User,
            Message::Assistant(_) => Role::Assistant,
        }
    }

    /// The assistant message, if this is one.
    pub fn as_assistant(&self) -> Option<&AssistantMessage> {
        match self {
            Message::Assistant(message) => Some(message),
            Message::User { .. } => None,
        }
    }

    /// The text blocks, concatenated.
    pub fn text(&self) -> String {
        match self {
            Message::User { content } => content
                .iter()
                .filter_map(|block| match block {
                    ContentBlock::Text { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect(),
            Message::Assistant(message) => message.text_content(),
        }
    }
}
