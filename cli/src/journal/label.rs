//! The short label that groups failures of the same cause: `"429 rate limited"`, `"timeout"`.
//!
//! It reads the error the way the runtime writes it (`"<Kind>: <text>"`, parsed by
//! [`ModelError::parse`]) and the codes the runtime's classifier knows ([`OVERFLOW_CODES`],
//! [`QUOTA_CODES`]), so the journal and the retry layers name a cause alike.

use agentic_runtime::classify::{OVERFLOW_CODES, QUOTA_CODES};
use agentic_runtime::provider::ModelError;

/// The longest label made from an error's own text, in characters (a `…` marks the cut).
const MAX_TEXT_LABEL: usize = 40;

/// A short summary of a failure, the same for failures of the same cause, from the failure's
/// kind (`agentic_runtime::ExecErrorKind::name`), last error (`"<Kind>: <text>"`),
/// HTTP status and provider error code. The first rule that applies gives the label:
///
/// 1. kind `context_overflow`, or code `context_length_exceeded` / `model_context_window_exceeded`:
///    `"context overflow"`.
/// 2. kind `invalid_result` (the validator rejected every reply): `"rejected by validator"`.
/// 3. code `insufficient_quota` / `billing_hard_limit_reached`: `"quota exhausted"`, after the
///    status when there is one (`"429 quota exhausted"`).
/// 4. an HTTP status, given or read from the start of the error's text (`"RateLimitError: 429
///    ..."`, `"503 ..."`; 400 to 599 only; not after a transport kind of rule 5): the status and its name: `"400 bad request"`, `"401
///    unauthorized"`, `"402 payment required"`, `"403 forbidden"`, `"404 not found"`, `"408
///    request timeout"`, `"409 conflict"`, `"413 request too large"`, `"422 unprocessable"`,
///    `"425 too early"`, `"429 rate limited"`, `"500 server error"`, `"502 bad gateway"`, `"503
///    unavailable"`, `"504 gateway timeout"`, `"529 overloaded"`; another 4xx is `"<status>
///    client error"`, another 5xx `"<status> server error"`, any other `"<status> http error"`.
/// 5. the error's kind: `TimeoutError` and `RequestTimeoutError` give `"timeout"`,
///    `ConnectionError` `"connection failed"`, `ConnectionResetError` `"connection reset"`,
///    `StreamDroppedError` `"dropped stream"`, `IncompleteStreamError` `"truncated stream"`,
///    `MalformedStreamError` `"malformed stream"`, `RateLimitError` `"rate limited"`,
///    `OverloadedError` `"overloaded"`.
/// 6. an empty error (a bare `ModelError`, or nothing): `"dropped stream"` — a stream that ended
///    with no error text, which is how a dropped connection looks (docs/design.md §4, rule 6).
/// 7. words in the text (case-insensitive): "rate limit" or "too many requests" give `"rate
///    limited"`, "overloaded" `"overloaded"`, "timed out" or "timeout" `"timeout"`.
/// 8. otherwise a specific kind (any but the generic `ModelError`, `Error`, `Exception`) is the
///    label (`"ValueError"`), else the text's first line, cut to [`MAX_TEXT_LABEL`] characters.
pub(super) fn failure_label(kind: &str, last_error: &str, status: Option<u16>, code: Option<&str>) -> String {
    if kind == "context_overflow" || code.is_some_and(|code| OVERFLOW_CODES.contains(&code)) {
        return "context overflow".to_owned();
    }
    if kind == "invalid_result" {
        return "rejected by validator".to_owned();
    }
    let error = ModelError::parse(last_error);
    let (error_kind, text) = (error.kind(), error.message());
    let status = status.or_else(|| leading_status(error_kind, text));
    if code.is_some_and(|code| QUOTA_CODES.contains(&code)) {
        return match status {
            Some(status) => format!("{status} quota exhausted"),
            None => "quota exhausted".to_owned(),
        };
    }
    if let Some(status) = status {
        return format!("{status} {}", status_name(status));
    }
    let text = text.trim();
    if let Some(label) = kind_label(error_kind) {
        return label.to_owned();
    }
    if text.is_empty() && error_kind == "ModelError" {
        return "dropped stream".to_owned();
    }
    let lower = text.to_lowercase();
    if lower.contains("rate limit") || lower.contains("rate-limit") || lower.contains("too many requests") {
        return "rate limited".to_owned();
    }
    if lower.contains("overloaded") {
        return "overloaded".to_owned();
    }
    if lower.contains("timed out") || lower.contains("timeout") {
        return "timeout".to_owned();
    }
    if !matches!(error_kind, "ModelError" | "Error" | "Exception") {
        return error_kind.to_owned();
    }
    cut_to_label(text.lines().next().unwrap_or_default())
}

