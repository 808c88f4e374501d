//! The structured failure of a resilient call (docs/design.md §16): why it gave up, with every
//! attempt, behind one box.

use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

use super::gave_up::GaveUp;
use super::{Classification, Classify};
use crate::answer::exec_error::ExecErrorKind;
use crate::decision::{Decision, Verdict};
use crate::observe::journal::{AttemptRecord, FailureRecord};
use crate::storm::Refusal;

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
        /// The calls made (a tower request's layer 1 makes several in one attempt).
        pub(in crate::resilient) calls: u32,
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
    /// `decisions` over `calls` calls, with the service's last error and the cap that stopped it, if
    /// any.
    #[cfg(feature = "tower")]
    pub(crate) fn of_layer(
        kind: ExecErrorKind,
        name: &str,
        decisions: Vec<Decision>,
        (last_error, calls): (Option<E>, u32),
        elapsed: Duration,
        refusal: Option<Refusal>,
    ) -> Self {
        let stopped_by = refusal.as_ref().map(ToString::to_string);
        Self::boxed(fields::Failure {
            kind,
            name: name.to_owned(),
            decisions,
            last_error,
            calls,
            elapsed,
            stopped_by,
            refusal,
        })
    }

    /// The same failure with `error` as its last error (what a client makes of the response the
    /// layers gave up on).
    #[cfg(feature = "async-openai")]
    pub(crate) fn with_last_error(mut self, error: E) -> Self {
        self.0.last_error = Some(error);
        self
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

    /// How many calls were made (each ended in a failure): one per attempt for a [`Resilient`](super::Resilient)
    /// call; through the tower layer, whose layer 1 calls again within an attempt, all of them.
    pub fn calls(&self) -> u32 {
        self.0.calls
    }

    /// How many attempts (of layer 2) made a call.
    pub fn attempts(&self) -> u32 {
        self.failed_calls().map(|decision| decision.attempt).max().unwrap_or(0)
    }

    /// The decisions about a call that failed: not a wait before a call ([`Verdict::CooledDown`],
    /// [`Verdict::Paced`]), which no failure made.
    fn failed_calls(&self) -> impl Iterator<Item = &Decision> {
        self.0.decisions.iter().filter(|decision| !matches!(decision.verdict, Verdict::CooledDown | Verdict::Paced))
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
    /// A header that says why it stopped, after how many attempts and calls, then one line per
    /// failed call with its error (`Attempt 2: ...`; `Attempt 1, call 3: ...` where an attempt made
    /// several calls).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let details = &*self.0;
        let name = &details.name;
        let (attempts, calls) = (self.attempts(), details.calls);
        let plural = |count: u32| if count == 1 { "" } else { "s" };
        // Both counts when they differ: through the tower layer, one attempt holds layer 1's calls.
        let tried = if calls == attempts {
            format!("{attempts} attempt{}", plural(attempts))
        } else {
            format!("{attempts} attempt{}, {calls} call{}", plural(attempts), plural(calls))
        };
        match (details.kind, &details.stopped_by) {
            (ExecErrorKind::Permanent, _) => write!(f, "{name} failed permanently:")?,
            (ExecErrorKind::Programming, Some(why)) => return write!(f, "{name}: {why}"),
            (ExecErrorKind::Refused, Some(why)) => write!(f, "{name} stopped after {tried}: {why}:")?,
            (kind, _) => write!(f, "{name} failed after {tried} ({kind}):")?,
        }
        // One line per call: layer 2's decision after layer 1's, and a retry refused after its
        // backoff, are about the same call's failure.
        let mut shown = None;
        for decision in self.failed_calls() {
            if shown == Some((decision.attempt, decision.call)) {
                continue;
            }
            shown = Some((decision.attempt, decision.call));
            match calls == attempts {
                true => write!(f, "\nAttempt {}: {}", decision.attempt, decision.error)?,
                false => write!(f, "\nAttempt {}, call {}: {}", decision.attempt, decision.call, decision.error)?,
            }
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

    /// Its decisions' texts without the key (a layer around one that was not told the key; its
    /// last error is the service's, redacted by the layer that holds it when it knows the key).
    fn redact(mut self, redact: &dyn Fn(&str) -> Cow<'_, str>) -> Self {
        for decision in &mut self.0.decisions {
            if let Cow::Owned(shown) = redact(&decision.error) {
                decision.error = shown;
            }
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Error, ErrorKind};

    use crate::policy::RetryPolicy;
    use crate::resilient::Resilient;

    async fn reset() -> Result<(), Error> {
        Err(Error::from(ErrorKind::ConnectionReset))
    }

    /// A resilient call makes one call per attempt: the header counts attempts, in the right
    /// number, and each line is one. Before, one attempt read "after 1 attempts".
    #[tokio::test(start_paused = true)]
    async fn a_resilient_failure_counts_its_attempts_in_words_that_agree() {
        for (attempts, header) in
            [(1, "failed after 1 attempt (exhausted):"), (2, "failed after 2 attempts (exhausted):")]
        {
            let policy = RetryPolicy::new().with_max_retries(attempts);
            let failure = Resilient::new("read", &policy).with_jitter_seed(1).call(reset).await.unwrap_err();
            assert_eq!((failure.calls(), failure.attempts()), (attempts, attempts));
            let text = failure.to_string();
            let lines: Vec<&str> = text.lines().collect();
            assert_eq!(lines[0], format!("read {header}"));
            assert_eq!(lines.len() as u32, attempts + 1, "{text}");
            assert!(lines[1..].iter().zip(1..).all(|(line, n)| line.starts_with(&format!("Attempt {n}: "))), "{text}");
        }
    }
}
