//! The rules a policy must satisfy: each rule's condition once, in a `const fn` ([`broken`]), and
//! its message apart. A `const` policy (the attribute's, or any `const` a user writes) is therefore
//! judged at compile time, and the runtime judges any other policy once, when it is built, instead of
//! on every call; [`violations`] words the same conditions for people.

use crate::{
    DEFAULT_CONNECT_TIMEOUT_MS, DEFAULT_FIRST_TOKEN_TIMEOUT_MS, DEFAULT_HEADERS_TIMEOUT_MS, DEFAULT_IDLE_TIMEOUT_MS,
    DEFAULT_MAX_ANSWER_BYTES, DEFAULT_TIMEOUT_MS, DEFAULT_TURN_TIMEOUT_MS, Key, MAX_WAIT_MS, PolicyValues, format_ms,
};

/// One broken rule: the key to blame and a message in rustc's voice that says how to fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The key whose value breaks the rule.
    pub key: Key,
    /// What is wrong and how to fix it, e.g. "`max_calls` (100) is more than the 12 calls this policy can make".
    pub message: String,
}

/// A rule, in the order [`violations`] reports them; its bit in [`broken`]'s answer is `1 << rule`.
#[derive(Clone, Copy)]
enum Rule {
    MaxRetriesAtLeastOne,
    SessionBaseDelayPositive,
    ExecBaseDelayPositive,
    RetryAfterCapPositive,
    MaxDelayPositive,
    BudgetPositive,
    TimeoutPositive,
    ConnectTimeoutPositive,
    HeadersTimeoutPositive,
    FirstTokenTimeoutPositive,
    IdleTimeoutPositive,
    TurnTimeoutPositive,
    MaxAnswerBytesPositive,
    DelayCapAtLeastBaseDelays,
    MaxCallsAtLeastOne,
    MaxCallsPossible,
    TimeoutWithinBudget,
    TimeoutWithinTurn,
    HeadersTimeoutWithinCall,
    FirstTokenTimeoutWithinCall,
    IdleTimeoutWithinCall,
}

impl Rule {
    const ALL: [Rule; 21] = [
        Rule::MaxRetriesAtLeastOne,
        Rule::SessionBaseDelayPositive,
        Rule::ExecBaseDelayPositive,
        Rule::RetryAfterCapPositive,
        Rule::MaxDelayPositive,
        Rule::BudgetPositive,
        Rule::TimeoutPositive,
        Rule::ConnectTimeoutPositive,
        Rule::HeadersTimeoutPositive,
        Rule::FirstTokenTimeoutPositive,
        Rule::IdleTimeoutPositive,
        Rule::TurnTimeoutPositive,
        Rule::MaxAnswerBytesPositive,
        Rule::DelayCapAtLeastBaseDelays,
        Rule::MaxCallsAtLeastOne,
        Rule::MaxCallsPossible,
        Rule::TimeoutWithinBudget,
        Rule::TimeoutWithinTurn,
        Rule::HeadersTimeoutWithinCall,
        Rule::FirstTokenTimeoutWithinCall,
        Rule::IdleTimeoutWithinCall,
    ];

    const fn bit(self) -> u32 {
        1 << self as u32
    }

    /// The rule's bit when `broken`, else 0.
    const fn bit_if(self, broken: bool) -> u32 {
        if broken { self.bit() } else { 0 }
    }
}

/// Whether every rule holds: what [`violations`] being empty means, as a `const fn`.
pub const fn is_valid(values: &PolicyValues) -> bool {
    broken(values) == 0
}