/// The name of an HTTP error status, as labels use it.
fn status_name(status: u16) -> &'static str {
    match status {
        400 => "bad request",
        401 => "unauthorized",
        402 => "payment required",
        403 => "forbidden",
        404 => "not found",
        408 => "request timeout",
        409 => "conflict",
        413 => "request too large",
        422 => "unprocessable",
        425 => "too early",
        429 => "rate limited",
        500 => "server error",
        502 => "bad gateway",
        503 => "unavailable",
        504 => "gateway timeout",
        529 => "overloaded",
        _ if (400..=499).contains(&status) => "client error",
        _ if (500..=599).contains(&status) => "server error",
        _ => "http error",
    }
}

/// The label of an error kind that says it all.
fn kind_label(kind: &str) -> Option<&'static str> {
    Some(match kind {
        "TimeoutError" | "RequestTimeoutError" => "timeout",
        "ConnectionError" => "connection failed",
        "ConnectionResetError" => "connection reset",
        "StreamDroppedError" => "dropped stream",
        "IncompleteStreamError" => "truncated stream",
        "MalformedStreamError" => "malformed stream",
        "RateLimitError" => "rate limited",
        "OverloadedError" => "overloaded",
        _ => return None,
    })
}

/// The HTTP status an error's text (after its `kind`) starts with: `"RateLimitError: 429 Too Many
/// Requests"` and `"429 Too Many Requests"` give 429. Only 400 to 599 count, and not after a
/// transport kind (`"TimeoutError: 500 ms"` is no HTTP 500).
fn leading_status(kind: &str, rest: &str) -> Option<u16> {
    if kind_label(kind).is_some() && !matches!(kind, "RateLimitError" | "OverloadedError" | "RequestTimeoutError") {
        return None;
    }
    let digits = rest.get(..3)?;
    let after = rest[3..].chars().next();
    if !digits.bytes().all(|b| b.is_ascii_digit()) || after.is_some_and(|c| c.is_ascii_alphanumeric()) {
        return None;
    }
    digits.parse().ok().filter(|status| (400..=599).contains(status))
}

