//! What a server says of its rate limits on a response: for each limit it enforces, its size, what
//! is left, and when it is full again.

use std::fmt;
use std::time::Duration;

/// One of the limits a provider enforces per key (docs/design.md §10, "Pacing").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum LimitKind {
    /// Requests (OpenAI `x-ratelimit-*-requests`, Anthropic `anthropic-ratelimit-requests-*`).
    Requests,
    /// Tokens, input and output together (OpenAI `x-ratelimit-*-tokens`; Anthropic
    /// `anthropic-ratelimit-tokens-*`, the most restrictive of its token limits).
    Tokens,
    /// Input tokens (Anthropic `anthropic-ratelimit-input-tokens-*`).
    InputTokens,
    /// Output tokens (Anthropic `anthropic-ratelimit-output-tokens-*`).
    OutputTokens,
}

impl LimitKind {
    /// Every kind, in the order a pacer checks them.
    pub const ALL: [LimitKind; 4] =
        [LimitKind::Requests, LimitKind::Tokens, LimitKind::InputTokens, LimitKind::OutputTokens];

    /// The snake_case name, e.g. `"input_tokens"` (the `agentic.limit` attribute of the metrics).
    pub const fn name(self) -> &'static str {
        match self {
            LimitKind::Requests => "requests",
            LimitKind::Tokens => "tokens",
            LimitKind::InputTokens => "input_tokens",
            LimitKind::OutputTokens => "output_tokens",
        }
    }

    /// Its position in [`LimitKind::ALL`].
    pub(crate) const fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for LimitKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LimitKind::Requests => "requests",
            LimitKind::Tokens => "tokens",
            LimitKind::InputTokens => "input tokens",
            LimitKind::OutputTokens => "output tokens",
        })
    }
}

/// One limit as a response stated it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limit {
    /// The most the limit allows at once (its bucket's size), at least 1.
    pub limit: u64,
    /// What was left when the server answered, at most `limit`.
    pub remaining: u64,
    /// How long after the response the limit is full again (OpenAI sends a duration, Anthropic an
    /// instant, made a duration on receipt; one in the past is zero).
    pub reset: Duration,
    /// How long the whole limit takes to refill from empty, when the provider says (Anthropic's
    /// limits are per minute: 60 s). `None`: the pacer derives it from `reset` and what was used.
    pub window: Option<Duration>,
}

impl Limit {
    /// A limit of `limit`, `remaining` of it left (cut to `limit`), full again after `reset`.
    /// `limit` 0 is read as 1: a server that allows nothing is waited for by its `Retry-After`.
    pub fn new(limit: u64, remaining: u64, reset: Duration) -> Self {
        let limit = limit.max(1);
        Self { limit, remaining: remaining.min(limit), reset, window: None }
    }

    /// The same limit, refilling all of it in `window` (continuously).
    pub fn with_window(mut self, window: Duration) -> Self {
        self.window = Some(window).filter(|window| !window.is_zero());
        self
    }
}

/// The rate limits one response stated: each that its headers carried. HTTP providers send it as
/// [`StreamEvent::RateLimits`](crate::provider::StreamEvent::RateLimits) on every response that
/// has them, successes included; a provider of your own may too.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RateLimits {
    /// Each limit by [`LimitKind::index`]; `None` where the response said nothing of it.
    limits: [Option<Limit>; 4],
    /// Reads from the prompt cache do not count against the input-token limits (Anthropic, for
    /// most models): the pacer gives back what an answer reports as cached reads.
    pub cached_reads_free: bool,
}

impl RateLimits {
    /// No limit stated.
    pub const fn new() -> Self {
        Self { limits: [None; 4], cached_reads_free: false }
    }

    /// These limits with `limit` for `kind`.
    pub fn with(mut self, kind: LimitKind, limit: Limit) -> Self {
        self.limits[kind.index()] = Some(limit);
        self
    }

    /// These limits, saying that cached reads do not count against input tokens.
    pub fn with_cached_reads_free(mut self) -> Self {
        self.cached_reads_free = true;
        self
    }

    /// The limit of `kind`, when the response stated it.
    pub fn get(&self, kind: LimitKind) -> Option<&Limit> {
        self.limits[kind.index()].as_ref()
    }

    /// Each limit stated, with its kind.
    pub fn iter(&self) -> impl Iterator<Item = (LimitKind, &Limit)> + '_ {
        LimitKind::ALL.into_iter().filter_map(|kind| Some((kind, self.get(kind)?)))
    }

    /// Whether no limit was stated.
    pub fn is_empty(&self) -> bool {
        self.limits.iter().all(Option::is_none)
    }
}
