//! Why a cap refused a retry, as data a caller can match, with the words a user reads.

use std::fmt;
use std::time::Duration;

use super::BreakerState;
use crate::policy::rules::{format_ms, millis};
use crate::storm::pace::PaceRefused;

/// A time bound on model calls, named by the policy key that sets it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Bound {
    /// One call's time, `timeout_ms`.
    Call,
    /// The exec's deadline, `budget_ms`.
    Budget,
    /// The model turn's deadline, `turn_timeout_ms`.
    Turn,
}

impl Bound {
    /// The policy key that sets this bound, e.g. `"turn_timeout_ms"`.
    pub const fn key(self) -> &'static str {
        match self {
            Bound::Call => "timeout_ms",
            Bound::Budget => "budget_ms",
            Bound::Turn => "turn_timeout_ms",
        }
    }
}

/// Why a cap refused a retry that the layers' rules allowed: the exec stops with kind `refused`
/// (docs/design.md §7). Its `Display` is what `ExecError::stopped_by` and the journal say.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// The policy's call cap is reached: "`max_calls` (5) reached after 5 model calls".
    MaxCalls {
        /// `max_calls`, or the calls the policy can make when it is not set.
        cap: u64,
        /// Model calls made.
        calls: u32,
    },
    /// The server asked for a longer wait than `retry_after_cap_ms` allows.
    RetryAfterCap {
        /// The server's requested wait.
        asked: Duration,
        /// `retry_after_cap_ms`.
        cap: Duration,
    },
    /// The wait before the next call does not fit before a deadline.
    Deadline {
        /// The deadline: [`Bound::Budget`] or [`Bound::Turn`].
        bound: Bound,
        /// That bound's setting, in milliseconds.
        setting_ms: u64,
        /// The wait.
        wait: Duration,
        /// The time left before the deadline.
        left: Duration,
        /// The wait is the server's (its hint was at least the computed backoff).
        requested_by_server: bool,
    },
    /// The runtime's retry quota allows no retry now: the retries of its window already reach
    /// what the window's successes and its floor pay for (storm control, docs/design.md §10).
    RetryQuota {
        /// Successful model calls in the window.
        successes: u64,
        /// Retries sent in the window.
        retries: u64,
        /// The window (`RetryQuota::with_window`).
        window: Duration,
        /// Retries allowed per 100 successes (`RetryQuota::with_retry_percent`).
        retry_percent: u32,
        /// Retries allowed in any window whatever succeeded (`RetryQuota::with_min_retries`).
        min_retries: u32,
    },
    /// Every target of a runtime with fallbacks is skipped by its open circuit breaker
    /// (`RuntimeBuilder::with_fallback`): no call is made, at no cost, until an open period ends.
    CircuitOpen {
        /// The last target skipped, `"<provider>/<model>"`.
        target: String,
        /// Its breaker's state.
        state: BreakerState,
    },
    /// The wait for a rate limit of the provider's scope does not fit before the deadline
    /// (`RuntimeBuilder::with_pacing`): no call is made, none is refused by the server.
    RateLimit(PaceRefused),
    /// The provider's scope is cooling down (an earlier call's server asked its callers to wait,
    /// maybe another exec's or another process's with a larger cap) for longer than this exec may
    /// wait: no call is made, none before the time the server asked for.
    Cooldown {
        /// What is left of the cooldown.
        left: Duration,
        /// Why it may not be waited: [`Refusal::RetryAfterCap`] (longer than
        /// `retry_after_cap_ms`) or [`Refusal::Deadline`] (past the time left).
        cause: Box<Refusal>,
    },
    /// A spend limit of the exec (`UsageLimits`) would be passed by the next call's worst case or
    /// the next tool turn: no call is made (kind `usage_limit`).
    UsageLimit {
        /// Which limit.
        limit: agentic_policy::limits::LimitKey,
        /// Its setting: tokens or calls, or for `max_cost_usd` millionths of a dollar (each
        /// amount here is a whole number, so that a refusal compares exactly).
        max: u64,
        /// What the exec had spent against it, in the same unit.
        used: u64,
        /// What the next call (its estimated input and at least one output token) or tool turn
        /// would have needed, in the same unit.
        needed: u64,
        /// The limit is the runtime's spend account's (`RuntimeBuilder::with_spend_account`), over
        /// this window, not the exec's: `used` counts every exec's spend in the window and the
        /// reservations of the calls in flight.
        account: Option<AccountWindow>,
    },
    /// A streamed exec in `StreamMode::Fail` already showed its caller something of the call that
    /// failed: no other call may replace it (`Runtime::exec_stream`).
    Committed,
}

