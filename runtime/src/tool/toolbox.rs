//! The toolbox: registered tools, their specs for requests, and the runner of one turn's calls.
//!
//! Long because its unit tests are, at its end: every way a call can fail, the
//! bounds of a turn and the timeouts, each on the paused clock.

use std::any::Any;
use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt as _;
use serde_json::Value;

use super::delivery::Delivery;
use super::schema::check_arguments;
use super::{
    DEFAULT_MAX_CALLS_PER_TURN, DEFAULT_MAX_CONCURRENT_CALLS, DEFAULT_MAX_RESULT_BYTES, DEFAULT_TOOL_TIMEOUT,
    SOURCE_TIMEOUT_GRACE, Tool, ToolContext, ToolError, ToolFuture, ToolSource, ToolSpec,
};
use crate::policy::rules::format_ms;
use crate::util::cut::shorten;

/// The tools offered to the model, by name. Cloning is cheap: clones share the tools.
///
/// Build it with [`Toolbox::with_fn`] (a plain async function) and [`Toolbox::with_tool`] (any
/// [`Tool`]); give [`Toolbox::specs`] to the request; run each assistant turn's calls with
/// [`Toolbox::run_calls`] and send [`results_message`](crate::tool::results_message) back. Every call has a timeout:
/// [`DEFAULT_TOOL_TIMEOUT`], or the toolbox's ([`Toolbox::with_timeout`]), or the tool's own
/// ([`Tool::timeout`], [`Toolbox::with_fn_timeout`]), which wins. One turn runs at most
/// [`DEFAULT_MAX_CALLS_PER_TURN`] calls ([`Toolbox::with_max_calls_per_turn`]),
/// [`DEFAULT_MAX_CONCURRENT_CALLS`] at once ([`Toolbox::with_max_concurrent_calls`]), and sends
/// the model at most [`DEFAULT_MAX_RESULT_BYTES`] of each result
/// ([`Toolbox::with_max_result_bytes`]).
///
/// # Examples
///
/// ```
/// use agentic_runtime::tool::{ToolError, Toolbox};
/// use serde_json::json;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let toolbox = Toolbox::new()
///     .with_fn("echo", "Repeats `text`.", json!({"type": "object", "properties": {"text": {"type": "string"}}}), |input| async move {
///         Ok(input["text"].as_str().unwrap_or_default().to_owned())
///     })
///     .with_fn("fail", "Always fails.", json!(null), |_| async { Err(ToolError::new("RateLimitError: 429")) });
/// assert_eq!(toolbox.specs().len(), 2);
/// assert_eq!(toolbox.call("echo", json!({"text": "hi"})).await, Ok("hi".to_owned()));
/// assert_eq!(toolbox.call("fail", json!({})).await.unwrap_err().message(), "RateLimitError: 429");
/// assert_eq!(
///     toolbox.call("nope", json!({})).await.unwrap_err().message(),
///     "unknown tool `nope`; the tools are `echo`, `fail`"
/// );
/// # }
/// ```
#[derive(Clone, Default)]
pub struct Toolbox {
    inner: Arc<Inner>,
}

#[derive(Clone)]
struct Inner {
    tools: Vec<Arc<dyn Tool>>,
    /// The specs, in registration order, read once from the tools.
    specs: Vec<ToolSpec>,
    /// Tools kept elsewhere, whose lists are read at every turn, after the toolbox's own.
    sources: Vec<Arc<dyn ToolSource>>,
    /// The limit of a call whose tool sets none.
    timeout: Duration,
    /// The most calls of one turn that run; the others are answered with an error.
    max_calls: usize,
    /// The most calls that run at once.
    max_concurrent: usize,
    /// The most bytes of a result sent to the model.
    max_result_bytes: usize,
    /// The tools whose [`Delivery`] the toolbox sets ([`Toolbox::with_delivery`]).
    deliveries: Vec<(String, Delivery)>,
}

impl Default for Inner {
    fn default() -> Self {
        Self {
            tools: Vec::new(),
            specs: Vec::new(),
            sources: Vec::new(),
            timeout: DEFAULT_TOOL_TIMEOUT,
            max_calls: DEFAULT_MAX_CALLS_PER_TURN,
            max_concurrent: DEFAULT_MAX_CONCURRENT_CALLS,
            max_result_bytes: DEFAULT_MAX_RESULT_BYTES,
            deliveries: Vec::new(),
        }
    }
}

