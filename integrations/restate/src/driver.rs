//! The handler's side of the bridge: runs the agent's future and, beside it, each step it asks
//! for as a `ctx.run` of Restate's journal.

use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::{Duration, Instant};

use agentic_runtime::exec::durable::{self, Begun, Step, StepLogError};
use restate_sdk::errors::TerminalError;
use restate_sdk::serde::Json;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::bridge::{Bridge, Request, Sink};
use crate::context::{Closure, DurableContext};

/// What one step of a durable run came to, as [`Durable::on_step`] hears it: once it is durable.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StepReport {
    /// The step's number in the run, from 1.
    pub index: u64,
    /// Its name in Restate's journal (`agentic#3`).
    pub name: String,
    /// What it was: `model call (turn 2, attempt 1)`, `tool search (call_1)`.
    pub about: String,
    /// `true`: its record was replayed from the journal (no call, no tool run); `false`: it was
    /// done now and recorded.
    pub replayed: bool,
}

/// A hook that hears each step.
type OnStep<'a> = Box<dyn Fn(&StepReport) + Send + Sync + 'a>;

/// A durable run of the execs inside one Restate handler: see the [crate] docs.
pub struct Durable<'a, C> {
    ctx: &'a C,
    run_id: Arc<str>,
    on_step: Option<OnStep<'a>>,
}

impl<C> std::fmt::Debug for Durable<'_, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Durable").field("run_id", &self.run_id).finish_non_exhaustive()
    }
}

impl<'a, C: DurableContext> Durable<'a, C> {
    /// A durable run on the handler's context `ctx`, whose id is `run_id`: the same on every
    /// attempt of the invocation (its invocation id: [`crate::durable`] takes it from the
    /// context). The tools' idempotency keys start with it.
    pub fn new(ctx: &'a C, run_id: &str) -> Self {
        Self { ctx, run_id: run_id.into(), on_step: None }
    }

    /// Calls `hook` after each step is durable (recorded, or replayed): to log which steps a
    /// restart replayed and which it called.
    pub fn on_step(mut self, hook: impl Fn(&StepReport) + Send + Sync + 'a) -> Self {
        self.on_step = Some(Box::new(hook));
        self
    }

    /// Runs `future` (an agent function's call, any code that execs) with every exec inside it
    /// journaled: each model call and each tool call a `ctx.run` step named `agentic#N`.
    pub async fn run<F: Future>(self, future: F) -> F::Output {
        let (requests, mut asked) = mpsc::unbounded_channel();
        let bridge = Bridge { requests, run_id: self.run_id.clone() };
        let mut agent = pin!(durable::scope(bridge, future));
        // The step being taken: the steps of a run are taken one at a time, in order.
        let mut taking: Option<Pin<Box<dyn Future<Output = ()> + Send + '_>>> = None;
        poll_fn(|cx| {
            loop {
                if let Poll::Ready(output) = agent.as_mut().poll(cx) {
                    return Poll::Ready(output);
                }
                match &mut taking {
                    Some(step) => match step.as_mut().poll(cx) {
                        Poll::Ready(()) => taking = None,
                        Poll::Pending => return Poll::Pending,
                    },
                    None => match asked.poll_recv(cx) {
                        Poll::Ready(Some(Request::Begin { step, reply })) => {
                            taking = Some(Box::pin(self.take(step, reply)));
                        }
                        Poll::Ready(Some(Request::Sleep { step, wait, reply })) => {
                            taking = Some(Box::pin(self.sleep(step, wait, reply)));
                        }
                        // The bridge lives in the agent's future, which is still running.
                        Poll::Ready(None) | Poll::Pending => return Poll::Pending,
                    },
                }
            }
        })
        .await
    }

    /// One step as a `ctx.run`: its closure runs only when Restate has no record of it, and then
    /// hands the runtime a sink and waits for the record; otherwise the record is replayed.
    fn take(
        &self,
        step: Step,
        reply: oneshot::Sender<Result<Begun, StepLogError>>,
    ) -> impl Future<Output = ()> + Send + '_ {
        let ctx = self.ctx;
        let report_to = self.on_step.as_deref();
        let reply = Arc::new(Mutex::new(Some(reply)));
        let (durable_tx, durable_rx) = oneshot::channel();
        let to_closure = reply.clone();
        let name = step.name.clone();
        async move {
            let closure: Closure = Box::new(move || {
                Box::pin(async move {
                    let (record_tx, record_rx) = oneshot::channel::<Value>();
                    let sink = Sink { record: record_tx, durable: durable_rx };
                    if let Some(reply) = lock(&to_closure).take() {
                        let _ = reply.send(Ok(Begun::Fresh(Box::new(sink))));
                    }
                    match record_rx.await {
                        Ok(record) => Ok(Json(record)),
                        // The exec was dropped in the step: nothing to record, and nothing to retry.
                        Err(_) => Err(TerminalError::new("the exec stopped before this step was recorded").into()),
                    }
                })
            });
            let recorded = ctx.run_step(name, closure).await;
            let replayed = lock(&reply).take();
            let failed = |error: TerminalError| {
                StepLogError::new(format!("step {} was recorded as failed: {}", step.index, error.message()))
            };
            match replayed {
                // The closure never ran: Restate had the record.
                Some(reply) => {
                    report(report_to, &step, true);
                    let _ = reply.send(recorded.map(|Json(record)| Begun::Replayed(record)).map_err(failed));
                }
                None => {
                    report(report_to, &step, false);
                    let _ = durable_tx.send(recorded.map(|_| ()).map_err(failed));
                }
            }
        }
    }
}

impl<C: DurableContext> Durable<'_, C> {
    /// A wait on Restate's timer (`ctx.sleep`): a process that dies in it is woken, in the next,
    /// when it ends; replayed after it ended, it returns at once (reported as replayed).
    fn sleep(
        &self,
        step: Step,
        wait: Duration,
        reply: oneshot::Sender<Result<(), StepLogError>>,
    ) -> impl Future<Output = ()> + Send + '_ {
        let ctx = self.ctx;
        let report_to = self.on_step.as_deref();
        async move {
            let started = Instant::now();
            let slept = ctx.sleep_for(wait).await;
            // The SDK does not say whether a timer was replayed: one that ended before its time
            // here began in an earlier process.
            report(report_to, &step, started.elapsed() < wait);
            let failed = |error: TerminalError| {
                StepLogError::new(format!("the wait of step {} failed: {}", step.index, error.message()))
            };
            let _ = reply.send(slept.map_err(failed));
        }
    }
}

fn report(hook: Option<&(dyn Fn(&StepReport) + Send + Sync + '_)>, step: &Step, replayed: bool) {
    if let Some(hook) = hook {
        hook(&StepReport { index: step.index, name: step.name.clone(), about: step.about.clone(), replayed });
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
