//! OpenAI's Responses API, streamed: `POST {base}/responses`, whose answer comes as typed events
//! and whose failures arrive as events on an HTTP 200 (`response.failed`, `error`). The wire and the
//! request it sends here; the stream's events and how they are read in `events.rs`, its error codes
//! in `errors.rs`.

mod errors;
mod events;

use serde_json::{Value, json};

pub(crate) use self::events::ResponsesDecoder;
use super::super::http::{Auth, Codec, Endpoint, EnvNames, Form};
use super::super::{Request, ResponseSchema};
use super::http_provider::{HttpProvider, Wire};
use super::openai::{self, OpenAi};
use crate::error::ModelError;
use crate::message::{ContentBlock, Message};

/// OpenAI's Responses API, `POST {base}/responses`, streamed (SSE): the wire of [`ResponsesProvider`], the API OpenAI's
/// own models and tools moved to, also served by compatible servers (Azure, vLLM, Ollama,
/// OpenRouter...).
///
/// The key, the base URL and their environment variables are [`OpenAiProvider`](super::OpenAiProvider)'s
/// (`OPENAI_API_KEY`, `OPENAI_BASE_URL`, `Authorization: Bearer <key>`), and so is
/// [`Provider::name`](crate::provider::Provider::name), `openai`: both APIs share one key's rate limits, so both share its retry
/// budget and cooldowns ([`Provider::scope`](crate::provider::Provider::scope)).
///
/// It sends the system instruction as `instructions`, the conversation as `input` items (messages
/// with `input_text` / `output_text` parts, the model's tool calls as `function_call` items, tool
/// results as `function_call_output` items), the tools offered (`{"type": "function", name,
/// description, parameters, "strict": false}`: the API makes function tools strict unless told
/// otherwise, and a strict tool refuses most schemas), `max_output_tokens` and `temperature` when
/// set, `"store": false` (every call sends the whole conversation, so nothing stored would ever be
/// used) and the call's number as `x-agentic-call`. A request with a [schema](Request::schema)
/// asks for structured outputs (`text.format: {"type": "json_schema", name, schema, "strict":
/// true}`); a server that refuses it (a 400 naming `text.format`, `response_format` or
/// `json_schema`) is asked again at once, within the same call, in JSON mode (`{"type":
/// "json_object"}`).
///
/// It reads `response.output_text.delta` as text, `function_call` output items and their
/// `response.function_call_arguments.delta` / `.done` as tool calls (by output index, with their
/// `call_id`), the answering model (`response.created`'s), and ends at one of three events, never
/// at a `[DONE]`:
/// - `response.completed`: the answer, with its usage (`input_tokens`, `output_tokens`, which
///   counts the reasoning tokens, and `input_tokens_details.cached_tokens`) and the stop reason
///   [`StopReason::ToolUse`] when the model called a tool, else [`StopReason::Stop`];
/// - `response.incomplete`: `max_output_tokens` ends as [`StopReason::Length`]; `content_filter`
///   is a permanent error that says so;
/// - `response.failed` (its `error.code`), and `error` events: typed errors classified like the
///   same failure behind an HTTP status (`server_error` as a 500, `server_is_overloaded` as a 503,
///   `rate_limit_exceeded` as a 429, `invalid_prompt` as a 400), the code kept. Text streamed
///   before a failure is never an answer.
///
/// A body that ends before any of the three is a truncated stream (retryable), never a short
/// answer. A whole JSON answer (a Response object with `output` items), from a server that ignored
/// `"stream": true`, reads the same. The key never appears in an error or in Debug output.
///
/// # Settings
///
/// [`HttpProvider::from_env`] reads `OPENAI_API_KEY` and `OPENAI_BASE_URL` (default
/// `https://api.openai.com/v1`), exactly as the Chat Completions wire does; the default model is
/// `gpt-4o-mini`; [`HttpProvider::with_max_tokens`] is sent as `max_output_tokens`, reasoning
/// included (an answer cut there ends as [`StopReason::Length`]), unset by default (the server's
/// default).
///
/// # Examples
///
/// ```no_run
/// use agentic_runtime::Runtime;
/// use agentic_runtime::provider::ResponsesProvider;
///
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// // OPENAI_API_KEY, and OPENAI_BASE_URL for another server (no key needed then).
/// let provider = ResponsesProvider::from_env()?.with_model("gpt-4o-mini").with_max_tokens(512);
/// let runtime = Runtime::new(provider);
/// let reply = runtime.exec("Say hello.").await?;
/// println!("{}", reply.text());
/// # Ok(())
/// # }
/// ```
///
/// [`StopReason::Length`]: crate::message::StopReason::Length
/// [`StopReason::Stop`]: crate::message::StopReason::Stop
/// [`StopReason::ToolUse`]: crate::message::StopReason::ToolUse
#[derive(Debug, Clone, Copy, Default)]
pub struct Responses;

