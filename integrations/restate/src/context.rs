//! The Restate contexts a durable run can live in: a service's, a virtual object's and a
//! workflow's handlers (exclusive or shared), each taking steps the same way.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use restate_sdk::context::{
    Context, ContextSideEffects as _, ContextTimers as _, ObjectContext, RunFuture as _, RunRetryPolicy,
    SharedObjectContext, SharedWorkflowContext, WorkflowContext,
};
use restate_sdk::errors::{HandlerResult, TerminalError};
use restate_sdk::serde::Json;
use serde_json::Value;

/// A boxed future of a step, `Send` as a handler's future must be.
pub(crate) type StepWork<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a `ctx.run` closure of a step does: hands the runtime a sink, then waits for the record.
pub(crate) type Closure = Box<dyn FnOnce() -> StepWork<'static, HandlerResult<Json<Value>>> + Send>;

mod sealed {
    pub trait Sealed {}
}

/// A Restate handler's context that a [`Durable`](crate::Durable) run takes its steps in:
/// [`Context`] (a service's), [`ObjectContext`] and [`SharedObjectContext`] (a virtual object's),
/// [`WorkflowContext`] and [`SharedWorkflowContext`] (a workflow's). Sealed: the steps are the
/// SDK's `ctx.run` and `ctx.sleep`, which only these contexts have.
pub trait DurableContext: sealed::Sealed + Sync {
    /// The invocation's id: a durable run's id, the same on every attempt.
    #[doc(hidden)]
    fn invocation(&self) -> &str;

    /// `ctx.run(closure)` named `name`, never retried by Restate.
    #[doc(hidden)]
    #[allow(private_interfaces)]
    fn run_step(&self, name: String, closure: Closure) -> StepWork<'_, Result<Json<Value>, TerminalError>>;

    /// `ctx.sleep(wait)`.
    #[doc(hidden)]
    #[allow(private_interfaces)]
    fn sleep_for(&self, wait: Duration) -> StepWork<'_, Result<(), TerminalError>>;
}

macro_rules! durable_context {
    ($($context:ident),*) => {$(
        impl sealed::Sealed for $context<'_> {}

        impl DurableContext for $context<'_> {
            fn invocation(&self) -> &str {
                self.invocation_id()
            }

            #[allow(private_interfaces)]
            fn run_step(&self, name: String, closure: Closure) -> StepWork<'_, Result<Json<Value>, TerminalError>> {
                // Never retried by Restate: the runtime's layers retried inside the step.
                Box::pin(self.run(closure).name(name).retry_policy(RunRetryPolicy::new().max_attempts(1)))
            }

            #[allow(private_interfaces)]
            fn sleep_for(&self, wait: Duration) -> StepWork<'_, Result<(), TerminalError>> {
                Box::pin(self.sleep(wait))
            }
        }
    )*};
}

durable_context!(Context, ObjectContext, SharedObjectContext, WorkflowContext, SharedWorkflowContext);
