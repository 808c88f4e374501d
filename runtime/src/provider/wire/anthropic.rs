//! Anthropic's Messages API, streamed.

use crate::provider::ApiKey;
use reqwest::header::{HeaderMap, HeaderValue};
use serde::Deserialize;
use serde_json::{Value, json};

use super::super::Request;
use super::super::http::{
    self, Auth, ConfigError, DecodeError, Decoder, Endpoint, EnvNames, ErrorFacts, Form, Out, Wire, impl_http_provider,
};
use super::super::sse::SseEvent;
use super::finish;
use crate::error::ModelError;
use crate::message::usage::Usage;
use crate::message::{ContentBlock, Message, StopReason};

/// A provider for Anthropic's `POST {base}/v1/messages`, streamed (SSE).
///
/// It sends `x-api-key` (when a key is set), `anthropic-version: 2023-06-01`, the call's number as
/// `x-agentic-call`, and a body with the model, `max_tokens` (the API requires it), the system
/// instruction, the conversation (text, `tool_use` and `tool_result` blocks), the tools offered
/// (`tools: [{name, description, input_schema}]`, only when there are some) and `temperature` when
/// set. It reads every event: `message_start` (the answering `model`, and the `usage` so far),
/// `content_block_start` (text or `tool_use`), `content_block_delta` (`text_delta`,
/// `input_json_delta`), `content_block_stop`, `message_delta` (`end_turn`, `stop_sequence` and
/// `pause_turn` -> [`StopReason::Stop`], `max_tokens` and `model_context_window_exceeded` ->
/// [`StopReason::Length`], `tool_use` -> [`StopReason::ToolUse`]; `refusal` fails the call as a
/// permanent `ContentFilterError`, as a filtered answer does on every wire, and a stop reason the
/// API does not document is no answer; its `usage` counts replace those sent before, the others are kept),
/// `message_stop`, `ping` and `error`. The API pings while the model thinks, so every event without
/// content (`message_start`, `ping`, a thinking delta) is also sent as a [`StreamEvent::Heartbeat`](crate::provider::StreamEvent::Heartbeat):
/// a stream that started and then sends nothing for `idle_timeout_ms` ends there, before its first
/// content too. A request with a [schema](Request::schema) offers one more
/// tool, named as the schema, whose `input_schema` is the schema (after the request's own tools),
/// and makes the model call a tool: that one alone (`tool_choice: {"type": "tool", name}`) when it
/// is the only tool, else any of them (`{"type": "any"}`), so that the model can still do its work
/// with the other tools before it answers (forcing the answer tool on every turn would silence
/// them). That tool's `tool_use` block is read as the answer's text (its `input_json_delta`
/// fragments), and its `tool_use` stop as [`StopReason::Stop`]. The usage is `input_tokens`, `output_tokens`,
/// `cache_read_input_tokens` and `cache_creation_input_tokens`: a call that fails after
/// `message_start` still reports its input. An `error` event ends
/// the call as an error message whose text is the event's `message` as sent, typed with the kind,
/// code and HTTP status of its `type` (`overloaded_error` -> `OverloadedError`, 529, retryable).
/// The key never appears in an error or in Debug output.
///
/// # Examples
///
/// ```no_run
/// use agentic_runtime::Runtime;
/// use agentic_runtime::provider::AnthropicProvider;
///
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// // ANTHROPIC_API_KEY, and ANTHROPIC_BASE_URL for a proxy or a test server.
/// let provider = AnthropicProvider::from_env()?.with_model("claude-3-5-haiku-latest").with_max_tokens(512);
/// let reply = Runtime::new(provider).exec("Say hello.").await?;
/// println!("{}", reply.text());
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct AnthropicProvider {
    endpoint: Endpoint,
    max_tokens: u32,
}

impl AnthropicProvider {
    /// The default base URL, `https://api.anthropic.com`.
    pub const DEFAULT_BASE_URL: &'static str = "https://api.anthropic.com";

    /// The default model, `claude-3-5-haiku-latest`.
    pub const DEFAULT_MODEL: &'static str = "claude-3-5-haiku-latest";

