//! The attribute's keys as command-line flags (`--max-retries`, ...), shared by the commands that
//! run an exec.

use agentic_runtime::RetryPolicy;
use agentic_runtime::policy::rules::{Key, PolicyValues};
use agentic_runtime::policy::{Jitter, Preset};

/// One flag per key of `#[agentic_function]`, kebab-case. Each left out keeps the default.
#[derive(Debug, Default, clap::Args)]
pub(crate) struct PolicyFlags {
    /// Start from a named policy, which the other flags change further: anthropic or
    /// gemini-free-tier, fitted to that provider's per-minute limits (up to 5 calls, waits from 2 s
    /// or 15 s doubling to a 60 s cap) [default: none, the defaults].
    #[arg(long, value_name = "NAME", value_parser = parse_preset, help_heading = "Retry policy")]
    preset: Option<Preset>,
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
    /// none, full, equal, decorrelated or proportional [default: proportional: each delay times
    /// U(0.75, 1.25), so clients that failed together do not retry together; none gives the exact
    /// 2/4/8 s and 1.5/3 s schedules].
    #[arg(long, value_name = "KIND", value_parser = parse_jitter, help_heading = "Retry policy")]
    jitter: Option<Jitter>,
    /// Cap on model calls across both layers [default: the product of the layers].
    #[arg(long, value_name = "N", help_heading = "Retry policy")]
    max_calls: Option<u32>,
    /// One deadline for the whole exec; the retries that fit are made [default: none, each model
    /// turn is bounded by --turn-timeout-ms].
    #[arg(long, value_name = "MS", help_heading = "Retry policy")]
    budget_ms: Option<u64>,
    /// The longest server-requested wait that is honoured [default: 60000].
    #[arg(long, value_name = "MS", help_heading = "Retry policy")]
    retry_after_cap_ms: Option<u64>,
    /// Connecting to the server [default: 10000: the OpenAI and Anthropic SDKs allow 5 s; twice that
    /// covers a TLS handshake over a slow link].
    #[arg(long, value_name = "MS", help_heading = "Time and size bounds")]
    connect_timeout_ms: Option<u64>,
    /// From the request to the response headers [default: 120000: hosted APIs answer in a second; a
    /// local server may hold the headers while it loads a model or reads a long prompt].
    #[arg(long, value_name = "MS", help_heading = "Time and size bounds")]
    headers_timeout_ms: Option<u64>,
    /// From the request to the first content [default: 300000: reasoning models think for minutes
    /// before their first token].
    #[arg(long, value_name = "MS", help_heading = "Time and size bounds")]
    first_token_timeout_ms: Option<u64>,
    /// Without new content once the answer flows; keep-alives, pings and empty chunks do not count
    /// [default: 60000: a live stream does not pause for a minute mid-answer].
    #[arg(long, value_name = "MS", help_heading = "Time and size bounds")]
    idle_timeout_ms: Option<u64>,
    /// One model call [default: 600000: what the OpenAI and Anthropic SDKs allow one request].
    #[arg(long, value_name = "MS", help_heading = "Time and size bounds")]
    timeout_ms: Option<u64>,
    /// One model turn, calls and backoff of both layers [default: 900000: one SDK request's ten
    /// minutes plus room for the retries that may save it; an exec whose calls never return ends
    /// within 15 minutes].
    #[arg(long, value_name = "MS", help_heading = "Time and size bounds")]
    turn_timeout_ms: Option<u64>,
    /// The largest answer (text and tool-call arguments) [default: 4194304 (4 MiB): the longest
    /// answers models give are about 0.5 MiB].
    #[arg(long, value_name = "BYTES", help_heading = "Time and size bounds")]
    max_answer_bytes: Option<u64>,
}

impl PolicyFlags {
    /// The policy these flags describe (not validated: `RetryPolicy::validate` says what is wrong).
    pub(crate) fn policy(&self) -> RetryPolicy {
        let wide = u64::from;
        let given = [
            (Key::MaxRetries, self.max_retries.map(wide)),
            (Key::SessionRetries, self.session_retries.map(wide)),
            (Key::SessionBaseDelayMs, self.session_base_delay_ms),
            (Key::ExecBaseDelayMs, self.exec_base_delay_ms),
            (Key::MaxDelayMs, self.max_delay_ms),
            (Key::MaxCalls, self.max_calls.map(wide)),
            (Key::BudgetMs, self.budget_ms),
            (Key::RetryAfterCapMs, self.retry_after_cap_ms),
            (Key::ConnectTimeoutMs, self.connect_timeout_ms),
            (Key::HeadersTimeoutMs, self.headers_timeout_ms),
            (Key::FirstTokenTimeoutMs, self.first_token_timeout_ms),
            (Key::IdleTimeoutMs, self.idle_timeout_ms),
            (Key::TimeoutMs, self.timeout_ms),
            (Key::TurnTimeoutMs, self.turn_timeout_ms),
            (Key::MaxAnswerBytes, self.max_answer_bytes),
        ];
        let mut values = self.preset.map_or(PolicyValues::DEFAULT, Preset::values);
        for (key, value) in given {
            if let Some(value) = value {
                values.set(key, value);
            }
        }
        let policy = RetryPolicy::from_values(values);
        match self.jitter {
            Some(jitter) => policy.with_jitter(jitter),
            None => policy,
        }
    }
}

fn parse_jitter(name: &str) -> Result<Jitter, String> {
    Jitter::from_name(name)
        .ok_or_else(|| format!("unknown jitter kind `{name}`; expected one of: {}", Jitter::NAMES.join(", ")))
}

fn parse_preset(name: &str) -> Result<Preset, String> {
    let names: Vec<&str> = Preset::ALL.iter().map(|preset| preset.cli_name()).collect();
    Preset::from_name(name).ok_or_else(|| format!("unknown preset `{name}`; expected one of: {}", names.join(", ")))
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::*;

    #[derive(clap::Parser)]
    struct Flags {
        #[command(flatten)]
        policy: PolicyFlags,
    }

    fn policy(args: &[&str]) -> RetryPolicy {
        Flags::try_parse_from(std::iter::once("agentic").chain(args.iter().copied()))
            .expect("flags parse")
            .policy
            .policy()
    }

    #[test]
    fn a_preset_is_the_start_and_the_other_flags_change_it() {
        assert_eq!(policy(&[]), RetryPolicy::new());
        assert_eq!(policy(&["--preset", "gemini-free-tier"]), RetryPolicy::gemini_free_tier());
        assert_eq!(policy(&["--preset", "gemini_free_tier"]), RetryPolicy::gemini_free_tier());
        assert_eq!(policy(&["--preset", "anthropic"]), RetryPolicy::anthropic());
        assert_eq!(
            policy(&["--preset", "gemini-free-tier", "--max-calls", "3", "--jitter", "none"]),
            RetryPolicy::gemini_free_tier().with_max_calls(Some(3)).with_jitter(Jitter::None)
        );
        let error = Flags::try_parse_from(["agentic", "--preset", "gemini"]).err().expect("an unknown preset");
        assert!(
            error.to_string().contains("unknown preset `gemini`; expected one of: anthropic, gemini-free-tier"),
            "{error}"
        );
    }
}
