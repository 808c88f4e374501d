//! A call a target's breaker let through, as a value the call must consume (docs/design.md §10,
//! "Admissions are owed an outcome").
//!
//! [`Governor::admit`] hands out a [`Permit`]; the call's outcome is recorded by consuming it
//! ([`Permit::record`]), and a permit dropped without an outcome (the exec was dropped, the pacer
//! refused the call after the breaker let it through, the call was never sent) gives its probe
//! back at once. A lost probe, which held a target half-open for a whole open period, cannot be
//! written: every path out of a call either records or drops.

use super::Governor;
use crate::storm::breaker::{CallOutcome, ProbeToken};

/// One call's admission by its target's breaker. Recording the call's outcome consumes it;
/// dropping it unrecorded releases the probe it may be, so that the next call probes at once.
#[must_use = "a call let through owes its breaker an outcome: record it, or drop the permit to give back a probe"]
pub(crate) struct Permit<'g> {
    governor: &'g Governor,
    /// The token of the admission when it took the breaker's probe: the one a give-back names.
    probe: Option<ProbeToken>,
    state: Owed,
}

/// What the permit still owes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Owed {
    /// The outcome: nothing was recorded yet.
    Outcome,
    /// An answer was counted at the call's first content (this process's breaker, on the clock of
    /// that moment); a later failure of the same call turns it into a failure.
    FailureOnly,
}

impl<'g> Permit<'g> {
    pub(super) fn new(governor: &'g Governor, probe: Option<ProbeToken>) -> Self {
        Self { governor, probe, state: Owed::Outcome }
    }

    /// Whether the call is the breaker's probe, whose outcome alone decides while half-open.
    pub(crate) fn is_probe(&self) -> bool {
        self.probe.is_some()
    }

    /// The call's first content arrived: the target answered. Counted now in this process's
    /// breaker (a 200 is known as early as a 503, so successes and failures are counted at the same
    /// moment), synchronously: the stream is not held up. A breaker kept in a shared store hears
    /// the answer when the call ends, with the retry quota's deposit, in one round trip.
    pub(crate) fn first_content(&mut self) {
        if self.state == Owed::Outcome && self.governor.answered_locally(self.is_probe()) {
            self.state = Owed::FailureOnly;
        }
    }

    /// Records the call's outcome. An answer already counted at its first content is not counted
    /// again; a failure after it turns that answer into a failure.
    pub(crate) async fn record(mut self, outcome: CallOutcome) {
        match self.state {
            Owed::Outcome => self.governor.record_call(outcome, self.is_probe()).await,
            Owed::FailureOnly if outcome == CallOutcome::Failed => self.governor.amend_failed(),
            Owed::FailureOnly => {}
        }
        // Disarmed only once recorded: a record dropped while it awaits the store releases.
        self.state = Owed::FailureOnly;
        self.probe = None;
    }
}

impl Permit<'_> {
    /// The outcome was recorded by the caller, in the fleet's breaker, with the retry quota's
    /// deposit (one store operation): nothing is owed any more.
    pub(super) fn recorded(mut self) {
        self.state = Owed::FailureOnly;
        self.probe = None;
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        if let (Some(token), Owed::Outcome) = (self.probe, self.state) {
            self.governor.release_probe(token);
        }
    }
}

impl std::fmt::Debug for Permit<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Permit").field("probe", &self.is_probe()).finish_non_exhaustive()
    }
}
