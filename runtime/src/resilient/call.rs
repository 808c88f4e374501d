//! The future of [`Resilient::call`], written by hand: its first poll starts the first attempt in
//! place and polls it, and an attempt that succeeds then is returned from that poll. Nothing else
//! is built until then: the policy was judged when it was built, and only a failure makes the rest
//! (the retry loop, boxed).

use std::pin::Pin;
use std::task::{Context, Poll, ready};

use pin_project_lite::pin_project;
use tokio::time::{Instant, Sleep};

use super::attempt::{Limit, Outcome, Timer, poll_within};
use super::{Classify, Failure, Resilient, Validator};
use crate::policy::RetryPolicy;
use crate::retry::budget;
use crate::retry::{Failed, validate_call_policy};

pin_project! {
    /// A resilient call: the first attempt in place, then the retry loop that `retry` makes of the
    /// operation and the first failure.
    pub(super) struct Call<'r, 'p, T, V, F, Fut, M, R> {
        resilient: &'r Resilient<'p, T, V>,
        // Taken by the retry loop.
        operation: Option<F>,
        retry: M,
        // The first attempt: none before the first poll.
        #[pin]
        attempt: Option<Fut>,
        limit: Limit,
        // The first attempt's timer, then the retry loop: one field. The compiler drops it (an
        // out-of-line call even for `Nothing`, 14 instructions of a call that succeeds at once);
        // dropping it by hand would save them only with `unsafe`, which this crate does not use.
        #[pin]
        rest: Rest<R>,
    }
}

pin_project! {
    #[project = RestProj]
    enum Rest<R> {
        Nothing,
        Timer { #[pin] sleep: Sleep },
        Retrying { retry: Pin<Box<R>> },
    }
}

impl<R> Timer for Rest<R> {
    fn is_set(&self) -> bool {
        matches!(self, Rest::Timer { .. })
    }

    fn set_at(mut self: Pin<&mut Self>, at: Instant) {
        self.set(Rest::Timer { sleep: tokio::time::sleep_until(at) });
    }

    fn poll_timer(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        match self.project() {
            RestProj::Timer { sleep } => sleep.poll(cx),
            _ => Poll::Pending,
        }
    }
}

impl<'r, 'p, T, V, F, Fut, M, R> Call<'r, 'p, T, V, F, Fut, M, R> {
    #[inline]
    pub(super) fn new(resilient: &'r Resilient<'p, T, V>, operation: F, retry: M) -> Self {
        Self { resilient, operation: Some(operation), retry, attempt: None, limit: Limit::Default, rest: Rest::Nothing }
    }
}

impl<'r, 'p, T, V, E, F, Fut, M, R> Future for Call<'r, 'p, T, V, F, Fut, M, R>
where
    V: Validator<T>,
    E: Classify + std::fmt::Display,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
    M: Fn(&'r Resilient<'p, T, V>, F, (Failed, Option<E>), Instant) -> R,
    R: Future<Output = Result<T, Failure<E>>>,
{
    type Output = Result<T, Failure<E>>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        let resilient = *this.resilient;
        if let RestProj::Retrying { retry } = this.rest.as_mut().project() {
            return poll_retrying(retry.as_mut(), cx);
        }
        if this.attempt.is_none() {
            // Judged when the policy was built: a valid policy with the default time bounds needs
            // nothing more before its first attempt, whose limit is the default, set lazily.
            if !resilient.policy.is_lazy_for_calls() {
                match checked_limit(resilient) {
                    Ok(limit) => *this.limit = limit,
                    Err(failure) => return Poll::Ready(Err(failure)),
                }
            }
            let Some(operation) = this.operation.as_mut() else { return Poll::Pending };
            this.attempt.set(Some(operation()));
        }
        let Some(attempt) = this.attempt.as_pin_mut() else { return Poll::Pending };
        match ready!(poll_within(attempt, this.rest.as_mut(), this.limit, resilient.policy, cx)) {
            // The success path, without a validator: nothing to judge.
            Outcome::Finished(Ok(value)) if !V::CHECKS => Poll::Ready(Ok(value)),
            outcome => {
                let retry = match resilient.judge(outcome) {
                    Ok(value) => return Poll::Ready(Ok(value)),
                    Err(first) => start_retrying(resilient, this.operation, this.retry, *this.limit, first),
                };
                let Some(retry) = retry else { return Poll::Pending };
                let mut rest = this.rest;
                rest.set(Rest::Retrying { retry });
                match rest.project() {
                    RestProj::Retrying { retry } => poll_retrying(retry.as_mut(), cx),
                    _ => Poll::Pending,
                }
            }
        }
    }
}

/// The first attempt's limit under a policy that is not valid for a call with the default bounds:
/// the policy's error, or [`first_limit`]. Out of line: the default policy's calls never come here.
#[inline(never)]
fn checked_limit<T, V: Validator<T>, E>(resilient: &Resilient<'_, T, V>) -> Result<Limit, Failure<E>> {
    match validate_call_policy(resilient.policy) {
        Ok(()) => Ok(first_limit(resilient.policy)),
        Err(error) => Err(resilient.invalid_policy(&error)),
    }
}

/// The retry loop after a failed first attempt (whose limit was `limit`), made of the operation
/// (`None` only if it was taken already).
#[cold]
#[inline(never)]
fn start_retrying<'r, 'p, T, V: Validator<T>, E, F, M, R>(
    resilient: &'r Resilient<'p, T, V>,
    operation: &mut Option<F>,
    retry: &M,
    limit: Limit,
    first: (Failed, Option<E>),
) -> Option<Pin<Box<R>>>
where
    M: Fn(&'r Resilient<'p, T, V>, F, (Failed, Option<E>), Instant) -> R,
{
    let operation = operation.take()?;
    // An attempt that failed on its first poll took no time the clock could see.
    let start = limit.start().unwrap_or_else(Instant::now);
    // Boxed: the retry loop's state and futures would otherwise make every call's future larger,
    // success path included.
    Some(Box::pin(retry(resilient, operation, first, start)))
}

/// The first attempt's limit when the policy sets it itself (`timeout_ms`, `budget_ms` or
/// `turn_timeout_ms`), from one reading of the clock (which is the call's start). With only the
/// defaults, or past what the clock can represent, the default, set lazily on the attempt's first
/// `Pending`.
fn first_limit(policy: &RetryPolicy) -> Limit {
    let values = policy.values();
    if values.timeout_ms.is_none() && values.budget_ms.is_none() && values.turn_timeout_ms.is_none() {
        return Limit::Default;
    }
    let limit = budget::first_call_limit(policy);
    match Instant::now().checked_add(limit) {
        Some(at) => Limit::At { at, limit },
        None => Limit::Default,
    }
}

/// Polls the retry loop, out of line: inlined, its state machine would take the registers and
/// the stack of every call's first poll, success path included.
#[inline(never)]
fn poll_retrying<R: Future>(retry: Pin<&mut R>, cx: &mut Context<'_>) -> Poll<R::Output> {
    retry.poll(cx)
}
