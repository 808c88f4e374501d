//! A target's breaker as its governor holds it: the state machine on this process's clock (the
//! fleet's state mirrored into it while a shared store keeps it), and the log lines and metric
//! events of its transitions.
//!
//! The log lines and `agentic.breaker.transitions` are the transitions this process's calls
//! caused (each logged once in a fleet). The `agentic.breaker.open` gauge is this process's view:
//! every change of it between closed and not closed moves the gauge, adopted ones included, so that
//! the gauge summed over one process is the number of targets it sees open or half-open, and never
//! drifts below zero when another process opened a breaker this one saw close.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

use tokio::time::Instant;

use super::breaker::{
    Admission, Breaker, BreakerSettings, BreakerState, CallOutcome, ProbeToken, Recorded, SharedAdmission,
};
use crate::policy::rules::{format_ms, millis};

/// The metric events' target and names, `observe::semconv`'s spelled out: storm control sits below
/// `observe`, whose telemetry knows the providers (whose fuzz entry points know the governor). The
/// tests below check they are `semconv`'s.
pub(super) const METRICS: &str = "agentic::metrics";
/// `semconv::BREAKER_TRANSITIONS`.
pub(super) const TRANSITIONS: &str = "agentic.breaker.transitions";
/// `semconv::BREAKER_OPEN`.
pub(super) const OPEN: &str = "agentic.breaker.open";

/// The breaker of one target of a `Runtime`.
#[derive(Debug)]
pub(crate) struct TargetBreaker {
    /// `"openai/gpt-4o-mini"`: what logs and the metric name it by.
    pub(crate) target: String,
    pub(crate) settings: BreakerSettings,
    local: Mutex<Breaker>,
    /// Whether the shared store is asked: set with a store, cleared once it says it keeps no
    /// breakers (then this process's breaker decides).
    shared: AtomicBool,
}

impl TargetBreaker {
    pub(crate) fn new(target: String, settings: BreakerSettings, shared: bool) -> Self {
        let local = Mutex::new(Breaker::new(settings, Instant::now()));
        Self { target, settings, local, shared: AtomicBool::new(shared) }
    }

    /// Whether the shared store is to be asked.
    pub(crate) fn is_shared(&self) -> bool {
        self.shared.load(Ordering::Relaxed)
    }

    /// The store keeps no breakers: this process's decides from now on.
    pub(crate) fn unshare(&self) {
        self.shared.store(false, Ordering::Relaxed);
    }

    /// This process's breaker's answer to the admission of `token`.
    pub(crate) fn admit_local(&self, token: ProbeToken) -> Admission {
        let admission = self.change(|breaker| breaker.admit(Instant::now(), token));
        if admission == Admission::Probe {
            self.half_opened();
        }
        admission
    }

    /// Counts an outcome in this process's breaker (`probe`: the call was the probe).
    pub(crate) fn record_local(&self, outcome: CallOutcome, probe: bool) {
        let recorded = self.change(|breaker| breaker.record(outcome, probe, Instant::now()));
        self.announce(recorded);
    }

    /// A call counted as answered here at its first content failed afterwards.
    pub(crate) fn amend_local_failed(&self) {
        let recorded = self.change(|breaker| breaker.amend_failed(Instant::now()));
        self.announce(recorded);
    }

    /// Gives back the probe the admission of `token` took, if it is still out: the next call here
    /// is the probe, at once.
    pub(crate) fn release_local(&self, token: ProbeToken) {
        if self.change(|breaker| breaker.release(Instant::now(), token)) {
            let target = self.target.as_str();
            tracing::info!(target = %target, "circuit breaker of {target}: its probe call reported nothing; the next call is the probe");
        }
    }

