//! Layer 1: the session retry loop, over a history it is handed (it knows no `Runtime`; `Conversation`
//! keeps a history of its own and runs this loop on it).

use tracing::Instrument as _;

use crate::policy::backoff::Schedule;
use crate::retry::call::{self, CallMeta, CallPacing};
use std::pin::Pin;
use std::time::Duration;

use crate::classify::{Reason, Scan, SessionVerdict, retry_hint_of, session_verdict_of};
use crate::decision::{Layer, Rule, Verdict, Why};
use crate::error::ModelError;
use crate::error::unreadable::unreadable_again;
use crate::message::usage::Usage;
use crate::message::{AssistantMessage, Message};
use crate::observe::telemetry;
use crate::provider::{CallBounds, Provider, Request, ResponseSchema};
use crate::retry::fallback::{Position, is_target_permanent};
use crate::retry::{Judged, RetryState};
use crate::spend::ledger::{AccountHold, account_refusal};
use crate::spend::{Amounts, Limit};
use crate::storm::pace::{self, Demand, Paced, Reservation};
use crate::storm::{CallOutcome, Permit, Refusal};
use crate::tool::ToolSpec;

/// One exec's model-call context: the provider, the system instruction, and the retry state both
/// layers share (`state`).
pub(crate) struct Run<'a> {
    pub(crate) provider: &'a dyn Provider,
    pub(crate) system: Option<&'a str>,
    pub(crate) tools: std::borrow::Cow<'a, [ToolSpec]>,
    /// Prompts and answers go on the calls' spans (`RuntimeBuilder::with_content_in_traces`).
    pub(crate) content_in_traces: bool,
    /// The conversation was compacted: the calls after it say so on their spans
    /// (`gen_ai.conversation.compacted`). A flag here, beside the other, costs the exec's future no
    /// byte; the count stays the exec's.
    pub(crate) compacted: bool,
    /// The shape the answers must have (`Runtime::exec_json`).
    pub(crate) schema: Option<&'a ResponseSchema>,
    /// Where the exec is among the runtime's targets, when it has fallbacks (`provider` and the
    /// state's governor are the current target's).
    pub(crate) position: Option<Position<'a>>,
    pub(crate) state: RetryState<'a>,
}

