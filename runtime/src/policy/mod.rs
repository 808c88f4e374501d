//! The retry policy of one `exec`: both layers' settings, caps and the one validation function.

pub mod backoff;

/// The policy's plain values, keys, rules and worst case: the `agentic-policy` crate, which the
/// attribute judges with too.
pub use agentic_policy as rules;

use std::time::Duration;

pub use crate::error::PolicyError;
use rules::PolicyValues;

pub use rules::{Jitter, Preset};

/// The policy of one `exec`: how both retry layers behave and what bounds them.
///
/// Every setter is a `const fn`, so a policy can be a `const` (the attribute builds one per function).
/// A policy is checked by [`RetryPolicy::validate`]; `Runtime::exec_with` validates before the first call.
///
/// # Examples
///
/// ```
/// use agentic_runtime::RetryPolicy;
///
/// const FAST: RetryPolicy = RetryPolicy::new()
///     .with_max_retries(2)
///     .with_session_retries(1)
///     .with_budget_ms(Some(20_000));
/// assert!(FAST.validate().is_ok());
/// assert_eq!(FAST.worst_case_calls(), 4);
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    values: PolicyValues,
    jitter: Jitter,
    /// What the rules say of `values`, judged by every constructor and setter (all `const fn`): a
    /// `const` policy is judged at compile time, any other once, when it is built, and a call asks
    /// this instead of judging the policy again.
    valid: Validity,
    /// The time bounds in effect, as durations: every call reads them, none converts them.
    bounds: Bounds,
}

/// A policy's time bounds in effect (defaults applied, at most a year), as durations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Bounds {
    call: Duration,
    turn: Duration,
    budget: Option<Duration>,
    connect: Duration,
    headers: Duration,
    first_token: Duration,
    idle: Duration,
}

impl Bounds {
    const fn of(values: &PolicyValues) -> Self {
        Self {
            call: Duration::from_millis(values.timeout_ms()),
            turn: Duration::from_millis(values.turn_timeout_ms()),
            budget: match values.budget_ms() {
                Some(ms) => Some(Duration::from_millis(ms)),
                None => None,
            },
            connect: Duration::from_millis(values.connect_timeout_ms()),
            headers: Duration::from_millis(values.headers_timeout_ms()),
            first_token: Duration::from_millis(values.first_token_timeout_ms()),
            idle: Duration::from_millis(values.idle_timeout_ms()),
        }
    }
}

/// Whether a policy's values keep every rule, for an exec and for a resilient call (which judges
/// the policy with the session layer off).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Validity {
    exec: bool,
    call: bool,
    /// Valid for a resilient call, with none of `timeout_ms`, `budget_ms` and `turn_timeout_ms` set:
    /// the call's first attempt runs under the default limit, set lazily, and needs no clock.
    call_lazy: bool,
}

impl Validity {
    const fn of(values: &PolicyValues) -> Self {
        let call = rules::is_valid(&PolicyValues { session_retries: 0, ..*values });
        let defaults = values.timeout_ms.is_none() && values.budget_ms.is_none() && values.turn_timeout_ms.is_none();
        Self { exec: rules::is_valid(values), call, call_lazy: call && defaults }
    }
}

// By hand: the validity is derived from the values, not a setting.
impl std::fmt::Debug for RetryPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RetryPolicy").field("values", &self.values).field("jitter", &self.jitter).finish()
    }
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self::new()
    }
}

impl RetryPolicy {
    /// The defaults: 3 exec attempts (1.5 s, 3 s apart), 3 session retries (2 s, 4 s, 8 s), each
    /// delay times U(0.75, 1.25) ([`Jitter::Proportional`]): up to 12 model calls and 46.5 s ± 25 % of
    /// backoff per exec. Every wait is bounded (connect 10 s, response headers 120 s, first token
    /// 300 s, 60 s without new content, 600 s per call, 900 s per model turn) and every answer is
    /// bounded to 4 MiB, so an exec whose calls never return ends within 15 minutes.
    pub const fn new() -> Self {
        Self::from_values(PolicyValues::DEFAULT)
    }

