//! One exec's ledger against its limits: each call reserves its worst case before it is sent and
//! settles to what it used after (docs/design.md §23).

use std::sync::Arc;

use crate::message::{AssistantMessage, Usage};
use crate::spend::{AccountRefused, Amounts, Held, Limit, Price, Prices, SpendAccount, Spent, UsageLimits};
use crate::storm::account::micro_usd;
use crate::storm::pace::answer_tokens;
use crate::storm::{AccountWindow, Refusal};

/// What an exec spent against its limits, and the call in flight's reservation.
#[derive(Debug)]
pub(crate) struct Ledger {
    limits: UsageLimits,
    spent: Spent,
    /// The input estimate of the call in flight, for a server that reports no usage.
    pending_input: u64,
    /// The runtime's prices, under a dollar limit.
    prices: Option<Arc<Prices>>,
    /// The price of the call in flight's target, under a dollar limit.
    pending_price: Option<Price>,
    /// The output the call in flight was allowed, when the limits bound it.
    pending_output: Option<u64>,
    /// The call in flight's reservation in the runtime's spend account.
    hold: Option<AccountHold>,
}

/// A call's reservation in the runtime's spend account, kept for its settle.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AccountHold {
    pub(crate) held: Held,
    /// Made in the shared store (else in this process's book): it settles where it was made.
    pub(crate) fleet: bool,
    /// The target's price, under the account's dollar limit.
    price: Option<Price>,
}

impl Ledger {
    pub(crate) fn new(limits: UsageLimits, prices: Option<Arc<Prices>>) -> Self {
        Self {
            limits,
            spent: Spent::default(),
            pending_input: 0,
            prices,
            pending_price: None,
            pending_output: None,
            hold: None,
        }
    }

