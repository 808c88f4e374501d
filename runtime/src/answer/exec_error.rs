//! The error of one `exec`: why it gave up, every attempt, each decision and what stopped it.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::decision::Decision;
use crate::error::{ModelError, PolicyError};
use crate::message::usage::{Usage, UsageTotals};
use crate::storm::Refusal;

/// Why an `exec` gave up. It serializes (serde) as its [`name`](ExecErrorKind::name).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ExecErrorKind {
    /// A failure that the same request will hit again (bad key, 4xx, quota): stopped after it.
    Permanent,
    /// Every exec attempt failed with retryable errors.
    Exhausted,
    /// A programming error (misuse of the runtime, an invalid policy): returned at once, unchanged.
    Programming,
    /// The conversation does not fit the model's context: retrying cannot help; compact it.
    ContextOverflow,
    /// A call the retries allowed was refused: by a cap of the exec's budget (`max_calls`,
    /// `budget_ms`, the turn's deadline), by `retry_after_cap_ms`, or by the state the runtime
    /// shares across execs (its retry quota, an open breaker, the pacer, a cooldown).
    /// [`ExecError::stopped_by`] says which.
    Refused,
    /// Every reply was rejected by the validator.
    InvalidResult,
    /// The model kept asking for tools past `max_iterations` (not retried).
    MaxIterations,
    /// A spend limit of the exec (`UsageLimits`: tokens, tool calls, dollars) would have been
    /// passed: stopped before the call or tool turn that would pass it. [`ExecError::refusal`] says
    /// which limit, what was spent and what the next step needed.
    UsageLimit,
    /// A durable run's step, replayed after a restart, no longer matches what its journal recorded
    /// (the code or the prompt changed between the two processes): the exec stops rather than mix
    /// two runs (docs/design.md §24). [`ExecError::attempt_errors`] names the step and what differs.
    ReplayMismatch,
}

impl ExecErrorKind {
    /// The snake_case name, e.g. `"context_overflow"`.
    pub const fn name(self) -> &'static str {
        match self {
            ExecErrorKind::Permanent => "permanent",
            ExecErrorKind::Exhausted => "exhausted",
            ExecErrorKind::Programming => "programming",
            ExecErrorKind::ContextOverflow => "context_overflow",
            ExecErrorKind::Refused => "refused",
            ExecErrorKind::InvalidResult => "invalid_result",
            ExecErrorKind::MaxIterations => "max_iterations",
            ExecErrorKind::UsageLimit => "usage_limit",
            ExecErrorKind::ReplayMismatch => "replay_mismatch",
        }
    }
}

impl fmt::Display for ExecErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The error of one `exec`: why it gave up, every attempt, and what it cost.
///
/// Its Display is the attempt list of docs/design.md §5, prefixed by the agent function's name when
/// known: the attempts are layer 2's, each holding layer 1's calls (the model calls count both):
///
/// ```text
/// summarize: exec() failed after 3 attempts (5 model calls):
/// Attempt 1: RateLimitError: 429 Too Many Requests
/// Attempt 2: ServiceUnavailableError: 503
/// Attempt 3: RateLimitError: 429 Too Many Requests
/// ```
///
/// A programming error displays as the original error, unchanged.
#[derive(Clone)]
pub struct ExecError {
    /// One box: an exec's `Result<Reply, ExecError>` is then no larger than its `Reply`, and the
    /// success path moves that much less (`benches/compare.rs`).
    inner: Box<fields::ExecError>,
}

// Named as the public type, so that the derived `Debug` reads as before: `ExecError { kind, .. }`.
mod fields {
    use super::*;

    #[derive(Debug, Clone)]
    pub(super) struct ExecError {
        pub(super) kind: ExecErrorKind,
        pub(super) function: Option<&'static str>,
        pub(super) attempts: Vec<String>,
        /// The exec's number in the process; `None` before it started.
        pub(super) exec_id: Option<u64>,
        pub(super) decisions: Vec<Decision>,
        pub(super) calls: u32,
        pub(super) elapsed: Duration,
        /// Which cap refused the next attempt, as data.
        pub(super) refusal: Option<Refusal>,
        /// `refusal` in words, for [`ExecError::stopped_by`].
        pub(super) stopped_by: Option<String>,
        pub(super) usage: Option<Box<UsageTotals>>,
        pub(super) source: Option<Source>,
        /// The target of the last attempt, for a runtime with fallbacks.
        pub(super) target: Option<Arc<String>>,
    }
}

impl fmt::Debug for ExecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.inner, f)
    }
}

#[derive(Debug, Clone)]
enum Source {
    Model(ModelError),
    Policy(PolicyError),
}

