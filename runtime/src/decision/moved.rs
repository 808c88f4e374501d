//! A move of an exec from one target to the next (`RuntimeBuilder::with_fallback`), as data: from where,
//! to where, and why (docs/design.md §10, "Fallback across targets").

use std::fmt;

use crate::decision::Rule;
use crate::storm::{BreakerState, Refusal};

/// One move of an exec to the next target (verdict [`Verdict::Fallback`](crate::decision::Verdict::Fallback)):
/// "fallback: `openai/gpt-4o` open after 20 failures of 20 calls in 10 s → `anthropic/claude-sonnet-4-5`".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fallback {
    /// The target left, `"<provider>/<model>"`.
    pub from: String,
    /// The target the exec moved to.
    pub to: String,
    /// Why the exec left `from`.
    pub because: MoveReason,
}

/// Why an exec left a target for the next one. Each is a failure the same target would repeat or
/// make the exec wait for past what it can; a short wait the layers would make anyway (a
/// Retry-After within the cap and the deadline, a transient failure with retries left) is never one.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MoveReason {
    /// The target's circuit breaker is open (or half-open with its one probe already out): it is
    /// skipped at no cost.
    BreakerOpen(BreakerState),
    /// A permanent failure of the target's own: its key refused, its quota spent, its model not
    /// found, its TLS certificate refused, its base URL answering something else.
    Permanent(Rule),
    /// The layers used the retries they had on the target for this attempt (a transient failure).
    RetriesUsed(Rule),
    /// A cap refused the wait the target asked for: a Retry-After or a cooldown longer than
    /// `retry_after_cap_ms` or the time left, or the target's retry quota is empty.
    Refused(Refusal),
    /// The next call would pass the exec's dollar limit (`max_cost_usd`) at this target's price, and
    /// fits it at the next target's: the exec moves on instead of failing.
    Cheaper(Refusal),
    /// The conversation overflowed the target's context window and the next target's is larger.
    ContextWindow {
        /// The target's context window, in tokens.
        window: u64,
        /// The next target's.
        next: u64,
    },
}

impl fmt::Display for MoveReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MoveReason::BreakerOpen(BreakerState::Open { left, opened }) => {
                write!(f, "open after {opened} ({:.1} s of its open period left)", left.as_secs_f64())
            }
            MoveReason::BreakerOpen(state) => write!(f, "{state}"),
            MoveReason::Permanent(rule) => write!(f, "failed permanently for this target ({rule})"),
            MoveReason::RetriesUsed(rule) => write!(f, "used its retries ({rule})"),
            MoveReason::Refused(refusal) => write!(f, "refused the wait ({refusal})"),
            MoveReason::Cheaper(refusal) => {
                write!(f, "is too dear for the next call ({refusal}); the next target's price fits")
            }
            MoveReason::ContextWindow { window, next } => {
                write!(f, "overflowed its context window of {window} tokens (the next holds {next})")
            }
        }
    }
}

impl fmt::Display for Fallback {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "fallback: `{}` {} → `{}`", self.from, self.because, self.to)
    }
}
