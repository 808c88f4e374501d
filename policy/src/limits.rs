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
            past_the_largest_count(name, value)
        }
    } else if value.is_nan() || value <= 0.0 {
        format!("`{name}` = {value} allows nothing: set a price above 0 (in US dollars), or leave it out for no limit")
    } else {
        format!("`{name}` = {value} is past the largest dollar limit ({MAX_COST_LIMIT_USD}): leave it out for no limit")
    })
}

/// [`limit_violation`] for a count written as decimal `digits` (as the attribute reads them: no
/// sign, no `_`): exact whatever their size, where an `f64` rounds past 2^53 (`2^53 + 1` would
/// pass as `2^53`), and the message shows the number as written.
pub fn count_violation(key: LimitKey, digits: &str) -> Option<String> {
    match digits.parse::<u64>() {
        Ok(count) if count <= MAX_COUNT_LIMIT => limit_violation(key, count as f64),
        _ => Some(past_the_largest_count(key.name(), digits)),
    }
}

fn past_the_largest_count(name: &str, shown: impl std::fmt::Display) -> String {
    format!("`{name}` = {shown} is past the largest limit ({MAX_COUNT_LIMIT}): leave it out for no limit")
}

/// The limits in words, in the order of [`LimitKey::ALL`], for the attribute's docs line:
/// "at most 20 000 tokens, $0.25 per exec"; `None` when none is set.
pub fn describe_limits(limits: &[(LimitKey, f64)]) -> Option<String> {
    let parts: Vec<String> = LimitKey::ALL
        .into_iter()
        .filter_map(|key| limits.iter().find(|(set, _)| *set == key).map(|&(_, value)| (key, value)))
        .map(|(key, value)| {
            let count = grouped(value);
            match key {
                LimitKey::MaxInputTokens => format!("{count} input tokens"),
                LimitKey::MaxOutputTokens => format!("{count} output tokens"),
                LimitKey::MaxTotalTokens => format!("{count} tokens"),
                LimitKey::MaxToolCalls => format!("{count} tool call{}", if value == 1.0 { "" } else { "s" }),
                LimitKey::MaxCostUsd if value.fract() == 0.0 => format!("${count}"),
                LimitKey::MaxCostUsd => format!("${value}"),
            }
        })
        .collect();
    (!parts.is_empty()).then(|| format!("at most {} per exec", parts.join(", ")))
}

/// A whole number with its thousands apart, as the docs write them: 20000 -> "20 000".
fn grouped(value: f64) -> String {
    let digits = format!("{value:.0}");
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index) % 3 == 0 {
            out.push(' ');
        }
        out.push(digit);
    }
    out
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

    #[test]
    fn a_count_as_written_is_judged_exactly() {
        assert_eq!(count_violation(LimitKey::MaxTotalTokens, "9007199254740992"), None);
        // 2^53 + 1 is 2^53 as an `f64`: only the digits tell it is past the largest limit.
        assert_eq!(
            count_violation(LimitKey::MaxTotalTokens, "9007199254740993").as_deref(),
            Some(
                "`max_total_tokens` = 9007199254740993 is past the largest limit (9007199254740992): leave it out for no limit"
            )
        );
        assert!(
            count_violation(LimitKey::MaxToolCalls, "99999999999999999999999")
                .unwrap()
                .contains("= 99999999999999999999999 ")
        );
        assert!(count_violation(LimitKey::MaxToolCalls, "0").unwrap().contains("at least 1"));
        assert_eq!(count_violation(LimitKey::MaxToolCalls, "1"), None);
    }

    #[test]
    fn limits_are_described_in_the_keys_order() {
        assert_eq!(describe_limits(&[]), None);
        assert_eq!(
            describe_limits(&[(LimitKey::MaxCostUsd, 0.25), (LimitKey::MaxTotalTokens, 20_000.0)]).as_deref(),
            Some("at most 20 000 tokens, $0.25 per exec")
        );
        assert_eq!(
            describe_limits(&[
                (LimitKey::MaxToolCalls, 1.0),
                (LimitKey::MaxOutputTokens, 999.0),
                (LimitKey::MaxInputTokens, 1_234_567.0),
                (LimitKey::MaxCostUsd, 1000.0),
            ])
            .as_deref(),
            Some("at most 1 234 567 input tokens, 999 output tokens, 1 tool call, $1 000 per exec")
        );
        assert_eq!(
            describe_limits(&[(LimitKey::MaxToolCalls, 10.0)]).as_deref(),
            Some("at most 10 tool calls per exec")
        );
    }
}