impl ExecError {
    fn boxed(fields: fields::ExecError) -> Self {
        Self { inner: Box::new(fields) }
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        kind: ExecErrorKind,
        function: Option<&'static str>,
        attempts: Vec<String>,
        decisions: Vec<Decision>,
        calls: u32,
        elapsed: Duration,
        refusal: Option<Refusal>,
        source: Option<ModelError>,
    ) -> Self {
        let stopped_by = refusal.as_ref().map(ToString::to_string);
        Self::boxed(fields::ExecError {
            kind,
            function,
            attempts,
            decisions,
            calls,
            elapsed,
            refusal,
            stopped_by,
            usage: None,
            source: source.map(Source::Model),
            target: None,
            exec_id: None,
        })
    }

    /// An answer that passed the exec's checks and still did not parse as the type asked for.
    pub(crate) fn unparsable(function: Option<&'static str>, why: String, reply: &crate::Reply) -> Self {
        let attempt = format!("InvalidResult: {why}");
        Self::new(
            ExecErrorKind::InvalidResult,
            function,
            vec![attempt],
            Vec::new(),
            reply.calls(),
            reply.elapsed(),
            None,
            None,
        )
        .with_exec_id(reply.exec_id())
    }

    /// The exec's number in the process.
    pub(crate) fn with_exec_id(mut self, exec_id: u64) -> Self {
        self.inner.exec_id = Some(exec_id);
        self
    }

    /// The exec's number in this process, as its decisions' [`Decision::exec_id`]; `None` for an
    /// exec that failed before it started (an invalid policy, an unset toolbox).
    pub fn exec_id(&self) -> Option<u64> {
        self.inner.exec_id
    }

    pub(crate) fn with_usage(mut self, usage: Option<Box<UsageTotals>>) -> Self {
        self.inner.usage = usage;
        self
    }

    pub(crate) fn with_target(mut self, target: Option<Arc<String>>) -> Self {
        self.inner.target = target;
        self
    }

    /// The target of the exec's last attempt, `"<provider>/<model>"`, for a runtime with fallbacks
    /// (`RuntimeBuilder::with_fallback`); `None` for a runtime with one provider. The moves between targets
    /// are decisions with verdict `fallback`.
    pub fn target(&self) -> Option<&str> {
        self.inner.target.as_deref().map(String::as_str)
    }

    /// The tokens of every call of the exec that reported usage (all spent without an answer, but
    /// for the tool turns before the failure).
    pub fn usage(&self) -> Usage {
        self.inner.usage.as_ref().map_or(Usage::ZERO, |totals| totals.total)
    }

    /// What the exec spent against its spend limits before it stopped (tokens, tool calls,
    /// dollars), failed calls included; `None` for an exec without limits. With kind
    /// [`ExecErrorKind::UsageLimit`], [`ExecError::refusal`] says which limit stopped it.
    pub fn spent(&self) -> Option<crate::spend::Spent> {
        self.inner.usage.as_ref().and_then(|totals| totals.spent)
    }

    /// The error of an exec whose function's `tools = PATH` names a `OnceLock` that is not set.
    pub(crate) fn tools_unset(function: Option<&'static str>) -> Self {
        let why = "the toolbox named by `tools = ...` is an unset `OnceLock`: set it before the first exec";
        Self::before_any_call(function, vec![why.to_owned()], None)
    }

    pub(crate) fn invalid_policy(function: Option<&'static str>, error: PolicyError) -> Self {
        Self::before_any_call(function, Vec::new(), Some(Source::Policy(error)))
    }

    /// A programming error found before the exec made any call.
    fn before_any_call(function: Option<&'static str>, attempts: Vec<String>, source: Option<Source>) -> Self {
        Self::boxed(fields::ExecError {
            kind: ExecErrorKind::Programming,
            function,
            attempts,
            decisions: Vec::new(),
            calls: 0,
            elapsed: Duration::ZERO,
            refusal: None,
            stopped_by: None,
            usage: None,
            source,
            target: None,
            exec_id: None,
        })
    }

    /// Why the exec gave up.
    pub fn kind(&self) -> ExecErrorKind {
        self.inner.kind
    }

