//! One deadline and one call counter shared by both layers of one `exec`: its budget.

use crate::storm::{Bound, Refusal};

use std::time::Duration;

use tokio::time::Instant;

use crate::policy::RetryPolicy;
use crate::policy::rules::{format_ms, millis};

/// The running budget of one exec. Both layers ask it before every retry, so a retry happens only
/// when it fits: `now + delay` before the exec's deadline (`budget_ms`) and the turn's
/// (`turn_timeout_ms`), calls below `max_calls`, the server's wait below its cap.
///
/// It borrows the policy rather than copying it: it is built on every call, success path included.
///
/// Its clock is read lazily: the exec's start is the moment its first call first waits (the call's
/// own reading, [`Budget::start_clock_at`]), or the moment a failure, a backoff, a cooldown or a
/// tool turn needs a time, whichever comes first. An exec whose calls all finish without waiting
/// reads no clock: the time the clock could not see is not counted (its elapsed time is zero).
#[derive(Debug)]
pub(crate) struct Budget<'p> {
    /// `None` until the clock is first read.
    clock: Option<Clock>,
    policy: &'p RetryPolicy,
    calls: u32,
    /// The calls made before the current model turn began.
    calls_before_turn: u32,
    /// Boxed: every exec's future holds a budget, and a refusal is rare.
    stopped_by: Option<Box<Refusal>>,
}

/// When the exec started, and its deadlines.
#[derive(Debug, Clone, Copy)]
struct Clock {
    start: Instant,
    deadline: Option<Instant>,
    turn_deadline: Option<Instant>,
}

impl Clock {
    /// The clock of an exec that started at `start` (its first model turn starts then too).
    #[inline]
    fn at(policy: &RetryPolicy, start: Instant) -> Self {
        Self {
            start,
            deadline: policy.budget().and_then(|budget| start.checked_add(budget)),
            turn_deadline: start.checked_add(policy.turn_timeout()),
        }
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
}

/// The time one model call may take, and what sets it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CallLimit {
    /// When the call runs out; `None` when the limit counts from the call's first wait (the exec's
    /// clock was not read yet), which sets it.
    pub(crate) at: Option<Instant>,
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

    /// When the call's limit began to count, if it was set.
    pub(crate) fn start(&self) -> Option<Instant> {
        self.at?.checked_sub(self.limit)
    }
}

/// A call's time limit and what sets it: `timeout`, unless the time `left` before the nearest
/// deadline is shorter. The one place the rule is written, for exec's calls and resilient attempts.
#[inline]
pub(crate) fn limit_within(timeout: Duration, left: Option<(Duration, Bound)>) -> (Duration, Bound) {
    match left {
        Some((left, bound)) if left < timeout => (left, bound),
        _ => (timeout, Bound::Call),
    }
}

/// The first call's limit under `policy`, before any time has passed: `timeout_ms` within the
/// nearest of `budget_ms` and `turn_timeout_ms`. The same rule as [`Budget::call_limit`] without
/// the deadlines, for the first call of an exec and a resilient call's first attempt.
#[inline]
pub(crate) fn first_call_limit(policy: &RetryPolicy) -> Duration {
    first_limit(policy).0
}

/// [`first_call_limit`] and the bound that sets it.
#[inline]
fn first_limit(policy: &RetryPolicy) -> (Duration, Bound) {
    let turn = policy.turn_timeout();
    let nearest = match policy.budget() {
        Some(budget) if budget <= turn => (budget, Bound::Budget),
        _ => (turn, Bound::Turn),
    };
    limit_within(policy.timeout(), Some(nearest))
}

impl<'p> Budget<'p> {
    /// The budget of an exec that starts now; its clock is read later (see [`Budget`]).
    #[inline]
    pub(crate) fn new(policy: &'p RetryPolicy) -> Self {
        Self { clock: None, policy, calls: 0, calls_before_turn: 0, stopped_by: None }
    }

    /// The budget of an exec that started at `start` (its first model turn starts then too).
    #[inline]
    pub(crate) fn started_at(policy: &'p RetryPolicy, start: Instant) -> Self {
        Self { clock: Some(Clock::at(policy, start)), ..Self::new(policy) }
    }

    /// Starts the clock now, unless it was started.
    #[inline]
    pub(crate) fn start_clock(&mut self) {
        if self.clock.is_none() {
            self.start_clock_at(Instant::now());
        }
    }

    /// Starts the clock at `start` (a call's first wait), unless it was started.
    pub(crate) fn start_clock_at(&mut self, start: Instant) {
        if self.clock.is_none() {
            self.clock = Some(Clock::at(self.policy, start));
        }
    }

