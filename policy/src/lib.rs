//! The retry policy of agentic, as plain values: the keys, the one rules function, the jitter
//! kinds, the worst-case arithmetic, the defaults with their reasons and the named presets.
//!
//! A crate of its own (its one dependency is `strsim`, for "did you mean"), because two crates
//! judge a policy: `agentic-runtime`'s `RetryPolicy::validate` at run time and `agentic-macros`'
//! `#[agentic_function(...)]` at compile time. Both judge by the rules of one `const fn`
//! ([`is_valid`], worded by [`violations`]), so they can never disagree. Use it through
//! `agentic-runtime` (`agentic_runtime::policy::rules`).
#![deny(missing_docs)]
#![warn(unreachable_pub, missing_debug_implementations)]

use std::fmt::Write as _;

mod check;
pub mod limits;
mod preset;

use check::uncapped_calls;
pub use check::{Violation, is_valid, violations};
pub use preset::Preset;

/// How a computed delay is randomised so that clients that failed together do not retry together.
///
/// The cap (`max_delay_ms`) is applied after jitter. The RNG is seedable (`RuntimeBuilder::with_jitter_seed`).
///
/// Not `#[non_exhaustive]` on purpose: the runtime, pinned to this crate's exact version, matches
/// every kind, so a kind added here without its delay there does not compile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Jitter {
    /// No randomness: the exact schedules (2 s, 4 s, 8 s and 1.5 s, 3 s with the default delays).
    None,
    /// `U(0, d)`.
    Full,
    /// `d/2 + U(0, d/2)`.
    Equal,
    /// `min(cap, U(base, 3 * previous))`.
    Decorrelated,
    /// `d * U(0.75, 1.25)`: the default. It spreads clients that failed together over half the
    /// delay, so they do not come back at the same instant, and keeps each wait near its nominal value.
    #[default]
    Proportional,
}

impl Jitter {
    /// Every kind, as spelled in the attribute's `jitter = "..."`.
    pub const NAMES: [&'static str; 5] = ["none", "full", "equal", "decorrelated", "proportional"];

    /// The kind named `name` (as in [`Jitter::NAMES`]).
    pub fn from_name(name: &str) -> Option<Jitter> {
        Some(match name {
            "none" => Jitter::None,
            "full" => Jitter::Full,
            "equal" => Jitter::Equal,
            "decorrelated" => Jitter::Decorrelated,
            "proportional" => Jitter::Proportional,
            _ => return None,
        })
    }

    /// The kind's variant as written in Rust (`"Proportional"`), for code that names it, such as the
    /// attribute's expansion.
    pub const fn variant(self) -> &'static str {
        match self {
            Jitter::None => "None",
            Jitter::Full => "Full",
            Jitter::Equal => "Equal",
            Jitter::Decorrelated => "Decorrelated",
            Jitter::Proportional => "Proportional",
        }
    }

    /// The kind's name, as accepted by [`Jitter::from_name`].
    pub const fn name(self) -> &'static str {
        match self {
            Jitter::None => "none",
            Jitter::Full => "full",
            Jitter::Equal => "equal",
            Jitter::Decorrelated => "decorrelated",
            Jitter::Proportional => "proportional",
        }
    }
}

impl std::fmt::Display for Jitter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The default of `connect_timeout_ms`: 10 s. The OpenAI and Anthropic SDKs give a connection 5 s;
/// twice that covers a TLS handshake over a slow link or a cold proxy. A host that has not accepted
/// by then is down, and a retry (perhaps to another address) is the better bet.
pub const DEFAULT_CONNECT_TIMEOUT_MS: u64 = 10_000;
/// The default of `headers_timeout_ms`: 120 s from the request to the response headers. Hosted APIs
/// send the headers of a streamed answer within a second; a local server (llama.cpp, Ollama) may
/// hold them while it loads a model or reads a long prompt, which two minutes covers.
pub const DEFAULT_HEADERS_TIMEOUT_MS: u64 = 120_000;
/// The default of `first_token_timeout_ms`: 300 s from the request to the first content. Reasoning
/// models think for minutes before their first token; five minutes is where agent platforms end a
/// turn anyway.
pub const DEFAULT_FIRST_TOKEN_TIMEOUT_MS: u64 = 300_000;
/// The default of `idle_timeout_ms`: 60 s without new content once the answer flows. A live stream
/// does not pause for a minute mid-answer (Anthropic pings every ~15 s, and pings, keep-alive
/// comments and empty chunks do not count as content).
pub const DEFAULT_IDLE_TIMEOUT_MS: u64 = 60_000;
/// The default of `timeout_ms`: 600 s for one model call, what the OpenAI and Anthropic SDKs allow
/// one request.
pub const DEFAULT_TIMEOUT_MS: u64 = 600_000;
/// The default of `turn_timeout_ms`: 900 s for one model turn (its calls and the backoff between
/// them, both layers). It bounds an exec whose calls never return to 15 minutes: one SDK request's
/// ten minutes plus room for the retries that may save it.
pub const DEFAULT_TURN_TIMEOUT_MS: u64 = 900_000;
/// The default of `max_answer_bytes`: 4 MiB of text and tool-call arguments per answer. The longest
/// answers models give today (128 K output tokens) are about 0.5 MiB; a stream past 4 MiB is a
/// runaway, and the bound keeps memory bounded however long it runs.
pub const DEFAULT_MAX_ANSWER_BYTES: u64 = 4 * 1024 * 1024;

