//! The OpenAI-compatible chat completions API, streamed: OpenAI, vLLM, Ollama, llama.cpp, OpenRouter...

use crate::provider::ApiKey;
use serde::Deserialize;
use serde_json::{Value, json};

use super::super::Request;
use super::super::http::{
    self, Auth, ConfigError, DecodeError, Decoder, Endpoint, EnvNames, ErrorFacts, Form, ModelName, Out, Wire,
    impl_http_provider,
};
use super::super::sse::SseEvent;
use super::finish;
use super::parts::Content;
use crate::error::ModelError;
use crate::message::usage::Usage;
use crate::message::{ContentBlock, Message, StopReason};

/// A provider for any OpenAI-compatible `POST {base}/chat/completions` server, streamed (SSE).
///
/// It sends the system instruction, the conversation (text, tool calls and tool results), the
/// tools offered (`tools: [{"type": "function", "function": {name, description, parameters}}]`,
/// only when there are some), `max_tokens` and `temperature` when set,
/// `stream_options: {"include_usage": true}`, `Authorization: Bearer <key>` when a key is set, and
/// the call's number as `x-agentic-call`. A request with a [schema](Request::schema) asks for
/// structured outputs (`response_format: {"type": "json_schema", "json_schema": {name, schema,
/// "strict": true}}`); a server that refuses it (a 400 naming `response_format` or `json_schema`)
/// is asked again at once, within the same call, in JSON mode (`{"type": "json_object"}`). It reads
/// text deltas (a `content` string, or a list of parts as Mistral's reasoning models send it: the
/// `text` parts are the answer, a `thinking` part a heartbeat), tool-call deltas, the
/// `finish_reason` in any case (`stop`, `eos` -> [`StopReason::Stop`], `length`, `model_length` ->
/// [`StopReason::Length`], `tool_calls` -> [`StopReason::ToolUse`]; `content_filter` fails the call
/// as a permanent `ContentFilterError`, `error` as a transient `BadGatewayError`, and a reason no
/// server of this wire documents is no answer), `{"error": ..}` objects in
/// the stream, the answering `model` (its first chunk's) and the `usage` chunk the server sends
/// before `[DONE]` (`prompt_tokens`, `completion_tokens`, `prompt_tokens_details.cached_tokens`; a
/// server that ignores `stream_options` sends none, and the call reports no usage). Every failure is a typed [`ModelError`]: the HTTP status with the error body's
/// message and code, `retry-after-ms` / `Retry-After` / `x-should-retry`, or the transport kind.
/// The key never appears in an error or in Debug output.
///
/// # Examples
///
/// ```no_run
/// use agentic_runtime::Runtime;
/// use agentic_runtime::provider::OpenAiProvider;
///
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// // OPENAI_API_KEY, and OPENAI_BASE_URL for another server (no key needed then).
/// let provider = OpenAiProvider::from_env()?.with_model("gpt-4o-mini").with_max_tokens(512);
/// let runtime = Runtime::new(provider);
/// let reply = runtime.exec("Say hello.").await?;
/// println!("{}", reply.text());
///
/// // A local server: no key.
/// let local = OpenAiProvider::new("http://127.0.0.1:8080/v1", None).with_model("llama3");
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct OpenAiProvider {
    endpoint: Endpoint,
    max_tokens: Option<u32>,
}

impl OpenAiProvider {
    /// The default base URL, `https://api.openai.com/v1`.
    pub const DEFAULT_BASE_URL: &'static str = "https://api.openai.com/v1";

    /// The default model, `gpt-4o-mini`.
    pub const DEFAULT_MODEL: &'static str = "gpt-4o-mini";

    /// A provider for the server at `base_url` (e.g. `https://api.openai.com/v1` or
    /// `http://127.0.0.1:8080/v1`), with `api_key` if the server needs one (an empty key counts as
    /// none). An invalid base URL makes every call fail with a programming error; [`Self::from_env`]
    /// checks it up front.
    ///
    /// `api_key` is `None`, a `&str`, a `String` or an `Option<String>` (see [`ApiKey`]).
    pub fn new(base_url: impl Into<String>, api_key: impl Into<ApiKey>) -> Self {
        let api_key = api_key.into().into_option();
        Self { endpoint: Endpoint::new(base_url.into(), api_key, Self::DEFAULT_MODEL), max_tokens: None }
    }

