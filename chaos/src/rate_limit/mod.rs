//! A scenario's rate limit: per API key, a token bucket for each of requests, tokens, input tokens
//! and output tokens, on the scenario's clock; the 429 a request that does not fit gets, and the
//! headers each wire reports the buckets in (`report`).

pub(crate) mod report;

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::time::Duration;

use tokio::time::Instant;

use crate::conversation::Conversation;
use crate::journal::StepRef;
use crate::step::{Stall, Step, StepKind};
use crate::usage::input_tokens;
use crate::wire::RateLimitHeaders;
use report::{ceil_ms, go_duration};

/// The window a rate limit's numbers are counted over unless set: a minute, so that they read as
/// RPM, TPM, ITPM and OTPM, as the providers publish them.
pub const DEFAULT_RATE_WINDOW: Duration = Duration::from_secs(60);

/// The longest window a rate limit may have, in milliseconds (a day): a test or a demo never
/// waits longer for a bucket to refill, and a larger number is a typo.
pub const MAX_RATE_WINDOW_MS: u64 = 24 * 60 * 60 * 1000;

/// The most API keys whose buckets the server tracks at once. A key whose buckets are full again
/// is forgotten first (a full bucket is what a new key gets); past this many keys with partly
/// used buckets, a new key shares the anonymous key's buckets.
pub const MAX_RATE_KEYS: usize = 1024;

/// A per-key rate limit: each configured number is a token bucket that starts full and refills
/// continuously, `n / window` per second, up to `n`.
///
/// Every model request costs 1 request, its input tokens and its output tokens (see
/// [`Scenario::with_rate_limit`](crate::Scenario::with_rate_limit) for what is charged when); the
/// `requests` bucket counts requests, `input_tokens` the input, `output_tokens` the output and
/// `tokens` both.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use agentic_chaos::RateLimit;
///
/// // 120 RPM and 40 000 TPM, per key.
/// let per_minute = RateLimit::new().requests(120).tokens(40_000);
/// assert_eq!(per_minute.max_requests(), Some(120));
/// assert_eq!(per_minute.window_length(), Duration::from_secs(60));
///
/// // 2 requests a second.
/// let per_second = RateLimit::new().requests(2).window(Duration::from_secs(1));
/// assert_eq!(per_second.max_tokens(), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    limits: [Option<u64>; 4],
    window: Duration,
}

impl Default for RateLimit {
    fn default() -> Self {
        Self::new()
    }
}

/// What a bucket counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Requests,
    Tokens,
    InputTokens,
    OutputTokens,
}

impl Kind {
    const ALL: [Self; 4] = [Self::Requests, Self::Tokens, Self::InputTokens, Self::OutputTokens];

    /// The name in the headers: OpenAI's `x-ratelimit-*-{name}`, where it has one, and Anthropic's
    /// `anthropic-ratelimit-{name}-*`.
    const fn names(self) -> (Option<[&'static str; 3]>, [&'static str; 3]) {
        match self {
            Self::Requests => (
                Some(["x-ratelimit-limit-requests", "x-ratelimit-remaining-requests", "x-ratelimit-reset-requests"]),
                [
                    "anthropic-ratelimit-requests-limit",
                    "anthropic-ratelimit-requests-remaining",
                    "anthropic-ratelimit-requests-reset",
                ],
            ),
            Self::Tokens => (
                Some(["x-ratelimit-limit-tokens", "x-ratelimit-remaining-tokens", "x-ratelimit-reset-tokens"]),
                [
                    "anthropic-ratelimit-tokens-limit",
                    "anthropic-ratelimit-tokens-remaining",
                    "anthropic-ratelimit-tokens-reset",
                ],
            ),
            Self::InputTokens => (
                None,
                [
                    "anthropic-ratelimit-input-tokens-limit",
                    "anthropic-ratelimit-input-tokens-remaining",
                    "anthropic-ratelimit-input-tokens-reset",
                ],
            ),
            Self::OutputTokens => (
                None,
                [
                    "anthropic-ratelimit-output-tokens-limit",
                    "anthropic-ratelimit-output-tokens-remaining",
                    "anthropic-ratelimit-output-tokens-reset",
                ],
            ),
        }
    }

    /// The words of the 429's message.
    const fn words(self) -> &'static str {
        match self {
            Self::Requests => "requests",
            Self::Tokens => "tokens",
            Self::InputTokens => "input tokens",
            Self::OutputTokens => "output tokens",
        }
    }
}

impl RateLimit {
    /// No limit yet: add one or more with the setters.
    pub const fn new() -> Self {
        Self { limits: [None; 4], window: DEFAULT_RATE_WINDOW }
    }

