//! Durable runs: every model call and every tool call of the execs inside a [`scope`] is a step of
//! a durable engine's journal, so that a run whose process died goes on, in the next process, from
//! the first step that did not complete, and no step that completed is paid for or run twice
//! (docs/design.md §24).
//!
//! The engine is behind [`StepLog`]: `agentic-restate` implements it on Restate's journal, and
//! [`MemoryLog`] in memory (for tests: a "crash" is a new scope on the records so far). What a
//! step is, and what it records:
//!
//! - **A model step** is one attempt of a model turn through layer 1: the call and its in-session
//!   retries, as without a journal. It records the final message (the answer, the tool calls or
//!   the typed failure), the exec's calls, tokens and spend after it, its target and how long it
//!   took. Replayed, it makes no call: the exec counts its calls against `max_calls`, its time
//!   against the deadlines and its tokens against the spend limits, and goes on at its target.
//! - **A tool step** is one tool call: its result. Replayed, the tool does not run. A durable tool
//!   turn runs its calls one at a time, in the model's order, so that every replay journals them in
//!   the same order. A tool of [`Delivery::AtMostOnce`](crate::tool::Delivery) (the default) first
//!   records that it starts: if its process dies before its result is recorded, the next process
//!   does not run it again and the model gets an error result saying its outcome is unknown.
//!
//! Each record carries a fingerprint of what the step was asked (a model step: the system
//! instruction, the conversation and the tools' names; a tool step: the tool, its arguments and its
//! idempotency key). A replayed step whose request differs ends the exec with
//! [`ExecErrorKind::ReplayMismatch`](crate::ExecErrorKind::ReplayMismatch), naming the step.
//!
//! The retry layers stay the runtime's: a step's failure is recorded as the failure it is, and the
//! engine is never asked to retry it (the double-retry rule, docs/design.md §24).

mod log;
mod memory;
pub(crate) mod model_step;
mod record;
pub(crate) mod tool_steps;

pub use log::{Begun, Step, StepFuture, StepLog, StepLogError, StepSink};
pub use memory::MemoryLog;

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

tokio::task_local! {
    /// The durable scope the current task's execs journal their steps in.
    static SCOPE: Arc<Scope>;
}

/// The journal of one durable run, and the count of its steps and execs so far: the names a
/// replay finds its steps by.
pub(crate) struct Scope {
    log: Box<dyn StepLog>,
    steps: AtomicU64,
    execs: AtomicU64,
}

impl Scope {
    /// The next step's number, from 1: the steps of a scope are made one at a time, in order.
    pub(crate) fn next_step(&self) -> u64 {
        self.steps.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// The run id of the scope's next exec: the log's run id and the exec's number, the same in
    /// every process that replays the run (the tools' idempotency keys start with it).
    pub(crate) fn next_run_id(&self) -> String {
        let exec = self.execs.fetch_add(1, Ordering::Relaxed) + 1;
        format!("{}/{exec}", self.log.run_id())
    }

    pub(crate) fn log(&self) -> &dyn StepLog {
        &*self.log
    }
}

/// Runs `future` with every exec inside it journaled in `log`: each model call and each tool
/// call a step (see the [module](self)). Only the execs polled as part of `future` are (a task it
/// spawns is outside the scope).
///
/// # Examples
///
/// A run that "crashes" after its first step, and the next process that replays it: the model is
/// called once for each turn, the tool run once.
///
/// ```
/// use agentic_runtime::exec::durable::{self, MemoryLog};
/// use agentic_runtime::tool::{Delivery, Toolbox};
/// use agentic_runtime::{Runtime, Scripted, ScriptedProvider};
/// use serde_json::json;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let provider = ScriptedProvider::new([Scripted::tool_call("search", json!({})), Scripted::ok("Found it.")]);
/// let tools = Toolbox::new()
///     .with_fn("search", "Searches.", json!(null), |_| async { Ok("found".to_owned()) })
///     .with_delivery("search", Delivery::AtLeastOnce);
/// let runtime = Runtime::builder(provider.clone()).with_tools(tools).build().unwrap();
///
/// // The first process records the first step (the model asks for `search`), then dies.
/// let log = MemoryLog::new("run-1").stopping_after(1);
/// let first = durable::scope(log.clone(), runtime.exec("Look it up."));
/// assert!(tokio::time::timeout(std::time::Duration::from_secs(1), first).await.is_err());
///
/// // The next replays it: no second call for that turn.
/// let reply = durable::scope(log.restarted(), runtime.exec("Look it up.")).await.unwrap();
/// assert_eq!(reply.text(), "Found it.");
/// assert_eq!(provider.calls(), 2);
/// # }
/// ```
pub async fn scope<F: Future>(log: impl StepLog, future: F) -> F::Output {
    let scope = Scope { log: Box::new(log), steps: AtomicU64::new(0), execs: AtomicU64::new(0) };
    SCOPE.scope(Arc::new(scope), future).await
}

/// The scope the current task runs in, if any.
#[inline]
pub(crate) fn current() -> Option<Arc<Scope>> {
    SCOPE.try_with(Arc::clone).ok()
}
