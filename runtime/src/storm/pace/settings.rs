//! The runtime's pacing settings: on from the servers' headers (the default), off, or with limits
//! the user knows before any header is seen.

use super::limits::LimitKind;
use crate::error::PolicyError;

/// How a `Runtime` paces its calls under the servers' rate limits (`RuntimeBuilder::with_pacing`).
///
/// # Examples
///
/// ```
/// use agentic_runtime::storm::pace::Pacing;
///
/// // Tier 1 of a provider: 500 requests and 200 000 tokens a minute, paced from the first call.
/// let pacing = Pacing::from_headers().with_requests_per_minute(500)?.with_tokens_per_minute(200_000)?;
/// assert!(pacing.is_on());
/// assert!(Pacing::from_headers().with_requests_per_minute(0).is_err());
/// # Ok::<(), agentic_runtime::policy::PolicyError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pacing {
    on: bool,
    /// Per minute, by [`LimitKind::index`].
    known: [Option<u64>; 4],
}

impl Pacing {
    /// Paces from the rate-limit headers of the responses (OpenAI's `x-ratelimit-*`, Anthropic's
    /// `anthropic-ratelimit-*`), successes included: a scope whose server sends none is not paced
    /// (a local server, Gemini), and nothing changes on its calls.
    pub const fn from_headers() -> Self {
        Self { on: true, known: [None; 4] }
    }

    /// No pacing: every call goes when the layers send it; a 429 is handled by its hint.
    pub const fn off() -> Self {
        Self { on: false, known: [None; 4] }
    }

    /// The same, with a limit of `per_minute` requests known before any header is seen (a tier's
    /// RPM): the first calls are paced by it, and the servers' headers replace it once they come.
    ///
    /// # Errors
    ///
    /// A [`PolicyError`] when `per_minute` is 0: a limit that allows nothing would hold every call.
    pub fn with_requests_per_minute(self, per_minute: u64) -> Result<Self, PolicyError> {
        self.with_known(LimitKind::Requests, "requests_per_minute", per_minute)
    }

    /// The same, with a limit of `per_minute` tokens (input and output) known before any header
    /// is seen (a tier's TPM).
    ///
    /// # Errors
    ///
    /// A [`PolicyError`] when `per_minute` is 0.
    pub fn with_tokens_per_minute(self, per_minute: u64) -> Result<Self, PolicyError> {
        self.with_known(LimitKind::Tokens, "tokens_per_minute", per_minute)
    }

    /// The same, with a limit of `per_minute` input tokens (Anthropic's ITPM).
    ///
    /// # Errors
    ///
    /// A [`PolicyError`] when `per_minute` is 0.
    pub fn with_input_tokens_per_minute(self, per_minute: u64) -> Result<Self, PolicyError> {
        self.with_known(LimitKind::InputTokens, "input_tokens_per_minute", per_minute)
    }

    /// The same, with a limit of `per_minute` output tokens (Anthropic's OTPM).
    ///
    /// # Errors
    ///
    /// A [`PolicyError`] when `per_minute` is 0.
    pub fn with_output_tokens_per_minute(self, per_minute: u64) -> Result<Self, PolicyError> {
        self.with_known(LimitKind::OutputTokens, "output_tokens_per_minute", per_minute)
    }

    fn with_known(mut self, kind: LimitKind, name: &'static str, per_minute: u64) -> Result<Self, PolicyError> {
        if per_minute == 0 {
            let message = format!("pacing `{name}` (0) must be at least 1; use `Pacing::off()` for no pacing");
            return Err(PolicyError::new(name, message));
        }
        self.on = true;
        self.known[kind.index()] = Some(per_minute);
        Ok(self)
    }

    /// Whether calls are paced.
    pub const fn is_on(&self) -> bool {
        self.on
    }

    /// The limit of `kind` set before any header, per minute.
    pub const fn known(&self, kind: LimitKind) -> Option<u64> {
        self.known[kind.index()]
    }
}

impl Default for Pacing {
    /// [`Pacing::from_headers`].
    fn default() -> Self {
        Self::from_headers()
    }
}
