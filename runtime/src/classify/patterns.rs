//! The pattern sets of docs/design.md §4 and §5, as data: each pattern with its label, its regex
//! (lowercase, matched against the lowercased text) and its anchors, the substrings one of which
//! every match contains, which the one pass of [`Scan`](super::scan::Scan) looks for.

use std::sync::LazyLock;

use regex::Regex;

/// One pattern of a set.
pub(crate) struct Pattern {
    /// The pattern as docs/design.md and the verdicts show it.
    pub(crate) label: &'static str,
    /// The regex, lowercase; a plain text when `exact` (and `anchors` is that text).
    pub(crate) regex: &'static str,
    /// Substrings, lowercase, one of which every match of `regex` contains.
    pub(crate) anchors: &'static [&'static str],
    /// True when finding an anchor is a match (the pattern is a plain text, or its anchors are all
    /// its spellings); otherwise a found anchor is confirmed with `regex`.
    pub(crate) exact: bool,
}

/// A plain text: its own label, regex and anchor.
macro_rules! text {
    ($text:literal) => {
        Pattern { label: $text, regex: $text, anchors: &[$text], exact: true }
    };
}

/// A regex, found by its anchors and confirmed by itself.
macro_rules! regex {
    ($label:literal, $regex:literal, [$($anchor:literal),+]) => {
        Pattern { label: $label, regex: $regex, anchors: &[$($anchor),+], exact: false }
    };
    ($regex:literal, [$($anchor:literal),+]) => {
        regex!($regex, $regex, [$($anchor),+])
    };
}

/// A regex with a few spellings, each of which is a match.
macro_rules! spellings {
    ($regex:literal, [$($spelling:literal),+]) => {
        Pattern { label: $regex, regex: $regex, anchors: &[$($spelling),+], exact: true }
    };
}

/// Context overflow (docs/design.md §4, rule 2): the 17 patterns and the bodiless 400/413.
pub(crate) static OVERFLOW: &[Pattern] = &[
    text!("prompt is too long"),
    text!("input is too long for requested model"),
    text!("exceeds the context window"),
    regex!(r"input token count.*exceeds the maximum", ["input token count"]),
    regex!(r"maximum prompt length is \d+", ["maximum prompt length is"]),
    text!("reduce the length of the messages"),
    regex!(r"maximum context length is \d+ tokens", ["maximum context length is"]),
    regex!(r"exceeds the limit of \d+", ["exceeds the limit of"]),
    text!("exceeds the available context size"),
    text!("greater than the context length"),
    text!("context window exceeds limit"),
    text!("exceeded model token limit"),
    regex!(r"too large for model with \d+ maximum context length", ["too large for model with"]),
    text!("model_context_window_exceeded"),
    spellings!(
        "context[_ ]length[_ ]exceeded",
        ["context_length_exceeded", "context length exceeded", "context_length exceeded", "context length_exceeded"]
    ),
    text!("too many tokens"),
    text!("token limit exceeded"),
    regex!(r"4xx (no body)", r"^4(00|13)\s*(status code)?\s*\(no body\)", ["(no body)"]),
];

/// Quota or billing exhausted (docs/design.md §4, rule 4; §5, rule 3).
pub(crate) static QUOTA: &[Pattern] = &[
    text!("insufficient_quota"),
    text!("exceeded your current quota"),
    text!("credit balance is too low"),
    text!("insufficient credits"),
    text!("insufficient balance"),
    text!("payment required"),
    // A quota named daily (OpenRouter's `Rate limit exceeded: free-models-per-day`, Google's
    // `...PerDay...` quota ids): spent until tomorrow, unless the text says when to come back.
    spellings!("per.?day", ["per-day", "per day", "perday", "per_day"]),
];

/// Transient failures (docs/design.md §4, rule 7). Status numbers match only as whole numbers.
pub(crate) static RETRY: &[Pattern] = &[
    text!("overloaded"),
    regex!("rate.?limit", ["limit"]),
    text!("too many requests"),
    regex!("429", r"\b429\b", ["429"]),
    regex!("500", r"\b500\b", ["500"]),
    regex!("502", r"\b502\b", ["502"]),
    regex!("503", r"\b503\b", ["503"]),
    regex!("504", r"\b504\b", ["504"]),
    regex!("service.?unavailable", ["unavailable"]),
    text!("server error"),
    text!("internal error"),
    regex!("connection.?error", ["connection"]),
    regex!("connection.?refused", ["refused"]),
    text!("other side closed"),
    text!("fetch failed"),
    regex!("upstream.?connect", ["upstream"]),
    text!("reset before headers"),
    text!("terminated"),
    text!("retry delay"),
    regex!("529", r"\b529\b", ["529"]),
    regex!("408", r"\b408\b", ["408"]),
    text!("bad gateway"),
    regex!(r"\btimed?.?outs?\b", ["time"]),
    regex!("connection.?reset", ["reset"]),
    regex!("connection.?closed", ["closed"]),
    regex!("broken.?pipe", ["pipe"]),
    regex!("unexpected.?eof", ["eof"]),
    regex!("incomplete.?message", ["incomplete"]),
    spellings!("stream (ended|closed) unexpectedly", ["stream ended unexpectedly", "stream closed unexpectedly"]),
    regex!(r"(try again|retry) in \d", ["try again in", "retry in"]),
    // Google's canonical codes and the `google.api_core.exceptions` names of Google's Python clients:
    // `RESOURCE_EXHAUSTED` / `ResourceExhausted`, `DEADLINE_EXCEEDED`, `InternalServerError`.
    regex!("resource.?exhausted", ["exhausted"]),
    regex!("deadline.?exceeded", ["deadline"]),
    regex!("internal.?server.?error", ["internal"]),
    // OpenAI's Responses codes, as `response.failed` names its failures (`server_is_overloaded`
    // and `rate_limit_exceeded` match the patterns above).
    text!("server_error"),
    // Bedrock's throttling (`Too many tokens, please wait before trying again.`).
    text!("please wait"),
];

