//! The structured failure of a resilient call (docs/design.md §16): why it gave up, with every
//! attempt, behind one box.

use std::fmt;
use std::time::Duration;

use super::gave_up::GaveUp;
use super::{Classification, Classify};
use crate::budget::Refusal;
use crate::exec_error::ExecErrorKind;
use crate::journal::{AttemptRecord, FailureRecord};
use crate::report::{Decision, Layer};

/// Why a resilient call gave up, with every attempt: the structured failure of docs/design.md §16.
///
/// Its details sit behind one box: a call's `Result<T, Failure<E>>` is then no larger than a
/// pointer beside `T`, and the success path moves nothing more than the value (a failure is rare;
/// it is built once, when the call gives up).
pub struct Failure<E>(Box<fields::Failure<E>>);

// Named as the public type, so that the derived `Debug` reads `Failure { kind, .. }`.
pub(super) mod fields {
    use super::*;

    #[derive(Debug)]
    pub(in crate::resilient) struct Failure<E> {
        pub(in crate::resilient) kind: ExecErrorKind,
        pub(in crate::resilient) name: String,
        pub(in crate::resilient) decisions: Vec<Decision>,
        pub(in crate::resilient) last_error: Option<E>,
        pub(in crate::resilient) elapsed: Duration,
        pub(in crate::resilient) stopped_by: Option<String>,
        pub(in crate::resilient) refusal: Option<Refusal>,
    }
}

impl<E> Failure<E> {
    /// The failure of these fields, boxed.
    pub(super) fn boxed(fields: fields::Failure<E>) -> Self {
        Self(Box::new(fields))
    }

    /// The failure of a request the tower layer (`crate::tower`) gave up on: `kind`, after
    /// `decisions`, with the service's last error and the cap that stopped it, if any.
    #[cfg(feature = "tower")]
    pub(crate) fn of_layer(
        kind: ExecErrorKind,
        name: &str,
        decisions: Vec<Decision>,
        last_error: Option<E>,
        elapsed: Duration,
        refusal: Option<Refusal>,
    ) -> Self {
        let stopped_by = refusal.as_ref().map(ToString::to_string);
        Self::boxed(fields::Failure {
            kind,
            name: name.to_owned(),
            decisions,
            last_error,
            elapsed,
            stopped_by,
            refusal,
        })
    }
}

impl<E> Failure<E> {
    /// Why it gave up: permanent, exhausted, programming, budget or invalid_result.
    pub fn kind(&self) -> ExecErrorKind {
        self.0.kind
    }

    /// The call's name.
    pub fn name(&self) -> &str {
        &self.0.name
    }

    /// One decision per failed attempt, in order: its error, verdict, the rule that decided and
    /// the delay after it (a retry refused after its backoff adds a second decision about the same
    /// failure, as in `ExecError::decisions`).
    pub fn decisions(&self) -> &[Decision] {
        &self.0.decisions
    }

    /// The last error the operation returned (`None` when the last attempt timed out, its value
    /// was rejected, or the policy was invalid).
    pub fn last_error(&self) -> Option<&E> {
        self.0.last_error.as_ref()
    }

    /// The last error the operation returned, by value.
    pub fn into_last_error(self) -> Option<E> {
        self.0.last_error
    }

    /// Time from the first attempt to the failure. Without `timeout_ms` or `budget_ms` the clock is
    /// first read once the first attempt has been polled (a call that succeeds at once reads no
    /// clock), so the synchronous part of that first poll is not counted.
    pub fn elapsed(&self) -> Duration {
        self.0.elapsed
    }

    /// For `budget`: which cap stopped it, in words; for an invalid policy: the broken rule.
    pub fn stopped_by(&self) -> Option<&str> {
        self.0.stopped_by.as_deref()
    }

    /// For `budget`: which cap stopped it, as data.
    pub fn refusal(&self) -> Option<&Refusal> {
        self.0.refusal.as_ref()
    }

    /// How many attempts ran (each ended in a failure).
    pub fn calls(&self) -> u32 {
        let tried = self.0.decisions.iter().filter(|decision| decision.layer == Layer::Exec).count();
        u32::try_from(tried).unwrap_or(u32::MAX)
    }

    /// The failure as a journal record (`op: "call"`).
    pub fn record(&self) -> FailureRecord {
        let details = &*self.0;
        let last = details.decisions.last().map_or("", |decision| decision.error.as_str());
        let mut record = FailureRecord::new(details.name.as_str(), details.kind.name(), last);
        record.op = "call".to_owned();
        record.attempts = details.decisions.iter().map(AttemptRecord::from).collect();
        record.stopped_by = details.stopped_by.clone();
        record.calls = self.calls();
        record.elapsed_ms = u64::try_from(details.elapsed.as_millis()).unwrap_or(u64::MAX);
        record
    }
}

impl<E: fmt::Debug> fmt::Debug for Failure<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl<E> fmt::Display for Failure<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let details = &*self.0;
        let (name, tried) = (&details.name, self.calls());
        match (details.kind, &details.stopped_by) {
            (ExecErrorKind::Permanent, _) => write!(f, "{name} failed permanently:")?,
            (ExecErrorKind::Programming, Some(why)) => return write!(f, "{name}: {why}"),
            (ExecErrorKind::Budget, Some(why)) => write!(f, "{name} stopped after {tried} attempts: {why}:")?,
            (kind, _) => write!(f, "{name} failed after {tried} attempts ({kind}):")?,
        }
        for (index, decision) in details.decisions.iter().enumerate() {
            write!(f, "\nAttempt {}: {}", index + 1, decision.error)?;
        }
        Ok(())
    }
}

/// Its source is the [`GaveUp`] mark of its kind: what a retry loop around these layers finds down
/// any chain of errors that holds this failure (boxed, inside a client's error), so that it does
/// not try again what they gave up on. (The last error is [`Failure::last_error`]: a source must
/// be an error of a type known here, and `E` need not be one.)
impl<E: fmt::Debug> std::error::Error for Failure<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(GaveUp::of(self.0.kind))
    }
}

/// A failure is judged by its kind ([`GaveUp::classification`]): a layer around the one that gave
/// up never tries again what it stopped (permanent, exhausted, out of budget, a breaker open),
/// raises its programming error, and stops on its context overflow.
impl<E> Classify for Failure<E> {
    fn classify(&self) -> Classification {
        GaveUp::of(self.0.kind).classification()
    }
}
