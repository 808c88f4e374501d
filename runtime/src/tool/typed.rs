//! Typed tools: a function of arguments that derive `Deserialize` and `JsonSchema`, registered with
//! the schema of its argument type, its input parsed before it runs.

use std::future::Future;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::tool::toolbox::Toolbox;
use crate::tool::{ToolError, ToolSpec};

impl Toolbox {
    /// Registers an async function of typed arguments as the tool `name`, described by
    /// `description`: the model is offered `A`'s JSON schema (from its `schemars::JsonSchema`
    /// derive), and each call's input is parsed as an `A` before the function runs. Input that does
    /// not parse goes back to the model as the tool's error, naming the field
    /// (`` invalid arguments for `get_weather`: city: invalid type: integer `7`, expected a string ``),
    /// and the function is not called. Its `Ok` text is the result the model reads, its `Err` goes
    /// back as an error result, as with [`Toolbox::with_fn`].
    ///
    /// # Examples
    ///
    /// ```
    /// use agentic_runtime::{Runtime, Scripted, ScriptedProvider, ToolError, Toolbox};
    /// use serde_json::json;
    ///
    /// /// The city to look up.
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Weather {
    ///     /// A city's name, e.g. "Paris".
    ///     city: String,
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let tools = Toolbox::new().with_typed_fn("get_weather", "The weather in a city", |args: Weather| async move {
    ///     Ok::<_, ToolError>(format!("sunny in {}", args.city))
    /// });
    /// let schema = &tools.specs()[0].parameters;
    /// assert_eq!(schema["properties"]["city"]["type"], "string");
    /// let provider = ScriptedProvider::new([
    ///     Scripted::tool_call("get_weather", json!({"city": 7})), // not a string: the model hears why
    ///     Scripted::tool_call("get_weather", json!({"city": "Paris"})),
    ///     Scripted::ok("It is sunny in Paris."),
    /// ]);
    /// let runtime = Runtime::builder(provider.clone()).with_tools(tools).build().unwrap();
    /// let reply = runtime.exec("What is the weather in Paris?").await.unwrap();
    /// assert_eq!(reply.text(), "It is sunny in Paris.");
    /// let results = format!("{:?}", provider.requests()[1].messages.last().unwrap());
    /// assert!(results.contains("`city` must be a string, not an integer"), "{results}");
    /// # }
    /// ```
    ///
    /// # Panics
    ///
    /// If `name` is not 1 to 64 ASCII letters, digits, `_` or `-`, or is already registered.
    pub fn with_typed_fn<A, F, Fut>(self, name: impl Into<String>, description: impl Into<String>, function: F) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<String, ToolError>> + Send + 'static,
    {
        let name = name.into();
        let spec = ToolSpec::new(name.clone(), description, schema_of::<A>());
        let function = move |input: Value| {
            let parsed = parse::<A>(&name, input).map(&function);
            async move {
                match parsed {
                    Ok(call) => call.await,
                    Err(error) => Err(error),
                }
            }
        };
        self.register_fn(spec, None, function)
    }
}

/// `A`'s JSON schema as a tool's parameters: the derive's, without the `$schema` keyword that no
/// provider reads.
fn schema_of<A: JsonSchema>() -> Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(A)).unwrap_or(Value::Bool(true));
    if let Some(object) = schema.as_object_mut() {
        object.remove("$schema");
    }
    schema
}

/// The input of a call of the tool `name` as an `A`, or the error the model reads: what did not
/// parse, and where.
fn parse<A: DeserializeOwned>(name: &str, input: Value) -> Result<A, ToolError> {
    serde_path_to_error::deserialize(input).map_err(|error| {
        let path = error.path().to_string();
        let why = error.into_inner();
        match path.as_str() {
            "." => ToolError::new(format!("invalid arguments for `{name}`: {why}")),
            _ => ToolError::new(format!("invalid arguments for `{name}`: {path}: {why}")),
        }
    })
}
