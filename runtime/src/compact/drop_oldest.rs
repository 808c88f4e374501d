//! The compactor that drops the oldest turns.

use crate::compact::turns::{last_turns, last_turns_start, messages_count, note_on_prompt};
use crate::compact::{CompactFuture, Compactor, Overflow};
use crate::message::Message;

/// Drops the oldest turns of the conversation (tool calls with their results, rejected answers with
/// their feedback), keeping the prompt and the last `turns` turns; the system instruction is always
/// kept. A note added to the prompt tells the model how many messages were dropped. Costs no call;
/// what the dropped turns said is lost (see [`Summarize`](crate::compact::Summarize) to keep its
/// gist).
///
/// It cannot compact a conversation that is no more than the prompt and its last `turns` turns
/// (a prompt that overflows alone, for one): the exec then ends with kind `context_overflow`.
///
/// # Examples
///
/// ```
/// use agentic_runtime::Runtime;
/// use agentic_runtime::compact::DropOldest;
/// # use agentic_runtime::ScriptedProvider;
/// # let provider = ScriptedProvider::new([]);
///
/// let runtime = Runtime::builder(provider).with_compactor(DropOldest::keeping(3)).build().unwrap();
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DropOldest {
    turns: u32,
}

impl DropOldest {
    /// Keeps the prompt and the last `turns` turns (0 counts as 1: the last turn holds the message
    /// the model answers).
    pub const fn keeping(turns: u32) -> Self {
        Self { turns: if turns == 0 { 1 } else { turns } }
    }

    /// How many of the last turns it keeps.
    pub const fn turns(&self) -> u32 {
        self.turns
    }

    fn drop_oldest(&self, mut messages: Vec<Message>) -> Result<Vec<Message>, String> {
        let start = last_turns_start(&messages, self.turns);
        if start <= 1 {
            return Err(format!(
                "nothing to drop: the conversation is the prompt and {} ({})",
                last_turns(self.turns),
                messages_count(messages.len())
            ));
        }
        messages.drain(1..start);
        let note = format!(
            "[{} of this conversation, after this one, were dropped to fit the context window.]",
            messages_count(start - 1)
        );
        note_on_prompt(&mut messages, note);
        Ok(messages)
    }
}

/// Keeps the last 2 turns: the one the model answers, and the one before, which it usually builds on.
impl Default for DropOldest {
    fn default() -> Self {
        Self::keeping(2)
    }
}

impl Compactor for DropOldest {
    fn name(&self) -> &str {
        "drop_oldest"
    }

    fn compact<'a>(&'a self, mut overflow: Overflow<'a>) -> CompactFuture<'a> {
        let compacted = self.drop_oldest(overflow.take_messages());
        Box::pin(std::future::ready(compacted))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::turns::conversation;
    use crate::message::ContentBlock;

    #[test]
    fn keeps_the_prompt_and_the_last_turns_and_says_what_went() {
        let compacted = DropOldest::keeping(2).drop_oldest(conversation(5)).unwrap();
        let texts: Vec<String> = compacted.iter().map(Message::text).collect();
        assert_eq!(
            texts,
            [
                "task[6 messages of this conversation, after this one, were dropped to fit the context window.]",
                "turn 3",
                "result 3",
                "turn 4",
                "result 4"
            ]
        );
        let Message::User { content } = &compacted[0] else { panic!("the prompt is a user message") };
        assert_eq!(content.len(), 2, "the note is a block of its own: {content:?}");
        assert!(matches!(&content[0], ContentBlock::Text { text } if text == "task"));
    }

    #[test]
    fn cannot_drop_below_the_prompt_and_the_turns_kept() {
        let error = DropOldest::keeping(2).drop_oldest(conversation(2)).unwrap_err();
        assert_eq!(error, "nothing to drop: the conversation is the prompt and the last 2 turns (5 messages)");
        let error = DropOldest::keeping(1).drop_oldest(vec![Message::user("a huge prompt")]).unwrap_err();
        assert_eq!(error, "nothing to drop: the conversation is the prompt and the last turn (1 message)");
    }

    #[test]
    fn keeping_no_turn_keeps_one() {
        assert_eq!(DropOldest::keeping(0).turns(), 1);
        assert_eq!(DropOldest::default().turns(), 2);
    }
}
