//! The body of a success the layer hands back, bounded in time (docs/design.md §16, "Adapters"):
//! its first bytes within `first_token_timeout_ms`, no gap longer than `idle_timeout_ms`, and its
//! end by the request's deadline. A body past a bound ends with an error that says which; one
//! within them streams as the server sent it.

use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::{Buf, Bytes};
use http_body::{Body, Frame, SizeHint};
use tokio::time::{Instant, Sleep};

use crate::error::{ModelError, TransportKind};
use crate::policy::RetryPolicy;
use crate::policy::rules::{format_ms, millis};
use crate::storm::Bound;

/// The time bounds of a success's body, from the policy and the request's deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyBounds {
    first: Duration,
    idle: Duration,
    deadline: Option<(Instant, Bound, u64)>,
}

impl BodyBounds {
    /// `policy`'s bounds (`first_token_timeout_ms`, `idle_timeout_ms`) within `deadline`: when it
    /// falls, the bound that sets it and that bound's setting in milliseconds.
    pub(crate) fn new(policy: &RetryPolicy, deadline: Option<(Instant, Bound, u64)>) -> Self {
        Self { first: policy.first_token_timeout(), idle: policy.idle_timeout(), deadline }
    }

    /// The longest wait for the body's first bytes, counted from when the response is handed back
    /// (`first_token_timeout_ms`).
    pub fn first(&self) -> Duration {
        self.first
    }

    /// The longest wait between one frame of the body and the next (`idle_timeout_ms`).
    pub fn idle(&self) -> Duration {
        self.idle
    }

    /// When the request's deadline falls (`budget_ms`, else `turn_timeout_ms`, from the request's
    /// start): the body has ended by then.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline.map(|(at, ..)| at)
    }

    /// `body`, bounded by these bounds.
    pub fn around<B>(self, body: B) -> Bounded<B> {
        Bounded { body, bounds: self, timer: None, next: Next::First, over: false }
    }
}

/// The wait the timer stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    /// The body's first bytes.
    First,
    /// The next frame.
    Frame,
    /// The request's deadline, nearer than the next frame's bound.
    Deadline,
}

pin_project_lite::pin_project! {
    /// A body bounded in time ([`BodyBounds`]): its frames as they come, or an error once a bound
    /// passes (`ModelError`, a timeout, which says which bound and its setting), and then its end.
    pub struct Bounded<B> {
        #[pin]
        body: B,
        bounds: BodyBounds,
        // Set at the first poll: a body never read sets no timer.
        timer: Option<Pin<Box<Sleep>>>,
        next: Next,
        over: bool,
    }
}

impl<B> Bounded<B> {
    /// The timer's instant for the wait `next`, and what it stands for.
    fn due(bounds: &BodyBounds, next: Next) -> (Instant, Next) {
        let wait = if next == Next::First { bounds.first } else { bounds.idle };
        let frame = Instant::now().checked_add(wait);
        match (frame, bounds.deadline()) {
            (Some(frame), Some(deadline)) if deadline <= frame => (deadline, Next::Deadline),
            (None, Some(deadline)) => (deadline, Next::Deadline),
            (Some(frame), _) => (frame, next),
            // Past what the clock can hold: far enough.
            (None, None) => (Instant::now() + Duration::from_secs(86_400 * 365), next),
        }
    }

    /// What a body past `next`'s bound says.
    fn timed_out(bounds: &BodyBounds, next: Next) -> ModelError {
        let text = match (next, bounds.deadline) {
            (Next::Deadline, Some((_, bound, setting))) => {
                format!("the response's body did not end by the request's deadline (`{}` = {setting})", bound.key())
            }
            (Next::First, _) => format!(
                "the response's body sent nothing for {} (`first_token_timeout_ms` = {})",
                format_ms(millis(bounds.first)),
                millis(bounds.first)
            ),
            _ => format!(
                "the response's body stalled: nothing for {} (`idle_timeout_ms` = {})",
                format_ms(millis(bounds.idle)),
                millis(bounds.idle)
            ),
        };
        ModelError::transport(TransportKind::Timeout, text)
    }
}

