//! One exec's model turns: each turn's attempts through layer 2, the tool turns between them, and
//! the answer or the error it ends with.

use tracing::{Instrument as _, Span};

use crate::answer::{ExecError, ExecErrorKind, Reply};
use crate::classify::{ExecAction, Reason};
use crate::decision::{Layer, Verdict, Why};
use crate::durable;
use crate::exec::Runtime;
use crate::exec::agent_fn::AgentFn;
use crate::exec::durable::model_step::{StepFailure, model_step};
use crate::exec::overflow::AfterOverflow;
use crate::exec::prompt::Prompt;
use crate::exec::request::Overrides;
use crate::exec::state::Exec;
use crate::exec::typed::Expected;
use crate::message::{AssistantMessage, ContentBlock, Message, StopReason, Usage};
use crate::observe::telemetry;
use crate::policy::backoff::Schedule;
use crate::provider::ModelError;
use crate::retry::session::{Run, run_layer};
use crate::retry::{Failed, Next, validate_policy};
use crate::spend::ledger::Ledger;
use crate::storm::Refusal;
use crate::stream::tap::Tap;
use crate::tool::{Toolbox, results_message};

impl Runtime {
    /// Records a failed exec in the journal, if the runtime has one: every failed exec ends here. A
    /// journal that cannot be written warns once and never fails the exec.
    fn journaled(&self, error: ExecError) -> ExecError {
        if let Some(journal) = &self.journal {
            let _ = journal.record_exec_error(&error);
        }
        error
    }