impl Wire for Responses {}

/// A provider for OpenAI's Responses API: an [`HttpProvider`] speaking [`Responses`]' wire.
pub type ResponsesProvider = HttpProvider<Responses>;

/// The key, the environment and the provider name are Chat Completions' ([`OpenAi`]): one
/// key, one set of rate limits. A request with a schema asks for structured outputs first
/// ([`Form::Primary`]: `text.format` `json_schema`, strict) and from a server that refuses it
/// ([`rejects_format`]) JSON mode ([`Form::Fallback`]: `json_object`).
impl Codec for Responses {
    const PROVIDER: &'static str = <OpenAi as Codec>::PROVIDER;
    const ENV: EnvNames = <OpenAi as Codec>::ENV;
    const DEFAULT_MODEL: &'static str = <OpenAi as Codec>::DEFAULT_MODEL;
    const AUTH: Auth = <OpenAi as Codec>::AUTH;
    type Decoder = ResponsesDecoder;

    fn url(&self, endpoint: &Endpoint, _: &Request<'_>) -> Result<String, ModelError> {
        endpoint.url("/responses")
    }

    fn fallback(&self, request: &Request<'_>) -> Option<fn(u16, &str) -> bool> {
        request.schema.map(|_| rejects_format as fn(u16, &str) -> bool)
    }

    fn decoder(&self, _: &Request<'_>) -> ResponsesDecoder {
        ResponsesDecoder::default()
    }

    fn body(&self, endpoint: &Endpoint, request: &Request<'_>, form: Form) -> Value {
        let mut input = input(request);
        if let (Some(schema), Form::Fallback) = (request.schema, form) {
            // JSON mode needs the word "JSON" in the conversation and knows no schema: a system
            // message gives both.
            input.insert(0, message("system", "input_text", &[&openai::json_mode_instruction(schema)]));
        }
        let mut body = json!({"model": endpoint.model, "input": input, "stream": true, "store": false});
        if let Some(system) = request.system {
            body["instructions"] = json!(system);
        }
        if let Some(max_tokens) = endpoint.max_tokens_for(request.max_tokens, None) {
            body["max_output_tokens"] = json!(max_tokens);
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
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": tool.parameters,
                        "strict": false,
                    })
                })
                .collect();
        }
        if let Some(schema) = request.schema {
            body["text"] = json!({"format": text_format(schema, form)});
        }
        body
    }
}

/// The `text.format` that asks for `schema`: strict structured outputs, or JSON mode.
fn text_format(schema: &ResponseSchema, form: Form) -> Value {
    match form {
        Form::Primary => {
            json!({"type": "json_schema", "name": schema.name, "schema": schema.schema, "strict": true})
        }
        Form::Fallback => json!({"type": "json_object"}),
    }
}

/// Whether a server refused structured outputs: Chat Completions' test
/// ([`openai::rejects_schema`]), or a 400 naming `text.format` (the Responses parameter, e.g.
/// OpenAI's `param: "text.format.schema"` for a schema strict mode cannot take).
fn rejects_format(status: u16, body: &str) -> bool {
    openai::rejects_schema(status, body) || (status == 400 && body.contains("text.format"))
}

