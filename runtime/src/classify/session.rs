use std::fmt;

use super::Reason;
use super::patterns::{OVERFLOW_CODES, QUOTA_CODES, QUOTA_UNTIL_RESET, RATE_LIMITED};
use super::scan::{Scan, Set};
use crate::error::ModelError;
use crate::error::model_error::split_kind;
use crate::message::{AssistantMessage, StopReason};

/// Layer 1's verdict: retry the model call or not, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionVerdict {
    /// True when layer 1, the session retry, should call again.
    pub retryable: bool,
    /// The rule that decided.
    pub reason: Reason,
}

impl fmt::Display for SessionVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verdict = if self.retryable { "retryable" } else { "not retryable" };
        write!(f, "{verdict}: {}", self.reason)
    }
}

/// Layer 1's decision on a message (docs/design.md §4).
///
/// # Examples
///
/// ```
/// use agentic_runtime::classify::is_retryable_error;
/// use agentic_runtime::message::AssistantMessage;
///
/// let verdict = is_retryable_error(&AssistantMessage::error_event("Rate limit reached", None));
/// assert!(verdict.retryable);
/// assert_eq!(verdict.reason.to_string(), "matched retry pattern \"rate.?limit\"");
///
/// let overflow = AssistantMessage::error_event("prompt is too long: 250000 tokens > 200000", None);
/// assert!(!is_retryable_error(&overflow).retryable);
/// ```
pub fn is_retryable_error(message: &AssistantMessage) -> SessionVerdict {
    session_verdict(message.stop_reason, message.error_text(), message.error.as_ref())
}

/// Layer 1's decision on the parts of a message; the first rule that applies wins.
pub fn session_verdict(stop_reason: StopReason, text: &str, error: Option<&ModelError>) -> SessionVerdict {
    if stop_reason != StopReason::Error {
        return SessionVerdict { retryable: false, reason: Reason::NotAnError(stop_reason) };
    }
    session_verdict_of(&Scan::new(text), error)
}

/// Layer 1's rules 2 to 7 on a failure whose text is scanned.
pub(crate) fn session_verdict_of(scan: &Scan<'_>, error: Option<&ModelError>) -> SessionVerdict {
    let verdict = |retryable, reason| SessionVerdict { retryable, reason };
    if let Some(reason) = context_overflow_in(scan, error) {
        return verdict(false, reason);
    }
    if let Some(should_retry) = error.and_then(ModelError::should_retry) {
        return verdict(should_retry, Reason::ShouldRetry(should_retry));
    }
    if let Some(reason) = quota_code(error).or_else(|| quota_text(scan, error)) {
        return verdict(false, reason);
    }
    if let Some(error) = error {
        if let Some(reason) = typed_verdict(error) {
            let retryable = match reason {
                Reason::RetryableStatus(_) | Reason::FlexTierCapacity => true,
                Reason::Transport(kind) => !kind.is_permanent(),
                _ => false,
            };
            return verdict(retryable, reason);
        }
    }
    if scan.text().trim().is_empty() {
        return verdict(true, Reason::EmptyMessage);
    }
    match scan.first(Set::Retry) {
        Some(pattern) => verdict(true, Reason::RetryPattern(pattern)),
        None => verdict(false, Reason::NoRetryPattern),
    }
}

/// Context overflow, by typed code or text; checked always (docs/design.md §4, rule 2).
pub fn is_context_overflow(text: &str, error: Option<&ModelError>) -> Option<Reason> {
    context_overflow_in(&Scan::new(text), error)
}

