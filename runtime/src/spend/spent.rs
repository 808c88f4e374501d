//! [`Spent`]: what an exec spent against its limits.

/// What an exec spent, failed calls included: on the [`Reply`](crate::Reply) and the
/// [`ExecError`](crate::ExecError), to hold against the [`UsageLimits`](crate::spend::UsageLimits).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
#[non_exhaustive]
pub struct Spent {
    /// Input tokens of every call.
    pub input_tokens: u64,
    /// Output tokens of every call.
    pub output_tokens: u64,
    /// Tool calls run.
    pub tool_calls: u64,
    /// US dollars at the runtime's prices (0 without prices).
    pub cost_usd: f64,
}

impl Spent {
    /// Input and output tokens together.
    pub const fn total_tokens(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }
}
