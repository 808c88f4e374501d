//! A call's input tokens, estimated from its request before it is sent: the rule of thumb of the
//! providers' own docs, about four bytes of English text per token, rounded up, and a few tokens
//! for each message's framing. The answer's usage corrects it ([`Pacer::settle`](super::Pacer)).

use crate::message::{AssistantMessage, ContentBlock, Message};
use crate::tool::ToolSpec;

/// Bytes of text per token, as the providers' docs estimate it for English.
const BYTES_PER_TOKEN: usize = 4;
/// Tokens of framing per message (its role and separators).
const TOKENS_PER_MESSAGE: u64 = 4;

/// The input tokens of a request of `system`, `messages` and `tools`, estimated.
pub(crate) fn input_tokens(system: Option<&str>, messages: &[Message], tools: &[ToolSpec]) -> u64 {
    let mut bytes = system.map_or(0, str::len);
    for message in messages {
        let blocks = match message {
            Message::User { content } => content.as_slice(),
            Message::Assistant(answer) => answer.content.as_slice(),
        };
        bytes += blocks.iter().map(block_bytes).sum::<usize>();
    }
    for tool in tools {
        bytes += tool.name.len() + tool.description.len() + json_bytes(&tool.parameters);
    }
    let framing = TOKENS_PER_MESSAGE.saturating_mul(messages.len() as u64 + u64::from(system.is_some()));
    (bytes.div_ceil(BYTES_PER_TOKEN) as u64).saturating_add(framing)
}

/// The output tokens of `answer`, estimated the same way, for a call whose server reported no usage.
pub(crate) fn answer_tokens(answer: &AssistantMessage) -> u64 {
    let bytes: usize = answer.content.iter().map(block_bytes).sum();
    bytes.div_ceil(BYTES_PER_TOKEN) as u64
}

fn block_bytes(block: &ContentBlock) -> usize {
    match block {
        ContentBlock::Text { text } => text.len(),
        ContentBlock::ToolUse { id, name, input } => id.len() + name.len() + json_bytes(input),
        ContentBlock::ToolResult { tool_use_id, content, .. } => tool_use_id.len() + content.len(),
    }
}

/// The length of `value` as compact JSON, without writing it out (escapes aside): each item is
/// followed by a comma or the closing bracket.
fn json_bytes(value: &serde_json::Value) -> usize {
    use serde_json::Value;
    match value {
        Value::Null => 4,
        Value::Bool(_) => 5,
        Value::Number(number) => number.to_string().len(),
        Value::String(text) => text.len() + 2,
        Value::Array(items) => 1 + items.iter().map(|item| json_bytes(item) + 1).sum::<usize>().max(1),
        Value::Object(fields) => {
            1 + fields.iter().map(|(key, value)| key.len() + 4 + json_bytes(value)).sum::<usize>().max(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn four_bytes_a_token_and_four_a_message() {
        let messages = [Message::user("x".repeat(400))];
        assert_eq!(input_tokens(None, &messages, &[]), 100 + 4);
        assert_eq!(input_tokens(Some("abc"), &messages, &[]), 101 + 8);
        let tool = ToolSpec::new("add", "Adds", serde_json::json!({"type": "object"}));
        let json = serde_json::to_string(&tool.parameters).unwrap().len();
        assert_eq!(input_tokens(None, &[], std::slice::from_ref(&tool)), (3 + 4 + json).div_ceil(4) as u64);
        assert_eq!(input_tokens(None, &[], &[]), 0);
    }
}