    /// An exec: its model turns, then the answer or the error (recorded in the journal). It runs as
    /// the agent function the attribute put in the prompt, else as the runtime's; a `policy` or
    /// `tools` of the request's own win over either's.
    pub(crate) async fn exec_attempts(
        &self,
        // Borrowed: a policy is about 300 bytes, and every exec's future would copy it in.
        overrides: Option<&Overrides>,
        tools: Option<&Toolbox>,
        prompt: impl Into<Prompt>,
        expected: Option<&Expected<'_>>,
        tap: Option<&Tap>,
    ) -> Result<Reply, ExecError> {
        // Converted here, in the exec's own future: nothing is done before it is first polled.
        let mut prompt = prompt.into();
        // The runtime's own function is borrowed, not copied, on the plain `exec`'s way; another is
        // boxed (one word of every exec's future: the attribute boxed it already).
        let own = match (prompt.take_function(), overrides) {
            (None, None) => None,
            (from_prompt, overrides) => {
                let mut function = from_prompt.unwrap_or_else(|| Box::new(self.function));
                // A function that sets no spend limits has the runtime's.
                if function.limits.is_none() {
                    function.limits = self.function.limits;
                }
                if let Some(overrides) = overrides {
                    overrides.apply(&mut function);
                }
                Some(function)
            }
        };
        let function = own.as_deref().unwrap_or(&self.function);
        // Not entered: the exec's calls, tools and decisions name it as their parent. (Entering it
        // would wrap this future, and moving it costs the success path more than the span.)
        let span = telemetry::exec_span(function.name, &*self.provider);
        self.judge_policy(function, &span)?;
        // The run and the history are built here, in the exec's own future: returned from a helper,
        // they were copied on every exec's way in (docs/benchmarks-history.md measured what that cost).
        // The prompt's own system instruction (over the function's doc comment) lives here too.
        let (text, own_system) = prompt.into_parts();
        let system = own_system.as_deref().or(function.doc);
        // The exec's own tools, else its function's (`tools = PATH`), else the runtime's.
        let made;
        let toolbox = match (tools, function.tools) {
            (Some(tools), _) => tools,
            (None, Some(make)) => match make() {
                Some(tools) => {
                    made = tools;
                    &made
                }
                None => return Err(self.journaled(ExecError::tools_unset(function.name))),
            },
            (None, None) => &self.tools,
        };
        let mut run = self.start_run(toolbox, &function.policy, system, function.name, span);
        run.schema = expected.map(|expected| &expected.schema);
        run.state.tap = tap;
        if !function.limits.is_none() {
            // Limits the runtime, the attribute or the compiler did not judge: a request's.
            if let Err(error) = function.limits.validate() {
                return Err(self.invalid_policy(function, &run.state.span, error));
            }
            let prices = self.prices();
            // A dollar limit needs every target's price, before the first call.
            if function.limits.max_cost_usd().is_some() {
                let names = self.target_names();
                let unpriced =
                    Ledger::unpriced(&function.limits, prices.map(|p| &**p), names.iter().map(String::as_str));
                if let Some(target) = unpriced {
                    return Err(self.invalid_policy(function, &run.state.span, super::builder::unpriced(target)));
                }
            }
            run.state.spend = Some(Box::new(Ledger::new(function.limits, prices.cloned())));
        }
        let mut exec = Exec {
            function,
            expected,
            // The prompt alone, and later each tool turn: the success path allocates the history once.
            history: vec![Message::user(text)],
            trace: self.trace.as_ref().map(|sink| sink.start_run(function.name)),
            toolbox,
            run_id: None,
            iterations: 0,
            attempts_made: 0,
            compactions: 0,
        };
        if let Some(scope) = durable::current() {
            let run_id = scope.next_run_id();
            // The jitter of a durable exec is its run's: a replay draws the waits it drew.
            run.state.rng = crate::policy::backoff::Rng::with_seed(crate::util::fnv::fnv1a(run_id.as_bytes()));
            exec.run_id = Some(run_id.into_boxed_str());
            run.state.durable = Some(scope);
        }
        // The ReAct loop: each model turn runs through both layers; a turn that asks for tools runs
        // them and feeds the results back, with no retry and no sleep, whatever the tools said.
        loop {
            // One model turn through layer 2: attempts until one gives an answer or asks for tools,
            // or the layer gives up. Its success path is this loop's own (a turn of its own would be
            // a future inside this one, and its answer moved out of it); a failed attempt is handled
            // in a box, as the layers' failure paths are, so that this future stays small.
            let mut failures = Failures::default();
            let tools = loop {
                run.state.attempt = failures.index + 1;
                exec.attempts_made += 1;
                let message = match &run.state.durable {
                    None => run_layer(&mut run, &exec.history).await,
                    Some(scope) => {
                        let scope = scope.clone();
                        let (turn, attempt) = (exec.iterations + 1, failures.index + 1);
                        // Boxed: out of the future of every exec that is not durable.
                        match Box::pin(model_step(&scope, &mut run, &exec.history, turn, attempt)).await {
                            Ok(message) => message,
                            Err(failure) => return Err(self.journaled(step_failed(&mut run, failure))),
                        }
                    }
                };
                match judge(&mut run, &mut exec, message) {
                    // The answer is returned from here: not moved out of the turn and again.
                    // The call that answered paid for retries in layer 1, as it came.
                    Attempt::Answer(reply) => return Ok(answered(&mut run, &exec, reply)),
                    Attempt::Tools(message) => break message,
                    failed => {
                        let after = self.after_failure(&mut run, &mut exec, &mut failures, failed);
                        if let Err(error) = Box::pin(after).await {
                            return Err(self.journaled(error));
                        }
                    }
                }
            };
            if let Err(error) = self.tool_turn(&mut run, &mut exec, tools).await {
                return Err(self.journaled(error));
            }
        }
    }

