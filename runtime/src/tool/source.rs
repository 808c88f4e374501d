//! Tools that come from elsewhere: a [`ToolSource`] offers a list that may change while the
//! toolbox lives (an MCP server's, docs/design.md §13), and every call carries its [`ToolContext`].

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::{ToolFuture, ToolSpec};

/// A set of tools kept somewhere else, whose list may change: an MCP server's tools (the
/// `agentic-mcp` crate's `McpToolbox`), a plugin registry's. Add one to a toolbox with
/// [`Toolbox::with_source`](super::Toolbox::with_source).
///
/// The toolbox asks [`ToolSource::specs`] for the list at the start of every model turn, so a
/// change shows in the next request; it checks a call's arguments against the spec (as for its own
/// tools) before [`ToolSource::call`]. A name the toolbox's own tools or an earlier source already
/// have is not offered again: the first one wins.
pub trait ToolSource: Send + Sync + 'static {
    /// What the source is called in messages for the model and in errors, e.g. ``MCP server
    /// `files` ``.
    fn name(&self) -> &str;

    /// The tools it offers now. Called at the start of every model turn: return a shared snapshot,
    /// not a list built on each call.
    fn specs(&self) -> Arc<[ToolSpec]>;

    /// Runs the tool `name` (one of [`ToolSource::specs`]) on `input` (a JSON object that matched
    /// its schema), within `context.timeout()`.
    ///
    /// The source owns the timeout: it ends the call by then with its own error (an MCP source
    /// also tells the server the call is cancelled). The toolbox drops a call still running
    /// [`SOURCE_TIMEOUT_GRACE`] after the timeout, with the same error it gives its own tools.
    fn call<'a>(&'a self, name: &'a str, input: Value, context: ToolContext) -> ToolFuture<'a>;
}

/// How long past a call's timeout the toolbox waits for a [`ToolSource`] to end the call itself
/// (and, for an MCP server, send the cancel) before it drops the call: 1 s. Long enough for a
/// cancel notification to be written to a pipe or a loopback socket; short enough that a source
/// that ignores its timeout barely stretches the turn.
pub const SOURCE_TIMEOUT_GRACE: Duration = Duration::from_secs(1);

/// What a tool is told about one call besides its arguments: the call's id, its idempotency key
/// and its time limit. Cloning copies two short strings.
///
/// The **idempotency key** names the call for the tool's side effects: the same in every attempt
/// to run the same call (the exec's run and the model's call id), different for every other call.
/// A tool that charges a card or sends a mail keeps the keys it has acted on and answers a
/// repeated one with the first result instead of acting twice.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// use agentic_runtime::tool::ToolContext;
///
/// let context = ToolContext::new("call_1", "run-5f1c9a2e40d3b718/call_1", Duration::from_secs(30));
/// assert_eq!(context.call_id(), "call_1");
/// assert_eq!(context.idempotency_key(), "run-5f1c9a2e40d3b718/call_1");
/// assert_eq!(context.timeout(), Duration::from_secs(30));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolContext {
    call_id: String,
    idempotency_key: String,
    timeout: Duration,
}

impl ToolContext {
    /// The context of the call `call_id` whose idempotency key is `idempotency_key`, to end
    /// within `timeout`.
    pub fn new(call_id: impl Into<String>, idempotency_key: impl Into<String>, timeout: Duration) -> Self {
        Self { call_id: call_id.into(), idempotency_key: idempotency_key.into(), timeout }
    }

    /// The model's id of the call (the [`ContentBlock::ToolUse`](crate::message::ContentBlock)'s).
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// The call's idempotency key: the same for every attempt to run this call, unique otherwise.
    pub fn idempotency_key(&self) -> &str {
        &self.idempotency_key
    }

    /// How long the call may run.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }
}