/// The `input` items: per user turn its tool results (`function_call_output`, before the turn's
/// text) and its text; per assistant turn its text and its tool calls (`function_call`). An
/// assistant turn with neither (a failed call's empty message) is left out: the API refuses it.
fn input(request: &Request<'_>) -> Vec<Value> {
    let mut out = Vec::with_capacity(request.messages.len());
    for turn in request.messages {
        match turn {
            Message::User { content } => {
                let mut texts = Vec::new();
                for block in content {
                    match block {
                        ContentBlock::ToolResult { tool_use_id, content, is_error } => out.push(json!({
                            "type": "function_call_output",
                            "call_id": tool_use_id,
                            "output": openai::tool_result_text(content, *is_error),
                        })),
                        ContentBlock::Text { text } => texts.push(text.as_str()),
                        ContentBlock::ToolUse { .. } => {}
                    }
                }
                if !texts.is_empty() || content.is_empty() {
                    out.push(message("user", "input_text", &texts));
                }
            }
            Message::Assistant(answer) => {
                let text = answer.text_content();
                if !text.is_empty() {
                    out.push(message("assistant", "output_text", &[&text]));
                }
                for block in &answer.content {
                    if let ContentBlock::ToolUse { id, name, input } = block {
                        out.push(json!({
                            "type": "function_call",
                            "call_id": id,
                            "name": name,
                            "arguments": openai::arguments_text(input),
                        }));
                    }
                }
            }
        }
    }
    out
}