/// [`is_context_overflow`] on a scanned text.
pub(crate) fn context_overflow_in(scan: &Scan<'_>, error: Option<&ModelError>) -> Option<Reason> {
    if let Some(code) = error.and_then(ModelError::code) {
        if let Some(known) = OVERFLOW_CODES.iter().find(|known| **known == code) {
            return Some(Reason::OverflowCode(known));
        }
    }
    // A rate limit is no overflow, whatever its words: a transient status outranks every overflow
    // pattern, and so does a text that says 429 or "please wait" (Bedrock's `429 Too many tokens,
    // please wait before trying again.`, behind gateways too). Only an overflow found is checked.
    let rate_limited =
        || error.and_then(ModelError::status).is_some_and(is_transient_status) || RATE_LIMITED.is_match(scan.text());
    // A bodiless 400 or 413 is an overflow by guess (the OpenAI SDKs' reading of an empty body): the
    // server's own `x-should-retry: true` says the call is worth making again, and outranks it.
    let said_otherwise = |pattern: &str| pattern == BODILESS && error.and_then(ModelError::should_retry) == Some(true);
    if let Some(pattern) = scan.first(Set::Overflow) {
        if rate_limited() || said_otherwise(pattern) {
            return None;
        }
        return Some(Reason::OverflowPattern(pattern));
    }
    // The bodiless-400 pattern is anchored, so also look past a "<Kind>: " prefix (where only the
    // anchored patterns can match what the whole text did not) and at the typed text.
    let text = scan.text();
    let after_kind = split_kind(text).map(|(_, rest)| rest).filter(|rest| *rest != text);
    if let Some(pattern) = after_kind.and_then(|rest| scan.first_at_start_of(Set::Overflow, rest)) {
        return (!rate_limited() && !said_otherwise(pattern)).then_some(Reason::OverflowPattern(pattern));
    }
    let typed_text = error.map(ModelError::message).filter(|message| *message != text && Some(*message) != after_kind);
    let typed =
        typed_text.and_then(|typed| Scan::new(typed).first(Set::Overflow).filter(|_| !RATE_LIMITED.is_match(typed)));
    typed.filter(|pattern| !rate_limited() && !said_otherwise(pattern)).map(Reason::OverflowPattern)
}

/// The label of the bodiless-400/413 overflow pattern (the last of `patterns::OVERFLOW`).
const BODILESS: &str = "4xx (no body)";

/// Quota or billing exhausted, by the provider's code, or by the limit its body states spent until
/// a reset an hour or more away.
pub(crate) fn quota_code(error: Option<&ModelError>) -> Option<Reason> {
    let code = error.and_then(ModelError::code)?;
    if code == QUOTA_UNTIL_RESET {
        return Some(Reason::QuotaUntilReset);
    }
    QUOTA_CODES.iter().find(|known| **known == code).map(|known| Reason::QuotaCode(known))
}

/// Quota or billing exhausted, by a quota text, unless the server says when to come back: in the
/// text ("retry in 20s") or as a typed hint (`Retry-After`, Google's `RetryInfo`). Either way it is
/// a per-minute limit worded as quota; a quota spent for good has a code ([`quota_code`]).
pub(crate) fn quota_text(scan: &Scan<'_>, error: Option<&ModelError>) -> Option<Reason> {
    let pattern = scan.first(Set::Quota)?;
    let come_back = scan.has_retry_after_time() || error.and_then(ModelError::retry_after).is_some();
    (!come_back).then_some(Reason::QuotaText(pattern))
}

/// Groq's status for a request its flex tier has no capacity for now ("try again later").
const FLEX_TIER_AT_CAPACITY: u16 = 498;

/// Whether an HTTP status is transient: 408, 409, 425, 429, Groq's 498 (its flex tier is at
/// capacity: "try again later") and every 5xx. The one list both the layers and resilient calls
/// judge statuses by.
pub fn is_transient_status(status: u16) -> bool {
    matches!(status, 408 | 409 | 425 | 429 | FLEX_TIER_AT_CAPACITY | 500..=599)
}