    /// The named policy `preset`: the settings a provider's published rate limits ask of its clients (`agentic_policy::Preset`), every other key at its
    /// default ([`Preset`] says where each number comes from). The `with_*` setters change it
    /// further, as the attribute's keys beside `preset = ...` do.
    ///
    /// # Examples
    ///
    /// ```
    /// use agentic_runtime::RetryPolicy;
    /// use agentic_runtime::policy::Preset;
    ///
    /// const GEMINI: RetryPolicy = RetryPolicy::preset(Preset::GeminiFreeTier).with_budget_ms(Some(300_000));
    /// assert!(GEMINI.validate().is_ok());
    /// assert_eq!(GEMINI.worst_case_calls(), 5);
    /// ```
    pub const fn preset(preset: Preset) -> Self {
        Self::from_values(preset.values())
    }

    /// Google's free tier of the Gemini API (15 requests a minute for its Flash models): up to 5 model calls per exec, waits from 15 s
    /// doubling to a 60 s cap (15 s, 30 s, 60 s, 60 s, each ± 25 %). The free tier's quotas are per
    /// minute; a shorter wait mostly meets the same spent quota. [`Preset::GeminiFreeTier`].
    pub const fn gemini_free_tier() -> Self {
        Self::preset(Preset::GeminiFreeTier)
    }

    /// Anthropic's API, whose per-minute limits refill continuously: up to 5 model calls per exec, waits from 2 s
    /// doubling to a 60 s cap (2 s, 4 s, 8 s, 16 s, each ± 25 %). [`Preset::Anthropic`].
    pub const fn anthropic() -> Self {
        Self::preset(Preset::Anthropic)
    }

    /// The policy of `values` (checked by [`RetryPolicy::validate`] like any other), with the
    /// default jitter.
    pub const fn from_values(values: PolicyValues) -> Self {
        Self { valid: Validity::of(&values), bounds: Bounds::of(&values), values, jitter: Jitter::Proportional }
    }

    /// The policy with `values` changed, judged again.
    const fn with_values(mut self, values: PolicyValues) -> Self {
        self.values = values;
        self.valid = Validity::of(&values);
        self.bounds = Bounds::of(&values);
        self
    }

    /// Exec attempts (layer 2). `1` means no exec retry.
    ///
    /// # Default
    /// `3`
    pub const fn with_max_retries(self, attempts: u32) -> Self {
        self.with_values(PolicyValues { max_retries: attempts, ..self.values })
    }

    /// Session retries per exec attempt (layer 1). `0` turns layer 1 off.
    ///
    /// # Default
    /// `3` (up to 4 calls per exec attempt)
    pub const fn with_session_retries(self, retries: u32) -> Self {
        self.with_values(PolicyValues { session_retries: retries, ..self.values })
    }

    /// Layer 1 waits `base * 2^(n-1)` before retry `n`.
    ///
    /// # Default
    /// `2000` ms (2 s, 4 s, 8 s)
    pub const fn with_session_base_delay_ms(self, ms: u64) -> Self {
        self.with_values(PolicyValues { session_base_delay_ms: ms, ..self.values })
    }

    /// Layer 2 waits `base * 2^k` after failed attempt `k` (from 0).
    ///
    /// # Default
    /// `1500` ms (1.5 s, 3 s, 6 s)
    pub const fn with_exec_base_delay_ms(self, ms: u64) -> Self {
        self.with_values(PolicyValues { exec_base_delay_ms: ms, ..self.values })
    }

    /// Cap on every computed delay of both layers, applied after jitter.
    ///
    /// # Default
    /// `None` (the schedules are not capped)
    pub const fn with_max_delay_ms(self, ms: Option<u64>) -> Self {
        self.with_values(PolicyValues { max_delay_ms: ms, ..self.values })
    }

    /// How delays are randomised. [`Jitter::None`] gives the exact schedules.
    ///
    /// # Default
    /// [`Jitter::Proportional`]: each delay times U(0.75, 1.25), so that clients that failed together
    /// do not retry together
    pub const fn with_jitter(mut self, jitter: Jitter) -> Self {
        self.jitter = jitter;
        self
    }

