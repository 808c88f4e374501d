//! One deadline and one call counter shared by both layers of one `exec`,
//! and the stores a fleet can share its retry bucket and cooldowns through.

mod quota;
#[cfg(feature = "redis")]
pub mod redis;
pub mod store;

pub(crate) use quota::Governor;
pub use quota::RetryQuota;

use std::time::Duration;

use tokio::time::Instant;

use crate::policy::RetryPolicy;
use crate::policy::rules::{format_ms, millis};

/// The running budget of one exec. Both layers ask it before every retry, so a retry happens only
/// when it fits: `now + delay` before the exec's deadline (`budget_ms`) and the turn's
/// (`turn_timeout_ms`), calls below `max_calls`, the server's wait below its cap.
///
/// It borrows the policy rather than copying it: it is built on every call, success path included.
#[derive(Debug)]
pub(crate) struct Budget<'p> {
    start: Instant,
    deadline: Option<Instant>,
    turn_deadline: Option<Instant>,
    policy: &'p RetryPolicy,
    calls: u32,
    stopped_by: Option<String>,
}

/// Which bound limits a model call's time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Bound {
    /// `timeout_ms`.
    Call,
    /// The exec's deadline, `budget_ms`.
    Budget,
    /// The model turn's deadline, `turn_timeout_ms`.
    Turn,
}

impl Bound {
    /// The policy key that sets this bound.
    fn key(self) -> &'static str {
        match self {
            Bound::Call => "timeout_ms",
            Bound::Budget => "budget_ms",
            Bound::Turn => "turn_timeout_ms",
        }
    }
}

/// The time one model call may take, and what sets it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CallLimit {
    /// When the call runs out.
    pub(crate) at: Instant,
    /// How long that is from the call's start.
    pub(crate) limit: Duration,
    /// The bound that set it.
    pub(crate) bound: Bound,
    /// That bound's setting, in milliseconds.
    pub(crate) setting_ms: u64,
}

impl CallLimit {
    /// What a call cut at this limit says: "model call timed out after 600 s (`timeout_ms` = 600000)".
    pub(crate) fn timed_out(&self) -> String {
        let after = format_ms(millis(self.limit));
        let at = match self.bound {
            Bound::Call => "",
            Bound::Budget => ", at the exec's deadline",
            Bound::Turn => ", at the model turn's deadline",
        };
        format!("model call timed out after {after}{at} (`{}` = {})", self.bound.key(), self.setting_ms)
    }
}

impl<'p> Budget<'p> {
    // Inlined into the generic callers: built in place instead of returned and copied.
    #[inline]
    pub(crate) fn new(policy: &'p RetryPolicy) -> Self {
        Self::started_at(policy, Instant::now())
    }

    /// The budget of an exec that started at `start` (its first model turn starts then too).
    #[inline]
    pub(crate) fn started_at(policy: &'p RetryPolicy, start: Instant) -> Self {
        Self {
            start,
            deadline: policy.budget().and_then(|budget| start.checked_add(budget)),
            turn_deadline: start.checked_add(policy.turn_timeout()),
            policy,
            calls: 0,
            stopped_by: None,
        }
    }

    /// A new model turn starts now (after the model asked for tools): `turn_timeout_ms` counts anew.
    pub(crate) fn start_turn(&mut self) {
        self.turn_deadline = Instant::now().checked_add(self.policy.turn_timeout());
    }

    /// Counts a model call and returns its number (from 1).
    pub(crate) fn start_call(&mut self) -> u32 {
        self.calls += 1;
        self.calls
    }

    /// Model calls so far.
    pub(crate) fn calls(&self) -> u32 {
        self.calls
    }

