//! The retry state one exec shares between its two layers, and layer 2's decision after a failed
//! attempt: one implementation, used by `Runtime::exec` and by [`Resilient`](crate::resilient::Resilient).

pub(crate) mod budget;
pub(crate) mod call;
pub(crate) mod fallback;
pub(crate) mod session;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::answer::exec_error::ExecErrorKind;
use crate::classify::{ExecAction, ExecVerdict, Markers, Reason, Scan, exec_verdict_of, failure_scan, retry_hint};
use crate::decision::{Decision, Layer, Observer, Rule, Verdict, Why};
use crate::durable::Scope;
use crate::error::model_error::split_kind;
use crate::error::unreadable::unreadable_what;
use crate::error::{ModelError, PolicyError};
use crate::message::AssistantMessage;
use crate::message::usage::{Usage, UsageTotals};
use crate::observe::journal::Journal;
use crate::observe::semconv;
use crate::observe::telemetry::{self, int};
use crate::policy::RetryPolicy;
use crate::policy::backoff::{Rng, Schedule};
use crate::policy::rules::{format_ms, millis};
use crate::spend::ledger::Ledger;
use crate::storm::pace::{Demand, LimitKind, Pace, Reservation};
use crate::storm::{BreakerState, Governor, Refusal};
use crate::stream::tap::Tap;
use budget::Budget;
use tracing::Span;

/// [`RetryPolicy::validate`] for an exec. The policy was judged when it was built (a `const` one at
/// compile time): the success path asks that answer, and only an invalid policy is judged again, for
/// its error.
#[inline]
pub(crate) fn validate_policy(policy: &RetryPolicy) -> Result<(), PolicyError> {
    if policy.is_valid() { Ok(()) } else { invalid(policy) }
}

/// The same for a resilient call, which has no session layer: `policy` is judged with it off.
#[inline]
pub(crate) fn validate_call_policy(policy: &RetryPolicy) -> Result<(), PolicyError> {
    if policy.is_valid_for_calls() { Ok(()) } else { invalid(&policy.with_session_retries(0)) }
}

/// The first rule `policy` breaks (it breaks one: it was judged invalid when built).
#[cold]
fn invalid(policy: &RetryPolicy) -> Result<(), PolicyError> {
    policy.validate()
}

/// The retry state of one exec (or one resilient call) shared by both layers: the budget, the
/// jitter RNG, the decisions so far, and the runtime's storm control.
pub(crate) struct RetryState<'a> {
    pub(crate) policy: &'a RetryPolicy,
    pub(crate) function: Option<&'static str>,
    pub(crate) budget: Budget<'a>,
    pub(crate) rng: Rng,
    pub(crate) decisions: Vec<Decision>,
    pub(crate) attempt: u32,
    pub(crate) observer: Option<&'a Observer>,
    pub(crate) journal: Option<&'a Journal>,
    /// The runtime's storm control; a resilient call has one of its own that limits nothing.
    pub(crate) governor: &'a Governor,
    /// The exec's span: the parent of its calls' spans and of layer 2's decisions (none for a
    /// session or a resilient call).
    pub(crate) span: Span,
    /// What layer 1 found in the text of the failed call it handed up last, for layer 2 to judge it
    /// without scanning the text again. Boxed: the failure path only.
    pub(crate) judged: Option<Box<Judged>>,
    /// The model tokens of the exec's calls so far. Boxed, at the first call that reports usage:
    /// every exec's future holds this state, and tokio boxes a future over 2 KiB in debug builds.
    pub(crate) usage: Option<Box<UsageTotals>>,
    /// What the last call that failed to decode on a shape could not read ([`unreadable_what`]):
    /// the memory that tells a format this client does not read (the same shape twice) from a
    /// corrupted stream. Set and read on the failure path only; boxed, one pointer in every exec.
    pub(crate) unreadable: Option<Box<str>>,
    /// This exec's number in the process ([`Decision::exec_id`]).
    pub(crate) exec_id: u64,
    /// The name of the target the calls go to now, for the decisions; `None` for a resilient call.
    pub(crate) target: Option<Arc<String>>,
    /// Where a streamed exec shows its deltas and decisions ([`Runtime::exec_stream`]).
    ///
    /// [`Runtime::exec_stream`]: crate::Runtime::exec_stream
    pub(crate) tap: Option<&'a Tap>,
    /// The exec's ledger against its spend limits (`UsageLimits`), when it has any. Boxed: one
    /// pointer in every exec, which an exec without limits never follows.
    pub(crate) spend: Option<Box<Ledger>>,
    /// The durable run whose journal the exec's steps and layer 2's waits go to (docs/design.md
    /// §24), if any.
    pub(crate) durable: Option<Arc<Scope>>,
}