    /// The default `max_tokens`, 1024.
    pub const DEFAULT_MAX_TOKENS: u32 = 1024;

    /// The API version sent as `anthropic-version`.
    pub const API_VERSION: &'static str = "2023-06-01";

    /// A provider for the server at `base_url` (e.g. `https://api.anthropic.com`; the path
    /// `/v1/messages` is appended), with `api_key` if the server needs one (an empty key counts as
    /// none). An invalid base URL makes every call fail with a programming error; [`Self::from_env`]
    /// checks it up front.
    ///
    /// `api_key` is `None`, a `&str`, a `String` or an `Option<String>` (see [`ApiKey`]).
    pub fn new(base_url: impl Into<String>, api_key: impl Into<ApiKey>) -> Self {
        let api_key = api_key.into().into_option();
        Self {
            endpoint: Endpoint::new(base_url.into(), api_key, Self::DEFAULT_MODEL),
            max_tokens: Self::DEFAULT_MAX_TOKENS,
        }
    }

    /// A provider configured from `ANTHROPIC_API_KEY` and `ANTHROPIC_BASE_URL` (default
    /// [`Self::DEFAULT_BASE_URL`]). Fails when the base URL is invalid, or when there is no key and
    /// the base URL is Anthropic's own; the error names the variable to set.
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
    /// `"claude-3-5-haiku-latest"` ([`Self::DEFAULT_MODEL`]).
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.endpoint.model = model.into();
        self
    }

    /// The most tokens the answer may have (`max_tokens`, required by the API).
    ///
    /// # Default
    ///
    /// 1024 ([`Self::DEFAULT_MAX_TOKENS`]).
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }
}

impl_http_provider!(AnthropicProvider { max_tokens });

/// A request with a schema offers one more tool, the answer tool, and forces it: no fallback.
impl Wire for AnthropicProvider {
    const PROVIDER: &'static str = "anthropic";
    const ENV: EnvNames = EnvNames {
        provider: "anthropic",
        keys: &["ANTHROPIC_API_KEY"],
        base_url: "ANTHROPIC_BASE_URL",
        default_base_url: AnthropicProvider::DEFAULT_BASE_URL,
    };
    const DEFAULT_MODEL: &'static str = AnthropicProvider::DEFAULT_MODEL;
    const AUTH: Auth = Auth { header: "x-api-key", prefix: "" };
    type Decoder = AnthropicDecoder;

    fn from_endpoint(endpoint: Endpoint) -> Self {
        Self { endpoint, max_tokens: Self::DEFAULT_MAX_TOKENS }
    }

    fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    fn url(&self, _: &Request<'_>) -> Result<String, ModelError> {
        self.endpoint.url("/v1/messages")
    }

    fn headers(&self, headers: &mut HeaderMap) {
        headers.insert("anthropic-version", HeaderValue::from_static(Self::API_VERSION));
    }

    fn max_tokens(&self) -> Option<u64> {
        Some(u64::from(self.max_tokens))
    }

    fn decoder(&self, request: &Request<'_>) -> AnthropicDecoder {
        AnthropicDecoder::answering(request.schema.map(|schema| schema.name.as_str()))
    }

    fn body(&self, request: &Request<'_>, _: Form) -> Value {
        let mut body = json!({
            "model": self.endpoint.model,
            "max_tokens": self.max_tokens,
            "messages": messages(request.messages),
            "stream": true,
        });
        if let Some(system) = request.system {
            body["system"] = json!(system);
        }
        if let Some(temperature) = self.endpoint.temperature {
            body["temperature"] = json!(temperature);
        }
        if !request.tools.is_empty() {
            body["tools"] = request
                .tools
                .iter()
                .map(
                    |tool| json!({"name": tool.name, "description": tool.description, "input_schema": tool.parameters}),
                )
                .collect();
        }
        if let Some(schema) = request.schema {
            // No response format here: the answer is forced through a tool whose input is the answer.
            let tool =
                json!({"name": schema.name, "description": ANSWER_TOOL_DESCRIPTION, "input_schema": schema.schema});
            match body.get_mut("tools").and_then(Value::as_array_mut) {
                Some(tools) => tools.push(tool),
                None => body["tools"] = json!([tool]),
            }
            // Forcing the answer tool while others are offered would keep the model from ever
            // calling them: force a call, and let the model choose which.
            body["tool_choice"] = if request.tools.is_empty() {
                json!({"type": "tool", "name": schema.name})
            } else {
                json!({"type": "any"})
            };
        }
        body
    }
}