    fn with(mut self, kind: Kind, n: u64, field: &str) -> Self {
        assert!(n >= 1, "a rate limit's `{field}` must be at least 1 (remove it for no limit)");
        self.limits[kind as usize] = Some(n);
        self
    }

    /// At most `n` requests per window (`"requests"` in JSON).
    ///
    /// # Panics
    ///
    /// If `n` is 0 (a file refuses it too): no request would ever pass.
    pub fn requests(self, n: u64) -> Self {
        self.with(Kind::Requests, n, "requests")
    }

    /// At most `n` tokens, input and output together, per window (`"tokens"` in JSON).
    ///
    /// # Panics
    ///
    /// If `n` is 0 (a file refuses it too).
    pub fn tokens(self, n: u64) -> Self {
        self.with(Kind::Tokens, n, "tokens")
    }

    /// At most `n` input tokens per window (`"input_tokens"` in JSON).
    ///
    /// # Panics
    ///
    /// If `n` is 0 (a file refuses it too).
    pub fn input_tokens(self, n: u64) -> Self {
        self.with(Kind::InputTokens, n, "input_tokens")
    }

    /// At most `n` output tokens per window (`"output_tokens"` in JSON).
    ///
    /// # Panics
    ///
    /// If `n` is 0 (a file refuses it too).
    pub fn output_tokens(self, n: u64) -> Self {
        self.with(Kind::OutputTokens, n, "output_tokens")
    }

    /// The window the numbers are counted over: a bucket of `n` refills `n` in this time
    /// (`"window_ms"` in JSON).
    ///
    /// # Default
    ///
    /// [`DEFAULT_RATE_WINDOW`], a minute.
    ///
    /// # Panics
    ///
    /// If `window` is under 1 ms or over [`MAX_RATE_WINDOW_MS`] (a file refuses them too).
    pub fn window(mut self, window: Duration) -> Self {
        let max = Duration::from_millis(MAX_RATE_WINDOW_MS);
        assert!(
            window >= Duration::from_millis(1) && window <= max,
            "a rate limit's window must be from 1 ms to a day, not {window:?}"
        );
        self.window = window;
        self
    }

    /// The requests per window, if limited.
    pub const fn max_requests(&self) -> Option<u64> {
        self.limits[Kind::Requests as usize]
    }

    /// The tokens (input and output) per window, if limited.
    pub const fn max_tokens(&self) -> Option<u64> {
        self.limits[Kind::Tokens as usize]
    }

    /// The input tokens per window, if limited.
    pub const fn max_input_tokens(&self) -> Option<u64> {
        self.limits[Kind::InputTokens as usize]
    }

    /// The output tokens per window, if limited.
    pub const fn max_output_tokens(&self) -> Option<u64> {
        self.limits[Kind::OutputTokens as usize]
    }

    /// The window the numbers are counted over.
    pub const fn window_length(&self) -> Duration {
        self.window
    }

    fn configured(&self) -> impl Iterator<Item = (Kind, u64)> + '_ {
        Kind::ALL.into_iter().filter_map(|kind| self.limits[kind as usize].map(|n| (kind, n)))
    }
}

/// What a model request costs, by the rule of [`Scenario::with_rate_limit`](crate::Scenario::with_rate_limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cost {
    input: u64,
    output: u64,
}

impl Cost {
    /// The cost of `step` answering `conversation`: the input tokens its answer reports, and the
    /// output tokens of an answer that finishes (an `ok`, `stall` or `tool_use` step: pinned, or
    /// counted as the answer counts them); every other step reports no output.
    pub(crate) fn of(step: &Step, conversation: &Conversation<'_>) -> Self {
        let output = match step {
            Step::Ok(completion) | Step::Stall(Stall { completion, .. }) => {
                completion.usage.output_tokens.unwrap_or(completion.output_chunks() as u64)
            }
            Step::ToolUse(t) => t.usage.output_tokens.unwrap_or_else(|| t.as_completion().output_chunks() as u64),
            _ => 0,
        };
        Self { input: input_tokens(&step.usage(), conversation), output }
    }

    fn of_kind(self, kind: Kind) -> u64 {
        match kind {
            Kind::Requests => 1,
            Kind::Tokens => self.input.saturating_add(self.output),
            Kind::InputTokens => self.input,
            Kind::OutputTokens => self.output,
        }
    }
}

/// One limit's bucket, in exact integer arithmetic: the level is kept multiplied by the window
/// in nanoseconds, so that `n / window` per nanosecond adds `n` per nanosecond and no rounding
/// ever drifts (a day's window times `u64::MAX` fits a `u128`).
#[derive(Debug, Clone, Copy)]
struct Bucket {
    size: u64,
    window_ns: u128,
    scaled: u128,
}

