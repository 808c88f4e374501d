//! Anthropic's Messages API, streamed. The wire and the request it sends here; the stream's events
//! and how they are read in `events.rs`.

mod events;

use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{Value, json};

pub(crate) use self::events::AnthropicDecoder;
use super::super::Request;
use super::super::http::{Auth, Codec, Endpoint, EnvNames, Form};
use super::http_provider::{HttpProvider, Wire};
use crate::error::ModelError;
use crate::message::{ContentBlock, Message};

/// Anthropic's Messages, `POST {base}/v1/messages`, streamed (SSE): the wire of [`AnthropicProvider`].
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
/// # Settings
///
/// [`HttpProvider::from_env`] reads `ANTHROPIC_API_KEY` and `ANTHROPIC_BASE_URL` (default
/// `https://api.anthropic.com`); the default model is `claude-3-5-haiku-latest`;
/// [`HttpProvider::with_max_tokens`] is sent as `max_tokens`, which the API requires: 1024 by
/// default ([`AnthropicProvider::DEFAULT_MAX_TOKENS`]).
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
///
/// [`StopReason::Length`]: crate::message::StopReason::Length
/// [`StopReason::Stop`]: crate::message::StopReason::Stop
/// [`StopReason::ToolUse`]: crate::message::StopReason::ToolUse
#[derive(Debug, Clone, Copy, Default)]
pub struct Anthropic;

impl Wire for Anthropic {}

/// A provider for Anthropic's `POST {base}/v1/messages`: an [`HttpProvider`] speaking
/// [`Anthropic`]'s wire.
pub type AnthropicProvider = HttpProvider<Anthropic>;

/// What only Anthropic's wire has.
impl HttpProvider<Anthropic> {
    /// The default `max_tokens`, 1024 (the API requires one).
    pub const DEFAULT_MAX_TOKENS: u32 = 1024;

    /// The API version sent as `anthropic-version`.
    pub const API_VERSION: &'static str = "2023-06-01";
}

/// A request with a schema offers one more tool, the answer tool, and forces it: no fallback.
impl Codec for Anthropic {
    const PROVIDER: &'static str = "anthropic";
    const ENV: EnvNames = EnvNames {
        provider: "anthropic",
        keys: &["ANTHROPIC_API_KEY"],
        base_url: "ANTHROPIC_BASE_URL",
        default_base_url: "https://api.anthropic.com",
    };
    const DEFAULT_MODEL: &'static str = "claude-3-5-haiku-latest";
    const DEFAULT_MAX_TOKENS: Option<u32> = Some(AnthropicProvider::DEFAULT_MAX_TOKENS);
    const AUTH: Auth = Auth { header: "x-api-key", prefix: "" };
    type Decoder = AnthropicDecoder;

    fn url(&self, endpoint: &Endpoint, _: &Request<'_>) -> Result<String, ModelError> {
        endpoint.url("/v1/messages")
    }

    fn headers(&self, headers: &mut HeaderMap) {
        headers.insert("anthropic-version", HeaderValue::from_static(AnthropicProvider::API_VERSION));
    }

    fn decoder(&self, request: &Request<'_>) -> AnthropicDecoder {
        AnthropicDecoder::answering(request.schema.map(|schema| schema.name.as_str()))
    }

    fn body(&self, endpoint: &Endpoint, request: &Request<'_>, _: Form) -> Value {
        let mut body = json!({
            "model": endpoint.model,
            "max_tokens": endpoint.max_tokens_for(request.max_tokens, Some(AnthropicProvider::DEFAULT_MAX_TOKENS)),
            "messages": messages(request.messages),
            "stream": true,
        });
        if let Some(system) = request.system {
            body["system"] = json!(system);
        }
        if let Some(temperature) = endpoint.temperature {
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

#[cfg(test)]
mod tests {
    use super::events::{Stop, stop_reason};
    use super::*;
    use crate::message::{AssistantMessage, StopReason};

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
}
