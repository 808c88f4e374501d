//! One request through the layer: the calls and attempts of both retry layers, with the exec's
//! rules (docs/design.md §4, §5) over the failures our providers would see in the same responses.
//!
//! Layer 1 makes a call again while the failure is transient and `session_retries` allow; layer 2
//! judges the layer's last failure and makes another attempt (`max_retries` in all), stops for good,
//! or returns a programming error at once. A response with an error status is read (bounded) into
//! the `ModelError` our HTTP providers make of it (`provider::response_error`), so both layers
//! judge it exactly as they judge an exec's call; a service error is judged by its [`Classify`].
//! Around every call: the scope's breaker and cooldown, one deadline and the call's own limit.

use std::borrow::Cow;
use std::fmt;
use std::future::Future;

use bytes::Bytes;
use tokio::time::Instant;

use super::bounded::BodyBounds;
use super::response::{ErrorBody, HttpResponse};
use super::{Layered, Replay};
use crate::answer::exec_error::ExecErrorKind;
use crate::classify::{ExecAction, Scan, retry_hint_of, session_verdict_of};
use crate::decision::{Layer, Rule, Verdict, Why};
use crate::error::{ModelError, TransportKind};
use crate::message::AssistantMessage;
use crate::policy::backoff::Schedule;
use crate::provider::{CallBounds, MAX_ERROR_BODY, Secret, redact, response_error_redacted};
use crate::resilient::attempt::{Attempt, Limit, Outcome};
use crate::resilient::redact as redacted;
use crate::resilient::{Classify, Failure, GaveUp};
use crate::retry::budget::{Budget, CallLimit};
use crate::retry::session::{CallFailure, breaker_outcome, session_rules};
use crate::retry::{Failed, Judged, Next, RetryState};
use crate::storm::Refusal;

/// Sends one attempt's request: a tower service (readiness, then the call), or the rest of a
/// reqwest-middleware chain.
pub(crate) trait Exchange<R: Send> {
    /// What the service answers.
    type Response: HttpResponse + Send;
    /// How it fails.
    type Error: Classify + fmt::Display + Send;

    /// Sends `request`.
    fn send(&mut self, request: R) -> impl Future<Output = Result<Self::Response, Self::Error>> + Send;

    /// The mark an inner retry layer left, beside the error of the call just sent, when it gave up
    /// on that call (taken: the next call starts without it). A tower service's error carries its
    /// own ([`Failure`]'s source); a middleware chain's error is the client's, so the mark travels
    /// in the request's extensions.
    fn gave_up(&mut self) -> Option<GaveUp> {
        None
    }
}

/// What a failed call leaves to hand back when it is the last: the server's response with what
/// was read of its body (the caller reads its error as it would without the layer), the service's
/// error, or nothing (the call was cut at its limit).
enum Last<Res, E> {
    Response(Res, ErrorBody),
    Error(E),
    Nothing,
}

/// How a request through the layers ended.
pub(crate) enum Ended<Res, E> {
    /// A status below 400: the response, its body bounded in time ([`BodyBounds`]).
    Answered(Res),
    /// The layers gave up on an error response: the response, marked ([`GaveUp`]), whose whole body
    /// is `body`, what the layer read of it (at most 16 KiB) without the key; and the failure, with
    /// the decisions and no last error (the response is the server's answer).
    // The body and the failure are async-openai's service's (it hands back an error made of
    // them); a tower service and a middleware hand back the response.
    #[cfg_attr(not(feature = "async-openai"), allow(dead_code))]
    GaveUpOn { response: Res, body: Bytes, failure: Failure<E> },
    /// The layers gave up with no response to hand back: the failure, with the service's last
    /// error when there was one (without the key).
    Failed(Failure<E>),
}

impl<Res, E> Ended<Res, E> {
    /// As a tower service or a middleware hands it back: the response, or the failure.
    pub(crate) fn into_result(self) -> Result<Res, Failure<E>> {
        match self {
            Ended::Answered(response) | Ended::GaveUpOn { response, .. } => Ok(response),
            Ended::Failed(failure) => Err(failure),
        }
    }
}

/// A failed call, as both layers judge it.
enum Judging {
    /// A `ModelError` (a response's, or a call cut at its limit), as the exec's layers judge the
    /// same error from our providers: layer 1 by its message, layer 2 by what layer 1 found in it.
    Model { message: AssistantMessage, retryable: bool, rule: Rule, judged: Box<Judged> },
    /// A service error: both layers go by its [`Classify`].
    Service(Failed),
}

impl Judging {
    /// A call that failed with `error`.
    fn model(error: ModelError) -> Self {
        let message = AssistantMessage::from_error(error);
        let scan = Scan::new(message.error_text());
        let verdict = session_verdict_of(&scan, message.error.as_ref());
        let hint = retry_hint_of(&scan, message.error.as_ref());
        let judged = Box::new(Judged { markers: scan.markers(), hint, unreadable: false });
        drop(scan);
        Self::Model { message, retryable: verdict.retryable, rule: Rule::Classifier(verdict.reason), judged }
    }

