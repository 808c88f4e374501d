//! The `classify` check: both layers' verdicts and the retry hint on any text, with and without a
//! typed error of any kind and status, and both verdicts from one scan equal to each layer's own. Shared by `fuzz/fuzz_targets/classify.rs` and
//! `runtime/tests/fuzz_corpus.rs`.
//!
//! Input: bytes 0-1 the status, byte 2 the error's shape; the rest is the text (UTF-8, lossy).

use std::time::Duration;

use agentic_runtime::classify::{exec_verdict, is_context_overflow, retry_hint, session_verdict, verdicts};
use agentic_runtime::message::{AssistantMessage, StopReason};
use agentic_runtime::provider::{ModelError, TransportKind};

/// Kinds the classifiers know by name, and one they do not.
const KINDS: [&str; 8] = [
    "RateLimitError",
    "APIError",
    "OverloadedError",
    "BadRequestError",
    "TypeError",
    "ValueError",
    "MalformedStreamError",
    "SomethingNewError",
];

/// Never panics; the verdicts are deterministic and their texts can be formatted.
pub fn check(data: &[u8]) {
    let [high, low, shape, text @ ..] = data else { return };
    let status = u16::from_be_bytes([*high, *low]);
    let text = String::from_utf8_lossy(text);
    let parsed = ModelError::parse(&text);
    assert!(!parsed.kind().is_empty());
    let typed = match shape % 8 {
        0 => None,
        1 => Some(parsed),
        2 => Some(ModelError::http(status, &*text)),
        3 => Some(ModelError::transport(TransportKind::StreamDropped, &*text).with_status(status)),
        4 => Some(ModelError::programming("TypeError", &*text)),
        _ => {
            let kind = KINDS[usize::from(shape >> 3) % KINDS.len()];
            let mut error = ModelError::new(kind, &*text).with_status(status);
            if shape & 0x40 != 0 {
                error = error.with_code(text.split_whitespace().next().unwrap_or("")).with_should_retry(shape & 1 == 0);
            }
            if shape & 0x80 != 0 {
                error = error.with_retry_after(Duration::from_millis(u64::from(status)));
            }
            Some(error)
        }
    };
    let error = typed.as_ref();
    for stop_reason in [StopReason::Error, StopReason::Stop] {
        let verdict = session_verdict(stop_reason, &text, error);
        assert_eq!(verdict, session_verdict(stop_reason, &text, error));
        let _ = format!("{verdict} {:?}", verdict.reason);
    }
    let verdict = exec_verdict(&text, error);
    assert_eq!(verdict, exec_verdict(&text, error));
    let _ = format!("{} {:?}", verdict.reason, verdict.action);
    let _ = is_context_overflow(&text, error);
    let hint = retry_hint(&text, error);
    if let Some(wait) = error.and_then(ModelError::retry_after) {
        assert_eq!(hint, Some(wait), "the typed hint wins over the text");
    }
    let _ = format!("{} {error:?}", error.map(ToString::to_string).unwrap_or_default());
    // Both verdicts from one scan are each layer's own: layer 1 on the text, layer 2 on the
    // failure's "<Kind>: <text>".
    let message = AssistantMessage::error_event(&*text, typed.clone());
    let alone = (session_verdict(StopReason::Error, &text, error), exec_verdict(&message.failure_text(), error));
    assert_eq!(verdicts(&message), alone, "one scan for both layers on {text:?}");
}