impl<B> Body for Bounded<B>
where
    B: Body,
    B::Data: Buf,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.project();
        if *this.over {
            return Poll::Ready(None);
        }
        // The deadline first: a body that keeps trickling ends there too (the idle bound is the
        // server's gaps, so it waits until no frame is ready).
        if this.bounds.deadline().is_some_and(|deadline| Instant::now() >= deadline) {
            *this.over = true;
            return Poll::Ready(Some(Err(Box::new(Self::timed_out(this.bounds, Next::Deadline)))));
        }
        if let Poll::Ready(frame) = this.body.poll_frame(cx) {
            // A frame (or the end) came: the next one gets the idle bound, from now.
            if let Some(timer) = this.timer.as_mut() {
                let (at, next) = Self::due(this.bounds, Next::Frame);
                timer.as_mut().reset(at);
                *this.next = next;
            } else {
                *this.next = Next::Frame;
            }
            return Poll::Ready(frame.map(|frame| {
                frame.map(|frame| frame.map_data(|mut data| data.copy_to_bytes(data.remaining()))).map_err(Into::into)
            }));
        }
        let timer = match this.timer {
            Some(timer) => timer,
            None => {
                let (at, next) = Self::due(this.bounds, *this.next);
                *this.next = next;
                this.timer.insert(Box::pin(tokio::time::sleep_until(at)))
            }
        };
        ready!(timer.as_mut().poll(cx));
        *this.over = true;
        Poll::Ready(Some(Err(Box::new(Self::timed_out(this.bounds, *this.next)))))
    }

    fn is_end_stream(&self) -> bool {
        self.over || self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        if self.over { SizeHint::with_exact(0) } else { self.body.size_hint() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::{BodyExt as _, StreamBody};

    /// A body that sends `first`, then nothing, for ever.
    fn stalls_after(first: &'static str) -> impl Body<Data = Bytes, Error = std::io::Error> {
        let frames = futures_util::stream::iter([Ok(Frame::data(Bytes::from_static(first.as_bytes())))])
            .chain(futures_util::stream::pending());
        StreamBody::new(frames)
    }

    use futures_util::StreamExt as _;

    #[tokio::test(start_paused = true)]
    async fn a_stalled_body_ends_at_the_idle_bound_with_its_words() {
        let policy = RetryPolicy::new().with_idle_timeout_ms(2_000);
        let mut body = BodyBounds::new(&policy, None).around(stalls_after("data: 1\n\n"));
        let started = Instant::now();
        let first = body.frame().await.unwrap().unwrap().into_data().unwrap();
        assert_eq!(first, "data: 1\n\n");
        let error = body.frame().await.unwrap().unwrap_err();
        assert_eq!(started.elapsed(), Duration::from_secs(2));
        assert!(error.to_string().contains("stalled: nothing for 2 s (`idle_timeout_ms` = 2000)"), "{error}");
        assert!(body.frame().await.is_none(), "the end, after the error");
    }

    #[tokio::test(start_paused = true)]
    async fn the_requests_deadline_ends_a_body_that_keeps_trickling() {
        let start = Instant::now();
        let deadline = Some((start + Duration::from_secs(5), Bound::Budget, 5_000));
        let ticks = futures_util::stream::unfold((), |()| async {
            tokio::time::sleep(Duration::from_secs(1)).await;
            Some((Ok::<_, std::io::Error>(Frame::data(Bytes::from_static(b"."))), ()))
        });
        let mut body = BodyBounds::new(&RetryPolicy::new(), deadline).around(StreamBody::new(Box::pin(ticks)));
        let mut frames = 0;
        let error = loop {
            match body.frame().await.unwrap() {
                Ok(_) => frames += 1,
                Err(error) => break error,
            }
        };
        assert_eq!((frames, start.elapsed()), (4, Duration::from_secs(5)));
        assert!(error.to_string().contains("did not end by the request's deadline (`budget_ms` = 5000)"), "{error}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_within_its_bounds_is_untouched() {
        let body = http_body_util::Full::new(Bytes::from_static(b"whole"));
        let bounded = BodyBounds::new(&RetryPolicy::new(), None).around(body);
        assert_eq!(bounded.collect().await.unwrap().to_bytes(), "whole");
    }
}
