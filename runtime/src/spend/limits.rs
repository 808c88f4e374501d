//! [`UsageLimits`]: the ceilings of one exec.

use agentic_policy::limits::{LimitKey, MAX_COUNT_LIMIT, count_violation, limit_is_valid, limit_violation};

use crate::error::PolicyError;

/// What one exec may spend: tokens in and out, tool calls, and dollars at the user's prices. Every
/// call of the exec counts, failed ones included (they were paid for). `const`-constructible, like
/// [`RetryPolicy`](crate::RetryPolicy); no limit is set by default.
///
/// Set them on the runtime ([`RuntimeBuilder::with_usage_limits`](crate::exec::RuntimeBuilder::with_usage_limits)),
/// per request ([`ExecRequest::usage_limits`](crate::exec::ExecRequest::usage_limits)), or in the
/// attribute (`#[agentic_function(max_total_tokens = 20_000)]`), where they are judged when the
/// function compiles.
///
/// # Examples
///
/// ```
/// use agentic_runtime::spend::UsageLimits;
///
/// const LIMITS: UsageLimits = UsageLimits::new().with_max_total_tokens(20_000).with_max_tool_calls(10);
/// assert!(LIMITS.validate().is_ok());
/// let error = UsageLimits::new().with_max_total_tokens(0).validate().unwrap_err();
/// assert_eq!(error.key(), "max_total_tokens");
/// // Counts are judged exactly, however large.
/// assert!(!UsageLimits::new().with_max_input_tokens((1 << 53) + 1).is_valid());
/// ```
#[derive(Clone, Copy, PartialEq, Default)]
pub struct UsageLimits {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    total_tokens: Option<u64>,
    tool_calls: Option<u64>,
    cost_usd: Option<f64>,
    /// Some limit is set: what every exec asks first, in one test (an exec without limits
    /// checks nothing else).
    any: bool,
}

impl std::fmt::Debug for UsageLimits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UsageLimits")
            .field("max_input_tokens", &self.input_tokens)
            .field("max_output_tokens", &self.output_tokens)
            .field("max_total_tokens", &self.total_tokens)
            .field("max_tool_calls", &self.tool_calls)
            .field("max_cost_usd", &self.cost_usd)
            .finish()
    }
}

impl UsageLimits {
    /// No limit at all.
    pub const NONE: UsageLimits = UsageLimits::new();

    /// No limit at all; add them with the `with_*` methods.
    pub const fn new() -> Self {
        Self {
            input_tokens: None,
            output_tokens: None,
            total_tokens: None,
            tool_calls: None,
            cost_usd: None,
            any: false,
        }
    }

    /// At most `tokens` input tokens over every call of the exec (each call sends the whole
    /// conversation again: a tool loop's input grows with every turn).
    pub const fn with_max_input_tokens(mut self, tokens: u64) -> Self {
        self.input_tokens = Some(tokens);
        self.any = true;
        self
    }

    /// At most `tokens` output tokens over every call's answer; each call is sent a `max_tokens` no
    /// larger than what is left, so that the provider stops itself.
    pub const fn with_max_output_tokens(mut self, tokens: u64) -> Self {
        self.output_tokens = Some(tokens);
        self.any = true;
        self
    }

    /// At most `tokens` input and output tokens together.
    pub const fn with_max_total_tokens(mut self, tokens: u64) -> Self {
        self.total_tokens = Some(tokens);
        self.any = true;
        self
    }

    /// At most `calls` tool calls run over the exec's tool turns.
    pub const fn with_max_tool_calls(mut self, calls: u64) -> Self {
        self.tool_calls = Some(calls);
        self.any = true;
        self
    }

    /// At most `usd` US dollars over every call, at the runtime's prices: a model with no price is
    /// an error before the first call, not a guess.
    pub const fn with_max_cost_usd(mut self, usd: f64) -> Self {
        self.cost_usd = Some(usd);
        self.any = true;
        self
    }

    /// The limit `key`, if set (counts as `f64`).
    pub const fn get(&self, key: LimitKey) -> Option<f64> {
        match (key, self.count(key)) {
            (LimitKey::MaxCostUsd, _) => self.cost_usd,
            (_, Some(count)) => Some(count as f64),
            (_, None) => None,
        }
    }

    /// The count limit `key`, if set (`None` for the dollar limit).
    const fn count(&self, key: LimitKey) -> Option<u64> {
        match key {
            LimitKey::MaxInputTokens => self.input_tokens,
            LimitKey::MaxOutputTokens => self.output_tokens,
            LimitKey::MaxTotalTokens => self.total_tokens,
            LimitKey::MaxToolCalls => self.tool_calls,
            LimitKey::MaxCostUsd => None,
        }
    }

    /// `max_input_tokens`, if set.
    pub const fn max_input_tokens(&self) -> Option<u64> {
        self.input_tokens
    }

    /// `max_output_tokens`, if set.
    pub const fn max_output_tokens(&self) -> Option<u64> {
        self.output_tokens
    }

    /// `max_total_tokens`, if set.
    pub const fn max_total_tokens(&self) -> Option<u64> {
        self.total_tokens
    }

    /// `max_tool_calls`, if set.
    pub const fn max_tool_calls(&self) -> Option<u64> {
        self.tool_calls
    }

    /// `max_cost_usd`, if set.
    pub const fn max_cost_usd(&self) -> Option<f64> {
        self.cost_usd
    }

    /// Whether no limit is set: the exec checks nothing (its success path is as without limits).
    pub const fn is_none(&self) -> bool {
        !self.any
    }

    /// Whether every limit set is one an exec can live with (see [`UsageLimits::validate`]).
    pub const fn is_valid(&self) -> bool {
        // Counts as whole numbers: an `f64` rounds past 2^53, and 2^53 + 1 would pass.
        let counts = [self.input_tokens, self.output_tokens, self.total_tokens, self.tool_calls];
        let mut index = 0;
        while index < counts.len() {
            if let Some(count) = counts[index] {
                if count == 0 || count > MAX_COUNT_LIMIT {
                    return false;
                }
            }
            index += 1;
        }
        match self.cost_usd {
            Some(usd) => limit_is_valid(LimitKey::MaxCostUsd, usd),
            None => true,
        }
    }

    /// The first limit set that no exec could live with: a zero or negative one (it allows
    /// nothing), a fraction of a token, a dollar limit that is not a number.
    pub fn validate(&self) -> Result<(), PolicyError> {
        for key in LimitKey::ALL {
            let message = match (key.is_count(), self.get(key)) {
                (_, None) => None,
                (true, Some(_)) => self.count(key).and_then(|count| count_violation(key, &count.to_string())),
                (false, Some(usd)) => limit_violation(key, usd),
            };
            if let Some(message) = message {
                return Err(PolicyError::new(key.name(), message));
            }
        }
        Ok(())
    }
}