/// Runs layer 1 on `history` (whose last message is the prompt): calls the model, and while the
/// answer is a retryable error and retries and budget remain, calls again after the backoff. Returns
/// the final message, answer or failure; `history` is left as it was (a failed call never enters it,
/// so a run dropped at any point leaves none behind).
pub(crate) async fn run_layer(run: &mut Run<'_>, history: &[Message]) -> Result<AssistantMessage, ModelError> {
    // Made at the first failure: a call that answers needs no schedule.
    let mut schedule = None;
    let mut retry = 0u32;
    loop {
        // The exec's spend limits: the call's worst case must fit what is left (docs/design.md §23).
        let mut max_tokens = None;
        if run.state.spend.is_some() {
            match reserve_for_call(run, history).await {
                Ok(left) => max_tokens = left,
                Err(refusal) => return Ok(spend_refused(run, refusal)),
            }
        }
        // The call's meta, with what it reserved of the provider's rate limits, when they are known.
        let mut meta = CallMeta::default();
        // The target's admission: the call's outcome is owed to its breaker, and a call that stops
        // before it goes (a pacer's refusal) drops it, giving back a probe.
        let mut permit = None;
        // A runtime with fallbacks always comes here (its breakers make `may_cool_down` true): the
        // target admits the call, or the exec moves on; without them, nothing changes.
        if run.state.governor.may_cool_down() {
            if let Some(position) = &mut run.position {
                match position.admit(&mut run.state).await {
                    Ok((moved, admitted)) => {
                        permit = admitted;
                        if let Some(provider) = moved {
                            run.provider = provider;
                            // Reserved at the target left: again at this one's price.
                            if run.state.spend.is_some() {
                                release_hold(run).await;
                                match reserve_for_call(run, history).await {
                                    Ok(left) => max_tokens = left,
                                    Err(refusal) => return Ok(spend_refused(run, refusal)),
                                }
                            }
                        }
                    }
                    Err(refusal) => return Ok(every_target_open(run, refusal)),
                }
            }
            if let Err(refusal) = run.state.wait_for_cooldown().await {
                return Ok(no_call(run, "Cooldown", refusal));
            }
            if run.state.governor.paces() {
                // Boxed: out of the future of every call, which a server without limits never needs.
                match Box::pin(pace_call(run, history)).await {
                    Ok(Some(reservation)) => meta = CallMeta::paced(reservation),
                    Ok(None) => {}
                    Err(refusal) => return Ok(no_call(run, "RateLimit", refusal)),
                }
            }
        }
        meta.permit = permit;
        meta.tap = run.state.tap;
        let call = run.state.budget.start_call();
        let limit = run.state.budget.call_limit();
        let request = Request {
            system: run.system,
            messages: history,
            timeout: limit.map(|limit| limit.limit),
            function: run.state.function,
            call,
            tools: &run.tools,
            bounds: CallBounds::of(run.state.policy),
            schema: run.schema,
            max_tokens,
        };
        let span = telemetry::call_span(&run.state.span, run.provider, call, run.compacted);
        // Wrapped only when a subscriber wants the span (wrapping moves the call's future).
        let outcome = if span.is_disabled() {
            call::run_within(run.provider, &request, limit, &mut meta).await
        } else {
            call::run_within(run.provider, &request, limit, &mut meta).instrument(span.clone()).await
        };
        let (outcome, waited, first, pacing, permit) = meta.finish(outcome);
        let mut cut = false;
        if run.state.spend.is_some() {
            let hold;
            (cut, hold) = settle_spend(run, &outcome);
            if let Some((hold, used)) = hold {
                Box::pin(settle_in_account(run, hold, used)).await;
            }
        }
        if let Some(pacing) = pacing {
            // Boxed: most servers state no limits, and every call's future would hold this one.
            let usage = outcome.as_ref().ok().and_then(|message| message.usage);
            Box::pin(after_paced_call(run, history, *pacing, usage)).await;
        }
        if let Some(waited) = waited {
            // The exec's clock starts at its first call's first wait, if nothing read it before.
            run.state.budget.start_clock_at(waited);
        }
        if let Ok(message) = &outcome {
            let started = limit.and_then(|limit| limit.start()).or(waited);
            telemetry::record_call(&span, run.provider, message, started, first);
            if run.content_in_traces {
                telemetry::record_content(&span, history, message);
            }
            run.state.count_usage(message);
            if !message.is_error() {
                // The provider answered: the call pays for retries (of any exec of this runtime),
                // and its breaker hears the answer now, before any tool turn it asks for.
                let governor = run.state.governor;
                if !governor.deposit() {
                    governor.deposit_shared(permit).await;
                }
                // Returned as it came: not moved out and back in.
                return outcome;
            }
        }
        let message = outcome?;
        if cut {
            return Ok(cut_at_limit(run, message));
        }
        // The failure's time counts from here if the call took none the clock could see.
        run.state.budget.start_clock();
        // Boxed: the failure path's futures (the hint, the sleep, the retry quota) would otherwise
        // make every call's future larger, success path included. The message moves into the box
        // too, so that it is not kept in this future while the backoff sleeps; the decision is an
        // event of the call's span.
        let schedule = schedule.get_or_insert_with(|| Schedule::session(run.state.policy));
        let step = retry_after_failed_call(run, message, permit, schedule, retry).instrument(span);
        if let Some(last) = Box::pin(step).await {
            return Ok(last);
        }
        retry += 1;
    }
}

