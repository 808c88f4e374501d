//! The cross-key rules: the attribute's numbers are judged by the runtime's own rules
//! (the `agentic-policy` crate, which `agentic-runtime` validates with too), so the attribute and
//! `RetryPolicy::validate` can never disagree.

use syn::Error;

use crate::attr::{Arg, Args, LimitValue, PresetValue, attribute_span};
use crate::rules::limits::{LimitKey, count_violation, limit_violation};
use crate::rules::{Key, PolicyValues, Preset, Violation, violations};

/// Judges each spend limit by the limits' one rule (`agentic_policy::limits`, which
/// `UsageLimits::validate` applies too), each broken one an error on its value. A limit the
/// policy's worst case could never reach is fine: it is a ceiling, not a promise. Returns the
/// limits, counts as whole `f64`s, when every one keeps the rule.
pub(crate) fn check_limits(args: &Args, errors: &mut Vec<Error>) -> Vec<(LimitKey, f64)> {
    let mut judged = Vec::with_capacity(args.limits.len());
    for (key, arg) in &args.limits {
        let (violation, value) = match &arg.value {
            LimitValue::Count { negative: false, digits } => {
                (count_violation(*key, digits), digits.parse::<u64>().map_or(f64::INFINITY, |count| count as f64))
            }
            LimitValue::Count { negative: true, digits } => {
                let value = -digits.parse::<f64>().unwrap_or(f64::INFINITY);
                (limit_violation(*key, value), value)
            }
            LimitValue::Usd(usd) => (limit_violation(*key, *usd), *usd),
        };
        match violation {
            Some(message) => errors.push(Error::new_spanned(&arg.tokens, message)),
            None => judged.push((*key, value)),
        }
    }
    judged
}

/// The policy the arguments describe (the preset's values, or the defaults, for the keys left out).
/// Every broken rule is pushed to `errors`, on the `key = value` it blames, or on the `preset = ...`
/// that set the key.
///
/// A `preset = PATH` names a `const` whose values are not known here: only the violations that hold
/// whatever its keys are set to are reported now; the expansion judges the whole policy when the
/// constant is evaluated.
pub(crate) fn check(args: &Args, errors: &mut Vec<Error>) -> PolicyValues {
    let preset = args.preset.as_ref();
    let (mut values, mut unknown) = match preset.map(|arg| &arg.value) {
        Some(PresetValue::Named(preset)) => (preset.values(), Vec::new()),
        Some(PresetValue::Path(_)) => {
            let written = |key: &Key| args.numbers.iter().any(|(set, _)| set == key);
            (PolicyValues::DEFAULT, Key::ALL.into_iter().filter(|key| !written(key)).collect())
        }
        None => (PolicyValues::DEFAULT, Vec::new()),
    };
    for (key, arg) in &args.numbers {
        values.set(*key, arg.value);
    }
    unknown.extend_from_slice(&args.unparsed);
    for violation in trustworthy_violations(&values, &unknown) {
        let blamed = args.numbers.iter().find(|(key, _)| *key == violation.key);
        errors.push(match (blamed, preset) {
            (Some((_, arg)), _) => Error::new_spanned(&arg.tokens, violation.message),
            (None, Some(arg @ Arg { value: PresetValue::Named(preset), .. }))
                if Preset::KEYS.contains(&violation.key) =>
            {
                Error::new_spanned(
                    &arg.tokens,
                    format!("{} (`{}` is set by `preset = {preset}`)", violation.message, violation.key.name()),
                )
            }
            _ => Error::new(attribute_span(), violation.message),
        });
    }
    values
}

