//! What both built-in compactors keep: the prompt and the last turns of a conversation.

use crate::message::{ContentBlock, Message};

/// The index where the last `turns` model turns of `messages` begin (a turn begins with a message
/// of the model), or 1 when the conversation holds no more than the prompt and those turns: the
/// messages between the prompt and that index are the ones a compactor may drop.
pub(crate) fn last_turns_start(messages: &[Message], turns: u32) -> usize {
    let mut seen = 0u32;
    for (index, message) in messages.iter().enumerate().skip(1).rev() {
        if matches!(message, Message::Assistant(_)) {
            seen += 1;
            if seen == turns {
                return index;
            }
        }
    }
    1
}

/// Adds `note` to the prompt as a text block of its own, so that the model knows what became of the
/// turns between the prompt and the ones kept (a message of its own would make two user messages
/// in a row, which some servers refuse).
pub(crate) fn note_on_prompt(messages: &mut [Message], note: String) {
    if let Some(Message::User { content }) = messages.first_mut() {
        content.push(ContentBlock::text(note));
    }
}

/// "1 message", "3 messages".
pub(crate) fn messages_count(count: usize) -> String {
    if count == 1 { "1 message".to_owned() } else { format!("{count} messages") }
}

/// "the last turn", "the last 2 turns".
pub(crate) fn last_turns(turns: u32) -> String {
    if turns == 1 { "the last turn".to_owned() } else { format!("the last {turns} turns") }
}

/// For tests: the prompt `task`, then `turns` turns of `turn N` and `result N`.
#[cfg(test)]
pub(crate) fn conversation(turns: usize) -> Vec<Message> {
    use crate::message::AssistantMessage;

    let mut messages = vec![Message::user("task")];
    for turn in 0..turns {
        messages.push(Message::Assistant(AssistantMessage::text(format!("turn {turn}"))));
        messages.push(Message::user(format!("result {turn}")));
    }
    messages
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_turns_begin_at_their_first_model_message() {
        let messages = conversation(4);
        assert_eq!(last_turns_start(&messages, 1), 7);
        assert_eq!(last_turns_start(&messages, 2), 5);
        assert_eq!(last_turns_start(&messages, 4), 1);
        assert_eq!(last_turns_start(&messages, 9), 1, "more turns kept than there are: nothing to drop");
        assert_eq!(last_turns_start(&[Message::user("task")], 1), 1);
    }
}
