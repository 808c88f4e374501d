//! One attempt of a resilient call (or one call of the tower layer, `crate::tower`), cut at its time
//! limit, polled by hand: an attempt that finishes on its first poll costs that poll and nothing else.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use pin_project_lite::pin_project;
use tokio::time::{Instant, Sleep};

use crate::policy::RetryPolicy;
use crate::retry::budget;

/// How one attempt ended.
pub(crate) enum Outcome<T, E> {
    /// The operation returned.
    Finished(Result<T, E>),
    /// The attempt's time limit (this long) ran out first.
    TimedOut(Duration),
}

/// An attempt's time limit.
#[derive(Clone, Copy)]
pub(crate) enum Limit {
    /// The policy's default limit (`timeout_ms` cut to `turn_timeout_ms`), counted from the
    /// attempt's first `Pending`: computed, and the clock read, only then.
    Default,
    /// [`Limit::Default`] once computed: the attempt was first pending at `start`.
    DefaultFrom { start: Instant, limit: Duration },
    /// Known before the attempt: it runs out at `at`, `limit` after the attempt began.
    At { at: Instant, limit: Duration },
    /// Past what the clock can represent: no timer, as in `tokio::time::timeout`.
    Unbounded,
}

impl Limit {
    /// When the attempt's limit began to count, if the clock was read for it.
    pub(crate) fn start(&self) -> Option<Instant> {
        match *self {
            Limit::DefaultFrom { start, .. } => Some(start),
            // `at` is `limit` after the reading it was computed from.
            Limit::At { at, limit } => at.checked_sub(limit),
            Limit::Default | Limit::Unbounded => None,
        }
    }
}

/// Where an attempt's timer lives, set when the attempt first waits.
pub(super) trait Timer {
    /// Whether the timer was set.
    fn is_set(&self) -> bool;
    /// Sets the timer to go off at `at`.
    fn set_at(self: Pin<&mut Self>, at: Instant);
    /// Polls the timer; `Pending` while it is not set.
    fn poll_timer(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()>;
}

impl Timer for Option<Sleep> {
    fn is_set(&self) -> bool {
        self.is_some()
    }

    fn set_at(mut self: Pin<&mut Self>, at: Instant) {
        self.set(Some(tokio::time::sleep_until(at)));
    }

    fn poll_timer(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.as_pin_mut().map_or(Poll::Pending, |sleep| sleep.poll(cx))
    }
}

/// Polls `attempt` within `limit` (with `policy`'s default limit for [`Limit::Default`]). The timer
/// is set only if the attempt does not finish on its first poll: an attempt that finishes at once
/// reads no clock (unless its limit was known before, which took a reading) and never touches the
/// timer wheel.
#[inline]
pub(super) fn poll_within<T, E>(
    attempt: Pin<&mut impl Future<Output = Result<T, E>>>,
    timer: Pin<&mut impl Timer>,
    limit: &mut Limit,
    policy: &RetryPolicy,
    cx: &mut Context<'_>,
) -> Poll<Outcome<T, E>> {
    if let Poll::Ready(result) = attempt.poll(cx) {
        return Poll::Ready(Outcome::Finished(result));
    }
    wait(timer, limit, policy, cx)
}

/// The attempt is pending: sets its timer the first time, then polls it.
#[inline(never)]
fn wait<T, E>(
    mut timer: Pin<&mut impl Timer>,
    limit: &mut Limit,
    policy: &RetryPolicy,
    cx: &mut Context<'_>,
) -> Poll<Outcome<T, E>> {
    let at = match *limit {
        Limit::At { at, .. } if !timer.is_set() => Some(at),
        Limit::Default => {
            let start = Instant::now();
            let default = budget::first_call_limit(policy);
            *limit = Limit::DefaultFrom { start, limit: default };
            start.checked_add(default)
        }
        _ => None,
    };
    if let Some(at) = at {
        timer.as_mut().set_at(at);
    }
    match timer.poll_timer(cx) {
        Poll::Ready(()) => {
            let cut = match *limit {
                Limit::At { limit, .. } | Limit::DefaultFrom { limit, .. } => limit,
                Limit::Default | Limit::Unbounded => Duration::ZERO,
            };
            Poll::Ready(Outcome::TimedOut(cut))
        }
        Poll::Pending => Poll::Pending,
    }
}

pin_project! {
    /// An attempt after the first, within a limit the budget computed (its own timer).
    pub(crate) struct Attempt<'p, Fut> {
        #[pin]
        attempt: Fut,
        #[pin]
        timer: Option<Sleep>,
        limit: Limit,
        policy: &'p RetryPolicy,
    }
}

impl<'p, Fut> Attempt<'p, Fut> {
    /// `attempt` within `limit`.
    pub(crate) fn new(attempt: Fut, limit: Limit, policy: &'p RetryPolicy) -> Self {
        Self { attempt, timer: None, limit, policy }
    }

    /// The attempt's limit as it stands: a default one, once the attempt waited, counts from then.
    #[cfg(feature = "tower")]
    pub(crate) fn limit(&self) -> Limit {
        self.limit
    }
}

impl<T, E, Fut: Future<Output = Result<T, E>>> Future for Attempt<'_, Fut> {
    type Output = Outcome<T, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        poll_within(this.attempt, this.timer, this.limit, this.policy, cx)
    }
}