    /// Under a dollar limit, the first of `targets` that has no price: an exec cannot start
    /// then (a guess would be no limit).
    pub(crate) fn unpriced<'t>(
        limits: &UsageLimits,
        prices: Option<&Prices>,
        mut targets: impl Iterator<Item = &'t str>,
    ) -> Option<&'t str> {
        limits.max_cost_usd()?;
        targets.find(|target| prices.and_then(|prices| prices.price_of(target)).is_none())
    }

    /// What the exec spent so far.
    pub(crate) fn spent(&self) -> Spent {
        self.spent
    }

    /// A durable run's step replayed from its journal: the exec had spent `spent` after it (docs/design.md §24).
    pub(crate) fn replayed(&mut self, spent: Spent) {
        self.spent = spent;
    }

    /// Before a call whose request is about `input` tokens: the refusal when its worst case cannot
    /// fit what is left (at least one output token, whatever the call's own limit), else the most
    /// output tokens the call may ask for (`None`: the limits bound no output).
    pub(crate) fn reserve(&mut self, input: u64, target: &str) -> Result<Option<u64>, Refusal> {
        let (output_left, price) = self.check(input, target)?;
        (self.pending_input, self.pending_price, self.pending_output) = (input, price, output_left);
        Ok(output_left)
    }

    /// Whether a call of about `input` tokens to `target` fits what is left (another target's
    /// price, say): [`Ledger::reserve`] without the reservation.
    pub(crate) fn fits(&self, input: u64, target: &str) -> bool {
        self.check(input, target).is_ok()
    }

    /// [`Ledger::reserve`]'s judgement, and the target's price under a dollar limit.
    fn check(&self, input: u64, target: &str) -> Result<(Option<u64>, Option<Price>), Refusal> {
        let mut price_of_call = None;
        let spent = &self.spent;
        if let Some(max) = self.limits.max_input_tokens() {
            if spent.input_tokens.saturating_add(input) > max {
                return Err(refusal(Limit::MaxInputTokens, max, spent.input_tokens, input));
            }
        }
        let mut output_left: Option<u64> = None;
        if let Some(max) = self.limits.max_total_tokens() {
            let needed = input.saturating_add(1);
            if spent.total_tokens().saturating_add(needed) > max {
                return Err(refusal(Limit::MaxTotalTokens, max, spent.total_tokens(), needed));
            }
            output_left = Some(max - spent.total_tokens() - input);
        }
        if let Some(max) = self.limits.max_output_tokens() {
            if spent.output_tokens >= max {
                return Err(refusal(Limit::MaxOutputTokens, max, spent.output_tokens, 1));
            }
            let left = max - spent.output_tokens;
            output_left = Some(output_left.map_or(left, |other| other.min(left)));
        }
        if let Some(max) = self.limits.max_cost_usd() {
            let price = self.prices.as_deref().and_then(|prices| prices.price_of(target)).copied();
            // Checked when the exec started: every target has a price. A target without one
            // (none should get here) is refused, never guessed at.
            let Some(price) = price else { return Err(usd_refusal(max, spent.cost_usd, f64::INFINITY)) };
            let left = max - spent.cost_usd;
            let needed = price.worst_case_usd(input, 1);
            if needed > left {
                return Err(usd_refusal(max, spent.cost_usd, needed));
            }
            // The output the dollars left can buy, after the input at its dearest.
            let per_output_token = price.worst_case_usd(0, 1);
            if per_output_token > 0.0 {
                let affordable = ((left - price.worst_case_usd(input, 0)) / per_output_token).floor() as u64;
                output_left = Some(output_left.map_or(affordable, |other| other.min(affordable)));
            }
            price_of_call = Some(price);
        }
        Ok((output_left, price_of_call))
    }

    /// What the call reserved last (its `input` estimate, and the output the exec's limits left it,
    /// `left`) needs of the runtime's spend `account` on `target`: its worst case, the input and
    /// the output it may ask for (the smallest of `left`, the provider's `provider_output` and the
    /// account's `call_output_tokens`), which is sent as its `max_tokens`.
    pub(crate) fn account_need(
        &self,
        account: &SpendAccount,
        input: u64,
        left: Option<u64>,
        provider_output: Option<u64>,
        target: &str,
    ) -> Result<(Amounts, u64, Option<Price>), Refusal> {
        let output = [left, provider_output].into_iter().flatten().fold(account.call_output_tokens(), u64::min);
        let mut needed = Amounts { tokens: input.saturating_add(output), micro_usd: 0 };
        let mut price = None;
        if let Some(max) = account.max_cost_usd() {
            // Checked by `build()`: every target has a price. One without (none should get here)
            // is refused, never guessed at.
            let Some(found) = self.prices.as_deref().and_then(|prices| prices.price_of(target)).copied() else {
                return Err(account_refusal(
                    account,
                    AccountRefused {
                        limit: Limit::MaxCostUsd,
                        max: micro_usd(max),
                        used: 0,
                        needed: u64::MAX,
                        resets_in: account.window(),
                    },
                ));
            };
            needed.micro_usd = micro_usd(found.worst_case_usd(input, output));
            price = Some(found);
        }
        Ok((needed, output, price))
    }

    /// Keeps the call in flight's reservation in the account, for its settle.
    pub(crate) fn hold(&mut self, held: Held, fleet: bool, price: Option<Price>) {
        self.hold = Some(AccountHold { held, fleet, price });
    }

    /// The call in flight's reservation in the account, and what to settle it to: the `usage` the
    /// call reported, else its input estimate (a call that failed before it answered).
    pub(crate) fn take_hold(&mut self, usage: Option<&Usage>) -> Option<(AccountHold, Amounts)> {
        let hold = self.hold.take()?;
        let usage = usage.copied().unwrap_or_else(|| Usage::new(self.pending_input, 0));
        let micro_usd = hold.price.map_or(0, |price| micro_usd(price.cost_usd(&usage)));
        Some((hold, Amounts { tokens: usage.total_tokens(), micro_usd }))
    }

    /// After the call reserved last: its reported `usage`, or, when the server reported none, its
    /// input estimate and its answer's size (a failed call's too: it was paid for); a call `cut`
    /// for passing its output spent at least what it was allowed. Returns the usage it counted.
    pub(crate) fn settle(&mut self, usage: Option<&Usage>, answer: Option<&AssistantMessage>, cut: bool) -> Usage {
        let usage = match usage {
            Some(usage) => *usage,
            None => {
                let shown = answer.map_or(0, answer_tokens);
                let output = if cut { shown.max(self.pending_output.unwrap_or(0)) } else { shown };
                Usage::new(self.pending_input, output)
            }
        };
        self.spent.input_tokens = self.spent.input_tokens.saturating_add(usage.input_tokens);
        self.spent.output_tokens = self.spent.output_tokens.saturating_add(usage.output_tokens);
        if let Some(price) = self.pending_price.take() {
            self.spent.cost_usd += price.cost_usd(&usage);
        }
        usage
    }

    /// The refusal of a call cut for passing what it was allowed: the limit it passed (or, when the
    /// server's count says it did not, the one that bounded its output), with what is spent now.
    pub(crate) fn passed(&self) -> Refusal {
        let spent = &self.spent;
        let counts = [
            (Limit::MaxOutputTokens, self.limits.max_output_tokens(), spent.output_tokens),
            (Limit::MaxTotalTokens, self.limits.max_total_tokens(), spent.total_tokens()),
        ];
        if let Some(max) = self.limits.max_cost_usd() {
            if spent.cost_usd > max || counts.iter().all(|(_, max, _)| max.is_none()) {
                return usd_refusal(max, spent.cost_usd, 0.0);
            }
        }
        let passed = counts.iter().find(|(_, max, used)| max.is_some_and(|max| *used > max));
        let (limit, max, used) = passed
            .or_else(|| counts.iter().find(|(_, max, _)| max.is_some()))
            .copied()
            .unwrap_or((Limit::MaxOutputTokens, Some(spent.output_tokens), spent.output_tokens));
        refusal(limit, max.unwrap_or(used), used, 0)
    }

    /// Before a tool turn of `calls` calls: the refusal when they would pass `max_tool_calls`,
    /// else they are counted.
    pub(crate) fn tool_calls(&mut self, calls: u64) -> Result<(), Refusal> {
        if let Some(max) = self.limits.max_tool_calls() {
            if self.spent.tool_calls.saturating_add(calls) > max {
                return Err(refusal(Limit::MaxToolCalls, max, self.spent.tool_calls, calls));
            }
        }
        self.spent.tool_calls = self.spent.tool_calls.saturating_add(calls);
        Ok(())
    }
}