/// Layer 1's rules after a failed call: records the decision and, when the call is to be made
/// again, sleeps the backoff. Returns the message when it is the layer's last (no call again).
async fn retry_after_failed_call<'a>(
    run: &mut Run<'a>,
    message: AssistantMessage,
    permit: Option<Permit<'a>>,
    schedule: &mut Schedule,
    retry: u32,
) -> Option<AssistantMessage> {
    // The second call of the exec to fail to decode on the same shape: a format this client does
    // not read, said so, and not asked again (docs/design.md §4).
    let unreadable = run.state.unreadable_again(message.error.as_ref());
    let message = if unreadable { unreadable_message(message) } else { message };
    // One scan of the text for the verdict and the hint, kept for layer 2 when this call is the
    // layer's last.
    let scan = Scan::new(message.error_text());
    let mut verdict = session_verdict_of(&scan, message.error.as_ref());
    if unreadable {
        verdict = SessionVerdict { retryable: false, reason: Reason::Unreadable };
    }
    let hint = retry_hint_of(&scan, message.error.as_ref());
    let markers = scan.markers();
    drop(scan);
    let failure = CallFailure {
        error: message.failure_text(),
        usage: message.usage,
        retryable: verdict.retryable,
        rule: Rule::Classifier(verdict.reason),
        hint,
        typed: message.error.as_ref(),
    };
    if session_rules(&mut run.state, run.position.as_ref(), permit, run.provider.name(), failure, schedule, retry).await
    {
        return None;
    }
    run.state.judged = Some(Box::new(Judged { markers, hint, unreadable }));
    Some(message)
}

/// A failed call's message once its shape failed to decode twice: its error says so.
#[cold]
fn unreadable_message(message: AssistantMessage) -> AssistantMessage {
    let Some(error) = message.error.as_ref().map(unreadable_again) else { return message };
    AssistantMessage { error_message: Some(error.to_string()), error: Some(error), ..message }
}

/// A failed call as layer 1 judges it: its `"<Kind>: <text>"`, the tokens it used, whether it is
/// worth calling again, the rule that said so, the server's wait, and the typed error when there is one.
pub(crate) struct CallFailure<'e> {
    pub(crate) error: String,
    pub(crate) usage: Option<Usage>,
    pub(crate) retryable: bool,
    pub(crate) rule: Rule,
    pub(crate) hint: Option<Duration>,
    pub(crate) typed: Option<&'e ModelError>,
}

/// Layer 1's rules after call `retry` (from 0) of a layer failed as `failure` says (docs/design.md
/// §4): the server's wait becomes the scope's cooldown, the breaker hears the outcome through the
/// call's `permit`, and the call is made again after the backoff if it is retryable and
/// retries, budget and breaker allow it. `true` when it is to be made again (the backoff slept);
/// `false` when it was the layer's last (the decision recorded). Shared by the exec's session
/// layer and the tower layer (`crate::tower`), which judge the same failures the same way.
pub(crate) async fn session_rules(
    state: &mut RetryState<'_>,
    position: Option<&Position<'_>>,
    permit: Option<Permit<'_>>,
    provider: &str,
    failure: CallFailure<'_>,
    schedule: &mut Schedule,
    retry: u32,
) -> bool {
    let CallFailure { error, usage, retryable, rule, hint, typed } = failure;
    // Every other call of this runtime to this provider waits for the hint too, when it is one
    // this runtime would honour: a retryable failure's, within `retry_after_cap_ms`. A permanent
    // failure's "try again in 86400s", or a hint past the cap (which ends this exec), would
    // otherwise hold every later call for nothing.
    let honoured = hint.filter(|&hint| retryable && hint <= state.policy.retry_after_cap());
    if let Some(hint) = honoured {
        state.governor.note_hint(hint).await;
        telemetry::cooldown(provider);
    }
    // The target's breaker hears the outcome; with fallbacks, once it is no longer closed, this
    // target is not retried: layer 2 moves the exec on at once, instead of after the backoff.
    if let Some(permit) = permit {
        match breaker_outcome(honoured.is_some(), permit.is_probe(), retryable, &rule, typed) {
            Some(outcome) => permit.record(outcome).await,
            None => drop(permit),
        }
    }
    let mut open = None;
    if let Some(position) = position {
        if let Some(breaker) = position.open_after_failed_call(retryable) {
            open = Some((Verdict::GiveUp, Why::BreakerOpen { target: position.name().to_owned(), state: breaker }));
        }
    }
    let limit = state.policy.session_retries();
    let (last, why) = if let Some(open) = open {
        open
    } else if !retryable {
        (Verdict::GiveUp, Why::Judged(rule))
    } else if retry >= limit {
        (Verdict::RetriesExhausted, Why::TriesUsed { rule, layer: Layer::Session, limit })
    } else {
        let computed = schedule.wait(retry, hint, &mut state.rng);
        match state.permit_retry(computed, hint).and_then(|delay| state.open_past(delay)) {
            Ok(delay) => {
                let retry = state.retry_after(Layer::Session, error.clone(), usage, rule, delay);
                match retry.await {
                    Ok(()) => return true,
                    // A second decision about the same call: the retry was planned, then refused.
                    Err(refusal) => (Verdict::Refused, Why::Refused(refusal)),
                }
            }
            Err(refusal) => (Verdict::Refused, Why::Refused(refusal)),
        }
    };
    state.decide(Layer::Session, error, usage, last, why, None);
    false
}