impl fmt::Debug for Toolbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut debug = f.debug_struct("Toolbox");
        debug.field("tools", &self.inner.specs.iter().map(|spec| spec.name.as_str()).collect::<Vec<_>>());
        if !self.inner.sources.is_empty() {
            debug.field("sources", &self.inner.sources.iter().map(|source| source.name()).collect::<Vec<_>>());
        }
        debug
            .field("timeout", &self.inner.timeout)
            .field("max_calls_per_turn", &self.inner.max_calls)
            .field("max_concurrent_calls", &self.inner.max_concurrent)
            .field("max_result_bytes", &self.inner.max_result_bytes)
            .finish()
    }
}

/// A plain async function as a [`Tool`].
struct FnTool<F> {
    name: String,
    description: String,
    parameters: Value,
    timeout: Option<Duration>,
    function: F,
}

impl<F, Fut> Tool for FnTool<F>
where
    F: Fn(Value) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<String, ToolError>> + Send + 'static,
{
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        self.parameters.clone()
    }

    fn call(&self, input: Value) -> ToolFuture<'_> {
        Box::pin((self.function)(input))
    }

    fn timeout(&self) -> Option<Duration> {
        self.timeout
    }
}

impl Toolbox {
    /// An empty toolbox.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a plain async function as the tool `name`, described by `description`, whose
    /// arguments follow the JSON schema `parameters` (`null`: no arguments).
    ///
    /// The function gets the arguments as a JSON object that matched the schema (see
    /// [`check_arguments`]); its `Ok` text is the result the model reads,
    /// its `Err` goes back as an error result.
    ///
    /// # Panics
    ///
    /// If `name` is not 1 to 64 ASCII letters, digits, `_` or `-`, or is already registered.
    pub fn with_fn<F, Fut>(
        self,
        name: impl Into<String>,
        description: impl Into<String>,
        parameters: Value,
        function: F,
    ) -> Self
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<String, ToolError>> + Send + 'static,
    {
        self.register_fn(ToolSpec::new(name, description, parameters), None, function)
    }

    /// [`Toolbox::with_fn`] for a function with its own `timeout` per call, instead of the
    /// toolbox's (see [`Tool::timeout`] for what happens when it is up).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use agentic_runtime::tool::{DEFAULT_TOOL_TIMEOUT, Toolbox};
    /// use serde_json::json;
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let toolbox = Toolbox::new()
    ///     .with_fn("now", "The time.", json!(null), |_| async { Ok("12:00".to_owned()) })
    ///     .with_fn_timeout("build", "Builds the project.", json!(null), Duration::from_secs(600), |_| async {
    ///         std::future::pending().await // a build that hangs
    ///     });
    /// assert_eq!(toolbox.timeout_of("now"), Some(DEFAULT_TOOL_TIMEOUT));
    /// assert_eq!(toolbox.timeout_of("build"), Some(Duration::from_secs(600)));
    /// let error = toolbox.call("build", json!({})).await.unwrap_err();
    /// assert_eq!(error.message(), "the tool `build` timed out after 600 s");
    /// # }
    /// ```
    ///
    /// # Panics
    ///
    /// If `name` is not 1 to 64 ASCII letters, digits, `_` or `-`, or is already registered.
    pub fn with_fn_timeout<F, Fut>(
        self,
        name: impl Into<String>,
        description: impl Into<String>,
        parameters: Value,
        timeout: Duration,
        function: F,
    ) -> Self
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<String, ToolError>> + Send + 'static,
    {
        self.register_fn(ToolSpec::new(name, description, parameters), Some(timeout), function)
    }

    pub(super) fn register_fn<F, Fut>(self, spec: ToolSpec, timeout: Option<Duration>, function: F) -> Self
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<String, ToolError>> + Send + 'static,
    {
        let tool = FnTool {
            name: spec.name.clone(),
            description: spec.description.clone(),
            parameters: spec.parameters.clone(),
            timeout,
            function,
        };
        self.register(Arc::new(tool), spec)
    }

