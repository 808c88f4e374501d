//! A context overflow in an exec: the conversation compacted for the same turn, or the reason it
//! stands.

use crate::compact;
use crate::decision::{Decision, Layer, Verdict, Why};
use crate::exec::Runtime;
use crate::exec::durable::compaction_step::compaction_step;
use crate::exec::durable::model_step::StepFailure;
use crate::exec::state::Exec;
use crate::retry::Failed;
use crate::retry::session::Run;
use crate::storm::Refusal;

impl Runtime {
    /// What a context overflow comes to: a shorter conversation for the same turn, a cap that
    /// forbids the call it needs, or the overflow stands (with the reason no compaction helped,
    /// when there is a compactor).
    pub(super) async fn after_overflow(
        &self,
        run: &mut Run<'_>,
        exec: &mut Exec<'_>,
        failed: &Failed,
    ) -> AfterOverflow {
        let Some(compactor) = exec.function.compact.or(self.compactor.as_deref()) else {
            return AfterOverflow::Stands(None);
        };
        let name = compactor.name();
        if exec.compactions >= self.max_compactions {
            let times = match exec.compactions {
                0 => {
                    return AfterOverflow::Stands(Some(
                        "not compacted: `RuntimeBuilder::with_max_compactions` is 0".to_owned(),
                    ));
                }
                1 => "once".to_owned(),
                n => format!("{n} times"),
            };
            return AfterOverflow::Stands(Some(format!(
                "not compacted again: `{name}` compacted this exec's conversation {times} already, the most `RuntimeBuilder::with_max_compactions` allows"
            )));
        }
        if let Some(refusal) = run.state.budget.extra_call_refusal() {
            return AfterOverflow::Refused(refusal);
        }
        let (before, call) = (exec.history.len(), run.state.budget.calls());
        let history = std::mem::take(&mut exec.history);
        let compacted = match run.state.durable.clone() {
            None => compact::compact(run, compactor, history, &failed.error).await,
            // Boxed: out of the future of every exec that is not durable.
            Some(scope) => match Box::pin(compaction_step(&scope, run, compactor, history, &failed.error)).await {
                Ok(compacted) => compacted,
                Err(failure) => return AfterOverflow::StepFailed(failure),
            },
        };
        let history = match compacted {
            Ok(history) => history,
            Err(why) => return AfterOverflow::Stands(Some(format!("`{name}` could not compact it: {why}"))),
        };
        let after = history.len();
        exec.history = history;
        exec.compactions += 1;
        // About the call that overflowed, which the compactor's own calls may follow.
        run.state.record(Decision {
            layer: Layer::Exec,
            attempt: run.state.attempt,
            call,
            error: failed.error.clone(),
            usage: failed.usage,
            verdict: Verdict::Compacted,
            reason: Why::Compacted { compactor: name.to_owned(), before, after },
            delay: None,
            at: run.state.budget.elapsed(),
            exec_id: 0,
            function: None,
            target: None,
        });
        if let Some(trace) = &exec.trace {
            trace.compaction(name, before, after);
        }
        // The compactor's own calls may have used up what was left.
        match run.state.budget.extra_call_refusal() {
            Some(refusal) => AfterOverflow::Refused(refusal),
            None => AfterOverflow::Compacted(format!("compacted {before} → {after} messages by `{name}`")),
        }
    }
}

/// What a context overflow came to.
pub(super) enum AfterOverflow {
    /// The conversation is shorter: make the turn again at once. In words, for the attempt.
    Compacted(String),
    /// A cap forbids the call the compaction or the turn after it needs.
    Refused(Refusal),
    /// The overflow ends the exec; why no compaction helped, when a compactor was set.
    Stands(Option<String>),
    /// The compaction's durable step could not be taken (a replay mismatch, or the journal failed).
    StepFailed(StepFailure),
}