impl Bucket {
    fn full(size: u64, window: Duration) -> Self {
        let window_ns = window.as_nanos().max(1);
        Self { size, window_ns, scaled: u128::from(size) * window_ns }
    }

    fn capacity(&self) -> u128 {
        u128::from(self.size) * self.window_ns
    }

    fn refill(&mut self, elapsed: Duration) {
        let added = elapsed.as_nanos().saturating_mul(u128::from(self.size));
        self.scaled = self.scaled.saturating_add(added).min(self.capacity());
    }

    fn remaining(&self) -> u64 {
        u64::try_from(self.scaled / self.window_ns).unwrap_or(u64::MAX)
    }

    /// How long until `n` fit; `None` when they never will (more than the bucket holds).
    fn wait_for(&self, n: u64) -> Option<Duration> {
        let need = u128::from(n).checked_mul(self.window_ns).filter(|need| *need <= self.capacity())?;
        Some(self.time_to(need))
    }

    fn until_full(&self) -> Duration {
        self.time_to(self.capacity())
    }

    /// How long until the level reaches `scaled` (rounded up to the nanosecond).
    fn time_to(&self, scaled: u128) -> Duration {
        let missing = scaled.saturating_sub(self.scaled);
        nanos(missing.div_ceil(u128::from(self.size)))
    }

    fn take(&mut self, n: u64) {
        self.scaled = self.scaled.saturating_sub(u128::from(n) * self.window_ns);
    }

    fn is_full(&self) -> bool {
        self.scaled == self.capacity()
    }
}

fn nanos(n: u128) -> Duration {
    Duration::from_nanos(u64::try_from(n).unwrap_or(u64::MAX))
}

/// One key's buckets, as of `at`.
#[derive(Debug, Clone)]
struct Buckets {
    at: Instant,
    of: Vec<(Kind, Bucket)>,
}

impl Buckets {
    fn full(limit: &RateLimit, now: Instant) -> Self {
        Self { at: now, of: limit.configured().map(|(kind, n)| (kind, Bucket::full(n, limit.window))).collect() }
    }

    fn refill(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.at);
        self.at = now;
        self.of.iter_mut().for_each(|(_, bucket)| bucket.refill(elapsed));
    }
}

/// Why a request was refused: the limit that waits longest (or that it can never fit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Refusal {
    kind: Kind,
    limit: u64,
    remaining: u64,
    requested: u64,
    /// How long until enough has refilled; `None` when the request is larger than the bucket.
    wait: Option<Duration>,
    /// The limit's window, for the message.
    window: Duration,
}

/// One configured limit as the headers report it, after this request's charge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Level {
    kind: Kind,
    limit: u64,
    remaining: u64,
    until_full: Duration,
}

/// The buckets of every key the server has seen since the scenario's start: a key is known by a
/// fingerprint of it, never by the key (the server's `Debug` would show it).
#[derive(Debug, Default)]
pub(crate) struct Keys {
    of: HashMap<Option<u64>, Buckets>,
}

impl Keys {
    /// Charge `cost` (when given: a request the limit may refuse) to `key`'s buckets at `now`,
    /// unless it does not fit one of them; then the levels the headers report.
    pub(crate) fn charge(
        &mut self,
        limit: &RateLimit,
        key: Option<&str>,
        now: Instant,
        cost: Option<Cost>,
    ) -> (Result<(), Refusal>, Vec<Level>) {
        let buckets = self.buckets(limit, key, now);
        let verdict = match cost {
            Some(cost) => refusal(buckets, cost).map_or(Ok(()), Err),
            None => Ok(()),
        };
        if let (Ok(()), Some(cost)) = (verdict, cost) {
            buckets.of.iter_mut().for_each(|(kind, bucket)| bucket.take(cost.of_kind(*kind)));
        }
        let levels = buckets
            .of
            .iter()
            .map(|(kind, b)| Level { kind: *kind, limit: b.size, remaining: b.remaining(), until_full: b.until_full() })
            .collect();
        (verdict, levels)
    }

    /// `key`'s buckets, refilled to `now`.
    fn buckets(&mut self, limit: &RateLimit, key: Option<&str>, now: Instant) -> &mut Buckets {
        let mut id = key.map(fingerprint);
        if !self.of.contains_key(&id) && self.of.len() >= MAX_RATE_KEYS {
            self.of.retain(|_, buckets| {
                buckets.refill(now);
                !buckets.of.iter().all(|(_, bucket)| bucket.is_full())
            });
            if self.of.len() >= MAX_RATE_KEYS {
                id = None;
            }
        }
        let buckets = self.of.entry(id).or_insert_with(|| Buckets::full(limit, now));
        buckets.refill(now);
        buckets
    }
}