    /// A provider configured from `OPENAI_API_KEY` and `OPENAI_BASE_URL` (default
    /// [`Self::DEFAULT_BASE_URL`]). Fails when the base URL is invalid, or when there is no key and
    /// the base URL is OpenAI's own (a local server needs no key); the error names the variable to set.
    ///
    /// The key is the one paired with that base URL, and goes to its origin alone: for a server
    /// elsewhere, pass its own key to [`Self::new`] ([`WireKind::env_key_for`] gives the
    /// variables' key only to a base URL of their origin).
    ///
    /// [`WireKind::env_key_for`]: super::WireKind::env_key_for
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// The model to ask for.
    ///
    /// # Default
    ///
    /// `"gpt-4o-mini"` ([`Self::DEFAULT_MODEL`]).
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.endpoint.model = model.into();
        self
    }

    /// The most tokens the answer may have, sent as `max_tokens` (understood by OpenAI's older
    /// models and by vLLM, Ollama and llama.cpp; OpenAI's reasoning models want
    /// `max_completion_tokens` and reject it, so leave it unset for those).
    ///
    /// # Default
    ///
    /// Unset: the server's default.
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }
}

impl_http_provider!(OpenAiProvider { max_tokens });

/// A request with a schema asks for structured outputs first ([`Form::Primary`]: `{"type":
/// "json_schema", "json_schema": {name, schema, "strict": true}}`, the answer follows the schema),
/// and from a server that refuses it ([`rejects_schema`]) JSON mode ([`Form::Fallback`]: `{"type":
/// "json_object"}`, the answer is a JSON object, the schema the caller's to check).
impl Wire for OpenAiProvider {
    const PROVIDER: &'static str = "openai";
    const ENV: EnvNames = EnvNames {
        provider: "openai",
        keys: &["OPENAI_API_KEY"],
        base_url: "OPENAI_BASE_URL",
        default_base_url: OpenAiProvider::DEFAULT_BASE_URL,
    };
    const DEFAULT_MODEL: &'static str = OpenAiProvider::DEFAULT_MODEL;
    const AUTH: Auth = Auth { header: "authorization", prefix: "Bearer " };
    type Decoder = OpenAiDecoder;

    fn from_endpoint(endpoint: Endpoint) -> Self {
        Self { endpoint, max_tokens: None }
    }

    fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    fn url(&self, _: &Request<'_>) -> Result<String, ModelError> {
        self.endpoint.url("/chat/completions")
    }

    fn fallback(&self, request: &Request<'_>) -> Option<fn(u16, &str) -> bool> {
        request.schema.map(|_| rejects_schema as fn(u16, &str) -> bool)
    }

    fn max_tokens(&self) -> Option<u64> {
        self.max_tokens.map(u64::from)
    }

    fn decoder(&self, _: &Request<'_>) -> OpenAiDecoder {
        OpenAiDecoder::default()
    }

    fn body(&self, request: &Request<'_>, form: Form) -> Value {
        let mut body = json!({
            "model": self.endpoint.model,
            "messages": messages(request),
            "stream": true,
            // The usage comes in a last chunk with no choices; servers that do not know the option
            // ignore it.
            "stream_options": {"include_usage": true},
        });
        if let Some(max_tokens) = self.max_tokens {
            body["max_tokens"] = json!(max_tokens);
        }
        if let Some(temperature) = self.endpoint.temperature {
            body["temperature"] = json!(temperature);
        }
        if !request.tools.is_empty() {
            body["tools"] = request
                .tools
                .iter()
                .map(|tool| {
                    json!({
                        "type": "function",
                        "function": {"name": tool.name, "description": tool.description, "parameters": tool.parameters},
                    })
                })
                .collect();
        }
        if let Some(schema) = request.schema {
            body["response_format"] = match form {
                Form::Primary => json!({
                    "type": "json_schema",
                    "json_schema": {"name": schema.name, "schema": schema.schema, "strict": true},
                }),
                Form::Fallback => json!({"type": "json_object"}),
            };
            if form == Form::Fallback {
                // JSON mode needs the word "JSON" in the messages (OpenAI answers 400 otherwise) and
                // knows no schema: a system message gives both.
                if let Some(messages) = body["messages"].as_array_mut() {
                    messages.insert(0, json!({"role": "system", "content": json_mode_instruction(schema)}));
                }
            }
        }
        body
    }
}

/// The system instruction of a request in JSON mode: the word "JSON", which the API requires, and
/// the schema, which JSON mode does not know.
pub(super) fn json_mode_instruction(schema: &super::super::ResponseSchema) -> String {
    let schema = serde_json::to_string(&schema.schema).unwrap_or_default();
    format!("Answer with JSON only, following this JSON schema: {schema}")
}

