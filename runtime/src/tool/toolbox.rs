//! The toolbox: registered tools, their specs for requests, and the runner of one turn's calls.

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures_util::FutureExt as _;
use serde_json::Value;

use super::schema::check_arguments;
use super::{Tool, ToolError, ToolFuture, ToolSpec};
use crate::message::{AssistantMessage, ContentBlock, Message};
use crate::trace::RunTrace;

/// The tools offered to the model, by name. Cloning is cheap: clones share the tools.
///
/// Build it with [`Toolbox::with_fn`] (a plain async function) and [`Toolbox::with_tool`] (any
/// [`Tool`]); give [`Toolbox::specs`] to the request; run each assistant turn's calls with
/// [`Toolbox::run_calls`] and send [`results_message`] back.
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

#[derive(Clone, Default)]
struct Inner {
    tools: Vec<Arc<dyn Tool>>,
    /// The specs, in registration order, read once from the tools.
    specs: Vec<ToolSpec>,
}

impl fmt::Debug for Toolbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Toolbox").field("tools", &self.names().collect::<Vec<_>>()).finish()
    }
}

/// A plain async function as a [`Tool`].
struct FnTool<F> {
    name: String,
    description: String,
    parameters: Value,
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
    /// [`check_arguments`](super::check_arguments)); its `Ok` text is the result the model reads,
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
        let spec = ToolSpec::new(name, description, parameters);
        let tool = FnTool {
            name: spec.name.clone(),
            description: spec.description.clone(),
            parameters: spec.parameters.clone(),
            function,
        };
        self.register(Arc::new(tool), spec)
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
    /// are not a JSON object or do not match the schema, the tool's own error and a panic inside
    /// the tool are all `Err`, with a text meant for the model.
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
        invoke(&*self.inner.tools[position], input).await
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
    /// the texts. A tool that never returns blocks the turn: give it its own timeout.
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
            let result = self.call(name, input.clone()).await;
            let (content, is_error) = match result {
                Ok(text) => (text, false),
                Err(error) => (error.message, true),
            };
            if let Some(trace) = trace {
                trace.tool_result(id, name, is_error, &content);
            }
            ToolOutcome { call_id: id.to_owned(), tool: name.to_owned(), input: input.clone(), content, is_error }
        });
        futures_util::future::join_all(runs).await
    }
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
    /// True when the call failed (the tool's error, an unknown tool, bad arguments, a panic).
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
        assert_eq!(format!("{two:?}"), "Toolbox { tools: [\"get_weather\", \"noop\"] }");
    }
}