    /// The clock, as it is or as it would be if it started now.
    fn clock_or_now(&self) -> Clock {
        self.clock.unwrap_or_else(|| Clock::at(self.policy, Instant::now()))
    }

    /// A new model turn starts now (after the model asked for tools): `turn_timeout_ms` counts anew.
    pub(crate) fn start_turn(&mut self) {
        let now = Instant::now();
        let mut clock = self.clock.unwrap_or_else(|| Clock::at(self.policy, now));
        clock.turn_deadline = now.checked_add(self.policy.turn_timeout());
        self.clock = Some(clock);
        self.calls_before_turn = self.calls;
    }

    /// Counts a model call and returns its number (from 1).
    pub(crate) fn start_call(&mut self) -> u32 {
        // Saturating: a durable run's journal may say any count (docs/design.md §24).
        self.calls = self.calls.saturating_add(1);
        self.calls
    }

    /// A durable run's step replayed from its journal (docs/design.md §24): the exec's calls are
    /// `calls` after it, and the `took` it took in the process that made it counts against the
    /// exec's deadlines as if it had passed here.
    pub(crate) fn replayed(&mut self, calls: u32, took: Duration) {
        self.calls = self.calls.max(calls);
        self.start_clock();
        if let Some(clock) = &mut self.clock {
            let earlier = |at: Instant| at.checked_sub(took).unwrap_or(at);
            clock.deadline = clock.deadline.map(earlier);
            clock.turn_deadline = clock.turn_deadline.map(earlier);
            clock.start = clock.start.checked_sub(took).unwrap_or(clock.start);
        }
    }

    /// Model calls so far.
    pub(crate) fn calls(&self) -> u32 {
        self.calls
    }