    /// A tool turn: the model asked for `tools`; their results join the history (whatever the
    /// tools said: no retry, no sleep), unless the exec has had `max_iterations` tool turns.
    async fn tool_turn<'a>(
        &self,
        run: &mut Run<'a>,
        exec: &mut Exec<'a>,
        tools: AssistantMessage,
    ) -> Result<(), ExecError> {
        // The tools' time counts, from here if nothing read the clock before.
        run.state.budget.start_clock();
        if exec.iterations >= self.max_iterations {
            return Err(self.too_many_iterations(run, exec.iterations));
        }
        if let Some(ledger) = &mut run.state.spend {
            let calls = tools.content.iter().filter(|block| matches!(block, ContentBlock::ToolUse { .. })).count();
            if let Err(refusal) = ledger.tool_calls(calls as u64) {
                return Err(self.usage_limit_reached(run, refusal));
            }
            run.state.note_spent();
        }
        exec.iterations += 1;
        // The turn's keys: the same whenever these calls run, unlike any other turn's.
        let iteration = exec.iterations;
        let turn = format!("{}/{iteration}", exec.run_id());
        let outcomes = exec.toolbox.run_calls_observed(
            &tools,
            exec.trace.as_ref(),
            run.state.tap,
            &turn,
            run.state.durable.as_deref(),
        );
        let (outcomes, replayed) = match outcomes.instrument(run.state.span.clone()).await {
            Ok(done) => done,
            Err(failure) => return Err(step_failed(run, failure)),
        };
        // The tools' time before a restart counts, as it did in the process that ran them.
        if !replayed.is_zero() {
            run.state.budget.replayed(0, replayed);
        }
        exec.history.push(Message::Assistant(tools));
        exec.history.push(results_message(outcomes));
        // A source's list may have changed (an MCP server's `list_changed`): the next turn offers it.
        // (The call that asked for the tools paid for retries, and told its breaker, as it came.)
        run.tools = exec.toolbox.specs();
        run.state.budget.start_turn();
        Ok(())
    }

    /// Judges an exec's policy: an invalid one is a programming error, recorded on the exec's
    /// `span` and in the journal.
    #[inline]
    fn judge_policy(&self, function: &AgentFn, span: &Span) -> Result<(), ExecError> {
        validate_policy(&function.policy).map_err(|error| self.invalid_policy(function, span, error))
    }

    /// The error of an exec whose policy or spend limits are invalid: a programming error,
    /// recorded on the exec's `span` and in the journal.
    #[cold]
    fn invalid_policy(&self, function: &AgentFn, span: &Span, error: crate::policy::PolicyError) -> ExecError {
        let error = ExecError::invalid_policy(function.name, error);
        telemetry::record_exec(span, || Usage::ZERO, || None, Some(error.kind().name()));
        self.journaled(error)
    }

    /// The error of an exec stopped before a tool turn that would pass its `max_tool_calls`.
    #[cold]
    fn usage_limit_reached(&self, run: &mut Run<'_>, refusal: Refusal) -> ExecError {
        let error = format!("UsageLimit: no tool was run: {refusal}");
        let why = Why::Refused(refusal.clone());
        run.state.decide(Layer::Exec, error.clone(), None, Verdict::Refused, why, None);
        fail(run, ExecErrorKind::UsageLimit, vec![error], Some(refusal), None)
    }

    /// The error of an exec whose model still asks for tools after `max_iterations` tool turns.
    fn too_many_iterations(&self, run: &mut Run<'_>, iterations: u32) -> ExecError {
        let limit = format!(
            "the model still asked for tools after {iterations} tool iterations (`max_iterations` is {}): no final answer",
            self.max_iterations
        );
        fail(run, ExecErrorKind::MaxIterations, vec![limit], None, None)
    }

    /// Layer 2 after a failed attempt of a model turn (`failures` so far): the programming error,
    /// the context overflow (compacted, or not), the decision and the backoff's sleep; `Err` when
    /// the turn, and the exec, end. A failed attempt is retried with the history as the turn began,
    /// plus any validator feedback (completed tool results are kept).
    async fn after_failure(
        &self,
        run: &mut Run<'_>,
        exec: &mut Exec<'_>,
        failures: &mut Failures,
        attempt: Attempt,
    ) -> Result<(), ExecError> {
        let attempts = &mut failures.attempts;
        let (failed, source) = match attempt {
            Attempt::Failed(failed, source) => (failed, source),
            Attempt::Raised(error) => {
                attempts.push(error.to_string());
                return Err(fail(run, ExecErrorKind::Programming, std::mem::take(attempts), None, Some(error)));
            }
            // Not failures: the turn ends with them.
            Attempt::Answer(_) | Attempt::Tools(_) => return Ok(()),
        };
        // The failure's time counts from here if its attempt took none the clock could see.
        run.state.budget.start_clock();
        // A rejected answer was an answer of the provider's: it paid for retries in layer 1.
        // With fallbacks, a failure that is the target's moves the exec to the next one at once: the
        // same attempt, no backoff (docs/design.md §10, "Fallback across targets").
        if let Some(position) = &mut run.position {
            let last = failures.index + 1 >= run.state.policy.max_retries();
            let because = position.reason_to_move(&run.state, &failed, source.as_ref(), last);
            // A streamed exec that may not replace what it showed does not move either.
            let may_call = run.state.budget.extra_call_refusal().is_none() && run.state.committed().is_none();
            if let Some(because) = because.filter(|_| may_call) {
                run.provider = position.move_on(&mut run.state, &failed.error, because);
                attempts.push(format!("{} (fallback → `{}`)", failed.error, position.name()));
                return Ok(());
            }
        }
        let mut note = None;
        if failed.action == ExecAction::ContextOverflow {
            match self.after_overflow(run, exec, &failed).await {
                AfterOverflow::Compacted(done) => {
                    attempts.push(format!("{} ({done})", failed.error));
                    return Ok(());
                }
                AfterOverflow::Stands(why) => note = why,
                AfterOverflow::StepFailed(failure) => return Err(step_failed(run, failure)),
                AfterOverflow::Refused(refusal) => {
                    attempts.push(failed.error.clone());
                    run.state.refused(failed.error, failed.usage, refusal.clone());
                    return Err(fail(run, ExecErrorKind::Refused, std::mem::take(attempts), Some(refusal), source));
                }
            }
        }
        attempts.push(match note {
            Some(note) => format!("{} ({note})", failed.error),
            None => failed.error.clone(),
        });
        let schedule = failures.schedule.get_or_insert_with(|| Schedule::exec(run.state.policy));
        let next = run.state.after_failed_attempt(schedule, failures.index, failed).await;
        match next {
            Next::Retry => {}
            Next::Stop(kind, stopped_by) => {
                return Err(fail(run, kind, std::mem::take(attempts), stopped_by, source));
            }
        }
        failures.index += 1;
        Ok(())
    }
}