/// The typed verdict: a successful response that is no answer, then HTTP status, then transport kind.
/// A 3xx is permanent as a 4xx is: the client follows no redirect of a POST, and the same request
/// gets the same redirect.
pub(crate) fn typed_verdict(error: &ModelError) -> Option<Reason> {
    if error.code() == Some(crate::error::model_error::NOT_A_STREAM) {
        return Some(Reason::NotAStream);
    }
    match error.status() {
        Some(FLEX_TIER_AT_CAPACITY) => return Some(Reason::FlexTierCapacity),
        Some(status) if is_transient_status(status) => return Some(Reason::RetryableStatus(status)),
        Some(status @ 300..=499) => return Some(Reason::PermanentStatus(status)),
        _ => {}
    }
    error.transport_kind().map(Reason::Transport)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::{ExecAction, exec_verdict};
    use crate::error::TransportKind;

    /// Both layers' verdicts on a typed error, with a text that would match a retry pattern; the
    /// reason is layer 1's (layer 2 gives the same when it stops).
    fn both(error: ModelError) -> (bool, ExecAction, Reason) {
        let text = format!("{error} (connection reset, 503)");
        let session = session_verdict(StopReason::Error, &text, Some(&error));
        let exec = exec_verdict(&text, Some(&error));
        if exec.action == ExecAction::FailPermanently {
            assert_eq!(session.reason, exec.reason, "{error}");
        }
        (session.retryable, exec.action, session.reason)
    }

    /// A bodiless 400 or 413 reads as an overflow, unless the server said `x-should-retry: true`:
    /// then it is worth another call, in both layers (before, layer 2 and `Classify` stopped on it
    /// as an overflow).
    #[test]
    fn x_should_retry_true_outranks_the_bodiless_overflow_guess_only() {
        for status in [400, 413] {
            // What the providers make of an empty body (`provider::http::errors`).
            let text = format!("{status} status code (no body)");
            let bodiless = ModelError::http(status, "status code (no body)");
            let overflow = Reason::OverflowPattern(BODILESS);
            assert_eq!(session_verdict(StopReason::Error, &bodiless.to_string(), Some(&bodiless)).reason, overflow);
            assert_eq!(exec_verdict(&bodiless.to_string(), Some(&bodiless)).action, ExecAction::ContextOverflow);
            let worth_it = bodiless.clone().with_should_retry(true);
            let session = session_verdict(StopReason::Error, &worth_it.to_string(), Some(&worth_it));
            assert_eq!((session.retryable, session.reason), (true, Reason::ShouldRetry(true)), "{status}");
            assert_eq!(exec_verdict(&worth_it.to_string(), Some(&worth_it)).action, ExecAction::Retry, "{status}");
            assert_eq!(is_context_overflow(&text, Some(&worth_it)), None);
        }
        // An overflow the server put in words stays one.
        let said = ModelError::http(400, "prompt is too long: 250000 tokens > 200000").with_should_retry(true);
        assert_eq!(exec_verdict(&said.to_string(), Some(&said)).action, ExecAction::ContextOverflow);
        assert_eq!(super::super::patterns::OVERFLOW.last().map(|pattern| pattern.label), Some(BODILESS));
    }

    #[test]
    fn a_redirect_is_permanent_in_both_layers() {
        for status in [300, 301, 302, 303, 307, 308, 399] {
            let verdict = both(ModelError::http(status, "redirect to http://127.0.0.1:1, not followed"));
            assert_eq!(verdict, (false, ExecAction::FailPermanently, Reason::PermanentStatus(status)));
        }
        assert_eq!(ModelError::http(307, "").kind(), "RedirectError");
        let reason = Reason::PermanentStatus(307).to_string();
        assert_eq!(reason, "HTTP 307 is permanent (a redirect of a POST is never followed)");
    }

    #[test]
    fn a_refused_certificate_and_a_bad_head_are_permanent_in_both_layers() {
        for kind in [TransportKind::Certificate, TransportKind::BadHead] {
            assert!(kind.is_permanent());
            let verdict = both(ModelError::transport(kind, "refused"));
            assert_eq!(verdict, (false, ExecAction::FailPermanently, Reason::Transport(kind)));
            assert!(Reason::Transport(kind).to_string().ends_with("is permanent: fix the configuration"));
        }
        let reset = both(ModelError::transport(TransportKind::Reset, "reset before headers"));
        assert_eq!(reset, (true, ExecAction::Retry, Reason::Transport(TransportKind::Reset)));
        assert!(!TransportKind::Reset.is_permanent());
    }
}
