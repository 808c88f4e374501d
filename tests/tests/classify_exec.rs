//! Layer 2's decision table (docs/design.md §5), rule by rule, in order.

use agentic_runtime::classify::{ExecAction, Reason, exec_verdict};
use agentic_runtime::provider::ModelError;

fn action(text: &str) -> ExecAction {
    exec_verdict(text, None).action
}

#[test]
fn rule_1_programming_errors_are_raised() {
    assert_eq!(exec_verdict("TypeError: missing field", None).reason, Reason::Programming("TypeError"));
    assert_eq!(action("NotImplementedError"), ExecAction::Raise);
    assert_eq!(action("NotImplementedError: streaming tools"), ExecAction::Raise);
    // Only as the kind, not anywhere in the text.
    assert_eq!(action("RuntimeError: got a TypeError upstream"), ExecAction::Retry);
    let typed = ModelError::programming("UnsupportedFeature", "tools are not supported by this provider");
    assert_eq!(exec_verdict("UnsupportedFeature: tools", Some(&typed)).action, ExecAction::Raise);
    // Raise wins over a permanent marker.
    assert_eq!(action("TypeError: unauthorized"), ExecAction::Raise);
}

#[test]
fn rule_2_context_overflow_stops() {
    assert_eq!(action("BadRequestError: prompt is too long: 250000 tokens"), ExecAction::ContextOverflow);
    assert_eq!(action("ModelError: maximum context length is 4290 tokens"), ExecAction::ContextOverflow);
    // The anchored bodiless-400 pattern is found behind the kind prefix.
    assert_eq!(action("ModelError: 400 (no body)"), ExecAction::ContextOverflow);
    assert_eq!(action("BadRequestError: 413 status code (no body)"), ExecAction::ContextOverflow);
    let typed = ModelError::http(400, "bad").with_code("model_context_window_exceeded");
    assert_eq!(exec_verdict("BadRequestError: 400 bad", Some(&typed)).action, ExecAction::ContextOverflow);
}

#[test]
fn rule_3_permanent_markers_from_the_reference_and_added() {
    for text in [
        "ValueError: not a valid image",
        "BadRequestError: invalid image data",
        "image data is not decodable",
        "RuntimeError: Login expired, please re-login",
        "login failed",
        "please re-auth",
        "Unauthorized",
        "AuthenticationError: Invalid API key provided",
        "invalid_api_key",
        "invalid x-api-key",
        "Incorrect API key provided: sk-...",
        "API key not valid. Please pass a valid API key.",
        "authentication_error",
        "PERMISSION_DENIED",
        "Access Denied",
        "AccessDenied",
        "model_not_found",
        "You exceeded your current quota",
        "429 Too Many Requests: insufficient credits",
    ] {
        let verdict = exec_verdict(text, None);
        assert_eq!(verdict.action, ExecAction::FailPermanently, "{text}");
    }
    assert_eq!(exec_verdict("Unauthorized", None).reason.to_string(), "matched permanent marker \"unauthorized\"");
    // A quota text that asks to retry after a time is a rate limit.
    assert_eq!(action("RateLimitError: exceeded your current quota, retry in 20s"), ExecAction::Retry);
}

#[test]
fn rule_3_typed_permanence() {
    let cases = [
        (ModelError::http(401, "nope"), ExecAction::FailPermanently),
        (ModelError::http(404, "no such thing"), ExecAction::FailPermanently),
        (ModelError::http(429, "slow down"), ExecAction::Retry),
        (ModelError::http(408, ""), ExecAction::Retry),
        (ModelError::http(409, ""), ExecAction::Retry),
        (ModelError::http(425, ""), ExecAction::Retry),
        (ModelError::http(503, "").with_should_retry(false), ExecAction::FailPermanently),
        (ModelError::http(400, "odd").with_should_retry(true), ExecAction::Retry),
        (ModelError::http(429, "").with_code("insufficient_quota"), ExecAction::FailPermanently),
    ];
    for (error, expected) in cases {
        assert_eq!(exec_verdict(&error.to_string(), Some(&error)).action, expected, "{error}");
    }
}

#[test]
fn everything_else_is_worth_another_attempt() {
    for text in ["RateLimitError: 429", "ModelError", "ValueError: something odd", ""] {
        assert_eq!(
            exec_verdict(text, None),
            agentic_runtime::classify::ExecVerdict { action: ExecAction::Retry, reason: Reason::NotPermanent }
        );
    }
}

