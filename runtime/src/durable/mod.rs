//! The durable scope an exec finds its step log in, below the retry layers and the exec (which
//! both take steps in it: the exec its model and tool steps, layer 2 its waits). The public face,
//! and the model and tool steps, are `exec::durable`'s (docs/design.md §24).

pub(crate) mod log;
pub(crate) mod memory;
pub(crate) mod record;

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::time::Instant;

use log::{Step, StepLog};

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
/// call a step (see [`exec::durable`](crate::exec::durable)). Only the execs polled as part of `future` are (a task it
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
/// // The first process records the first model call (its start, then its answer: the model asks
/// // for `search`), then dies.
/// let log = MemoryLog::new("run-1").stopping_after(2);
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
    let _open = Open::new();
    SCOPE.scope(Arc::new(scope), future).await
}

/// How many durable scopes this process has open: while none is, an exec need not look for one
/// (the task-local's lookup is most of what a durable run costs an exec that is not in one).
static OPEN: AtomicUsize = AtomicUsize::new(0);

/// One open scope, counted in [`OPEN`] from its making to its drop (the scope's future's).
struct Open;

impl Open {
    fn new() -> Self {
        OPEN.fetch_add(1, Ordering::Relaxed);
        Open
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        OPEN.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The scope the current task runs in, if any.
#[inline]
pub(crate) fn current() -> Option<Arc<Scope>> {
    // Relaxed is enough: a scope is opened by the task it is read in, before it reads it.
    if OPEN.load(Ordering::Relaxed) == 0 {
        return None;
    }
    SCOPE.try_with(Arc::clone).ok()
}

/// Layer 2's wait of `wait` before the next attempt, as a step of `scope`: a durable timer where
/// the log has one. Returns the part of it waited before this process (a replayed wait that ended
/// returns at once): it counts against the exec's deadlines as if waited here.
pub(crate) async fn wait(scope: &Scope, wait: Duration) -> Duration {
    let step = Step::new(scope.next_step(), format!("backoff of {} ms", wait.as_millis()));
    let started = Instant::now();
    if let Err(error) = scope.log().sleep(step, wait).await {
        // The next step meets the same journal and ends the exec; until then, the wait holds.
        tracing::warn!(%error, "a durable wait failed; waiting here");
        tokio::time::sleep(wait.saturating_sub(started.elapsed())).await;
    }
    wait.saturating_sub(started.elapsed())
}
