//! One exec's ledger against its limits: each call reserves its worst case before it is sent and
//! settles to what it used after (docs/design.md §23).

use crate::message::{AssistantMessage, Usage};
use crate::spend::{Limit, Spent, UsageLimits};
use crate::storm::Refusal;
use crate::storm::pace::answer_tokens;

/// What an exec spent against its limits, and the call in flight's reservation.
#[derive(Debug)]
pub(crate) struct Ledger {
    limits: UsageLimits,
    spent: Spent,
}

impl Ledger {
    pub(crate) fn new(limits: UsageLimits) -> Self {
        Self { limits, spent: Spent::default() }
    }

    /// What the exec spent so far.
    pub(crate) fn spent(&self) -> Spent {
        self.spent
    }

    /// Before a call whose request is about `input` tokens: the refusal when its worst case cannot
    /// fit what is left (at least one output token, whatever the call's own limit), else the most
    /// output tokens the call may ask for (`None`: the limits bound no output).
    pub(crate) fn reserve(&self, input: u64) -> Result<Option<u64>, Refusal> {
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
        Ok(output_left)
    }

    /// After a call: its reported `usage`, or, when the server reported none, the call's input
    /// estimate and its answer's size (a failed call's too: it was paid for).
    pub(crate) fn settle(&mut self, usage: Option<&Usage>, input: u64, answer: Option<&AssistantMessage>) {
        let usage = match usage {
            Some(usage) => *usage,
            None => Usage::new(input, answer.map_or(0, answer_tokens)),
        };
        self.spent.input_tokens = self.spent.input_tokens.saturating_add(usage.input_tokens);
        self.spent.output_tokens = self.spent.output_tokens.saturating_add(usage.output_tokens);
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

fn refusal(limit: Limit, max: u64, used: u64, needed: u64) -> Refusal {
    Refusal::UsageLimit { limit, max, used, needed }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_is_refused_when_its_worst_case_cannot_fit() {
        let mut ledger = Ledger::new(UsageLimits::new().with_max_total_tokens(1_000).with_max_output_tokens(300));
        assert_eq!(ledger.reserve(600), Ok(Some(300)), "the output limit is the tighter");
        ledger.settle(Some(&Usage::new(600, 250)), 600, None);
        assert_eq!(ledger.reserve(100), Ok(Some(50)), "50 output tokens are left of both");
        let Err(Refusal::UsageLimit { limit, used, needed, .. }) = ledger.reserve(200) else { panic!() };
        assert_eq!((limit, used, needed), (Limit::MaxTotalTokens, 850, 201));
    }

    #[test]
    fn an_unreported_usage_counts_the_estimates() {
        let mut ledger = Ledger::new(UsageLimits::new().with_max_input_tokens(100));
        ledger.settle(None, 60, Some(&AssistantMessage::text("x".repeat(40))));
        assert_eq!((ledger.spent().input_tokens, ledger.spent().output_tokens), (60, 10));
        assert!(matches!(ledger.reserve(41), Err(Refusal::UsageLimit { limit: Limit::MaxInputTokens, .. })));
    }

    #[test]
    fn tool_calls_past_the_limit_are_refused_and_not_counted() {
        let mut ledger = Ledger::new(UsageLimits::new().with_max_tool_calls(2));
        assert_eq!(ledger.tool_calls(2), Ok(()));
        assert!(ledger.tool_calls(1).is_err());
        assert_eq!(ledger.spent().tool_calls, 2);
    }
}