/// The number of the next exec (or resilient call) in this process, from 1.
fn next_exec_id() -> u64 {
    static EXECS: AtomicU64 = AtomicU64::new(1);
    EXECS.fetch_add(1, Ordering::Relaxed)
}

impl<'a> RetryState<'a> {
    /// Counts the tokens of a finished call; a failed call's count as failed.
    #[inline]
    pub(crate) fn count_usage(&mut self, message: &crate::message::AssistantMessage) {
        if let Some(usage) = message.usage {
            let totals = self.usage.get_or_insert_default();
            totals.total += usage;
            if message.is_error() {
                totals.failed += usage;
            }
        }
    }

    /// Counts `usage` as spent on a failed attempt (an answer the validator rejected), already
    /// counted in the total.
    pub(crate) fn count_failed(&mut self, usage: crate::message::Usage) {
        self.usage.get_or_insert_default().failed += usage;
    }

    /// The state before the first call: no decisions yet, no function name, no observer, no journal.
    pub(crate) fn new(policy: &'a RetryPolicy, budget: Budget<'a>, rng: Rng, governor: &'a Governor) -> Self {
        Self {
            policy,
            function: None,
            budget,
            rng,
            decisions: Vec::new(),
            attempt: 0,
            observer: None,
            journal: None,
            governor,
            judged: None,
            usage: None,
            unreadable: None,
            span: Span::none(),
            exec_id: next_exec_id(),
            target: None,
            tap: None,
            spend: None,
            durable: None,
        }
    }

    /// Whether the failed call whose typed error is `error` failed to decode on the shape the last
    /// one did: the second sight of a format this client does not read. Any other failure forgets
    /// the shape (what fails twice in a row is what counts); a success touches nothing.
    pub(crate) fn unreadable_again(&mut self, error: Option<&ModelError>) -> bool {
        let Some(what) = error.and_then(unreadable_what) else {
            self.unreadable = None;
            return false;
        };
        if self.unreadable.as_deref() == Some(what) {
            return true;
        }
        self.unreadable = Some(what.into());
        false
    }

    /// Whether a retry may be made, and after how long: the budget's caps and deadlines over
    /// `computed` (the schedule's delay, or the server's wait when it named one). The runtime's retry quota is asked after the wait
    /// ([`RetryState::retry_after`]), when the calls that succeeded meanwhile have been counted.
    pub(crate) fn permit_retry(&mut self, computed: Duration, hint: Option<Duration>) -> Result<Duration, Refusal> {
        // The backoff and the time to come count from here if nothing read the clock before.
        self.budget.start_clock();
        if let Some(refusal) = self.committed() {
            return Err(self.budget.refuse(refusal));
        }
        self.budget.plan_retry(computed, hint)
    }

    /// Records `layer`'s decision to retry the failure `error` after `delay`, sleeps the delay,
    /// then withdraws the retry from the runtime's retry quota, as it is about to be sent. `Err`
    /// (kept as what stopped the exec) when the quota refuses it: the caller records that as a
    /// decision about the same failure. A quota this process decides is read before the wait, so a
    /// retry it refuses now is refused at once, with no "retry" decision and no sleep; the fleet's
    /// (a shared store) is asked after the wait, and a refusal then follows the "retry" decision.
    pub(crate) async fn retry_after(
        &mut self,
        layer: Layer,
        error: String,
        usage: Option<Usage>,
        rule: Rule,
        delay: Duration,
    ) -> Result<(), Refusal> {
        if let Some(refusal) = self.governor.refuses_retry_now() {
            return Err(self.budget.refuse(refusal));
        }
        self.decide(layer, error, usage, Verdict::Retry, Why::Judged(rule), Some(delay));
        match &self.durable {
            // Between two steps of a durable run: a durable timer, replayed at once once it ended.
            Some(scope) if layer == Layer::Exec => {
                let scope = scope.clone();
                let elsewhere = Box::pin(crate::durable::wait(&scope, delay)).await;
                self.budget.replayed(0, elsewhere);
            }
            _ => tokio::time::sleep(delay).await,
        }
        self.governor.withdraw().await.map_err(|refusal| self.budget.refuse(refusal))
    }

