//! Fallback across targets (`RuntimeBuilder::with_fallback`): the providers of a runtime in order, each
//! with its own storm control and circuit breaker, and the rules that move an exec from one to the
//! next (docs/design.md §10, "Fallback across targets").
//!
//! An exec walks the targets forward and never back: each target is tried at most once per exec,
//! so a fallback adds at most one attempt's calls and no backoff, and an exec never flaps.

use std::sync::Arc;

use crate::classify::{ExecAction, Reason, TARGET_MARKERS};
use crate::decision::{Decision, Fallback, Layer, MoveReason, Rule, Verdict, Why};
use crate::error::ModelError;
use crate::provider::Provider;
use crate::retry::{Failed, RetryState};
use crate::storm::{BreakerState, Governor, Permit, Refusal};

/// The most targets one runtime has: its primary and up to 31 fallbacks. A bound, as every input
/// has one: an exec walks them in order, and each carries a breaker and a retry quota.
pub const MAX_TARGETS: usize = 32;

/// One provider of a runtime with its storm control: the retry quota and cooldowns of its scope,
/// and its circuit breaker.
#[derive(Clone)]
pub(crate) struct Target {
    pub(crate) provider: Arc<dyn Provider>,
    pub(crate) governor: Arc<Governor>,
    /// `"<provider>/<model>"`. An `Arc<String>`, one word: a reply carries it, and every reply is
    /// moved on its way out.
    pub(crate) name: Arc<String>,
}

/// A target's name: `"<provider>/<model>"`, or the provider's name when it names no model.
pub(crate) fn target_name(provider: &dyn Provider) -> String {
    match provider.model() {
        Some(model) if !model.is_empty() => format!("{}/{model}", provider.name()),
        _ => provider.name().to_owned(),
    }
}

/// One target of a runtime, as [`Runtime::targets`](crate::Runtime::targets) reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TargetStatus {
    /// `"<provider>/<model>"`, e.g. `"openai/gpt-4o-mini"` (the provider's name alone when it names
    /// no model).
    pub name: String,
    /// Its circuit breaker's state; `None` for a runtime without fallbacks, which has no breaker.
    pub breaker: Option<BreakerState>,
    /// How many retries its retry quota allows now (`None` when the budget is off).
    pub retry_quota: Option<u64>,
}

impl TargetStatus {
    pub(crate) fn new(name: String, breaker: Option<BreakerState>, retry_quota: Option<u64>) -> Self {
        Self { name, breaker, retry_quota }
    }
}

/// Where an exec is among its runtime's targets.
#[derive(Clone, Copy)]
pub(crate) struct Position<'a> {
    /// A `Vec`'s address, one word: every exec's run holds a position (`None` without fallbacks).
    targets: &'a Vec<Target>,
    index: u32,
}

impl<'a> Position<'a> {
    /// At the first target (the primary).
    pub(crate) fn new(targets: &'a Vec<Target>) -> Self {
        Self { targets, index: 0 }
    }

