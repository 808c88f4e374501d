use std::fmt;

use super::Reason;
use super::scan::{Scan, Set};
use super::session::{context_overflow_in, quota_code, quota_text, typed_verdict};
use crate::error::ModelError;
use crate::error::model_error::{is_programming_kind, split_kind};

/// What layer 2 does with a failed attempt (before counting attempts and budget).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ExecAction {
    /// Worth another attempt (if attempts and budget remain).
    Retry,
    /// Stop: the same request will fail the same way.
    FailPermanently,
    /// Return the programming error unchanged.
    Raise,
    /// Stop with a context-overflow error.
    ContextOverflow,
}

impl ExecAction {
    /// `"retry"`, `"fail_permanently"`, `"raise"` or `"context_overflow"`.
    pub const fn name(self) -> &'static str {
        match self {
            ExecAction::Retry => "retry",
            ExecAction::FailPermanently => "fail_permanently",
            ExecAction::Raise => "raise",
            ExecAction::ContextOverflow => "context_overflow",
        }
    }
}

/// Layer 2's verdict and the rule that decided it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExecVerdict {
    /// What to do.
    pub action: ExecAction,
    /// Why.
    pub reason: Reason,
}

impl fmt::Display for ExecVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.action.name(), self.reason)
    }
}

/// Layer 2's decision on a failed attempt whose text is `"<Kind>: <text>"` (docs/design.md §5);
/// the first rule that applies wins.
///
/// # Examples
///
/// ```
/// use agentic_runtime::classify::{ExecAction, exec_verdict};
///
/// assert_eq!(exec_verdict("AuthenticationError: invalid api key", None).action, ExecAction::FailPermanently);
/// assert_eq!(exec_verdict("TypeError: bad argument", None).action, ExecAction::Raise);
/// assert_eq!(exec_verdict("RateLimitError: 429", None).action, ExecAction::Retry);
/// ```
pub fn exec_verdict(text: &str, error: Option<&ModelError>) -> ExecVerdict {
    exec_verdict_of(&Scan::new(text), error)
}

/// [`exec_verdict`] on a scanned text.
pub(crate) fn exec_verdict_of(scan: &Scan<'_>, error: Option<&ModelError>) -> ExecVerdict {
    let verdict = |action, reason| ExecVerdict { action, reason };
    if let Some(kind) = programming_kind(scan.text(), error) {
        return verdict(ExecAction::Raise, Reason::Programming(kind));
    }
    if let Some(reason) = context_overflow_in(scan, error) {
        return verdict(ExecAction::ContextOverflow, reason);
    }
    if let Some(reason) = typed_permanence(error) {
        return verdict(ExecAction::FailPermanently, reason);
    }
    if let Some(marker) = scan.first(Set::Permanent) {
        return verdict(ExecAction::FailPermanently, Reason::PermanentMarker(marker));
    }
    if let Some(reason) = quota_text(scan, error) {
        return verdict(ExecAction::FailPermanently, reason);
    }
    verdict(ExecAction::Retry, Reason::NotPermanent)
}

/// Typed permanence: `x-should-retry` first (either way), then a permanent status or transport
/// failure, then a quota code.
fn typed_permanence(error: Option<&ModelError>) -> Option<Reason> {
    let error = error?;
    match error.should_retry() {
        Some(false) => return Some(Reason::ShouldRetry(false)),
        Some(true) => return None,
        None => {}
    }
    match typed_verdict(error) {
        Some(reason @ (Reason::PermanentStatus(_) | Reason::NotAStream)) => return Some(reason),
        Some(reason @ Reason::Transport(kind)) if kind.is_permanent() => return Some(reason),
        _ => {}
    }
    quota_code(Some(error))
}

fn programming_kind(text: &str, error: Option<&ModelError>) -> Option<&'static str> {
    if let Some(error) = error.filter(|error| error.is_programming()) {
        return Some(static_kind(error.kind()));
    }
    let (kind, _) = split_kind(text)?;
    is_programming_kind(kind).then(|| static_kind(kind))
}

fn static_kind(kind: &str) -> &'static str {
    match kind {
        "TypeError" => "TypeError",
        "NotImplementedError" => "NotImplementedError",
        _ => "misuse of the runtime",
    }
}
