//! Layer 1: `AgentSession` owns the history and retries transient model errors (DESIGN.md section 3).

use std::time::Duration;

use crate::agent;
use crate::backoff::{Rng, Schedule};
use crate::budget::Budget;
use crate::classify::{is_retryable_error, retry_hint};
use crate::error::ModelError;
use crate::message::{AssistantMessage, Message};
use crate::policy::RetryPolicy;
use crate::provider::{Provider, Request};
use crate::report::{Decision, Layer, Verdict};
use crate::runtime::{Observer, Runtime};

/// The state of one exec shared by both layers: the budget, the jitter RNG and the decisions so far.
pub(crate) struct Run<'a> {
    pub(crate) provider: &'a dyn Provider,
    pub(crate) policy: &'a RetryPolicy,
    pub(crate) system: Option<&'a str>,
    pub(crate) function: Option<&'static str>,
    pub(crate) budget: Budget,
    pub(crate) rng: Rng,
    pub(crate) decisions: Vec<Decision>,
    pub(crate) attempt: u32,
    pub(crate) observer: Option<&'a Observer>,
}

impl Run<'_> {
    /// Records a decision (failure path only) and reports it to `tracing`.
    pub(crate) fn decide(
        &mut self,
        layer: Layer,
        error: String,
        verdict: Verdict,
        reason: String,
        delay: Option<Duration>,
    ) {
        let decision = Decision {
            layer,
            attempt: self.attempt,
            call: self.budget.calls(),
            error,
            verdict,
            reason,
            delay,
            at: self.budget.elapsed(),
        };
        let function = self.function.unwrap_or("exec");
        let delay_ms = delay.map(|delay| delay.as_millis() as u64);
        if verdict == Verdict::Retry {
            tracing::debug!(function, layer = layer.name(), call = decision.call, error = %decision.error,
                reason = %decision.reason, delay_ms, "model call failed; retrying");
        } else {
            tracing::warn!(function, layer = layer.name(), call = decision.call, error = %decision.error,
                verdict = verdict.name(), reason = %decision.reason, "model call failed");
        }
        if let Some(observer) = self.observer {
            observer(&decision);
        }
        self.decisions.push(decision);
    }
}

/// Runs layer 1 on `history` (whose last message is the prompt): calls the model, and while the
/// answer is a retryable error and retries and budget remain, removes it and calls again after the
/// backoff. The final message (answer or failure) is left at the end of `history`.
pub(crate) async fn run_layer(run: &mut Run<'_>, history: &mut Vec<Message>) -> Result<(), ModelError> {
    let mut schedule = Schedule::session(run.policy);
    let mut retry = 0u32;
    loop {
        let call = run.budget.start_call();
        let timeout = run.budget.call_timeout();
        let request = Request { system: run.system, messages: history, timeout, function: run.function, call };
        let message = agent::run(run.provider, &request, timeout).await?;
        let failed = message.is_error();
        history.push(Message::Assistant(message));
        if !failed {
            return Ok(());
        }
        let Some(Message::Assistant(message)) = history.last() else { unreachable!("just pushed") };
        let verdict = is_retryable_error(message);
        let hint = retry_hint(message.error_text(), message.error.as_ref());
        let error = message.failure_text();
        if !verdict.retryable {
            run.decide(Layer::Session, error, Verdict::GiveUp, verdict.reason.to_string(), None);
            return Ok(());
        }
        if retry >= run.policy.session_retries() {
            let reason = format!("{}; all {} session retries used", verdict.reason, run.policy.session_retries());
            run.decide(Layer::Session, error, Verdict::RetriesExhausted, reason, None);
            return Ok(());
        }
        let computed = schedule.delay(retry, &mut run.rng);
        let delay = match run.budget.plan_retry(computed, hint) {
            Ok(delay) => delay,
            Err(why) => {
                run.decide(Layer::Session, error, Verdict::Budget, why, None);
                return Ok(());
            }
        };
        run.decide(Layer::Session, error, Verdict::Retry, verdict.reason.to_string(), Some(delay));
        if matches!(history.last(), Some(Message::Assistant(_))) {
            history.pop();
        }
        tokio::time::sleep(delay).await;
        retry += 1;
    }
}

/// A conversation with layer 1 only: each [`AgentSession::run`] adds the prompt and the model's
/// final message to the history, retrying transient errors with the runtime's policy (its session
/// settings, `max_calls`, `timeout_ms`, `budget_ms` and `retry_after_cap_ms` apply per run).
///
/// # Examples
///
/// ```
/// use agentic_runtime::{Runtime, ScriptedProvider, Step};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let runtime = Runtime::new(ScriptedProvider::new([Step::error("overloaded"), Step::ok("hi")]));
/// let mut session = runtime.session();
/// let answer = session.run("hello").await.unwrap();
/// assert_eq!(answer.text_content(), "hi");
/// assert_eq!(session.history().len(), 2); // the prompt and the answer; the failure was removed
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct AgentSession {
    runtime: Runtime,
    history: Vec<Message>,
}

impl AgentSession {
    /// An empty session on `runtime`.
    pub fn new(runtime: Runtime) -> Self {
        Self { runtime, history: Vec::new() }
    }

    /// Sends `prompt` and returns the model's final message: the answer, or the failure that layer 1
    /// did not (or could no longer) retry. Only a programming error is returned as `Err`.
    ///
    /// Dropping the future at any point leaves no failed message in the history.
    pub async fn run(&mut self, prompt: impl Into<String>) -> Result<&AssistantMessage, ModelError> {
        self.history.push(Message::user(prompt));
        let policy = *self.runtime.policy();
        let mut run = self.runtime.start_run(&policy, None, None);
        run_layer(&mut run, &mut self.history).await?;
        match self.history.last() {
            Some(Message::Assistant(message)) => Ok(message),
            _ => unreachable!("run_layer leaves the final message last"),
        }
    }

    /// The conversation so far.
    pub fn history(&self) -> &[Message] {
        &self.history
    }

    /// Replaces the conversation (e.g. after compacting it).
    pub fn replace_messages(&mut self, messages: Vec<Message>) {
        self.history = messages;
    }
}
