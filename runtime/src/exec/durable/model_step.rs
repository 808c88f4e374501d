//! A model step: one attempt of a model turn through layer 1, done and recorded, or replayed.

use std::time::Duration;

use tokio::time::Instant;

use crate::durable::Scope;
use crate::durable::log::{Begun, Step, StepLogError, StepSink};
use crate::durable::record::{After, ModelRecord, ModelStarted, Outcome, Record, fingerprint, tagged};
use crate::error::ModelError;
use crate::message::{AssistantMessage, Message};
use crate::policy::rules::millis;
use crate::retry::session::{Run, lost_call_refused, run_layer};

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

/// One attempt of a model turn as durable steps: a start marker, then the attempt, made through
/// layer 1 and recorded; or both replayed. `turn` and `attempt` name them.
///
/// The marker is what makes a call lost with its process count: a replayed marker that no record
/// follows is a call the dead process made (and paid for) without recording it. The call counts
/// against the caps, and is made again only when a retry would be (a run whose process dies inside
/// the same call in every restart stops at the call cap); each process that makes it again marks it
/// again, so every lost call counts.
pub(crate) async fn model_step(
    scope: &Scope,
    run: &mut Run<'_>,
    history: &[Message],
    turn: u32,
    attempt: u32,
) -> Result<Result<AssistantMessage, ModelError>, StepFailure> {
    let tools: Vec<&str> = run.tools.iter().map(|tool| tool.name.as_str()).collect();
    let fingerprint = fingerprint(&(run.system, history, tools));
    // The exec's calls before the call of the last marker, while no record has followed it.
    let mut marked: Option<u32> = None;
    // Whether this process wrote that marker (and so makes the call next).
    let mut marked_here = false;
    loop {
        let about = match marked {
            None => format!("model call starts (turn {turn}, attempt {attempt})"),
            Some(_) => format!("model call (turn {turn}, attempt {attempt})"),
        };
        let step = Step::new(scope.next_step(), about);
        let sink = match scope.log().begin(step.clone()).await? {
            Begun::Replayed(value) => {
                let record = check(&step, value, &fingerprint, |record| match record {
                    Record::ModelStarted(started) => Ok(ModelRecorded::Starts(started.calls)),
                    Record::Model(record) => Ok(ModelRecorded::Done(record)),
                    other => Err(other),
                })?;
                tracing::debug!(step = step.index, about = %step.about, "durable step replayed");
                match record {
                    // Another marker: the call of the one before it, if any, was lost.
                    ModelRecorded::Starts(calls_before) => {
                        if let Some(calls) = marked {
                            lost_call(run, calls);
                        }
                        marked = Some(calls_before);
                        continue;
                    }
                    ModelRecorded::Done(record) => {
                        restore(run, &step, &record.about, &record.after)?;
                        if let (Some(tap), Outcome::Message(message)) = (run.state.tap, &record.outcome) {
                            tap.replayed(&message.text_content());
                        }
                        return Ok(record.outcome.into_result());
                    }
                }
            }
            Begun::Fresh(sink) => sink,
        };
        let started = Instant::now();
        let outcome = match marked {
            Some(_) if marked_here => run_layer(run, history).await,
            // A marker replayed, and no record: the dead process made its call.
            Some(calls) => {
                lost_call(run, calls);
                match run.state.budget.retry_refusal() {
                    Some(refusal) => Ok(lost_call_refused(run, refusal)),
                    None => {
                        marked = Some(mark(&step, sink, &fingerprint, run).await?);
                        marked_here = true;
                        continue;
                    }
                }
            }
            None => {
                marked = Some(mark(&step, sink, &fingerprint, run).await?);
                marked_here = true;
                continue;
            }
        };
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
        return Ok(record.outcome.into_result());
    }
}

/// A model step's replayed record: a call's start marker (the exec's calls before it), or the attempt.
enum ModelRecorded {
    Starts(u32),
    Done(Box<ModelRecord>),
}

/// Records in `sink` that a model call starts; returns the exec's calls before it.
async fn mark(step: &Step, sink: Box<dyn StepSink>, fingerprint: &str, run: &Run<'_>) -> Result<u32, StepFailure> {
    let calls = run.state.budget.calls();
    let started = ModelStarted { about: step.about.clone(), fingerprint: fingerprint.to_owned(), calls };
    sink.record(tagged(step, "model_started", &started)?).await?;
    Ok(calls)
}

/// A call made after `calls` calls was lost with its process: it counts.
fn lost_call(run: &mut Run<'_>, calls: u32) {
    tracing::warn!(
        calls = calls.saturating_add(1),
        "a durable run's model call was lost with its process; it counts against max_calls"
    );
    run.state.budget.replayed(calls.saturating_add(1), Duration::ZERO);
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