/// The failed attempts of one model turn so far.
#[derive(Default)]
struct Failures {
    /// Each failed attempt, in words (for the error).
    attempts: Vec<String>,
    /// Layer 2's backoff, made at the first failure: a turn whose first attempt answers needs none.
    schedule: Option<Schedule>,
    /// The attempt being made, from 0.
    index: u32,
}

/// The judge of one attempt: what its final message (or the programming error that ended it) comes
/// to. A rejected answer adds itself and the validator's reason to the history, for the next
/// attempt to see. Synchronous on purpose: the exec's future holds no state of its own for it.
fn judge(run: &mut Run<'_>, exec: &mut Exec<'_>, message: Result<AssistantMessage, ModelError>) -> Attempt {
    let message = match message {
        Ok(message) => message,
        Err(error) => return Attempt::Raised(error),
    };
    if message.is_error() {
        let (failed, source) = Failed::of_message(message, run.state.judged.take());
        return Attempt::Failed(failed, source);
    }
    if message.stop_reason == StopReason::ToolUse && message.has_tool_calls() {
        if let Some(tap) = run.state.tap {
            tap.accept();
        }
        return Attempt::Tools(message);
    }
    let (stop_reason, usage) = (message.stop_reason, message.usage);
    // The exec's token counts move into the reply (and back, if the validator rejects it).
    let totals = run.state.usage.take().map(|mut totals| {
        totals.answer = usage;
        totals
    });
    let reply = Reply::new(
        message.into_text(),
        stop_reason,
        run.state.budget.calls(),
        exec.attempts_made,
        run.state.budget.elapsed(),
    )
    .with_iterations(exec.iterations)
    .with_usage(totals)
    .with_exec_id(run.state.exec_id);
    let reply = match &run.position {
        None => reply,
        Some(position) => reply.with_target(position.target_name()),
    };
    // A typed answer must be the JSON asked for first; the validator then says what a schema cannot.
    let unfit = exec.expected.and_then(|expected| expected.judge(reply.text(), stop_reason));
    let rejection = match unfit {
        Some(unfit) => (unfit.why, unfit.feedback, unfit.rule),
        None => match exec.function.validate.and_then(|validate| validate(&reply).err()) {
            None => {
                if let Some(tap) = run.state.tap {
                    tap.accept();
                }
                return Attempt::Answer(reply);
            }
            Some(reason) => {
                let feedback = format!("Your previous reply was rejected: {reason}. Answer again, fixing that.");
                (reason, feedback, Reason::Rejected)
            }
        },
    };
    reject(run, exec, reply, usage, rejection)
}