    /// Notes what the exec spent against its limits where its reply or error will find it.
    pub(crate) fn note_spent(&mut self) {
        if let Some(ledger) = &self.spend {
            self.usage.get_or_insert_default().spent = Some(ledger.spent());
        }
    }

    /// [`Refusal::Committed`] when a streamed exec in [`StreamMode::Fail`] showed something of the
    /// turn: no other call may replace it.
    ///
    /// [`StreamMode::Fail`]: crate::exec::StreamMode::Fail
    pub(crate) fn committed(&self) -> Option<Refusal> {
        self.tap.filter(|tap| tap.committed()).map(|_| Refusal::Committed)
    }

    /// Waits while the provider is cooling down (a server asked another call to wait). A wait is a
    /// decision of layer 1 ([`Verdict::CooledDown`]), so it shows in the reply's decisions and at
    /// INFO. A cooldown longer than `retry_after_cap_ms` or the time left is not waited for part
    /// of and then cut short, which would send the request before the server asked: it is refused
    /// ([`Refusal::Cooldown`]), no call made, as a `Retry-After` past either would end the exec.
    pub(crate) async fn wait_for_cooldown(&mut self) -> Result<(), Refusal> {
        let governor = self.governor;
        let Some(left) = governor.cooldown_remaining().await else { return Ok(()) };
        // The wait counts, from here if nothing read the clock before.
        self.budget.start_clock();
        if let Some(refusal) = self.budget.cooldown_refusal(left) {
            return Err(self.budget.refuse(refusal));
        }
        self.wait_before_call(COOLDOWN, Verdict::CooledDown, Why::CoolingDown { left }, left).await;
        Ok(())
    }

    /// Waits until the provider's rate limits hold what the next call needs (`demand`, reserved in
    /// arrival order with the runtime's other calls), if that fits before the deadline: a wait is
    /// a decision of layer 1 ([`Verdict::Paced`]); one that does not fit is refused, no call made.
    /// A wait longer than `retry_after_cap_ms` is not made: the call goes at once, unreserved, and
    /// the server's answer decides. The reservation, when one was made, for the call to settle.
    pub(crate) async fn wait_for_pace(
        &mut self,
        demand: &Demand,
        provider: &str,
    ) -> Result<Option<Reservation>, Refusal> {
        let left = self.budget.time_left();
        let (reserved, reservation) = match self.governor.pace(demand, left, self.policy.retry_after_cap()).await {
            Ok(Pace::Reserved(reserved, reservation)) => (reserved, reservation),
            Ok(Pace::Unknown) => {
                telemetry::paced(provider, Duration::ZERO);
                return Ok(None);
            }
            Ok(Pace::OverCap { wait, limit, cap }) => {
                over_cap(provider, wait, limit, cap);
                return Ok(None);
            }
            Err(refused) => return Err(self.budget.refuse(Refusal::RateLimit(refused))),
        };
        telemetry::paced(provider, reserved.wait);
        let (Some(limit), false) = (reserved.limit, reserved.wait.is_zero()) else { return Ok(Some(reservation)) };
        // The wait counts, from here if nothing read the clock before.
        self.budget.start_clock();
        let why = Why::Paced { limit, size: reserved.size, resets_in: reserved.resets_in };
        self.wait_before_call(PACED, Verdict::Paced, why, reserved.wait).await;
        Ok(Some(reservation))
    }

    /// Records a decision about the latest call (failure path only) and reports it to `tracing`.
    pub(crate) fn decide(
        &mut self,
        layer: Layer,
        error: String,
        usage: Option<Usage>,
        verdict: Verdict,
        reason: Why,
        delay: Option<Duration>,
    ) {
        let mut decision =
            Decision::new(layer, self.attempt, self.budget.calls(), error, verdict, reason, self.budget.elapsed());
        (decision.usage, decision.delay) = (usage, delay);
        self.record(decision);
    }

    /// Records layer 1's wait of `delay` before the next call, about that call (none failed:
    /// `error` says what held it), then sleeps it.
    async fn wait_before_call(&mut self, error: &str, verdict: Verdict, reason: Why, delay: Duration) {
        let at = self.budget.elapsed();
        let decision = Decision::new(Layer::Session, self.attempt, self.budget.calls() + 1, error, verdict, reason, at);
        self.record(decision.with_delay(delay));
        tokio::time::sleep(delay).await;
    }