/// The numbers of a policy, as plain values (the attribute's keys, without `jitter`).
///
/// A time bound or size bound left at `None` takes its default (the `DEFAULT_*` constants of this
/// module); `max_delay_ms`, `max_calls` and `budget_ms` at `None` are off.
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
    /// Timeout of one model call (`None`: [`DEFAULT_TIMEOUT_MS`]).
    pub timeout_ms: Option<u64>,
    /// Deadline of one exec, across every attempt and sleep.
    pub budget_ms: Option<u64>,
    /// The longest server-requested wait that is honoured.
    pub retry_after_cap_ms: u64,
    /// Time to establish a connection (`None`: [`DEFAULT_CONNECT_TIMEOUT_MS`]).
    pub connect_timeout_ms: Option<u64>,
    /// Time from the request to the response headers (`None`: [`DEFAULT_HEADERS_TIMEOUT_MS`]).
    pub headers_timeout_ms: Option<u64>,
    /// Time from the request to the first content (`None`: [`DEFAULT_FIRST_TOKEN_TIMEOUT_MS`]).
    pub first_token_timeout_ms: Option<u64>,
    /// Time without new content once the answer flows (`None`: [`DEFAULT_IDLE_TIMEOUT_MS`]).
    pub idle_timeout_ms: Option<u64>,
    /// Time for one model turn, calls and backoff of both layers (`None`: [`DEFAULT_TURN_TIMEOUT_MS`]).
    pub turn_timeout_ms: Option<u64>,
    /// Size of one answer's text and tool-call arguments (`None`: [`DEFAULT_MAX_ANSWER_BYTES`]).
    pub max_answer_bytes: Option<u64>,
}

impl PolicyValues {
    /// The defaults (docs/design.md §4, §5, §9): 3 exec attempts, 3 session retries, 2000 ms and
    /// 1500 ms base delays, every other bound at its `DEFAULT_*`.
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
        connect_timeout_ms: None,
        headers_timeout_ms: None,
        first_token_timeout_ms: None,
        idle_timeout_ms: None,
        turn_timeout_ms: None,
        max_answer_bytes: None,
    };

    /// Sets the numeric key `key` to `value` (at most [`Key::max_value`]; a larger one saturates).
    /// `Key::Jitter` is not a number and is left alone: it lives beside the values.
    pub fn set(&mut self, key: Key, value: u64) {
        let small = u32::try_from(value).unwrap_or(u32::MAX);
        match key {
            Key::MaxRetries => self.max_retries = small,
            Key::SessionRetries => self.session_retries = small,
            Key::SessionBaseDelayMs => self.session_base_delay_ms = value,
            Key::ExecBaseDelayMs => self.exec_base_delay_ms = value,
            Key::MaxDelayMs => self.max_delay_ms = Some(value),
            Key::MaxCalls => self.max_calls = Some(small),
            Key::TimeoutMs => self.timeout_ms = Some(value),
            Key::BudgetMs => self.budget_ms = Some(value),
            Key::RetryAfterCapMs => self.retry_after_cap_ms = value,
            Key::ConnectTimeoutMs => self.connect_timeout_ms = Some(value),
            Key::HeadersTimeoutMs => self.headers_timeout_ms = Some(value),
            Key::FirstTokenTimeoutMs => self.first_token_timeout_ms = Some(value),
            Key::IdleTimeoutMs => self.idle_timeout_ms = Some(value),
            Key::TurnTimeoutMs => self.turn_timeout_ms = Some(value),
            Key::MaxAnswerBytes => self.max_answer_bytes = Some(value),
            Key::Jitter => {}
        }
    }

    /// The timeout of one model call in effect.
    pub const fn timeout_ms(&self) -> u64 {
        or_default(self.timeout_ms, DEFAULT_TIMEOUT_MS)
    }

    /// The connect timeout in effect.
    pub const fn connect_timeout_ms(&self) -> u64 {
        or_default(self.connect_timeout_ms, DEFAULT_CONNECT_TIMEOUT_MS)
    }

    /// The time to the response headers in effect.
    pub const fn headers_timeout_ms(&self) -> u64 {
        or_default(self.headers_timeout_ms, DEFAULT_HEADERS_TIMEOUT_MS)
    }

    /// The time to the first content in effect.
    pub const fn first_token_timeout_ms(&self) -> u64 {
        or_default(self.first_token_timeout_ms, DEFAULT_FIRST_TOKEN_TIMEOUT_MS)
    }

    /// The idle time between content in effect.
    pub const fn idle_timeout_ms(&self) -> u64 {
        or_default(self.idle_timeout_ms, DEFAULT_IDLE_TIMEOUT_MS)
    }

    /// The time for one model turn in effect.
    pub const fn turn_timeout_ms(&self) -> u64 {
        or_default(self.turn_timeout_ms, DEFAULT_TURN_TIMEOUT_MS)
    }

    /// The size bound of one answer in effect.
    pub const fn max_answer_bytes(&self) -> u64 {
        match self.max_answer_bytes {
            Some(bytes) => bytes,
            None => DEFAULT_MAX_ANSWER_BYTES,
        }
    }
}

