//! What a durable engine gives the runtime: a journal of steps, read back in a replay.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde_json::Value;

/// A step's future: boxed, `Send` (an exec's future is), owning what it needs.
pub type StepFuture<T> = Pin<Box<dyn Future<Output = Result<T, StepLogError>> + Send + 'static>>;

/// A durable engine's journal, as an exec sees it: its steps, in order, each recorded once.
///
/// The runtime calls [`StepLog::begin`] for each step, one at a time, in the same order in every
/// process that runs the same code on the same run: the `n`th step of a run is the `n`th step of
/// its replay. Implemented by `agentic-restate` (on Restate's `ctx.run`) and by [`MemoryLog`];
/// a Temporal activity or a DBOS step fits it the same way (docs/design.md §24).
///
/// [`MemoryLog`]: crate::exec::durable::MemoryLog
pub trait StepLog: Send + Sync + 'static {
    /// Begins `step`: [`Begun::Replayed`] with its record when a previous process completed it,
    /// else [`Begun::Fresh`] with the sink its record goes to once the runtime has done it.
    fn begin(&self, step: Step) -> StepFuture<Begun>;

    /// Waits `wait` as `step` (layer 2's backoff between two attempts, the server's Retry-After
    /// included): a durable timer where the engine has one, so that a process that dies in it
    /// wakes the next at the same time, and a replayed wait that ended returns at once. The
    /// default waits in this process (not durable).
    fn sleep(&self, step: Step, wait: Duration) -> StepFuture<()> {
        let _ = step;
        Box::pin(async move {
            tokio::time::sleep(wait).await;
            Ok(())
        })
    }

    /// The run's id, the same in every process that runs it (an invocation's id): the tools'
    /// idempotency keys are made from it, so they too are the same after a restart.
    fn run_id(&self) -> &str;
}

/// A step the runtime is about to take.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Step {
    /// Its number in the run, from 1.
    pub index: u64,
    /// Its name in the journal: `agentic#{index}`. The same for every kind of step, so that a step
    /// that became another kind in changed code is found by its record, which says what differs
    /// ([`ExecErrorKind::ReplayMismatch`](crate::ExecErrorKind::ReplayMismatch)).
    pub name: String,
    /// What it is, in words: `model call (turn 2, attempt 1)`, `tool search (call_1)`.
    pub about: String,
}

impl Step {
    pub(crate) fn new(index: u64, about: String) -> Self {
        Self { index, name: format!("agentic#{index}"), about }
    }
}

/// How a step begins.
#[non_exhaustive]
pub enum Begun {
    /// A previous process completed it: its record, and nothing to do.
    Replayed(Value),
    /// It is to be done now; its record goes to this sink.
    Fresh(Box<dyn StepSink>),
}

impl fmt::Debug for Begun {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Begun::Replayed(record) => f.debug_tuple("Replayed").field(record).finish(),
            Begun::Fresh(_) => f.write_str("Fresh"),
        }
    }
}

/// Where a fresh step's record goes.
pub trait StepSink: Send {
    /// Records the step: resolves once the record is durable (a process that dies after that
    /// replays it).
    fn record(self: Box<Self>, record: Value) -> StepFuture<()>;
}

/// The journal failed: the exec cannot go on durably.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepLogError {
    message: String,
}

impl StepLogError {
    /// An error with `message`, which says what failed.
    pub fn new(message: impl fmt::Display) -> Self {
        Self { message: message.to_string() }
    }

    /// What failed.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for StepLogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the durable run's journal failed: {}", self.message)
    }
}

impl std::error::Error for StepLogError {}