/// The rules `values` breaks, one bit per [`Rule`].
const fn broken(values: &PolicyValues) -> u32 {
    let mut broken = 0;
    // Counts of at least 1, and time and size settings above 0.
    broken |= Rule::MaxRetriesAtLeastOne.bit_if(values.max_retries < 1);
    broken |= Rule::SessionBaseDelayPositive.bit_if(values.session_base_delay_ms == 0);
    broken |= Rule::ExecBaseDelayPositive.bit_if(values.exec_base_delay_ms == 0);
    broken |= Rule::RetryAfterCapPositive.bit_if(values.retry_after_cap_ms == 0);
    broken |= Rule::MaxDelayPositive.bit_if(is_zero(values.max_delay_ms));
    broken |= Rule::BudgetPositive.bit_if(is_zero(values.budget_ms));
    broken |= Rule::TimeoutPositive.bit_if(is_zero(values.timeout_ms));
    broken |= Rule::ConnectTimeoutPositive.bit_if(is_zero(values.connect_timeout_ms));
    broken |= Rule::HeadersTimeoutPositive.bit_if(is_zero(values.headers_timeout_ms));
    broken |= Rule::FirstTokenTimeoutPositive.bit_if(is_zero(values.first_token_timeout_ms));
    broken |= Rule::IdleTimeoutPositive.bit_if(is_zero(values.idle_timeout_ms));
    broken |= Rule::TurnTimeoutPositive.bit_if(is_zero(values.turn_timeout_ms));
    broken |= Rule::MaxAnswerBytesPositive.bit_if(is_zero(values.max_answer_bytes));
    // `max_delay_ms` caps delays, so it cannot be below a base delay.
    let (below_session, below_exec) = delay_cap_below(values);
    broken |= Rule::DelayCapAtLeastBaseDelays.bit_if(below_session || below_exec);
    // `max_calls` of at least 1 and at most the calls the policy can make.
    if let Some(max_calls) = values.max_calls {
        broken |= Rule::MaxCallsAtLeastOne.bit_if(max_calls < 1);
        broken |= Rule::MaxCallsPossible
            .bit_if(max_calls >= 1 && max_calls as u64 > uncapped_calls(values) && values.max_retries >= 1);
    }
    // A bound set above the one that contains it would never be reached.
    if let (Some(timeout), Some(budget)) = (values.timeout_ms, values.budget_ms) {
        broken |= Rule::TimeoutWithinBudget.bit_if(capped(timeout) > capped(budget) && budget > 0);
    }
    broken |= Rule::TimeoutWithinTurn.bit_if(exceeds(values.timeout_ms, values.turn_timeout_ms()));
    let call = values.timeout_ms();
    broken |= Rule::HeadersTimeoutWithinCall.bit_if(exceeds(values.headers_timeout_ms, call));
    broken |= Rule::FirstTokenTimeoutWithinCall.bit_if(exceeds(values.first_token_timeout_ms, call));
    broken |= Rule::IdleTimeoutWithinCall.bit_if(exceeds(values.idle_timeout_ms, call));
    broken
}

const fn is_zero(value: Option<u64>) -> bool {
    matches!(value, Some(0))
}

const fn capped(ms: u64) -> u64 {
    if ms > MAX_WAIT_MS { MAX_WAIT_MS } else { ms }
}

/// A bound `set` that would outlast the (positive) `outer` bound containing it.
const fn exceeds(set: Option<u64>, outer: u64) -> bool {
    match set {
        Some(value) => capped(value) > outer && outer > 0,
        None => false,
    }
}

/// Whether a set (positive) `max_delay_ms` is below `session_base_delay_ms`, `exec_base_delay_ms`.
const fn delay_cap_below(values: &PolicyValues) -> (bool, bool) {
    match values.max_delay_ms {
        Some(cap) if cap > 0 => (cap < values.session_base_delay_ms, cap < values.exec_base_delay_ms),
        _ => (false, false),
    }
}

/// Calls both layers can make without `max_calls`: `(session_retries + 1) * max_retries`.
pub(crate) const fn uncapped_calls(values: &PolicyValues) -> u64 {
    (values.session_retries as u64 + 1).saturating_mul(values.max_retries as u64)
}

/// Every rule a policy must satisfy, in a fixed order. Empty when the policy is valid.
///
/// A `budget_ms` shorter than the nominal backoff is valid: it means "retry what fits", and the
/// first retry that does not fit ends the exec with kind `refused`. Only a budget that cannot hold
/// one call (`timeout_ms` above it) is refused.
pub fn violations(values: &PolicyValues) -> Vec<Violation> {
    let broken = broken(values);
    if broken == 0 {
        return Vec::new();
    }
    Rule::ALL.into_iter().filter(|rule| broken & rule.bit() != 0).map(|rule| violation(rule, values)).collect()
}

