//! Why a layer decided what it did: the rule that judged the failure, the tries it had used, or the
//! cap that refused the retry. Typed, so a caller can match it; its `Display` is what logs say.

use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

use crate::classify::Reason;
use crate::decision::{Fallback, Layer};
use crate::policy::rules::{format_ms, millis};
use crate::storm::pace::LimitKind;
use crate::storm::{BreakerState, Refusal};

/// The rule that judged one failure: one of the runtime's classifier rules, or the words of a
/// [`Classify`](crate::resilient::Classify) implementation.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Rule {
    /// A rule of the runtime's classifiers (docs/design.md §4 and §5).
    Classifier(Reason),
    /// A [`Classification`](crate::resilient::Classification)'s reason, in its own words.
    Custom(Cow<'static, str>),
}

impl From<Reason> for Rule {
    fn from(reason: Reason) -> Self {
        Rule::Classifier(reason)
    }
}

impl From<&'static str> for Rule {
    fn from(words: &'static str) -> Self {
        Rule::Custom(Cow::Borrowed(words))
    }
}

impl From<String> for Rule {
    fn from(words: String) -> Self {
        Rule::Custom(Cow::Owned(words))
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rule::Classifier(reason) => reason.fmt(f),
            Rule::Custom(words) => f.write_str(words),
        }
    }
}

/// Why a layer decided what it did about one failure.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Why {
    /// The rule that judged the failure (verdicts `retry`, `give_up`, `fail_permanently`, `raise`,
    /// `context_overflow`).
    Judged(Rule),
    /// The rule, when the layer had no tries left (verdicts `retries_exhausted` and `exhausted`):
    /// "matched retry pattern \"503\"; all 3 exec attempts used".
    TriesUsed {
        /// The rule that judged the last failure.
        rule: Rule,
        /// The layer whose tries ran out.
        layer: Layer,
        /// How many it had: `session_retries` for layer 1, `max_retries` for layer 2.
        limit: u32,
    },
    /// A cap refused the retry the rules allowed (verdict `budget`).
    Refused(Refusal),
    /// A context overflow that a compactor shortened the conversation for (verdict `compacted`):
    /// "context overflow: compacted 42 → 9 messages by `drop_oldest`".
    Compacted {
        /// The compactor's [name](crate::compact::Compactor::name).
        compactor: String,
        /// Messages in the conversation that overflowed.
        before: usize,
        /// Messages in the one the turn is made again with.
        after: usize,
    },
    /// The provider was cooling down before the call (verdict `cooled_down`): "provider cooling
    /// down, 20 s left (a server's Retry-After)". The wait itself is the decision's delay, at most
    /// `retry_after_cap_ms` and the time left before the deadline.
    CoolingDown {
        /// How long the cooldown had left when the call was about to be made.
        left: Duration,
    },
    /// The call waited for a rate limit (verdict `paced`): "the requests rate limit (120) is used up:
    /// waiting for it to refill; full again in 40 s". The wait is the decision's delay.
    Paced {
        /// The limit waited for.
        limit: LimitKind,
        /// Its size, as the server stated it (or as set).
        size: u64,
        /// How long after the decision the server said the limit is full again.
        resets_in: Option<Duration>,
    },
    /// The exec moved to the next target (verdict `fallback`): "fallback: `openai/gpt-4o` open
    /// after 20 failures of 20 calls in 10 s → `anthropic/claude-sonnet-4-5`". Boxed: decisions
    /// are moved on every failure.
    Fallback(Box<Fallback>),
    /// Layer 1 stopped retrying a target whose circuit breaker is no longer closed, so that layer 2
    /// moves the exec on at once instead of after the backoff (verdict `give_up`).
    BreakerOpen {
        /// The target, `"<provider>/<model>"`.
        target: String,
        /// Its breaker's state after the failure.
        state: BreakerState,
    },
}

impl Why {
    /// The rule that judged the failure, unless a cap decided.
    pub fn rule(&self) -> Option<&Rule> {
        match self {
            Why::Judged(rule) | Why::TriesUsed { rule, .. } => Some(rule),
            Why::Refused(_)
            | Why::Compacted { .. }
            | Why::CoolingDown { .. }
            | Why::Paced { .. }
            | Why::Fallback(_)
            | Why::BreakerOpen { .. } => None,
        }
    }
}

impl fmt::Display for Why {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Why::Judged(rule) => rule.fmt(f),
            Why::TriesUsed { rule, layer: Layer::Session, limit } => {
                write!(f, "{rule}; all {limit} session retries used")
            }
            Why::TriesUsed { rule, layer: Layer::Exec, limit } => write!(f, "{rule}; all {limit} exec attempts used"),
            Why::Refused(refusal) => refusal.fmt(f),
            Why::Compacted { compactor, before, after } => {
                write!(f, "context overflow: compacted {before} → {after} messages by `{compactor}`")
            }
            Why::CoolingDown { left } => {
                write!(f, "provider cooling down, {} left (a server's Retry-After)", format_ms(millis(*left)))
            }
            Why::Paced { limit, size, resets_in } => {
                write!(f, "the {limit} rate limit ({size}) is used up: waiting for it to refill")?;
                match resets_in {
                    Some(reset) => write!(f, "; full again in {}", format_ms(millis(*reset))),
                    None => Ok(()),
                }
            }
            Why::Fallback(fallback) => fallback.fmt(f),
            Why::BreakerOpen { target, state } => {
                write!(f, "the circuit breaker of `{target}` is {state}: no retry of it, the next target is tried")
            }
        }
    }
}

/// Compares the words: `decision.reason() == "the connection failed"` (a borrowed reason against
/// borrowed words, through the standard `&A == &B` impl).
impl PartialEq<str> for Why {
    fn eq(&self, words: &str) -> bool {
        let mut rest = Rest(words);
        fmt::write(&mut rest, format_args!("{self}")).is_ok() && rest.0.is_empty()
    }
}

/// Compares the words: `*decision.reason() == "the connection failed"`.
impl PartialEq<&str> for Why {
    fn eq(&self, words: &&str) -> bool {
        *self == **words
    }
}

/// Compares two reasons, one of them borrowed: `decision.reason() == Why::..`.
impl PartialEq<Why> for &Why {
    fn eq(&self, other: &Why) -> bool {
        **self == *other
    }
}

/// What is left of the words being compared; writing a piece they do not start with fails.
struct Rest<'a>(&'a str);

impl fmt::Write for Rest<'_> {
    fn write_str(&mut self, piece: &str) -> fmt::Result {
        self.0 = self.0.strip_prefix(piece).ok_or(fmt::Error)?;
        Ok(())
    }
}
