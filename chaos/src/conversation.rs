//! What a request's conversation holds, read out of its wire's shape: the facts the size rules of
//! [`usage`](crate::usage) (input tokens) and [`context`](crate::context) (context bytes) count,
//! and the opening that tells one conversation from another (a scenario scripted
//! [per conversation](crate::Scenario::per_conversation)), so that none of them reads a wire's
//! fields.

use std::borrow::Cow;
use std::hash::{DefaultHasher, Hash, Hasher};

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
    /// How many of [`texts`](Self::texts) belong to the first user message and the messages
    /// before it (a system or developer message on the wires that carry it as a message);
    /// `None` when no message is a user's (then all of them do).
    pub(crate) opening: Option<usize>,
    /// The input of each tool call, as its JSON text (the arguments string a wire sends, or the
    /// compact JSON of an input object).
    pub(crate) tool_inputs: Vec<Cow<'a, str>>,
}

impl<'a> Conversation<'a> {
    /// The texts the input-token rule counts: the system prompt's, then the others.
    pub(crate) fn prose(&self) -> impl Iterator<Item = &'a str> + '_ {
        self.system.iter().chain(&self.texts).copied()
    }

    /// Marks the texts read so far (`read` of them) as the opening, if the first user message
    /// has just been read (`role` is a user's) and no opening was marked before.
    pub(crate) fn mark_opening(&mut self, is_user: bool, read: usize) {
        if is_user && self.opening.is_none() {
            self.opening = Some(read);
        }
    }

    /// What tells this conversation from another: a hash of its system prompt and its opening
    /// texts, each with its length so that no two different lists of texts run together. The
    /// follow-up requests of a tool loop resend the same opening, so they share it.
    pub(crate) fn key(&self) -> u64 {
        let opening = &self.texts[..self.opening.unwrap_or(self.texts.len()).min(self.texts.len())];
        let mut hasher = DefaultHasher::new();
        self.system.len().hash(&mut hasher);
        for text in self.system.iter().chain(opening) {
            text.hash(&mut hasher);
        }
        hasher.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conversation<'a>(system: &[&'a str], texts: &[&'a str], opening: Option<usize>) -> Conversation<'a> {
        Conversation { system: system.to_vec(), texts: texts.to_vec(), opening, ..Conversation::default() }
    }

    #[test]
    fn the_key_is_the_system_prompt_and_the_opening_only() {
        let first = conversation(&["Be brief."], &["Weather in Paris?"], Some(1));
        let follow_up = conversation(&["Be brief."], &["Weather in Paris?", "sunny"], Some(1));
        assert_eq!(first.key(), follow_up.key());
        let other = conversation(&["Be brief."], &["Weather in Rome?"], Some(1));
        assert_ne!(first.key(), other.key());
        let other_system = conversation(&["Be long."], &["Weather in Paris?"], Some(1));
        assert_ne!(first.key(), other_system.key());
        // The same texts, told apart by which are the system prompt's.
        assert_ne!(conversation(&["a"], &["b"], Some(1)).key(), conversation(&[], &["a", "b"], Some(2)).key());
        // No user message: every text is the opening.
        assert_ne!(conversation(&[], &["a"], None).key(), conversation(&[], &["a", "b"], None).key());
    }
}