    /// Time since the exec started.
    pub(crate) fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }

    /// The earliest deadline in force (the exec's or the turn's) and what it is.
    fn nearest_deadline(&self) -> Option<(Instant, Bound)> {
        match (self.deadline, self.turn_deadline) {
            (Some(exec), Some(turn)) if turn < exec => Some((turn, Bound::Turn)),
            (Some(exec), _) => Some((exec, Bound::Budget)),
            (None, Some(turn)) => Some((turn, Bound::Turn)),
            (None, None) => None,
        }
    }

    fn setting_ms(&self, bound: Bound) -> u64 {
        let values = self.policy.values();
        match bound {
            Bound::Call => values.timeout_ms(),
            Bound::Budget => values.budget_ms().unwrap_or(u64::MAX),
            Bound::Turn => values.turn_timeout_ms(),
        }
    }

    /// The next call's limit, `min(timeout_ms, deadline - now)`, and the bound that sets it, from
    /// one reading of the clock. `None` only when the limit is past what the clock can represent
    /// (then no timer is set, as in `tokio::time::timeout`).
    pub(crate) fn call_limit(&self) -> Option<CallLimit> {
        let now = Instant::now();
        let timeout = self.policy.timeout();
        let (limit, bound) = match self.nearest_deadline() {
            Some((deadline, bound)) if deadline.saturating_duration_since(now) < timeout => {
                (deadline.saturating_duration_since(now), bound)
            }
            _ => (timeout, Bound::Call),
        };
        Some(CallLimit { at: now.checked_add(limit)?, limit, bound, setting_ms: self.setting_ms(bound) })
    }

    /// The wait before the next call, or why no next call may be made. The server's hint is a floor on
    /// the computed delay; a hint above `retry_after_cap_ms` or past a deadline ends the exec.
    pub(crate) fn plan_retry(&mut self, computed: Duration, hint: Option<Duration>) -> Result<Duration, String> {
        let refusal = self.refusal(computed, hint);
        match refusal {
            None => Ok(computed.max(hint.unwrap_or(Duration::ZERO))),
            Some(why) => {
                self.stopped_by = Some(why.clone());
                Err(why)
            }
        }
    }

    fn refusal(&self, computed: Duration, hint: Option<Duration>) -> Option<String> {
        // Computed on the failure path only: the success path never needs the cap.
        let call_cap = self.policy.worst_case_calls();
        if u64::from(self.calls) >= call_cap {
            let cap = self.policy.values().max_calls.map_or(call_cap, u64::from);
            return Some(format!("`max_calls` ({cap}) reached after {} model calls", self.calls));
        }
        let retry_after_cap = self.policy.retry_after_cap();
        if let Some(hint) = hint.filter(|hint| *hint > retry_after_cap) {
            let asked = match millis(hint) {
                u64::MAX => "longer than a clock can count".to_owned(),
                ms => format_ms(ms),
            };
            return Some(format!(
                "server asked to wait {asked}; cap is {} (`retry_after_cap_ms`)",
                format_ms(millis(retry_after_cap))
            ));
        }
        let delay = computed.max(hint.unwrap_or(Duration::ZERO));
        let (deadline, bound) = self.nearest_deadline()?;
        let now = Instant::now();
        if now.checked_add(delay).is_none_or(|resume| resume >= deadline) {
            let left = format_ms(millis(deadline.saturating_duration_since(now)));
            let wait = format_ms(millis(delay));
            let asked = if hint.is_some_and(|hint| hint >= computed) { "the server's requested" } else { "the" };
            return Some(format!(
                "`{}` ({}) would run out: {asked} wait of {wait} does not fit in the {left} left",
                bound.key(),
                self.setting_ms(bound)
            ));
        }
        None
    }

    /// Records a refusal decided elsewhere (the retry bucket) and returns it.
    pub(crate) fn refuse(&mut self, why: String) -> String {
        self.stopped_by = Some(why.clone());
        why
    }

    /// `wait`, cut to `retry_after_cap_ms` and to the time left before the nearest deadline.
    pub(crate) fn bound_wait(&self, wait: Duration) -> Duration {
        let wait = wait.min(self.policy.retry_after_cap());
        match self.nearest_deadline() {
            Some((deadline, _)) => wait.min(deadline.saturating_duration_since(Instant::now())),
            None => wait,
        }
    }

    /// Why a cap refused a retry in this exec, if one did; taken once.
    pub(crate) fn take_stopped_by(&mut self) -> Option<String> {
        self.stopped_by.take()
    }
}
