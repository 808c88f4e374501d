//! The size of a request's conversation, by a rule simple enough to compute by hand in a test (see
//! the [crate docs](crate#context-window)), and the answer of a scenario's context window to a
//! conversation larger than it.

use serde_json::Value;

use crate::journal::StepRef;
use crate::step::{Step, StepKind};

/// How many messages a request body's `messages` array holds; 0 without one.
pub(crate) fn message_count(body: Option<&Value>) -> usize {
    body.and_then(|b| b.get("messages")).and_then(Value::as_array).map_or(0, Vec::len)
}

/// The bytes of text a request body carries: its top-level `system` plus each message's `content`
/// and its OpenAI `tool_calls[].function.arguments`. Both wire formats follow the one rule: each
/// keeps its parts where the other has none. A body that is not a JSON object counts 0.
pub(crate) fn context_bytes(body: Option<&Value>) -> usize {
    let Some(body) = body else {
        return 0;
    };
    let messages = body.get("messages").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    messages.iter().map(message_bytes).fold(text_bytes(body.get("system")), usize::saturating_add)
}

/// A message's `content` and the arguments of its OpenAI tool calls.
fn message_bytes(message: &Value) -> usize {
    let calls = message.get("tool_calls").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    calls
        .iter()
        .filter_map(|call| call.pointer("/function/arguments").and_then(Value::as_str))
        .map(str::len)
        .fold(text_bytes(message.get("content")), usize::saturating_add)
}

/// The bytes of a content: a string, or a list of blocks, each counting its `text` (a string), its
/// `content` (a tool result's, by this same rule) and its `input` (a tool use's, as compact JSON).
/// The nesting is bounded by the JSON parser's depth limit.
fn text_bytes(value: Option<&Value>) -> usize {
    match value {
        Some(Value::String(text)) => text.len(),
        Some(Value::Array(blocks)) => blocks.iter().map(|block| text_bytes(Some(block))).fold(0, usize::saturating_add),
        Some(Value::Object(block)) => {
            let text = block.get("text").and_then(Value::as_str).map_or(0, str::len);
            let input = block.get("input").map_or(0, |input| input.to_string().len());
            text.saturating_add(text_bytes(block.get("content"))).saturating_add(input)
        }
        _ => 0,
    }
}

/// The answer to a request larger than the context window: the `context_overflow` step, journaled
/// as no step of the scenario (`index: None`, `repeat: 0`).
pub(crate) fn overflow_answer() -> (Step, StepRef) {
    let at = StepRef { index: None, kind: StepKind::ContextOverflow, repeat: 0 };
    (Step::context_overflow().into(), at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_openai_size_counts_system_text_tool_calls_and_tool_results() {
        let body = json!({"model": "m", "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": "Weather?"}, {"type": "image_url", "image_url": {"url": "http://x"}}]},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}},
                {"id": "c2", "type": "function", "function": {"name": "now", "arguments": ""}},
            ]},
            {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
            {"role": "assistant", "content": "It is sunny."},
        ]});
        assert_eq!(context_bytes(Some(&body)), 9 + 8 + 16 + 5 + 12);
        assert_eq!(message_count(Some(&body)), 5);
    }

    #[test]
    fn the_anthropic_size_counts_system_text_tool_uses_and_tool_results() {
        let body = json!({"model": "m", "system": [{"type": "text", "text": "Be brief."}], "messages": [
            {"role": "user", "content": "Weather?"},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "t1", "name": "get_weather", "input": {"city": "Paris"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "sunny"}]},
                {"type": "tool_result", "tool_use_id": "t2", "content": "rain"},
            ]},
        ]});
        // `{"city":"Paris"}` is 16 bytes.
        assert_eq!(context_bytes(Some(&body)), 9 + 8 + 9 + 16 + 5 + 4);
        assert_eq!(message_count(Some(&body)), 3);
        let string_system = json!({"system": "Be brief.", "messages": [{"role": "user", "content": "né"}]});
        assert_eq!(context_bytes(Some(&string_system)), 9 + 3, "bytes, not characters");
    }

    #[test]
    fn a_body_without_a_conversation_counts_nothing() {
        assert_eq!(context_bytes(None), 0);
        assert_eq!(message_count(None), 0);
        assert_eq!(context_bytes(Some(&json!([1, 2]))), 0);
        assert_eq!(context_bytes(Some(&json!({"messages": "hi"}))), 0);
        assert_eq!(message_count(Some(&json!({"messages": "hi"}))), 0);
        assert_eq!(context_bytes(Some(&json!({"messages": [{"role": "user", "content": 42}]}))), 0);
    }
}
