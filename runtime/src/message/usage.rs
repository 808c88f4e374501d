//! Token usage: what one model call cost, as the server reported it, and the sums of an exec.

use std::ops::{Add, AddAssign};

use serde::{Deserialize, Serialize};

/// Tokens one model call used, as the server reported them (OpenAI-compatible `usage`, Anthropic
/// `message_start` / `message_delta` usage), or a sum of such calls.
///
/// Cached tokens are counted when the server reports them (0 when it does not, and then left out of
/// the JSON form): `cache_read_input_tokens` (OpenAI's `prompt_tokens_details.cached_tokens`,
/// Anthropic's `cache_read_input_tokens`) and `cache_creation_input_tokens` (Anthropic). `input_tokens` is what the server reports as input:
/// OpenAI's `prompt_tokens` includes the cached tokens, Anthropic's `input_tokens` does not.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Usage {
    /// Tokens of the request (prompt, history, tool definitions).
    pub input_tokens: u64,
    /// Tokens of the answer.
    pub output_tokens: u64,
    /// Input tokens read from the provider's prompt cache.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_read_input_tokens: u64,
    /// Input tokens written to the provider's prompt cache.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_creation_input_tokens: u64,
}

/// The most tokens one model call can count in any of its usage's fields: a billion.
///
/// The longest context window a model is offered with is 10 M tokens (Llama 4 Scout; Gemini's is
/// 2 M), and a call's input, output and cache counts each fit in its window; a count 100 times
/// that is no call's. A server that reports more (`u64::MAX`, `1e19`, Gemini's
/// `thoughtsTokenCount` of 2^64 - 1 added to its output) reports no usage at all
/// ([`Usage::plausible`]): its figures would poison the pacer's buckets and the exec's sums.
pub(crate) const MAX_CALL_TOKENS: u64 = 1_000_000_000;

impl Usage {
    /// No tokens.
    pub const ZERO: Usage =
        Usage { input_tokens: 0, output_tokens: 0, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 };

    /// `input_tokens` in and `output_tokens` out, nothing cached.
    pub const fn new(input_tokens: u64, output_tokens: u64) -> Self {
        Usage { input_tokens, output_tokens, ..Usage::ZERO }
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

    /// Input and output tokens together.
    pub const fn total_tokens(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }

    /// This usage if it can be one model call's: `None` when a count is over a billion (100 times
    /// the longest context window a model is offered with, 10 M tokens).
    /// The runtime reads every call's reported usage through this, once, whatever the wire.
    ///
    /// ```
    /// use agentic_runtime::message::Usage;
    ///
    /// assert_eq!(Usage::new(1_200, 300).plausible(), Some(Usage::new(1_200, 300)));
    /// assert_eq!(Usage::new(12, u64::MAX).plausible(), None);
    /// ```
    pub const fn plausible(self) -> Option<Usage> {
        let largest = max(
            max(self.input_tokens, self.output_tokens),
            max(self.cache_read_input_tokens, self.cache_creation_input_tokens),
        );
        if largest > MAX_CALL_TOKENS { None } else { Some(self) }
    }

    /// True when no token was counted.
    pub fn is_zero(&self) -> bool {
        *self == Usage::ZERO
    }
}

impl Add for Usage {
    type Output = Usage;

    /// The sum. Saturates rather than wraps.
    fn add(self, other: Usage) -> Usage {
        Usage {
            input_tokens: self.input_tokens.saturating_add(other.input_tokens),
            output_tokens: self.output_tokens.saturating_add(other.output_tokens),
            cache_read_input_tokens: self.cache_read_input_tokens.saturating_add(other.cache_read_input_tokens),
            cache_creation_input_tokens: self
                .cache_creation_input_tokens
                .saturating_add(other.cache_creation_input_tokens),
        }
    }
}

impl AddAssign for Usage {
    fn add_assign(&mut self, other: Usage) {
        *self = *self + other;
    }
}

const fn max(a: u64, b: u64) -> u64 {
    if a > b { a } else { b }
}

fn is_zero(tokens: &u64) -> bool {
    *tokens == 0
}

/// The tokens of one exec: every call's, and the part spent on attempts that failed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct UsageTotals {
    /// Every call of the exec that reported usage, failed ones included.
    pub(crate) total: Usage,
    /// The calls that failed, and the answers the validator rejected.
    pub(crate) failed: Usage,
    /// The answering call's, once there is an answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) answer: Option<Usage>,
    /// What the exec spent against its spend limits, when it has any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) spent: Option<Spent>,
}

/// What an exec spent against its spend limits (`agentic_runtime::spend`), failed calls included: on the [`Reply`](crate::Reply) and the
/// [`ExecError`](crate::ExecError), to hold against the [`UsageLimits`](crate::spend::UsageLimits).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Spent {
    /// Input tokens of every call.
    pub input_tokens: u64,
    /// Output tokens of every call.
    pub output_tokens: u64,
    /// Tool calls run.
    pub tool_calls: u64,
    /// US dollars at the runtime's prices (0 without prices).
    pub cost_usd: f64,
}

impl Spent {
    /// Input and output tokens together.
    pub const fn total_tokens(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_add_every_count_and_saturate() {
        let sum = Usage::new(10, 5).with_cache_read(3) + Usage::new(1, 1).with_cache_creation(2);
        assert_eq!(sum, Usage::new(11, 6).with_cache_read(3).with_cache_creation(2));
        assert_eq!((Usage::new(u64::MAX, 0) + Usage::new(1, 0)).input_tokens, u64::MAX);
        assert_eq!(Usage::new(2, 3).total_tokens(), 5);
        assert!(Usage::default().is_zero());
    }

    #[test]
    fn a_count_no_call_can_have_is_no_usage() {
        let real = Usage::new(2_000_000, 64_000).with_cache_read(1_900_000).with_cache_creation(5);
        assert_eq!(real.plausible(), Some(real));
        assert_eq!(
            Usage::new(MAX_CALL_TOKENS, MAX_CALL_TOKENS).plausible().map(|u| u.input_tokens),
            Some(MAX_CALL_TOKENS)
        );
        for hostile in [
            Usage::new(10, u64::MAX),
            Usage::new(10_000_000_000_000_000_000, 1),
            Usage::new(1, 1).with_cache_read(u64::MAX - 1),
            Usage::new(1, 1).with_cache_creation(MAX_CALL_TOKENS + 1),
        ] {
            assert_eq!(hostile.plausible(), None, "{hostile:?}");
        }
    }

    #[test]
    fn serializes_without_absent_cache_counts() {
        assert_eq!(serde_json::to_string(&Usage::new(3, 4)).unwrap(), r#"{"input_tokens":3,"output_tokens":4}"#);
        let cached = Usage::new(3, 4).with_cache_read(1);
        assert_eq!(
            serde_json::to_string(&cached).unwrap(),
            r#"{"input_tokens":3,"output_tokens":4,"cache_read_input_tokens":1}"#
        );
    }
}