/// The description of the tool that carries an answer of a schema.
const ANSWER_TOOL_DESCRIPTION: &str = "Answer with this tool: its input is the answer.";

/// The messages as content blocks. A user turn's `tool_result` blocks come first (the API wants
/// them so); empty text blocks and assistant messages with no content (a failed call's) are left
/// out, as the API rejects them.
fn messages(history: &[Message]) -> Vec<Value> {
    let mut out = Vec::with_capacity(history.len());
    for message in history {
        match message {
            Message::User { content } => {
                let results = content.iter().filter_map(|block| match block {
                    ContentBlock::ToolResult { tool_use_id, content, is_error } => {
                        let mut result = json!({"type": "tool_result", "tool_use_id": tool_use_id, "content": content});
                        if *is_error {
                            result["is_error"] = json!(true);
                        }
                        Some(result)
                    }
                    _ => None,
                });
                let texts = content.iter().filter_map(|block| match block {
                    ContentBlock::Text { text } if !text.is_empty() => Some(json!({"type": "text", "text": text})),
                    _ => None,
                });
                let blocks: Vec<Value> = results.chain(texts).collect();
                out.push(json!({"role": "user", "content": blocks}));
            }
            Message::Assistant(message) => {
                let blocks: Vec<Value> = message
                    .content
                    .iter()
                    .filter_map(|block| match block {
                        ContentBlock::Text { text } if !text.is_empty() => Some(json!({"type": "text", "text": text})),
                        ContentBlock::ToolUse { id, name, input } => {
                            Some(json!({"type": "tool_use", "id": id, "name": name, "input": tool_input(input)}))
                        }
                        _ => None,
                    })
                    .collect();
                if !blocks.is_empty() {
                    out.push(json!({"role": "assistant", "content": blocks}));
                }
            }
        }
    }
    out
}

/// A `tool_use` input must be an object: a string input (the model's raw, invalid JSON) is parsed
/// again, or kept under `"_raw"`.
pub(super) fn tool_input(input: &Value) -> Value {
    match input {
        Value::Object(_) => input.clone(),
        Value::String(raw) => match serde_json::from_str::<Value>(raw) {
            Ok(parsed @ Value::Object(_)) => parsed,
            _ => json!({"_raw": raw}),
        },
        other => json!({"_raw": other}),
    }
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Event {
    /// Read as any JSON: a message of an unexpected shape reports no model or usage, and the
    /// call goes on.
    MessageStart {
        #[serde(default)]
        message: Value,
    },
    ContentBlockStart {
        index: u32,
        content_block: Block,
    },
    ContentBlockDelta {
        index: u32,
        delta: Delta,
    },
    MessageDelta {
        delta: MessageDeltaBody,
        #[serde(default)]
        usage: Value,
    },
    MessageStop,
    Error {
        #[serde(default)]
        error: Value,
    },
    /// `content_block_stop`, `ping`, and any event type added later.
    #[serde(other)]
    Ignored,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
    },
    /// `thinking`, `server_tool_use` and the others.
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(tag = "type")]
enum Delta {
    #[serde(rename = "text_delta")]
    Text { text: String },
    #[serde(rename = "input_json_delta")]
    InputJson { partial_json: String },
    /// `thinking_delta`, `signature_delta`, `citations_delta` and the others.
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct MessageDeltaBody {
    #[serde(default)]
    stop_reason: Option<String>,
}

/// The Messages stream: events until `message_stop`.
#[derive(Debug, Default)]
pub(crate) struct AnthropicDecoder {
    /// The `stop_reason` of the `message_delta`, once sent.
    stop_reason: Option<StopReason>,
    /// A `tool_use` block of a tool other than the answer tool was started.
    tool_use: bool,
    /// The tool forced to carry the answer, for a request with a schema.
    answer_tool: Option<String>,
    /// The indices of the answer tool's blocks: their input is the answer's text.
    answer_blocks: Vec<u32>,
    /// The usage so far: `message_start`'s, with the counts of each `message_delta` in place.
    usage: Option<Usage>,
}

impl AnthropicDecoder {
    /// A wire for a request whose answer comes as the input of the tool `answer_tool`, when there is
    /// one (a request with a schema): that tool's blocks become the answer's text, and the
    /// `tool_use` stop of such an answer a plain stop.
    pub(crate) fn answering(answer_tool: Option<&str>) -> Self {
        Self { answer_tool: answer_tool.map(str::to_owned), ..Self::default() }
    }

