//! Layer 1's decision table (docs/design.md §4), rule by rule, in order.

use std::time::Duration;

use agentic_runtime::classify::{Reason, retry_hint, session_verdict};
use agentic_runtime::message::{AssistantMessage, StopReason};
use agentic_runtime::provider::{ModelError, TransportKind};

fn verdict(text: &str) -> (bool, String) {
    let verdict = session_verdict(StopReason::Error, text, None);
    (verdict.retryable, verdict.reason.to_string())
}

fn typed(text: &str, error: ModelError) -> (bool, Reason) {
    let verdict = session_verdict(StopReason::Error, text, Some(&error));
    (verdict.retryable, verdict.reason)
}

#[test]
fn rule_1_only_errors_are_retried() {
    for stop in [StopReason::Stop, StopReason::ToolUse, StopReason::Length, StopReason::Aborted] {
        let verdict = session_verdict(stop, "503 overloaded", None);
        assert!(!verdict.retryable);
        assert_eq!(verdict.reason, Reason::NotAnError(stop));
    }
}

#[test]
fn rule_2_context_overflow_is_never_retried() {
    let overflow = [
        "prompt is too long: 250000 tokens > 200000 maximum",
        "This model's maximum context length is 4290 tokens. However, you requested 5000 tokens",
        "input is too long for requested model",
        "the request exceeds the context window of this model",
        "Input token count (1200000) exceeds the maximum number of tokens allowed",
        "maximum prompt length is 131072",
        "Please reduce the length of the messages or completion.",
        "prompt exceeds the limit of 8192",
        "the request exceeds the available context size, try increasing it",
        "requested tokens is greater than the context length",
        "Request context window exceeds limit",
        "exceeded model token limit",
        "input too large for model with 8192 maximum context length",
        "model_context_window_exceeded",
        "context_length_exceeded",
        "context length exceeded",
        "Too many tokens in request",
        "token limit exceeded for this model",
        "400 status code (no body)",
        "413 (no body)",
    ];
    for text in overflow {
        let (retryable, reason) = verdict(text);
        assert!(!retryable, "{text} must not be retried");
        assert!(reason.starts_with("context overflow"), "{text}: {reason}");
    }
    // The reference retries these because they contain "500" or "429"; they are overflow.
    assert!(!verdict("prompt is too long: 250000 tokens").0);
    assert!(!verdict("maximum context length is 4290 tokens").0);
    // Typed code wins even when the text would be retried.
    let error = ModelError::http(400, "server error").with_code("context_length_exceeded");
    assert_eq!(typed("server error", error).1, Reason::OverflowCode("context_length_exceeded"));
    // Overflow beats x-should-retry: true.
    let error = ModelError::http(400, "prompt is too long").with_should_retry(true);
    assert!(!typed("prompt is too long", error).0);
}

#[test]
fn rule_3_x_should_retry_decides_when_present() {
    let error = ModelError::http(400, "bad request").with_should_retry(true);
    assert_eq!(typed("BadRequestError: 400 bad request", error), (true, Reason::ShouldRetry(true)));
    let error = ModelError::http(503, "overloaded").with_should_retry(false);
    assert_eq!(typed("ServiceUnavailableError: 503 overloaded", error), (false, Reason::ShouldRetry(false)));
}

