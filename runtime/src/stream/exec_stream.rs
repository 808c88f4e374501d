//! [`ExecStream`]: an exec as a `futures::Stream` of [`ExecEvent`]s.

use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_core::Stream;
use futures_util::StreamExt as _;

use crate::answer::{ExecError, Reply};
use crate::stream::event::ExecEvent;
use crate::stream::tap::Tap;

/// The exec's future, boxed: the stream owns it and polls it itself.
type ExecFuture<'r> = Pin<Box<dyn Future<Output = Result<Reply, ExecError>> + Send + 'r>>;

/// A streamed exec ([`Runtime::exec_stream`](crate::Runtime::exec_stream),
/// [`ExecRequest::stream`](crate::exec::ExecRequest::stream)): a [`Stream`] of [`ExecEvent`]s whose
/// last is [`ExecEvent::Done`], then the end.
///
/// The exec runs as the stream is polled, on the caller's task: nothing is sent before the first
/// poll, a caller that reads slowly slows the read of the provider's stream (at most
/// 32 deltas wait for it), and dropping the stream cancels the exec and its call at once. The
/// deadline, the call cap and every other bound hold as for `exec`.
#[must_use = "a stream does nothing until it is polled"]
pub struct ExecStream<'r> {
    exec: Option<ExecFuture<'r>>,
    tap: Arc<Tap>,
}

impl fmt::Debug for ExecStream<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExecStream").field("done", &self.exec.is_none()).finish_non_exhaustive()
    }
}

impl<'r> ExecStream<'r> {
    /// The stream of the exec that `exec` makes with the tap it is handed.
    pub(crate) fn new<F>(tap: Tap, exec: impl FnOnce(Arc<Tap>) -> F) -> Self
    where
        F: Future<Output = Result<Reply, ExecError>> + Send + 'r,
    {
        let tap = Arc::new(tap);
        Self { exec: Some(Box::pin(exec(Arc::clone(&tap)))), tap }
    }

    /// Reads the stream to its end and returns what [`ExecEvent::Done`] carried, for a caller that
    /// wants the reply after all (the events before it are dropped).
    pub async fn reply(mut self) -> Result<Reply, ExecError> {
        while let Some(event) = self.next().await {
            if let ExecEvent::Done(result) = event {
                return result;
            }
        }
        unreachable!("an exec stream ends with Done")
    }
}

impl Stream for ExecStream<'_> {
    type Item = ExecEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<ExecEvent>> {
        loop {
            if let Some(event) = self.tap.pop() {
                return Poll::Ready(Some(event));
            }
            let Some(exec) = self.exec.as_mut() else { return Poll::Ready(None) };
            match exec.as_mut().poll(cx) {
                Poll::Ready(result) => {
                    self.exec = None;
                    self.tap.push(ExecEvent::Done(result));
                }
                // The exec waits for the caller (the queue is full) or for its call: either way
                // the queue says which.
                Poll::Pending if self.tap.is_empty() => return Poll::Pending,
                Poll::Pending => {}
            }
        }
    }
}
