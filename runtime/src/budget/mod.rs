//! One deadline and one call counter shared by both layers of one `exec` (DESIGN.md sections 5 and 6),
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
use crate::policy::rules::format_ms;

/// The running budget of one exec. Both layers ask it before every retry, so a retry happens only
/// when it fits: `now + delay < deadline`, calls below `max_calls`, the server's wait below its cap.
///
/// It borrows the policy rather than copying it: it is built on every call, success path included.
#[derive(Debug)]
pub(crate) struct Budget<'p> {
    start: Instant,
    deadline: Option<Instant>,
    policy: &'p RetryPolicy,
    calls: u32,
    stopped_by: Option<String>,
}

impl<'p> Budget<'p> {
    // Inlined into the generic callers: built in place instead of returned and copied.
    #[inline]
    pub(crate) fn new(policy: &'p RetryPolicy) -> Self {
        Self::started_at(policy, Instant::now())
    }

    /// The budget of an exec that started at `start`.
    #[inline]
    pub(crate) fn started_at(policy: &'p RetryPolicy, start: Instant) -> Self {
        Self {
            start,
            deadline: policy.budget().and_then(|budget| start.checked_add(budget)),
            policy,
            calls: 0,
            stopped_by: None,
        }
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

    /// The next call's timeout: `min(timeout_ms, deadline - now)`.
    pub(crate) fn call_timeout(&self) -> Option<Duration> {
        let remaining = self.deadline.map(|deadline| deadline.saturating_duration_since(Instant::now()));
        match (self.policy.timeout(), remaining) {
            (Some(timeout), Some(remaining)) => Some(timeout.min(remaining)),
            (timeout, remaining) => timeout.or(remaining),
        }
    }

    /// [`Budget::call_timeout`] and the instant it runs out, from one reading of the clock, for
    /// `tokio::time::timeout_at` (`tokio::time::timeout` would read the clock again). `None` when
    /// the call has no limit.
    pub(crate) fn call_limit(&self) -> Option<(Instant, Duration)> {
        let timeout = self.policy.timeout();
        if timeout.is_none() && self.deadline.is_none() {
            return None;
        }
        let now = Instant::now();
        let remaining = self.deadline.map(|deadline| deadline.saturating_duration_since(now));
        let limit = match (timeout, remaining) {
            (Some(timeout), Some(remaining)) => timeout.min(remaining),
            (timeout, remaining) => timeout.or(remaining)?,
        };
        // A limit past what the clock can represent sets no timer, as in `tokio::time::timeout`.
        Some((now.checked_add(limit)?, limit))
    }

    /// The wait before the next call, or why no next call may be made. The server's hint is a floor on
    /// the computed delay; a hint above `retry_after_cap_ms` or past the deadline ends the exec.
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
            return Some(format!(
                "server asked to wait {}; cap is {} (`retry_after_cap_ms`)",
                format_ms(millis(hint)),
                format_ms(millis(retry_after_cap))
            ));
        }
        let delay = computed.max(hint.unwrap_or(Duration::ZERO));
        let (deadline, budget_ms) = (self.deadline?, self.policy.values().budget_ms?);
        let now = Instant::now();
        if now.checked_add(delay).is_none_or(|resume| resume >= deadline) {
            let left = format_ms(millis(deadline.saturating_duration_since(now)));
            let wait = format_ms(millis(delay));
            let asked = if hint.is_some_and(|hint| hint >= computed) { "the server's requested" } else { "the" };
            return Some(format!(
                "`budget_ms` ({budget_ms}) would run out: {asked} wait of {wait} does not fit in the {left} left"
            ));
        }
        None
    }

    /// Records a refusal decided elsewhere (the retry bucket) and returns it.
    pub(crate) fn refuse(&mut self, why: String) -> String {
        self.stopped_by = Some(why.clone());
        why
    }

    /// `wait`, cut to `retry_after_cap_ms` and to the time left before the deadline.
    pub(crate) fn bound_wait(&self, wait: Duration) -> Duration {
        let wait = wait.min(self.policy.retry_after_cap());
        match self.deadline {
            Some(deadline) => wait.min(deadline.saturating_duration_since(Instant::now())),
            None => wait,
        }
    }

    /// Why a cap refused a retry in this exec, if one did; taken once.
    pub(crate) fn take_stopped_by(&mut self) -> Option<String> {
        self.stopped_by.take()
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}