/// The longest any time bound lasts: one year (365 days). A longer setting, up to `u64::MAX`, means
/// one year: nothing waits forever, and every timer the runtime sets fits tokio's timer wheel, so a
/// paused clock (tests, `agentic simulate`) jumps to it in one step instead of stepping through it.
pub const MAX_WAIT_MS: u64 = 365 * 24 * 3600 * 1000;

const fn or_default(value: Option<u64>, default: u64) -> u64 {
    let value = match value {
        Some(value) => value,
        None => default,
    };
    if value > MAX_WAIT_MS { MAX_WAIT_MS } else { value }
}

impl PolicyValues {
    /// The exec's deadline in effect, if any (at most [`MAX_WAIT_MS`]).
    pub const fn budget_ms(&self) -> Option<u64> {
        match self.budget_ms {
            Some(budget) if budget > MAX_WAIT_MS => Some(MAX_WAIT_MS),
            other => other,
        }
    }
}

/// A policy key, as spelled in the attribute and in the builder's `with_*` setters.
///
/// Not `#[non_exhaustive]` on purpose, like [`Jitter`]: the attribute and the runtime, pinned to this
/// crate's exact version, match every key (the attribute's error examples, the runtime's
/// `with_*` mapping), so a key added here without its handling there does not compile.
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
    /// `connect_timeout_ms`
    ConnectTimeoutMs,
    /// `headers_timeout_ms`
    HeadersTimeoutMs,
    /// `first_token_timeout_ms`
    FirstTokenTimeoutMs,
    /// `idle_timeout_ms`
    IdleTimeoutMs,
    /// `turn_timeout_ms`
    TurnTimeoutMs,
    /// `max_answer_bytes`
    MaxAnswerBytes,
}

impl Key {
    /// Every key, in the order the docs list them.
    pub const ALL: [Key; 16] = [
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
        Key::ConnectTimeoutMs,
        Key::HeadersTimeoutMs,
        Key::FirstTokenTimeoutMs,
        Key::IdleTimeoutMs,
        Key::TurnTimeoutMs,
        Key::MaxAnswerBytes,
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
            Key::ConnectTimeoutMs => "connect_timeout_ms",
            Key::HeadersTimeoutMs => "headers_timeout_ms",
            Key::FirstTokenTimeoutMs => "first_token_timeout_ms",
            Key::IdleTimeoutMs => "idle_timeout_ms",
            Key::TurnTimeoutMs => "turn_timeout_ms",
            Key::MaxAnswerBytes => "max_answer_bytes",
        }
    }

    /// The largest value the key takes: the keys that count calls or attempts are `u32`.
    pub const fn max_value(self) -> u64 {
        match self {
            Key::MaxRetries | Key::SessionRetries | Key::MaxCalls => u32::MAX as u64,
            _ => u64::MAX,
        }
    }

    /// The key with this name, if there is one.
    pub fn from_name(name: &str) -> Option<Key> {
        Key::ALL.into_iter().find(|key| key.name() == name)
    }
}