    /// Limits every call of a tool that sets no timeout of its own ([`Tool::timeout`]) to
    /// `timeout`, instead of [`DEFAULT_TOOL_TIMEOUT`]; tools registered before and after alike.
    ///
    /// Every value is valid and none waits forever: `Duration::ZERO` gives a call a single poll
    /// (only a call that finishes without waiting succeeds), `Duration::MAX` is in effect no limit.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use agentic_runtime::tool::{DEFAULT_TOOL_TIMEOUT, Toolbox};
    /// use serde_json::json;
    ///
    /// let toolbox = Toolbox::new().with_fn("now", "The time.", json!(null), |_| async { Ok("12:00".to_owned()) });
    /// assert_eq!(toolbox.timeout(), DEFAULT_TOOL_TIMEOUT);
    /// let quick = toolbox.with_timeout(Duration::from_millis(500));
    /// assert_eq!(quick.timeout_of("now"), Some(Duration::from_millis(500)));
    /// ```
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        Arc::make_mut(&mut self.inner).timeout = timeout;
        self
    }

    /// The limit of a call whose tool sets none: [`DEFAULT_TOOL_TIMEOUT`] unless
    /// [`Toolbox::with_timeout`] changed it.
    pub fn timeout(&self) -> Duration {
        self.inner.timeout
    }

    /// The limit of one call of the tool `name`: its own ([`Tool::timeout`]), else the
    /// toolbox's (a [`ToolSource`]'s tools have the toolbox's). `None` when there is no such tool.
    pub fn timeout_of(&self, name: &str) -> Option<Duration> {
        match self.find(name)? {
            Found::Own(tool, _) => Some(self.limit(tool)),
            Found::Source(..) => Some(self.inner.timeout),
        }
    }

    fn limit(&self, tool: &dyn Tool) -> Duration {
        tool.timeout().unwrap_or(self.inner.timeout)
    }

    /// Runs at most `max` calls of one turn; the calls past them are not run, and each is answered
    /// with an error result that says so (the providers want a result for every call).
    ///
    /// `0` answers every call with that error.
    ///
    /// # Default
    ///
    /// [`DEFAULT_MAX_CALLS_PER_TURN`] (128; the reason is there).
    ///
    /// # Examples
    ///
    /// ```
    /// use agentic_runtime::tool::{DEFAULT_MAX_CALLS_PER_TURN, Toolbox};
    ///
    /// assert_eq!(Toolbox::new().max_calls_per_turn(), DEFAULT_MAX_CALLS_PER_TURN);
    /// assert_eq!(Toolbox::new().with_max_calls_per_turn(16).max_calls_per_turn(), 16);
    /// ```
    pub fn with_max_calls_per_turn(mut self, max: usize) -> Self {
        Arc::make_mut(&mut self.inner).max_calls = max;
        self
    }

    /// Sets whether a call of the tool `name` may run again after its process died while it ran,
    /// in a durable run ([`Delivery`]; the default is [`Delivery::AtMostOnce`]). It wins over the
    /// tool's own [`Tool::delivery`], and may name a tool a [`ToolSource`] offers; it may come
    /// before the tool is registered.
    ///
    /// # Examples
    ///
    /// ```
    /// use agentic_runtime::tool::{Delivery, Toolbox};
    /// use serde_json::json;
    ///
    /// let toolbox = Toolbox::new()
    ///     .with_fn("search", "Searches.", json!(null), |_| async { Ok("found".to_owned()) })
    ///     .with_delivery("search", Delivery::AtLeastOnce);
    /// assert_eq!(toolbox.delivery_of("search"), Delivery::AtLeastOnce);
    /// assert_eq!(toolbox.delivery_of("send_mail"), Delivery::AtMostOnce);
    /// ```
    pub fn with_delivery(mut self, name: impl Into<String>, delivery: Delivery) -> Self {
        let name = name.into();
        let deliveries = &mut Arc::make_mut(&mut self.inner).deliveries;
        deliveries.retain(|(named, _)| *named != name);
        deliveries.push((name, delivery));
        self
    }

    /// Whether a call of the tool `name` may run again after a crash ([`Toolbox::with_delivery`],
    /// else the tool's own [`Tool::delivery`], else [`Delivery::AtMostOnce`]).
    pub fn delivery_of(&self, name: &str) -> Delivery {
        if let Some((_, delivery)) = self.inner.deliveries.iter().find(|(named, _)| named == name) {
            return *delivery;
        }
        match self.find(name) {
            Some(Found::Own(tool, _)) => tool.delivery(),
            _ => Delivery::AtMostOnce,
        }
    }

    /// The most calls of one turn that run ([`Toolbox::with_max_calls_per_turn`]).
    pub fn max_calls_per_turn(&self) -> usize {
        self.inner.max_calls
    }

    /// Runs at most `max` calls of a turn at once; each further call starts, in call order, when
    /// one finishes. `1` runs them one after the other.
    ///
    /// # Default
    ///
    /// [`DEFAULT_MAX_CONCURRENT_CALLS`] (10; the reason is there).
    ///
    /// # Panics
    ///
    /// If `max` is 0: no call could ever run.
    pub fn with_max_concurrent_calls(mut self, max: usize) -> Self {
        assert!(max > 0, "`max_concurrent_calls` must be at least 1 (1 runs the calls one after the other)");
        Arc::make_mut(&mut self.inner).max_concurrent = max;
        self
    }

    /// The most calls of a turn that run at once ([`Toolbox::with_max_concurrent_calls`]).
    pub fn max_concurrent_calls(&self) -> usize {
        self.inner.max_concurrent
    }

    /// Sends the model at most `max` bytes of each result or error text: a longer one is cut on a
    /// char boundary, and ends with a note (part of the `max` bytes) saying how much was cut. A
    /// `max` under 120 bytes leaves room for the note alone.
    ///
    /// # Default
    ///
    /// [`DEFAULT_MAX_RESULT_BYTES`] (256 KiB; the reason is there).
    ///
    /// # Examples
    ///
    /// ```
    /// use agentic_runtime::message::{AssistantMessage, ContentBlock};
    /// use agentic_runtime::tool::Toolbox;
    /// use serde_json::json;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let toolbox = Toolbox::new()
    ///     .with_fn("dump", "A big dump.", json!(null), |_| async { Ok("x".repeat(10_000)) })
    ///     .with_max_result_bytes(1_000);
    /// let mut turn = AssistantMessage::text("");
    /// turn.content = vec![ContentBlock::ToolUse { id: "c1".into(), name: "dump".into(), input: json!({}) }];
    /// let outcome = &toolbox.run_calls(&turn).await[0];
    /// assert!(outcome.content.len() <= 1_000);
    /// assert!(outcome.content.ends_with("[the tool result was cut here: 9120 of its 10000 bytes are not shown]"));
    /// # }
    /// ```
    pub fn with_max_result_bytes(mut self, max: usize) -> Self {
        Arc::make_mut(&mut self.inner).max_result_bytes = max;
        self
    }

    /// The most bytes of a result sent to the model ([`Toolbox::with_max_result_bytes`]).
    pub fn max_result_bytes(&self) -> usize {
        self.inner.max_result_bytes
    }

    /// Registers `tool`. Its [`Tool::parameters`] are read once, now.
    ///
    /// # Panics
    ///
    /// If its name is not 1 to 64 ASCII letters, digits, `_` or `-`, or is already registered.
    pub fn with_tool(self, tool: impl Tool) -> Self {
        self.with_shared(Arc::new(tool))
    }

    /// Registers a tool that is already shared.
    ///
    /// # Panics
    ///
    /// If its name is not 1 to 64 ASCII letters, digits, `_` or `-`, or is already registered.
    pub fn with_shared(self, tool: Arc<dyn Tool>) -> Self {
        let spec = ToolSpec::new(tool.name(), tool.description(), tool.parameters());
        self.register(tool, spec)
    }

    fn register(mut self, tool: Arc<dyn Tool>, spec: ToolSpec) -> Self {
        let name = spec.name.as_str();
        let valid = (1..=64).contains(&name.len())
            && name.bytes().all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-');
        assert!(valid, "invalid tool name {name:?}: use 1 to 64 ASCII letters, digits, `_` or `-`");
        assert!(self.get(name).is_none(), "the tool `{name}` is registered twice; give each tool its own name");
        let inner = Arc::make_mut(&mut self.inner);
        inner.tools.push(tool);
        inner.specs.push(spec);
        self
    }

    /// Adds the tools of `source` (an MCP server's, for one), offered after the toolbox's own
    /// tools and those of the sources added before it. Its list is read at every model turn (see
    /// [`ToolSource::specs`]); a name offered already is not offered again.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// use agentic_runtime::tool::{ToolContext, ToolFuture, ToolSource, ToolSpec, Toolbox};
    /// use serde_json::{Value, json};
    ///
    /// /// Tools that answer with their own name.
    /// struct Echoes(Arc<[ToolSpec]>);
    ///
    /// impl ToolSource for Echoes {
    ///     fn name(&self) -> &str {
    ///         "echoes"
    ///     }
    ///     fn specs(&self) -> Arc<[ToolSpec]> {
    ///         Arc::clone(&self.0)
    ///     }
    ///     fn call<'a>(&'a self, name: &'a str, _input: Value, context: ToolContext) -> ToolFuture<'a> {
    ///         Box::pin(async move { Ok(format!("{name} ({})", context.call_id())) })
    ///     }
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let echoes = Echoes(Arc::from([ToolSpec::new("ping", "Answers `ping`.", Value::Null)]));
    /// let toolbox = Toolbox::new().with_source(echoes);
    /// assert_eq!(toolbox.names().collect::<Vec<_>>(), ["ping"]);
    /// assert_eq!(toolbox.call_with_key("ping", json!({}), "call_1", "key-1").await, Ok("ping (call_1)".to_owned()));
    /// # }
    /// ```
    pub fn with_source(self, source: impl ToolSource) -> Self {
        self.with_shared_source(Arc::new(source))
    }

    /// Adds a [`ToolSource`] that is already shared (see [`Toolbox::with_source`]).
    pub fn with_shared_source(mut self, source: Arc<dyn ToolSource>) -> Self {
        Arc::make_mut(&mut self.inner).sources.push(source);
        self
    }

    /// What requests offer the model: one spec per tool, the toolbox's own in registration order,
    /// then each source's as it lists them now. Borrowed when there are no sources.
    pub fn specs(&self) -> Cow<'_, [ToolSpec]> {
        if self.inner.sources.is_empty() {
            return Cow::Borrowed(&self.inner.specs);
        }
        let mut specs = self.inner.specs.clone();
        for source in &self.inner.sources {
            for spec in source.specs().iter() {
                if specs.iter().any(|known| known.name == spec.name) {
                    tracing::debug!(tool = %spec.name, source = source.name(), "a tool of this name is offered already");
                    continue;
                }
                specs.push(spec.clone());
            }
        }
        Cow::Owned(specs)
    }

    /// The tools' names, in the order of [`Toolbox::specs`].
    pub fn names(&self) -> impl Iterator<Item = String> {
        self.specs().into_owned().into_iter().map(|spec| spec.name)
    }

    /// The toolbox's own tool named `name` (a [`ToolSource`]'s tools are not `Tool`s).
    pub fn get(&self, name: &str) -> Option<&dyn Tool> {
        let position = self.inner.specs.iter().position(|spec| spec.name == name)?;
        Some(&*self.inner.tools[position])
    }

    /// Where a call of `name` goes, in the order of [`Toolbox::specs`].
    fn find(&self, name: &str) -> Option<Found<'_>> {
        if let Some(position) = self.inner.specs.iter().position(|spec| spec.name == name) {
            return Some(Found::Own(&*self.inner.tools[position], &self.inner.specs[position]));
        }
        self.inner.sources.iter().find_map(|source| {
            let specs = source.specs();
            let position = specs.iter().position(|spec| spec.name == name)?;
            Some(Found::Source(&**source, specs, position))
        })
    }

    /// How many tools are offered now.
    pub fn len(&self) -> usize {
        self.specs().len()
    }

    /// True when no tool is offered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Calls the tool `name` with `input`, as the model would: an unknown name, arguments that
    /// are not a JSON object or do not match the schema, the tool's own error, a panic inside
    /// the tool and a call that outlives its timeout ([`Toolbox::timeout_of`]) are all `Err`, with
    /// a text meant for the model.
    ///
    /// The call gets a fresh idempotency key of its own: use [`Toolbox::call_with_key`] to name it.
    pub async fn call(&self, name: &str, input: Value) -> Result<String, ToolError> {
        let key = format!("call-{:016x}", fastrand::u64(..));
        self.call_with_key(name, input, "", &key).await
    }

    /// [`Toolbox::call`] as the call `call_id` with `idempotency_key`, which the tool gets in its
    /// [`ToolContext`] ([`Tool::call_with`], [`ToolSource::call`]). Give the same key to every
    /// attempt of one call, so that a tool with side effects can refuse to act twice.
    pub async fn call_with_key(
        &self,
        name: &str,
        input: Value,
        call_id: &str,
        idempotency_key: &str,
    ) -> Result<String, ToolError> {
        let Some(found) = self.find(name) else {
            return Err(self.unknown(name));
        };
        if let Value::String(raw) = &input {
            return Err(ToolError::new(format!("invalid arguments for `{name}`: {}", string_arguments(raw))));
        }
        check_arguments(&found.spec().parameters, &input)
            .map_err(|problems| ToolError::new(format!("invalid arguments for `{name}`: {problems}")))?;
        let (limit, cut_at) = match &found {
            Found::Own(tool, _) => (self.limit(*tool), self.limit(*tool)),
            // The source ends its call itself (and may tell its server): dropped only if it does not.
            Found::Source(..) => (self.inner.timeout, self.inner.timeout.saturating_add(SOURCE_TIMEOUT_GRACE)),
        };
        let context = ToolContext::new(call_id, idempotency_key, limit);
        let call = invoke(name, move || match found {
            Found::Own(tool, _) => tool.call_with(input, context),
            Found::Source(source, ..) => source.call(name, input, context),
        });
        // On timeout `invoke`'s future is dropped here, which cancels the tool's.
        match tokio::time::timeout(cut_at, call).await {
            Ok(result) => result,
            Err(_elapsed) => Err(ToolError::new(format!("the tool `{name}` timed out after {}", seconds(limit)))),
        }
    }

    fn unknown(&self, name: &str) -> ToolError {
        // A tool name is at most 64 characters: a longer one is the model's runaway, not echoed whole.
        let name = shorten(name, 64);
        let names: Vec<String> = self.names().map(|name| format!("`{name}`")).collect();
        if names.is_empty() {
            ToolError::new(format!("unknown tool `{name}`; no tools are available"))
        } else {
            ToolError::new(format!("unknown tool `{name}`; the tools are {}", names.join(", ")))
        }
    }
}

