//! Google's Gemini API, natively: `POST {base}/models/{model}:streamGenerateContent?alt=sse`. The
//! wire and the request it sends here; the stream's responses, the finish and block reasons and how
//! they are read in `events.rs`.

mod events;

use serde_json::{Map, Value, json};

pub(crate) use self::events::GeminiDecoder;
use super::super::Request;
use super::super::http::{Auth, Codec, Endpoint, EnvNames, Form};
use super::anthropic::tool_input;
use super::http_provider::{HttpProvider, Wire};
use crate::error::ModelError;
use crate::message::{ContentBlock, Message};

/// Google's Gemini API (`generativelanguage.googleapis.com`), streamed (SSE): the wire of [`GeminiProvider`].
///
/// It posts to `{base}/models/{model}:streamGenerateContent?alt=sse` (the model an encoded path
/// segment) with the key in the `x-goog-api-key` header only, never in the URL, and the call's
/// number as `x-agentic-call`. The body has the conversation as `contents` (roles `user` and
/// `model`, each a list of `parts`: text, `functionCall` and `functionResponse`), the system
/// instruction as `systemInstruction`, the tools offered as `tools: [{"functionDeclarations":
/// [{name, description, parametersJsonSchema}]}]` (only when there are some), and
/// `generationConfig` with `maxOutputTokens` and `temperature` when set. A request with a
/// [schema](Request::schema) asks for `responseMimeType: "application/json"` with the schema as
/// `responseJsonSchema`: the answer's text is the JSON.
///
/// A call gets the `id` the server sends (Gemini 3 gives each `functionCall` one), else none (the
/// agent makes one); a tool result is sent as a `functionResponse` named after the call it
/// answers, looked up in the history (`{"output": ...}`, or `{"error": ...}` for a failed tool).
/// A call the server gave an id goes back with it, and so does its `functionResponse`, as Google's
/// reference asks ("the id of the function call ... must be sent back in the associated
/// FunctionResponse"); an id the agent made is never sent.
///
/// Each event of the stream is a whole `GenerateContentResponse`. It reads the text parts (thought
/// summaries are left out), `functionCall` parts (a tool call each), `modelVersion` (the answering
/// model, once) and `usageMetadata`, which every chunk may repeat: the last one counts
/// (`promptTokenCount` plus `toolUsePromptTokenCount` as input, `candidatesTokenCount` plus
/// `thoughtsTokenCount` as output, since thinking is billed as output, and `cachedContentTokenCount`
/// as read from the cache; like OpenAI's, the input includes the cached tokens). There is no final
/// event, and a `finishReason` may come before the last chunk: the call ends at the end of the body
/// with the last one, read in any case (`STOP` -> [`StopReason::Stop`], or [`StopReason::ToolUse`]
/// after function calls; `MAX_TOKENS` -> [`StopReason::Length`]; `OTHER`, "unknown reason" in
/// Google's documentation, and any reason it does not document are no answer). A body that ends
/// without any `finishReason` was cut: a truncated stream (retryable), never a short answer.
///
/// Every failure is a typed [`ModelError`]. Google's error body (`{"error": {"code", "message",
/// "status", "details"}}`, also as a one-element array), over HTTP or in a `data:` line of a 200, is
/// typed by its `status` (`RESOURCE_EXHAUSTED` -> 429, `UNAVAILABLE` -> 503, `INTERNAL` -> 500,
/// `DEADLINE_EXCEEDED` -> 504; `INVALID_ARGUMENT`, `FAILED_PRECONDITION` -> 400, `UNAUTHENTICATED` ->
/// 401, `PERMISSION_DENIED` -> 403, `NOT_FOUND` -> 404), with `RetryInfo.retryDelay` as the server's
/// hint and a daily `QuotaFailure` or `ErrorInfo` `QUOTA_EXHAUSTED` as a spent quota. A prompt
/// blocked (`promptFeedback.blockReason`) or an answer stopped by a filter (`finishReason` `SAFETY`,
/// `RECITATION`, `BLOCKLIST`, `PROHIBITED_CONTENT`, `SPII`, ...) is a permanent error saying what
/// was blocked and why; an answer whose function call could not be read (`MALFORMED_FUNCTION_CALL`
/// and its kin) is a corrupted answer, asked again. The key never appears in an error or in Debug
/// output.
///
/// # Settings
///
/// [`HttpProvider::from_env`] reads `GEMINI_API_KEY` (else `GOOGLE_API_KEY`) and `GEMINI_BASE_URL`
/// (default `https://generativelanguage.googleapis.com/v1beta`); the default model is
/// `gemini-2.5-flash`, and a model named as Google's resource names have it (`models/gemini-2.5-pro`)
/// loses its `models/` in the URL, whose path has it already; [`HttpProvider::with_max_tokens`] is
/// sent as `generationConfig.maxOutputTokens`, unset by default (the model's default).
///
/// # Examples
///
/// ```no_run
/// use agentic_runtime::Runtime;
/// use agentic_runtime::provider::GeminiProvider;
///
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// // GEMINI_API_KEY (or GOOGLE_API_KEY), and GEMINI_BASE_URL for a proxy or a test server.
/// let provider = GeminiProvider::from_env()?.with_model("gemini-2.5-flash").with_max_tokens(512);
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
pub struct Gemini;