    /// Cap on model calls across both layers of one exec, over all its targets when the runtime has
    /// fallbacks (`RuntimeBuilder::with_fallback`).
    ///
    /// # Default
    /// `None`: the product of the layers (12 with the other defaults) per model turn and per target,
    /// as each tool turn and each move to a fallback starts its count again (a move adds at most
    /// one attempt's calls)
    pub const fn with_max_calls(self, calls: Option<u32>) -> Self {
        self.with_values(PolicyValues { max_calls: calls, ..self.values })
    }

    /// Timeout of one model call; the call gets `min(timeout, deadline - now)`. A timeout is never
    /// off (every wait is finite): like every other time bound, it takes a number.
    ///
    /// # Default
    /// `600000` ms (10 min): what the OpenAI and Anthropic SDKs allow one request
    pub const fn with_timeout_ms(self, ms: u64) -> Self {
        self.with_values(PolicyValues { timeout_ms: Some(ms), ..self.values })
    }

    /// Time to establish a connection to the provider.
    ///
    /// # Default
    /// `10000` ms: the SDKs allow 5 s; twice that covers a TLS handshake over a slow link
    pub const fn with_connect_timeout_ms(self, ms: u64) -> Self {
        self.with_values(PolicyValues { connect_timeout_ms: Some(ms), ..self.values })
    }

    /// Time from sending the request to the complete response headers.
    ///
    /// # Default
    /// `120000` ms: hosted APIs answer a streamed request's headers within a second; a local server
    /// may hold them while it loads a model or reads a long prompt
    pub const fn with_headers_timeout_ms(self, ms: u64) -> Self {
        self.with_values(PolicyValues { headers_timeout_ms: Some(ms), ..self.values })
    }

    /// Time from sending the request to the first content (text, a tool call). Keep-alive comments,
    /// pings and empty chunks are not content.
    ///
    /// # Default
    /// `300000` ms: reasoning models think for minutes before their first token
    pub const fn with_first_token_timeout_ms(self, ms: u64) -> Self {
        self.with_values(PolicyValues { first_token_timeout_ms: Some(ms), ..self.values })
    }

    /// Time without new content once the answer flows. Keep-alive comments, pings and empty chunks
    /// do not reset it.
    ///
    /// # Default
    /// `60000` ms: a live stream does not pause for a minute mid-answer
    pub const fn with_idle_timeout_ms(self, ms: u64) -> Self {
        self.with_values(PolicyValues { idle_timeout_ms: Some(ms), ..self.values })
    }

    /// Time for one model turn: its calls and the backoff between them, both layers. A retry that
    /// would not fit is not made.
    ///
    /// # Default
    /// `900000` ms (15 min): one SDK request's ten minutes plus room for the retries that may save it
    pub const fn with_turn_timeout_ms(self, ms: u64) -> Self {
        self.with_values(PolicyValues { turn_timeout_ms: Some(ms), ..self.values })
    }

    /// The largest answer (text plus tool-call arguments) one call may stream; past it the call ends
    /// with an error saying the bound.
    ///
    /// # Default
    /// `4194304` (4 MiB): the longest answers models give today are about 0.5 MiB
    pub const fn with_max_answer_bytes(self, bytes: u64) -> Self {
        self.with_values(PolicyValues { max_answer_bytes: Some(bytes), ..self.values })
    }

    /// One deadline for the whole exec: every attempt, sleep and server-requested wait. A budget
    /// shorter than the backoff is valid: the retries that fit are made, and the first that does not
    /// fit ends the exec with kind `refused`.
    ///
    /// # Default
    /// `None` (no exec deadline; each model turn is bounded by `turn_timeout_ms`)
    pub const fn with_budget_ms(self, ms: Option<u64>) -> Self {
        self.with_values(PolicyValues { budget_ms: ms, ..self.values })
    }

    /// The longest server-requested wait (Retry-After) that is honoured; a longer one ends the exec.
    ///
    /// # Default
    /// `60000` ms
    pub const fn with_retry_after_cap_ms(self, ms: u64) -> Self {
        self.with_values(PolicyValues { retry_after_cap_ms: ms, ..self.values })
    }