/// What a failed call tells its target's breaker, `None` for nothing. A server that sent a wait we
/// honour (`honoured`: a retryable failure's Retry-After within the cap) answered: its cooldown
/// holds every call of the scope for that wait, so the window counts it as neither, and a probe
/// that got one is an answer (the target is up and regulating its load; kept half-open, it would
/// refuse every exec, this one's retry included, for an open period the server never asked for).
/// Otherwise a retryable failure, or a permanent one that is the target's own, is a failure; a
/// request's own (a 400) is an answer.
pub(crate) fn breaker_outcome(
    honoured: bool,
    probe: bool,
    retryable: bool,
    rule: &Rule,
    typed: Option<&ModelError>,
) -> Option<CallOutcome> {
    if honoured {
        return probe.then_some(CallOutcome::Answered);
    }
    let failed = retryable || is_target_permanent(rule, typed);
    Some(if failed { CallOutcome::Failed } else { CallOutcome::Answered })
}

/// Before a call of a scope the pacer knows limits of: reserves what it needs of them and waits
/// for it (`Verdict::Paced`), or why it may not (the wait does not fit before the deadline). The
/// reservation, if one was made (none past `retry_after_cap_ms`: the call goes unpaced).
async fn pace_call(run: &mut Run<'_>, history: &[Message]) -> Result<Option<Reservation>, Refusal> {
    let Some(demand) = estimate(run, history) else { return Ok(None) };
    run.state.wait_for_pace(&demand, run.provider.name()).await
}

/// What the call of `history` would need of the provider's limits; `None` when pacing is off (the
/// history is not read then).
fn estimate(run: &Run<'_>, history: &[Message]) -> Option<Demand> {
    let input = || pace::input_tokens(run.system, history, &run.tools);
    run.state.governor.estimate(input, run.provider.max_output_tokens())
}

/// After a call that was paced or whose response stated rate limits: the governor learns the
/// limits and settles what the call reserved with its `usage`. A call sent before the limits were
/// known calibrates the estimates all the same: the burst that follows the first answer is
/// estimated from it.
async fn after_paced_call(run: &Run<'_>, history: &[Message], pacing: CallPacing, usage: Option<Usage>) {
    let CallPacing { paced, stated } = pacing;
    let governor = run.state.governor;
    let call = match paced {
        Some(reservation) => Some(Paced::Reserved(reservation)),
        None => estimate(run, history).map(Paced::Unpaced),
    };
    governor.after_call(stated.as_ref(), call.as_ref(), usage.as_ref()).await;
}