/// The refusal of `cost` by the first bucket it never fits, or else by the one it waits longest
/// for; `None` when it fits every one.
fn refusal(buckets: &Buckets, cost: Cost) -> Option<Refusal> {
    let refusals = buckets.of.iter().filter_map(|(kind, bucket)| {
        let requested = cost.of_kind(*kind);
        let wait = bucket.wait_for(requested);
        (wait != Some(Duration::ZERO)).then_some(Refusal {
            kind: *kind,
            limit: bucket.size,
            remaining: bucket.remaining(),
            requested,
            wait,
            window: nanos(bucket.window_ns),
        })
    });
    refusals.max_by_key(|r| r.wait.map_or((1, Duration::ZERO), |wait| (0, wait)))
}

/// A key's fingerprint: the map never holds the key itself.
fn fingerprint(key: &str) -> u64 {
    let mut hasher = DefaultHasher::new();
    key.hash(&mut hasher);
    hasher.finish()
}

impl Refusal {
    /// The 429 a refused request gets, in its wire's own rate-limit body: `retry-after` in whole
    /// seconds (rounded up) and, on the wires with OpenAI's headers, `retry-after-ms` and OpenAI's
    /// `rate_limit_exceeded` type and code. A request larger than the bucket gets neither header:
    /// no wait would let it through.
    pub(crate) fn step(&self, family: Option<RateLimitHeaders>) -> (Step, StepRef) {
        let Self { kind, limit, remaining, requested, wait, window } = *self;
        let per = go_duration(window);
        let words = kind.words();
        let message = match wait {
            Some(wait) => format!(
                "Rate limit reached for {words} per {per}: Limit {limit}, Remaining {remaining}, Requested \
                 {requested}. Please try again in {}.",
                go_duration(wait)
            ),
            None => format!(
                "Request too large for {words} per {per}: Limit {limit}, Requested {requested}. The request \
                 must be made smaller to run at all."
            ),
        };
        let mut error = Step::http_error(429).message(message);
        if let Some(wait) = wait {
            error = error.retry_after_secs(wait.as_nanos().div_ceil(1_000_000_000) as u64);
            if family == Some(RateLimitHeaders::OpenAi) {
                error = error.retry_after_ms(ceil_ms(wait));
            }
        }
        if family == Some(RateLimitHeaders::OpenAi) {
            error = error.error_type("rate_limit_exceeded").code("rate_limit_exceeded");
        }
        let at = StepRef { index: None, kind: StepKind::HttpError, repeat: 0, outage: None, rate_limited: true };
        (error.into(), at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn past_the_most_keys_full_ones_are_forgotten_then_new_keys_share_the_anonymous_buckets() {
        let limit = RateLimit::new().requests(2);
        let now = Instant::now();
        let mut keys = Keys::default();
        let cost = Cost { input: 0, output: 0 };
        for i in 0..MAX_RATE_KEYS {
            assert!(keys.charge(&limit, Some(&format!("key-{i}")), now, Some(cost)).0.is_ok());
        }
        assert_eq!(keys.of.len(), MAX_RATE_KEYS);
        // Every bucket is partly used: the next new key counts under the anonymous one.
        keys.charge(&limit, Some("one more"), now, Some(cost)).0.unwrap();
        let (verdict, levels) = keys.charge(&limit, None, now, Some(cost));
        assert!(verdict.is_ok() && levels[0].remaining == 0, "the anonymous key paid for both");
        assert!(keys.charge(&limit, Some("yet another"), now, Some(cost)).0.is_err());
        assert!(!keys.of.contains_key(&Some(fingerprint("one more"))));
        // A minute later every bucket is full again: forgotten, and the new key gets its own.
        let later = now + Duration::from_secs(60);
        keys.charge(&limit, Some("one more"), later, Some(cost)).0.unwrap();
        assert_eq!(keys.of.len(), 1);
        assert!(keys.of.contains_key(&Some(fingerprint("one more"))));
    }

    #[test]
    fn a_bucket_refills_continuously_and_exactly() {
        let mut bucket = Bucket::full(3, Duration::from_secs(60));
        bucket.take(3);
        assert_eq!(bucket.remaining(), 0);
        assert_eq!(bucket.wait_for(1), Some(Duration::from_secs(20)));
        assert_eq!(bucket.until_full(), Duration::from_secs(60));
        bucket.refill(Duration::from_secs(20) - Duration::from_nanos(1));
        assert_eq!(bucket.remaining(), 0);
        assert_eq!(bucket.wait_for(1), Some(Duration::from_nanos(1)));
        bucket.refill(Duration::from_nanos(1));
        assert_eq!(bucket.remaining(), 1);
        bucket.refill(Duration::from_secs(3600));
        assert!(bucket.is_full());
        assert_eq!(bucket.wait_for(4), None, "more than the bucket holds never fits");
    }
}