    /// Checks every rule and returns the first broken one. The attribute checks the same rules at
    /// compile time.
    ///
    /// # Examples
    ///
    /// ```
    /// use agentic_runtime::RetryPolicy;
    ///
    /// let err = RetryPolicy::new().with_max_calls(Some(100)).validate().unwrap_err();
    /// assert_eq!(err.key(), "max_calls");
    /// assert!(err.to_string().starts_with("`max_calls` (100) is more than the 12 calls"));
    /// ```
    pub fn validate(&self) -> Result<(), PolicyError> {
        match rules::violations(&self.values).into_iter().next() {
            None => Ok(()),
            Some(violation) => Err(PolicyError::from(violation)),
        }
    }

    /// Whether [`RetryPolicy::validate`] finds nothing, as judged when the policy was built.
    pub(crate) const fn is_valid(&self) -> bool {
        self.valid.exec
    }

    /// Whether the policy is valid for a resilient call (the session layer off), as judged when the
    /// policy was built.
    pub(crate) const fn is_valid_for_calls(&self) -> bool {
        self.valid.call
    }

    /// Whether the policy is valid for a resilient call and sets none of `timeout_ms`, `budget_ms`
    /// and `turn_timeout_ms`: the call's first attempt needs no clock (its default limit is set
    /// lazily, if the attempt waits).
    pub(crate) const fn is_lazy_for_calls(&self) -> bool {
        self.valid.call_lazy
    }

    /// Every broken rule, in a fixed order (empty when valid).
    pub fn violations(&self) -> Vec<PolicyError> {
        rules::violations(&self.values).into_iter().map(PolicyError::from).collect()
    }

    /// The policy's numbers as the shared rules see them.
    pub const fn values(&self) -> &PolicyValues {
        &self.values
    }

    /// Exec attempts (layer 2).
    pub const fn max_retries(&self) -> u32 {
        self.values.max_retries
    }

    /// Session retries per exec attempt (layer 1).
    pub const fn session_retries(&self) -> u32 {
        self.values.session_retries
    }

    /// Layer 1 base delay.
    pub const fn session_base_delay(&self) -> Duration {
        Duration::from_millis(self.values.session_base_delay_ms)
    }

    /// Layer 2 base delay.
    pub const fn exec_base_delay(&self) -> Duration {
        Duration::from_millis(self.values.exec_base_delay_ms)
    }

    /// Cap on computed delays, if any.
    pub const fn max_delay(&self) -> Option<Duration> {
        match self.values.max_delay_ms {
            Some(ms) => Some(Duration::from_millis(ms)),
            None => None,
        }
    }

    /// The jitter kind.
    pub const fn jitter(&self) -> Jitter {
        self.jitter
    }

    /// The timeout of one model call in effect.
    pub const fn timeout(&self) -> Duration {
        self.bounds.call
    }

    /// The connect timeout in effect.
    pub const fn connect_timeout(&self) -> Duration {
        self.bounds.connect
    }

    /// The time to the response headers in effect.
    pub const fn headers_timeout(&self) -> Duration {
        self.bounds.headers
    }

    /// The time to the first content in effect.
    pub const fn first_token_timeout(&self) -> Duration {
        self.bounds.first_token
    }

    /// The idle time between content in effect.
    pub const fn idle_timeout(&self) -> Duration {
        self.bounds.idle
    }

    /// The time of one model turn in effect.
    pub const fn turn_timeout(&self) -> Duration {
        self.bounds.turn
    }

    /// The size bound of one answer in effect, in bytes.
    pub const fn max_answer_bytes(&self) -> u64 {
        self.values.max_answer_bytes()
    }

    /// The exec deadline, if any (at most a year, [`rules::MAX_WAIT_MS`]).
    pub const fn budget(&self) -> Option<Duration> {
        self.bounds.budget
    }

    /// The longest honoured server hint.
    pub const fn retry_after_cap(&self) -> Duration {
        Duration::from_millis(self.values.retry_after_cap_ms)
    }

