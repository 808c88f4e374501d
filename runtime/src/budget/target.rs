//! A target's breaker as its governor holds it: the state machine on this process's clock (the
//! fleet's state mirrored into it while a shared store keeps it), and the log lines and metric
//! events of its transitions.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

use tokio::time::Instant;

use super::breaker::{Admission, Breaker, BreakerSettings, BreakerState, CallOutcome, Recorded, SharedAdmission};
use crate::policy::rules::{format_ms, millis};

/// The metric events' target, `crate::telemetry::METRICS` spelled out: the budget sits below
/// `telemetry`, which knows the providers (whose fuzz entry points know the governor). The metrics
/// layer's tests (otel/tests.rs) read these events through that target.
const METRICS: &str = "agentic::metrics";

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

    /// This process's breaker's answer.
    pub(crate) fn admit_local(&self) -> Admission {
        let admission = self.lock().admit(Instant::now());
        if admission == Admission::Probe {
            self.half_opened();
        }
        admission
    }

    /// Counts an outcome in this process's breaker (`probe`: the call was the probe).
    pub(crate) fn record_local(&self, outcome: CallOutcome, probe: bool) {
        let recorded = self.lock().record(outcome, probe, Instant::now());
        self.announce(recorded);
    }

    /// The shared breaker's answer, mirrored here. An open period is never taken as longer than
    /// the settings' (a store is input, as a server is: a stored `until` of 9e18 must not skip
    /// the target for ever).
    pub(crate) fn adopt_admission(&self, shared: SharedAdmission) -> Admission {
        let (state, admission) = match shared {
            SharedAdmission::Call => (BreakerState::Closed, Admission::Call),
            SharedAdmission::Probe(opened) => (BreakerState::HalfOpen { opened }, Admission::Probe),
            SharedAdmission::Skip(BreakerState::Open { left, opened }) => {
                let state = BreakerState::Open { left: left.min(self.settings.open_for()), opened };
                (state, Admission::Skip(state))
            }
            SharedAdmission::Skip(state) => (state, Admission::Skip(state)),
        };
        self.lock().adopt(state, Instant::now());
        if admission == Admission::Probe {
            self.half_opened();
        }
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
            self.lock().adopt(state, Instant::now());
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

    /// Logs a transition once (in the process whose call caused it) and emits its metric events.
    fn announce(&self, recorded: Recorded) {
        let target = self.target.as_str();
        let open_for = format_ms(millis(self.settings.open_for()));
        match recorded {
            Recorded::Unchanged => return,
            Recorded::Opened(opened) => {
                tracing::warn!(target = %target, %opened, "circuit breaker of {target} open: its calls are skipped for {open_for}, after {opened}");
                open_gauge(target, 1);
            }
            Recorded::Reopened(_) => {
                tracing::warn!(target = %target, "circuit breaker of {target} open again: its probe call failed; skipped for {open_for}");
            }
            Recorded::Closed => {
                tracing::info!(target = %target, "circuit breaker of {target} closed: its probe call was answered");
                open_gauge(target, -1);
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
    tracing::info!(target: METRICS, parent: None, metric = "agentic.breaker.transitions", value = 1u64,
        agentic.target = target, agentic.breaker.state = state);
}

/// `agentic.breaker.open`: +1 when a breaker opens from closed, -1 when it closes (summed over a
/// fleet, the breakers open now).
fn open_gauge(target: &str, change: i64) {
    tracing::info!(target: METRICS, parent: None, metric = "agentic.breaker.open", value = change,
        agentic.target = target);
}