#[test]
fn rule_4_quota_is_not_retried_unless_a_wait_is_stated() {
    for text in [
        "You exceeded your current quota, please check your plan and billing details",
        "insufficient_quota",
        "Your credit balance is too low to access the Anthropic API",
        "429 Too Many Requests: insufficient credits",
        "Insufficient balance",
        "402 Payment Required",
    ] {
        let (retryable, reason) = verdict(text);
        assert!(!retryable, "{text}");
        assert!(reason.starts_with("quota exhausted"), "{text}: {reason}");
    }
    // Gemini words its per-minute limit as quota but asks to retry after a time.
    let (retryable, reason) = verdict("You exceeded your current quota. Please retry in 23.5s.");
    assert!(retryable);
    assert_eq!(reason, r#"matched retry pattern "(try again|retry) in \d""#);
    // Typed codes.
    let error = ModelError::http(429, "rate limited").with_code("insufficient_quota");
    assert_eq!(typed("x", error), (false, Reason::QuotaCode("insufficient_quota")));
    let error = ModelError::http(400, "").with_code("billing_hard_limit_reached");
    assert_eq!(typed("x", error).1, Reason::QuotaCode("billing_hard_limit_reached"));
}

#[test]
fn rule_5_typed_status_and_transport() {
    for status in [408, 409, 425, 429, 500, 502, 503, 504, 529, 599] {
        assert_eq!(typed("", ModelError::http(status, "")), (true, Reason::RetryableStatus(status)));
    }
    for status in [400, 401, 403, 404, 413, 422] {
        // Even with a text that would match a retry pattern.
        let error = ModelError::http(status, "upstream overloaded");
        assert_eq!(typed("upstream overloaded", error), (false, Reason::PermanentStatus(status)));
    }
    for kind in [
        TransportKind::Connect,
        TransportKind::Timeout,
        TransportKind::Reset,
        TransportKind::StreamDropped,
        TransportKind::Truncated,
        TransportKind::Corrupted,
    ] {
        assert_eq!(typed("weird", ModelError::transport(kind, "weird")), (true, Reason::Transport(kind)));
    }
}

#[test]
fn rule_6_an_empty_message_is_a_dropped_stream() {
    assert_eq!(verdict(""), (true, "empty error message (a dropped stream)".to_owned()));
    assert!(verdict("  \n\t").0);
    let message = AssistantMessage::error_event("", None);
    assert!(agentic_runtime::classify::is_retryable_error(&message).retryable);
}

#[test]
fn rule_7_retry_patterns_case_insensitive() {
    let retried = [
        ("Overloaded", "overloaded"),
        ("Rate limit reached for requests", "rate.?limit"),
        ("rate_limit_error", "rate.?limit"),
        ("Too Many Requests", "too many requests"),
        ("Error 429", "429"),
        ("HTTP 500", "500"),
        ("502", "502"),
        ("status 503", "503"),
        ("504 from upstream", "504"),
        ("Service Unavailable", "service.?unavailable"),
        ("Internal Server Error", "server error"),
        ("internal error occurred", "internal error"),
        ("Connection error.", "connection.?error"),
        ("ECONNREFUSED connection refused", "connection.?refused"),
        ("other side closed", "other side closed"),
        ("TypeError: fetch failed", "fetch failed"),
        ("upstream connect error", "upstream.?connect"),
        ("reset before headers", "reset before headers"),
        ("request terminated", "terminated"),
        ("retry delay exceeded", "retry delay"),
        ("529 site overloaded", "overloaded"),
        ("status 529", "529"),
        ("408 from proxy", "408"),
        ("Bad Gateway", "bad gateway"),
        ("request timed out", r"\btimed?.?outs?\b"),
        ("Timeout waiting", r"\btimed?.?outs?\b"),
        ("connection reset by peer", "connection.?reset"),
        ("connection closed", "connection.?closed"),
        ("broken pipe", "broken.?pipe"),
        ("unexpected EOF", "unexpected.?eof"),
        ("incomplete message", "incomplete.?message"),
        ("stream ended unexpectedly", "stream (ended|closed) unexpectedly"),
        ("please try again in 3 seconds", r"(try again|retry) in \d"),
    ];
    for (text, pattern) in retried {
        assert_eq!(verdict(text), (true, format!("matched retry pattern \"{pattern}\"")), "{text}");
    }
}

#[test]
fn status_numbers_match_only_as_whole_numbers() {
    for text in ["took 15000 ms", "4290 tokens", "version 2.5000", "id 15029", "a5029b", "timeouts_config"] {
        assert_eq!(verdict(text), (false, "matched no retry pattern".to_owned()), "{text}");
    }
}

#[test]
fn anything_else_is_not_retried() {
    assert_eq!(verdict("invalid api key"), (false, "matched no retry pattern".to_owned()));
}

#[test]
fn retry_hints_from_headers_and_text() {
    let error = ModelError::http(429, "slow down").with_retry_after(Duration::from_secs(7));
    assert_eq!(retry_hint("please try again in 2s", Some(&error)), Some(Duration::from_secs(7)));
    assert_eq!(retry_hint("Please try again in 20 seconds.", None), Some(Duration::from_secs(20)));
    assert_eq!(retry_hint("retry in 1.5 minutes", None), Some(Duration::from_secs(90)));
    assert_eq!(retry_hint("retry in 250ms", None), Some(Duration::from_millis(250)));
    assert_eq!(retry_hint("retry later", None), None);
}

/// Gemini's errors as text, as they reach the classifiers from its SDKs (the canonical status
/// names, the seed's `google.api_core.exceptions` names): transient ones retry by rule 7, a
/// request no retry can fix does not (docs/design.md §4).
#[test]
fn gemini_texts_classify_like_the_same_failure_with_its_status() {
    for text in [
        "RESOURCE_EXHAUSTED: Resource has been exhausted (e.g. check quota).",
        "google.api_core.exceptions.ResourceExhausted: Resource exhausted",
        "google.api_core.exceptions.ServiceUnavailable: The model is overloaded",
        "google.api_core.exceptions.InternalServerError: An internal error has occurred",
        "InternalServerError",
        "DEADLINE_EXCEEDED: Deadline expired before operation could complete.",
        "google.api_core.exceptions.DeadlineExceeded: Deadline Exceeded",
    ] {
        let (retryable, reason) = verdict(text);
        assert!(retryable, "{text}: {reason}");
        assert!(reason.starts_with("matched retry pattern"), "{text}: {reason}");
    }
    for text in [
        "UNAUTHENTICATED: Request had invalid authentication credentials.",
        "INVALID_ARGUMENT: Request contains an invalid argument.",
        "FAILED_PRECONDITION: User location is not supported for the API use.",
    ] {
        assert!(!verdict(text).0, "{text}");
    }
}

/// The codes OpenAI's Responses API names its failures by (`response.failed`'s `error.code`), as
/// they reach the classifiers as text (another client's log, a journal line): the transient ones
/// retry by rule 7, as the same failure behind its HTTP status would.
#[test]
fn responses_codes_classify_like_the_same_failure_with_its_status() {
    for text in [
        "server_error: The server had an error while processing your request. Sorry about that!",
        "response.failed: server_is_overloaded: The server is overloaded.",
        "rate_limit_exceeded: Rate limit reached for gpt-4o on tokens per min (TPM).",
    ] {
        let (retryable, reason) = verdict(text);
        assert!(retryable, "{text}: {reason}");
        assert!(reason.starts_with("matched retry pattern"), "{text}: {reason}");
    }
    assert!(!verdict("invalid_prompt: Invalid prompt: your prompt was flagged.").0);
    let overflow = verdict("context_length_exceeded: Your input exceeds the context window of this model.");
    assert_eq!(overflow, (false, "context overflow: matched \"exceeds the context window\"".to_owned()));
}