    /// Records `decision` (made on the failure path) and reports it to `tracing`, the observer and
    /// the journal.
    pub(crate) fn record(&mut self, mut decision: Decision) {
        decision.exec_id = self.exec_id;
        decision.function = self.function;
        decision.target = self.target.clone();
        // Layer 1 decides within the failed call's span (the current one); layer 2 within the exec's.
        let parent = match decision.layer {
            Layer::Exec => self.span.id(),
            _ => Span::current().id(),
        };
        emit(self.function, &decision, parent);
        if let Some(observer) = self.observer {
            observer(&decision);
        }
        if let Some(tap) = self.tap {
            tap.decision(&decision);
        }
        if let Some(journal) = self.journal {
            // Writes only retries, and only when the journal was opened to keep them.
            let _ = journal.record_decision(self.function, &decision);
        }
        self.decisions.push(decision);
    }
}

/// The `error` of a [`Verdict::CooledDown`] decision: no call of this exec failed, an earlier
/// call's server asked the provider's callers to wait.
pub(crate) const COOLDOWN: &str = "Cooldown: an earlier call's server asked this provider's callers to wait";

/// The `error` of a [`Verdict::Paced`] decision: no call failed, the provider's rate limit had not
/// refilled enough for the next one.
pub(crate) const PACED: &str = "RateLimit: the provider's rate limit has not refilled enough for this call yet";

/// A pace wait longer than `retry_after_cap_ms`, not made: said at INFO (no decision: nothing
/// waited, nothing failed), and the call counted as admitted at once.
#[cold]
fn over_cap(provider: &str, wait: Duration, limit: LimitKind, cap: Duration) {
    tracing::info!(gen_ai.provider.name = provider, agentic.limit = %limit, agentic.wait_ms = int(millis(wait)),
        "the {limit} rate limit's wait of {} is longer than `retry_after_cap_ms` ({}): not made; the call is sent \
         and the server's answer decides", format_ms(millis(wait)), format_ms(millis(cap)));
    telemetry::paced(provider, Duration::ZERO);
}

/// Reports a decision to `tracing`, as an event of the current span (layer 1: the failed call's,
/// layer 2: the exec's), with the OpenTelemetry names of docs/design.md §14, and counts it for the
/// metrics.
fn emit(function: Option<&'static str>, decision: &Decision, parent: Option<tracing::Id>) {
    let function = function.unwrap_or("exec");
    let (layer, verdict) = (decision.layer.name(), decision.verdict.name());
    let delay_ms = decision.delay.map(|delay| int(delay.as_millis() as u64));
    let (attempt, call) = (i64::from(decision.attempt), i64::from(decision.call));
    let error_type = split_kind(&decision.error).map_or("ModelError", |(kind, _)| kind);
    if decision.verdict == Verdict::CooledDown {
        // Not a failure: a wait that an earlier call's server asked for, visible at INFO.
        tracing::info!(parent: parent, function, agentic.layer = layer, agentic.verdict = verdict, agentic.attempt = attempt,
            agentic.call = call, agentic.reason = %decision.reason, agentic.delay_ms = delay_ms,
            "provider cooling down; waiting before the request");
    } else if decision.verdict == Verdict::Paced {
        // Not a failure: the pacer keeps the call under the server's stated limit.
        tracing::info!(parent: parent, function, agentic.layer = layer, agentic.verdict = verdict, agentic.attempt = attempt,
            agentic.call = call, agentic.reason = %decision.reason, agentic.delay_ms = delay_ms,
            "rate limit used up; waiting for it before the request");
    } else if decision.verdict == Verdict::Retry {
        tracing::debug!(parent: parent, function, agentic.layer = layer, agentic.verdict = verdict, agentic.attempt = attempt,
            agentic.call = call, error.type = error_type, error = %decision.error,
            agentic.reason = %decision.reason, agentic.delay_ms = delay_ms, "model call failed; retrying");
    } else {
        tracing::warn!(parent: parent, function, agentic.layer = layer, agentic.verdict = verdict, agentic.attempt = attempt,
            agentic.call = call, error.type = error_type, error = %decision.error,
            agentic.reason = %decision.reason, "model call failed");
    }
    tracing::info!(target: semconv::METRICS_TARGET, parent: None, metric = semconv::RETRY_DECISIONS, value = 1u64, agentic.layer = layer,
        agentic.verdict = verdict);
    if let Why::Refused(refusal) = &decision.reason {
        tracing::info!(target: semconv::METRICS_TARGET, parent: None, metric = semconv::RETRY_REFUSED, value = 1u64, agentic.layer = layer,
            agentic.refusal = refusal.name());
    }
}

