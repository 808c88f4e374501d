//! The one place where a retry policy's rules are written.
//!
//! This file depends on nothing but `std` on purpose: `agentic-macros` includes it with
//! `#[path]` so that `#[agentic_function(...)]` rejects at compile time exactly what
//! `RetryPolicy::validate` rejects at run time. A rule changed here changes in both places.

use std::fmt::Write as _;

/// The numbers of a policy, as plain values (the attribute's keys, without `jitter`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PolicyValues {
    /// Exec attempts (layer 2), at least 1.
    pub max_retries: u32,
    /// Session retries per exec attempt (layer 1); 0 turns layer 1 off.
    pub session_retries: u32,
    /// Layer 1 delay before retry n is `session_base_delay_ms * 2^(n-1)`.
    pub session_base_delay_ms: u64,
    /// Layer 2 delay after failed attempt k is `exec_base_delay_ms * 2^k`.
    pub exec_base_delay_ms: u64,
    /// Cap on every computed delay, applied after jitter.
    pub max_delay_ms: Option<u64>,
    /// Cap on model calls across both layers of one exec.
    pub max_calls: Option<u32>,
    /// Timeout of one model call.
    pub timeout_ms: Option<u64>,
    /// Deadline of one exec, across every attempt and sleep.
    pub budget_ms: Option<u64>,
    /// The longest server-requested wait that is honoured.
    pub retry_after_cap_ms: u64,
}

impl PolicyValues {
    /// The seed's defaults: 3 exec attempts, 3 session retries, 2000 ms and 1500 ms base delays.
    pub const DEFAULT: Self = Self {
        max_retries: 3,
        session_retries: 3,
        session_base_delay_ms: 2000,
        exec_base_delay_ms: 1500,
        max_delay_ms: None,
        max_calls: None,
        timeout_ms: None,
        budget_ms: None,
        retry_after_cap_ms: 60_000,
    };
}

/// A policy key, as spelled in the attribute and in the builder's `with_*` setters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Key {
    /// `max_retries`
    MaxRetries,
    /// `session_retries`
    SessionRetries,
    /// `session_base_delay_ms`
    SessionBaseDelayMs,
    /// `exec_base_delay_ms`
    ExecBaseDelayMs,
    /// `max_delay_ms`
    MaxDelayMs,
    /// `jitter`
    Jitter,
    /// `max_calls`
    MaxCalls,
    /// `timeout_ms`
    TimeoutMs,
    /// `budget_ms`
    BudgetMs,
    /// `retry_after_cap_ms`
    RetryAfterCapMs,
}

impl Key {
    /// Every key, in the order the docs list them.
    pub const ALL: [Key; 10] = [
        Key::MaxRetries,
        Key::SessionRetries,
        Key::SessionBaseDelayMs,
        Key::ExecBaseDelayMs,
        Key::MaxDelayMs,
        Key::Jitter,
        Key::MaxCalls,
        Key::TimeoutMs,
        Key::BudgetMs,
        Key::RetryAfterCapMs,
    ];

    /// The key's name, e.g. `"max_retries"`.
    pub const fn name(self) -> &'static str {
        match self {
            Key::MaxRetries => "max_retries",
            Key::SessionRetries => "session_retries",
            Key::SessionBaseDelayMs => "session_base_delay_ms",
            Key::ExecBaseDelayMs => "exec_base_delay_ms",
            Key::MaxDelayMs => "max_delay_ms",
            Key::Jitter => "jitter",
            Key::MaxCalls => "max_calls",
            Key::TimeoutMs => "timeout_ms",
            Key::BudgetMs => "budget_ms",
            Key::RetryAfterCapMs => "retry_after_cap_ms",
        }
    }

    /// The key with this name, if there is one.
    pub fn from_name(name: &str) -> Option<Key> {
        Key::ALL.into_iter().find(|key| key.name() == name)
    }
}

/// One broken rule: the key to blame and a message in rustc's voice that says how to fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The key whose value breaks the rule.
    pub key: Key,
    /// What is wrong and how to fix it, e.g. "`max_calls` (100) is more than the 12 calls this policy can make".
    pub message: String,
}

/// The most a policy can cost one exec when every call fails with a retryable error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorstCase {
    /// Model calls across both layers (`max_calls` applied).
    pub calls: u64,
    /// Nominal backoff in milliseconds (no jitter, `max_delay_ms` applied, no server hints).
    pub backoff_ms: u64,
}