/// Google's canonical codes for a request no retry can fix are permanent markers; its transient
/// ones are not (docs/design.md §5).
#[test]
fn gemini_codes_no_retry_can_fix_are_permanent() {
    for text in [
        "ModelError: UNAUTHENTICATED: Request had invalid authentication credentials.",
        "ModelError: INVALID_ARGUMENT: Request contains an invalid argument.",
        "ModelError: FAILED_PRECONDITION: User location is not supported for the API use.",
        "ModelError: PERMISSION_DENIED: Permission denied on resource project x.",
    ] {
        assert_eq!(action(text), ExecAction::FailPermanently, "{text}");
    }
    for text in ["ModelError: RESOURCE_EXHAUSTED: Resource has been exhausted", "ModelError: UNAVAILABLE: overloaded"] {
        assert_eq!(action(text), ExecAction::Retry, "{text}");
    }
}

/// OpenAI's Responses code for a prompt it refuses is permanent as text too; its transient codes
/// are not.
#[test]
fn rule_3_responses_codes() {
    assert_eq!(
        exec_verdict(
            "APIError: invalid_prompt: Invalid prompt: flagged as potentially violating our usage policy.",
            None
        )
        .reason,
        Reason::PermanentMarker("invalid_prompt")
    );
    assert_eq!(action("APIError: server_error: The server had an error"), ExecAction::Retry);
}

/// Texts read wrongly before: Bedrock's throttling is a rate limit, not an overflow (a
/// 429 or "please wait" says so, and a transient status outranks every overflow pattern); Groq's
/// 498 is transient; OpenRouter's spent daily quota is final for the exec, as Google's `PerDay` is.
#[test]
fn rate_limits_worded_as_overflow_and_daily_quotas_are_read_as_sent() {
    use agentic_runtime::classify::session_verdict;
    use agentic_runtime::message::StopReason;
    let bedrock = "Too many tokens, please wait before trying again.";
    for (text, error) in [
        (format!("RateLimitError: 429 {bedrock}"), Some(ModelError::http(429, format!("429 {bedrock}")))),
        (format!("ModelError: 429 {bedrock}"), None),
        (format!("ThrottlingException: {bedrock}"), None),
    ] {
        let verdict = exec_verdict(&text, error.as_ref());
        assert_eq!(verdict.action, ExecAction::Retry, "{text}: {verdict}");
        assert!(session_verdict(StopReason::Error, &text, error.as_ref()).retryable, "{text}");
    }
    // A transient status outranks the overflow words; a 400 with them is an overflow still.
    let typed = ModelError::http(503, "prompt is too long");
    assert_eq!(exec_verdict("ServiceUnavailableError: 503 prompt is too long", Some(&typed)).action, ExecAction::Retry);
    assert_eq!(
        action("cohere.errors.BadRequestError: status_code: 400, too many tokens: 131842"),
        ExecAction::ContextOverflow
    );
    // Groq's flex tier at capacity: transient, and the decision says what 498 is.
    let groq = ModelError::http(498, "498 Flex tier capacity exceeded");
    assert_eq!(exec_verdict(&groq.to_string(), Some(&groq)).action, ExecAction::Retry);
    let session = session_verdict(StopReason::Error, &groq.to_string(), Some(&groq));
    assert_eq!((session.retryable, session.reason), (true, Reason::FlexTierCapacity));
    assert_eq!(session.to_string(), "retryable: HTTP 498: the flex tier is at capacity (Groq), transient");
    // OpenRouter's free models' daily quota: final, typed or not.
    let daily = "Rate limit exceeded: free-models-per-day. Add 10 credits to unlock 1000 free model requests per day";
    let typed = ModelError::http(429, format!("429 {daily}"));
    let verdict = exec_verdict(&format!("RateLimitError: 429 {daily}"), Some(&typed));
    assert_eq!((verdict.action, verdict.reason), (ExecAction::FailPermanently, Reason::QuotaText("per.?day")));
    assert!(!session_verdict(StopReason::Error, daily, Some(&typed)).retryable);
    assert_eq!(action(daily), ExecAction::FailPermanently);
    // Groq's tokens-per-day limit says when to come back: a rate limit, retried.
    assert_eq!(action("Rate limit reached for tokens per day (TPD). Please try again in 2m52s."), ExecAction::Retry);
}