    /// Time since the exec started; zero while the clock was not read (nothing the clock could see
    /// took time).
    pub(crate) fn elapsed(&self) -> Duration {
        self.clock.map_or(Duration::ZERO, |clock| clock.start.elapsed())
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
    /// one reading of the clock; before the clock is read, the whole of the nearest bound is left,
    /// and the limit counts from the call's first wait (no reading now). `None` only when the limit
    /// is past what the clock can represent (then no timer is set, as in `tokio::time::timeout`).
    pub(crate) fn call_limit(&self) -> Option<CallLimit> {
        let Some(clock) = self.clock else {
            let (limit, bound) = first_limit(self.policy);
            return Some(CallLimit { at: None, limit, bound, setting_ms: self.setting_ms(bound) });
        };
        let now = Instant::now();
        let left = clock.nearest_deadline().map(|(deadline, bound)| (deadline.saturating_duration_since(now), bound));
        let (limit, bound) = limit_within(self.policy.timeout(), left);
        Some(CallLimit { at: Some(now.checked_add(limit)?), limit, bound, setting_ms: self.setting_ms(bound) })
    }

    /// The wait before the next call, or why no next call may be made. `computed` is the schedule's
    /// delay or, when the server named one, its wait jittered above it (`Schedule::wait`), never below
    /// the hint; a hint above `retry_after_cap_ms` or past a deadline ends the exec.
    pub(crate) fn plan_retry(&mut self, computed: Duration, hint: Option<Duration>) -> Result<Duration, Refusal> {
        match self.refusal(computed, hint) {
            None => Ok(computed.max(hint.unwrap_or(Duration::ZERO))),
            Some(refusal) => Err(self.refuse(refusal)),
        }
    }

    fn refusal(&self, computed: Duration, hint: Option<Duration>) -> Option<Refusal> {
        // Computed on the failure path only: the success path never needs the cap. `max_calls`
        // counts the exec's calls; without it, the cap is the layers' own product, which bounds
        // one model turn (each tool turn's calls start from 0 against it, as its deadline does).
        match self.policy.values().max_calls {
            Some(cap) if self.calls >= cap => {
                return Some(Refusal::MaxCalls { cap: u64::from(cap), calls: self.calls });
            }
            Some(_) => {}
            None => {
                let cap = self.policy.worst_case_calls();
                if u64::from(self.calls - self.calls_before_turn) >= cap {
                    return Some(Refusal::MaxCalls { cap, calls: self.calls });
                }
            }
        }
        let cap = self.policy.retry_after_cap();
        if let Some(asked) = hint.filter(|hint| *hint > cap) {
            return Some(Refusal::RetryAfterCap { asked, cap });
        }
        let wait = computed.max(hint.unwrap_or(Duration::ZERO));
        self.deadline_refusal(wait, hint.is_some())
    }

    /// Why a call lost with its process (a durable run's, docs/design.md §24) may not be made
    /// again: the refusal a retry would meet now (the call cap, then the deadlines).
    pub(crate) fn retry_refusal(&self) -> Option<Refusal> {
        self.refusal(Duration::ZERO, None)
    }

    /// Why a call may not start after `wait`: it would start at or past the nearest deadline.
    fn deadline_refusal(&self, wait: Duration, requested_by_server: bool) -> Option<Refusal> {
        let (deadline, bound) = self.clock_or_now().nearest_deadline()?;
        let now = Instant::now();
        if now.checked_add(wait).is_none_or(|resume| resume >= deadline) {
            return Some(Refusal::Deadline {
                bound,
                setting_ms: self.setting_ms(bound),
                wait,
                left: deadline.saturating_duration_since(now),
                requested_by_server,
            });
        }
        None
    }

    /// Why the scope's cooldown, `left` more, may not be waited ([`Refusal::Cooldown`]): it is
    /// longer than `retry_after_cap_ms`, or the call after it would start at or past the nearest
    /// deadline.
    pub(crate) fn cooldown_refusal(&self, left: Duration) -> Option<Refusal> {
        let cap = self.policy.retry_after_cap();
        let cause =
            if left > cap { Refusal::RetryAfterCap { asked: left, cap } } else { self.deadline_refusal(left, true)? };
        Some(Refusal::Cooldown { left, cause: Box::new(cause) })
    }

    /// Why a call the retries did not plan (one after a compaction, or a compactor's) may not start
    /// now: the `max_calls` set, or a deadline. Not the policy's worst case of calls, which counts
    /// the retries' calls only.
    pub(crate) fn extra_call_refusal(&self) -> Option<Refusal> {
        if let Some(cap) = self.policy.values().max_calls {
            if self.calls >= cap {
                return Some(Refusal::MaxCalls { cap: u64::from(cap), calls: self.calls });
            }
        }
        self.deadline_refusal(Duration::ZERO, false)
    }

    /// Records a refusal (this budget's, or the retry quota's) as what stopped the exec, and returns it.
    pub(crate) fn refuse(&mut self, refusal: Refusal) -> Refusal {
        self.stopped_by = Some(Box::new(refusal.clone()));
        refusal
    }

    /// The nearest deadline (the exec's or the turn's), as it is or as it would be if the clock
    /// started now, with the bound that sets it and that bound's setting in milliseconds.
    #[cfg(feature = "tower")]
    pub(crate) fn deadline(&self) -> Option<(Instant, Bound, u64)> {
        let (at, bound) = self.clock_or_now().nearest_deadline()?;
        Some((at, bound, self.setting_ms(bound)))
    }

    /// The time left before the nearest deadline, as it is or as it would be if the clock started
    /// now (no reading is kept).
    pub(crate) fn time_left(&self) -> Option<Duration> {
        let (deadline, _) = self.clock_or_now().nearest_deadline()?;
        Some(deadline.saturating_duration_since(Instant::now()))
    }

    /// The exec moved to another target (`RuntimeBuilder::with_fallback`): the default call cap (the
    /// layers' product, when `max_calls` is not set) counts that target's calls from here, as it
    /// does a new model turn's. A set `max_calls` and the deadlines stay the exec's.
    pub(crate) fn start_target(&mut self) {
        self.calls_before_turn = self.calls;
    }

    /// Why a cap refused a retry in this exec, if one did (not taken).
    pub(crate) fn stopped_by(&self) -> Option<&Refusal> {
        self.stopped_by.as_deref()
    }

    /// Why a cap refused a retry in this exec, if one did; taken once.
    pub(crate) fn take_stopped_by(&mut self) -> Option<Refusal> {
        self.stopped_by.take().map(|refusal| *refusal)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_clock_is_read_when_a_call_first_waits_or_a_failure_needs_it() {
        let policy = RetryPolicy::new().with_budget_ms(Some(60_000));
        let mut budget = Budget::new(&policy);
        tokio::time::advance(Duration::from_secs(5)).await;
        // Nothing read the clock: nothing it could see took time, and the whole bound is left.
        assert_eq!(budget.elapsed(), Duration::ZERO);
        let first = budget.call_limit().unwrap();
        assert_eq!((first.at, first.limit, first.bound), (None, Duration::from_secs(60), Bound::Budget));
        // The first call's first wait starts it: its limit counts from there.
        let waited = Instant::now();
        budget.start_clock_at(waited);
        tokio::time::advance(Duration::from_secs(2)).await;
        budget.start_clock_at(Instant::now());
        assert_eq!(budget.elapsed(), Duration::from_secs(2), "started once");
        let next = budget.call_limit().unwrap();
        assert_eq!((next.at, next.limit), (Some(waited + Duration::from_secs(60)), Duration::from_secs(58)));
        assert_eq!(next.start(), Some(Instant::now()));
    }
}