/// Where a call goes: one of the toolbox's own tools, or the tool at a position of a source's list.
enum Found<'a> {
    Own(&'a dyn Tool, &'a ToolSpec),
    Source(&'a dyn ToolSource, Arc<[ToolSpec]>, usize),
}

impl Found<'_> {
    fn spec(&self) -> &ToolSpec {
        match self {
            Self::Own(_, spec) => spec,
            Self::Source(_, specs, position) => &specs[*position],
        }
    }
}

/// Runs the tool `name`'s call, turning a panic (while making the future or while polling it) into
/// an error.
async fn invoke<'a>(name: &str, call: impl FnOnce() -> ToolFuture<'a>) -> Result<String, ToolError> {
    let future = match std::panic::catch_unwind(AssertUnwindSafe(call)) {
        Ok(future) => future,
        Err(payload) => return Err(panicked(name, payload.as_ref())),
    };
    match AssertUnwindSafe(future).catch_unwind().await {
        Ok(result) => result,
        Err(payload) => Err(panicked(name, payload.as_ref())),
    }
}

fn panicked(name: &str, payload: &(dyn Any + Send)) -> ToolError {
    let message =
        payload.downcast_ref::<&str>().copied().or_else(|| payload.downcast_ref::<String>().map(String::as_str));
    match message {
        Some(message) => ToolError::new(format!("the tool `{name}` panicked: {message}")),
        None => ToolError::new(format!("the tool `{name}` panicked")),
    }
}

