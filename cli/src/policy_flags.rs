//! The attribute's keys as command-line flags (`--max-retries`, ...), shared by the commands that
//! run an exec.

use agentic_runtime::{Jitter, RetryPolicy};

/// One flag per key of `#[agentic_function]`, kebab-case. Each left out keeps the seed's default.
#[derive(Debug, Default, clap::Args)]
pub(crate) struct PolicyFlags {
    /// Exec attempts (layer 2) [default: 3].
    #[arg(long, value_name = "N", help_heading = "Retry policy")]
    max_retries: Option<u32>,
    /// Session retries per exec attempt (layer 1); 0 turns it off [default: 3].
    #[arg(long, value_name = "N", help_heading = "Retry policy")]
    session_retries: Option<u32>,
    /// Layer 1 waits base * 2^(n-1) before retry n [default: 2000].
    #[arg(long, value_name = "MS", help_heading = "Retry policy")]
    session_base_delay_ms: Option<u64>,
    /// Layer 2 waits base * 2^k after failed attempt k [default: 1500].
    #[arg(long, value_name = "MS", help_heading = "Retry policy")]
    exec_base_delay_ms: Option<u64>,
    /// Cap on every computed delay, applied after jitter [default: none].
    #[arg(long, value_name = "MS", help_heading = "Retry policy")]
    max_delay_ms: Option<u64>,
    /// none, full, equal, decorrelated or proportional [default: none].
    #[arg(long, value_name = "KIND", value_parser = parse_jitter, help_heading = "Retry policy")]
    jitter: Option<Jitter>,
    /// Cap on model calls across both layers [default: the product of the layers].
    #[arg(long, value_name = "N", help_heading = "Retry policy")]
    max_calls: Option<u32>,
    /// Timeout of one model call [default: none].
    #[arg(long, value_name = "MS", help_heading = "Retry policy")]
    timeout_ms: Option<u64>,
    /// One deadline for the whole exec [default: none].
    #[arg(long, value_name = "MS", help_heading = "Retry policy")]
    budget_ms: Option<u64>,
    /// The longest server-requested wait that is honoured [default: 60000].
    #[arg(long, value_name = "MS", help_heading = "Retry policy")]
    retry_after_cap_ms: Option<u64>,
}

impl PolicyFlags {
    /// The policy these flags describe (not validated: `RetryPolicy::validate` says what is wrong).
    pub(crate) fn policy(&self) -> RetryPolicy {
        let defaults = RetryPolicy::new();
        let values = defaults.values();
        RetryPolicy::new()
            .with_max_retries(self.max_retries.unwrap_or(values.max_retries))
            .with_session_retries(self.session_retries.unwrap_or(values.session_retries))
            .with_session_base_delay_ms(self.session_base_delay_ms.unwrap_or(values.session_base_delay_ms))
            .with_exec_base_delay_ms(self.exec_base_delay_ms.unwrap_or(values.exec_base_delay_ms))
            .with_max_delay_ms(self.max_delay_ms.or(values.max_delay_ms))
            .with_jitter(self.jitter.unwrap_or(defaults.jitter()))
            .with_max_calls(self.max_calls.or(values.max_calls))
            .with_timeout_ms(self.timeout_ms.or(values.timeout_ms))
            .with_budget_ms(self.budget_ms.or(values.budget_ms))
            .with_retry_after_cap_ms(self.retry_after_cap_ms.unwrap_or(values.retry_after_cap_ms))
    }
}

fn parse_jitter(name: &str) -> Result<Jitter, String> {
    Jitter::from_name(name)
        .ok_or_else(|| format!("unknown jitter kind `{name}`; expected one of: {}", Jitter::NAMES.join(", ")))
}
