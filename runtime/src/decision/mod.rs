//! What the layers decided about each failure, as data: the timeline of one `exec`.

mod moved;
mod why;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

pub use moved::{Fallback, MoveReason};
pub use why::{Rule, Why};

use crate::message::usage::Usage;

/// Which retry layer made a decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Layer {
    /// Layer 1, the session retry: retries transient model errors within one exec attempt.
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
    /// Stop: a cap of the exec (`max_calls`, `budget_ms`, `retry_after_cap_ms`) or the shared state
    /// (the retry quota, an open breaker, the pacer, a cooldown) refuses the next call.
    Refused,
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
    /// (`RuntimeBuilder::with_pacing`): the requests or tokens the call needs were not there yet. No call
    /// failed; [`Decision::delay`] is the wait, [`Why::Paced`] which limit.
    Paced,
    /// Layer 2 moved the exec to the runtime's next target (`RuntimeBuilder::with_fallback`), at once and
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
            Verdict::Refused => "refused",
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

/// A callback that sees every decision of both layers as it is made (`RuntimeBuilder::with_observer`).
pub type Observer = dyn Fn(&Decision) + Send + Sync;

/// One decision of one layer about one failure, or about a wait before a call
/// ([`Verdict::CooledDown`]). Read it with its accessors; `Display` gives the timeline's line.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Decision {
    pub(crate) layer: Layer,
    pub(crate) attempt: u32,
    pub(crate) call: u32,
    pub(crate) error: String,
    pub(crate) usage: Option<Usage>,
    pub(crate) verdict: Verdict,
    pub(crate) reason: Why,
    pub(crate) delay: Option<Duration>,
    pub(crate) at: Duration,
    /// Filled in when the exec records it ([`Decision::exec_id`]).
    pub(crate) exec_id: u64,
    pub(crate) function: Option<&'static str>,
    pub(crate) target: Option<Arc<String>>,
}

impl Decision {
    /// A decision made by hand, e.g. to test an observer or a journal: `layer` decided `verdict` for
    /// `reason` about the failure `error` of model call `call` of exec attempt `attempt`, `at` after
    /// its exec began. It has no usage, no delay ([`Decision::with_delay`]) and belongs to no exec,
    /// function or target.
    pub fn new(
        layer: Layer,
        attempt: u32,
        call: u32,
        error: impl Into<String>,
        verdict: Verdict,
        reason: Why,
        at: Duration,
    ) -> Self {
        Self {
            layer,
            attempt,
            call,
            error: error.into(),
            usage: None,
            verdict,
            reason,
            delay: None,
            at,
            exec_id: 0,
            function: None,
            target: None,
        }
    }

    /// With the sleep before the next call.
    pub fn with_delay(mut self, delay: Duration) -> Self {
        self.delay = Some(delay);
        self
    }

    /// With the tokens the failed call used.
    pub fn with_usage(mut self, usage: Usage) -> Self {
        self.usage = Some(usage);
        self
    }

    /// The layer that decided.
    pub fn layer(&self) -> Layer {
        self.layer
    }

    /// The exec attempt (from 1) the failure belongs to.
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// The model call (from 1, across both layers and every target) that failed.
    pub fn call(&self) -> u32 {
        self.call
    }

    /// The failure, as `"<Kind>: <text>"`; for [`Verdict::CooledDown`], `"Cooldown: ..."` and for
    /// [`Verdict::Paced`], `"RateLimit: ..."` (no call failed).
    pub fn error(&self) -> &str {
        &self.error
    }

    /// The tokens the failed call used, when the server reported them.
    pub fn usage(&self) -> Option<Usage> {
        self.usage
    }

    /// What the layer did.
    pub fn verdict(&self) -> Verdict {
        self.verdict
    }

    /// Why: the rule that decided, e.g. `matched retry pattern "rate.?limit"`, or the cap that
    /// refused the retry.
    pub fn reason(&self) -> &Why {
        &self.reason
    }

    /// The sleep before the next call, when the verdict is [`Verdict::Retry`],
    /// [`Verdict::CooledDown`] or [`Verdict::Paced`].
    pub fn delay(&self) -> Option<Duration> {
        self.delay
    }

    /// Time since the exec started, when the decision was made.
    pub fn at(&self) -> Duration {
        self.at
    }

    /// The exec (or resilient call) the decision belongs to: a number unique in this process, the
    /// same as its [`Reply::exec_id`](crate::Reply::exec_id) or
    /// [`ExecError::exec_id`](crate::ExecError::exec_id), so that the decisions of concurrent
    /// execs seen by one observer can be told apart.
    pub fn exec_id(&self) -> u64 {
        self.exec_id
    }

    /// The agent function whose exec decided, if it came from one (`#[agentic_function]`).
    pub fn function(&self) -> Option<&'static str> {
        self.function
    }

    /// The target the failed call went to, as [`Runtime::targets`](crate::Runtime::targets) names
    /// it (e.g. `openai/gpt-4o-mini`); `None` for a resilient call, which has no provider.
    pub fn target(&self) -> Option<&str> {
        self.target.as_deref().map(String::as_str)
    }
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