/// `duration` in seconds for a message, e.g. `120 s`, `0.5 s`; a part of a millisecond counts as
/// a whole one, so that no nonzero limit reads `0 s`.
fn seconds(duration: Duration) -> String {
    let millis = duration.as_nanos().div_ceil(1_000_000);
    format_ms(u64::try_from(millis).unwrap_or(u64::MAX))
}

/// Why arguments that came as a JSON string are refused. The provider keeps the model's text as
/// a string when it is not JSON, and a JSON string literal (`"Paris"`) is a string too: text that
/// opens like an object or array is taken for broken JSON, anything else for a string literal.
fn string_arguments(raw: &str) -> String {
    let shown = shorten(raw, 200);
    match serde_json::from_str::<Value>(raw) {
        Ok(Value::Object(_)) => {
            format!("the arguments must be a JSON object, not a string holding one: send the object itself: `{shown}`")
        }
        Err(_) if raw.trim_start().starts_with(['{', '[']) => format!("not valid JSON: `{shown}`"),
        _ => format!("the arguments must be a JSON object, not a string: `{shown}`"),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::message::{AssistantMessage, ContentBlock, Message, StopReason};
    use crate::tool::results_message;

    fn turn(calls: &[(&str, &str, Value)]) -> AssistantMessage {
        let mut message = AssistantMessage::text("let me see");
        for (id, name, input) in calls {
            message.content.push(ContentBlock::ToolUse {
                id: (*id).to_owned(),
                name: (*name).to_owned(),
                input: input.clone(),
            });
        }
        message.stop_reason = StopReason::ToolUse;
        message
    }

    fn weather() -> Toolbox {
        Toolbox::new().with_fn(
            "get_weather",
            "The weather in a city.",
            json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
            |input| async move {
                match input["city"].as_str() {
                    Some("Nowhere") => Err(ToolError::new("RateLimitError: 429")),
                    Some("Boom") => panic!("the weather exploded"),
                    Some(city) => {
                        if city == "Slow" {
                            tokio::time::sleep(Duration::from_secs(5)).await;
                        }
                        Ok(format!("sunny in {city}"))
                    }
                    None => unreachable!(),
                }
            },
        )
    }

    #[tokio::test(start_paused = true)]
    async fn every_failure_is_an_error_outcome_in_call_order() {
        let toolbox = weather();
        let message = turn(&[
            ("c1", "get_weather", json!({"city": "Slow"})),
            ("c2", "get_weather", json!({"city": "Nowhere"})),
            ("c3", "get_weather", json!({"city": "Boom"})),
            ("c4", "get_time", json!({})),
            ("c5", "get_weather", json!({"town": "Paris"})),
            ("c6", "get_weather", json!("{\"city\": ")),
            ("c7", "get_weather", json!({"city": "Paris"})),
        ]);
        let start = tokio::time::Instant::now();
        let outcomes = toolbox.run_calls(&message).await;
        assert_eq!(start.elapsed(), Duration::from_secs(5), "the calls ran concurrently, with no retry sleep");
        let got: Vec<(&str, &str, bool)> =
            outcomes.iter().map(|o| (o.call_id.as_str(), o.content.as_str(), o.is_error)).collect();
        assert_eq!(
            got,
            [
                ("c1", "sunny in Slow", false),
                ("c2", "RateLimitError: 429", true),
                ("c3", "the tool `get_weather` panicked: the weather exploded", true),
                ("c4", "unknown tool `get_time`; the tools are `get_weather`", true),
                ("c5", "invalid arguments for `get_weather`: `city` is required", true),
                ("c6", "invalid arguments for `get_weather`: not valid JSON: `{\"city\": `", true),
                ("c7", "sunny in Paris", false),
            ]
        );
        let results = results_message(outcomes);
        let Message::User { content } = &results else { panic!("{results:?}") };
        assert_eq!(
            content[1],
            ContentBlock::ToolResult {
                tool_use_id: "c2".into(),
                content: "RateLimitError: 429".into(),
                is_error: true
            }
        );
    }

    #[tokio::test]
    async fn a_panic_while_making_the_future_is_caught_too() {
        struct Eager;
        impl Tool for Eager {
            fn name(&self) -> &str {
                "eager"
            }
            fn description(&self) -> &str {
                "panics before its future exists"
            }
            fn parameters(&self) -> Value {
                Value::Null
            }
            fn call(&self, _: Value) -> ToolFuture<'_> {
                let message = String::from("no future for you");
                std::panic::panic_any(message)
            }
        }
        let toolbox = Toolbox::new().with_tool(Eager);
        assert_eq!(toolbox.specs()[0].parameters, json!({"type": "object", "properties": {}}));
        let error = toolbox.call("eager", json!({})).await.unwrap_err();
        assert_eq!(error.message(), "the tool `eager` panicked: no future for you");
        assert!(toolbox.run_calls(&AssistantMessage::text("no calls")).await.is_empty());
    }

    #[test]
    #[should_panic(expected = "the tool `get_weather` is registered twice")]
    fn a_name_is_registered_once() {
        let _ = weather().with_fn("get_weather", "", Value::Null, |_| async { Ok(String::new()) });
    }

    #[test]
    #[should_panic(expected = "invalid tool name \"get weather\"")]
    fn names_are_checked() {
        let _ = Toolbox::new().with_fn("get weather", "", Value::Null, |_| async { Ok(String::new()) });
    }

    #[test]
    fn clones_share_the_tools_and_adding_one_does_not_change_the_other() {
        let one = weather();
        let two = one.clone().with_fn("noop", "", Value::Null, |_| async { Ok(String::new()) });
        assert_eq!(one.names().collect::<Vec<_>>(), ["get_weather"]);
        assert_eq!(two.names().collect::<Vec<_>>(), ["get_weather", "noop"]);
        assert_eq!(
            format!("{two:?}"),
            "Toolbox { tools: [\"get_weather\", \"noop\"], timeout: 120s, max_calls_per_turn: 128, \
             max_concurrent_calls: 10, max_result_bytes: 262144 }"
        );
    }

    /// Sets its flag when dropped: shows that a timed-out call's future was dropped.
    struct DropFlag(Arc<std::sync::atomic::AtomicBool>);

    impl Drop for DropFlag {
        fn drop(&mut self) {
            self.0.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_past_its_timeout_is_cancelled_and_its_peers_finish() {
        let dropped = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = Arc::clone(&dropped);
        let toolbox = weather().with_timeout(Duration::from_secs(3)).with_fn("stuck", "", Value::Null, move |_| {
            let guard = DropFlag(Arc::clone(&flag));
            async move {
                let _guard = guard;
                std::future::pending().await
            }
        });
        let message = turn(&[("c1", "stuck", json!({})), ("c2", "get_weather", json!({"city": "Oslo"}))]);
        let start = tokio::time::Instant::now();
        let outcomes = toolbox.run_calls(&message).await;
        assert_eq!(start.elapsed(), Duration::from_secs(3));
        assert!(dropped.load(std::sync::atomic::Ordering::SeqCst), "the stuck call's future was dropped");
        let got: Vec<(&str, bool)> = outcomes.iter().map(|o| (o.content.as_str(), o.is_error)).collect();
        assert_eq!(got, [("the tool `stuck` timed out after 3 s", true), ("sunny in Oslo", false)]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_call_is_cut_at_a_fractional_limit() {
        // `Slow` sleeps 5 s: past a 4.5 s limit.
        let toolbox = weather().with_timeout(Duration::from_millis(4500));
        let start = tokio::time::Instant::now();
        let error = toolbox.call("get_weather", json!({"city": "Slow"})).await.unwrap_err();
        assert_eq!(error.message(), "the tool `get_weather` timed out after 4.5 s");
        assert_eq!(start.elapsed(), Duration::from_millis(4500));
    }

    #[tokio::test(start_paused = true)]
    async fn a_zero_timeout_gives_one_poll_and_the_longest_one_never_overflows() {
        let zero = weather().with_timeout(Duration::ZERO);
        assert_eq!(zero.call("get_weather", json!({"city": "Oslo"})).await, Ok("sunny in Oslo".to_owned()));
        let error = zero.call("get_weather", json!({"city": "Slow"})).await.unwrap_err();
        assert_eq!(error.message(), "the tool `get_weather` timed out after 0 s");

        let unlimited = weather().with_timeout(Duration::MAX);
        assert_eq!(unlimited.call("get_weather", json!({"city": "Slow"})).await, Ok("sunny in Slow".to_owned()));
    }

    #[tokio::test(start_paused = true)]
    async fn a_tool_sets_its_own_timeout_through_the_trait() {
        struct Hang;
        impl Tool for Hang {
            fn name(&self) -> &str {
                "hang"
            }
            fn description(&self) -> &str {
                "never answers"
            }
            fn parameters(&self) -> Value {
                Value::Null
            }
            fn call(&self, _: Value) -> ToolFuture<'_> {
                Box::pin(std::future::pending())
            }
            fn timeout(&self) -> Option<Duration> {
                Some(Duration::from_millis(250))
            }
        }
        let toolbox = weather().with_tool(Hang).with_timeout(Duration::from_secs(60));
        assert_eq!(toolbox.timeout_of("hang"), Some(Duration::from_millis(250)));
        assert_eq!(toolbox.timeout_of("get_weather"), Some(Duration::from_secs(60)));
        assert_eq!(toolbox.timeout_of("nope"), None);
        let start = tokio::time::Instant::now();
        let error = toolbox.call("hang", json!({})).await.unwrap_err();
        assert_eq!(error.message(), "the tool `hang` timed out after 0.25 s");
        assert_eq!(start.elapsed(), Duration::from_millis(250));
    }

    #[tokio::test]
    async fn arguments_of_every_json_type_but_an_object_are_named_by_their_type() {
        let toolbox = weather();
        let cases = [
            // What a provider hands over for arguments `"Paris"`: a JSON string literal.
            (json!("Paris"), "the arguments must be a JSON object, not a string: `Paris`"),
            // A string holding an object's JSON: encoded twice.
            (
                json!("{\"city\":\"Paris\"}"),
                "the arguments must be a JSON object, not a string holding one: send the object itself: `{\"city\":\"Paris\"}`",
            ),
            // The model's broken JSON text, kept as a string by the provider.
            (json!("{\"city\": "), "not valid JSON: `{\"city\": `"),
            (json!(3.5), "the arguments must be a JSON object, not a number"),
            (json!(3), "the arguments must be a JSON object, not an integer"),
            (json!(["Paris"]), "the arguments must be a JSON object, not an array"),
            (json!(true), "the arguments must be a JSON object, not a boolean"),
            (json!(null), "the arguments must be a JSON object, not null"),
        ];
        for (input, message) in cases {
            let error = toolbox.call("get_weather", input.clone()).await.unwrap_err();
            assert_eq!(error.message(), format!("invalid arguments for `get_weather`: {message}"), "{input}");
        }
    }

    #[tokio::test]
    async fn a_long_unknown_tool_name_is_cut_in_the_message() {
        let name = "x".repeat(1024 * 1024);
        let error = weather().call(&name, json!({})).await.unwrap_err();
        let x64 = "x".repeat(64);
        assert_eq!(error.message(), format!("unknown tool `{x64}…`; the tools are `get_weather`"));
    }

    #[test]
    #[should_panic(expected = "`max_concurrent_calls` must be at least 1")]
    fn zero_calls_at_once_is_refused() {
        let _ = weather().with_max_concurrent_calls(0);
    }

    #[test]
    fn limits_read_in_seconds() {
        let cases = [
            (DEFAULT_TOOL_TIMEOUT, "120 s"),
            (Duration::from_millis(500), "0.5 s"),
            (Duration::ZERO, "0 s"),
            (Duration::from_micros(1), "0.001 s"),
            (Duration::from_nanos(1_500_000), "0.002 s"),
            (Duration::MAX, "18446744073709551.615 s"),
        ];
        for (duration, text) in cases {
            assert_eq!(seconds(duration), text, "{duration:?}");
        }
    }
}
