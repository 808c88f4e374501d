//! A model step: one attempt of a model turn through layer 1, done and recorded, or replayed.

use std::time::Duration;

use serde_json::json;
use tokio::time::Instant;

use crate::durable::Scope;
use crate::durable::log::{Begun, Step, StepLogError};
use crate::durable::record::{After, ModelRecord, Outcome, Record, fingerprint, tagged};
use crate::error::ModelError;
use crate::message::{AssistantMessage, Message};
use crate::policy::rules::millis;
use crate::retry::session::{Run, run_layer};

/// Why a durable step could not be taken: the exec ends with it.
#[derive(Debug)]
pub(crate) enum StepFailure {
    /// The replayed step is not the step this run takes (`ReplayMismatch: ...`).
    Mismatch(String),
    /// The journal failed.
    Log(StepLogError),
}

impl From<StepLogError> for StepFailure {
    fn from(error: StepLogError) -> Self {
        StepFailure::Log(error)
    }
}

impl StepFailure {
    /// The exec's attempt text for it.
    pub(crate) fn into_text(self) -> String {
        match self {
            StepFailure::Mismatch(text) => text,
            StepFailure::Log(error) => format!("DurableRunError: {error}"),
        }
    }
}

/// A replayed step that is not the one this run takes: its number, what it was and what it is now.
pub(crate) fn mismatch(step: &Step, recorded: &str, why: &str) -> StepFailure {
    StepFailure::Mismatch(format!(
        "ReplayMismatch: step {} of this durable run does not match its record: the journal holds `{recorded}`, \
         this run takes `{}` there ({why}); the code or the prompt changed while the run was in flight: \
         finish the run on the code that started it, or cancel it",
        step.index, step.about
    ))
}

/// The record of a replayed step, read as `T`'s kind, checked against `fingerprint`.
pub(crate) fn check<T>(
    step: &Step,
    value: serde_json::Value,
    fingerprint: &str,
    of_kind: impl FnOnce(Record) -> Result<T, Record>,
) -> Result<T, StepFailure> {
    let record: Record = serde_json::from_value(value)
        .map_err(|error| mismatch(step, "a record this version cannot read", &format!("{error}")))?;
    let (about, same_request) = (record.about().to_owned(), record.fingerprint() == fingerprint);
    let record = of_kind(record).map_err(|other| mismatch(step, other.about(), "another kind of step"))?;
    if !same_request {
        return Err(mismatch(step, &about, "the request differs from the one recorded"));
    }
    Ok(record)
}

/// One attempt of a model turn as a durable step: replayed from its record, or made through layer
/// 1 and recorded. `turn` and `attempt` name it.
pub(crate) async fn model_step(
    scope: &Scope,
    run: &mut Run<'_>,
    history: &[Message],
    turn: u32,
    attempt: u32,
) -> Result<Result<AssistantMessage, ModelError>, StepFailure> {
    let tools: Vec<&str> = run.tools.iter().map(|tool| tool.name.as_str()).collect();
    let fingerprint = fingerprint(&json!({"system": run.system, "messages": history, "tools": tools}));
    let step = Step::new(scope.next_step(), format!("model call (turn {turn}, attempt {attempt})"));
    match scope.log().begin(step.clone()).await? {
        Begun::Replayed(value) => {
            let record = check(&step, value, &fingerprint, |record| match record {
                Record::Model(record) => Ok(record),
                other => Err(other),
            })?;
            tracing::debug!(step = step.index, about = %step.about, "durable step replayed");
            restore(run, &step, &record.about, &record.after)?;
            Ok(into_result(record.outcome))
        }
        Begun::Fresh(sink) => {
            let started = Instant::now();
            let outcome = run_layer(run, history).await;
            let record = ModelRecord {
                about: step.about.clone(),
                fingerprint,
                outcome: match outcome {
                    Ok(message) => Outcome::Message(message),
                    Err(error) => Outcome::Raised(error),
                },
                after: after(run, started),
            };
            sink.record(tagged(&step, "model", &record)?).await?;
            Ok(into_result(record.outcome))
        }
    }
}

/// The exec's state after a step that began at `started`, for its record.
pub(crate) fn after(run: &Run<'_>, started: Instant) -> After {
    After {
        calls: run.state.budget.calls(),
        took_ms: millis(started.elapsed()),
        usage: run.state.usage.as_deref().copied(),
        spent: run.state.spend.as_ref().map(|ledger| ledger.spent()),
        target: run.position.map(|position| position.index()),
    }
}

/// The exec as it was after the recorded step `about`: its calls, time, tokens, spend and target.
pub(crate) fn restore(run: &mut Run<'_>, step: &Step, about: &str, after: &After) -> Result<(), StepFailure> {
    if let (Some(position), Some(index)) = (&mut run.position, after.target) {
        match position.restore(&mut run.state, index) {
            Some(provider) => run.provider = provider,
            None => return Err(mismatch(step, about, &format!("its target {index} is not among this runtime's"))),
        }
    }
    run.state.budget.replayed(after.calls, Duration::from_millis(after.took_ms));
    run.state.usage = after.usage.map(Box::new);
    if let (Some(ledger), Some(spent)) = (&mut run.state.spend, after.spent) {
        ledger.replayed(spent);
    }
    Ok(())
}

fn into_result(outcome: Outcome) -> Result<AssistantMessage, ModelError> {
    match outcome {
        Outcome::Message(message) => Ok(message),
        Outcome::Raised(error) => Err(error),
    }
}
