//! A scripted outage: a window of the scenario's clock during which one step answers every model
//! request, before the context window and the steps look at it, and consumes no step.

use std::time::Duration;

use crate::journal::StepRef;
use crate::step::Step;

/// The most outage windows a scenario may have: the server scans them for every model request.
pub const MAX_OUTAGES: usize = 64;

/// The latest time an outage may start or end in a scenario file, in milliseconds from the
/// scenario's start (a day): a test or a demo never waits longer, and a larger number is a typo.
pub const MAX_OUTAGE_MS: u64 = 24 * 60 * 60 * 1000;

/// A window of time during which the server is down: every model request that arrives at or after
/// `from` and before `until` (measured from the scenario's start, see
/// [`Scenario::with_outage`](crate::Scenario::with_outage)) is answered by the outage's step and
/// consumes no step of the scenario.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use agentic_chaos::{Outage, Step, StepKind};
///
/// // Down (503) from 1 s to 4 s after the start.
/// let outage = Outage::new(Duration::from_secs(1), Duration::from_secs(4));
/// assert_eq!(outage.step().kind(), StepKind::HttpError);
///
/// // Rate limited, with a hint, for the first 2 s.
/// let limited = Outage::new(Duration::ZERO, Duration::from_secs(2))
///     .with_step(Step::http_error(429).retry_after_secs(1));
/// assert_eq!(limited.until(), Duration::from_secs(2));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Outage {
    from: Duration,
    until: Duration,
    step: Step,
}

impl Outage {
    /// The server is down from `from` (included) to `until` (excluded), answering a 503.
    ///
    /// # Panics
    ///
    /// If `until` is not after `from` (a file refuses it too): the window would hold no instant.
    pub fn new(from: Duration, until: Duration) -> Self {
        assert!(until > from, "an outage's `until` ({until:?}) must be after its `from` ({from:?})");
        Self { from, until, step: default_step() }
    }

    /// The step that answers every model request of the window (`"step"` in JSON), in the
    /// request's wire format like any step: a 429 with `retry-after`, a hang, a socket closed
    /// before the headers...
    ///
    /// # Default
    ///
    /// `Step::http_error(503)`: the provider's own 503 body.
    pub fn with_step(mut self, step: impl Into<Step>) -> Self {
        self.step = step.into();
        self
    }

    /// When the outage starts, from the scenario's start.
    pub fn from(&self) -> Duration {
        self.from
    }

    /// When the outage ends, from the scenario's start: the first instant the scenario answers
    /// as before.
    pub fn until(&self) -> Duration {
        self.until
    }

    /// The step that answers during the outage.
    pub fn step(&self) -> &Step {
        &self.step
    }

    fn holds(&self, at: Duration) -> bool {
        self.from <= at && at < self.until
    }
}

/// The step an outage answers with unless told otherwise: a 503.
pub(crate) fn default_step() -> Step {
    Step::http_error(503).into()
}

/// The answer of the first of `outages` that holds `at` (time since the scenario's start), journaled
/// as no step of the scenario (`index: None`, `repeat: 0`) and with the window's position.
pub(crate) fn answer(outages: &[Outage], at: Duration) -> Option<(Step, StepRef)> {
    let (i, outage) = outages.iter().enumerate().find(|(_, outage)| outage.holds(at))?;
    let step_ref = StepRef { index: None, kind: outage.step.kind(), repeat: 0, outage: Some(i), rate_limited: false };
    Some((outage.step.clone(), step_ref))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::step::StepKind;

    #[test]
    fn a_window_holds_its_start_and_not_its_end() {
        let ms = Duration::from_millis;
        let outages = [Outage::new(ms(10), ms(20)), Outage::new(ms(15), ms(30)).with_step(Step::hang())];
        let hit = |at| answer(&outages, ms(at)).map(|(_, at)| (at.outage, at.kind));
        assert_eq!(hit(9), None);
        assert_eq!(hit(10), Some((Some(0), StepKind::HttpError)));
        assert_eq!(hit(19), Some((Some(0), StepKind::HttpError)), "the first window listed wins");
        assert_eq!(hit(20), Some((Some(1), StepKind::Hang)));
        assert_eq!(hit(30), None);
    }

    #[test]
    #[should_panic(expected = "must be after its `from`")]
    fn an_empty_window_is_refused() {
        let _ = Outage::new(Duration::from_secs(2), Duration::from_secs(2));
    }
}