    /// Whether a `tool_use` block of tool `name` carries the answer.
    fn is_answer(&self, name: &str) -> bool {
        self.answer_tool.as_deref() == Some(name)
    }

    /// The stop reason: the `message_delta`'s, else the end of a turn or of a tool call. The
    /// answer tool's `tool_use` stop is the answer's end, unless another tool was called too.
    fn stop(&self, sent: Option<StopReason>) -> StopReason {
        match sent {
            Some(StopReason::ToolUse) if !self.tool_use && !self.answer_blocks.is_empty() => StopReason::Stop,
            Some(reason) => reason,
            None if self.tool_use => StopReason::ToolUse,
            None => StopReason::Stop,
        }
    }

    /// Merges the counts `usage` has into the call's usage and sends the result; a usage with none
    /// of the four counts (or not an object) changes nothing.
    fn usage(&mut self, usage: &Value, out: &mut Out<'_>) {
        let count = |key| http::tokens(usage, key);
        let counts = [
            count("input_tokens"),
            count("output_tokens"),
            count("cache_read_input_tokens"),
            count("cache_creation_input_tokens"),
        ];
        if counts.iter().all(Option::is_none) {
            return;
        }
        let merged = self.usage.get_or_insert_default();
        let [input, output, cache_read, cache_creation] = counts;
        merged.input_tokens = input.unwrap_or(merged.input_tokens);
        merged.output_tokens = output.unwrap_or(merged.output_tokens);
        merged.cache_read_input_tokens = cache_read.unwrap_or(merged.cache_read_input_tokens);
        merged.cache_creation_input_tokens = cache_creation.unwrap_or(merged.cache_creation_input_tokens);
        out.usage(*merged);
    }
}

/// The answering model of a message (`message_start`'s, or a whole answer's).
fn model(message: &Value, out: &mut Out<'_>) {
    if let Some(model) = message.get("model").and_then(Value::as_str) {
        out.model(model);
    }
}

/// One event, parsed once from its text when its data names its `type` (as the API's always do);
/// else the SSE `event:` field stands in for it, at the cost of a second pass over a `Value`.
fn parse(event: &SseEvent) -> Result<Event, DecodeError> {
    let data = event.data.trim();
    if let Ok(parsed) = serde_json::from_str::<Event>(data) {
        return Ok(parsed);
    }
    let mut value: Value = serde_json::from_str(data)?;
    if let Value::Object(object) = &mut value {
        if !object.contains_key("type") && !event.event.is_empty() {
            object.insert("type".to_owned(), Value::String(event.event.clone()));
        }
    }
    http::read(&value)
}

impl Decoder for AnthropicDecoder {
    const ANSWER: &'static str = "a message (an object with `\"type\": \"message\"` and `content`)";