/// What breaking `rule` means for `values`, in words.
fn violation(rule: Rule, values: &PolicyValues) -> Violation {
    let positive = |key: Key| Violation { key, message: format!("`{}` (0) must be greater than 0", key.name()) };
    let limit = |key: Key| Violation {
        key,
        message: format!("`{}` (0) must be greater than 0; leave it out for no limit", key.name()),
    };
    let time = |key: Key, default: u64| Violation {
        key,
        message: format!(
            "`{}` (0) must be greater than 0; leave it out for the default ({})",
            key.name(),
            format_ms(default)
        ),
    };
    let within_call = |key: Key, value: Option<u64>| Violation {
        key,
        message: format!(
            "`{}` ({}) must not exceed `timeout_ms` ({}): the call would end first; raise `timeout_ms` too",
            key.name(),
            value.unwrap_or_default(),
            shown(values.timeout_ms, values.timeout_ms())
        ),
    };
    match rule {
        Rule::MaxRetriesAtLeastOne => Violation {
            key: Key::MaxRetries,
            message: format!(
                "`max_retries` ({}) must be at least 1: it counts exec attempts, and 1 means no exec retry",
                values.max_retries
            ),
        },
        Rule::SessionBaseDelayPositive => positive(Key::SessionBaseDelayMs),
        Rule::ExecBaseDelayPositive => positive(Key::ExecBaseDelayMs),
        Rule::RetryAfterCapPositive => positive(Key::RetryAfterCapMs),
        Rule::MaxDelayPositive => limit(Key::MaxDelayMs),
        Rule::BudgetPositive => limit(Key::BudgetMs),
        Rule::TimeoutPositive => time(Key::TimeoutMs, DEFAULT_TIMEOUT_MS),
        Rule::ConnectTimeoutPositive => time(Key::ConnectTimeoutMs, DEFAULT_CONNECT_TIMEOUT_MS),
        Rule::HeadersTimeoutPositive => time(Key::HeadersTimeoutMs, DEFAULT_HEADERS_TIMEOUT_MS),
        Rule::FirstTokenTimeoutPositive => time(Key::FirstTokenTimeoutMs, DEFAULT_FIRST_TOKEN_TIMEOUT_MS),
        Rule::IdleTimeoutPositive => time(Key::IdleTimeoutMs, DEFAULT_IDLE_TIMEOUT_MS),
        Rule::TurnTimeoutPositive => time(Key::TurnTimeoutMs, DEFAULT_TURN_TIMEOUT_MS),
        Rule::MaxAnswerBytesPositive => Violation {
            key: Key::MaxAnswerBytes,
            message: format!(
                "`max_answer_bytes` (0) must be greater than 0; leave it out for the default ({DEFAULT_MAX_ANSWER_BYTES})"
            ),
        },
        Rule::DelayCapAtLeastBaseDelays => {
            let cap = values.max_delay_ms.unwrap_or_default();
            let (session, exec) = (values.session_base_delay_ms, values.exec_base_delay_ms);
            let message = match delay_cap_below(values) {
                (true, true) => format!(
                    "`max_delay_ms` ({cap}) must be at least `session_base_delay_ms` ({session}) and \
                     `exec_base_delay_ms` ({exec})"
                ),
                (true, false) => format!("`max_delay_ms` ({cap}) must be at least `session_base_delay_ms` ({session})"),
                _ => format!("`max_delay_ms` ({cap}) must be at least `exec_base_delay_ms` ({exec})"),
            };
            Violation { key: Key::MaxDelayMs, message }
        }
        Rule::MaxCallsAtLeastOne => Violation {
            key: Key::MaxCalls,
            message: "`max_calls` (0) must be at least 1: it caps model calls across both layers".to_owned(),
        },
        Rule::MaxCallsPossible => Violation {
            key: Key::MaxCalls,
            message: format!(
                "`max_calls` ({}) is more than the {} calls this policy can make; \
                 lower it or raise `max_retries` / `session_retries`",
                values.max_calls.unwrap_or_default(),
                uncapped_calls(values)
            ),
        },
        Rule::TimeoutWithinBudget => Violation {
            key: Key::TimeoutMs,
            message: format!(
                "`timeout_ms` ({}) must not exceed `budget_ms` ({})",
                values.timeout_ms.unwrap_or_default(),
                values.budget_ms.unwrap_or_default()
            ),
        },
        Rule::TimeoutWithinTurn => Violation {
            key: Key::TimeoutMs,
            message: format!(
                "`timeout_ms` ({}) must not exceed `turn_timeout_ms` ({}): a call cannot outlast its \
                 turn; raise `turn_timeout_ms` too",
                values.timeout_ms.unwrap_or_default(),
                shown(values.turn_timeout_ms, values.turn_timeout_ms())
            ),
        },
        Rule::HeadersTimeoutWithinCall => within_call(Key::HeadersTimeoutMs, values.headers_timeout_ms),
        Rule::FirstTokenTimeoutWithinCall => within_call(Key::FirstTokenTimeoutMs, values.first_token_timeout_ms),
        Rule::IdleTimeoutWithinCall => within_call(Key::IdleTimeoutMs, values.idle_timeout_ms),
    }
}

/// A value for a message: `600000` when set, `600000, the default` when it is the default.
fn shown(set: Option<u64>, value: u64) -> String {
    match set {
        Some(_) => value.to_string(),
        None => format!("{value}, the default"),
    }
}
