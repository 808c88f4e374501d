//! [`ExecRequest`]: one exec with any combination of options, and the terminal that sends it.

use std::fmt;

use serde_json::Value;

use crate::answer::{ExecError, Reply, TypedReply};
use crate::exec::Runtime;
use crate::exec::agent_fn::AgentFn;
use crate::exec::prompt::Prompt;
use crate::exec::typed::{self, Expected};
use crate::exec::typed_answer::TypedAnswer;
use crate::policy::RetryPolicy;
use crate::provider::ResponseSchema;
use crate::spend::UsageLimits;
use crate::stream::tap::Tap;
use crate::stream::{ExecStream, StreamMode};
use crate::tool::Toolbox;

/// A check of a JSON answer against a schema known at run time: `Err(why)` rejects it, and `why`
/// goes back to the model.
type Check<'r> = Box<dyn Fn(&Value) -> Result<(), String> + Send + Sync + 'r>;

/// One exec of [`Runtime::request`], with its options: a policy ([`ExecRequest::policy`]), tools
/// ([`ExecRequest::tools`]) and a schema known at run time ([`ExecRequest::schema`]), in any
/// combination; then one terminal sends it: [`ExecRequest::send`] (the [`Reply`]),
/// [`ExecRequest::json`] (the answer as a `T`) or [`ExecRequest::typed`] (both). Nothing is sent
/// before a terminal's future is first polled.
///
/// In an `#[agentic_function]`, a request runs as the function (its name, doc comment, policy,
/// validator, tools and compactor); an option set on the request wins over the function's.
#[must_use = "a request does nothing until `send()`, `json()` or `typed()` sends it"]
pub struct ExecRequest<'r> {
    runtime: &'r Runtime,
    prompt: Prompt,
    /// The policy and the spend limits, when the request sets its own.
    overrides: Option<Overrides>,
    tools: Option<&'r Toolbox>,
    schema: Option<(ResponseSchema, Check<'r>)>,
    mode: Option<StreamMode>,
}

impl fmt::Debug for ExecRequest<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExecRequest")
            .field("prompt", &self.prompt)
            .field("overrides", &self.overrides)
            .field("tools", &self.tools.map(|tools| tools.names().collect::<Vec<_>>()))
            .field("schema", &self.schema.as_ref().map(|(schema, _)| schema))
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

impl<'r> ExecRequest<'r> {
    pub(crate) fn new(runtime: &'r Runtime, prompt: Prompt) -> Self {
        Self { runtime, prompt, overrides: None, tools: None, schema: None, mode: None }
    }

    /// Runs the exec with `policy` instead of the runtime's (or the agent function's); an invalid
    /// policy fails the exec as a programming error, before any call.
    ///
    /// # Default
    /// The agent function's policy in one, else the runtime's ([`Runtime::policy`]).
    pub fn policy(mut self, policy: &RetryPolicy) -> Self {
        self.overrides.get_or_insert_default().policy = Some(*policy);
        self
    }

    /// Runs the exec with the spend limits `limits` instead of the agent function's or the
    /// runtime's: each is checked before the call or tool turn that would pass it (kind
    /// `usage_limit`). An invalid one fails the exec as a programming error, before any call.
    ///
    /// # Default
    /// The agent function's limits in one (its `max_total_tokens = ..`), else the runtime's
    /// ([`RuntimeBuilder::with_usage_limits`](crate::exec::RuntimeBuilder::with_usage_limits)).
    pub fn usage_limits(mut self, limits: &UsageLimits) -> Self {
        self.overrides.get_or_insert_default().limits = Some(*limits);
        self
    }

    /// Offers the model `tools` instead of the runtime's toolbox: an agent that reads files and one
    /// that sends mail can share a runtime (its provider, quota and breakers) without being offered
    /// each other's tools.
    ///
    /// # Default
    /// The agent function's `tools = PATH` in one, else the runtime's
    /// ([`RuntimeBuilder::with_tools`](crate::exec::RuntimeBuilder::with_tools)).
    pub fn tools(mut self, tools: &'r Toolbox) -> Self {
        self.tools = Some(tools);
        self
    }

