//! The toolbox: registered tools, their specs for requests, and the runner of one turn's calls.

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt as _;
use serde_json::Value;
use tracing::field::Empty;
use tracing::{Instrument as _, Span};

use super::schema::check_arguments;
use super::{DEFAULT_TOOL_TIMEOUT, Tool, ToolError, ToolFuture, ToolSpec};
use crate::message::{AssistantMessage, ContentBlock, Message};
use crate::policy::rules::format_ms;
use crate::trace::RunTrace;

/// The tools offered to the model, by name. Cloning is cheap: clones share the tools.
///
/// Build it with [`Toolbox::with_fn`] (a plain async function) and [`Toolbox::with_tool`] (any
/// [`Tool`]); give [`Toolbox::specs`] to the request; run each assistant turn's calls with
/// [`Toolbox::run_calls`] and send [`results_message`] back. Every call has a timeout:
/// [`DEFAULT_TOOL_TIMEOUT`], or the toolbox's ([`Toolbox::with_timeout`]), or the tool's own
/// ([`Tool::timeout`], [`Toolbox::with_fn_timeout`]), which wins.
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
    /// The limit of a call whose tool sets none.
    timeout: Duration,
}

impl Default for Inner {
    fn default() -> Self {
        Self { tools: Vec::new(), specs: Vec::new(), timeout: DEFAULT_TOOL_TIMEOUT }
    }
}

impl fmt::Debug for Toolbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Toolbox")
            .field("tools", &self.names().collect::<Vec<_>>())
            .field("timeout", &self.inner.timeout)
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

    fn register_fn<F, Fut>(self, spec: ToolSpec, timeout: Option<Duration>, function: F) -> Self
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
    /// toolbox's. `None` when there is no such tool.
    pub fn timeout_of(&self, name: &str) -> Option<Duration> {
        self.get(name).map(|tool| self.limit(tool))
    }

    fn limit(&self, tool: &dyn Tool) -> Duration {
        tool.timeout().unwrap_or(self.inner.timeout)
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

    /// What requests offer the model: one spec per tool, in registration order.
    pub fn specs(&self) -> &[ToolSpec] {
        &self.inner.specs
    }

    /// The tools' names, in registration order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.inner.specs.iter().map(|spec| spec.name.as_str())
    }

    /// The tool named `name`.
    pub fn get(&self, name: &str) -> Option<&dyn Tool> {
        let position = self.inner.specs.iter().position(|spec| spec.name == name)?;
        Some(&*self.inner.tools[position])
    }

    /// How many tools there are.
    pub fn len(&self) -> usize {
        self.inner.tools.len()
    }

    /// True when there are no tools.
    pub fn is_empty(&self) -> bool {
        self.inner.tools.is_empty()
    }

    /// Calls the tool `name` with `input`, as the model would: an unknown name, arguments that
    /// are not a JSON object or do not match the schema, the tool's own error, a panic inside
    /// the tool and a call that outlives its timeout ([`Toolbox::timeout_of`]) are all `Err`, with
    /// a text meant for the model.
    pub async fn call(&self, name: &str, input: Value) -> Result<String, ToolError> {
        let Some(position) = self.inner.specs.iter().position(|spec| spec.name == name) else {
            return Err(self.unknown(name));
        };
        let spec = &self.inner.specs[position];
        if let Value::String(raw) = &input {
            if serde_json::from_str::<Value>(raw).is_err() {
                return Err(ToolError::new(format!(
                    "invalid arguments for `{name}`: not valid JSON: `{}`",
                    shorten(raw, 200)
                )));
            }
        }
        check_arguments(&spec.parameters, &input)
            .map_err(|problems| ToolError::new(format!("invalid arguments for `{name}`: {problems}")))?;
        let tool = &*self.inner.tools[position];
        let limit = self.limit(tool);
        // On timeout `invoke`'s future is dropped here, which cancels the tool's.
        match tokio::time::timeout(limit, invoke(tool, input)).await {
            Ok(result) => result,
            Err(_elapsed) => Err(ToolError::new(format!("the tool `{name}` timed out after {}", seconds(limit)))),
        }
    }

    fn unknown(&self, name: &str) -> ToolError {
        let names: Vec<String> = self.names().map(|name| format!("`{name}`")).collect();
        if names.is_empty() {
            ToolError::new(format!("unknown tool `{name}`; no tools are available"))
        } else {
            ToolError::new(format!("unknown tool `{name}`; the tools are {}", names.join(", ")))
        }
    }

    /// Runs every tool call ([`ContentBlock::ToolUse`]) of one assistant turn and returns their
    /// outcomes in call order (other blocks are skipped; no calls, no outcomes).
    ///
    /// The calls run **concurrently** (the model asked for them in one turn, so none depends on
    /// another's result); each outcome is still in the position of its call. Every failure is an
    /// outcome with `is_error: true`, never an `Err` and never a retry: see [`Toolbox::call`] for
    /// the texts. No call waits longer than its timeout ([`Toolbox::timeout_of`]), so neither
    /// does the turn.
    pub async fn run_calls(&self, message: &AssistantMessage) -> Vec<ToolOutcome> {
        self.run_calls_traced(message, None).await
    }

    /// [`Toolbox::run_calls`], writing to `trace` (when there is one) a `tool_call` event for
    /// every call, in call order, before any runs, then a `tool_result` event for each as soon as
    /// it finishes.
    pub async fn run_calls_traced(&self, message: &AssistantMessage, trace: Option<&RunTrace>) -> Vec<ToolOutcome> {
        let calls: Vec<(&str, &str, &Value)> = message
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
        let runs = calls.into_iter().map(|(id, name, input)| async move {
            let span = tool_span(name, id);
            let result = self.call(name, input.clone()).instrument(span.clone()).await;
            let (content, is_error) = match result {
                Ok(text) => (text, false),
                Err(error) => {
                    record_tool_error(&span);
                    (error.message, true)
                }
            };
            if let Some(trace) = trace {
                trace.tool_result(id, name, is_error, &content);
            }
            ToolOutcome { call_id: id.to_owned(), tool: name.to_owned(), input: input.clone(), content, is_error }
        });
        futures_util::future::join_all(runs).await
    }
}

