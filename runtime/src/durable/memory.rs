//! A step log in memory: durable runs in tests, with a crash where the test says.

use std::future::pending;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::Value;

use super::log::{Begun, Step, StepFuture, StepLog, StepSink};
use crate::policy::rules::millis;

/// A [`StepLog`] in memory, for tests: the records live as long as its clones, and a "crash" is a
/// new [`scope`](super::scope) on [`MemoryLog::restarted`].
///
/// [`MemoryLog::stopping_after`] makes the process "die" after so many steps: from there every
/// step waits forever, as a killed process does nothing more; [`MemoryLog::dying_in`] makes it die
/// in a step, after it began and before its record is durable.
#[derive(Debug, Clone)]
pub struct MemoryLog {
    run_id: Arc<str>,
    records: Arc<Mutex<Vec<Value>>>,
    /// The steps this process began fresh and replayed, by number.
    seen: Arc<Mutex<Seen>>,
    stop_after: Option<u64>,
    die_in: Option<u64>,
}

#[derive(Debug, Default)]
struct Seen {
    fresh: Vec<u64>,
    replayed: Vec<u64>,
}

impl MemoryLog {
    /// An empty log of the run `run_id`.
    pub fn new(run_id: &str) -> Self {
        Self { run_id: run_id.into(), records: Arc::default(), seen: Arc::default(), stop_after: None, die_in: None }
    }

    /// A log of the run `run_id` that holds `records` already, in step order, as a previous
    /// process left them: for a journal loaded from elsewhere (a file, an engine's export), or
    /// to see what a replay makes of records this version cannot read. The next process
    /// replays them, then goes on fresh.
    ///
    /// # Examples
    ///
    /// ```
    /// use agentic_runtime::exec::durable::MemoryLog;
    /// use serde_json::json;
    ///
    /// let saved = MemoryLog::new("run-1").records(); // or read from a file
    /// let log = MemoryLog::with_records("run-1", saved);
    /// assert!(log.records().is_empty());
    /// let loaded = MemoryLog::with_records("run-1", vec![json!({"kind": "model"})]);
    /// assert_eq!(loaded.records().len(), 1);
    /// ```
    pub fn with_records(run_id: &str, records: Vec<Value>) -> Self {
        Self { records: Arc::new(Mutex::new(records)), ..Self::new(run_id) }
    }

    /// The same log, whose process "dies" once `steps` steps are recorded: the next step never
    /// begins.
    pub fn stopping_after(mut self, steps: u64) -> Self {
        self.stop_after = Some(steps);
        self
    }

    /// The same log, whose process "dies" in step `step`: it begins fresh, and its record never
    /// becomes durable.
    pub fn dying_in(mut self, step: u64) -> Self {
        self.die_in = Some(step);
        self
    }

    /// The log as the next process finds it: the records so far, no crash to come, nothing seen.
    pub fn restarted(&self) -> Self {
        Self {
            run_id: self.run_id.clone(),
            records: self.records.clone(),
            seen: Arc::default(),
            stop_after: None,
            die_in: None,
        }
    }

    /// The records so far, in step order.
    pub fn records(&self) -> Vec<Value> {
        lock(&self.records).clone()
    }

    /// The steps this process began fresh, by number.
    pub fn fresh(&self) -> Vec<u64> {
        lock(&self.seen).fresh.clone()
    }

    /// The steps this process replayed, by number.
    pub fn replayed(&self) -> Vec<u64> {
        lock(&self.seen).replayed.clone()
    }
}

impl StepLog for MemoryLog {
    fn begin(&self, step: Step) -> StepFuture<Begun> {
        match self.stand(step.index) {
            Stand::Replayed(record) => Box::pin(async move { Ok(Begun::Replayed(record)) }),
            Stand::Dead => Box::pin(pending()),
            Stand::Fresh => {
                let dies = self.die_in == Some(step.index);
                let sink = MemorySink { records: self.records.clone(), index: step.index, dies };
                Box::pin(async move { Ok(Begun::Fresh(Box::new(sink) as Box<dyn StepSink>)) })
            }
        }
    }

    /// A wait recorded as it starts (as an engine's timer is): replayed, it returns at once, as a
    /// timer that ended does (this log keeps no clock: one that had not ended returns at once too).
    fn sleep(&self, step: Step, wait: Duration) -> StepFuture<()> {
        match self.stand(step.index) {
            Stand::Replayed(_) => Box::pin(async { Ok(()) }),
            Stand::Dead => Box::pin(pending()),
            Stand::Fresh => {
                lock(&self.records).push(serde_json::json!({"kind": "sleep", "wait_ms": millis(wait)}));
                let dies = self.die_in == Some(step.index);
                Box::pin(async move {
                    tokio::time::sleep(wait).await;
                    if dies {
                        pending::<()>().await;
                    }
                    Ok(())
                })
            }
        }
    }

    fn run_id(&self) -> &str {
        &self.run_id
    }
}

/// Where a step stands in this process: recorded before, past its "death", or to be done.
enum Stand {
    Replayed(Value),
    Dead,
    Fresh,
}

impl MemoryLog {
    /// Where step `index` stands, noted among the steps this process replayed or began fresh.
    fn stand(&self, index: u64) -> Stand {
        let recorded = lock(&self.records).get(index as usize - 1).cloned();
        let mut seen = lock(&self.seen);
        match recorded {
            Some(record) => {
                seen.replayed.push(index);
                Stand::Replayed(record)
            }
            None if self.stop_after.is_some_and(|last| index > last) => Stand::Dead,
            None => {
                seen.fresh.push(index);
                Stand::Fresh
            }
        }
    }
}

/// `mutex`'s guard, whether or not a panic poisoned it (the records stay whole: each write is one push).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

struct MemorySink {
    records: Arc<Mutex<Vec<Value>>>,
    index: u64,
    dies: bool,
}

impl StepSink for MemorySink {
    fn record(self: Box<Self>, record: Value) -> StepFuture<()> {
        if self.dies {
            return Box::pin(pending());
        }
        let mut records = lock(&self.records);
        // Steps are recorded in order: the next one's place is the end.
        debug_assert_eq!(records.len() as u64 + 1, self.index);
        records.push(record);
        Box::pin(async { Ok(()) })
    }
}
