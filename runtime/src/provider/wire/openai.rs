//! The OpenAI-compatible chat completions API, streamed: OpenAI, vLLM, Ollama, llama.cpp, OpenRouter...
//! The wire and the request it sends here; the stream's chunks and how they are read in `events.rs`.

mod events;

use serde_json::{Value, json};

pub(crate) use self::events::OpenAiDecoder;
use super::super::Request;
use super::super::http::{Auth, Codec, Endpoint, EnvNames, Form};
use super::http_provider::{HttpProvider, Wire};
use crate::error::ModelError;
use crate::message::{ContentBlock, Message};

/// OpenAI-compatible chat completions, `POST {base}/chat/completions`, streamed (SSE): the wire of
/// [`OpenAiProvider`], for OpenAI and any server of its format.
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
/// server that ignores `stream_options` sends none, and the call reports no usage).
///
/// # Settings
///
/// [`HttpProvider::from_env`] reads `OPENAI_API_KEY` and `OPENAI_BASE_URL` (default
/// `https://api.openai.com/v1`); the default model is `gpt-4o-mini`; [`HttpProvider::with_max_tokens`]
/// is sent as `max_tokens` (understood by OpenAI's older models and by vLLM, Ollama and llama.cpp;
/// OpenAI's reasoning models want `max_completion_tokens` and reject it, so leave it unset for
/// those), unset by default (the server's default).
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
///
/// [`StopReason::Length`]: crate::message::StopReason::Length
/// [`StopReason::Stop`]: crate::message::StopReason::Stop
/// [`StopReason::ToolUse`]: crate::message::StopReason::ToolUse
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenAi;

impl Wire for OpenAi {}

/// A provider for any OpenAI-compatible `POST {base}/chat/completions` server: an
/// [`HttpProvider`] speaking [`OpenAi`]'s wire.
pub type OpenAiProvider = HttpProvider<OpenAi>;

/// A request with a schema asks for structured outputs first ([`Form::Primary`]: `{"type":
/// "json_schema", "json_schema": {name, schema, "strict": true}}`, the answer follows the schema),
/// and from a server that refuses it ([`rejects_schema`]) JSON mode ([`Form::Fallback`]: `{"type":
/// "json_object"}`, the answer is a JSON object, the schema the caller's to check).
impl Codec for OpenAi {
    const PROVIDER: &'static str = "openai";
    const ENV: EnvNames = EnvNames {
        provider: "openai",
        keys: &["OPENAI_API_KEY"],
        base_url: "OPENAI_BASE_URL",
        default_base_url: "https://api.openai.com/v1",
    };
    const DEFAULT_MODEL: &'static str = "gpt-4o-mini";
    const AUTH: Auth = Auth { header: "authorization", prefix: "Bearer " };
    type Decoder = OpenAiDecoder;

    fn url(&self, endpoint: &Endpoint, _: &Request<'_>) -> Result<String, ModelError> {
        endpoint.url("/chat/completions")
    }

    fn fallback(&self, request: &Request<'_>) -> Option<fn(u16, &str) -> bool> {
        request.schema.map(|_| rejects_schema as fn(u16, &str) -> bool)
    }

    fn decoder(&self, _: &Request<'_>) -> OpenAiDecoder {
        OpenAiDecoder::default()
    }

    fn body(&self, endpoint: &Endpoint, request: &Request<'_>, form: Form) -> Value {
        let mut body = json!({
            "model": endpoint.model,
            "messages": messages(request),
            "stream": true,
            // The usage comes in a last chunk with no choices; servers that do not know the option
            // ignore it.
            "stream_options": {"include_usage": true},
        });
        if let Some(max_tokens) = endpoint.max_tokens_for(request.max_tokens, None) {
            body["max_tokens"] = json!(max_tokens);
        }
        if let Some(temperature) = endpoint.temperature {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::StopReason;

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
}