/// The most a policy can cost one exec when every call fails with a retryable error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorstCase {
    /// Model calls across both layers (`max_calls` applied).
    pub calls: u64,
    /// Nominal backoff in milliseconds (no jitter, `max_delay_ms` applied, no server hints).
    pub backoff_ms: u64,
    /// The longest one model turn takes, calls and backoff included: `turn_timeout_ms`, or
    /// `budget_ms` when it is shorter. An exec whose calls never return ends within this.
    pub turn_ms: u64,
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
    let turn_ms = match values.budget_ms() {
        Some(budget) => budget.min(values.turn_timeout_ms()),
        None => values.turn_timeout_ms(),
    };
    WorstCase { calls, backoff_ms, turn_ms }
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
/// "up to 12 model calls and 46.5 s ± 25 % of backoff per exec; a model turn ends within 15 min".
pub fn describe_worst_case(values: &PolicyValues, jitter: Jitter) -> String {
    let worst = worst_case(values);
    let nominal = format_ms(worst.backoff_ms);
    let backoff = match jitter {
        Jitter::None => nominal,
        Jitter::Proportional => format!("{nominal} ± 25 %"),
        Jitter::Full => format!("up to {nominal}"),
        Jitter::Equal => format!("{}-{nominal}", format_ms(worst.backoff_ms / 2)),
        Jitter::Decorrelated => format!("{nominal} nominal"),
    };
    let mut line = format!(
        "up to {} model call{} and {backoff} of backoff per exec",
        worst.calls,
        if worst.calls == 1 { "" } else { "s" },
    );
    match values.budget_ms {
        Some(budget) if budget <= values.turn_timeout_ms() => {
            let _ = write!(line, ", within a {} budget", format_ms(budget));
        }
        _ => {
            let _ = write!(line, "; a model turn ends within {}", format_long_ms(worst.turn_ms));
        }
    }
    line
}

/// The two layers' counts in words, so that the exec's attempts and the session's retries cannot be
/// taken for each other: "3 exec attempts (`max_retries`, the first included: 1 means no retry),
/// each up to 4 calls (the first and `session_retries` = 3 retries of a failed call)".
pub fn describe_layers(values: &PolicyValues) -> String {
    let attempts = values.max_retries;
    let calls = u64::from(values.session_retries) + 1;
    format!(
        "{attempts} exec attempt{} (`max_retries`, the first included: 1 means no retry), each up to {calls} call{} \
         (the first and `session_retries` = {} retr{} of a failed call)",
        if attempts == 1 { "" } else { "s" },
        if calls == 1 { "" } else { "s" },
        values.session_retries,
        if values.session_retries == 1 { "y" } else { "ies" },
    )
}

/// Like [`format_ms`], in whole minutes when it is some: 900000 -> "15 min", 90000 -> "90 s".
pub fn format_long_ms(ms: u64) -> String {
    if ms >= 60_000 && ms % 60_000 == 0 { format!("{} min", ms / 60_000) } else { format_ms(ms) }
}

