//! Context compaction (docs/design.md §12): what an exec does when its conversation no longer fits
//! the model's context window.
//!
//! Neither layer retries a context overflow as it is: the same conversation overflows again. With a
//! [`Compactor`] (set by [`RuntimeBuilder::with_compactor`], or by `compact = PATH` on
//! `#[agentic_function]`), layer 2 hands the conversation to it, and when it returns a shorter one
//! makes the same turn again with it, at once (nothing to wait for): at most
//! [`RuntimeBuilder::with_max_compactions`] times per exec. Each compaction is a decision of the exec layer
//! (verdict `compacted`, "context overflow: compacted 42 → 9 messages by `drop_oldest`") and a
//! `compaction` line of the JSONL trace. A compactor that cannot shrink the conversation, or an
//! overflow after the last compaction allowed, ends the exec with kind `context_overflow` as
//! without one, the attempt saying why. The retried call counts against the exec's `max_calls`
//! and `budget_ms`, and so does every call a compactor makes ([`Overflow::ask`]).
//!
//! Two compactors come with the runtime: [`DropOldest`] drops the oldest turns, and [`Summarize`]
//! replaces them with a summary the model writes.
//!
//! [`RuntimeBuilder::with_compactor`]: crate::exec::RuntimeBuilder::with_compactor
//! [`RuntimeBuilder::with_max_compactions`]: crate::exec::RuntimeBuilder::with_max_compactions

mod apply;
mod ask;
mod drop_oldest;
mod summarize;
mod turns;

use std::fmt;
use std::future::Future;
use std::pin::Pin;

pub(crate) use apply::{checked, compact};
pub use drop_oldest::DropOldest;
pub use summarize::Summarize;

use crate::message::Message;

/// How many times one exec may compact its conversation, unless
/// [`RuntimeBuilder::with_max_compactions`](crate::exec::RuntimeBuilder::with_max_compactions) says otherwise: once.
/// A conversation that overflows again right after a compaction is usually one the compactor
/// cannot keep up with (a tool that returns more than the window holds), and each compaction loses
/// part of the conversation; a second one is a choice to make knowingly.
pub const DEFAULT_MAX_COMPACTIONS: u32 = 1;

/// What a [`Compactor`] returns: the shorter conversation, or why it cannot make one.
pub type CompactFuture<'a> = Pin<Box<dyn Future<Output = Result<Vec<Message>, String>> + Send + 'a>>;

/// Makes a conversation that overflowed the model's context shorter.
///
/// The conversation starts with the user's prompt and alternates: each model turn (an assistant
/// message that asked for tools, or an answer the exec rejected) is followed by the user message
/// that answered it (the tool results, or the feedback). The system instruction is not part of it:
/// it is sent with every call and kept. Return a conversation that ends as the one given ends (the
/// model answers its last message), keeps each tool call with its result, and is shorter; or
/// `Err(why)` when there is nothing left to shorten, which ends the exec with kind
/// `context_overflow` and your words in its error.
///
/// # Examples
///
/// A compactor that keeps only the prompt and the last turn:
///
/// ```
/// use agentic_runtime::message::Message;
/// use agentic_runtime::compact::{CompactFuture, Compactor, Overflow};
///
/// struct LastTurnOnly;
///
/// impl Compactor for LastTurnOnly {
///     fn name(&self) -> &str {
///         "last_turn_only"
///     }
///
///     fn compact<'a>(&'a self, mut overflow: Overflow<'a>) -> CompactFuture<'a> {
///         Box::pin(async move {
///             let mut messages = overflow.take_messages();
///             if messages.len() <= 3 {
///                 return Err("only the prompt and the last turn are left".to_owned());
///             }
///             let last_turn = messages.split_off(messages.len() - 2);
///             messages.truncate(1);
///             messages.extend(last_turn);
///             Ok(messages)
///         })
///     }
/// }
/// ```
pub trait Compactor: Send + Sync {
    /// A short name for decisions, errors and traces, e.g. `"drop_oldest"`.
    fn name(&self) -> &str;

    /// The shorter conversation, or why there is none.
    fn compact<'a>(&'a self, overflow: Overflow<'a>) -> CompactFuture<'a>;
}

/// What a [`Compactor`] is given: the conversation that overflowed, the error that said so, and the
/// exec's model, to ask for a summary.
pub struct Overflow<'a> {
    messages: Vec<Message>,
    error: &'a str,
    model: &'a mut (dyn AskModel + Send + 'a),
}

impl fmt::Debug for Overflow<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Overflow")
            .field("messages", &self.messages.len())
            .field("error", &self.error)
            .finish_non_exhaustive()
    }
}

impl<'a> Overflow<'a> {
    pub(crate) fn new(messages: Vec<Message>, error: &'a str, model: &'a mut (dyn AskModel + Send + 'a)) -> Self {
        Self { messages, error, model }
    }

    /// The conversation that overflowed (left empty by [`Overflow::take_messages`]).
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// Moves the conversation out, to shorten it without copying.
    pub fn take_messages(&mut self) -> Vec<Message> {
        std::mem::take(&mut self.messages)
    }

    /// The overflow as the provider said it, `"<Kind>: <text>"`.
    pub fn error(&self) -> &str {
        self.error
    }

    /// Asks the exec's model `prompt` (one user message, with the exec's system instruction and no
    /// tools) and returns its answer's text. The call runs through both layers with the exec's
    /// policy, and counts against the same `max_calls` and `budget_ms`: a transient failure is
    /// retried, its decisions join the exec's.
    ///
    /// # Errors
    ///
    /// Why no answer came: the layers gave up (the last failure, e.g. a context overflow of this
    /// call too), a cap forbade the call, or the model asked for tools.
    pub async fn ask(&mut self, prompt: impl Into<String>) -> Result<String, String> {
        self.model.ask(vec![Message::user(prompt)]).await
    }
}

/// A model call through both layers of the exec that is compacting (implemented by its run).
pub(crate) trait AskModel {
    /// The answer's text to `messages`, or why there is none.
    fn ask(&mut self, messages: Vec<Message>) -> Pin<Box<dyn Future<Output = Result<String, String>> + Send + '_>>;
}
