//! A durable tool turn: each call a step, run in the model's order, recorded or replayed.

use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;
use tracing::Instrument as _;

use super::model_step::{StepFailure, check};
use crate::durable::Scope;
use crate::durable::log::{Begun, Step};
use crate::durable::record::{Record, ToolRecord, ToolStarted, fingerprint, tagged};
use crate::observe::trace::RunTrace;
use crate::policy::rules::millis;
use crate::stream::tap::Tap;
use crate::tool::{Delivery, ToolError, ToolOutcome, Toolbox};

/// One tool call of a turn: its id, the tool named and the arguments.
pub(crate) type Call<'a> = (&'a str, &'a str, &'a Value);

/// The outcomes of `calls`, one at a time in their order, each a step of `scope`; and how long the
/// replayed ones took in the processes that ran them (it counts against the exec's deadlines).
pub(crate) async fn run_in_order(
    toolbox: &Toolbox,
    scope: &Scope,
    calls: &[Call<'_>],
    trace: Option<&RunTrace>,
    tap: Option<&Tap>,
    turn: &str,
) -> Result<(Vec<ToolOutcome>, Duration), StepFailure> {
    let mut outcomes = Vec::with_capacity(calls.len());
    let mut replayed = Duration::ZERO;
    for &call in calls {
        let (result, took) = one_call(toolbox, scope, call, turn).await?;
        replayed += took;
        outcomes.push(toolbox.outcome(call, result, trace, tap));
    }
    Ok((outcomes, replayed))
}

/// One call as its steps: replayed (with the time it took), or run and recorded.
async fn one_call(
    toolbox: &Toolbox,
    scope: &Scope,
    (id, name, input): Call<'_>,
    turn: &str,
) -> Result<(Result<String, ToolError>, Duration), StepFailure> {
    let key = crate::exec::tool_call::idempotency_key(turn, id);
    let fingerprint = fingerprint(&(name, input, &key));
    let about = format!("tool {} ({})", crate::util::cut::shorten(name, 64), crate::util::cut::shorten(id, 64));
    let delivery = toolbox.delivery_of(name);
    // An at-most-once call records that it starts: a result missing after that start is an
    // outcome nobody knows, and the call is not run again.
    let mut started_before = false;
    if delivery == Delivery::AtMostOnce {
        let step = Step::new(scope.next_step(), format!("{about} starts"));
        match scope.log().begin(step.clone()).await? {
            Begun::Replayed(value) => {
                check(&step, value, &fingerprint, |record| match record {
                    Record::ToolStarted(started) => Ok(started),
                    other => Err(other),
                })?;
                started_before = true;
            }
            Begun::Fresh(sink) => {
                let started = ToolStarted { about: step.about.clone(), fingerprint: fingerprint.clone() };
                sink.record(tagged(&step, "tool_started", &started)?).await?;
            }
        }
    }
    let step = Step::new(scope.next_step(), about);
    match scope.log().begin(step.clone()).await? {
        Begun::Replayed(value) => {
            let record = check(&step, value, &fingerprint, |record| match record {
                Record::Tool(record) => Ok(record),
                other => Err(other),
            })?;
            tracing::debug!(step = step.index, about = %step.about, "durable step replayed");
            let took = Duration::from_millis(record.took_ms);
            let result = if record.is_error { Err(ToolError::new(record.content)) } else { Ok(record.content) };
            Ok((result, took))
        }
        Begun::Fresh(sink) => {
            let started = Instant::now();
            let result = if started_before {
                Err(ToolError::new(unknown_outcome(name)))
            } else {
                let span = crate::exec::tool_call::tool_span(name, id);
                let result = toolbox.call_with_key(name, input.clone(), id, &key).instrument(span.clone()).await;
                if result.is_err() {
                    crate::exec::tool_call::record_tool_error(&span);
                }
                result
            };
            // Recorded as the model gets it: cut to the toolbox's bound (a journal's entry is bounded too).
            let (content, is_error) = match &result {
                Ok(text) => (toolbox.cut_result(text.clone()), false),
                Err(error) => (toolbox.cut_result(error.message().to_owned()), true),
            };
            let record = ToolRecord {
                about: step.about.clone(),
                fingerprint,
                content,
                is_error,
                took_ms: millis(started.elapsed()),
            };
            sink.record(tagged(&step, "tool", &record)?).await?;
            Ok((result, Duration::ZERO))
        }
    }
}

/// The error result of an at-most-once call that was running when its process died.
fn unknown_outcome(name: &str) -> String {
    format!(
        "unknown outcome: the tool `{}` was running when its process stopped, and it runs at most once \
         (it may have acted, or not): it was not run again; check whether it acted before you ask for it again",
        crate::util::cut::shorten(name, 64)
    )
}