/// A rejected answer: it stays in the history with the feedback after it, for the next attempt to
/// see; its tokens count as spent on a failed attempt.
fn reject(
    run: &mut Run<'_>,
    exec: &mut Exec<'_>,
    mut reply: Reply,
    usage: Option<crate::message::Usage>,
    (why, feedback, rule): (String, String, Reason),
) -> Attempt {
    run.state.usage = reply.take_usage();
    if let Some(usage) = usage {
        run.state.count_failed(usage);
    }
    exec.history.push(Message::Assistant(AssistantMessage::text(reply.into_text())));
    exec.history.push(Message::user(feedback));
    Attempt::Failed(Failed::rejected(&why, rule).with_usage(usage), None)
}

/// What one attempt of a turn came to.
enum Attempt {
    /// The final answer, accepted by the validator.
    Answer(Reply),
    /// The model asks for tools.
    Tools(AssistantMessage),
    /// A failed attempt for layer 2 to judge, with the model's typed error if there was one.
    Failed(Failed, Option<ModelError>),
    /// A programming error: returned at once, unchanged.
    Raised(ModelError),
}

/// The exec's answer: its trace's last line, its span's outcome and the exec's decisions.
#[inline]
fn answered(run: &mut Run<'_>, exec: &Exec<'_>, mut reply: Reply) -> Reply {
    if let Some(trace) = &exec.trace {
        trace.agent_finish(reply.text(), exec.iterations);
    }
    telemetry::record_exec(&run.state.span, || reply.total_usage(), || reply.target(), None);
    reply.take_decisions(&mut run.state.decisions);
    reply
}

/// The error of an exec whose durable step could not be taken: a replay that does not match its
/// record, or a journal that failed (docs/design.md §24).
#[cold]
fn step_failed(run: &mut Run<'_>, failure: StepFailure) -> ExecError {
    let kind = match failure {
        StepFailure::Mismatch(_) => ExecErrorKind::ReplayMismatch,
        StepFailure::Log(_) => ExecErrorKind::Programming,
    };
    fail(run, kind, vec![failure.into_text()], None, None)
}

/// The exec's error: its kind, attempts and cause, with the decisions and counts of `run`.
fn fail(
    run: &mut Run<'_>,
    kind: ExecErrorKind,
    attempts: Vec<String>,
    stopped_by: Option<Refusal>,
    source: Option<ModelError>,
) -> ExecError {
    let state = &mut run.state;
    let decisions = std::mem::take(&mut state.decisions);
    let (calls, elapsed) = (state.budget.calls(), state.budget.elapsed());
    let error = ExecError::new(kind, state.function, attempts, decisions, calls, elapsed, stopped_by, source)
        .with_usage(state.usage.take())
        .with_exec_id(state.exec_id)
        .with_target(run.position.map(|position| position.target_name()));
    telemetry::record_exec(&state.span, || error.usage(), || error.target(), Some(error.kind().name()));
    // The spend limit that stopped it, for whoever watches the traces (docs/design.md §23).
    if let Some(Refusal::UsageLimit { limit, .. }) = error.refusal() {
        state.span.record("agentic.limit", limit.name());
    }
    error
}
