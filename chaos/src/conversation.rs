//! What a request's conversation holds, read out of its wire's shape: the facts the size rules of
//! [`usage`](crate::usage) (input tokens) and [`context`](crate::context) (context bytes) count,
//! so that neither reads a wire's fields.

use std::borrow::Cow;

/// A request's conversation, wire-neutral: each wire's `read` fills it from its own fields
/// (`messages` and `system`, `contents` and `systemInstruction`, `input` and `instructions`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Conversation<'a> {
    /// How many messages (turns) it holds.
    pub(crate) messages: usize,
    /// The system prompt's texts.
    pub(crate) system: Vec<&'a str>,
    /// Every other text: each message's text, and each tool result's.
    pub(crate) texts: Vec<&'a str>,
    /// The input of each tool call, as its JSON text (the arguments string a wire sends, or the
    /// compact JSON of an input object).
    pub(crate) tool_inputs: Vec<Cow<'a, str>>,
}

impl<'a> Conversation<'a> {
    /// The texts the input-token rule counts: the system prompt's, then the others.
    pub(crate) fn prose(&self) -> impl Iterator<Item = &'a str> + '_ {
        self.system.iter().chain(&self.texts).copied()
    }
}