/// Every rule a policy must satisfy, in a fixed order. Empty when the policy is valid.
pub fn violations(values: &PolicyValues) -> Vec<Violation> {
    let mut found = Vec::new();
    let mut broke = |key: Key, message: String| found.push(Violation { key, message });

    if values.max_retries < 1 {
        broke(
            Key::MaxRetries,
            format!(
                "`max_retries` ({}) must be at least 1: it counts exec attempts, and 1 means no exec retry",
                values.max_retries
            ),
        );
    }
    for (key, value) in [
        (Key::SessionBaseDelayMs, values.session_base_delay_ms),
        (Key::ExecBaseDelayMs, values.exec_base_delay_ms),
        (Key::RetryAfterCapMs, values.retry_after_cap_ms),
    ] {
        if value == 0 {
            broke(key, format!("`{}` (0) must be greater than 0", key.name()));
        }
    }
    for (key, value) in
        [(Key::MaxDelayMs, values.max_delay_ms), (Key::TimeoutMs, values.timeout_ms), (Key::BudgetMs, values.budget_ms)]
    {
        if value == Some(0) {
            broke(key, format!("`{}` (0) must be greater than 0; leave it out for no limit", key.name()));
        }
    }
    if let Some(cap) = values.max_delay_ms.filter(|&cap| cap > 0) {
        for (key, base) in
            [(Key::SessionBaseDelayMs, values.session_base_delay_ms), (Key::ExecBaseDelayMs, values.exec_base_delay_ms)]
        {
            if cap < base {
                broke(Key::MaxDelayMs, format!("`max_delay_ms` ({cap}) must be at least `{}` ({base})", key.name()));
            }
        }
    }
    if let Some(max_calls) = values.max_calls {
        let possible = uncapped_calls(values);
        if max_calls < 1 {
            broke(
                Key::MaxCalls,
                "`max_calls` (0) must be at least 1: it caps model calls across both layers".to_owned(),
            );
        } else if u64::from(max_calls) > possible && values.max_retries >= 1 {
            broke(
                Key::MaxCalls,
                format!(
                    "`max_calls` ({max_calls}) is more than the {possible} calls this policy can make; \
                     lower it or raise `max_retries` / `session_retries`"
                ),
            );
        }
    }
    if let (Some(timeout), Some(budget)) = (values.timeout_ms, values.budget_ms) {
        if timeout > budget {
            broke(Key::TimeoutMs, format!("`timeout_ms` ({timeout}) must not exceed `budget_ms` ({budget})"));
        }
    }
    if let Some(budget) = values.budget_ms.filter(|&budget| budget > 0) {
        let backoff = worst_case(values).backoff_ms;
        if backoff >= budget {
            broke(
                Key::BudgetMs,
                format!(
                    "`budget_ms` ({budget}) leaves no time for this policy's {} of nominal backoff; \
                     raise `budget_ms` above {backoff} or lower the retries or delays",
                    format_ms(backoff)
                ),
            );
        }
    }
    found
}

/// Calls both layers can make without `max_calls`: `(session_retries + 1) * max_retries`.
fn uncapped_calls(values: &PolicyValues) -> u64 {
    (u64::from(values.session_retries) + 1).saturating_mul(u64::from(values.max_retries))
}

/// The worst case of a policy: every call fails with a retryable error until the layers give up.
pub fn worst_case(values: &PolicyValues) -> WorstCase {
    let per_attempt = u64::from(values.session_retries) + 1;
    let calls = match values.max_calls {
        Some(cap) => uncapped_calls(values).min(u64::from(cap)),
        None => uncapped_calls(values),
    };
    let full_attempts = calls / per_attempt;
    let partial_calls = calls % per_attempt;
    let session_sleeps_per_attempt = per_attempt - 1;
    let session = |sleeps: u64| capped_doubling_sum(values.session_base_delay_ms, sleeps, values.max_delay_ms);
    let (exec_sleeps, partial_session) = if partial_calls == 0 {
        (full_attempts.saturating_sub(1), 0)
    } else {
        (full_attempts, session(partial_calls - 1))
    };
    let backoff_ms = session(session_sleeps_per_attempt)
        .saturating_mul(full_attempts)
        .saturating_add(partial_session)
        .saturating_add(capped_doubling_sum(values.exec_base_delay_ms, exec_sleeps, values.max_delay_ms));
    WorstCase { calls, backoff_ms }
}

/// `sum_{i < count} min(cap, base * 2^i)`, saturating, in O(64) steps whatever `count` is.
fn capped_doubling_sum(base: u64, count: u64, cap: Option<u64>) -> u64 {
    let cap = cap.unwrap_or(u64::MAX);
    let mut sum = 0u64;
    let mut term = base;
    let mut left = count;
    while left > 0 {
        if term >= cap {
            return sum.saturating_add(cap.saturating_mul(left));
        }
        sum = sum.saturating_add(term);
        left -= 1;
        term = term.saturating_mul(2);
    }
    sum
}

/// The line the attribute adds to a function's docs, e.g.
/// "up to 12 model calls and 46.5 s of backoff per exec".
pub fn describe_worst_case(values: &PolicyValues) -> String {
    let worst = worst_case(values);
    let mut line = format!(
        "up to {} model call{} and {} of backoff per exec",
        worst.calls,
        if worst.calls == 1 { "" } else { "s" },
        format_ms(worst.backoff_ms)
    );
    if let Some(budget) = values.budget_ms {
        let _ = write!(line, ", within a {} budget", format_ms(budget));
    }
    line
}