    fn event(&mut self, event: &SseEvent, out: &mut Out<'_>) -> Result<(), DecodeError> {
        let parsed = parse(event)?;
        let before = out.mark();
        // The answer's closing events say nothing about a model still thinking.
        let closing = matches!(parsed, Event::MessageDelta { .. } | Event::MessageStop | Event::Error { .. });
        match parsed {
            Event::MessageStart { message } => {
                model(&message, out);
                if let Some(usage) = message.get("usage") {
                    self.usage(usage, out);
                }
            }
            Event::ContentBlockStart { index, content_block } => match content_block {
                Block::Text { text } => out.text(text),
                Block::ToolUse { name, .. } if self.is_answer(&name) => self.answer_blocks.push(index),
                Block::ToolUse { id, name } => {
                    self.tool_use = true;
                    out.tool_start(index, id, name);
                }
                Block::Other => {}
            },
            Event::ContentBlockDelta { index, delta } => match delta {
                Delta::Text { text } => out.text(text),
                Delta::InputJson { partial_json } if self.answer_blocks.contains(&index) => out.text(partial_json),
                Delta::InputJson { partial_json } => out.tool_args(index, partial_json),
                Delta::Other => {}
            },
            Event::MessageDelta { delta, usage } => {
                self.usage(&usage, out);
                if let Some(reason) = delta.stop_reason {
                    match stop_reason(&reason) {
                        Some(Stop::Ends(stop)) => self.stop_reason = Some(stop),
                        Some(Stop::Refused) => out.error(finish::filtered(&format!("`stop_reason` {reason:?}"))),
                        None => return Err(finish::unknown("stop_reason", &reason)),
                    }
                }
            }
            Event::MessageStop => out.done(self.stop(self.stop_reason)),
            Event::Error { error } => out.error(ErrorFacts::from_error(&error).unwrap_or_default()),
            Event::Ignored => {}
        }
        // The API pings while the model thinks: every event without content proves the call alive.
        if !closing && !out.content_since(before) {
            out.heartbeat();
        }
        Ok(())
    }

    fn whole(&mut self, answer: &Value, out: &mut Out<'_>) -> Result<(), DecodeError> {
        let message: WholeMessage = http::read(answer)?;
        model(answer, out);
        for (index, block) in (0u32..).zip(message.content) {
            match block {
                WholeBlock::Text { text } => out.text(text),
                WholeBlock::ToolUse { name, input, .. } if self.is_answer(&name) => {
                    self.answer_blocks.push(index);
                    out.text(input.to_string());
                }
                WholeBlock::ToolUse { id, name, input } => {
                    self.tool_use = true;
                    out.tool_start(index, id, name);
                    if !input.is_null() {
                        out.tool_args(index, input.to_string());
                    }
                }
                WholeBlock::Other => {}
            }
        }
        self.usage(&message.usage, out);
        if let Some(reason) = message.stop_reason {
            match stop_reason(&reason) {
                Some(Stop::Ends(stop)) => self.stop_reason = Some(stop),
                Some(Stop::Refused) => {
                    out.error(finish::filtered(&format!("`stop_reason` {reason:?}")));
                    return Ok(());
                }
                None => return Err(finish::unknown("stop_reason", &reason)),
            }
        }
        out.done(self.stop(self.stop_reason));
        Ok(())
    }

    fn is_answer(answer: &Value) -> bool {
        answer.get("type").and_then(Value::as_str) == Some("message")
            || answer.get("content").is_some_and(Value::is_array)
    }

    fn finished(&self) -> bool {
        self.stop_reason.is_some()
    }
}

/// A whole message (not streamed).
#[derive(Deserialize)]
struct WholeMessage {
    #[serde(default)]
    content: Vec<WholeBlock>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: Value,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WholeBlock {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Value,
    },
    #[serde(other)]
    Other,
}

/// What a `stop_reason` says of the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// It is complete, cut, or asks for tools.
    Ends(StopReason),
    /// The API's classifiers refused it (`refusal`): the same request is refused again.
    Refused,
}