    /// A call whose service failed with `error` (its text without any piece of `secret`: a URL
    /// in it may carry the key).
    fn service<E: Classify + fmt::Display>(error: &E, secret: Option<&Secret>) -> Self {
        let class = error.classify();
        let text = redact(&error.to_string(), secret);
        Self::Service(Failed::new(text, class.action, class.reason).with_hint(class.retry_after))
    }

    /// A call an inner retry layer gave up on (`mark`), whose failure reads `text`: judged by the
    /// mark, so that this layer does not multiply the inner one's calls.
    fn gave_up(text: String, mark: GaveUp) -> Self {
        let class = mark.classification();
        Self::Service(Failed::new(text, class.action, class.reason))
    }

    /// The failure's `"<Kind>: <text>"`.
    fn error(&self) -> String {
        match self {
            Self::Model { message, .. } => message.failure_text(),
            Self::Service(failed) => failed.error.clone(),
        }
    }

    /// Layer 1's view.
    fn session(&self) -> CallFailure<'_> {
        match self {
            Self::Model { message, retryable, rule, judged } => CallFailure {
                error: message.failure_text(),
                usage: None,
                retryable: *retryable,
                rule: rule.clone(),
                hint: judged.hint,
                typed: message.error.as_ref(),
            },
            Self::Service(failed) => CallFailure {
                error: failed.error.clone(),
                usage: None,
                retryable: failed.action == ExecAction::Retry,
                rule: failed.rule.clone(),
                hint: failed.hint,
                typed: None,
            },
        }
    }

    /// Layer 2's view, of layer 1's last failure.
    fn attempt(self) -> Failed {
        match self {
            Self::Model { message, judged, .. } => Failed::of_message(message, Some(judged)).0,
            Self::Service(failed) => failed,
        }
    }
}

/// `request` through both layers under `layered`'s policy, sent by `exchange`: the first success,
/// its body bounded; or, once the layers give up, the last failure's response (its body what was
/// read of it) or the failure, with the service's error when there is one.
pub(crate) async fn run<R, X>(layered: &Layered, request: R, exchange: &mut X) -> Ended<X::Response, X::Error>
where
    R: Replay + Send,
    X: Exchange<R>,
{
    let policy = &layered.policy;
    let governor = &*layered.governor;
    let rng = layered.rng();
    let mut state = RetryState {
        function: layered.name,
        observer: layered.observer.as_deref(),
        ..RetryState::new(policy, Budget::new(policy), rng, governor)
    };
    let idle = CallBounds::of(policy).idle;
    let mut exec_schedule = Schedule::exec(policy);
    let mut session_schedule = None;
    let mut next = Some(request);
    let mut index = 0u32;
    loop {
        state.attempt = index + 1;
        let mut retry = 0u32;
        let (attempt, last, secret) = loop {
            // The scope's storm control before every call, as an exec's session layer does.
            // The breaker's admission: the call's outcome is owed to it (dropped unrecorded, it
            // gives back a probe).
            let mut permit = None;
            if governor.may_cool_down() {
                match governor.admit().await {
                    Ok(admitted) => permit = Some(admitted),
                    Err(breaker) => {
                        let target = governor.breaker_target().unwrap_or_default().to_owned();
                        let refusal = state.budget.refuse(Refusal::CircuitOpen { target, state: breaker });
                        return Ended::Failed(layered.failure(state, ExecErrorKind::Refused, None, Some(refusal)));
                    }
                }
                if let Err(refusal) = state.wait_for_cooldown().await {
                    return Ended::Failed(layered.failure(state, ExecErrorKind::Refused, None, Some(refusal)));
                }
            }
            let Some(request) = next.take() else { unreachable!("a call is made only with a request to send") };
            next = request.replay();
            // The key to keep out of the failure's texts is read after a failure, from the copy
            // for the next call; a request sent once has its key read now, before it goes.
            let sent_once_with = if next.is_none() { request.api_key().map(str::to_owned) } else { None };
            state.budget.start_call();
            let call_limit = state.budget.call_limit();
            // The limit, and the deadline, count from the call's first wait, as an exec's do: a
            // call answered on its first poll reads no clock and sets no timer.
            let mut limit = match call_limit {
                Some(CallLimit { at: Some(at), limit, .. }) => Limit::At { at, limit },
                Some(_) => Limit::Default,
                None => Limit::Unbounded,
            };
            let outcome = {
                let mut attempt = std::pin::pin!(Attempt::new(exchange.send(request), limit, policy));
                std::future::poll_fn(|cx| {
                    let polled = attempt.as_mut().poll(cx);
                    if polled.is_ready() {
                        limit = attempt.limit();
                    }
                    polled
                })
                .await
            };
            let inner_gave_up = exchange.gave_up();
            if let Some(waited) = limit.start() {
                state.budget.start_clock_at(waited);
            }
            let at = match limit {
                Limit::At { at, .. } => Some(at),
                Limit::DefaultFrom { start, limit } => start.checked_add(limit),
                Limit::Default | Limit::Unbounded => None,
            };
            let outcome = match outcome {
                Outcome::Finished(result) => Some(result),
                Outcome::TimedOut(_) => None,
            };
            let failed = match outcome {
                Some(Ok(response)) if response.status() < 400 => {
                    // The success pays for retries (of any call of this scope).
                    if !governor.deposit() {
                        governor.deposit_shared(permit).await;
                    }
                    // The request's deadline bounds the body the caller reads too.
                    return Ended::Answered(response.bounded(BodyBounds::new(policy, state.budget.deadline())));
                }
                failed => failed,
            };
            // The key to keep out of the failure's texts: the layer's, else the request's.
            let secret = layered.secret.clone().or_else(|| {
                let key = next.as_ref().and_then(Replay::api_key).map(str::to_owned).or(sent_once_with);
                Secret::new(key)
            });
            let secret = secret.as_ref();
            let (judging, last) = match failed {
                Some(Ok(response)) => {
                    // The error body comes at once or not at all: read within the idle bound and
                    // before the call's limit, so that the status and the hints are not lost to it.
                    let now = Instant::now();
                    let deadline = at.map_or(now + idle, |at| at.min(now + idle));
                    let (response, body) = response.read_error_body(MAX_ERROR_BODY, deadline).await;
                    let (status, headers) = (response.status(), response.headers());
                    let error = response_error_redacted(status, headers, body.bytes(), body.end(), secret);
                    let judging = match response.gave_up() {
                        Some(mark) => Judging::gave_up(AssistantMessage::from_error(error).failure_text(), mark),
                        None => Judging::model(error),
                    };
                    (judging, Last::Response(response, body))
                }
                Some(Err(error)) => match inner_gave_up {
                    Some(mark) => (Judging::gave_up(redact(&error.to_string(), secret), mark), Last::Error(error)),
                    None => (Judging::service(&error, secret), Last::Error(error)),
                },
                None => {
                    let text = call_limit.map(|limit| limit.timed_out()).unwrap_or_default();
                    (Judging::model(ModelError::transport(TransportKind::Timeout, text)), Last::Nothing)
                }
            };
            if next.is_none() {
                // The request cannot be sent again: this call was the only one. Its breaker hears
                // its outcome all the same (a probe's, unheard, held the target half-open).
                if let Some(permit) = permit {
                    let CallFailure { retryable, rule, typed, .. } = judging.session();
                    if let Some(outcome) = breaker_outcome(false, permit.is_probe(), retryable, &rule, typed) {
                        permit.record(outcome).await;
                    }
                }
                let why = Why::Judged(Rule::Custom("the request's body is a stream: it cannot be sent again".into()));
                state.decide(Layer::Session, judging.error(), None, Verdict::GiveUp, why, None);
                return layered.give_back(state, ExecErrorKind::Exhausted, last, None, secret);
            }
            let schedule = session_schedule.get_or_insert_with(|| Schedule::session(policy));
            if session_rules(&mut state, None, permit, layered.scope(), judging.session(), schedule, retry).await {
                retry += 1;
                continue;
            }
            break (judging.attempt(), last, secret.cloned());
        };
        match state.after_failed_attempt(&mut exec_schedule, index, attempt).await {
            Next::Retry => {}
            Next::Stop(kind, refusal) => return layered.give_back(state, kind, last, refusal, secret.as_ref()),
        }
        index += 1;
    }
}