    /// Asks the model for JSON of `schema`, a schema known only at run time (a file, a
    /// configuration): an answer that is not JSON, or that `check` refuses (`Err(why)`, e.g. a JSON
    /// Schema validator's message), is a rejected attempt whose reason goes back to the model.
    /// With [`ExecRequest::send`] the reply's text is the JSON that passed; with
    /// [`ExecRequest::json`] or [`ExecRequest::typed`] it is then parsed as their `T` (use
    /// `serde_json::Value` for any JSON), instead of asking for `T`'s own schema.
    ///
    /// # Default
    /// None: a text answer, or `T`'s schema for `json` and `typed`.
    ///
    /// # Examples
    ///
    /// ```
    /// use agentic_runtime::provider::ResponseSchema;
    /// use agentic_runtime::{Runtime, Scripted, ScriptedProvider};
    /// use serde_json::json;
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let schema = ResponseSchema::new("total", json!({"type": "object", "properties": {"total": {"type": "number"}}}));
    /// let provider = ScriptedProvider::new([Scripted::ok(r#"{"total": -1}"#), Scripted::ok(r#"{"total": 12.5}"#)]);
    /// let reply = Runtime::new(provider)
    ///     .request("Add it up: ...")
    ///     .schema(schema, |answer| match answer["total"].as_f64() {
    ///         Some(total) if total >= 0.0 => Ok(()),
    ///         _ => Err("`total` must be a number of at least 0".to_owned()),
    ///     })
    ///     .send()
    ///     .await
    ///     .unwrap();
    /// assert_eq!(reply.text(), r#"{"total": 12.5}"#);
    /// # }
    /// ```
    pub fn schema(
        mut self,
        schema: ResponseSchema,
        check: impl Fn(&Value) -> Result<(), String> + Send + Sync + 'r,
    ) -> Self {
        self.schema = Some((schema, Box::new(check)));
        self
    }

    /// What [`ExecRequest::stream`] does once something of a call reached the caller and that call
    /// fails: rewind and retry, hold each turn until it is accepted, or stop.
    ///
    /// # Default
    /// [`StreamMode::Buffer`] with a schema (a half-written JSON answer is no use to show),
    /// [`StreamMode::Replay`] without.
    pub fn stream_mode(mut self, mode: StreamMode) -> Self {
        self.mode = Some(mode);
        self
    }

    /// Sends the request and streams it, as [`Runtime::exec_stream`] does, with the request's
    /// policy, tools, schema and [`ExecRequest::stream_mode`]. With a schema, the reply that
    /// [`ExecEvent::Done`](crate::exec::ExecEvent::Done) carries has the JSON that passed as its
    /// text.
    pub fn stream(self) -> ExecStream<'r> {
        let Self { runtime, prompt, overrides, tools, schema, mode } = self;
        let default = if schema.is_some() { StreamMode::Buffer } else { StreamMode::Replay };
        let tap = Tap::new(mode.unwrap_or(default));
        ExecStream::new(tap, move |tap| async move {
            match schema {
                None => runtime.exec_attempts(overrides.as_ref(), tools, prompt, None, Some(&tap)).await,
                Some((schema, check)) => {
                    let check = |text: &str| check(&typed::parse::<Value>(text)?);
                    let expected = Expected::checked(schema, &check);
                    runtime.exec_attempts(overrides.as_ref(), tools, prompt, Some(&expected), Some(&tap)).await
                }
            }
        })
    }

    /// Sends the request through both layers: the model's final answer, with the decisions, usage
    /// and counts of the exec, or the error that ended it.
    pub async fn send(self) -> Result<Reply, ExecError> {
        let Self { runtime, prompt, overrides, tools, schema, mode: _ } = self;
        match schema {
            None => runtime.exec_attempts(overrides.as_ref(), tools, prompt, None, None).await,
            Some((schema, check)) => {
                let check = |text: &str| check(&typed::parse::<Value>(text)?);
                let expected = Expected::checked(schema, &check);
                runtime.exec_attempts(overrides.as_ref(), tools, prompt, Some(&expected), None).await
            }
        }
    }

    /// Sends the request and returns the answer as a `T` (see [`Runtime::exec_json`]).
    pub async fn json<T: TypedAnswer>(self) -> Result<T, ExecError> {
        Ok(self.typed::<T>().await?.into_value())
    }

    /// Sends the request and returns the answer as a `T` with the facts of the exec: the value with
    /// the [`Reply`] it came in (its decisions, usage, calls, attempts, time and target).
    pub async fn typed<T: TypedAnswer>(self) -> Result<TypedReply<T>, ExecError> {
        let Self { runtime, prompt, overrides, tools, schema, mode: _ } = self;
        let function = prompt.function_name();
        let reply = match schema {
            None => {
                let expected = Expected::of::<T>();
                runtime.exec_attempts(overrides.as_ref(), tools, prompt, Some(&expected), None).await?
            }
            Some((schema, check)) => {
                let check = |text: &str| check(&typed::parse::<Value>(text)?);
                let expected = Expected::checked(schema, &check);
                runtime.exec_attempts(overrides.as_ref(), tools, prompt, Some(&expected), None).await?
            }
        };
        match typed::parse::<T>(reply.text()) {
            Ok(value) => Ok(TypedReply::new(value, reply)),
            Err(why) => Err(ExecError::unparsable(function, why, &reply)),
        }
    }
}

/// What a request sets over its agent function's (or the runtime's) settings.
#[derive(Debug, Default)]
pub(crate) struct Overrides {
    policy: Option<RetryPolicy>,
    limits: Option<UsageLimits>,
}

impl Overrides {
    /// `function` with these settings over its own.
    pub(crate) fn apply(&self, function: &mut AgentFn) {
        if let Some(policy) = self.policy {
            function.policy = policy;
        }
        if let Some(limits) = self.limits {
            function.limits = limits;
        }
    }
}
