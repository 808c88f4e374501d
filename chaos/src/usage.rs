//! The token usage an answer reports: counted by a rule simple enough to compute by hand in a
//! test, or pinned by the step (see the [crate docs](crate#token-usage)).

use serde::{Deserialize, Serialize};

use crate::conversation::Conversation;

/// The token counts a step pins in the usage its answer reports: the `usage` field of a scenario
/// step. A count left unset follows the server's rule (see the [crate docs](crate#token-usage));
/// the cache counts are 0 unless set.
///
/// Each wire format reports the counts as given: OpenAI `prompt_tokens` = `input_tokens` (OpenAI
/// counts the cached tokens in it), `completion_tokens` = `output_tokens`,
/// `prompt_tokens_details.cached_tokens` = `cache_read_input_tokens` (OpenAI has no cache
/// creation count); Anthropic the four counts under their own names.
///
/// # Examples
///
/// ```
/// use agentic_chaos::{Step, TokenUsage};
///
/// let cached = Step::ok("Hi.").usage(TokenUsage::new(120, 40).with_cache_read(100));
/// let longer = Step::ok("Hi.").usage(TokenUsage::default().with_output_tokens(500));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct TokenUsage {
    /// The input tokens, instead of the words of the request's prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    /// The output tokens, instead of the answer's chunks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// The input tokens read from the prompt cache.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_read_input_tokens: u64,
    /// The input tokens written to the prompt cache (Anthropic only).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_creation_input_tokens: u64,
    /// The tokens the model spent thinking, on top of the output tokens: Gemini's
    /// `thoughtsTokenCount`, Responses' `output_tokens_details.reasoning_tokens` (added to its
    /// `output_tokens`, as OpenAI counts them); the wires without such a count ignore it.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasoning_tokens: u64,
}

impl TokenUsage {
    /// Both counts pinned, nothing cached.
    pub const fn new(input_tokens: u64, output_tokens: u64) -> Self {
        Self {
            input_tokens: Some(input_tokens),
            output_tokens: Some(output_tokens),
            cache_read_input_tokens: 0,
            cache_creation_input_tokens: 0,
            reasoning_tokens: 0,
        }
    }

    /// With the input tokens pinned.
    pub const fn with_input_tokens(mut self, tokens: u64) -> Self {
        self.input_tokens = Some(tokens);
        self
    }

    /// With the output tokens pinned.
    pub const fn with_output_tokens(mut self, tokens: u64) -> Self {
        self.output_tokens = Some(tokens);
        self
    }

    /// With the tokens read from the prompt cache.
    pub const fn with_cache_read(mut self, tokens: u64) -> Self {
        self.cache_read_input_tokens = tokens;
        self
    }

    /// With the tokens written to the prompt cache.
    pub const fn with_cache_creation(mut self, tokens: u64) -> Self {
        self.cache_creation_input_tokens = tokens;
        self
    }

    /// With the tokens the model spent thinking (see [`TokenUsage::reasoning_tokens`]).
    pub const fn with_reasoning(mut self, tokens: u64) -> Self {
        self.reasoning_tokens = tokens;
        self
    }

    /// Whether every count follows the rule: what a step without `usage` reports.
    pub(crate) fn is_rule(&self) -> bool {
        *self == Self::default()
    }
}

fn is_zero(tokens: &u64) -> bool {
    *tokens == 0
}

/// The input tokens an answer reports: those the step pins, or else the request's by the rule
/// ([`prompt_tokens`]).
pub(crate) fn input_tokens(pinned: &TokenUsage, conversation: &Conversation<'_>) -> u64 {
    pinned.input_tokens.unwrap_or_else(|| prompt_tokens(conversation))
}

/// The input tokens of a request by the rule: the whitespace-separated words of its
/// conversation's texts (the system prompt's, each message's and each tool result's), at least 1;
/// tool calls' arguments, roles, ids and types do not count. A body that is not JSON counts 1.
pub(crate) fn prompt_tokens(conversation: &Conversation<'_>) -> u64 {
    let words = conversation.prose().map(|text| text.split_whitespace().count() as u64).fold(0, u64::saturating_add);
    words.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{Route, WireFormat};
    use serde_json::{Value, json};

    fn tokens(wire: WireFormat, body: Option<&Value>) -> u64 {
        prompt_tokens(&wire.render().read(body, Route::default()).conversation)
    }

    #[test]
    fn the_prompt_counts_its_words_in_both_formats() {
        let openai = json!({"model": "m", "messages": [
            {"role": "system", "content": "Answer briefly."},
            {"role": "user", "content": "What is  the\nanswer?"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "{\"a\": \"b c\"}"}}]},
            {"role": "tool", "tool_call_id": "c", "content": "forty two"},
            {"role": "user", "content": [{"type": "text", "text": "and then?"}]},
        ]});
        assert_eq!(tokens(WireFormat::OpenAi, Some(&openai)), 2 + 4 + 2 + 2);
        let anthropic = json!({"model": "m", "system": [{"type": "text", "text": "Be brief."}], "messages": [
            {"role": "user", "content": [{"type": "text", "text": "What is the answer?"}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {"text": "not counted"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": [{"type": "text", "text": "42"}]}]},
        ]});
        assert_eq!(tokens(WireFormat::Anthropic, Some(&anthropic)), 2 + 4 + 1);
        let string_system = json!({"system": "one two", "messages": [{"role": "user", "content": "three"}]});
        assert_eq!(tokens(WireFormat::Anthropic, Some(&string_system)), 3);
    }

    #[test]
    fn an_empty_prompt_counts_one() {
        for wire in WireFormat::ALL {
            assert_eq!(tokens(wire, None), 1);
            assert_eq!(tokens(wire, Some(&json!({"messages": []}))), 1);
            assert_eq!(tokens(wire, Some(&json!([1, 2]))), 1);
        }
    }
}