/// The `stop_reason`s Anthropic documents; `None` for any other, which is no answer (whether it
/// is complete cannot be told). `pause_turn` (a server tool's long turn, paused) ends the answer
/// as it stands: this crate offers no server tools to resume.
fn stop_reason(reason: &str) -> Option<Stop> {
    Some(match reason {
        "end_turn" | "stop_sequence" | "pause_turn" => Stop::Ends(StopReason::Stop),
        "max_tokens" | "model_context_window_exceeded" => Stop::Ends(StopReason::Length),
        "tool_use" => Stop::Ends(StopReason::ToolUse),
        "refusal" => Stop::Refused,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::AssistantMessage;
    use crate::provider::StreamEvent;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| pairs.iter().find(|(key, _)| *key == name).map(|(_, value)| (*value).to_owned())
    }

    #[test]
    fn from_env_needs_a_key_only_for_the_default_base_url() {
        let error = AnthropicProvider::from_lookup(env(&[])).unwrap_err();
        assert_eq!(
            error.to_string(),
            "anthropic: no API key: set ANTHROPIC_API_KEY to your API key \
             (or set ANTHROPIC_BASE_URL to a server that needs none)"
        );
        let proxy = AnthropicProvider::from_lookup(env(&[("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/")])).unwrap();
        assert_eq!(proxy.base_url(), "http://127.0.0.1:9");
        let keyed = AnthropicProvider::from_lookup(env(&[("ANTHROPIC_API_KEY", "sk-canary-SECRET123")])).unwrap();
        assert!(keyed.has_api_key());
        let debug = format!("{keyed:?}");
        assert!(!debug.contains("SECRET123") && debug.contains("<redacted>"), "{debug}");
    }

    #[test]
    fn the_body_carries_system_blocks_tool_use_and_tool_results() {
        let mut assistant = AssistantMessage::text("");
        assistant.content = vec![
            ContentBlock::text("checking"),
            ContentBlock::ToolUse { id: "toolu_1".into(), name: "get".into(), input: json!({"k": 1}) },
            ContentBlock::ToolUse { id: "toolu_2".into(), name: "get".into(), input: json!("{\"k\": 2") },
        ];
        let history = [
            Message::user("go"),
            Message::Assistant(assistant),
            Message::User {
                content: vec![
                    ContentBlock::text("and?"),
                    ContentBlock::ToolResult { tool_use_id: "toolu_1".into(), content: "1".into(), is_error: false },
                    ContentBlock::ToolResult { tool_use_id: "toolu_2".into(), content: "bad".into(), is_error: true },
                ],
            },
            Message::Assistant(AssistantMessage::error_event("Overloaded", None)),
        ];
        let mut request = Request::new(&history);
        request.system = Some("be brief");
        let body = AnthropicProvider::new("http://x", None).with_temperature(0.25).body(&request);
        assert_eq!(
            body,
            json!({
                "model": "claude-3-5-haiku-latest",
                "max_tokens": 1024,
                "stream": true,
                "system": "be brief",
                "temperature": 0.25,
                "messages": [
                    {"role": "user", "content": [{"type": "text", "text": "go"}]},
                    {"role": "assistant", "content": [
                        {"type": "text", "text": "checking"},
                        {"type": "tool_use", "id": "toolu_1", "name": "get", "input": {"k": 1}},
                        {"type": "tool_use", "id": "toolu_2", "name": "get", "input": {"_raw": "{\"k\": 2"}},
                    ]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "1"},
                        {"type": "tool_result", "tool_use_id": "toolu_2", "content": "bad", "is_error": true},
                        {"type": "text", "text": "and?"},
                    ]},
                ],
            })
        );
    }

    #[test]
    fn tools_are_sent_only_when_offered() {
        let history = [Message::user("weather?")];
        let provider = AnthropicProvider::new("http://x", None);
        let mut request = Request::new(&history);
        assert!(provider.body(&request).get("tools").is_none());
        let tools = [crate::tool::ToolSpec::new(
            "get_weather",
            "The weather in a city.",
            json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        )];
        request.tools = &tools;
        assert_eq!(
            provider.body(&request)["tools"],
            json!([{
                "name": "get_weather",
                "description": "The weather in a city.",
                "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
            }])
        );
    }

    /// The answer tool alone is forced only when it is the only tool: beside other tools the
    /// request forces a call of any of them, or the model could never call the others.
    #[test]
    fn a_schema_forces_its_tool_alone_only_without_other_tools() {
        let history = [Message::user("weather?")];
        let provider = AnthropicProvider::new("http://x", None);
        let schema = crate::provider::ResponseSchema::new("Forecast", json!({"type": "object"}));
        let mut request = Request::new(&history);
        request.schema = Some(&schema);
        let alone = provider.body(&request);
        assert_eq!(alone["tool_choice"], json!({"type": "tool", "name": "Forecast"}));
        let tools = [crate::tool::ToolSpec::new("get_weather", "The weather in a city.", json!({"type": "object"}))];
        request.tools = &tools;
        let beside = provider.body(&request);
        assert_eq!(beside["tool_choice"], json!({"type": "any"}));
        let names: Vec<&str> =
            beside["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["get_weather", "Forecast"], "the answer tool comes last");
    }

    #[test]
    fn stop_reasons() {
        assert_eq!(stop_reason("end_turn"), Some(Stop::Ends(StopReason::Stop)));
        assert_eq!(stop_reason("stop_sequence"), Some(Stop::Ends(StopReason::Stop)));
        assert_eq!(stop_reason("max_tokens"), Some(Stop::Ends(StopReason::Length)));
        assert_eq!(stop_reason("tool_use"), Some(Stop::Ends(StopReason::ToolUse)));
        assert_eq!(stop_reason("refusal"), Some(Stop::Refused));
        assert_eq!(stop_reason("sleepy"), None);
    }

    /// A `refusal` is the classifiers' stop, not the model's: a permanent `ContentFilterError`, as
    /// on the other wires; a stop reason Anthropic does not document is no answer.
    #[test]
    fn a_refusal_fails_and_an_unknown_stop_reason_is_no_answer() {
        let with = |reason: &str| {
            replay(&[
                json!({"type": "message_start", "message": {"model": "claude", "usage": {"input_tokens": 5}}}),
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Sure, here"}}),
                json!({"type": "message_delta", "delta": {"stop_reason": reason}, "usage": {"output_tokens": 3}}),
                json!({"type": "message_stop"}),
            ])
        };
        let events = with("refusal");
        let Some(Ok(StreamEvent::Error { message, error: Some(error) })) = events.last() else { panic!("{events:?}") };
        assert_eq!(
            (error.kind(), error.status(), error.code()),
            ("ContentFilterError", Some(400), Some("content_filter"))
        );
        assert!(message.contains("(`stop_reason` \"refusal\")"), "{message}");
        // The usage of the refused call is still reported, before the error.
        assert_eq!(usages(&events).last(), Some(&Usage::new(5, 3)));
        let events = with("sleepy");
        let Some(Err(error)) = events.last() else { panic!("{events:?}") };
        assert!(
            error.message().contains("`stop_reason` \"sleepy\" is not a finish reason this client knows"),
            "{error}"
        );
        let whole = json!({"type": "message", "content": [{"type": "text", "text": "no"}], "stop_reason": "refusal"});
        let events = http::replay(AnthropicDecoder::default(), &[whole.to_string().as_bytes()], true, None);
        assert!(
            matches!(events.last(), Some(Ok(StreamEvent::Error { error: Some(error), .. })) if error.kind() == "ContentFilterError"),
            "{events:?}"
        );
    }

    /// The events of a streamed body made of `events`, each named by its `type`.
    fn replay(events: &[Value]) -> Vec<Result<StreamEvent, ModelError>> {
        let body: String =
            events.iter().map(|data| format!("event: {}\ndata: {data}\n\n", data["type"].as_str().unwrap())).collect();
        http::replay(AnthropicDecoder::default(), &[body.as_bytes()], false, None)
    }

    fn usages(events: &[Result<StreamEvent, ModelError>]) -> Vec<Usage> {
        events
            .iter()
            .filter_map(|event| match event {
                Ok(StreamEvent::Usage(usage)) => Some(*usage),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn message_start_reports_the_model_and_message_delta_merges_the_usage() {
        let events = replay(&[
            json!({"type": "message_start", "message": {"model": "claude-x-1", "content": [], "usage":
                {"input_tokens": 20, "output_tokens": 1, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 5}}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}}),
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 12}}),
            json!({"type": "message_delta", "delta": {}, "usage": {"input_tokens": 21, "cache_read_input_tokens": null}}),
            json!({"type": "message_stop"}),
        ]);
        let start = Usage::new(20, 1).with_cache_read(100).with_cache_creation(5);
        assert_eq!(
            events,
            [
                Ok(StreamEvent::Model("claude-x-1".into())),
                Ok(StreamEvent::Usage(start)),
                // Every event without content proves the call alive.
                Ok(StreamEvent::Heartbeat),
                Ok(StreamEvent::TextDelta("Hi".into())),
                Ok(StreamEvent::Usage(Usage::new(20, 12).with_cache_read(100).with_cache_creation(5))),
                Ok(StreamEvent::Usage(Usage::new(21, 12).with_cache_read(100).with_cache_creation(5))),
                Ok(StreamEvent::Done { stop_reason: StopReason::Stop }),
            ]
        );
    }

    #[test]
    fn missing_and_malformed_usage_is_left_out() {
        let stop = json!({"type": "message_stop"});
        let end_turn = json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}});
        for message in [
            json!(null),
            json!(5),
            json!({}),
            json!({"model": 3, "usage": "lots"}),
            json!({"usage": {"input_tokens": -2}}),
        ] {
            let events =
                replay(&[json!({"type": "message_start", "message": message}), end_turn.clone(), stop.clone()]);
            let done = Ok(StreamEvent::Done { stop_reason: StopReason::Stop });
            assert_eq!(events, [Ok(StreamEvent::Heartbeat), done], "{message}");
        }
        let no_start = replay(&[
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 3}}),
            json!({"type": "message_delta", "delta": {}, "usage": null}),
            stop,
        ]);
        assert_eq!(usages(&no_start), [Usage::new(0, 3)]);
    }

    #[test]
    fn a_whole_message_reports_its_model_and_usage() {
        let answer = json!({"model": "claude-x-1", "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
            "usage": {"input_tokens": 4, "output_tokens": 1, "cache_read_input_tokens": 2}});
        let events = http::replay(AnthropicDecoder::default(), &[answer.to_string().as_bytes()], true, None);
        assert_eq!(
            events,
            [
                Ok(StreamEvent::Model("claude-x-1".into())),
                Ok(StreamEvent::TextDelta("ok".into())),
                Ok(StreamEvent::Usage(Usage::new(4, 1).with_cache_read(2))),
                Ok(StreamEvent::Done { stop_reason: StopReason::Stop }),
            ]
        );
    }

    /// The data's own `type` is read in one pass; without one, the SSE event name stands in; a
    /// repeated `message_start` reports the model once.
    #[test]
    fn events_are_typed_by_their_data_or_their_sse_name_and_the_model_is_reported_once() {
        let start = r#"{"type":"message_start","message":{"model":"claude-x-1"}}"#;
        let body = format!(
            "event: message_start\ndata: {start}\n\nevent: message_start\ndata: {start}\n\n\
             event: content_block_delta\ndata: {{\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"Hi\"}}}}\n\n\
             event: ping\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"!\"}}}}\n\n\
             data: {{\"type\":\"message_stop\"}}\n\n"
        );
        assert_eq!(
            http::replay(AnthropicDecoder::default(), &[body.as_bytes()], false, None),
            [
                Ok(StreamEvent::Model("claude-x-1".into())),
                Ok(StreamEvent::Heartbeat),
                Ok(StreamEvent::Heartbeat),
                Ok(StreamEvent::TextDelta("Hi".into())),
                // The data's `type` wins over the SSE name.
                Ok(StreamEvent::TextDelta("!".into())),
                Ok(StreamEvent::Done { stop_reason: StopReason::Stop }),
            ]
        );
    }

    #[test]
    fn an_overloaded_error_event_is_typed_and_retryable() {
        let body = "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
        let out = http::replay(AnthropicDecoder::default(), &[body.as_bytes()], false, None);
        let [Ok(StreamEvent::Error { message, error: Some(error) })] = out.as_slice() else { panic!("{out:?}") };
        assert_eq!(message, "Overloaded");
        assert_eq!(
            (error.kind(), error.code(), error.status()),
            ("OverloadedError", Some("overloaded_error"), Some(529))
        );
        let verdict = crate::classify::session_verdict(StopReason::Error, message, Some(error));
        assert!(verdict.retryable, "{verdict}");
        let empty = crate::classify::session_verdict(StopReason::Error, "", Some(error));
        assert!(empty.retryable, "{empty}");
    }
}