/// Permanent markers (docs/design.md §5, rule 3), matched as substrings of lower(`"<Kind>: <text>"`).
pub(crate) static PERMANENT: &[Pattern] = &[
    text!("not a valid image"),
    text!("invalid image"),
    text!("image data is not"),
    text!("login expired"),
    text!("login failed"),
    text!("re-auth"),
    text!("unauthorized"),
    text!("invalid api key"),
    text!("invalid_api_key"),
    text!("invalid x-api-key"),
    text!("incorrect api key"),
    text!("api key not valid"),
    text!("authentication_error"),
    text!("permission_denied"),
    text!("access denied"),
    text!("accessdenied"),
    text!("model_not_found"),
    // Google's canonical codes for a request no retry can fix.
    text!("unauthenticated"),
    text!("invalid_argument"),
    text!("failed_precondition"),
    // OpenAI's Responses code for a prompt no retry makes acceptable.
    text!("invalid_prompt"),
];

/// The permanent markers that say a failure is the target's own, not the request's: its key, its
/// login or its model. With fallbacks (`RuntimeBuilder::with_fallback`) such a failure moves the exec to
/// the next target, whose key and model are others; an invalid image or argument would fail there
/// too, and ends the exec.
pub(crate) const TARGET_MARKERS: &[&str] = &[
    "login expired",
    "login failed",
    "re-auth",
    "unauthorized",
    "invalid api key",
    "invalid_api_key",
    "invalid x-api-key",
    "incorrect api key",
    "api key not valid",
    "authentication_error",
    "permission_denied",
    "access denied",
    "accessdenied",
    "model_not_found",
    "unauthenticated",
];

/// A text that says it is a rate limit whatever else it says: a whole-number 429, or "please
/// wait". It outranks the overflow patterns (`too many tokens` is Bedrock's throttling too).
pub(crate) static RATE_LIMITED: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\b429\b|please wait").expect("the rate-limit pattern is a valid regex"));

/// "retry in 2 s": a per-minute rate limit, even when worded as quota. Matched against the text as
/// it is (case-insensitively), where a scan found one of [`RETRY_AFTER_TIME_ANCHORS`].
pub(crate) static RETRY_AFTER_TIME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)(?:try again|retry) in (\d+(?:\.\d+)?)\s*(ms|milliseconds?|s\b|secs?|seconds?|m\b|mins?|minutes?)?",
    )
    .expect("the retry-after text pattern is a valid regex")
});

/// What every match of [`RETRY_AFTER_TIME`] contains, lowercased.
pub(crate) const RETRY_AFTER_TIME_ANCHORS: &[&str] = &["try again in", "retry in"];

/// The error codes ([`ModelError::code`](crate::provider::ModelError::code), a journal record's
/// `code`) that say the request overflowed the model's context: a context overflow whatever the
/// text says.
pub const OVERFLOW_CODES: [&str; 2] = ["context_length_exceeded", "model_context_window_exceeded"];

/// The error codes ([`ModelError::code`](crate::provider::ModelError::code), a journal record's
/// `code`) that say the quota or the billing is spent: the providers' own, and those the runtime
/// gives a Google error naming a daily quota (`daily_quota_exhausted`) or `QUOTA_EXHAUSTED`
/// (`quota_exhausted`).
pub const QUOTA_CODES: [&str; 4] = ["insufficient_quota", "billing_hard_limit_reached", DAILY_QUOTA, QUOTA_EXHAUSTED];

/// The code of an error whose Google `QuotaFailure` names a daily quota (`...PerDay...`): spent
/// until tomorrow, as Google's own gemini-cli treats it.
pub(crate) const DAILY_QUOTA: &str = "daily_quota_exhausted";

/// The code of an error whose body states its limit spent until a reset an hour or more away
/// (OpenRouter's `metadata.headers`: `X-RateLimit-Remaining: 0`, `X-RateLimit-Reset` hours away).
pub(crate) const QUOTA_UNTIL_RESET: &str = "quota_spent_until_reset";

/// The code of an error whose Google `ErrorInfo.reason` is `QUOTA_EXHAUSTED`.
pub(crate) const QUOTA_EXHAUSTED: &str = "quota_exhausted";