/// Whether a server refused structured outputs: a 400 that names `response_format` or
/// `json_schema` (llama.cpp, vLLM and older servers that do not know it, or OpenAI when the schema
/// does not fit strict mode). Such a request gets JSON mode instead.
pub(super) fn rejects_schema(status: u16, body: &str) -> bool {
    status == 400 && (body.contains("response_format") || body.contains("json_schema"))
}

/// The chat messages: the system instruction first, tool results as `tool` messages (before the
/// user's text of the same turn), assistant text and `tool_calls`. Assistant messages with neither
/// (a failed call's empty message) are left out: the API rejects them.
fn messages(request: &Request<'_>) -> Vec<Value> {
    let mut out = Vec::with_capacity(request.messages.len() + 1);
    if let Some(system) = request.system {
        out.push(json!({"role": "system", "content": system}));
    }
    for message in request.messages {
        match message {
            Message::User { content } => {
                let mut texts = Vec::new();
                for block in content {
                    match block {
                        ContentBlock::ToolResult { tool_use_id, content, is_error } => {
                            let content = tool_result_text(content, *is_error);
                            out.push(json!({"role": "tool", "tool_call_id": tool_use_id, "content": content}));
                        }
                        ContentBlock::Text { text } => texts.push(text.as_str()),
                        ContentBlock::ToolUse { .. } => {}
                    }
                }
                let tool_results_only = texts.is_empty() && !content.is_empty();
                if !tool_results_only {
                    out.push(json!({"role": "user", "content": text_content(&texts)}));
                }
            }
            Message::Assistant(message) => {
                let text = message.text_content();
                let calls: Vec<Value> = message
                    .content
                    .iter()
                    .filter_map(|block| match block {
                        ContentBlock::ToolUse { id, name, input } => Some(json!({
                            "id": id,
                            "type": "function",
                            "function": {"name": name, "arguments": arguments_text(input)},
                        })),
                        _ => None,
                    })
                    .collect();
                if text.is_empty() && calls.is_empty() {
                    continue;
                }
                let mut entry =
                    json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text) }});
                if !calls.is_empty() {
                    entry["tool_calls"] = Value::Array(calls);
                }
                out.push(entry);
            }
        }
    }
    out
}

/// A tool result as the model reads it: a failure says so first (the API has no error flag).
pub(super) fn tool_result_text(content: &str, is_error: bool) -> String {
    if is_error && !content.starts_with("Error") { format!("Error: {content}") } else { content.to_owned() }
}

/// One text as a string; several as content parts.
fn text_content(texts: &[&str]) -> Value {
    match texts {
        [] => json!(""),
        [text] => json!(text),
        texts => Value::Array(texts.iter().map(|text| json!({"type": "text", "text": text})).collect()),
    }
}

/// The arguments as the JSON text the API wants; a string input is the model's raw (invalid) text.
pub(super) fn arguments_text(input: &Value) -> String {
    match input {
        Value::String(raw) => raw.clone(),
        other => other.to_string(),
    }
}

#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(default)]
    choices: Option<Vec<Choice>>,
    #[serde(default)]
    error: Option<Value>,
    #[serde(default, borrow)]
    model: ModelName<'a>,
    /// Read as any JSON: a usage of an unexpected shape is left out, not a failed call.
    #[serde(default)]
    usage: Option<Value>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    index: u32,
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<Content>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCallChunk>>,
}

#[derive(Deserialize)]
struct ToolCallChunk {
    #[serde(default)]
    index: Option<u32>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionChunk>,
}

#[derive(Deserialize)]
struct FunctionChunk {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

/// The chat completions stream: chunks until `[DONE]`.
///
/// The usage chunk comes after the `finish_reason` chunk: the call ends at `[DONE]` (or at the end
/// of the body, once a `finish_reason` came), never at the `finish_reason`, so it is read.
#[derive(Debug, Default)]
pub(crate) struct OpenAiDecoder {
    /// The `finish_reason` of choice 0, once sent.
    finish: Option<StopReason>,
    /// The tool-call indices seen so far.
    tool_calls: Vec<u32>,
}

impl OpenAiDecoder {
    fn stop_reason(&self) -> StopReason {
        self.finish.unwrap_or(if self.tool_calls.is_empty() { StopReason::Stop } else { StopReason::ToolUse })
    }
}

/// A `usage` object (`null` in every chunk but the last when the server sends usage): the prompt
/// and completion tokens, with the cached ones; `None` when it has neither count.
fn usage(usage: Option<&Value>) -> Option<Usage> {
    let usage = usage?;
    let (input, output) = (http::tokens(usage, "prompt_tokens"), http::tokens(usage, "completion_tokens"));
    if input.is_none() && output.is_none() {
        return None;
    }
    let cached = usage.get("prompt_tokens_details").and_then(|details| http::tokens(details, "cached_tokens"));
    Some(Usage::new(input.unwrap_or(0), output.unwrap_or(0)).with_cache_read(cached.unwrap_or(0)))
}

impl Decoder for OpenAiDecoder {
    const ANSWER: &'static str = "a chat completion (an object with `choices`)";

