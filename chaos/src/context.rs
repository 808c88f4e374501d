//! The size of a request's conversation, by a rule simple enough to compute by hand in a test (see
//! the [crate docs](crate#context-window)), and the answer of a scenario's context window to a
//! conversation larger than it.

use crate::conversation::Conversation;
use crate::journal::StepRef;
use crate::step::{Step, StepKind};

/// The bytes of text a request's conversation carries: its system prompt's, each message's and
/// each tool result's texts, and each tool call's input (the JSON text its wire sends). A body
/// that is not a JSON object counts 0.
pub(crate) fn context_bytes(conversation: &Conversation<'_>) -> usize {
    let inputs = conversation.tool_inputs.iter().map(|input| input.len());
    conversation.prose().map(str::len).chain(inputs).fold(0, usize::saturating_add)
}

/// The answer to a request larger than the context window: the `context_overflow` step, journaled
/// as no step of the scenario (`index: None`, `repeat: 0`).
pub(crate) fn overflow_answer() -> (Step, StepRef) {
    let at = StepRef { index: None, kind: StepKind::ContextOverflow, repeat: 0, outage: None, rate_limited: false };
    (Step::context_overflow().into(), at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{Route, WireFormat};
    use serde_json::{Value, json};

    /// The size and message count of `body` as `wire` reads it.
    fn size(wire: WireFormat, body: Option<&Value>) -> (usize, usize) {
        let asked = wire.render().read(body, Route::default());
        (context_bytes(&asked.conversation), asked.conversation.messages)
    }

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
        assert_eq!(size(WireFormat::OpenAi, Some(&body)), (9 + 8 + 16 + 5 + 12, 5));
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
        assert_eq!(size(WireFormat::Anthropic, Some(&body)), (9 + 8 + 9 + 16 + 5 + 4, 3));
        let string_system = json!({"system": "Be brief.", "messages": [{"role": "user", "content": "né"}]});
        assert_eq!(size(WireFormat::Anthropic, Some(&string_system)), (9 + 3, 1), "bytes, not characters");
    }

    #[test]
    fn a_body_without_a_conversation_counts_nothing() {
        for wire in WireFormat::ALL {
            assert_eq!(size(wire, None), (0, 0));
            assert_eq!(size(wire, Some(&json!([1, 2]))), (0, 0));
            assert_eq!(size(wire, Some(&json!({"messages": "hi"}))), (0, 0));
            let one_message = match wire {
                WireFormat::Gemini => json!({"contents": [{"role": "user", "parts": 42}]}),
                WireFormat::Responses => json!({"input": [{"role": "user", "content": 42}]}),
                _ => json!({"messages": [{"role": "user", "content": 42}]}),
            };
            assert_eq!(size(wire, Some(&one_message)), (0, 1), "{wire:?}");
        }
    }
}
