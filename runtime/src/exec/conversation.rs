//! [`Conversation`]: a conversation with history whose runs go through layer 1 only.

use crate::error::ModelError;
use crate::exec::Runtime;
use crate::message::{AssistantMessage, Message};
use crate::retry::session::run_layer;

impl Runtime {
    /// A conversation with layer 1 only.
    pub fn conversation(&self) -> Conversation {
        Conversation::new(self.clone())
    }
}

/// A conversation with layer 1 only: each [`Conversation::run`] adds the prompt and the model's
/// final message to the history, retrying transient errors with the runtime's policy (its session
/// settings, `max_calls`, `timeout_ms`, `budget_ms` and `retry_after_cap_ms` apply per run).
///
/// # Examples
///
/// ```
/// use agentic_runtime::{Runtime, Scripted, ScriptedProvider};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let runtime = Runtime::new(ScriptedProvider::new([Scripted::error("overloaded"), Scripted::ok("hi")]));
/// let mut conversation = runtime.conversation();
/// let answer = conversation.run("hello").await.unwrap();
/// assert_eq!(answer.text_content(), "hi");
/// assert_eq!(conversation.history().len(), 2); // the prompt and the answer; the failure was removed
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Conversation {
    runtime: Runtime,
    history: Vec<Message>,
}

impl Conversation {
    /// An empty conversation on `runtime`.
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
        let mut run = self.runtime.start_run(&self.runtime.tools, &policy, None, None, tracing::Span::none());
        // An answer paid for retries in layer 1, as an exec's do.
        let message = run_layer(&mut run, &self.history).await?;
        self.history.push(Message::Assistant(message));
        Ok(self.history.last().and_then(Message::as_assistant).expect("the message was just pushed"))
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