    fn current(&self) -> &'a Target {
        &self.targets[self.index as usize]
    }

    /// The current target's name.
    pub(crate) fn name(&self) -> &'a str {
        &self.current().name
    }

    /// The current target's name, shared (for the reply or the error).
    pub(crate) fn target_name(&self) -> Arc<String> {
        self.current().name.clone()
    }

    /// The current target's place in the runtime's list, from 0 (the primary).
    pub(crate) fn index(&self) -> u32 {
        self.index
    }

    /// A durable run's step replayed from its journal was made at target `index`: the exec is
    /// there again, and the provider to call from now on is returned (`None`: the runtime has no
    /// such target).
    pub(crate) fn restore(&mut self, state: &mut RetryState<'a>, index: u32) -> Option<&'a dyn Provider> {
        let target = self.targets.get(index as usize)?;
        if index != self.index {
            self.index = index;
            state.governor = &target.governor;
            state.target = Some(target.name.clone());
        }
        Some(&*target.provider)
    }

    fn next(&self) -> Option<&'a Target> {
        self.targets.get(self.index as usize + 1)
    }

    /// Moves to the next target and records the decision about call `call`; returns the provider to
    /// call from now on.
    fn hop(&mut self, state: &mut RetryState<'a>, call: u32, error: String, because: MoveReason) -> &'a dyn Provider {
        let from = self.current().name.to_string();
        self.index += 1;
        let to = self.current();
        state.governor = &to.governor;
        state.budget.start_target();
        // What the last target's answers could not be read says nothing of this one's format: its
        // own shape must fail twice before it is taken for one this client does not read.
        state.unreadable = None;
        let fallback = Fallback { from, to: to.name.to_string(), because };
        state.record(Decision {
            layer: Layer::Exec,
            attempt: state.attempt,
            call,
            error,
            usage: None,
            verdict: Verdict::Fallback,
            reason: Why::Fallback(Box::new(fallback)),
            delay: None,
            at: state.budget.elapsed(),
            exec_id: 0,
            function: None,
            target: None,
        });
        // The decision was about the call to the target left; the next ones go to this one.
        state.target = Some(to.name.clone());
        &*to.provider
    }

    /// The next target's provider, if there is one.
    pub(crate) fn next_provider(&self) -> Option<&'a dyn Provider> {
        self.next().map(|target| &*target.provider)
    }

    /// Before a call that would pass the exec's dollar limit here and fits it at the next target's
    /// price (`refusal` says by how much): moves on, and returns the provider to call.
    pub(crate) fn move_cheaper(&mut self, state: &mut RetryState<'a>, refusal: Refusal) -> &'a dyn Provider {
        let error = format!("UsageLimit: `{}` is too dear for the next call: {refusal}", self.name());
        let call = state.budget.calls() + 1;
        self.hop(state, call, error, MoveReason::Cheaper(refusal))
    }

    /// Before a call: the target must admit it. A target whose breaker is open (or half-open with
    /// its probe out), or whose cooldown the exec cannot wait (longer than `retry_after_cap_ms` or
    /// the time left), is left for the next one at once; `Ok((Some(provider), _))` when the exec
    /// moved, with the admission the call's outcome is recorded with. `Err` when the last target's
    /// breaker refuses too: no call is made.
    pub(crate) async fn admit(
        &mut self,
        state: &mut RetryState<'a>,
    ) -> Result<(Option<&'a dyn Provider>, Option<Permit<'a>>), Refusal> {
        let mut moved = None;
        loop {
            let target = self.current();
            // The cooldown first: a target left for it keeps its probe for another exec.
            let mut because = None;
            if self.next().is_some() {
                if let Some(left) = target.governor.cooldown_remaining().await {
                    state.budget.start_clock();
                    because = state.budget.cooldown_refusal(left).map(MoveReason::Refused);
                }
            }
            let because = match because {
                Some(because) => because,
                None => match target.governor.admit().await {
                    Ok(permit) => return Ok((moved, Some(permit))),
                    Err(breaker) => MoveReason::BreakerOpen(breaker),
                },
            };
            if self.next().is_none() {
                let MoveReason::BreakerOpen(breaker) = because else { return Ok((moved, None)) };
                return Err(Refusal::CircuitOpen { target: target.name.to_string(), state: breaker });
            }
            state.budget.start_clock();
            let error = match &because {
                MoveReason::BreakerOpen(breaker) => format!("CircuitOpen: `{}` is {breaker}", target.name),
                _ => crate::retry::COOLDOWN.to_owned(),
            };
            let call = state.budget.calls() + 1;
            moved = Some(self.hop(state, call, error, because));
        }
    }

    /// Layer 1 after a failed call whose outcome its target's breaker has heard
    /// (`session::session_rules`): `Some(state)` when the breaker is no longer closed and a next
    /// target exists, so that layer 1 stops retrying this target.
    pub(crate) fn open_after_failed_call(&self, retryable: bool) -> Option<BreakerState> {
        if !retryable || self.next().is_none() {
            return None;
        }
        self.current().governor.breaker_state().filter(|state| !matches!(state, BreakerState::Closed))
    }

    /// Layer 2 after a failed attempt: why the exec leaves its target, when it does and a next
    /// target exists (docs/design.md §10). Never on a programming error, a rejected answer, a cap of
    /// the exec's own (`max_calls`, a deadline the backoff would pass), or a permanent failure that
    /// is the request's rather than the target's.
    pub(crate) fn reason_to_move(
        &self,
        state: &RetryState<'_>,
        failed: &Failed,
        source: Option<&ModelError>,
        last_attempt: bool,
    ) -> Option<MoveReason> {
        let next = self.next()?;
        if failed.rejected {
            return None;
        }
        match failed.action {
            ExecAction::Raise => None,
            ExecAction::ContextOverflow => {
                let window = self.current().provider.context_window()?;
                let next = next.provider.context_window()?;
                (next > window).then_some(MoveReason::ContextWindow { window, next })
            }
            ExecAction::FailPermanently => {
                is_target_permanent(&failed.rule, source).then(|| MoveReason::Permanent(failed.rule.clone()))
            }
            ExecAction::Retry => {
                if let Some(refusal) = state.budget.stopped_by() {
                    let the_targets = matches!(
                        refusal,
                        Refusal::RetryAfterCap { .. }
                            | Refusal::RetryQuota { .. }
                            | Refusal::RateLimit(_)
                            | Refusal::Cooldown { .. }
                            | Refusal::Deadline { requested_by_server: true, .. }
                    );
                    return the_targets.then(|| MoveReason::Refused(refusal.clone()));
                }
                if let Some(breaker) = self.current().governor.breaker_state() {
                    if !matches!(breaker, BreakerState::Closed) {
                        return Some(MoveReason::BreakerOpen(breaker));
                    }
                }
                // Layer 1's rule says what failed ("HTTP 503 is transient"); layer 2's only that
                // nothing marked it permanent.
                let session = state.decisions.last().filter(|decision| {
                    decision.layer == Layer::Session && decision.verdict == Verdict::RetriesExhausted
                });
                match session.and_then(|decision| decision.reason.rule()) {
                    Some(rule) => Some(MoveReason::RetriesUsed(rule.clone())),
                    None => last_attempt.then(|| MoveReason::RetriesUsed(failed.rule.clone())),
                }
            }
        }
    }

    /// Moves the exec on after layer 2's `reason_to_move`, at once: a refusal that was the target's
    /// no longer stops the exec. Returns the provider to call from now on.
    pub(crate) fn move_on(&mut self, state: &mut RetryState<'a>, error: &str, because: MoveReason) -> &'a dyn Provider {
        state.budget.take_stopped_by();
        let call = state.budget.calls();
        self.hop(state, call, error.to_owned(), because)
    }
}

/// Whether a failure judged by `rule` is the target's own: its key refused, its quota spent, its
/// model not found, its TLS certificate refused, its base URL answering something else. Another
/// target has another key, model and URL; a request the API refuses (a 400) would fail there too.
pub(crate) fn is_target_permanent(rule: &Rule, error: Option<&ModelError>) -> bool {
    if error.and_then(ModelError::status).is_some_and(target_status) {
        return true;
    }
    match rule {
        Rule::Classifier(reason) => match *reason {
            Reason::QuotaCode(_)
            | Reason::QuotaText(_)
            | Reason::QuotaUntilReset
            | Reason::NotAStream
            | Reason::Unreadable => true,
            Reason::PermanentStatus(status) => target_status(status),
            Reason::Transport(kind) => kind.is_permanent(),
            Reason::PermanentMarker(marker) => TARGET_MARKERS.contains(&marker),
            _ => false,
        },
        Rule::Custom(_) => false,
    }
}

/// 401 and 403 (the key), 402 (the bill), 404 (the model or the URL), and a 3xx (a redirect, which
/// is the URL's).
fn target_status(status: u16) -> bool {
    matches!(status, 300..=399 | 401..=404)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::patterns::PERMANENT;

    #[test]
    fn every_target_marker_is_a_permanent_marker() {
        for marker in TARGET_MARKERS {
            assert!(PERMANENT.iter().any(|pattern| pattern.label == *marker), "{marker} is not in PERMANENT");
        }
    }

    #[test]
    fn the_targets_own_failures_are_told_from_the_requests() {
        let own = [
            Reason::PermanentStatus(401),
            Reason::PermanentStatus(404),
            Reason::PermanentStatus(307),
            Reason::QuotaCode("insufficient_quota"),
            Reason::PermanentMarker("invalid api key"),
            Reason::NotAStream,
        ];
        for reason in own {
            assert!(is_target_permanent(&Rule::Classifier(reason), None), "{reason}");
        }
        let requests = [
            Reason::PermanentStatus(400),
            Reason::PermanentStatus(422),
            Reason::PermanentMarker("invalid image"),
            Reason::PermanentMarker("invalid_argument"),
            Reason::ShouldRetry(false),
        ];
        for reason in requests {
            assert!(!is_target_permanent(&Rule::Classifier(reason), None), "{reason}");
        }
        let refused = ModelError::http(403, "forbidden");
        assert!(is_target_permanent(&Rule::Classifier(Reason::NoRetryPattern), Some(&refused)));
    }
}
