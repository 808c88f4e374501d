//! What the layers decided about each failure, as data: the timeline of one `exec`.

mod fallback;
mod why;

use std::fmt;
use std::time::Duration;

pub use fallback::{Fallback, MoveReason};
pub use why::{Rule, Why};

use crate::message::usage::Usage;

/// Which retry layer made a decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Layer {
    /// Layer 1: `AgentSession`, retries transient model errors.
    Session,
    /// Layer 2: `Runtime::exec`, fails fast on permanent and programming errors.
    Exec,
}

impl Layer {
    /// `"session"` or `"exec"`.
    pub const fn name(self) -> &'static str {
        match self {
            Layer::Session => "session",
            Layer::Exec => "exec",
        }
    }
}

/// What a layer did about a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Verdict {
    /// Sleep, then call again.
    Retry,
    /// Layer 1 does not retry this failure; layer 2 decides.
    GiveUp,
    /// Layer 1 used all its retries; layer 2 decides.
    RetriesExhausted,
    /// Stop: the same request will fail the same way.
    FailPermanently,
    /// Stop: a programming error, returned unchanged.
    Raise,
    /// Stop: the conversation no longer fits the model's context.
    ContextOverflow,
    /// Stop: a cap (`max_calls`, `budget_ms`, `retry_after_cap_ms`) forbids the retry.
    Budget,
    /// Stop: the last exec attempt failed.
    Exhausted,
    /// The conversation overflowed the model's context and a compactor shortened it: the same turn
    /// is made again at once, with the shorter conversation.
    Compacted,
    /// Layer 1 waited before a call: a server asked this provider's callers to wait (its
    /// Retry-After, heard by an earlier call of the runtime or, with a shared store, of the fleet).
    /// No call failed; [`Decision::delay`] is the wait, [`Why::CoolingDown`] how long was left.
    CooledDown,
    /// Layer 1 waited before a call for a rate limit of the provider's scope, as the pacer said
    /// (`Runtime::with_pacing`): the requests or tokens the call needs were not there yet. No call
    /// failed; [`Decision::delay`] is the wait, [`Why::Paced`] which limit.
    Paced,
    /// Layer 2 moved the exec to the runtime's next target (`Runtime::with_fallback`), at once and
    /// without sleeping; [`Why::Fallback`] says from where, to where and why.
    Fallback,
}

impl Verdict {
    /// The snake_case name, e.g. `"fail_permanently"`.
    pub const fn name(self) -> &'static str {
        match self {
            Verdict::Retry => "retry",
            Verdict::GiveUp => "give_up",
            Verdict::RetriesExhausted => "retries_exhausted",
            Verdict::FailPermanently => "fail_permanently",
            Verdict::Raise => "raise",
            Verdict::ContextOverflow => "context_overflow",
            Verdict::Budget => "budget",
            Verdict::Exhausted => "exhausted",
            Verdict::Compacted => "compacted",
            Verdict::CooledDown => "cooled_down",
            Verdict::Paced => "paced",
            Verdict::Fallback => "fallback",
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A callback that sees every decision of both layers as it is made (`Runtime::with_observer`).
pub type Observer = dyn Fn(&Decision) + Send + Sync;

/// One decision of one layer about one failure, or about a wait before a call
/// ([`Verdict::CooledDown`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// The layer that decided.
    pub layer: Layer,
    /// The exec attempt (from 1) the failure belongs to.
    pub attempt: u32,
    /// The model call (from 1, across both layers) that failed.
    pub call: u32,
    /// The failure, as `"<Kind>: <text>"`; for [`Verdict::CooledDown`], `"Cooldown: ..."` (no call
    /// failed).
    pub error: String,
    /// The tokens the failed call used, when the server reported them.
    pub usage: Option<Usage>,
    /// What the layer did.
    pub verdict: Verdict,
    /// Why: the rule that decided, e.g. `matched retry pattern "rate.?limit"`, or the cap that
    /// refused the retry.
    pub reason: Why,
    /// The sleep before the next call, when the verdict is [`Verdict::Retry`] or
    /// [`Verdict::CooledDown`].
    pub delay: Option<Duration>,
    /// Time since the exec started, when the decision was made.
    pub at: Duration,
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "[{:>7.3} s] {:<7} attempt {} call {}: {} -> {} ({})",
            self.at.as_secs_f64(),
            self.layer.name(),
            self.attempt,
            self.call,
            self.error,
            self.verdict,
            self.reason
        )?;
        if let Some(delay) = self.delay {
            write!(f, ", sleeping {} ms", delay.as_millis())?;
        }
        Ok(())
    }
}