/// What layer 2 does after a failed attempt.
#[derive(Debug)]
pub(crate) enum Next {
    /// Make the next attempt now (the backoff has been slept, the retry quota allowed it).
    Retry,
    /// Give up with this kind (and, for `Budget`, the cap that stopped it).
    Stop(ExecErrorKind, Option<Refusal>),
}

/// A failed attempt as layer 2 sees it.
pub(crate) struct Failed {
    /// `"<Kind>: <text>"`.
    pub(crate) error: String,
    /// What the classifier says to do.
    pub(crate) action: ExecAction,
    /// The rule that said it.
    pub(crate) rule: Rule,
    /// The server's requested wait.
    pub(crate) hint: Option<Duration>,
    /// The validator rejected the result.
    pub(crate) rejected: bool,
    /// The tokens the attempt's last call used, when reported.
    pub(crate) usage: Option<Usage>,
}

impl Failed {
    /// A failed call's final message as layer 2 judges it, with its typed error (kept for the
    /// exec's error). `judged` is what layer 1 found in its text, when layer 1 handed it up: its
    /// text is not scanned again (only a `"<Kind>: "` layer 2 reads before it).
    pub(crate) fn of_message(message: AssistantMessage, judged: Option<Box<Judged>>) -> (Self, Option<ModelError>) {
        let error = message.failure_text();
        let typed = message.error.as_ref();
        let text = message.error_text();
        let (verdict, hint) = match judged {
            // Layer 1 saw the same shape fail twice: the target's answers are in a format this
            // client does not read, whatever the text's markers say.
            Some(judged) if judged.unreadable => {
                (ExecVerdict { action: ExecAction::FailPermanently, reason: Reason::Unreadable }, judged.hint)
            }
            Some(judged) => (exec_verdict_of(&failure_scan(&error, text, judged.markers), typed), judged.hint),
            None => (exec_verdict_of(&Scan::new(&error), typed), retry_hint(text, typed)),
        };
        let failed = Self::new(error, verdict.action, verdict.reason).with_hint(hint).with_usage(message.usage);
        (failed, message.error)
    }

    /// A failure `error` that `rule` judged: do `action`.
    pub(crate) fn new(error: String, action: ExecAction, rule: impl Into<Rule>) -> Self {
        Self { error, action, rule: rule.into(), hint: None, rejected: false, usage: None }
    }

    /// An answer the validator rejected for `why`: worth another attempt, which sees the reason.
    pub(crate) fn rejected(why: &str, rule: impl Into<Rule>) -> Self {
        Self { rejected: true, ..Self::new(format!("InvalidResult: {why}"), ExecAction::Retry, rule) }
    }

    /// With the server's requested wait.
    pub(crate) fn with_hint(self, hint: Option<Duration>) -> Self {
        Self { hint, ..self }
    }

    /// With the tokens the attempt's last call used.
    pub(crate) fn with_usage(self, usage: Option<Usage>) -> Self {
        Self { usage, ..self }
    }
}

/// What layer 1 found in a failed call's text: its markers and the wait it states, and whether it
/// was the second call to fail to decode on the same shape ([`RetryState::unreadable_again`]).
#[derive(Debug)]
pub(crate) struct Judged {
    pub(crate) markers: Markers,
    pub(crate) hint: Option<Duration>,
    pub(crate) unreadable: bool,
}