impl Layered {
    /// The end of a request the layers gave up on: the last response, with what was read of its
    /// body and the key out of it, or the failure with the decisions (and the service's last
    /// error, without the key, when there is one).
    fn give_back<Res: HttpResponse, E: Classify>(
        &self,
        state: RetryState<'_>,
        kind: ExecErrorKind,
        last: Last<Res, E>,
        refusal: Option<Refusal>,
        secret: Option<&Secret>,
    ) -> Ended<Res, E> {
        match last {
            Last::Response(mut response, read) => {
                let mut body = Bytes::copy_from_slice(read.bytes());
                if let Some(secret) = secret {
                    if let Cow::Owned(shown) = secret.redact(&String::from_utf8_lossy(read.bytes())) {
                        body = Bytes::from(shown);
                        response = response.with_body(body.clone());
                    }
                    redacted::headers(response.headers_mut(), &|text| secret.redact(text));
                }
                // A layer around this one finds the mark and does not call again.
                response.mark_gave_up(GaveUp::new(kind));
                let failure = self.failure(state, kind, None, refusal);
                Ended::GaveUpOn { response, body, failure }
            }
            Last::Error(error) => {
                let error = match secret {
                    Some(secret) => error.redact(&|text| secret.redact(text)),
                    None => error,
                };
                Ended::Failed(self.failure(state, kind, Some(error), refusal))
            }
            Last::Nothing => Ended::Failed(self.failure(state, kind, None, refusal)),
        }
    }

    /// The failure of a request, with its decisions.
    fn failure<E>(
        &self,
        state: RetryState<'_>,
        kind: ExecErrorKind,
        last_error: Option<E>,
        refusal: Option<Refusal>,
    ) -> Failure<E> {
        Failure::of_layer(
            kind,
            self.name.unwrap_or("request"),
            state.decisions,
            (last_error, state.budget.calls()),
            state.budget.elapsed(),
            refusal,
        )
    }
}