/// `text` cut to [`MAX_TEXT_LABEL`] characters, with `…` at the cut.
fn cut_to_label(text: &str) -> String {
    match text.char_indices().nth(MAX_TEXT_LABEL) {
        None => text.to_owned(),
        Some((cut, _)) => {
            let kept = text[..cut].char_indices().nth(MAX_TEXT_LABEL - 1).map_or(cut, |(index, _)| index);
            format!("{}…", text[..kept].trim_end())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn label(kind: &str, last_error: &str) -> String {
        failure_label(kind, last_error, None, None)
    }

    fn leading_status(text: &str) -> Option<u16> {
        let error = ModelError::parse(text);
        super::leading_status(error.kind(), error.message())
    }

    #[test]
    fn one_label_per_cause() {
        assert_eq!(
            failure_label("exhausted", "RateLimitError: 429 Too Many Requests", Some(429), None),
            "429 rate limited"
        );
        assert_eq!(label("exhausted", "ModelError: 503 overloaded"), "503 unavailable");
        assert_eq!(label("refused", "TimeoutError: no reply in 30 s"), "timeout");
        assert_eq!(label("exhausted", "ModelError"), "dropped stream");
        assert_eq!(label("permanent", "ValueError: bad id 7"), "ValueError");
    }

    #[test]
    fn leading_status_reads_only_a_status_at_the_start() {
        assert_eq!(leading_status("RateLimitError: 429 Too Many Requests"), Some(429));
        assert_eq!(leading_status("503"), Some(503));
        assert_eq!(leading_status("ModelError: 503: overloaded"), Some(503));
        assert_eq!(leading_status("ServiceUnavailableError: 503"), Some(503));
        assert_eq!(leading_status("ModelError: 4290 tokens"), None);
        assert_eq!(leading_status("ModelError: 200 OK"), None);
        assert_eq!(leading_status("ModelError: waited 429 ms"), None);
        assert_eq!(leading_status("TimeoutError: 500 ms without a byte"), None);
        assert_eq!(leading_status("é"), None);
        assert_eq!(leading_status(""), None);
    }

    #[test]
    fn statuses_given_or_read_from_the_text() {
        assert_eq!(
            failure_label("exhausted", "RateLimitError: 429 Too Many Requests", Some(429), None),
            "429 rate limited"
        );
        assert_eq!(label("permanent", "AuthenticationError: 401 invalid api key"), "401 unauthorized");
        assert_eq!(label("exhausted", "ServiceUnavailableError: 503"), "503 unavailable");
        assert_eq!(label("exhausted", "ModelError: 429 Too Many Requests"), "429 rate limited");
        assert_eq!(label("exhausted", "529 Overloaded"), "529 overloaded");
        assert_eq!(label("permanent", "APIStatusError: 418 teapot"), "418 client error");
        assert_eq!(label("exhausted", "InternalServerError: 599"), "599 server error");
        assert_eq!(failure_label("exhausted", "anything", Some(504), None), "504 gateway timeout");
        assert_eq!(failure_label("exhausted", "anything", Some(302), None), "302 http error");
    }

    #[test]
    fn codes_and_kinds_come_before_statuses() {
        assert_eq!(label("context_overflow", "BadRequestError: 400 prompt is too long"), "context overflow");
        let overflow = failure_label("permanent", "x", Some(400), Some("context_length_exceeded"));
        assert_eq!(overflow, "context overflow");
        let quota = failure_label("permanent", "RateLimitError: 429 quota", Some(429), Some("insufficient_quota"));
        assert_eq!(quota, "429 quota exhausted");
        assert_eq!(failure_label("permanent", "x", None, Some("billing_hard_limit_reached")), "quota exhausted");
        assert_eq!(label("invalid_result", "InvalidResult: 10 of 60 results"), "rejected by validator");
    }

    #[test]
    fn transport_kinds_and_empty_errors() {
        assert_eq!(label("exhausted", "TimeoutError: no reply in 30 s"), "timeout");
        assert_eq!(label("exhausted", "TimeoutError: 500 ms without a byte"), "timeout");
        assert_eq!(label("exhausted", "ConnectionError: refused"), "connection failed");
        assert_eq!(label("exhausted", "ConnectionResetError: reset by peer"), "connection reset");
        assert_eq!(label("exhausted", "StreamDroppedError: eof"), "dropped stream");
        assert_eq!(label("exhausted", "IncompleteStreamError: no message_stop"), "truncated stream");
        assert_eq!(label("exhausted", "MalformedStreamError: bad json"), "malformed stream");
        assert_eq!(label("exhausted", "ModelError"), "dropped stream");
        assert_eq!(label("exhausted", ""), "dropped stream");
    }

    #[test]
    fn words_in_the_text() {
        assert_eq!(label("exhausted", "ModelError: Rate limit reached for gpt-4"), "rate limited");
        assert_eq!(label("exhausted", "ModelError: Overloaded"), "overloaded");
        assert_eq!(label("refused", "ModelError: request timed out"), "timeout");
    }

    #[test]
    fn otherwise_the_kind_or_the_shortened_text() {
        assert_eq!(label("permanent", "ValueError: bad id 7"), "ValueError");
        assert_eq!(label("programming", "TypeError: missing argument"), "TypeError");
        assert_eq!(label("exhausted", "ModelError: something odd\nsecond line"), "something odd");
        let long = "ModelError: ".to_owned() + &"é".repeat(60);
        let shortened = label("exhausted", &long);
        assert_eq!(shortened.chars().count(), MAX_TEXT_LABEL);
        assert!(shortened.ends_with('…'));
        assert_eq!(label("exhausted", &("x".repeat(40))), "x".repeat(40));
    }
}