    /// The shared breaker's answer to the admission of `token`, mirrored here (a probe it took
    /// keeps the token here too). An open period is never taken as longer than the settings' (a
    /// store is input, as a server is: a stored `until` of 9e18 must not skip the target for ever).
    pub(crate) fn adopt_admission(&self, shared: SharedAdmission, token: ProbeToken) -> Admission {
        let (state, admission) = match shared {
            SharedAdmission::Probe(opened) => {
                self.change(|breaker| breaker.adopt_probe(opened, token, Instant::now()));
                self.half_opened();
                return Admission::Probe;
            }
            SharedAdmission::Call => (BreakerState::Closed, Admission::Call),
            SharedAdmission::Skip(BreakerState::Open { left, opened }) => {
                let state = BreakerState::Open { left: left.min(self.settings.open_for()), opened };
                (state, Admission::Skip(state))
            }
            SharedAdmission::Skip(state) => (state, Admission::Skip(state)),
        };
        self.change(|breaker| breaker.adopt(state, Instant::now()));
        admission
    }

    /// What an outcome did to the shared breaker, mirrored here.
    pub(crate) fn adopt_recorded(&self, recorded: Recorded) {
        let state = match recorded {
            Recorded::Unchanged => None,
            Recorded::Opened(opened) | Recorded::Reopened(opened) => {
                Some(BreakerState::Open { left: self.settings.open_for(), opened })
            }
            Recorded::Closed => Some(BreakerState::Closed),
        };
        if let Some(state) = state {
            self.change(|breaker| breaker.adopt(state, Instant::now()));
        }
        self.announce(recorded);
    }

    /// The state now, as this process last saw it.
    pub(crate) fn state(&self) -> BreakerState {
        self.lock().state(Instant::now())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Breaker> {
        self.local.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `change` on this process's breaker and moves the `agentic.breaker.open` gauge when the
    /// view went from closed to not closed or back: the one place the local state changes, so
    /// that no transition (a caused one, an adopted one, a released probe) escapes the gauge.
    fn change<T>(&self, change: impl FnOnce(&mut Breaker) -> T) -> T {
        let (was_closed, answer, is_closed) = {
            let mut breaker = self.lock();
            let was_closed = breaker.is_closed();
            let answer = change(&mut breaker);
            (was_closed, answer, breaker.is_closed())
        };
        if was_closed != is_closed {
            open_gauge(&self.target, if is_closed { -1 } else { 1 });
        }
        answer
    }

    /// Logs a transition once (in the process whose call caused it) and emits its metric events.
    fn announce(&self, recorded: Recorded) {
        let target = self.target.as_str();
        let open_for = format_ms(millis(self.settings.open_for()));
        match recorded {
            Recorded::Unchanged => return,
            Recorded::Opened(opened) => {
                tracing::warn!(target = %target, %opened, "circuit breaker of {target} open: its calls are skipped for {open_for}, after {opened}");
            }
            Recorded::Reopened(_) => {
                tracing::warn!(target = %target, "circuit breaker of {target} open again: its probe call failed; skipped for {open_for}");
            }
            Recorded::Closed => {
                tracing::info!(target = %target, "circuit breaker of {target} closed: its probe call was answered");
            }
        }
        let state = match recorded {
            Recorded::Closed => "closed",
            _ => "open",
        };
        transition(target, state);
    }

    fn half_opened(&self) {
        let target = self.target.as_str();
        tracing::info!(target = %target, "circuit breaker of {target} half-open: one probe call let through");
        transition(target, "half_open");
    }
}

/// `agentic.breaker.transitions`: one per transition, by target and new state.
fn transition(target: &str, state: &'static str) {
    tracing::info!(target: METRICS, parent: None, metric = TRANSITIONS, value = 1u64,
        agentic.target = target, agentic.breaker.state = state);
}

/// `agentic.breaker.open`: +1 when this process's view of a breaker leaves closed (opened here or
/// adopted from the store), -1 when it closes again (summed over a process, the targets it sees
/// open or half-open).
fn open_gauge(target: &str, change: i64) {
    tracing::info!(target: METRICS, parent: None, metric = OPEN, value = change,
        agentic.target = target);
}

#[cfg(test)]
mod tests {
    use super::{METRICS, OPEN, TRANSITIONS};
    use crate::observe::semconv;

    #[test]
    fn the_breakers_events_are_named_as_semconv_says() {
        assert_eq!(METRICS, semconv::METRICS_TARGET);
        assert_eq!(TRANSITIONS, semconv::BREAKER_TRANSITIONS);
        assert_eq!(OPEN, semconv::BREAKER_OPEN);
    }
}
