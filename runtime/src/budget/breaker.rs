//! TEMPORARY lead stub of the circuit breaker API (replaced by h1-breaker's module at merge).
#![allow(dead_code, missing_docs)]

use std::fmt;
use std::time::Duration;

use super::Governor;
use crate::error::PolicyError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BreakerSettings {
    failure_percent: u32,
    min_calls: u32,
    window: Duration,
    open_for: Duration,
}

impl BreakerSettings {
    pub const fn standard() -> Self {
        Self { failure_percent: 50, min_calls: 20, window: Duration::from_secs(10), open_for: Duration::from_secs(30) }
    }
    pub fn new(
        failure_percent: u32,
        min_calls: u32,
        window: Duration,
        open_for: Duration,
    ) -> Result<Self, PolicyError> {
        Ok(Self { failure_percent, min_calls, window, open_for })
    }
    pub const fn failure_percent(&self) -> u32 {
        self.failure_percent
    }
    pub const fn min_calls(&self) -> u32 {
        self.min_calls
    }
    pub const fn window(&self) -> Duration {
        self.window
    }
    pub const fn open_for(&self) -> Duration {
        self.open_for
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Opened {
    pub failures: u64,
    pub calls: u64,
    pub window: Duration,
}

impl fmt::Display for Opened {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} failures of {} calls in {} s", self.failures, self.calls, self.window.as_secs())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum BreakerState {
    Closed,
    Open { left: Duration, opened: Opened },
    HalfOpen { opened: Opened },
}

impl BreakerState {
    pub const fn name(&self) -> &'static str {
        match self {
            BreakerState::Closed => "closed",
            BreakerState::Open { .. } => "open",
            BreakerState::HalfOpen { .. } => "half_open",
        }
    }
}

impl fmt::Display for BreakerState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BreakerState::Closed => f.write_str("closed"),
            BreakerState::Open { left, opened } => {
                write!(f, "open for {:.1} s more, after {opened}", left.as_secs_f64())
            }
            BreakerState::HalfOpen { .. } => f.write_str("half-open: one probe call let through"),
        }
    }
}

pub(crate) enum Admission {
    Call,
    Probe,
    Skip(BreakerState),
}

pub(crate) enum CallOutcome {
    Answered,
    Failed,
}

impl Governor {
    pub(crate) fn with_breaker(self, _target: String, _model: &str, _settings: BreakerSettings) -> Self {
        self
    }
    pub(crate) async fn admit(&self) -> Admission {
        Admission::Call
    }
    pub(crate) async fn record_call(&self, _outcome: CallOutcome) {}
    pub(crate) fn breaker_state(&self) -> Option<BreakerState> {
        None
    }
    pub(crate) fn breaker_settings(&self) -> Option<BreakerSettings> {
        None
    }
}
