//! The spend limits' keys and their one rule, shared by the runtime's `UsageLimits` (at run time)
//! and `#[agentic_function(max_total_tokens = .., max_cost_usd = ..)]` (at compile time).

/// A spend limit's key, as the attribute, the builder and the CLI's flags name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LimitKey {
    /// `max_input_tokens`: the tokens every call of the exec sends, together.
    MaxInputTokens,
    /// `max_output_tokens`: the tokens every call's answer has, together.
    MaxOutputTokens,
    /// `max_total_tokens`: both.
    MaxTotalTokens,
    /// `max_tool_calls`: the tool calls the exec runs.
    MaxToolCalls,
    /// `max_cost_usd`: what the calls cost, in US dollars, at the user's prices.
    MaxCostUsd,
}

impl LimitKey {
    /// Every key, in the order the docs list them.
    pub const ALL: [LimitKey; 5] = [
        LimitKey::MaxInputTokens,
        LimitKey::MaxOutputTokens,
        LimitKey::MaxTotalTokens,
        LimitKey::MaxToolCalls,
        LimitKey::MaxCostUsd,
    ];

    /// The key's name, e.g. `"max_total_tokens"`.
    pub const fn name(self) -> &'static str {
        match self {
            LimitKey::MaxInputTokens => "max_input_tokens",
            LimitKey::MaxOutputTokens => "max_output_tokens",
            LimitKey::MaxTotalTokens => "max_total_tokens",
            LimitKey::MaxToolCalls => "max_tool_calls",
            LimitKey::MaxCostUsd => "max_cost_usd",
        }
    }

    /// The key named `name`, if there is one.
    pub fn from_name(name: &str) -> Option<LimitKey> {
        LimitKey::ALL.into_iter().find(|key| key.name() == name)
    }

    /// Whether the limit counts things (tokens, calls: a whole number) rather than dollars.
    pub const fn is_count(self) -> bool {
        !matches!(self, LimitKey::MaxCostUsd)
    }
}

/// The most a count limit may be: past it no exec could ever reach the limit, and the arithmetic
/// of a reservation stays far from overflow.
pub const MAX_COUNT_LIMIT: u64 = 1 << 53;

/// The most a dollar limit may be (a billion dollars): a larger one is a typo.
pub const MAX_COST_LIMIT_USD: f64 = 1e9;

/// Whether `value` may be the limit `key`: a count at least 1 and at most [`MAX_COUNT_LIMIT`]
/// (whole), a cost above 0 and at most [`MAX_COST_LIMIT_USD`]. `const`, so that a limit in a
/// `const` is judged when it compiles.
pub const fn limit_is_valid(key: LimitKey, value: f64) -> bool {
    if key.is_count() {
        value >= 1.0 && value <= MAX_COUNT_LIMIT as f64 && value == (value as u64) as f64
    } else {
        value > 0.0 && value <= MAX_COST_LIMIT_USD
    }
}

/// What is wrong with `value` as the limit `key`, and how to fix it; `None` when it is valid.
pub fn limit_violation(key: LimitKey, value: f64) -> Option<String> {
    if limit_is_valid(key, value) {
        return None;
    }
    let name = key.name();
    Some(if key.is_count() {
        if value < 1.0 {
            format!("`{name}` = {value} allows nothing: set it to at least 1, or leave it out for no limit")
        } else if value.fract() != 0.0 {
            format!("`{name}` = {value} is not a whole number: it counts tokens or calls")
        } else {
            format!("`{name}` = {value} is past the largest limit ({MAX_COUNT_LIMIT}): leave it out for no limit")
        }
    } else if value.is_nan() || value <= 0.0 {
        format!("`{name}` = {value} allows nothing: set a price above 0 (in US dollars), or leave it out for no limit")
    } else {
        format!("`{name}` = {value} is past the largest dollar limit ({MAX_COST_LIMIT_USD}): leave it out for no limit")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_is_found_by_its_name() {
        for key in LimitKey::ALL {
            assert_eq!(LimitKey::from_name(key.name()), Some(key));
        }
        assert_eq!(LimitKey::from_name("max_tokens"), None);
    }

    #[test]
    fn zero_negative_fractional_and_huge_limits_are_named() {
        assert!(limit_violation(LimitKey::MaxTotalTokens, 0.0).unwrap().contains("at least 1"));
        assert!(limit_violation(LimitKey::MaxToolCalls, 2.5).unwrap().contains("whole number"));
        assert!(limit_violation(LimitKey::MaxInputTokens, 1e300).unwrap().contains("largest"));
        assert!(limit_violation(LimitKey::MaxCostUsd, -0.25).unwrap().contains("above 0"));
        assert!(limit_violation(LimitKey::MaxCostUsd, f64::NAN).unwrap().contains("above 0"));
        assert!(limit_violation(LimitKey::MaxCostUsd, f64::INFINITY).unwrap().contains("largest"));
        assert_eq!(limit_violation(LimitKey::MaxCostUsd, 0.25), None);
        assert_eq!(limit_violation(LimitKey::MaxTotalTokens, 20_000.0), None);
    }
}