/// The violations that do not depend on the value of a key that is not known: one the user wrote
/// but that did not parse (that key already has its own error; judging the default in its place
/// would blame the user for a number they did not write), or one a `const` preset sets. A violation counts when it appears, word for word, whatever
/// those keys are set to: the default, the smallest or a very large value.
///
/// One rule may word its message after the unparsed key too (`max_delay_ms` below both base
/// delays is one message naming both): when that rule is broken whatever the key is set to, it is
/// reported in the words of a setting whose message leaves the unparsed key out.
fn trustworthy_violations(values: &PolicyValues, unparsed: &[Key]) -> Vec<Violation> {
    let found = violations(values);
    if unparsed.is_empty() {
        return found;
    }
    let probes: Vec<Vec<Violation>> = [1, 1 << 31]
        .into_iter()
        .map(|probe| {
            let mut probed = *values;
            for &key in unparsed {
                probed.set(key, probe);
            }
            violations(&probed)
        })
        .collect();
    let every = || std::iter::once(&found).chain(&probes);
    let mut trusted: Vec<Violation> =
        found.iter().filter(|violation| probes.iter().all(|found| found.contains(violation))).cloned().collect();
    for candidate in probes.iter().flatten() {
        let names_unparsed = unparsed.iter().any(|key| candidate.message.contains(&format!("`{}`", key.name())));
        let always_broken = every().all(|found| found.iter().any(|violation| violation.key == candidate.key));
        let reported = trusted.iter().any(|violation| violation.key == candidate.key);
        if !names_unparsed && always_broken && !reported {
            trusted.push(candidate.clone());
        }
    }
    trusted
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attr;

    fn judged(text: &str) -> (Vec<(LimitKey, f64)>, Vec<String>) {
        let mut errors = Vec::new();
        let args = attr::parse(text.parse().expect("valid tokens"), &mut errors);
        let limits = check_limits(&args, &mut errors);
        (limits, errors.iter().map(ToString::to_string).collect())
    }

    #[test]
    fn limits_that_keep_the_rule_are_kept_and_the_others_named() {
        let (limits, errors) = judged("max_total_tokens = 20_000, max_cost_usd = 0.25, max_tool_calls = 1u64");
        assert_eq!(
            limits,
            [(LimitKey::MaxTotalTokens, 20_000.0), (LimitKey::MaxCostUsd, 0.25), (LimitKey::MaxToolCalls, 1.0)]
        );
        assert!(errors.is_empty(), "{errors:?}");

        let (limits, errors) = judged(
            "max_input_tokens = 0, max_cost_usd = -0.25, max_output_tokens = -3, max_tool_calls = 9007199254740993, max_total_tokens = 5",
        );
        assert_eq!(limits, [(LimitKey::MaxTotalTokens, 5.0)]);
        assert_eq!(
            errors,
            [
                "`max_input_tokens` = 0 allows nothing: set it to at least 1, or leave it out for no limit",
                "`max_cost_usd` = -0.25 allows nothing: set a price above 0 (in US dollars), or leave it out for no limit",
                "`max_output_tokens` = -3 allows nothing: set it to at least 1, or leave it out for no limit",
                "`max_tool_calls` = 9007199254740993 is past the largest limit (9007199254740992): leave it out for no limit",
            ]
        );
    }

    fn messages(values: &PolicyValues, unparsed: &[Key]) -> Vec<String> {
        trustworthy_violations(values, unparsed).into_iter().map(|violation| violation.message).collect()
    }

    #[test]
    fn a_cap_below_both_bases_is_judged_by_the_base_that_parsed() {
        let values = PolicyValues { max_delay_ms: Some(100), ..PolicyValues::DEFAULT };
        assert_eq!(
            messages(&values, &[]),
            ["`max_delay_ms` (100) must be at least `session_base_delay_ms` (2000) and `exec_base_delay_ms` (1500)"]
        );
        assert_eq!(
            messages(&values, &[Key::SessionBaseDelayMs]),
            ["`max_delay_ms` (100) must be at least `exec_base_delay_ms` (1500)"]
        );
        assert_eq!(
            messages(&values, &[Key::ExecBaseDelayMs]),
            ["`max_delay_ms` (100) must be at least `session_base_delay_ms` (2000)"]
        );
        assert_eq!(messages(&values, &[Key::SessionBaseDelayMs, Key::ExecBaseDelayMs]), Vec::<String>::new());
    }

    #[test]
    fn a_cap_that_only_the_unparsed_base_could_break_is_not_judged() {
        let values = PolicyValues { max_delay_ms: Some(1800), ..PolicyValues::DEFAULT };
        assert_eq!(messages(&values, &[]), ["`max_delay_ms` (1800) must be at least `session_base_delay_ms` (2000)"]);
        assert_eq!(messages(&values, &[Key::SessionBaseDelayMs]), Vec::<String>::new());
    }
}
