//! Layer 1: `AgentSession` owns the history and retries transient model errors.

use crate::agent;
use crate::backoff::Schedule;
use crate::classify::{is_retryable_error, retry_hint};
use crate::error::{ModelError, TransportKind};
use crate::message::{AssistantMessage, Message};
use crate::provider::{CallBounds, Provider, Request};
use crate::report::{Layer, Verdict};
use crate::retry::RetryState;
use crate::runtime::Runtime;
use crate::tool::ToolSpec;

/// One exec's model-call context: the provider, the system instruction, and the retry state both
/// layers share (reached through `Deref`).
pub(crate) struct Run<'a> {
    pub(crate) provider: &'a dyn Provider,
    pub(crate) system: Option<&'a str>,
    pub(crate) tools: &'a [ToolSpec],
    pub(crate) state: RetryState<'a>,
}

impl<'a> std::ops::Deref for Run<'a> {
    type Target = RetryState<'a>;

    fn deref(&self) -> &Self::Target {
        &self.state
    }
}

impl std::ops::DerefMut for Run<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.state
    }
}

/// Runs layer 1 on `history` (whose last message is the prompt): calls the model, and while the
/// answer is a retryable error and retries and budget remain, removes it and calls again after the
/// backoff. The final message (answer or failure) is left at the end of `history`.
pub(crate) async fn run_layer(run: &mut Run<'_>, history: &mut Vec<Message>) -> Result<(), ModelError> {
    let mut schedule = Schedule::session(run.policy);
    let mut retry = 0u32;
    loop {
        run.wait_for_cooldown().await;
        let call = run.budget.start_call();
        let limit = run.budget.call_limit();
        let request = Request {
            system: run.system,
            messages: history,
            timeout: limit.map(|limit| limit.limit),
            function: run.function,
            call,
            tools: run.tools,
            bounds: CallBounds::of(run.policy),
        };
        let message = agent::run_within(run.provider, &request, limit).await?;
        let failed = message.is_error();
        history.push(Message::Assistant(message));
        if !failed {
            return Ok(());
        }
        // Boxed: the failure path's futures (the hint, the retry bucket, the sleep) would otherwise
        // make every call's future larger, success path included.
        if !Box::pin(retry_after_failed_call(run, history, &mut schedule, retry)).await {
            return Ok(());
        }
        retry += 1;
    }
}

/// Layer 1's rules after a failed call (its message last in `history`): records the decision and,
/// when the call is to be made again, removes the failed message and sleeps the backoff. Returns
/// whether to call again.
async fn retry_after_failed_call(
    run: &mut Run<'_>,
    history: &mut Vec<Message>,
    schedule: &mut Schedule,
    retry: u32,
) -> bool {
    let Some(Message::Assistant(message)) = history.last() else { unreachable!("the failed message is last") };
    let verdict = is_retryable_error(message);
    let hint = retry_hint(message.error_text(), message.error.as_ref());
    if let (Some(hint), Some(governor)) = (hint, run.governor) {
        // Every other call of this runtime to this provider waits for it too.
        governor.note_hint(hint).await;
    }
    let error = message.failure_text();
    if !verdict.retryable {
        run.decide(Layer::Session, error, Verdict::GiveUp, verdict.reason.to_string(), None);
        return false;
    }
    if retry >= run.policy.session_retries() {
        let reason = format!("{}; all {} session retries used", verdict.reason, run.policy.session_retries());
        run.decide(Layer::Session, error, Verdict::RetriesExhausted, reason, None);
        return false;
    }
    let computed = schedule.delay(retry, &mut run.rng);
    let timed_out = is_timeout(message);
    let delay = match run.permit_retry(computed, hint, timed_out).await {
        Ok(delay) => delay,
        Err(why) => {
            run.decide(Layer::Session, error, Verdict::Budget, why, None);
            return false;
        }
    };
    run.decide(Layer::Session, error, Verdict::Retry, verdict.reason.to_string(), Some(delay));
    if matches!(history.last(), Some(Message::Assistant(_))) {
        history.pop();
    }
    tokio::time::sleep(delay).await;
    true
}

/// True when the failure was the call's timeout (a retry after it costs more tokens).
pub(crate) fn is_timeout(message: &AssistantMessage) -> bool {
    message.error.as_ref().and_then(ModelError::transport_kind) == Some(TransportKind::Timeout)
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
