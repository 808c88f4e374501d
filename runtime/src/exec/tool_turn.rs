//! Running the calls of one model turn: at most so many, so many at once, each result bounded.

use futures_util::StreamExt as _;
use futures_util::stream::FuturesUnordered;
use tracing::Instrument as _;

use crate::message::{AssistantMessage, ContentBlock};
use crate::observe::trace::RunTrace;
use crate::stream::tap::Tap;
use crate::tool::{ToolError, ToolOutcome, Toolbox};
use crate::util::cut::cut;

use crate::durable::Scope;
use crate::exec::durable::model_step::StepFailure;
use crate::exec::durable::tool_steps::{Call, run_in_order};
use crate::exec::tool_call::{idempotency_key, record_tool_error, tool_span};

impl Toolbox {
    /// Runs every tool call ([`ContentBlock::ToolUse`]) of one assistant turn and returns their
    /// outcomes in call order, one per call (other blocks are skipped; no calls, no outcomes).
    ///
    /// The calls run **concurrently** (the model asked for them in one turn, so none depends on
    /// another's result), at most [`max_concurrent_calls`](Toolbox::max_concurrent_calls) at a
    /// time, each further one starting in call order as one finishes; each outcome is still in
    /// the position of its call. Only the first [`max_calls_per_turn`](Toolbox::max_calls_per_turn)
    /// calls run: each one past them is answered with an error saying so. Every failure is an
    /// outcome with `is_error: true`, never an `Err` and never a retry: see [`Toolbox::call`] for
    /// the texts. Every text is cut to [`max_result_bytes`](Toolbox::max_result_bytes). No call
    /// waits longer than its timeout ([`Toolbox::timeout_of`]), so a turn waits at most that
    /// times the rounds of concurrent calls it takes.
    pub async fn run_calls(&self, message: &AssistantMessage) -> Vec<ToolOutcome> {
        self.run_calls_traced(message, None).await
    }

    /// [`Toolbox::run_calls`], writing to `trace` (when there is one) a `tool_call` event for
    /// every call, in call order, before any runs, then a `tool_result` event for each as soon as
    /// it finishes (for the calls that do not run, at once).
    ///
    /// Each call's idempotency key ([`ToolContext`](crate::tool::ToolContext)) is this turn's (fresh on
    /// every call of this method) and the call's id: use [`Toolbox::run_calls_keyed`] to run a
    /// turn again with the same keys.
    pub async fn run_calls_traced(&self, message: &AssistantMessage, trace: Option<&RunTrace>) -> Vec<ToolOutcome> {
        let turn = format!("turn-{:016x}", fastrand::u64(..));
        self.run_calls_keyed(message, trace, &turn).await
    }

    /// [`Toolbox::run_calls_traced`] with the idempotency keys of `turn`: each call's key is
    /// `{turn}/{call id}` (a call id longer than 64 bytes, or with other characters than ASCII
    /// letters, digits, `_` and `-`, is written as `h` and a 64-bit hash of it). The exec names
    /// its turns `{run id}/{tool turn number}`: the keys are the same every time that turn's calls
    /// are run, and differ from every other turn's.
    pub async fn run_calls_keyed(
        &self,
        message: &AssistantMessage,
        trace: Option<&RunTrace>,
        turn: &str,
    ) -> Vec<ToolOutcome> {
        // Outside a durable scope nothing can fail.
        self.run_calls_observed(message, trace, None, turn, None)
            .await
            .map(|(outcomes, _)| outcomes)
            .unwrap_or_default()
    }