    fn event(&mut self, event: &SseEvent, out: &mut Out<'_>) -> Result<(), DecodeError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            out.done(self.stop_reason());
            return Ok(());
        }
        if data.is_empty() {
            return Ok(());
        }
        let chunk: Chunk = http::parse(data)?;
        if let Some(error) = chunk.error.filter(|error| !error.is_null()) {
            out.error(ErrorFacts::from_error(&error).unwrap_or_default());
            return Ok(());
        }
        out.model(chunk.model.get().unwrap_or_default());
        for choice in chunk.choices.into_iter().flatten().filter(|choice| choice.index == 0) {
            if let Some(delta) = choice.delta {
                self.delta(delta, out, true);
            }
            if self.finish_with(choice.finish_reason, out)? {
                return Ok(());
            }
        }
        if let Some(usage) = usage(chunk.usage.as_ref()) {
            out.usage(usage);
        }
        Ok(())
    }

    fn completed(&self) -> Option<StopReason> {
        self.finish
    }

    fn whole(&mut self, answer: &Value, out: &mut Out<'_>) -> Result<(), DecodeError> {
        let completion: Completion = http::read(answer)?;
        out.model(completion.model.get().unwrap_or_default());
        for choice in completion.choices.into_iter().flatten().filter(|choice| choice.index == 0) {
            if let Some(message) = choice.message {
                self.delta(message, out, false);
            }
            if self.finish_with(choice.finish_reason, out)? {
                return Ok(());
            }
        }
        if let Some(usage) = usage(completion.usage.as_ref()) {
            out.usage(usage);
        }
        out.done(self.stop_reason());
        Ok(())
    }

    fn is_answer(answer: &Value) -> bool {
        answer.get("choices").is_some() || answer.get("object").and_then(Value::as_str) == Some("chat.completion")
    }

    fn finished(&self) -> bool {
        self.finish.is_some()
    }
}

/// A whole chat completion (not streamed): its message reads like one big delta.
#[derive(Deserialize)]
struct Completion<'a> {
    #[serde(default)]
    choices: Option<Vec<WholeChoice>>,
    #[serde(default, borrow)]
    model: ModelName<'a>,
    #[serde(default)]
    usage: Option<Value>,
}

#[derive(Deserialize)]
struct WholeChoice {
    #[serde(default)]
    index: u32,
    #[serde(default)]
    message: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

impl OpenAiDecoder {
    /// A delta's (or a whole message's) text and tool calls; `streamed`: a thinking part is a
    /// sign of life (a whole answer has no idle bound to restart).
    fn delta(&mut self, delta: Delta, out: &mut Out<'_>, streamed: bool) {
        if let Some(content) = delta.content {
            if content.thinking && streamed {
                out.heartbeat();
            }
            out.text(content.text);
        }
        for (position, call) in delta.tool_calls.into_iter().flatten().enumerate() {
            self.tool_call(call, position, out);
        }
    }

