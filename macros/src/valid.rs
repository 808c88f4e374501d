//! The cross-key rules: the attribute's numbers are judged by the runtime's own rules
//! (the `agentic-policy` crate, which `agentic-runtime` validates with too), so the attribute and
//! `RetryPolicy::validate` can never disagree.

use syn::Error;

use crate::attr::{Arg, Args, PresetValue, attribute_span};
use crate::rules::{Key, PolicyValues, Preset, Violation, violations};

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
