//! `agentic ask`'s spend limits: `--max-total-tokens N`, `--max-cost-usd X --prices FILE`, ...
//! (`RuntimeBuilder::with_usage_limits`, `RuntimeBuilder::with_prices`), and the line that says
//! what an exec spent against them.

use std::path::PathBuf;

use agentic_policy::limits::limit_violation;
use agentic_runtime::spend::{Limit, Prices, Spent, UsageLimits};

/// The spend limits of one exec; each left out is no limit.
#[derive(Debug, Default, clap::Args)]
pub(crate) struct SpendFlags {
    /// The input tokens of every call together, failed ones included (a tool loop sends the whole
    /// conversation each turn) [default: no limit].
    #[arg(long, value_name = "N", allow_negative_numbers = true, help_heading = "Spend limits")]
    max_input_tokens: Option<i64>,
    /// The output tokens of every call together; each call asks for no more than are left
    /// [default: no limit].
    #[arg(long, value_name = "N", allow_negative_numbers = true, help_heading = "Spend limits")]
    max_output_tokens: Option<i64>,
    /// The input and output tokens of every call together [default: no limit].
    #[arg(long, value_name = "N", allow_negative_numbers = true, help_heading = "Spend limits")]
    max_total_tokens: Option<i64>,
    /// The tool calls run; a tool turn that would pass it runs none [default: no limit].
    #[arg(long, value_name = "N", allow_negative_numbers = true, help_heading = "Spend limits")]
    max_tool_calls: Option<i64>,
    /// US dollars over every call, at the prices of --prices, which must price every target
    /// [default: no limit].
    #[arg(long, value_name = "USD", allow_negative_numbers = true, help_heading = "Spend limits")]
    max_cost_usd: Option<f64>,
    /// The prices --max-cost-usd counts at: litellm's model_prices_and_context_window.json (or the
    /// entries of the models called), at most 16 MiB.
    #[arg(long, value_name = "FILE", help_heading = "Spend limits")]
    prices: Option<PathBuf>,
}

impl SpendFlags {
    /// The limits these flags set, or what is wrong with one (a zero or negative limit, a count
    /// past the largest), in the words of `UsageLimits::validate`.
    pub(crate) fn limits(&self) -> Result<UsageLimits, String> {
        let counts = [
            (Limit::MaxInputTokens, self.max_input_tokens, UsageLimits::with_max_input_tokens as fn(_, _) -> _),
            (Limit::MaxOutputTokens, self.max_output_tokens, UsageLimits::with_max_output_tokens),
            (Limit::MaxTotalTokens, self.max_total_tokens, UsageLimits::with_max_total_tokens),
            (Limit::MaxToolCalls, self.max_tool_calls, UsageLimits::with_max_tool_calls),
        ];
        let mut limits = UsageLimits::new();
        for (key, count, with) in counts {
            let Some(count) = count else { continue };
            // A negative count has no `u64` to carry it to `validate`: the same rule judges it.
            let count = u64::try_from(count).map_err(|_| {
                limit_violation(key, count as f64).unwrap_or_else(|| format!("`{}` = {count} is invalid", key.name()))
            })?;
            limits = with(limits, count);
        }
        if let Some(usd) = self.max_cost_usd {
            limits = limits.with_max_cost_usd(usd);
        }
        limits.validate().map_err(|error| error.to_string())?;
        Ok(limits)
    }

    /// The prices of `--prices`, read, or why they could not be (the file's path and the fault).
    pub(crate) fn prices(&self) -> Result<Option<Prices>, String> {
        self.prices
            .as_deref()
            .map(|path| Prices::from_litellm_file(path).map_err(|error| format!("--prices: {error}")))
            .transpose()
    }

    /// How to give the price a dollar limit lacks for a target, on the command line.
    pub(crate) fn unpriced_hint(&self) -> String {
        match &self.prices {
            None => "--max-cost-usd needs --prices FILE (litellm's model_prices_and_context_window.json) pricing \
                     every target"
                .to_owned(),
            Some(path) => format!(
                "--prices `{}` has no price for it: add the model's entry (its `input_cost_per_token`, \
                 `output_cost_per_token` and `litellm_provider`), or pass --model with a model the file prices",
                path.display()
            ),
        }
    }
}

/// What an exec spent against each limit set, for people: "spent: 150 of --max-total-tokens 200,
/// $0.000210 of --max-cost-usd 0.01"; `None` without limits.
pub(crate) fn spent_line(limits: &UsageLimits, spent: Option<Spent>) -> Option<String> {
    let spent = spent?;
    let parts: Vec<String> = Limit::ALL
        .into_iter()
        .filter_map(|key| limits.get(key).map(|max| (key, max)))
        .map(|(key, max)| {
            let flag = key.name().replace('_', "-");
            match key {
                Limit::MaxInputTokens => format!("{} of --{flag} {max}", spent.input_tokens),
                Limit::MaxOutputTokens => format!("{} of --{flag} {max}", spent.output_tokens),
                Limit::MaxTotalTokens => format!("{} of --{flag} {max}", spent.total_tokens()),
                Limit::MaxToolCalls => format!("{} of --{flag} {max}", spent.tool_calls),
                Limit::MaxCostUsd => format!("${:.6} of --{flag} {max}", spent.cost_usd),
            }
        })
        .collect();
    (!parts.is_empty()).then(|| format!("spent: {}", parts.join(", ")))
}