impl RetryState<'_> {
    /// Layer 2's rules after failed attempt `index` (from 0), docs/design.md §5: stop on a
    /// programming error, a context overflow or a permanent failure; stop when a cap stopped layer 1;
    /// stop after the last attempt; otherwise retry after the backoff, if the budget allows it and,
    /// once the backoff is slept, the retry quota. Records the decisions.
    pub(crate) async fn after_failed_attempt(&mut self, schedule: &mut Schedule, index: u32, failed: Failed) -> Next {
        let Failed { error, action, rule, hint, rejected, usage } = failed;
        let stop = match action {
            ExecAction::Raise => Some((ExecErrorKind::Programming, Verdict::Raise)),
            ExecAction::ContextOverflow => Some((ExecErrorKind::ContextOverflow, Verdict::ContextOverflow)),
            ExecAction::FailPermanently => Some((ExecErrorKind::Permanent, Verdict::FailPermanently)),
            ExecAction::Retry => None,
        };
        if let Some((kind, verdict)) = stop {
            self.decide(Layer::Exec, error, usage, verdict, Why::Judged(rule), None);
            return Next::Stop(kind, None);
        }
        if let Some(refusal) = self.budget.take_stopped_by() {
            return self.refused(error, usage, refusal);
        }
        let limit = self.policy.max_retries();
        if index + 1 >= limit {
            self.decide(
                Layer::Exec,
                error,
                usage,
                Verdict::Exhausted,
                Why::TriesUsed { rule, layer: Layer::Exec, limit },
                None,
            );
            let kind = if rejected { ExecErrorKind::InvalidResult } else { ExecErrorKind::Exhausted };
            return Next::Stop(kind, None);
        }
        let computed = schedule.wait(index, hint, &mut self.rng);
        let delay = match self.permit_retry(computed, hint).and_then(|delay| self.open_past(delay)) {
            Ok(delay) => delay,
            Err(refusal) => return self.refused(error, usage, refusal),
        };
        match self.retry_after(Layer::Exec, error.clone(), usage, rule, delay).await {
            Ok(()) => Next::Retry,
            // A second decision about the same failure: the retry was planned, then refused.
            Err(refusal) => self.refused(error, usage, refusal),
        }
    }

    /// `delay`, unless the target's circuit breaker (a runtime with fallbacks) is open for longer:
    /// the call after it would be skipped, so the retry is refused now instead of slept for. Only the
    /// last target gets here with its breaker open: from the others the exec has moved on.
    pub(crate) fn open_past(&mut self, delay: Duration) -> Result<Duration, Refusal> {
        let (Some(state), Some(target)) = (self.governor.breaker_state(), self.governor.breaker_target()) else {
            return Ok(delay);
        };
        match state {
            BreakerState::Open { left, .. } if left > delay => {
                let refusal = Refusal::CircuitOpen { target: target.to_owned(), state };
                Err(self.budget.refuse(refusal))
            }
            _ => Ok(delay),
        }
    }

    /// Layer 2 stops because a cap refused the retry.
    pub(crate) fn refused(&mut self, error: String, usage: Option<Usage>, refusal: Refusal) -> Next {
        self.decide(Layer::Exec, error, usage, Verdict::Refused, Why::Refused(refusal.clone()), None);
        let kind = if matches!(refusal, Refusal::UsageLimit { .. }) {
            ExecErrorKind::UsageLimit
        } else {
            ExecErrorKind::Refused
        };
        Next::Stop(kind, Some(refusal))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::retry_hint_of;
    use crate::error::TransportKind;

    /// What layer 1 hands up, as `session::retry_after_failed_call` makes it.
    fn judged_by_layer_1(message: &AssistantMessage) -> Box<Judged> {
        let scan = Scan::new(message.error_text());
        Box::new(Judged {
            markers: scan.markers(),
            hint: retry_hint_of(&scan, message.error.as_ref()),
            unreadable: false,
        })
    }

    /// Layer 2 judges a failure the same with layer 1's scan as with a scan of its own, over the
    /// corpus of real error texts, as error events (layer 2 reads `"ModelError: <text>"`) and as
    /// typed errors raised while streaming (`"<Kind>: <text>"` already).
    #[test]
    fn layer_2_judges_alike_with_layer_1s_scan() {
        let corpus = include_str!("../../corpus/errors.txt");
        let mut judged = 0;
        for line in corpus.lines() {
            let messages = [
                AssistantMessage::error_event(line, None),
                AssistantMessage::error_event(format!("RateLimitError: {line}"), None),
                AssistantMessage::from_error(ModelError::http(400, line)),
                AssistantMessage::from_error(ModelError::transport(TransportKind::Reset, line)),
            ];
            for message in messages {
                let (with, _) = Failed::of_message(message.clone(), Some(judged_by_layer_1(&message)));
                let (without, _) = Failed::of_message(message, None);
                assert_eq!(
                    (&with.error, with.action, &with.rule, with.hint),
                    (&without.error, without.action, &without.rule, without.hint),
                    "{line:?}"
                );
                judged += 1;
            }
        }
        assert!(judged > 1000, "{judged}");
    }
}
