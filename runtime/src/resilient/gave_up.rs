//! The mark of a call the retry layers gave up on (docs/design.md §16, "nested layers"): what an outer layer
//! finds, through an error's chain of sources or on a response handed back, so that it does not try
//! again what an inner one stopped. Without it, a `Resilient` around a `RetryLayer` (or a
//! `RetryMiddleware` in a chain with another) retried an exhausted, permanent or refused call as
//! transient: three attempts of three calls each, nine requests where the inner layer alone sent
//! three.

use std::fmt;

use super::Classification;
use crate::answer::exec_error::ExecErrorKind;
use crate::classify::ExecAction;

/// The retry layers gave up on this call, for the reason `kind`: the source of every
/// [`Failure`](super::Failure), and a response extension (`http::Extensions`) on an error response
/// the tower layer hands back. Any retry loop around them that finds it should not call again: the
/// policy's attempts, backoff and budget were already spent on it. This crate's classifiers find it
/// down any chain of sources (`Box<dyn Error>`, `OpenAIError::Boxed`,
/// `reqwest_middleware::Error::Middleware`, genai's errors) and judge it by its kind
/// ([`GaveUp::classification`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GaveUp {
    kind: ExecErrorKind,
}

impl GaveUp {
    /// The mark of a call given up on for the reason `kind`.
    pub const fn new(kind: ExecErrorKind) -> Self {
        Self { kind }
    }

    /// Why the layers gave up.
    pub const fn kind(&self) -> ExecErrorKind {
        self.kind
    }

    /// How a layer around the ones that gave up judges the call: what they said, never another try.
    /// A programming error is raised, a context overflow stays one (a compactor may still shorten
    /// the conversation), and every other kind (permanent, exhausted, out of budget, a breaker
    /// open, an invalid result) is final: the inner layers already made every attempt their policy
    /// allows, so another round would multiply their calls.
    pub fn classification(&self) -> Classification {
        let kind = self.kind.name();
        let reason =
            format!("an inner retry layer gave up (kind `{kind}`): trying again around it multiplies its calls");
        let action = match self.kind {
            ExecErrorKind::Programming => ExecAction::Raise,
            ExecErrorKind::ContextOverflow => ExecAction::ContextOverflow,
            _ => ExecAction::FailPermanently,
        };
        Classification { action, ..Classification::permanent(reason) }
    }

    /// The mark of each kind, for a [`Failure`](super::Failure)'s `source()` to point at.
    pub(crate) fn of(kind: ExecErrorKind) -> &'static GaveUp {
        static MARKS: [GaveUp; 8] = [
            GaveUp::new(ExecErrorKind::Permanent),
            GaveUp::new(ExecErrorKind::Exhausted),
            GaveUp::new(ExecErrorKind::Programming),
            GaveUp::new(ExecErrorKind::ContextOverflow),
            GaveUp::new(ExecErrorKind::Refused),
            GaveUp::new(ExecErrorKind::InvalidResult),
            GaveUp::new(ExecErrorKind::MaxIterations),
            GaveUp::new(ExecErrorKind::UsageLimit),
        ];
        MARKS.iter().find(|mark| mark.kind == kind).unwrap_or(&MARKS[0])
    }
}

impl fmt::Display for GaveUp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the retry layers gave up ({}) after the attempts their policy allows", self.kind.name())
    }
}

impl std::error::Error for GaveUp {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_its_mark_and_only_a_programming_error_or_an_overflow_is_not_final() {
        use ExecErrorKind as K;
        let kinds = [K::Permanent, K::Exhausted, K::Programming, K::ContextOverflow, K::Refused, K::InvalidResult];
        for kind in kinds.into_iter().chain([K::MaxIterations]) {
            let mark = GaveUp::of(kind);
            assert_eq!(mark.kind(), kind);
            let expected = match kind {
                K::Programming => ExecAction::Raise,
                K::ContextOverflow => ExecAction::ContextOverflow,
                _ => ExecAction::FailPermanently,
            };
            assert_eq!(mark.classification().action, expected, "{kind}");
            assert_eq!(mark.classification().retry_after, None);
        }
    }
}