impl Wire for Gemini {}

/// A provider for Google's Gemini API: an [`HttpProvider`] speaking [`Gemini`]'s wire.
pub type GeminiProvider = HttpProvider<Gemini>;

/// The key only ever in `x-goog-api-key` (Google also reads `?key=`, which would put it in every log
/// of the URL); the model in the path; no fallback: a typed answer is asked one way.
impl Codec for Gemini {
    const PROVIDER: &'static str = "gcp.gemini";
    const ENV: EnvNames = EnvNames {
        provider: "gemini",
        keys: &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
        base_url: "GEMINI_BASE_URL",
        default_base_url: "https://generativelanguage.googleapis.com/v1beta",
    };
    const DEFAULT_MODEL: &'static str = "gemini-2.5-flash";
    const AUTH: Auth = Auth { header: "x-goog-api-key", prefix: "" };
    type Decoder = GeminiDecoder;

    /// `{base}/models/{model}:streamGenerateContent?alt=sse`: the model one encoded path segment,
    /// `alt=sse` after the base URL's own query, if any.
    fn url(&self, endpoint: &Endpoint, _: &Request<'_>) -> Result<String, ModelError> {
        let model = endpoint.model.strip_prefix("models/").unwrap_or(&endpoint.model);
        let mut url = endpoint.url(&format!("/models/{}:streamGenerateContent", path_segment(model)))?;
        url.push(if url.contains('?') { '&' } else { '?' });
        url.push_str("alt=sse");
        Ok(url)
    }

    fn decoder(&self, _: &Request<'_>) -> GeminiDecoder {
        GeminiDecoder::default()
    }

    fn body(&self, endpoint: &Endpoint, request: &Request<'_>, _: Form) -> Value {
        let mut body = json!({"contents": contents(request.messages)});
        if let Some(system) = request.system.filter(|system| !system.is_empty()) {
            body["systemInstruction"] = json!({"parts": [{"text": system}]});
        }
        if !request.tools.is_empty() {
            let declarations: Vec<Value> = request
                .tools
                .iter()
                .map(|tool| {
                    json!({"name": tool.name, "description": tool.description, "parametersJsonSchema": tool.parameters})
                })
                .collect();
            body["tools"] = json!([{"functionDeclarations": declarations}]);
        }
        let mut config = Map::new();
        if let Some(max_tokens) = endpoint.max_tokens_for(request.max_tokens, None) {
            config.insert("maxOutputTokens".to_owned(), json!(max_tokens));
        }
        if let Some(temperature) = endpoint.temperature {
            config.insert("temperature".to_owned(), json!(temperature));
        }
        if let Some(schema) = request.schema {
            config.insert("responseMimeType".to_owned(), json!("application/json"));
            let mut schema = schema.schema.clone();
            // The dialect's URI is no keyword of the schema: Gemini's subset has no place for it.
            if let Value::Object(object) = &mut schema {
                object.remove("$schema");
            }
            config.insert("responseJsonSchema".to_owned(), schema);
        }
        if !config.is_empty() {
            body["generationConfig"] = Value::Object(config);
        }
        body
    }
}