    fn tool_call(&mut self, call: ToolCallChunk, position: usize, out: &mut Out<'_>) {
        let index = call.index.unwrap_or(u32::try_from(position).unwrap_or(u32::MAX));
        let (name, arguments) = call.function.map(|function| (function.name, function.arguments)).unwrap_or_default();
        let id = call.id.filter(|id| !id.is_empty());
        let name = name.filter(|name| !name.is_empty());
        let new = !self.tool_calls.contains(&index);
        if new {
            self.tool_calls.push(index);
        }
        if new || id.is_some() || name.is_some() {
            out.tool_start(index, id.unwrap_or_default(), name.unwrap_or_default());
        }
        if let Some(arguments) = arguments {
            out.tool_args(index, arguments);
        }
    }
}

impl OpenAiDecoder {
    /// Reads choice 0's `finish_reason`, when it has one: an end is kept for the call's last event;
    /// a filter's or the server's failure ends the call with its error (`true`: nothing more of the
    /// chunk is read); a reason this wire does not know is an answer it cannot read.
    fn finish_with(&mut self, reason: Option<String>, out: &mut Out<'_>) -> Result<bool, DecodeError> {
        let Some(reason) = reason.filter(|reason| !reason.is_empty()) else { return Ok(false) };
        match finish_reason(&reason) {
            Some(Finish::Ends(stop)) => {
                self.finish = Some(stop);
                Ok(false)
            }
            Some(Finish::Filtered) => {
                out.error(finish::filtered(&format!("`finish_reason` {reason:?}")));
                Ok(true)
            }
            Some(Finish::Failed) => {
                out.error(finish::server_failed(&format!("`finish_reason` {reason:?}")));
                Ok(true)
            }
            None => Err(finish::unknown("finish_reason", &reason)),
        }
    }
}

/// What a `finish_reason` says of the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Finish {
    /// It is complete, cut by the token limit, or asks for tools.
    Ends(StopReason),
    /// A content filter stopped it: permanent.
    Filtered,
    /// The server says it failed: transient.
    Failed,
}