    /// Model calls one exec can make when every call fails with a retryable error: `max_calls`, or
    /// the product of the layers.
    pub fn worst_case_calls(&self) -> u64 {
        rules::worst_case(&self.values).calls
    }

    /// Nominal backoff (no jitter, no server hints) one exec can sleep in the worst case.
    pub fn worst_case_backoff(&self) -> Duration {
        Duration::from_millis(rules::worst_case(&self.values).backoff_ms)
    }

    /// The longest one model turn takes (`turn_timeout_ms`, or `budget_ms` when shorter): an exec
    /// whose calls never return ends within this.
    pub fn worst_case_turn(&self) -> Duration {
        Duration::from_millis(rules::worst_case(&self.values).turn_ms)
    }

    /// The worst case in words: "up to 12 model calls and 46.5 s ± 25 % of backoff per exec; a
    /// model turn ends within 15 min".
    pub fn describe_worst_case(&self) -> String {
        rules::describe_worst_case(&self.values, self.jitter)
    }
}

// A `const` policy is judged when it is compiled: no call judges it again.
const _: () = assert!(RetryPolicy::new().is_valid() && RetryPolicy::new().is_valid_for_calls());
const _: () = assert!(RetryPolicy::gemini_free_tier().is_valid() && RetryPolicy::anthropic().is_valid());

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_validity_kept_is_what_validate_says() {
        let policies = [
            RetryPolicy::new(),
            RetryPolicy::new().with_max_retries(0),
            RetryPolicy::new().with_max_calls(Some(100)),
            RetryPolicy::new().with_timeout_ms(1_200_000).with_turn_timeout_ms(1_800_000),
            RetryPolicy::from_values(PolicyValues { idle_timeout_ms: Some(0), ..PolicyValues::DEFAULT }),
            RetryPolicy::new().with_max_retries(0).with_max_retries(2),
        ];
        for policy in policies {
            assert_eq!(policy.is_valid(), policy.validate().is_ok(), "{policy:?}");
            let call = policy.with_session_retries(0);
            assert_eq!(policy.is_valid_for_calls(), call.validate().is_ok(), "{policy:?}");
        }
        // Valid for an exec, not for a resilient call: 12 calls need the session layer's retries.
        let twelve = RetryPolicy::new().with_max_calls(Some(12));
        assert!(twelve.is_valid() && !twelve.is_valid_for_calls() && !twelve.is_lazy_for_calls());
        assert!(RetryPolicy::new().is_lazy_for_calls());
        assert!(!RetryPolicy::new().with_turn_timeout_ms(900_000).is_lazy_for_calls());
    }

    #[test]
    fn the_presets_are_the_providers_limits_numbers() {
        let gemini = RetryPolicy::gemini_free_tier();
        assert_eq!(gemini, RetryPolicy::preset(Preset::GeminiFreeTier));
        assert_eq!(gemini.session_base_delay(), Duration::from_secs(15));
        assert_eq!(gemini.max_delay(), Some(Duration::from_secs(60)));
        assert_eq!(gemini.worst_case_calls(), 5);
        assert_eq!(gemini.worst_case_backoff(), Duration::from_secs(15 + 30 + 60 + 60));
        let anthropic = RetryPolicy::anthropic();
        assert_eq!(anthropic.session_base_delay(), Duration::from_secs(2));
        assert_eq!(anthropic.max_delay(), Some(Duration::from_secs(60)));
        assert_eq!(anthropic.worst_case_calls(), 5);
        // Validated like any policy: a key set beside the preset is judged with it.
        let err = gemini.with_max_retries(1).with_session_retries(1).validate().unwrap_err();
        assert_eq!(err.key(), "max_calls");
    }

    #[test]
    fn debug_shows_the_settings_only() {
        let shown = format!("{:?}", RetryPolicy::new());
        assert!(shown.starts_with("RetryPolicy { values: PolicyValues { max_retries: 3,"), "{shown}");
        assert!(shown.ends_with("jitter: Proportional }"), "{shown}");
    }
}