    /// [`Toolbox::run_calls_keyed`], showing a streamed exec's `tap` each call before any runs and
    /// each outcome as it comes, as the trace sees them; in a `durable` run, each call a step, one
    /// at a time (with the time the replayed calls took before a restart).
    pub(crate) async fn run_calls_observed(
        &self,
        message: &AssistantMessage,
        trace: Option<&RunTrace>,
        tap: Option<&Tap>,
        turn: &str,
        durable: Option<&Scope>,
    ) -> Result<(Vec<ToolOutcome>, std::time::Duration), StepFailure> {
        let calls: Vec<Call<'_>> = message
            .content
            .iter()
            .filter_map(|block| match block {
                ContentBlock::ToolUse { id, name, input } => Some((id.as_str(), name.as_str(), input)),
                _ => None,
            })
            .collect();
        if let Some(trace) = trace {
            for (id, name, input) in &calls {
                trace.tool_call(id, name, input);
            }
        }
        if let Some(tap) = tap {
            for (id, name, input) in &calls {
                tap.tool_call(id, name, input);
            }
        }
        let ran = calls.len().min(self.max_calls_per_turn());
        let (mut outcomes, replayed) = match durable {
            None => (self.run_concurrently(&calls[..ran], trace, tap, turn).await, std::time::Duration::ZERO),
            // Boxed: out of the future of every exec that is not durable.
            Some(scope) => Box::pin(run_in_order(self, scope, &calls[..ran], trace, tap, turn)).await?,
        };
        let refused = ToolError::new(format!(
            "not run: this turn asked for {} tool calls and a turn runs at most {ran}, the first {ran}; \
             ask for at most {ran} calls per turn, the most useful first",
            calls.len()
        ));
        for &call in &calls[ran..] {
            outcomes.push(self.outcome(call, Err(refused.clone()), trace, tap));
        }
        Ok((outcomes, replayed))
    }

    /// The outcomes of `calls`, run concurrently (at most so many at once), in call order.
    async fn run_concurrently(
        &self,
        calls: &[Call<'_>],
        trace: Option<&RunTrace>,
        tap: Option<&Tap>,
        turn: &str,
    ) -> Vec<ToolOutcome> {
        let mut runs = calls.iter().enumerate().map(|(index, &call)| async move {
            let span = tool_span(call.1, call.0);
            let key = idempotency_key(turn, call.0);
            let result = self.call_with_key(call.1, call.2.clone(), call.0, &key).instrument(span.clone()).await;
            if result.is_err() {
                record_tool_error(&span);
            }
            (index, self.outcome(call, result, trace, tap))
        });
        let mut outcomes = Vec::with_capacity(calls.len());
        let mut running: FuturesUnordered<_> = runs.by_ref().take(self.max_concurrent_calls()).collect();
        while let Some(done) = running.next().await {
            outcomes.push(done);
            running.extend(runs.next());
        }
        outcomes.sort_unstable_by_key(|&(index, _)| index);
        outcomes.into_iter().map(|(_, outcome)| outcome).collect()
    }

    /// The outcome of `call`: its result cut to the bound, traced.
    pub(crate) fn outcome(
        &self,
        (id, name, input): Call<'_>,
        result: Result<String, ToolError>,
        trace: Option<&RunTrace>,
        tap: Option<&Tap>,
    ) -> ToolOutcome {
        let (content, is_error) = match result {
            Ok(text) => (text, false),
            Err(error) => (error.into_message(), true),
        };
        let content = self.cut_result(content);
        if let Some(trace) = trace {
            trace.tool_result(id, name, is_error, &content);
        }
        let outcome =
            ToolOutcome { call_id: id.to_owned(), tool: name.to_owned(), input: input.clone(), content, is_error };
        if let Some(tap) = tap {
            tap.tool_result(&outcome);
        }
        outcome
    }
}

impl Toolbox {
    /// A result's text cut to [`Toolbox::max_result_bytes`], saying how much was cut.
    pub(crate) fn cut_result(&self, content: String) -> String {
        let total = content.len();
        cut(content, self.max_result_bytes(), total, char::len_utf8, |cut, total| {
            format!("\n[the tool result was cut here: {cut} of its {total} bytes are not shown]")
        })
    }
}
