//! A compaction step: a compactor's shorter conversation, made and recorded, or replayed.
//!
//! A compactor may call the model ([`Summarize`](crate::compact::Summarize) does) and need not
//! answer the same twice: replayed without its record, a run would pay for the summary again and
//! send the next model step another conversation than the one recorded, a replay mismatch.

use tokio::time::Instant;

use super::model_step::{StepFailure, after, check, mismatch, restore};
use crate::compact::{self, Compactor};
use crate::durable::Scope;
use crate::durable::log::{Begun, Step};
use crate::durable::record::{Compacted, CompactionRecord, Record, fingerprint, tagged};
use crate::message::Message;
use crate::retry::session::Run;

/// `compactor`'s conversation of `messages`, which overflowed with `error`, as a durable step:
/// replayed from its record, or made and recorded. The inner result is the compactor's: the
/// shorter conversation, or why it made none.
pub(crate) async fn compaction_step(
    scope: &Scope,
    run: &mut Run<'_>,
    compactor: &dyn Compactor,
    messages: Vec<Message>,
    error: &str,
) -> Result<Result<Vec<Message>, String>, StepFailure> {
    let name = compactor.name();
    let fingerprint = fingerprint(&(name, run.system, &messages));
    let step = Step::new(scope.next_step(), format!("compaction by `{name}` of {} messages", messages.len()));
    match scope.log().begin(step.clone()).await? {
        Begun::Replayed(value) => {
            let record = check(&step, value, &fingerprint, |record| match record {
                Record::Compaction(record) => Ok(record),
                other => Err(other),
            })?;
            tracing::debug!(step = step.index, about = %step.about, "durable step replayed");
            restore(run, &step, &record.about, &record.after)?;
            let compacted = match record.outcome.into_result() {
                // Recorded as the compactor returned it, which was checked then: checked again, as
                // a journal may hold anything.
                Ok(messages) => Ok(compact::checked(messages).map_err(|why| {
                    mismatch(&step, &record.about, &format!("its conversation is not one to go on with: {why}"))
                })?),
                Err(why) => Err(why),
            };
            // As `compact::compact` notes it when it compacts: the calls from now on send the
            // shorter conversation.
            run.compacted |= compacted.is_ok();
            Ok(compacted)
        }
        Begun::Fresh(sink) => {
            let started = Instant::now();
            // The compactor's own calls and waits are part of this step, not steps of their own:
            // the engine takes one step at a time, and a replay skips them with the step.
            let durable = run.state.durable.take();
            let compacted = compact::compact(run, compactor, messages, error).await;
            run.state.durable = durable;
            let record = CompactionRecord {
                about: step.about.clone(),
                fingerprint,
                outcome: match compacted {
                    Ok(messages) => Compacted::Messages(messages),
                    Err(why) => Compacted::Refused(why),
                },
                after: after(run, started),
            };
            sink.record(tagged(&step, "compaction", &record)?).await?;
            Ok(record.outcome.into_result())
        }
    }
}