/// The `finish_reason`s of OpenAI and of the servers that speak its wire, in any case; `None`
/// for one none of them sends, which is no answer: "stop" means stopped, "eos" too, but a reason
/// nobody documents could as well mean cut or refused.
fn finish_reason(reason: &str) -> Option<Finish> {
    const ENDS: &[(&str, Finish)] = &[
        ("stop", Finish::Ends(StopReason::Stop)),
        ("length", Finish::Ends(StopReason::Length)),
        ("tool_calls", Finish::Ends(StopReason::ToolUse)),
        ("function_call", Finish::Ends(StopReason::ToolUse)),
        ("content_filter", Finish::Filtered),
        // OpenRouter and Mistral: the model behind them broke off.
        ("error", Finish::Failed),
        // Mistral: the model's context window, not `max_tokens`, cut the answer.
        ("model_length", Finish::Ends(StopReason::Length)),
        // Text Generation Inference and llama.cpp's older builds.
        ("eos", Finish::Ends(StopReason::Stop)),
        ("eos_token", Finish::Ends(StopReason::Stop)),
        ("stop_sequence", Finish::Ends(StopReason::Stop)),
        // Gateways that pass Anthropic's reasons through.
        ("end_turn", Finish::Ends(StopReason::Stop)),
        ("max_tokens", Finish::Ends(StopReason::Length)),
        ("tool_use", Finish::Ends(StopReason::ToolUse)),
        ("refusal", Finish::Filtered),
        // DeepSeek: its inference system ran out of resources mid-answer; vLLM: the request was aborted.
        ("insufficient_system_resource", Finish::Failed),
        ("abort", Finish::Failed),
    ];
    ENDS.iter().find(|(name, _)| name.eq_ignore_ascii_case(reason)).map(|(_, finish)| *finish)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::StreamEvent;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| pairs.iter().find(|(key, _)| *key == name).map(|(_, value)| (*value).to_owned())
    }

    #[test]
    fn from_env_needs_a_key_only_for_the_default_base_url() {
        let error = OpenAiProvider::from_lookup(env(&[])).unwrap_err();
        assert_eq!(
            error.to_string(),
            "openai: no API key: set OPENAI_API_KEY to your API key (or set OPENAI_BASE_URL to a server that needs none)"
        );
        assert!(OpenAiProvider::from_lookup(env(&[("OPENAI_API_KEY", " ")])).is_err());
        let local = OpenAiProvider::from_lookup(env(&[("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1/")])).unwrap();
        assert_eq!(local.base_url(), "http://127.0.0.1:11434/v1");
        assert!(!local.has_api_key());
        let keyed = OpenAiProvider::from_lookup(env(&[("OPENAI_API_KEY", "sk-canary-SECRET123")])).unwrap();
        assert_eq!(
            (keyed.base_url(), keyed.model()),
            (OpenAiProvider::DEFAULT_BASE_URL, OpenAiProvider::DEFAULT_MODEL)
        );
        assert!(!format!("{keyed:?}").contains("SECRET123"));
        let bad = OpenAiProvider::from_lookup(env(&[("OPENAI_BASE_URL", "localhost:8080")])).unwrap_err();
        assert!(bad.to_string().starts_with("OPENAI_BASE_URL is not a valid base URL"), "{bad}");
    }

    #[test]
    fn the_body_carries_system_turns_tool_calls_and_tool_results() {
        let mut assistant = crate::message::AssistantMessage::text("let me look");
        assistant.content.push(ContentBlock::ToolUse {
            id: "call_1".into(),
            name: "search".into(),
            input: json!({"q": "rust"}),
        });
        assistant.stop_reason = StopReason::ToolUse;
        let history = [
            Message::user("find rust"),
            Message::Assistant(assistant),
            Message::User {
                content: vec![ContentBlock::ToolResult {
                    tool_use_id: "call_1".into(),
                    content: "timeout".into(),
                    is_error: true,
                }],
            },
            Message::Assistant(crate::message::AssistantMessage::error_event("", None)),
            Message::User { content: vec![ContentBlock::text("a"), ContentBlock::text("b")] },
        ];
        let mut request = Request::new(&history);
        request.system = Some("be brief");
        let body = OpenAiProvider::new("http://x/v1", None).with_max_tokens(64).with_temperature(0.5).body(&request);
        assert_eq!(
            body,
            json!({
                "model": "gpt-4o-mini",
                "stream": true,
                "stream_options": {"include_usage": true},
                "max_tokens": 64,
                "temperature": 0.5,
                "messages": [
                    {"role": "system", "content": "be brief"},
                    {"role": "user", "content": "find rust"},
                    {"role": "assistant", "content": "let me look", "tool_calls": [
                        {"id": "call_1", "type": "function", "function": {"name": "search", "arguments": "{\"q\":\"rust\"}"}}
                    ]},
                    {"role": "tool", "tool_call_id": "call_1", "content": "Error: timeout"},
                    {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
                ],
            })
        );
    }

    #[test]
    fn tools_are_sent_only_when_offered() {
        let history = [Message::user("weather?")];
        let provider = OpenAiProvider::new("http://x/v1", None);
        let mut request = Request::new(&history);
        assert!(provider.body(&request).get("tools").is_none());
        let tools = [
            crate::tool::ToolSpec::new(
                "get_weather",
                "The weather in a city.",
                json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
            ),
            crate::tool::ToolSpec::new("get_time", "The time.", Value::Null),
        ];
        request.tools = &tools;
        assert_eq!(
            provider.body(&request)["tools"],
            json!([
                {"type": "function", "function": {
                    "name": "get_weather",
                    "description": "The weather in a city.",
                    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
                }},
                {"type": "function", "function": {
                    "name": "get_time",
                    "description": "The time.",
                    "parameters": {"type": "object", "properties": {}},
                }},
            ])
        );
    }

    /// The events a streamed body yields.
    fn replay(body: &str) -> Vec<Result<StreamEvent, ModelError>> {
        http::replay(OpenAiDecoder::default(), &[body.as_bytes()], false, None)
    }

    #[test]
    fn the_model_once_and_the_usage_chunk_after_the_finish_reason() {
        let body = [
            r#"data: {"model":"gpt-4o-2024","choices":[{"index":0,"delta":{"content":"Hi"}}],"usage":null}"#,
            r#"data: {"model":"gpt-4o-2024","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}"#,
            r#"data: {"model":"gpt-4o-2024","choices":[],"usage":{"prompt_tokens":120,"completion_tokens":40,"total_tokens":160,"prompt_tokens_details":{"cached_tokens":100}}}"#,
            "data: [DONE]",
        ]
        .join("\n\n")
            + "\n\n";
        let usage = Usage::new(120, 40).with_cache_read(100);
        assert_eq!(
            replay(&body),
            [
                Ok(StreamEvent::Model("gpt-4o-2024".into())),
                Ok(StreamEvent::TextDelta("Hi".into())),
                Ok(StreamEvent::Usage(usage)),
                Ok(StreamEvent::Done { stop_reason: StopReason::Stop }),
            ]
        );
        // The body ends after the usage chunk, without `[DONE]`: the call is complete all the same.
        let cut = body.trim_end_matches("data: [DONE]\n\n");
        assert_eq!(
            replay(cut)[2..],
            [Ok(StreamEvent::Usage(usage)), Ok(StreamEvent::Done { stop_reason: StopReason::Stop })]
        );
    }

    #[test]
    fn a_model_that_is_not_a_string_is_left_out_and_an_escaped_one_is_read() {
        for model in ["12", "null", "true", r#"{"id": [1, {"a": "b"}]}"#, r#"["m"]"#, r#""""#] {
            let chunk = format!(r#"data: {{"model":{model},"choices":[{{"index":0,"delta":{{"content":"Hi"}}}}]}}"#);
            let events = replay(&format!("{chunk}\n\ndata: [DONE]\n\n"));
            assert_eq!(events[0], Ok(StreamEvent::TextDelta("Hi".into())), "model {model}");
        }
        let escaped = r#"data: {"model":"gpt\u002d4o","choices":[]}"#;
        assert_eq!(replay(&format!("{escaped}\n\ndata: [DONE]\n\n"))[0], Ok(StreamEvent::Model("gpt-4o".into())));
    }

    #[test]
    fn missing_and_malformed_usage_is_left_out() {
        let done = r#"data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#;
        let with = |usage: &str| {
            format!("{done}\n\ndata: {{\"choices\":null,\"model\":7,\"usage\":{usage}}}\n\ndata: [DONE]\n\n")
        };
        for (usage, expected) in [
            ("null", None),
            ("{}", None),
            ("\"lots\"", None),
            ("[1, 2]", None),
            (r#"{"prompt_tokens":-1,"completion_tokens":"2"}"#, None),
            (r#"{"completion_tokens":7}"#, Some(Usage::new(0, 7))),
            (r#"{"prompt_tokens":5,"completion_tokens":1.5,"prompt_tokens_details":null}"#, Some(Usage::new(5, 0))),
            (
                r#"{"prompt_tokens":5,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":"x"}}"#,
                Some(Usage::new(5, 2)),
            ),
        ] {
            let events = replay(&with(usage));
            let reported = events.iter().find_map(|event| match event {
                Ok(StreamEvent::Usage(usage)) => Some(*usage),
                _ => None,
            });
            assert_eq!(reported, expected, "{usage}");
            assert_eq!(events.last(), Some(&Ok(StreamEvent::Done { stop_reason: StopReason::Stop })), "{usage}");
            assert!(!events.iter().any(|event| matches!(event, Ok(StreamEvent::Model(_)))), "{usage}");
        }
    }

    #[test]
    fn a_whole_completion_reports_its_model_and_usage() {
        let answer = json!({"model": "m-1", "choices": [{"index": 0, "message": {"content": "ok"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}});
        let events = http::replay(OpenAiDecoder::default(), &[answer.to_string().as_bytes()], true, None);
        assert_eq!(
            events,
            [
                Ok(StreamEvent::Model("m-1".into())),
                Ok(StreamEvent::TextDelta("ok".into())),
                Ok(StreamEvent::Usage(Usage::new(3, 1))),
                Ok(StreamEvent::Done { stop_reason: StopReason::Stop }),
            ]
        );
    }

    /// A gateway (LiteLLM, OpenRouter) that re-emits Anthropic's error types on the OpenAI wire: still
    /// typed, through the shared spellings consulted after OpenAI's own codes.
    #[test]
    fn a_gateways_anthropic_type_on_the_openai_wire_is_typed() {
        let body = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n\
                    data: {\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
        let events = replay(body);
        let [Ok(StreamEvent::TextDelta(_)), Ok(StreamEvent::Error { message, error: Some(error) })] = &events[..]
        else {
            panic!("{events:?}")
        };
        assert_eq!(message, "Overloaded");
        assert_eq!(
            (error.kind(), error.status(), error.code()),
            ("OverloadedError", Some(529), Some("overloaded_error"))
        );
        let openai =
            "data: {\"error\":{\"message\":\"slow down\",\"type\":\"requests\",\"code\":\"rate_limit_exceeded\"}}\n\n";
        let [Ok(StreamEvent::Error { error: Some(error), .. })] = &replay(openai)[..] else { panic!() };
        assert_eq!(
            (error.kind(), error.status(), error.code()),
            ("RateLimitError", Some(429), Some("rate_limit_exceeded"))
        );
    }

    #[test]
    fn finish_reasons() {
        assert_eq!(finish_reason("stop"), Some(Finish::Ends(StopReason::Stop)));
        assert_eq!(finish_reason("STOP"), Some(Finish::Ends(StopReason::Stop)));
        assert_eq!(finish_reason("length"), Some(Finish::Ends(StopReason::Length)));
        assert_eq!(finish_reason("tool_calls"), Some(Finish::Ends(StopReason::ToolUse)));
        assert_eq!(finish_reason("content_filter"), Some(Finish::Filtered));
        assert_eq!(finish_reason("error"), Some(Finish::Failed));
        assert_eq!(finish_reason("sleepy"), None);
    }

    /// `content_filter` is the filter's stop, not the model's: a permanent error that says so,
    /// whatever text came before it (the Responses wire fails it alike).
    #[test]
    fn a_content_filter_finish_is_a_permanent_error() {
        let body = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Here is how to\"}}]}\n\n\
                    data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"content_filter\"}]}\n\n\
                    data: [DONE]\n\n";
        let events = replay(body);
        let [Ok(StreamEvent::TextDelta(_)), Ok(StreamEvent::Error { message, error: Some(error) })] = &events[..]
        else {
            panic!("{events:?}")
        };
        assert_eq!(
            (error.kind(), error.status(), error.code()),
            ("ContentFilterError", Some(400), Some("content_filter"))
        );
        assert_eq!(
            message,
            "the answer was stopped by the content filter (`finish_reason` \"content_filter\"): the same request \
             would be stopped again; change the prompt"
        );
        let verdict = crate::classify::exec_verdict(&format!("{}: {message}", error.kind()), Some(error));
        assert_eq!(verdict.action, crate::classify::ExecAction::FailPermanently);
        // Not streamed: the same.
        let whole =
            json!({"choices": [{"index": 0, "message": {"content": "Here"}, "finish_reason": "content_filter"}]});
        let events = http::replay(OpenAiDecoder::default(), &[whole.to_string().as_bytes()], true, None);
        assert!(
            matches!(events.last(), Some(Ok(StreamEvent::Error { error: Some(error), .. })) if error.kind() == "ContentFilterError"),
            "{events:?}"
        );
    }

    /// OpenRouter's `finish_reason: "error"` is the server's failure (transient); a reason no server
    /// documents is no answer: a shape this client does not read, naming it.
    #[test]
    fn an_error_or_unknown_finish_is_not_an_answer() {
        let finish = |reason: &str| {
            format!(
                "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"Hi\"}}}}]}}\n\n\
                 data: {{\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"{reason}\"}}]}}\n\ndata: [DONE]\n\n"
            )
        };
        let events = replay(&finish("error"));
        let Some(Ok(StreamEvent::Error { error: Some(error), .. })) = events.last() else { panic!("{events:?}") };
        assert_eq!((error.kind(), error.status()), ("BadGatewayError", Some(502)));
        let events = replay(&finish("sleepy"));
        let Some(Err(error)) = events.last() else { panic!("{events:?}") };
        assert_eq!(error.transport_kind(), Some(crate::error::TransportKind::Corrupted));
        assert_eq!(error.code(), Some("unreadable_answer"));
        assert!(
            error.message().starts_with(
                "malformed chunk: `finish_reason` \"sleepy\" is not a finish reason this client knows: \"{"
            ),
            "{error}"
        );
    }

    /// Mistral's reasoning models stream `content` as a list of parts: the text parts are the
    /// answer, a thinking part a sign of life; not streamed, the same message reads the same.
    #[test]
    fn mistrals_content_parts_are_read() {
        let body = [
            r#"data: {"model":"magistral-medium-2509","choices":[{"index":0,"delta":{"role":"assistant","content":[{"type":"thinking","thinking":[{"type":"text","text":"The user wants"}]}]}}]}"#,
            r#"data: {"choices":[{"index":0,"delta":{"content":[{"type":"text","text":"Par"}]}}]}"#,
            r#"data: {"choices":[{"index":0,"delta":{"content":"is"},"finish_reason":"stop"}]}"#,
            "data: [DONE]",
        ]
        .join("\n\n")
            + "\n\n";
        assert_eq!(
            replay(&body),
            [
                Ok(StreamEvent::Model("magistral-medium-2509".into())),
                Ok(StreamEvent::Heartbeat),
                Ok(StreamEvent::TextDelta("Par".into())),
                Ok(StreamEvent::TextDelta("is".into())),
                Ok(StreamEvent::Done { stop_reason: StopReason::Stop }),
            ]
        );
        let whole = json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": [
            {"type": "thinking", "thinking": [{"type": "text", "text": "Hmm"}]}, {"type": "text", "text": "Paris"}]},
            "finish_reason": "stop"}]});
        let events = http::replay(OpenAiDecoder::default(), &[whole.to_string().as_bytes()], true, None);
        assert_eq!(
            events,
            [Ok(StreamEvent::TextDelta("Paris".into())), Ok(StreamEvent::Done { stop_reason: StopReason::Stop })]
        );
    }
}