/// A dollar limit's refusal, its amounts in millionths of a dollar (rounded up: a refusal never
/// says less was needed than was).
fn usd_refusal(max: f64, used: f64, needed: f64) -> Refusal {
    let micros = |usd: f64| (usd * 1e6).ceil().min(u64::MAX as f64) as u64;
    refusal(Limit::MaxCostUsd, micros(max), micros(used), micros(needed))
}

/// The refusal of the runtime's spend `account`: its limit, and its window.
pub(crate) fn account_refusal(account: &SpendAccount, refused: AccountRefused) -> Refusal {
    let AccountRefused { limit, max, used, needed, resets_in } = refused;
    let account = Some(AccountWindow::new(account.window(), resets_in));
    Refusal::UsageLimit { limit, max, used, needed, account }
}

fn refusal(limit: Limit, max: u64, used: u64, needed: u64) -> Refusal {
    Refusal::UsageLimit { limit, max, used, needed, account: None }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Ledger {
        fn new_test(limits: UsageLimits) -> Self {
            Self::new(limits, None)
        }
    }

    #[test]
    fn a_dollar_limit_buys_the_output_its_dollars_can() {
        let prices = Prices::new().with("t/m", Price::per_million(1.0, 10.0).unwrap()).unwrap();
        let mut ledger = Ledger::new(UsageLimits::new().with_max_cost_usd(0.01), Some(Arc::new(prices)));
        // 2 000 input tokens cost $0.002; the $0.008 left buy 800 output tokens.
        assert_eq!(ledger.reserve(2_000, "t/m"), Ok(Some(800)));
        ledger.settle(Some(&Usage::new(2_000, 700)), None, false);
        assert!((ledger.spent().cost_usd - 0.009).abs() < 1e-12);
        // $0.001 left: 1 000 input tokens cost it all, and one output token does not fit.
        let Err(Refusal::UsageLimit { limit, max, used, needed, .. }) = ledger.reserve(1_000, "t/m") else { panic!() };
        assert_eq!((limit, max, used, needed), (Limit::MaxCostUsd, 10_000, 9_000, 1_010));
    }

    #[test]
    fn a_call_is_refused_when_its_worst_case_cannot_fit() {
        let mut ledger = Ledger::new_test(UsageLimits::new().with_max_total_tokens(1_000).with_max_output_tokens(300));
        assert_eq!(ledger.reserve(600, "t"), Ok(Some(300)), "the output limit is the tighter");
        ledger.settle(Some(&Usage::new(600, 250)), None, false);
        assert_eq!(ledger.reserve(100, "t"), Ok(Some(50)), "50 output tokens are left of both");
        let Err(Refusal::UsageLimit { limit, used, needed, .. }) = ledger.reserve(200, "t") else { panic!() };
        assert_eq!((limit, used, needed), (Limit::MaxTotalTokens, 850, 201));
    }

    #[test]
    fn an_unreported_usage_counts_the_estimates() {
        let mut ledger = Ledger::new_test(UsageLimits::new().with_max_input_tokens(100));
        ledger.reserve(60, "t").unwrap();
        ledger.settle(None, Some(&AssistantMessage::text("x".repeat(40))), false);
        assert_eq!((ledger.spent().input_tokens, ledger.spent().output_tokens), (60, 10));
        assert!(matches!(ledger.reserve(41, "t"), Err(Refusal::UsageLimit { limit: Limit::MaxInputTokens, .. })));
    }

    #[test]
    fn tool_calls_past_the_limit_are_refused_and_not_counted() {
        let mut ledger = Ledger::new_test(UsageLimits::new().with_max_tool_calls(2));
        assert_eq!(ledger.tool_calls(2), Ok(()));
        assert!(ledger.tool_calls(1).is_err());
        assert_eq!(ledger.spent().tool_calls, 2);
    }
}
