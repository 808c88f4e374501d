//! The retry policy of one `exec`: both layers' settings, caps and the one validation function.

pub mod rules;

use std::fmt;
use std::time::Duration;

use crate::error::PolicyError;
use rules::PolicyValues;

/// How a computed delay is randomised so that clients that failed together do not retry together.
///
/// The cap (`max_delay_ms`) is applied after jitter. The RNG is seedable (`Runtime::with_jitter_seed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Jitter {
    /// The seed's exact schedule: no randomness.
    #[default]
    None,
    /// `U(0, d)`.
    Full,
    /// `d/2 + U(0, d/2)`.
    Equal,
    /// `min(cap, U(base, 3 * previous))`.
    Decorrelated,
    /// `d * U(0.75, 1.25)`.
    Proportional,
}

impl Jitter {
    /// Every kind, as spelled in the attribute's `jitter = "..."`.
    pub const NAMES: [&'static str; 5] = ["none", "full", "equal", "decorrelated", "proportional"];

    /// The kind named `name` (as in [`Jitter::NAMES`]).
    pub fn from_name(name: &str) -> Option<Jitter> {
        Some(match name {
            "none" => Jitter::None,
            "full" => Jitter::Full,
            "equal" => Jitter::Equal,
            "decorrelated" => Jitter::Decorrelated,
            "proportional" => Jitter::Proportional,
            _ => return None,
        })
    }

    /// The kind's name, as accepted by [`Jitter::from_name`].
    pub const fn name(self) -> &'static str {
        match self {
            Jitter::None => "none",
            Jitter::Full => "full",
            Jitter::Equal => "equal",
            Jitter::Decorrelated => "decorrelated",
            Jitter::Proportional => "proportional",
        }
    }
}

impl fmt::Display for Jitter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    values: PolicyValues,
    jitter: Jitter,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self::new()
    }
}

impl RetryPolicy {
    /// The seed's defaults: 3 exec attempts (1.5 s, 3 s apart), 3 session retries (2 s, 4 s, 8 s), no
    /// jitter, no caps: up to 12 model calls and 46.5 s of backoff per exec.
    pub const fn new() -> Self {
        Self { values: PolicyValues::DEFAULT, jitter: Jitter::None }
    }

    /// Exec attempts (layer 2). `1` means no exec retry.
    ///
    /// # Default
    /// `3`
    pub const fn with_max_retries(mut self, attempts: u32) -> Self {
        self.values.max_retries = attempts;
        self
    }

    /// Session retries per exec attempt (layer 1). `0` turns layer 1 off.
    ///
    /// # Default
    /// `3` (up to 4 calls per exec attempt)
    pub const fn with_session_retries(mut self, retries: u32) -> Self {
        self.values.session_retries = retries;
        self
    }

    /// Layer 1 waits `base * 2^(n-1)` before retry `n`.
    ///
    /// # Default
    /// `2000` ms (2 s, 4 s, 8 s)
    pub const fn with_session_base_delay_ms(mut self, ms: u64) -> Self {
        self.values.session_base_delay_ms = ms;
        self
    }

    /// Layer 2 waits `base * 2^k` after failed attempt `k` (from 0).
    ///
    /// # Default
    /// `1500` ms (1.5 s, 3 s, 6 s)
    pub const fn with_exec_base_delay_ms(mut self, ms: u64) -> Self {
        self.values.exec_base_delay_ms = ms;
        self
    }

    /// Cap on every computed delay of both layers, applied after jitter.
    ///
    /// # Default
    /// `None` (the schedules are not capped)
    pub const fn with_max_delay_ms(mut self, ms: Option<u64>) -> Self {
        self.values.max_delay_ms = ms;
        self
    }

    /// How delays are randomised.
    ///
    /// # Default
    /// [`Jitter::None`]
    pub const fn with_jitter(mut self, jitter: Jitter) -> Self {
        self.jitter = jitter;
        self
    }

    /// Cap on model calls across both layers of one exec.
    ///
    /// # Default
    /// `None` (the product of the layers: 12 with the other defaults)
    pub const fn with_max_calls(mut self, calls: Option<u32>) -> Self {
        self.values.max_calls = calls;
        self
    }

    /// Timeout of one model call; the call gets `min(timeout, deadline - now)`.
    ///
    /// # Default
    /// `None` (a call may take as long as the budget allows)
    pub const fn with_timeout_ms(mut self, ms: Option<u64>) -> Self {
        self.values.timeout_ms = ms;
        self
    }

    /// One deadline for the whole exec: every attempt, sleep and server-requested wait.
    ///
    /// # Default
    /// `None` (no deadline)
    pub const fn with_budget_ms(mut self, ms: Option<u64>) -> Self {
        self.values.budget_ms = ms;
        self
    }

    /// The longest server-requested wait (Retry-After) that is honoured; a longer one ends the exec.
    ///
    /// # Default
    /// `60000` ms
    pub const fn with_retry_after_cap_ms(mut self, ms: u64) -> Self {
        self.values.retry_after_cap_ms = ms;
        self
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

    /// Per-call timeout, if any.
    pub const fn timeout(&self) -> Option<Duration> {
        match self.values.timeout_ms {
            Some(ms) => Some(Duration::from_millis(ms)),
            None => None,
        }
    }

    /// The exec deadline, if any.
    pub const fn budget(&self) -> Option<Duration> {
        match self.values.budget_ms {
            Some(ms) => Some(Duration::from_millis(ms)),
            None => None,
        }
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

    /// The worst case in words: "up to 12 model calls and 46.5 s of backoff per exec".
    pub fn describe_worst_case(&self) -> String {
        rules::describe_worst_case(&self.values)
    }
}