    /// The agent function's name, when the exec came from `#[agentic_function]`.
    pub fn function(&self) -> Option<&'static str> {
        self.inner.function
    }

    /// How many exec attempts (layer 2) were made, across every target: one per entry of
    /// [`ExecError::attempt_errors`]. As [`Reply::attempts`](crate::Reply::attempts) and
    /// [`Failure::attempts`](crate::resilient::Failure::attempts) count them.
    pub fn attempts(&self) -> u32 {
        u32::try_from(self.inner.attempts.len()).unwrap_or(u32::MAX)
    }

    /// One `"<Kind>: <text>"` per failed exec attempt, in order.
    pub fn attempt_errors(&self) -> &[String] {
        &self.inner.attempts
    }

    /// Every decision of both layers, in order.
    pub fn decisions(&self) -> &[Decision] {
        &self.inner.decisions
    }

    /// Model calls made across both layers and every target, as
    /// [`Reply::calls`](crate::Reply::calls) and [`Failure::calls`](crate::resilient::Failure::calls)
    /// count them.
    pub fn calls(&self) -> u32 {
        self.inner.calls
    }

    /// Time from the start of the exec to the error. The exec's clock is first read when its first
    /// call first waits, or at the first failure if no call waited before (docs/design.md §7).
    pub fn elapsed(&self) -> Duration {
        self.inner.elapsed
    }

    /// For [`ExecErrorKind::Refused`]: which cap stopped the exec, in words (the [`Refusal`]'s text).
    pub fn stopped_by(&self) -> Option<&str> {
        self.inner.stopped_by.as_deref()
    }

    /// For [`ExecErrorKind::Refused`]: which cap stopped the exec, as data.
    pub fn refusal(&self) -> Option<&Refusal> {
        self.inner.refusal.as_ref()
    }

    /// The typed failure of the last attempt, when there is one.
    pub fn model_error(&self) -> Option<&ModelError> {
        match &self.inner.source {
            Some(Source::Model(error)) => Some(error),
            _ => None,
        }
    }

    /// The policy rule that was broken, when the exec was refused for an invalid policy.
    pub fn policy_error(&self) -> Option<&PolicyError> {
        match &self.inner.source {
            Some(Source::Policy(error)) => Some(error),
            _ => None,
        }
    }
}

impl fmt::Display for ExecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.inner.kind == ExecErrorKind::Programming {
            return match (&self.inner.source, self.inner.attempts.last()) {
                (Some(Source::Policy(error)), _) => write!(f, "invalid retry policy: {error}"),
                (_, Some(original)) => f.write_str(original),
                (Some(Source::Model(error)), None) => write!(f, "{error}"),
                (None, None) => f.write_str("programming error"),
            };
        }
        if let Some(function) = self.inner.function {
            write!(f, "{function}: ")?;
        }
        match self.inner.kind {
            ExecErrorKind::Permanent => f.write_str("exec() failed permanently:")?,
            ExecErrorKind::ContextOverflow => {
                f.write_str("exec() failed: context overflow (retrying cannot help; compact the history):")?
            }
            ExecErrorKind::MaxIterations => {
                return write!(
                    f,
                    "exec() stopped: {}",
                    self.inner.attempts.first().map_or("too many tool iterations", String::as_str)
                );
            }
            ExecErrorKind::Refused => write!(
                f,
                "exec() stopped after {} attempt{}: {}:",
                self.inner.attempts.len(),
                if self.inner.attempts.len() == 1 { "" } else { "s" },
                self.inner.stopped_by.as_deref().unwrap_or("a cap forbade the next attempt")
            )?,
            // Both counts: an attempt of layer 2 holds layer 1's retried calls (3 HTTP requests can
            // be one attempt).
            _ => {
                let (attempts, calls) = (self.inner.attempts.len(), self.inner.calls);
                let plural = |count: usize| if count == 1 { "" } else { "s" };
                write!(
                    f,
                    "exec() failed after {attempts} attempt{} ({calls} model call{}):",
                    plural(attempts),
                    plural(calls as usize)
                )?
            }
        }
        for (index, attempt) in self.inner.attempts.iter().enumerate() {
            write!(f, "\nAttempt {}: {attempt}", index + 1)?;
        }
        Ok(())
    }
}

/// An exec's error serializes (serde) as its facts: the kind, the function, each attempt's error, the
/// counts, the time, what stopped it and the tokens. Its decisions and its typed cause are what this
/// process saw, and stay out (docs/design.md §24).
impl serde::Serialize for ExecError {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(serde::Serialize)]
        #[serde(rename = "ExecError")]
        struct Facts<'a> {
            kind: ExecErrorKind,
            #[serde(skip_serializing_if = "Option::is_none")]
            function: Option<&'static str>,
            attempts: &'a [String],
            calls: u32,
            elapsed_ms: u64,
            #[serde(skip_serializing_if = "Option::is_none")]
            stopped_by: Option<&'a str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            usage: Option<&'a UsageTotals>,
            #[serde(skip_serializing_if = "Option::is_none")]
            target: Option<&'a str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            exec_id: Option<u64>,
        }
        let fields = &self.inner;
        Facts {
            kind: fields.kind,
            function: fields.function,
            attempts: &fields.attempts,
            calls: fields.calls,
            elapsed_ms: crate::policy::rules::millis(fields.elapsed),
            stopped_by: fields.stopped_by.as_deref(),
            usage: fields.usage.as_deref(),
            target: fields.target.as_deref().map(String::as_str),
            exec_id: fields.exec_id,
        }
        .serialize(serializer)
    }
}

impl std::error::Error for ExecError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.inner.source {
            Some(Source::Model(error)) => Some(error),
            Some(Source::Policy(error)) => Some(error),
            None => None,
        }
    }
}

/// A runtime that could not be built is a programming error, as an invalid policy is when an exec
/// finds it: `Runtime::builder(..).build()?` works in a function that returns `ExecError`.
impl From<PolicyError> for ExecError {
    fn from(error: PolicyError) -> Self {
        Self::invalid_policy(None, error)
    }
}