/// The input estimate of the call of `history` and the most output tokens the exec's spend limits
/// leave it, or the refusal when its worst case cannot fit.
#[cold]
fn reserve_spend(run: &mut Run<'_>, history: &[Message]) -> Result<(u64, Option<u64>), Refusal> {
    let input = pace::input_tokens(run.system, history, &run.tools);
    loop {
        let target = crate::retry::fallback::target_name(run.provider);
        let ledger = run.state.spend.as_deref_mut().expect("reserve_spend needs a ledger");
        let refusal = match ledger.reserve(input, &target) {
            Err(refusal @ Refusal::UsageLimit { limit: Limit::MaxCostUsd, .. }) => refusal,
            reserved => return reserved.map(|left| (input, left)),
        };
        // Too dear here: a next target whose price the call fits takes it (docs/design.md §23).
        let next = run.position.as_ref().and_then(Position::next_provider);
        if !next.is_some_and(|next| ledger.fits(input, &crate::retry::fallback::target_name(next))) {
            return Err(refusal);
        }
        let position = run.position.as_mut().expect("a next target has a position");
        run.provider = position.move_cheaper(&mut run.state, refusal);
    }
}

/// [`reserve_spend`], then the call's worst case in the runtime's spend account: the fleet's
/// when the shared store keeps accounts and answers, else this process's. The most output tokens
/// the call may ask for, or the refusal when either cannot fit (nothing held then).
#[cold]
async fn reserve_in_account(run: &mut Run<'_>, history: &[Message]) -> Result<Option<u64>, Refusal> {
    let (input, left) = reserve_spend(run, history)?;
    let governor = run.state.governor;
    let account = governor.account().expect("reserve_in_account needs an account");
    let target = crate::retry::fallback::target_name(run.provider);
    let ledger = run.state.spend.as_deref_mut().expect("reserve_in_account needs a ledger");
    let settings = &account.settings;
    let (needed, output, price) =
        ledger.account_need(settings, input, left, run.provider.max_output_tokens(), &target)?;
    let (held, fleet) = match governor.account_reserve(settings, needed).await {
        Some(answer) => (answer, true),
        None => (account.reserve_local(needed), false),
    };
    let held = held.map_err(|refused| account_refusal(settings, refused))?;
    if let Some(ledger) = run.state.spend.as_deref_mut() {
        ledger.hold(held, fleet, price);
    }
    Ok(Some(output))
}

/// The call's worst case reserved against the exec's limits and, when the runtime has one, its
/// spend account: the most output tokens the call may ask for, or the refusal. Boxed: out of the
/// future of every call, which an exec without limits never needs.
fn reserve_for_call<'r, 'a>(
    run: &'r mut Run<'a>,
    history: &'r [Message],
) -> Pin<Box<dyn Future<Output = Result<Option<u64>, Refusal>> + Send + 'r>> {
    Box::pin(async move {
        match run.state.governor.account() {
            None => reserve_spend(run, history).map(|(_, left)| left),
            Some(_) => reserve_in_account(run, history).await,
        }
    })
}

/// Gives back the call's reservation in the runtime's spend account, if it made one (the exec
/// moved to another target before the call was sent).
#[cold]
async fn release_hold(run: &mut Run<'_>) {
    let hold = run.state.spend.as_deref_mut().and_then(|ledger| ledger.take_hold(Some(&Usage::ZERO)));
    if let Some((hold, nothing)) = hold {
        settle_in_account(run, hold, nothing).await;
    }
}

/// Layer 1 when a spend limit refuses the call: no call is made; the refusal stops the exec (kind
/// `usage_limit`).
#[cold]
fn spend_refused(run: &mut Run<'_>, refusal: Refusal) -> AssistantMessage {
    let refusal = run.state.budget.refuse(refusal);
    no_call(run, "UsageLimit", refusal)
}

