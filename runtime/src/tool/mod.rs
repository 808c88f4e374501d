//! Tools the model can call: the [`Tool`] trait, plain async functions registered by name, the
//! [`Toolbox`] that offers them to the model and runs the calls of one assistant turn.
//!
//! A tool's failure is the model's business, never the retry layers': every way a call can go
//! wrong — the tool returned an error, the model named a tool that does not exist, sent arguments
//! that are not a JSON object or do not match the schema, the tool panicked or did not finish in
//! time — becomes a [`ContentBlock::ToolResult`] with `is_error: true` and a text the model can act
//! on. Nothing here is ever classified: a tool that fails with `"RateLimitError: 429"` is fed back
//! to the model at once, with no sleep.
//!
//! # Timeouts
//!
//! No call waits forever: each gets [`DEFAULT_TOOL_TIMEOUT`] (120 s) unless the toolbox
//! ([`Toolbox::with_timeout`]) or the tool itself ([`Tool::timeout`], [`Toolbox::with_fn_timeout`])
//! says otherwise; the tool's own value wins. A call still running when its time is up is
//! cancelled (its future is dropped) and answered with the error result
//! ``the tool `get_weather` timed out after 120 s``. Only a call that yields can be cut: see
//! [Blocking work](Tool#blocking-work).
//!
//! # Bounds
//!
//! A turn runs its first [`DEFAULT_MAX_CALLS_PER_TURN`] (128) calls, at most
//! [`DEFAULT_MAX_CONCURRENT_CALLS`] (10) at once, and answers each further one with an error
//! saying so: every call gets a result, in the model's order. The model reads at most
//! [`DEFAULT_MAX_RESULT_BYTES`] (256 KiB) of each result, cut with a note. The
//! [`Toolbox`] sets each ([`Toolbox::with_max_calls_per_turn`],
//! [`Toolbox::with_max_concurrent_calls`], [`Toolbox::with_max_result_bytes`]).
//!
//! # Examples
//!
//! ```
//! use agentic_runtime::message::{AssistantMessage, ContentBlock, StopReason};
//! use agentic_runtime::tool::{ToolError, Toolbox};
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let toolbox = Toolbox::new().with_fn(
//!     "get_weather",
//!     "The current weather in a city.",
//!     json!({
//!         "type": "object",
//!         "properties": {"city": {"type": "string"}},
//!         "required": ["city"],
//!     }),
//!     |input| async move {
//!         match input["city"].as_str() {
//!             Some("Atlantis") => Err(ToolError::new("no such city")),
//!             Some(city) => Ok(format!("Sunny in {city}")),
//!             None => unreachable!("the schema requires a string `city`"),
//!         }
//!     },
//! );
//!
//! // One assistant turn with two tool calls.
//! let mut turn = AssistantMessage::text("");
//! turn.content = vec![
//!     ContentBlock::ToolUse { id: "call_1".into(), name: "get_weather".into(), input: json!({"city": "Paris"}) },
//!     ContentBlock::ToolUse { id: "call_2".into(), name: "get_weather".into(), input: json!({"town": "Paris"}) },
//! ];
//! turn.stop_reason = StopReason::ToolUse;
//!
//! let outcomes = toolbox.run_calls(&turn).await;
//! assert_eq!((outcomes[0].content.as_str(), outcomes[0].is_error), ("Sunny in Paris", false));
//! assert!(outcomes[1].is_error);
//! assert_eq!(outcomes[1].content, "invalid arguments for `get_weather`: `city` is required");
//! # }
//! ```

mod delivery;
mod outcome;
mod schema;
mod source;
mod toolbox;
mod typed;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use delivery::Delivery;
pub use outcome::{ToolOutcome, results_message};
pub use schema::check_arguments;
pub use source::{SOURCE_TIMEOUT_GRACE, ToolContext, ToolSource};
pub use toolbox::Toolbox;

#[cfg(doc)]
use crate::message::ContentBlock;

/// How long one tool call may run when neither its tool ([`Tool::timeout`]) nor its toolbox
/// ([`Toolbox::with_timeout`]) sets a limit: 120 s.
///
/// Long enough for what agents' tools typically do — fetch a web page, query an API, run a build
/// or test step — and short enough that one stuck tool does not eat an agent platform's turn
/// (commonly about 5 minutes), leaving the model time to read the error and try something else.
/// It is the default of Claude Code's shell tool, and twice the MCP SDK's 60 s request timeout (a
/// tool here may do more than one request).
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(120);

/// How many tool calls of one model turn are run, unless [`Toolbox::with_max_calls_per_turn`] says
/// otherwise: 128. The calls past it are answered with an error result saying why, without running.
///
/// Agents' turns ask for one to a few dozen calls (a batch of file reads, a search fan-out); a turn
/// that asks for thousands is a runaway, and running them all holds every call and result in
/// memory at once. 128 is ten times a busy turn and OpenAI's cap on the tools one request may
/// offer, and keeps one turn's results (at most [`DEFAULT_MAX_RESULT_BYTES`] each) to 32 MiB.
pub const DEFAULT_MAX_CALLS_PER_TURN: usize = 128;

/// How many tool calls of one turn run at once, unless [`Toolbox::with_max_concurrent_calls`]
/// says otherwise: 10; the others wait for a free place, in call order.
///
/// Claude Code runs at most 10 tool calls at once (`CLAUDE_CODE_MAX_TOOL_USE_CONCURRENCY`); it is
/// enough to overlap the waits of a turn's fetches and searches, and few enough that a turn does
/// not open a hundred connections or processes at the same instant.
pub const DEFAULT_MAX_CONCURRENT_CALLS: usize = 10;

/// The most bytes of one tool result (or error text) sent to the model, unless
/// [`Toolbox::with_max_result_bytes`] says otherwise: 256 KiB. A longer one is cut on a char
/// boundary and ends with a note saying how much was cut.
///
/// 256 KiB is about 64 K tokens, half of a 128 K context: more would crowd out the conversation
/// (Claude Code cuts a shell tool's output at 30 000 characters and an MCP tool's at 25 000
/// tokens), and a 100 MiB result is never read by a model anyway.
pub const DEFAULT_MAX_RESULT_BYTES: usize = 256 * 1024;

/// What [`Tool::call`] returns: a boxed future of the tool's text result or its error.
pub type ToolFuture<'a> = Pin<Box<dyn Future<Output = Result<String, ToolError>> + Send + 'a>>;

/// A tool the model can call.
///
/// Most tools are plain async functions registered with [`Toolbox::with_fn`]; implement this
/// trait for a tool that carries state or computes its description.
///
/// # Examples
///
/// ```
/// use agentic_runtime::tool::{Tool, ToolError, ToolFuture, Toolbox};
/// use serde_json::{Value, json};
///
/// struct Clock {
///     now: &'static str,
/// }
///
/// impl Tool for Clock {
///     fn name(&self) -> &str {
///         "get_time"
///     }
///
///     fn description(&self) -> &str {
///         "The current time, as HH:MM."
///     }
///
///     fn parameters(&self) -> Value {
///         json!({"type": "object", "properties": {}})
///     }
///
///     fn call(&self, _input: Value) -> ToolFuture<'_> {
///         Box::pin(async move { Ok(self.now.to_owned()) })
///     }
/// }
///
/// let toolbox = Toolbox::new().with_tool(Clock { now: "12:00" });
/// assert_eq!(toolbox.names().collect::<Vec<_>>(), ["get_time"]);
/// ```
///
/// # Blocking work
///
/// A call's timeout cancels it by dropping its future, and a future can only be dropped when it
/// yields (awaits something that is not ready). A tool that blocks its thread instead (blocking
/// file or network I/O, `std::thread::sleep`, `std::process::Command::output`, a long computation)
/// does not yield until it is done: its timeout cannot fire meanwhile, and the other calls and
/// timers on that thread (all of them, on a current-thread runtime) wait too. This is inherent to
/// async Rust. So every call times out only if it yields: give blocking work to
/// `tokio::task::spawn_blocking` and await its handle, which yields, so the timeout holds. (The
/// blocking thread itself is not stopped: it runs to its end and its result is dropped.)
///
/// ```
/// use agentic_runtime::tool::{ToolError, Toolbox};
/// use serde_json::json;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let toolbox = Toolbox::new().with_fn(
///     "read_file",
///     "The text of a file.",
///     json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
///     |input| async move {
///         let path = input["path"].as_str().unwrap_or_default().to_owned();
///         // Blocking I/O on a blocking thread: this future yields while it runs.
///         let read = tokio::task::spawn_blocking(move || std::fs::read_to_string(path));
///         match read.await {
///             Ok(text) => text.map_err(ToolError::new),
///             Err(join_error) => Err(ToolError::new(join_error)),
///         }
///     },
/// );
/// let error = toolbox.call("read_file", json!({"path": "/no/such/file"})).await.unwrap_err();
/// assert!(error.message().contains("No such file"), "{error}");
/// # }
/// ```
pub trait Tool: Send + Sync + 'static {
    /// The name the model calls it by: 1 to 64 ASCII letters, digits, `_` or `-` (what both APIs
    /// accept).
    fn name(&self) -> &str;

    /// What the tool does, for the model.
    fn description(&self) -> &str;

    /// The JSON schema of the arguments: an object schema such as
    /// `{"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}`.
    ///
    /// The [`Toolbox`] reads it once, when the tool is registered, and checks every call's
    /// arguments against it before [`Tool::call`] (see [`check_arguments`] for what is checked).
    fn parameters(&self) -> Value;

    /// Runs the tool on `input` (a JSON object that matched the schema). The `Ok` text goes back
    /// to the model as the result; the `Err` text goes back as an error result (`is_error: true`),
    /// for the model to reason about. A panic is caught and becomes an error result too.
    ///
    /// The future must yield to be timed out (see [`Tool::timeout`]): run blocking work with
    /// `tokio::task::spawn_blocking`, not on the async thread (see
    /// [Blocking work](Tool#blocking-work)).
    fn call(&self, input: Value) -> ToolFuture<'_>;

    /// [`Tool::call`] with the call's [`ToolContext`]: its id, its idempotency key and its time
    /// limit. The toolbox calls this; the default ignores the context and calls [`Tool::call`].
    /// Override it in a tool with side effects, to refuse to act twice on one key.
    fn call_with(&self, input: Value, context: ToolContext) -> ToolFuture<'_> {
        let _ = context;
        self.call(input)
    }

    /// How long one call may run, when this tool needs its own limit; `None` (the default) uses
    /// the toolbox's ([`Toolbox::with_timeout`], else [`DEFAULT_TOOL_TIMEOUT`]). Read at every
    /// call.
    ///
    /// When the time is up the call's future is dropped, which cancels what it awaits; work it
    /// started elsewhere (a spawned task, a thread, a child process) keeps running unless dropping
    /// stops it. The model gets the error result ``the tool `name` timed out after 30 s``.
    /// `Duration::ZERO` gives the call a single poll: only a call that finishes without waiting
    /// succeeds.
    fn timeout(&self) -> Option<Duration> {
        None
    }

    /// Whether a call may run again when its process died while it ran, in a durable run
    /// ([`Delivery`]): [`Delivery::AtMostOnce`] unless the tool says otherwise (a
    /// [`Toolbox::with_delivery`] of the toolbox's wins).
    fn delivery(&self) -> Delivery {
        Delivery::AtMostOnce
    }
}