/// The window of a spend account that refused a call ([`Refusal::UsageLimit`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct AccountWindow {
    /// The account's window (`SpendAccount::per_day`: a day).
    pub window: Duration,
    /// When the window ends and its limits count from zero again.
    pub resets_in: Duration,
}

impl AccountWindow {
    /// The window `window` that ends in `resets_in`.
    pub const fn new(window: Duration, resets_in: Duration) -> Self {
        Self { window, resets_in }
    }
}

impl Refusal {
    /// The snake_case name of the cap: `"max_calls"`, `"retry_after_cap"`, `"deadline"`,
    /// `"retry_quota"`, `"circuit_open"`, `"rate_limit"`, `"cooldown"`, `"committed"` or `"usage_limit"` (the `agentic.refusal`
    /// attribute of the metrics).
    pub const fn name(&self) -> &'static str {
        match self {
            Refusal::MaxCalls { .. } => "max_calls",
            Refusal::RetryAfterCap { .. } => "retry_after_cap",
            Refusal::Deadline { .. } => "deadline",
            Refusal::RetryQuota { .. } => "retry_quota",
            Refusal::CircuitOpen { .. } => "circuit_open",
            Refusal::RateLimit(_) => "rate_limit",
            Refusal::Cooldown { .. } => "cooldown",
            Refusal::Committed => "committed",
            Refusal::UsageLimit { .. } => "usage_limit",
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::MaxCalls { cap, calls } => write!(f, "`max_calls` ({cap}) reached after {calls} model calls"),
            Refusal::RetryAfterCap { asked, cap } => {
                let cap = format_ms(millis(*cap));
                match millis(*asked) {
                    u64::MAX => write!(f, "server asked to wait longer than a clock can count"),
                    ms => write!(f, "server asked to wait {}", format_ms(ms)),
                }?;
                write!(f, "; cap is {cap} (`retry_after_cap_ms`)")
            }
            Refusal::Deadline { bound, setting_ms, wait, left, requested_by_server } => {
                let asked = if *requested_by_server { "the server's requested" } else { "the" };
                write!(
                    f,
                    "`{}` ({setting_ms}) would run out: {asked} wait of {} does not fit in the {} left",
                    bound.key(),
                    format_ms(millis(*wait)),
                    format_ms(millis(*left))
                )
            }
            Refusal::RetryQuota { successes, retries, window, retry_percent, min_retries } => {
                let window = format_ms(millis(*window));
                write!(
                    f,
                    "the retry quota is empty: {retries} retries against {successes} successful calls in the last \
                     {window} (the Runtime's retry quota allows {retry_percent} retries per 100 successes, plus \
                     {min_retries} in any {window}); it refills as calls succeed"
                )
            }
            Refusal::CircuitOpen { target, state } => {
                write!(f, "every target's circuit breaker is open: the last, `{target}`, is {state}")
            }
            Refusal::RateLimit(refused) => refused.fmt(f),
            Refusal::Cooldown { left, cause } => {
                let left = format_ms(millis(*left));
                write!(f, "the provider is cooling down for {left} more (a server asked its callers to wait), ")?;
                match cause.as_ref() {
                    Refusal::RetryAfterCap { cap, .. } => {
                        write!(f, "longer than `retry_after_cap_ms` ({})", format_ms(millis(*cap)))
                    }
                    Refusal::Deadline { bound, setting_ms, left, .. } => write!(
                        f,
                        "which does not fit in the {} left of `{}` ({setting_ms})",
                        format_ms(millis(*left)),
                        bound.key()
                    ),
                    other => other.fmt(f),
                }
            }
            Refusal::UsageLimit { limit, max, used, needed, account } => {
                let amount = |value: u64| match limit.is_count() {
                    true => value.to_string(),
                    false => format!("${:.6}", value as f64 / 1e6),
                };
                let (whose, spent) = match account {
                    Some(window) => (
                        format!(" of the spend account's {} window", format_ms(millis(window.window))),
                        "spent or held by calls in flight",
                    ),
                    None => (String::new(), "spent"),
                };
                write!(
                    f,
                    "`{}` ({}){whose} would be passed: {} {spent}, the next step needs {}, {} left",
                    limit.name(),
                    amount(*max),
                    amount(*used),
                    amount(*needed),
                    amount(max.saturating_sub(*used))
                )?;
                match account {
                    Some(window) => write!(f, "; the window resets in {}", format_ms(millis(window.resets_in))),
                    None => Ok(()),
                }
            }
            Refusal::Committed => f.write_str(
                "the stream had already shown the caller part of this call's answer and its mode is \
                 `StreamMode::Fail`, which makes no call to replace it (`StreamMode::Replay` rewinds and retries)",
            ),
        }
    }
}