/// After a call of an exec with spend limits: the call settles what it reserved (a programming
/// error, which ends the exec at once, settles nothing of the exec's). Whether the call was cut for
/// passing what it was allowed (`Answer::spend_cap`); its reservation in the runtime's account, if
/// it made one, and what to settle it to (a failed call's input estimate).
#[cold]
fn settle_spend(
    run: &mut Run<'_>,
    outcome: &Result<AssistantMessage, ModelError>,
) -> (bool, Option<(AccountHold, Amounts)>) {
    let Some(ledger) = run.state.spend.as_deref_mut() else { return (false, None) };
    let mut cut = false;
    let usage = match outcome {
        Ok(message) => {
            cut = message.error.as_ref().is_some_and(|error| error.kind() == call::USAGE_LIMIT_ERROR);
            Some(ledger.settle(message.usage.as_ref(), Some(message), cut))
        }
        Err(_) => None,
    };
    let hold = ledger.take_hold(usage.as_ref());
    if usage.is_some() {
        run.state.note_spent();
    }
    (cut, hold)
}

/// Settles a call's reservation in the runtime's account where it was made.
#[cold]
async fn settle_in_account(run: &Run<'_>, hold: AccountHold, used: Amounts) {
    let governor = run.state.governor;
    let Some(account) = governor.account() else { return };
    if hold.fleet {
        governor.account_settle(&account.settings, hold.held, used).await;
    } else {
        account.settle_local(hold.held, used);
    }
}

/// Layer 1 after a call cut for passing the output the exec's spend limits left it: not retried
/// (the same call would pass it again); the refusal stops the exec (kind `usage_limit`).
#[cold]
fn cut_at_limit(run: &mut Run<'_>, message: AssistantMessage) -> AssistantMessage {
    let refusal = run.state.spend.as_deref().expect("a cut needs a ledger").passed();
    let refusal = run.state.budget.refuse(refusal);
    let error = message.failure_text();
    run.state.decide(Layer::Session, error, message.usage, Verdict::Refused, Why::Refused(refusal), None);
    message
}

/// Layer 1 when the wait for the provider's rate limit (`kind` `"RateLimit"`) or its cooldown
/// (`"Cooldown"`) may not be made: no call is made; the refusal stops the exec (kind `refused`),
/// handed to layer 2 as a failure that names it.
#[cold]
fn no_call(run: &mut Run<'_>, kind: &str, refusal: Refusal) -> AssistantMessage {
    let error = format!("{kind}: no call was made: {refusal}");
    run.state.decide(Layer::Session, error.clone(), None, Verdict::Refused, Why::Refused(refusal), None);
    AssistantMessage::error_event(error, None)
}

/// Layer 1 when a durable run's call was lost with its process and a cap forbids making it again:
/// no call is made; the refusal stops the exec (kind `refused`).
#[cold]
pub(crate) fn lost_call_refused(run: &mut Run<'_>, refusal: Refusal) -> AssistantMessage {
    let error = format!("CallLost: the last call was lost with its process, and no call was made again: {refusal}");
    stopped_by(run, error, refusal)
}

/// Layer 1 when every target's breaker refuses the call: no call is made; the refusal stops the
/// exec (kind `refused`), handed to layer 2 as a failure that names it.
#[cold]
fn every_target_open(run: &mut Run<'_>, refusal: Refusal) -> AssistantMessage {
    // The refusal heads the exec's error; the attempt says only what happened.
    let error = "CircuitOpen: no call was made: every target's circuit breaker refused it".to_owned();
    stopped_by(run, error, refusal)
}

/// The failed attempt `error` of a layer 1 that made no call, `refusal` stopping the exec.
fn stopped_by(run: &mut Run<'_>, error: String, refusal: Refusal) -> AssistantMessage {
    let refusal = run.state.budget.refuse(refusal);
    run.state.decide(Layer::Session, error.clone(), None, Verdict::Refused, Why::Refused(refusal), None);
    AssistantMessage::error_event(error, None)
}