/// A duration in whole milliseconds, saturating at `u64::MAX` (for messages and settings).
pub fn millis(duration: std::time::Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
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
        .map(|candidate| (strsim::levenshtein(&unknown, candidate), *candidate))
        .filter(|&(distance, _)| distance <= 3)
        .min_by_key(|&(distance, _)| distance)
        .map(|(_, candidate)| candidate)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layers_are_described_apart() {
        assert_eq!(
            describe_layers(&PolicyValues::DEFAULT),
            "3 exec attempts (`max_retries`, the first included: 1 means no retry), each up to 4 calls \
             (the first and `session_retries` = 3 retries of a failed call)"
        );
        let single = PolicyValues { max_retries: 1, session_retries: 1, ..PolicyValues::DEFAULT };
        assert_eq!(
            describe_layers(&single),
            "1 exec attempt (`max_retries`, the first included: 1 means no retry), each up to 2 calls \
             (the first and `session_retries` = 1 retry of a failed call)"
        );
    }

    #[test]
    fn defaults_are_valid_and_cost_12_calls_and_46_5_s() {
        assert!(violations(&PolicyValues::DEFAULT).is_empty());
        assert_eq!(worst_case(&PolicyValues::DEFAULT), WorstCase { calls: 12, backoff_ms: 46_500, turn_ms: 900_000 });
        assert_eq!(
            describe_worst_case(&PolicyValues::DEFAULT, Jitter::default()),
            "up to 12 model calls and 46.5 s ± 25 % of backoff per exec; a model turn ends within 15 min"
        );
        assert_eq!(
            describe_worst_case(&PolicyValues::DEFAULT, Jitter::None),
            "up to 12 model calls and 46.5 s of backoff per exec; a model turn ends within 15 min"
        );
        let budget = PolicyValues { budget_ms: Some(20_000), ..PolicyValues::DEFAULT };
        assert_eq!(
            describe_worst_case(&budget, Jitter::None),
            "up to 12 model calls and 46.5 s of backoff per exec, within a 20 s budget"
        );
    }

    #[test]
    fn max_calls_truncates_the_worst_case() {
        let five = PolicyValues { max_calls: Some(5), ..PolicyValues::DEFAULT };
        // calls 1..4 in attempt 0 (2+4+8 s), exec sleep 1.5 s, call 5.
        assert_eq!(worst_case(&five), WorstCase { calls: 5, backoff_ms: 15_500, turn_ms: 900_000 });
        let four = PolicyValues { max_calls: Some(4), ..PolicyValues::DEFAULT };
        assert_eq!(worst_case(&four), WorstCase { calls: 4, backoff_ms: 14_000, turn_ms: 900_000 });
    }

    #[test]
    fn max_delay_caps_every_sleep() {
        let capped = PolicyValues { max_delay_ms: Some(3000), ..PolicyValues::DEFAULT };
        // session 2+3+3 = 8 per attempt, three attempts, exec 1.5 + 3.
        assert_eq!(worst_case(&capped).backoff_ms, 24_000 + 4_500);
    }

    #[test]
    fn huge_values_saturate_instead_of_looping_or_overflowing() {
        let huge = PolicyValues {
            max_retries: u32::MAX,
            session_retries: u32::MAX,
            budget_ms: Some(u64::MAX),
            ..PolicyValues::DEFAULT
        };
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
        assert_eq!(found.len(), 1, "one error naming both base delays");
        assert_eq!(
            found[0].message,
            "`max_delay_ms` (100) must be at least `session_base_delay_ms` (2000) and `exec_base_delay_ms` (1500)"
        );
        let between = PolicyValues { max_delay_ms: Some(1800), ..PolicyValues::DEFAULT };
        assert_eq!(
            violations(&between)[0].message,
            "`max_delay_ms` (1800) must be at least `session_base_delay_ms` (2000)"
        );

        let slow = PolicyValues {
            timeout_ms: Some(5000),
            budget_ms: Some(1000),
            max_retries: 1,
            session_retries: 0,
            ..PolicyValues::DEFAULT
        };
        assert_eq!(violations(&slow)[0].message, "`timeout_ms` (5000) must not exceed `budget_ms` (1000)");
    }

    #[test]
    fn a_budget_shorter_than_the_backoff_is_valid() {
        for budget in [1, 10_000, 20_000, 46_500] {
            let short = PolicyValues { budget_ms: Some(budget), ..PolicyValues::DEFAULT };
            assert!(violations(&short).is_empty(), "budget {budget}: {:?}", violations(&short));
        }
    }

    #[test]
    fn time_bounds_are_positive_and_nested() {
        let zero = PolicyValues { idle_timeout_ms: Some(0), turn_timeout_ms: Some(0), ..PolicyValues::DEFAULT };
        let found = violations(&zero);
        assert_eq!(
            found[0].message,
            "`idle_timeout_ms` (0) must be greater than 0; leave it out for the default (60 s)"
        );
        assert_eq!(found[1].key, Key::TurnTimeoutMs);

        let long_call = PolicyValues { timeout_ms: Some(1_200_000), ..PolicyValues::DEFAULT };
        assert_eq!(
            violations(&long_call)[0].message,
            "`timeout_ms` (1200000) must not exceed `turn_timeout_ms` (900000, the default): a call cannot \
             outlast its turn; raise `turn_timeout_ms` too"
        );
        let raised = PolicyValues { turn_timeout_ms: Some(1_800_000), ..long_call };
        assert!(violations(&raised).is_empty());
        // A short turn with the default call timeout is what a user means by "bound the turn".
        let short_turn = PolicyValues { turn_timeout_ms: Some(30_000), ..PolicyValues::DEFAULT };
        assert!(violations(&short_turn).is_empty());

        let slow_first = PolicyValues { first_token_timeout_ms: Some(700_000), ..PolicyValues::DEFAULT };
        assert_eq!(
            violations(&slow_first)[0].message,
            "`first_token_timeout_ms` (700000) must not exceed `timeout_ms` (600000, the default): the call \
             would end first; raise `timeout_ms` too"
        );
        assert_eq!(PolicyValues::DEFAULT.max_answer_bytes(), 4 * 1024 * 1024);
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
