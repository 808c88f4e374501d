//! The pattern sets of docs/design.md §4 and §5, each compiled once, matched case-insensitively.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::{Regex, RegexSet, RegexSetBuilder};

/// A compiled set that can say which of its patterns matched first, by its readable label.
pub(crate) struct PatternSet {
    labels: Vec<&'static str>,
    set: RegexSet,
}

impl PatternSet {
    fn new(patterns: &[(&'static str, &str)]) -> Self {
        // Case-sensitive over lowercased text (`first_match`): a case-insensitive set of this size is
        // several times slower on long texts, such as a proxy's HTML page. Every pattern is written in
        // lowercase.
        let set = RegexSetBuilder::new(patterns.iter().map(|(_, regex)| *regex))
            .build()
            .expect("the built-in pattern sets are valid regexes");
        Self { labels: patterns.iter().map(|(label, _)| *label).collect(), set }
    }

    /// The label of the first pattern (in the documented order) that matches `text`.
    pub(crate) fn first_match(&self, text: &str) -> Option<&'static str> {
        let lowered: Cow<'_, str> =
            if text.chars().any(char::is_uppercase) { Cow::Owned(text.to_lowercase()) } else { Cow::Borrowed(text) };
        self.set.matches(&lowered).iter().next().map(|index| self.labels[index])
    }
}

/// A pattern shown as it is written.
macro_rules! same {
    ($($pattern:literal),* $(,)?) => { &[$(($pattern, $pattern)),*] };
}

/// Context overflow (docs/design.md §4, rule 2): the 17 patterns and the bodiless 400/413.
pub(crate) static OVERFLOW: LazyLock<PatternSet> = LazyLock::new(|| {
    let mut patterns: Vec<(&str, &str)> = same![
        "prompt is too long",
        "input is too long for requested model",
        "exceeds the context window",
        r"input token count.*exceeds the maximum",
        r"maximum prompt length is \d+",
        "reduce the length of the messages",
        r"maximum context length is \d+ tokens",
        r"exceeds the limit of \d+",
        "exceeds the available context size",
        "greater than the context length",
        "context window exceeds limit",
        "exceeded model token limit",
        r"too large for model with \d+ maximum context length",
        "model_context_window_exceeded",
        "context[_ ]length[_ ]exceeded",
        "too many tokens",
        "token limit exceeded",
    ]
    .to_vec();
    patterns.push((r"4xx (no body)", r"^4(00|13)\s*(status code)?\s*\(no body\)"));
    PatternSet::new(&patterns)
});

/// Quota or billing exhausted (docs/design.md §4, rule 4; §5, rule 3).
pub(crate) static QUOTA: LazyLock<PatternSet> = LazyLock::new(|| {
    PatternSet::new(same![
        "insufficient_quota",
        "exceeded your current quota",
        "credit balance is too low",
        "insufficient credits",
        "insufficient balance",
        "payment required",
    ])
});

/// "retry in 2 s": a per-minute rate limit, even when worded as quota.
pub(crate) static RETRY_AFTER_TIME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)(?:try again|retry) in (\d+(?:\.\d+)?)\s*(ms|milliseconds?|s\b|secs?|seconds?|m\b|mins?|minutes?)?",
    )
    .expect("the retry-after text pattern is a valid regex")
});

/// Transient failures (docs/design.md §4, rule 7). Status numbers match only as whole numbers.
pub(crate) static RETRY: LazyLock<PatternSet> = LazyLock::new(|| {
    PatternSet::new(&[
        ("overloaded", "overloaded"),
        ("rate.?limit", "rate.?limit"),
        ("too many requests", "too many requests"),
        ("429", r"\b429\b"),
        ("500", r"\b500\b"),
        ("502", r"\b502\b"),
        ("503", r"\b503\b"),
        ("504", r"\b504\b"),
        ("service.?unavailable", "service.?unavailable"),
        ("server error", "server error"),
        ("internal error", "internal error"),
        ("connection.?error", "connection.?error"),
        ("connection.?refused", "connection.?refused"),
        ("other side closed", "other side closed"),
        ("fetch failed", "fetch failed"),
        ("upstream.?connect", "upstream.?connect"),
        ("reset before headers", "reset before headers"),
        ("terminated", "terminated"),
        ("retry delay", "retry delay"),
        ("529", r"\b529\b"),
        ("408", r"\b408\b"),
        ("bad gateway", "bad gateway"),
        (r"\btimed?.?outs?\b", r"\btimed?.?outs?\b"),
        ("connection.?reset", "connection.?reset"),
        ("connection.?closed", "connection.?closed"),
        ("broken.?pipe", "broken.?pipe"),
        ("unexpected.?eof", "unexpected.?eof"),
        ("incomplete.?message", "incomplete.?message"),
        ("stream (ended|closed) unexpectedly", "stream (ended|closed) unexpectedly"),
        (r"(try again|retry) in \d", r"(try again|retry) in \d"),
    ])
});

/// Permanent markers (docs/design.md §5, rule 3), matched as substrings of lower(`"<Kind>: <text>"`).
pub(crate) static PERMANENT: LazyLock<PatternSet> = LazyLock::new(|| {
    let markers = [
        "not a valid image",
        "invalid image",
        "image data is not",
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
    ];
    let escaped: Vec<String> = markers.iter().map(|marker| regex::escape(marker)).collect();
    let patterns: Vec<(&'static str, &str)> = markers.iter().copied().zip(escaped.iter().map(String::as_str)).collect();
    PatternSet::new(&patterns)
});

/// Typed overflow codes.
pub(crate) const OVERFLOW_CODES: [&str; 2] = ["context_length_exceeded", "model_context_window_exceeded"];

/// Typed quota codes.
pub(crate) const QUOTA_CODES: [&str; 2] = ["insufficient_quota", "billing_hard_limit_reached"];

#[cfg(test)]
mod tests {
    use super::*;

    /// The sets as docs/design.md §4 and §5 state them: case-insensitive regexes over the text as it is.
    fn reference(set: &PatternSet) -> RegexSet {
        RegexSetBuilder::new(set.set.patterns()).case_insensitive(true).build().unwrap()
    }

    /// Lowercasing the text and matching case-sensitively gives what the case-insensitive sets give,
    /// over the benchmark corpus of real error texts in three casings and some texts of other scripts.
    #[test]
    fn lowercased_matching_agrees_with_case_insensitive_sets() {
        let corpus = include_str!("../../benches/corpus/errors.txt");
        let extra = ["RATE LIMIT", "Überlastet: 503", "İNVALID API KEY", "ΣERVER ERROR", "Connection_Reset", ""];
        let sets = [("OVERFLOW", &*OVERFLOW), ("QUOTA", &*QUOTA), ("RETRY", &*RETRY), ("PERMANENT", &*PERMANENT)];
        let mut checked = 0;
        for (name, set) in sets {
            let reference = reference(set);
            for line in corpus.lines().chain(extra) {
                let toggled: String = line
                    .chars()
                    .enumerate()
                    .map(|(i, c)| if i % 2 == 0 { c.to_ascii_uppercase() } else { c })
                    .collect();
                for text in [line.to_owned(), line.to_uppercase(), toggled] {
                    let expected = reference.matches(&text).iter().next().map(|index| set.labels[index]);
                    assert_eq!(set.first_match(&text), expected, "{name} on {text:?}");
                    checked += usize::from(expected.is_some());
                }
            }
        }
        assert!(checked > 300, "the corpus exercises the sets: {checked} matches");
    }
}