/// A message item of `role` whose parts are `texts`, each of type `part` (`input_text` for what
/// the user and the system say, `output_text` for what the model said).
fn message(role: &str, part: &str, texts: &[&str]) -> Value {
    let parts: Vec<Value> = match texts {
        [] => vec![json!({"type": part, "text": ""})],
        texts => texts.iter().map(|text| json!({"type": part, "text": text})).collect(),
    };
    json!({"type": "message", "role": role, "content": parts})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{AssistantMessage, StopReason};
    use crate::provider::{OpenAiProvider, Provider};
    use crate::tool::ToolSpec;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| pairs.iter().find(|(key, _)| *key == name).map(|(_, value)| (*value).to_owned())
    }

    #[test]
    fn the_key_and_base_url_are_openais_and_so_are_the_name_and_scope() {
        let error = ResponsesProvider::from_lookup(env(&[])).unwrap_err();
        assert_eq!(
            error.to_string(),
            "openai: no API key: set OPENAI_API_KEY to your API key (or set OPENAI_BASE_URL to a server that needs none)"
        );
        let local = ResponsesProvider::from_lookup(env(&[("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1/")])).unwrap();
        assert_eq!((local.base_url(), local.has_api_key()), ("http://127.0.0.1:11434/v1", false));
        let keyed = ResponsesProvider::from_lookup(env(&[("OPENAI_API_KEY", "sk-canary-SECRET123")])).unwrap();
        assert_eq!((keyed.base_url(), keyed.model()), ("https://api.openai.com/v1", "gpt-4o-mini"));
        let debug = format!("{keyed:?}");
        assert!(debug.starts_with("HttpProvider<Responses> {") && !debug.contains("SECRET123"), "{debug}");
        // One key, one URL: one budget and one set of cooldowns, whichever of OpenAI's APIs is called.
        let chat = OpenAiProvider::new("https://api.openai.com/v1", Some("sk-canary-SECRET123".into()));
        assert_eq!((keyed.name(), keyed.scope()), (chat.name(), chat.scope()));
        assert_eq!(keyed.server(), Some(("api.openai.com", 443)));
        let bad = ResponsesProvider::from_lookup(env(&[("OPENAI_BASE_URL", "localhost:8080")])).unwrap_err();
        assert!(bad.to_string().starts_with("OPENAI_BASE_URL is not a valid base URL"), "{bad}");
    }

    #[test]
    fn the_request_posts_to_responses_with_the_key_as_a_bearer_token() {
        let history = [Message::user("hi")];
        let request = Request::new(&history);
        let provider =
            ResponsesProvider::new("http://127.0.0.1:9/v1?api-version=1", Some("sk-canary-SECRET123".into()));
        assert_eq!(
            Responses.url(provider.endpoint(), &request).unwrap(),
            "http://127.0.0.1:9/v1/responses?api-version=1"
        );
        assert_eq!(<Responses as Codec>::AUTH, Auth { header: "authorization", prefix: "Bearer " });
        assert!(Responses.fallback(&request).is_none(), "no schema, no fallback");
    }

    #[test]
    fn the_body_carries_instructions_turns_tool_calls_and_tool_results() {
        let mut assistant = AssistantMessage::text("let me look");
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
                content: vec![
                    ContentBlock::ToolResult {
                        tool_use_id: "call_1".into(),
                        content: "timeout".into(),
                        is_error: true,
                    },
                    ContentBlock::text("and hurry"),
                ],
            },
            Message::Assistant(AssistantMessage::error_event("", None)),
            Message::User { content: vec![ContentBlock::text("a"), ContentBlock::text("b")] },
        ];
        let mut request = Request::new(&history);
        request.system = Some("be brief");
        let provider = ResponsesProvider::new("http://x/v1", None).with_max_tokens(64).with_temperature(0.5);
        let user = |texts: &[&str]| {
            let parts: Vec<Value> = texts.iter().map(|text| json!({"type": "input_text", "text": text})).collect();
            json!({"type": "message", "role": "user", "content": parts})
        };
        assert_eq!(
            provider.body(&request),
            json!({
                "model": "gpt-4o-mini",
                "stream": true,
                "store": false,
                "instructions": "be brief",
                "max_output_tokens": 64,
                "temperature": 0.5,
                "input": [
                    user(&["find rust"]),
                    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "let me look"}]},
                    {"type": "function_call", "call_id": "call_1", "name": "search", "arguments": "{\"q\":\"rust\"}"},
                    {"type": "function_call_output", "call_id": "call_1", "output": "Error: timeout"},
                    user(&["and hurry"]),
                    user(&["a", "b"]),
                ],
            })
        );
        // A turn of tool results alone sends no empty user message.
        let results = [Message::User {
            content: vec![ContentBlock::ToolResult { tool_use_id: "c".into(), content: "4".into(), is_error: false }],
        }];
        assert_eq!(
            provider.body(&Request::new(&results))["input"],
            json!([{"type": "function_call_output", "call_id": "c", "output": "4"}])
        );
    }

    #[test]
    fn tools_are_sent_flat_and_not_strict_only_when_offered() {
        let history = [Message::user("weather?")];
        let provider = ResponsesProvider::new("http://x/v1", None);
        let mut request = Request::new(&history);
        let body = provider.body(&request);
        assert!(body.get("tools").is_none() && body.get("text").is_none() && body.get("instructions").is_none());
        let tools = [
            ToolSpec::new(
                "get_weather",
                "The weather in a city.",
                json!({"type": "object", "properties": {"city": {"type": "string"}}}),
            ),
            ToolSpec::new("get_time", "The time.", Value::Null),
        ];
        request.tools = &tools;
        assert_eq!(
            provider.body(&request)["tools"],
            json!([
                {"type": "function", "name": "get_weather", "description": "The weather in a city.", "strict": false,
                 "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}},
                {"type": "function", "name": "get_time", "description": "The time.", "strict": false,
                 "parameters": {"type": "object", "properties": {}}},
            ])
        );
    }

    #[test]
    fn a_typed_answer_asks_text_format_and_falls_back_to_json_mode() {
        let history = [Message::user("extract")];
        let schema =
            ResponseSchema::new("Invoice", json!({"type": "object", "properties": {"total": {"type": "number"}}}));
        let mut request = Request::new(&history);
        request.schema = Some(&schema);
        let provider = ResponsesProvider::new("http://x/v1", None);
        assert_eq!(
            provider.body(&request)["text"],
            json!({"format": {"type": "json_schema", "name": "Invoice", "schema": schema.schema, "strict": true}})
        );
        let fallback = Responses.body(provider.endpoint(), &request, Form::Fallback);
        assert_eq!(fallback["text"], json!({"format": {"type": "json_object"}}));
        let instruction = &fallback["input"][0];
        assert_eq!(instruction["role"], "system");
        let said = instruction["content"][0]["text"].as_str().unwrap();
        assert!(said.contains("JSON") && said.contains(r#""total""#), "{said}");
        assert_eq!(fallback["input"][1]["content"][0]["text"], "extract");
        assert!(Responses.fallback(&request).is_some());

        let strict = r#"{"error":{"message":"Invalid schema for response_format 'Invoice': 'required' is required","type":"invalid_request_error","param":"text.format.schema","code":"invalid_json_schema"}}"#;
        assert!(rejects_format(400, strict));
        assert!(rejects_format(400, r#"{"error":{"message":"Unknown parameter: 'text.format'."}}"#));
        assert!(!rejects_format(400, r#"{"error":{"message":"Invalid 'input[0].content'"}}"#));
        assert!(!rejects_format(500, strict));
    }
}