/// The span of one tool call, `execute_tool {name}`, in the OpenTelemetry GenAI conventions'
/// terms (docs/design.md §14). The arguments and the result are not recorded.
fn tool_span(name: &str, call_id: &str) -> Span {
    tracing::info_span!(
        "execute_tool",
        otel.name = %format_args!("execute_tool {name}"),
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = name,
        gen_ai.tool.call.id = call_id,
        error.type = Empty,
        otel.status_code = Empty,
    )
}

/// Marks a tool call's span as failed (the tool's error, its timeout or its panic: the model gets
/// the text, the span the kind).
fn record_tool_error(span: &Span) {
    span.record("error.type", "tool_error");
    span.record("otel.status_code", "ERROR");
}

/// Runs the tool, turning a panic (while making the future or while polling it) into an error.
async fn invoke(tool: &dyn Tool, input: Value) -> Result<String, ToolError> {
    let future = match std::panic::catch_unwind(AssertUnwindSafe(|| tool.call(input))) {
        Ok(future) => future,
        Err(payload) => return Err(panicked(tool.name(), payload.as_ref())),
    };
    match AssertUnwindSafe(future).catch_unwind().await {
        Ok(result) => result,
        Err(payload) => Err(panicked(tool.name(), payload.as_ref())),
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

/// At most `max` characters of `text`, with `...` when cut.
fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_owned(),
    }
}

/// What one tool call gave: the call, its result text and whether it is an error.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolOutcome {
    /// The call's id (the [`ContentBlock::ToolUse`]'s), echoed by the result.
    pub call_id: String,
    /// The tool the model named.
    pub tool: String,
    /// The arguments the model sent.
    pub input: Value,
    /// The result text, or the error text.
    pub content: String,
    /// True when the call failed (the tool's error, an unknown tool, bad arguments, a panic, a
    /// timeout).
    pub is_error: bool,
}

impl ToolOutcome {
    /// The [`ContentBlock::ToolResult`] that answers the call.
    pub fn to_block(&self) -> ContentBlock {
        ContentBlock::ToolResult {
            tool_use_id: self.call_id.clone(),
            content: self.content.clone(),
            is_error: self.is_error,
        }
    }

    /// The [`ContentBlock::ToolResult`] that answers the call, without copying.
    pub fn into_block(self) -> ContentBlock {
        ContentBlock::ToolResult { tool_use_id: self.call_id, content: self.content, is_error: self.is_error }
    }
}

/// The user message that answers one turn's calls: their results, in call order.
pub fn results_message(outcomes: impl IntoIterator<Item = ToolOutcome>) -> Message {
    Message::User { content: outcomes.into_iter().map(ToolOutcome::into_block).collect() }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::message::StopReason;

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
        assert_eq!(format!("{two:?}"), "Toolbox { tools: [\"get_weather\", \"noop\"], timeout: 120s }");
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
