//! The runtime's side of the bridge: a [`StepLog`] whose steps are asked of the handler's task,
//! where the Restate context lives (a context is borrowed by its handler and cannot travel).

use std::sync::Arc;
use std::time::Duration;

use agentic_runtime::exec::durable::{Begun, Step, StepFuture, StepLog, StepLogError, StepSink};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

/// A step the runtime asks the handler's task to take.
pub(crate) enum Request {
    /// Begin a step: its record if Restate has it, else a sink for it.
    Begin { step: Step, reply: oneshot::Sender<Result<Begun, StepLogError>> },
    /// Wait on Restate's timer.
    Sleep { step: Step, wait: Duration, reply: oneshot::Sender<Result<(), StepLogError>> },
}

/// The step log of one durable run: each step goes, as a request, to the task that drives the run
/// ([`crate::Durable::run`]).
pub(crate) struct Bridge {
    pub(crate) requests: mpsc::UnboundedSender<Request>,
    pub(crate) run_id: Arc<str>,
}

/// The task that drives the run is gone: the handler returned or was dropped.
fn driver_gone() -> StepLogError {
    StepLogError::new("the Restate handler that drives this run has stopped (an exec outlived its handler)")
}

impl StepLog for Bridge {
    fn begin(&self, step: Step) -> StepFuture<Begun> {
        let (reply, begun) = oneshot::channel();
        let sent = self.requests.send(Request::Begin { step, reply });
        Box::pin(async move {
            sent.map_err(|_| driver_gone())?;
            begun.await.map_err(|_| driver_gone())?
        })
    }

    fn sleep(&self, step: Step, wait: Duration) -> StepFuture<()> {
        let (reply, woke) = oneshot::channel();
        let sent = self.requests.send(Request::Sleep { step, wait, reply });
        Box::pin(async move {
            sent.map_err(|_| driver_gone())?;
            woke.await.map_err(|_| driver_gone())?
        })
    }

    fn run_id(&self) -> &str {
        &self.run_id
    }
}

/// Where a fresh step's record goes: into the `ctx.run` closure that waits for it, then the
/// acknowledgement that Restate holds it.
pub(crate) struct Sink {
    pub(crate) record: oneshot::Sender<Value>,
    pub(crate) durable: oneshot::Receiver<Result<(), StepLogError>>,
}

impl StepSink for Sink {
    fn record(self: Box<Self>, record: Value) -> StepFuture<()> {
        let Sink { record: to_closure, durable } = *self;
        let sent = to_closure.send(record);
        Box::pin(async move {
            sent.map_err(|_| driver_gone())?;
            durable.await.map_err(|_| driver_gone())?
        })
    }
}
