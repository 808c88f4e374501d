//! Both layers' verdicts on one failed call, from one scan of its text: what the exec loop does when
//! layer 1 hands a failure up to layer 2.

use super::exec::{ExecVerdict, exec_verdict_of};
use super::scan::{Markers, Scan};
use super::session::{SessionVerdict, session_verdict, session_verdict_of};
use crate::message::AssistantMessage;

/// Layer 1's verdict on `message` (its text as sent) and layer 2's (its `"<Kind>: <text>"`, see
/// [`AssistantMessage::failure_text`]), from one pass over the text: layer 2 scans only the kind it
/// reads before it.
///
/// # Examples
///
/// ```
/// use agentic_runtime::message::AssistantMessage;
/// use agentic_runtime::classify::{ExecAction, verdicts};
///
/// let (session, exec) = verdicts(&AssistantMessage::error_event("Rate limit reached", None));
/// assert!(session.retryable);
/// assert_eq!(exec.action, ExecAction::Retry);
/// ```
pub fn verdicts(message: &AssistantMessage) -> (SessionVerdict, ExecVerdict) {
    let error = message.error.as_ref();
    if !message.is_error() {
        let session = session_verdict(message.stop_reason, message.error_text(), error);
        return (session, exec_verdict_of(&Scan::new(&message.failure_text()), error));
    }
    let text = message.error_text();
    let scan = Scan::new(text);
    let session = session_verdict_of(&scan, error);
    let failure = message.failure_text();
    let exec = exec_verdict_of(&failure_scan(&failure, text, scan.markers()), error);
    (session, exec)
}

/// The scan of `failure`, a failure's `"<Kind>: <text>"` (or `text` itself), from the markers of
/// `text`: only a kind prefix is scanned.
pub(crate) fn failure_scan<'t>(failure: &'t str, text: &str, markers: Markers) -> Scan<'t> {
    match failure.len().checked_sub(text.len()).map(|at| failure.split_at(at)) {
        Some(("", rest)) if rest == text => Scan::with_markers(failure, markers),
        Some((prefix, rest)) if rest == text && prefix.ends_with(": ") => Scan::prefixed(failure, prefix, markers),
        _ => Scan::new(failure),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::exec_verdict;
    use crate::error::ModelError;

    /// One scan gives what each layer's verdict gives on its own text, over the corpus of real
    /// error texts, as error events and as typed errors.
    #[test]
    fn both_verdicts_from_one_scan_are_each_layers_own() {
        let corpus = include_str!("../../corpus/errors.txt");
        for line in corpus.lines() {
            for message in [
                AssistantMessage::error_event(line, None),
                AssistantMessage::error_event(format!("APIConnectionError: {line}"), None),
                AssistantMessage::error_event(line, Some(ModelError::http(503, line))),
                AssistantMessage::from_error(ModelError::http(400, line)),
                AssistantMessage::text(line),
            ] {
                let alone = (
                    session_verdict(message.stop_reason, message.error_text(), message.error.as_ref()),
                    exec_verdict(&message.failure_text(), message.error.as_ref()),
                );
                assert_eq!(verdicts(&message), alone, "{message:?}");
            }
        }
    }
}