/// `text` as one URL path segment: every byte but the unreserved ones (letters, digits, `-._~`)
/// percent-encoded, so that a model name can never add a path, a query or a fragment.
fn path_segment(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// What a `functionCall` part carries when its turn is sent back without the signature the server
/// gave it: the placeholder Google documents for calls whose signature is unknown (a history from
/// another model or wire). Gemini 3 refuses a turn's first function call without any signature;
/// the message types keep none, so every call sent back carries this one.
const NO_THOUGHT_SIGNATURE: &str = "skip_thought_signature_validator";

/// Whether a call's `id` is one a server gave (Gemini 3 gives each `functionCall` one, and wants it
/// back with the call and its `functionResponse`), not the one the agent made for a call that came
/// without: an id the server never issued is not sent, as before Gemini 3 gave them.
fn server_id(id: &str) -> bool {
    !id.is_empty() && !crate::message::is_minted_call_id(id)
}

/// The conversation as Gemini `contents`: user turns (`role: "user"`) with their text and tool
/// results, model turns (`role: "model"`) with their text and function calls. Empty texts and turns
/// with no parts (a failed call's empty message) are left out: the API rejects them.
fn contents(history: &[Message]) -> Vec<Value> {
    // The name of each call by its id: a `functionResponse` is named, not numbered. Ids repeat
    // across turns (`call_0` each time the agent makes them), so the latest call of an id wins.
    let mut names: Vec<(&str, &str)> = Vec::new();
    let mut out = Vec::with_capacity(history.len());
    for message in history {
        let (role, parts) = match message {
            Message::User { content } => {
                let parts: Vec<Value> = content
                    .iter()
                    .filter_map(|block| match block {
                        ContentBlock::Text { text } if !text.is_empty() => Some(json!({"text": text})),
                        ContentBlock::ToolResult { tool_use_id, content, is_error } => {
                            let call = names.iter().rev().find(|(id, _)| *id == tool_use_id.as_str());
                            let name = call.map_or(tool_use_id.as_str(), |(_, name)| *name);
                            let key = if *is_error { "error" } else { "output" };
                            let mut response = json!({"name": name, "response": {key: content}});
                            // The id of the call it answers, when the server gave that call one.
                            if let Some((id, _)) = call.filter(|(id, _)| server_id(id)) {
                                response["id"] = json!(id);
                            }
                            Some(json!({"functionResponse": response}))
                        }
                        _ => None,
                    })
                    .collect();
                ("user", parts)
            }
            Message::Assistant(message) => {
                let mut first_call = true;
                let parts: Vec<Value> = message
                    .content
                    .iter()
                    .filter_map(|block| match block {
                        ContentBlock::Text { text } if !text.is_empty() => Some(json!({"text": text})),
                        ContentBlock::ToolUse { id, name, input } => {
                            names.push((id, name));
                            let mut call = json!({"name": name, "args": tool_input(input)});
                            if server_id(id) {
                                call["id"] = json!(id);
                            }
                            let mut part = json!({"functionCall": call});
                            if std::mem::take(&mut first_call) {
                                part["thoughtSignature"] = json!(NO_THOUGHT_SIGNATURE);
                            }
                            Some(part)
                        }
                        _ => None,
                    })
                    .collect();
                ("model", parts)
            }
        };
        if !parts.is_empty() {
            out.push(json!({"role": role, "parts": parts}));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::AssistantMessage;
    use crate::provider::http::Secret;
    use crate::provider::{Provider, ResponseSchema};
    use crate::tool::ToolSpec;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| pairs.iter().find(|(key, _)| *key == name).map(|(_, value)| (*value).to_owned())
    }
    #[test]
    fn from_env_reads_gemini_then_google_api_key() {
        let error = GeminiProvider::from_lookup(env(&[])).unwrap_err();
        assert_eq!(
            error.to_string(),
            "gemini: no API key: set GEMINI_API_KEY to your API key (or set GEMINI_BASE_URL to a server that needs none)"
        );
        let google = GeminiProvider::from_lookup(env(&[("GOOGLE_API_KEY", "g-key")])).unwrap();
        assert_eq!((google.base_url(), google.model()), (GeminiProvider::DEFAULT_BASE_URL, "gemini-2.5-flash"));
        assert_eq!(google.endpoint().api_key.as_ref().map(Secret::expose), Some("g-key"));
        let both =
            GeminiProvider::from_lookup(env(&[("GOOGLE_API_KEY", "g-key"), ("GEMINI_API_KEY", "gm-key")])).unwrap();
        assert_eq!(both.endpoint().api_key.as_ref().map(Secret::expose), Some("gm-key"));
        let blank = GeminiProvider::from_lookup(env(&[("GOOGLE_API_KEY", "g-key"), ("GEMINI_API_KEY", " ")])).unwrap();
        assert_eq!(blank.endpoint().api_key.as_ref().map(Secret::expose), Some("g-key"));
        let local = GeminiProvider::from_lookup(env(&[("GEMINI_BASE_URL", "http://127.0.0.1:9/v1beta/")])).unwrap();
        assert_eq!(local.base_url(), "http://127.0.0.1:9/v1beta");
        assert!(!local.has_api_key());
        let bad = GeminiProvider::from_lookup(env(&[("GEMINI_BASE_URL", "localhost:8080")])).unwrap_err();
        assert!(bad.to_string().starts_with("GEMINI_BASE_URL is not a valid base URL"), "{bad}");
    }

    #[test]
    fn the_name_scope_model_and_debug_keep_the_key_out() {
        let provider =
            GeminiProvider::new("https://generativelanguage.googleapis.com/v1beta", Some("AIza-SECRET123".into()))
                .with_model("models/gemini-2.5-pro");
        assert_eq!(Provider::name(&provider), "gcp.gemini");
        assert!(provider.scope().starts_with("gcp.gemini:"), "{}", provider.scope());
        assert_eq!(Provider::model(&provider), Some("models/gemini-2.5-pro"));
        assert_eq!(provider.server(), Some(("generativelanguage.googleapis.com", 443)));
        let debug = format!("{provider:?}");
        assert!(!debug.contains("SECRET123") && debug.contains("HttpProvider<Gemini>"), "{debug}");
    }

    #[test]
    fn the_key_goes_in_its_header_and_the_model_in_one_path_segment() {
        assert_eq!(<Gemini as Codec>::AUTH, Auth { header: "x-goog-api-key", prefix: "" });
        let key = "AIza-SECRET123";
        let provider =
            GeminiProvider::new("http://127.0.0.1:9/v1beta?tenant=a", Some(key.into())).with_model("a/b:c?d#e");
        let history = [Message::user("hi")];
        let request = Request::new(&history);
        let url = Gemini.url(provider.endpoint(), &request).unwrap();
        assert_eq!(url, "http://127.0.0.1:9/v1beta/models/a%2Fb%3Ac%3Fd%23e:streamGenerateContent?tenant=a&alt=sse");
        assert!(!url.contains("SECRET") && !format!("{:?}", provider.body(&request)).contains("SECRET"));
        let plain = GeminiProvider::new("http://127.0.0.1:9/v1beta/", None).with_model("models/gemini-2.5-pro");
        assert_eq!(
            Gemini.url(plain.endpoint(), &request).unwrap(),
            "http://127.0.0.1:9/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
        );
    }

    #[test]
    fn the_body_names_each_function_response_after_its_call() {
        let call =
            |id: &str, name: &str, input: Value| ContentBlock::ToolUse { id: id.into(), name: name.into(), input };
        let result = |id: &str, content: &str, is_error| ContentBlock::ToolResult {
            tool_use_id: id.into(),
            content: content.into(),
            is_error,
        };
        let turn = |blocks: Vec<ContentBlock>| {
            let mut message = AssistantMessage::text("");
            message.content = blocks;
            Message::Assistant(message)
        };
        // The agent's ids repeat from one turn to the next: each result answers its own turn's call.
        let history = [
            Message::user("go"),
            turn(vec![
                ContentBlock::text("checking"),
                call("call_0", "search", json!({"q": 1})),
                call("call_1", "get", json!("{\"k\": 2")),
            ]),
            Message::User { content: vec![result("call_0", "found", false), result("call_1", "timeout", true)] },
            turn(vec![call("call_0", "fetch", json!({}))]),
            Message::User { content: vec![result("call_0", "page", false), ContentBlock::text("and?")] },
            Message::Assistant(AssistantMessage::error_event("", None)),
            Message::User { content: vec![result("unknown", "x", false)] },
        ];
        let mut request = Request::new(&history);
        request.system = Some("be brief");
        let body = GeminiProvider::new("http://x/v1beta", None).body(&request);
        let signature = NO_THOUGHT_SIGNATURE;
        assert_eq!(
            body,
            json!({
                "systemInstruction": {"parts": [{"text": "be brief"}]},
                "contents": [
                    {"role": "user", "parts": [{"text": "go"}]},
                    {"role": "model", "parts": [
                        {"text": "checking"},
                        {"functionCall": {"name": "search", "args": {"q": 1}}, "thoughtSignature": signature},
                        {"functionCall": {"name": "get", "args": {"_raw": "{\"k\": 2"}}},
                    ]},
                    {"role": "user", "parts": [
                        {"functionResponse": {"name": "search", "response": {"output": "found"}}},
                        {"functionResponse": {"name": "get", "response": {"error": "timeout"}}},
                    ]},
                    {"role": "model", "parts": [{"functionCall": {"name": "fetch", "args": {}}, "thoughtSignature": signature}]},
                    {"role": "user", "parts": [
                        {"functionResponse": {"name": "fetch", "response": {"output": "page"}}},
                        {"text": "and?"},
                    ]},
                    {"role": "user", "parts": [{"functionResponse": {"name": "unknown", "response": {"output": "x"}}}]},
                ],
            })
        );
    }

    /// Gemini 3 gives each function call an `id`: the call goes back with it, and so does the
    /// `functionResponse` that answers it; a call the agent named (no id came) goes back as before.
    #[test]
    fn gemini_3s_call_ids_go_back_with_the_call_and_its_response() {
        let mut turn = AssistantMessage::text("");
        turn.content = vec![
            ContentBlock::ToolUse { id: "a1b2c3d4".into(), name: "search".into(), input: json!({"q": 1}) },
            ContentBlock::ToolUse { id: "call_1".into(), name: "get".into(), input: json!({}) },
        ];
        let result =
            |id: &str| ContentBlock::ToolResult { tool_use_id: id.into(), content: "ok".into(), is_error: false };
        let history = [
            Message::user("go"),
            Message::Assistant(turn),
            Message::User { content: vec![result("a1b2c3d4"), result("call_1")] },
        ];
        let body = GeminiProvider::new("http://x/v1beta", None).body(&Request::new(&history));
        assert_eq!(
            body["contents"][1]["parts"],
            json!([
                {"functionCall": {"id": "a1b2c3d4", "name": "search", "args": {"q": 1}}, "thoughtSignature": NO_THOUGHT_SIGNATURE},
                {"functionCall": {"name": "get", "args": {}}},
            ])
        );
        assert_eq!(
            body["contents"][2]["parts"],
            json!([
                {"functionResponse": {"id": "a1b2c3d4", "name": "search", "response": {"output": "ok"}}},
                {"functionResponse": {"name": "get", "response": {"output": "ok"}}},
            ])
        );
    }

    #[test]
    fn tools_limits_and_a_schema_go_where_gemini_reads_them() {
        let history = [Message::user("weather?")];
        let provider = GeminiProvider::new("http://x/v1beta", None);
        let mut request = Request::new(&history);
        let plain = provider.body(&request);
        assert!(plain.get("tools").is_none() && plain.get("generationConfig").is_none(), "{plain}");
        let tools = [ToolSpec::new(
            "get_weather",
            "The weather.",
            json!({"type": "object", "properties": {"city": {"type": "string"}}}),
        )];
        let schema = ResponseSchema::new(
            "Answer",
            json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "properties": {"n": {"type": "integer"}}}),
        );
        request.tools = &tools;
        request.schema = Some(&schema);
        let body = provider.with_max_tokens(64).with_temperature(0.5).body(&request);
        assert_eq!(
            body["tools"],
            json!([{"functionDeclarations": [{
                "name": "get_weather",
                "description": "The weather.",
                "parametersJsonSchema": {"type": "object", "properties": {"city": {"type": "string"}}},
            }]}])
        );
        assert_eq!(
            body["generationConfig"],
            json!({
                "maxOutputTokens": 64,
                "temperature": 0.5,
                "responseMimeType": "application/json",
                "responseJsonSchema": {"type": "object", "properties": {"n": {"type": "integer"}}},
            })
        );
        assert!(body.get("model").is_none() && body.get("stream").is_none(), "{body}");
    }
}