/// Milliseconds as seconds for people: 46500 -> "46.5 s", 250 -> "0.25 s", 3000 -> "3 s".
pub fn format_ms(ms: u64) -> String {
    let (secs, frac) = (ms / 1000, ms % 1000);
    if frac == 0 {
        return format!("{secs} s");
    }
    let digits = format!("{frac:03}");
    format!("{secs}.{} s", digits.trim_end_matches('0'))
}

/// The valid key nearest to `unknown`, for "did you mean" hints (edit distance at most 3).
pub fn nearest_key(unknown: &str) -> Option<Key> {
    let names = Key::ALL.map(Key::name);
    nearest(unknown, &names).and_then(Key::from_name)
}

/// The candidate nearest to `unknown` (edit distance at most 3, ignoring ASCII case), for
/// "did you mean" hints.
pub fn nearest<'c>(unknown: &str, candidates: &[&'c str]) -> Option<&'c str> {
    let unknown = unknown.to_ascii_lowercase();
    candidates
        .iter()
        .map(|candidate| (edit_distance(&unknown, candidate), *candidate))
        .filter(|&(distance, _)| distance <= 3)
        .min_by_key(|&(distance, _)| distance)
        .map(|(_, candidate)| candidate)
}

/// Levenshtein distance over bytes (names are ASCII).
fn edit_distance(a: &str, b: &str) -> usize {
    let b = b.as_bytes();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, &ca) in a.as_bytes().iter().enumerate() {
        let mut current = vec![i + 1; b.len() + 1];
        for (j, &cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != cb);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        previous = current;
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_cost_12_calls_and_46_5_s() {
        assert!(violations(&PolicyValues::DEFAULT).is_empty());
        assert_eq!(worst_case(&PolicyValues::DEFAULT), WorstCase { calls: 12, backoff_ms: 46_500 });
        assert_eq!(describe_worst_case(&PolicyValues::DEFAULT), "up to 12 model calls and 46.5 s of backoff per exec");
    }

    #[test]
    fn max_calls_truncates_the_worst_case() {
        let five = PolicyValues { max_calls: Some(5), ..PolicyValues::DEFAULT };
        // calls 1..4 in attempt 0 (2+4+8 s), exec sleep 1.5 s, call 5.
        assert_eq!(worst_case(&five), WorstCase { calls: 5, backoff_ms: 15_500 });
        let four = PolicyValues { max_calls: Some(4), ..PolicyValues::DEFAULT };
        assert_eq!(worst_case(&four), WorstCase { calls: 4, backoff_ms: 14_000 });
    }

    #[test]
    fn max_delay_caps_every_sleep() {
        let capped = PolicyValues { max_delay_ms: Some(3000), ..PolicyValues::DEFAULT };
        // session 2+3+3 = 8 per attempt, three attempts, exec 1.5 + 3.
        assert_eq!(worst_case(&capped).backoff_ms, 24_000 + 4_500);
    }

    #[test]
    fn huge_values_saturate_instead_of_looping_or_overflowing() {
        let huge = PolicyValues { max_retries: u32::MAX, session_retries: u32::MAX, ..PolicyValues::DEFAULT };
        assert_eq!(worst_case(&huge).backoff_ms, u64::MAX);
        assert!(violations(&huge).is_empty());
    }

    #[test]
    fn each_rule_names_its_key_and_value() {
        let bad = PolicyValues { max_retries: 0, session_base_delay_ms: 0, ..PolicyValues::DEFAULT };
        let found = violations(&bad);
        assert_eq!(found[0].key, Key::MaxRetries);
        assert!(found[0].message.contains("`max_retries` (0)"));
        assert_eq!(found[1].key, Key::SessionBaseDelayMs);

        let too_many = PolicyValues { max_calls: Some(100), ..PolicyValues::DEFAULT };
        assert_eq!(
            violations(&too_many)[0].message,
            "`max_calls` (100) is more than the 12 calls this policy can make; \
             lower it or raise `max_retries` / `session_retries`"
        );

        let low_cap = PolicyValues { max_delay_ms: Some(100), ..PolicyValues::DEFAULT };
        let found = violations(&low_cap);
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].message, "`max_delay_ms` (100) must be at least `session_base_delay_ms` (2000)");

        let slow = PolicyValues {
            timeout_ms: Some(5000),
            budget_ms: Some(1000),
            max_retries: 1,
            session_retries: 0,
            ..PolicyValues::DEFAULT
        };
        assert_eq!(violations(&slow)[0].message, "`timeout_ms` (5000) must not exceed `budget_ms` (1000)");

        let short = PolicyValues { budget_ms: Some(10_000), ..PolicyValues::DEFAULT };
        assert!(violations(&short)[0].message.contains("46.5 s of nominal backoff"));
    }

    #[test]
    fn formats_and_suggestions() {
        assert_eq!(format_ms(46_500), "46.5 s");
        assert_eq!(format_ms(250), "0.25 s");
        assert_eq!(format_ms(3000), "3 s");
        assert_eq!(nearest_key("max_retry"), Some(Key::MaxRetries));
        assert_eq!(nearest_key("budget"), Some(Key::BudgetMs));
        assert_eq!(nearest_key("completely_different"), None);
    }
}