/// A tool's failure: its text goes back to the model as an error result, as it is.
///
/// It is never classified or retried by the runtime, whatever it says.
///
/// # Examples
///
/// ```
/// use agentic_runtime::tool::ToolError;
///
/// let error = ToolError::new("RateLimitError: 429");
/// assert_eq!(error.to_string(), "RateLimitError: 429");
/// let from_io = std::fs::read("/no/such/file").map_err(ToolError::new).unwrap_err();
/// assert!(!from_io.message().is_empty());
///
/// // `?` converts I/O and JSON errors, and boxed ones, inside a tool.
/// fn read_city(path: &str) -> Result<String, ToolError> {
///     let text = std::fs::read_to_string(path)?;
///     let value: serde_json::Value = serde_json::from_str(&text)?;
///     Ok(value["city"].to_string())
/// }
/// assert!(read_city("/no/such/file").unwrap_err().message().contains("No such file"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    message: String,
}

impl ToolError {
    /// An error with `message` (any displayable value: a string, an `io::Error`, ...).
    pub fn new(message: impl fmt::Display) -> Self {
        Self { message: message.to_string() }
    }

    /// The message, which the model reads as the tool's result.
    pub(crate) fn into_message(self) -> String {
        self.message
    }

    /// The text the model gets.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ToolError {}

impl From<String> for ToolError {
    fn from(message: String) -> Self {
        Self { message }
    }
}

impl From<&str> for ToolError {
    fn from(message: &str) -> Self {
        Self { message: message.to_owned() }
    }
}

/// `?` on a file or network operation inside a tool: the error's text goes to the model.
impl From<std::io::Error> for ToolError {
    fn from(error: std::io::Error) -> Self {
        Self::new(error)
    }
}

/// `?` on parsing or writing JSON inside a tool: the error's text (with its line and column) goes
/// to the model.
impl From<serde_json::Error> for ToolError {
    fn from(error: serde_json::Error) -> Self {
        Self::new(error)
    }
}

/// `?` on any boxed error inside a tool (`anyhow`'s and most libraries' convert to one).
impl From<Box<dyn std::error::Error + Send + Sync>> for ToolError {
    fn from(error: Box<dyn std::error::Error + Send + Sync>) -> Self {
        Self::new(error)
    }
}

/// What a request tells the model about one tool: its name, description and argument schema.
///
/// The providers send it in their wire format: OpenAI
/// `{"type": "function", "function": {"name", "description", "parameters"}}`, Anthropic
/// `{"name", "description", "input_schema"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolSpec {
    /// The tool's name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// The JSON schema of its arguments.
    pub parameters: Value,
}

impl ToolSpec {
    /// A spec. A `null` schema stands for "no arguments", `{"type": "object", "properties": {}}`
    /// (both APIs want an object schema).
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: Value) -> Self {
        let parameters =
            if parameters.is_null() { serde_json::json!({"type": "object", "properties": {}}) } else { parameters };
        Self { name: name.into(), description: description.into(), parameters }
    }
}
