//! Google's Gemini API, natively: `POST {base}/models/{model}:streamGenerateContent?alt=sse`.

use crate::provider::ApiKey;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::super::Request;
use super::super::http::{
    self, Auth, ConfigError, DecodeError, Decoder, Endpoint, EnvNames, ErrorFacts, Form, ModelName, Out, Wire,
    impl_http_provider,
};
use super::super::sse::SseEvent;
use super::anthropic::tool_input;
use super::finish;
use crate::error::ModelError;
use crate::message::usage::Usage;
use crate::message::{ContentBlock, Message, StopReason};

/// A provider for Google's Gemini API (`generativelanguage.googleapis.com`), streamed (SSE).
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
#[derive(Clone)]
pub struct GeminiProvider {
    endpoint: Endpoint,
    max_tokens: Option<u32>,
}

impl GeminiProvider {
    /// The default base URL, `https://generativelanguage.googleapis.com/v1beta`.
    pub const DEFAULT_BASE_URL: &'static str = "https://generativelanguage.googleapis.com/v1beta";

    /// The default model, `gemini-2.5-flash`.
    pub const DEFAULT_MODEL: &'static str = "gemini-2.5-flash";

    /// A provider for the server at `base_url` (e.g. `https://generativelanguage.googleapis.com/v1beta`;
    /// the path `/models/{model}:streamGenerateContent` is appended), with `api_key` if the server
    /// needs one (an empty key counts as none). An invalid base URL makes every call fail with a
    /// programming error; [`Self::from_env`] checks it up front.
    ///
    /// `api_key` is `None`, a `&str`, a `String` or an `Option<String>` (see [`ApiKey`]).
    pub fn new(base_url: impl Into<String>, api_key: impl Into<ApiKey>) -> Self {
        let api_key = api_key.into().into_option();
        Self { endpoint: Endpoint::new(base_url.into(), api_key, Self::DEFAULT_MODEL), max_tokens: None }
    }

    /// A provider configured from `GEMINI_API_KEY` (else `GOOGLE_API_KEY`) and `GEMINI_BASE_URL`
    /// (default [`Self::DEFAULT_BASE_URL`]). Fails when the base URL is invalid, or when there is no
    /// key and the base URL is Google's own; the error names the variable to set.
    ///
    /// The key is the one paired with that base URL, and goes to its origin alone: for a server
    /// elsewhere, pass its own key to [`Self::new`] ([`WireKind::env_key_for`] gives the
    /// variables' key only to a base URL of their origin).
    ///
    /// [`WireKind::env_key_for`]: super::WireKind::env_key_for
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// The model to ask for, e.g. `gemini-2.5-pro` (a leading `models/`, as Google's resource names
    /// have it, is dropped from the URL: the path has it already).
    ///
    /// # Default
    ///
    /// `"gemini-2.5-flash"` ([`Self::DEFAULT_MODEL`]).
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.endpoint.model = model.into();
        self
    }

    /// The most tokens the answer may have, sent as `generationConfig.maxOutputTokens`.
    ///
    /// # Default
    ///
    /// Unset: the model's default.
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }
}

impl_http_provider!(GeminiProvider { max_tokens });

/// The key only ever in `x-goog-api-key` (Google also reads `?key=`, which would put it in every log
/// of the URL); the model in the path; no fallback: a typed answer is asked one way.
impl Wire for GeminiProvider {
    const PROVIDER: &'static str = "gcp.gemini";
    const ENV: EnvNames = EnvNames {
        provider: "gemini",
        keys: &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
        base_url: "GEMINI_BASE_URL",
        default_base_url: GeminiProvider::DEFAULT_BASE_URL,
    };
    const DEFAULT_MODEL: &'static str = GeminiProvider::DEFAULT_MODEL;
    const AUTH: Auth = Auth { header: "x-goog-api-key", prefix: "" };
    type Decoder = GeminiDecoder;

    fn from_endpoint(endpoint: Endpoint) -> Self {
        Self { endpoint, max_tokens: None }
    }

    fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// `{base}/models/{model}:streamGenerateContent?alt=sse`: the model one encoded path segment,
    /// `alt=sse` after the base URL's own query, if any.
    fn url(&self, _: &Request<'_>) -> Result<String, ModelError> {
        let model = self.endpoint.model.strip_prefix("models/").unwrap_or(&self.endpoint.model);
        let mut url = self.endpoint.url(&format!("/models/{}:streamGenerateContent", path_segment(model)))?;
        url.push(if url.contains('?') { '&' } else { '?' });
        url.push_str("alt=sse");
        Ok(url)
    }

    fn max_tokens(&self) -> Option<u64> {
        self.max_tokens.map(u64::from)
    }

    fn decoder(&self, _: &Request<'_>) -> GeminiDecoder {
        GeminiDecoder::default()
    }

    fn body(&self, request: &Request<'_>, _: Form) -> Value {
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
        if let Some(max_tokens) = self.max_tokens {
            config.insert("maxOutputTokens".to_owned(), json!(max_tokens));
        }
        if let Some(temperature) = self.endpoint.temperature {
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

/// One `GenerateContentResponse`: a chunk of the stream, or a whole answer.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Chunk<'a> {
    #[serde(default)]
    candidates: Option<Vec<Candidate>>,
    #[serde(default)]
    prompt_feedback: Option<PromptFeedback>,
    /// Read as any JSON: a usage of an unexpected shape is left out, not a failed call.
    #[serde(default)]
    usage_metadata: Option<Value>,
    #[serde(default, borrow)]
    model_version: ModelName<'a>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Candidate {
    #[serde(default)]
    index: u32,
    #[serde(default)]
    content: Option<Content>,
    #[serde(default)]
    finish_reason: Option<String>,
    #[serde(default)]
    finish_message: Option<String>,
}

#[derive(Deserialize)]
struct Content {
    #[serde(default)]
    parts: Option<Vec<Part>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Part {
    #[serde(default)]
    text: Option<String>,
    /// A thought summary (asked with `includeThoughts`), not the answer.
    #[serde(default)]
    thought: Option<bool>,
    #[serde(default)]
    function_call: Option<FunctionCall>,
}

#[derive(Deserialize)]
struct FunctionCall {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    args: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PromptFeedback {
    #[serde(default)]
    block_reason: Option<String>,
    #[serde(default)]
    block_reason_message: Option<String>,
}

/// The Gemini stream: whole responses until the body ends.
#[derive(Debug, Default)]
pub(crate) struct GeminiDecoder {
    /// The last `finishReason` of candidate 0 that ends an answer (`STOP`, `MAX_TOKENS`, ...).
    finish: Option<StopReason>,
    /// The function calls read so far: the next one's index.
    calls: u32,
    /// The last usage reported: a chunk that repeats it reports nothing.
    usage: Option<Usage>,
    /// An error object or a block ended the answer: as explicit an end as a finish reason.
    failed: bool,
}

/// What a `finishReason` means for the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Finish {
    /// The answer is complete (so far: a later chunk may go on).
    Ends(StopReason),
    /// A filter stopped the answer: permanent, for the reason given.
    Blocked(&'static str),
    /// The model's answer could not be read (a broken function call): asking again may do better.
    Unreadable(&'static str),
}

/// The meaning of a candidate's `finishReason`, in any case (Google's are upper case; a proxy's
/// `"safety"` is the same filter); `Ok(None)` when it is unset, `Err` for a reason Google does not
/// document, which is no answer.
///
/// `OTHER` is among those: Google documents it as "unknown reason", not as a filter's block and
/// not as a finish, so whether the answer is complete cannot be told. It is read as a reason this
/// client does not know: asked once more, and the same `OTHER` again stops the exec, naming it.
fn finish(reason: &str) -> Result<Option<Finish>, DecodeError> {
    const FINISHES: &[(&str, Finish)] = &[
        ("STOP", Finish::Ends(StopReason::Stop)),
        ("MAX_TOKENS", Finish::Ends(StopReason::Length)),
        ("SAFETY", Finish::Blocked("the answer was flagged by the safety filters")),
        ("RECITATION", Finish::Blocked("the answer recited training data too closely")),
        ("LANGUAGE", Finish::Blocked("the answer is in a language the model does not support")),
        ("BLOCKLIST", Finish::Blocked("the answer contained terms of a blocklist")),
        ("PROHIBITED_CONTENT", Finish::Blocked("the answer may contain prohibited content")),
        ("SPII", Finish::Blocked("the answer may contain sensitive personally identifiable information")),
        ("IMAGE_SAFETY", Finish::Blocked(IMAGE_FLAGGED)),
        ("IMAGE_PROHIBITED_CONTENT", Finish::Blocked(IMAGE_FLAGGED)),
        ("IMAGE_RECITATION", Finish::Blocked(IMAGE_FLAGGED)),
        ("IMAGE_OTHER", Finish::Blocked(IMAGE_FLAGGED)),
        ("NO_IMAGE", Finish::Blocked("the model was asked for an image and made none")),
        ("MODEL_ARMOR", Finish::Blocked("the answer was blocked by Model Armor")),
        ("MALFORMED_FUNCTION_CALL", Finish::Unreadable("the model's function call was malformed")),
        ("UNEXPECTED_TOOL_CALL", Finish::Unreadable("the model called a tool that was not offered")),
        ("TOO_MANY_TOOL_CALLS", Finish::Unreadable("the model made too many tool calls in a row")),
        ("MALFORMED_RESPONSE", Finish::Unreadable("the model's answer was malformed")),
        ("MISSING_THOUGHT_SIGNATURE", Finish::Unreadable("the model's turn lacked its thought signature")),
    ];
    if reason.is_empty() || reason.eq_ignore_ascii_case("FINISH_REASON_UNSPECIFIED") {
        return Ok(None);
    }
    match FINISHES.iter().find(|(name, _)| name.eq_ignore_ascii_case(reason)) {
        Some((_, finish)) => Ok(Some(*finish)),
        None => Err(finish::unknown("finishReason", reason)),
    }
}

/// What an image filter's `finishReason` says.
const IMAGE_FLAGGED: &str = "an image of the answer was flagged by the safety filters";

/// Why a prompt was blocked (`promptFeedback.blockReason`, in any case); `None` when it is unset.
/// Any other reason, `OTHER` included, blocks the prompt: Google documents `OTHER` as "blocked due
/// to unknown reasons", a block all the same (and the same prompt is blocked again).
fn prompt_blocked(reason: &str) -> Option<&'static str> {
    const REASONS: &[(&str, &str)] = &[
        ("SAFETY", "the prompt was flagged by the safety filters"),
        ("BLOCKLIST", "the prompt contains terms of a blocklist"),
        ("PROHIBITED_CONTENT", "the prompt may contain prohibited content"),
        ("IMAGE_SAFETY", "an image of the prompt was flagged by the safety filters"),
        ("OTHER", "the prompt was blocked for a reason Google does not name"),
    ];
    if reason.is_empty() || reason.eq_ignore_ascii_case("BLOCK_REASON_UNSPECIFIED") {
        return None;
    }
    let known = REASONS.iter().find(|(name, _)| name.eq_ignore_ascii_case(reason));
    Some(known.map_or("the prompt was blocked", |(_, what)| *what))
}

/// A prompt or an answer a filter blocked: permanent (the same request is blocked the same way), as
/// the 400 the API answers an invalid request with, coded by the reason (`SAFETY`).
#[cold]
fn blocked(what: &str, field: &str, reason: &str, detail: Option<&str>) -> ErrorFacts {
    let mut text = format!("Gemini blocked the call: {what} ({field} {reason})");
    if let Some(detail) = detail.map(str::trim).filter(|detail| !detail.is_empty()) {
        text.push_str(": ");
        text.push_str(detail);
    }
    text.push_str("; rephrase the prompt or adjust the request's safety settings, asking again gets the same");
    ErrorFacts {
        message: Some(text),
        code: Some(reason.to_owned()),
        status: Some(400),
        typed: Some(("ContentBlockedError", 400)),
        ..ErrorFacts::default()
    }
}

/// An answer whose function call could not be read: the chunk is unusable, as a malformed one is
/// (a corrupted stream, asked again: another sample may do better).
#[cold]
fn unreadable(what: &str, reason: &str) -> DecodeError {
    let error =
        serde::de::Error::custom(format_args!("Gemini's answer cannot be used: {what} (finishReason {reason})"));
    DecodeError::Corrupted(error)
}

/// `usageMetadata` as the call's usage; `None` when it has no count.
fn usage(usage: Option<&Value>) -> Option<Usage> {
    let usage = usage?;
    let count = |key| http::tokens(usage, key);
    let [prompt, tool_prompt, candidates, thoughts, cached] = [
        count("promptTokenCount"),
        count("toolUsePromptTokenCount"),
        count("candidatesTokenCount"),
        count("thoughtsTokenCount"),
        count("cachedContentTokenCount"),
    ];
    if [prompt, tool_prompt, candidates, thoughts, cached].iter().all(Option::is_none) {
        return None;
    }
    let sum = |a: Option<u64>, b: Option<u64>| a.unwrap_or(0).saturating_add(b.unwrap_or(0));
    Some(Usage::new(sum(prompt, tool_prompt), sum(candidates, thoughts)).with_cache_read(cached.unwrap_or(0)))
}

impl GeminiDecoder {
    fn stop_reason(&self) -> StopReason {
        match self.finish {
            Some(StopReason::Stop) | None if self.calls > 0 => StopReason::ToolUse,
            Some(reason) => reason,
            None => StopReason::Stop,
        }
    }

    /// Reads one response: calls `out` for what it says. An error object, a blocked prompt or a
    /// blocked answer ends the call with an error; a broken function call is a malformed chunk.
    fn chunk(&mut self, chunk: Chunk<'_>, out: &mut Out<'_>) -> Result<(), DecodeError> {
        if let Some(error) = chunk.error.filter(|error| !error.is_null()) {
            return self.fail(out, ErrorFacts::from_error(&error).unwrap_or_default());
        }
        if let Some(model) = chunk.model_version.get() {
            out.model(model);
        }
        if let Some(usage) = usage(chunk.usage_metadata.as_ref()).filter(|usage| self.usage != Some(*usage)) {
            self.usage = Some(usage);
            out.usage(usage);
        }
        if let Some(feedback) = chunk.prompt_feedback {
            let reason = feedback.block_reason.unwrap_or_default();
            if let Some(what) = prompt_blocked(&reason) {
                let detail = feedback.block_reason_message.as_deref();
                return self.fail(out, blocked(what, "promptFeedback.blockReason", &reason, detail));
            }
        }
        for candidate in chunk.candidates.into_iter().flatten().filter(|candidate| candidate.index == 0) {
            for part in candidate.content.and_then(|content| content.parts).into_iter().flatten() {
                self.part(part, out);
            }
            let reason = candidate.finish_reason.unwrap_or_default();
            match finish(&reason)? {
                None => {}
                Some(Finish::Ends(stop)) => self.finish = Some(stop),
                Some(Finish::Blocked(what)) => {
                    let detail = candidate.finish_message.as_deref();
                    return self.fail(out, blocked(what, "finishReason", &reason, detail));
                }
                Some(Finish::Unreadable(what)) => return Err(unreadable(what, &reason)),
            }
        }
        Ok(())
    }

    /// The call ends with the error `facts` say.
    fn fail(&mut self, out: &mut Out<'_>, facts: ErrorFacts) -> Result<(), DecodeError> {
        self.failed = true;
        out.error(facts);
        Ok(())
    }

    fn part(&mut self, part: Part, out: &mut Out<'_>) {
        if let Some(call) = part.function_call {
            let index = self.calls;
            self.calls = self.calls.saturating_add(1);
            out.tool_start(index, call.id.unwrap_or_default(), call.name.unwrap_or_default());
            if let Some(args) = call.args.filter(|args| !args.is_null()) {
                out.tool_args(index, args.to_string());
            }
        } else if part.thought != Some(true) {
            if let Some(text) = part.text {
                out.text(text);
            }
        }
    }

    /// Reads responses that come as a JSON array (Google's one-element error array, or a body
    /// without `alt=sse`): each in turn, until one ends the call. Rare, so read through a `Value`.
    #[cold]
    fn all(&mut self, items: &[Value], out: &mut Out<'_>) -> Result<(), DecodeError> {
        for item in items {
            self.chunk(http::read(item)?, out)?;
            if self.failed {
                break;
            }
        }
        Ok(())
    }
}

impl Decoder for GeminiDecoder {
    const ANSWER: &'static str = "a Gemini response (an object with `candidates`, or an array of them)";

    fn event(&mut self, event: &SseEvent, out: &mut Out<'_>) -> Result<(), DecodeError> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(());
        }
        if data.starts_with('[') {
            return self.all(&http::parse::<Vec<Value>>(data)?, out);
        }
        self.chunk(http::parse(data)?, out)
    }

    /// The stream has no final event: the body's end finishes the answer with the last
    /// `finishReason`, and without one it was cut.
    fn completed(&self) -> Option<StopReason> {
        self.finish.map(|_| self.stop_reason())
    }

    fn whole(&mut self, answer: &Value, out: &mut Out<'_>) -> Result<(), DecodeError> {
        match answer {
            Value::Array(items) => self.all(items, out)?,
            answer => self.all(std::slice::from_ref(answer), out)?,
        }
        if !self.failed {
            out.done(self.stop_reason());
        }
        Ok(())
    }

    fn is_answer(answer: &Value) -> bool {
        let one = |item: &Value| {
            ["candidates", "promptFeedback", "usageMetadata", "error"].iter().any(|key| item.get(key).is_some())
        };
        match answer {
            Value::Array(items) => !items.is_empty() && items.iter().all(one),
            answer => one(answer),
        }
    }

    fn finished(&self) -> bool {
        self.finish.is_some() || self.failed
    }
}
#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::classify::{ExecAction, exec_verdict};
    use crate::error::TransportKind;
    use crate::message::AssistantMessage;
    use crate::provider::ResponseSchema;
    use crate::provider::http::Secret;
    use crate::provider::{Provider, StreamEvent};
    use crate::tool::ToolSpec;

    type Items = Vec<Result<StreamEvent, ModelError>>;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| pairs.iter().find(|(key, _)| *key == name).map(|(_, value)| (*value).to_owned())
    }

    /// The items a streamed body of these `data:` lines yields.
    fn replay(lines: &[&str]) -> Items {
        let body: String = lines.iter().map(|line| format!("data: {line}\r\n\r\n")).collect();
        http::replay(GeminiDecoder::default(), &[body.as_bytes()], false, None)
    }

    fn whole(answer: &str, key: Option<&str>) -> Items {
        let secret = Secret::new(key.map(str::to_owned));
        http::replay(GeminiDecoder::default(), &[answer.as_bytes()], true, secret)
    }

    fn error_of(items: &Items) -> &ModelError {
        match items.last() {
            Some(Ok(StreamEvent::Error { error: Some(error), .. })) | Some(Err(error)) => error,
            other => panic!("not an error: {other:?} in {items:?}"),
        }
    }

    fn text(text: &str) -> Result<StreamEvent, ModelError> {
        Ok(StreamEvent::TextDelta(text.into()))
    }

    fn done(stop_reason: StopReason) -> Result<StreamEvent, ModelError> {
        Ok(StreamEvent::Done { stop_reason })
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
        assert_eq!(google.endpoint.api_key.as_ref().map(Secret::expose), Some("g-key"));
        let both =
            GeminiProvider::from_lookup(env(&[("GOOGLE_API_KEY", "g-key"), ("GEMINI_API_KEY", "gm-key")])).unwrap();
        assert_eq!(both.endpoint.api_key.as_ref().map(Secret::expose), Some("gm-key"));
        let blank = GeminiProvider::from_lookup(env(&[("GOOGLE_API_KEY", "g-key"), ("GEMINI_API_KEY", " ")])).unwrap();
        assert_eq!(blank.endpoint.api_key.as_ref().map(Secret::expose), Some("g-key"));
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
        assert!(!debug.contains("SECRET123") && debug.contains("GeminiProvider"), "{debug}");
    }

    #[test]
    fn the_key_goes_in_its_header_and_the_model_in_one_path_segment() {
        assert_eq!(GeminiProvider::AUTH, Auth { header: "x-goog-api-key", prefix: "" });
        let key = "AIza-SECRET123";
        let provider =
            GeminiProvider::new("http://127.0.0.1:9/v1beta?tenant=a", Some(key.into())).with_model("a/b:c?d#e");
        let history = [Message::user("hi")];
        let request = Request::new(&history);
        let url = Wire::url(&provider, &request).unwrap();
        assert_eq!(url, "http://127.0.0.1:9/v1beta/models/a%2Fb%3Ac%3Fd%23e:streamGenerateContent?tenant=a&alt=sse");
        assert!(!url.contains("SECRET") && !format!("{:?}", provider.body(&request)).contains("SECRET"));
        let plain = GeminiProvider::new("http://127.0.0.1:9/v1beta/", None).with_model("models/gemini-2.5-pro");
        assert_eq!(
            Wire::url(&plain, &request).unwrap(),
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

    #[test]
    fn the_last_usage_counts_and_the_model_is_reported_once() {
        let items = replay(&[
            r#"{"candidates":[{"content":{"role":"model","parts":[{"text":"Hel"}]},"index":0}],"usageMetadata":{"promptTokenCount":120,"candidatesTokenCount":1,"totalTokenCount":121},"modelVersion":"gemini-2.5-flash-001"}"#,
            r#"{"candidates":[{"content":{"parts":[{"text":"thinking...","thought":true},{"text":"lo"}]}}],"usageMetadata":{"promptTokenCount":120,"candidatesTokenCount":1,"totalTokenCount":121},"modelVersion":"gemini-2.5-flash-001"}"#,
            r#"{"candidates":[{"content":{"parts":[{"text":"!"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":120,"candidatesTokenCount":3,"thoughtsTokenCount":40,"cachedContentTokenCount":100,"toolUsePromptTokenCount":5},"modelVersion":"gemini-2.5-flash-001"}"#,
        ]);
        assert_eq!(
            items,
            [
                Ok(StreamEvent::Model("gemini-2.5-flash-001".into())),
                Ok(StreamEvent::Usage(Usage::new(120, 1))),
                text("Hel"),
                text("lo"),
                Ok(StreamEvent::Usage(Usage::new(125, 43).with_cache_read(100))),
                text("!"),
                done(StopReason::Stop),
            ]
        );
    }

    #[test]
    fn the_call_ends_at_the_end_of_the_body_with_the_last_finish_reason() {
        // An intermediate finish reason (a code execution round) does not end the answer.
        let items = replay(&[
            r#"{"candidates":[{"content":{"parts":[{"text":"a"}]},"finishReason":"STOP"}]}"#,
            r#"{"candidates":[{"content":{"parts":[{"text":"b"}]},"finishReason":"MAX_TOKENS"}]}"#,
        ]);
        assert_eq!(items, [text("a"), text("b"), done(StopReason::Length)]);
        // No finish reason at all: the body was cut before its last chunk, never a short answer.
        let cut = replay(&[r#"{"candidates":[{"content":{"parts":[{"text":"a"}]}}]}"#]);
        assert_eq!(cut, [text("a")]);
        let nothing = replay(&[r#"{"usageMetadata":{"promptTokenCount":3}}"#]);
        assert_eq!(error_of(&nothing).transport_kind(), Some(TransportKind::Truncated), "{nothing:?}");
    }

    #[test]
    fn function_calls_become_tool_calls_in_order() {
        let items = replay(&[
            r#"{"candidates":[{"content":{"parts":[{"text":"Let me look."},{"functionCall":{"name":"search","args":{"q":"rust"}}}]}}]}"#,
            r#"{"candidates":[{"content":{"parts":[{"functionCall":{"name":"time","id":"fc-7"}}]},"finishReason":"STOP"}]}"#,
        ]);
        assert_eq!(
            items,
            [
                text("Let me look."),
                Ok(StreamEvent::ToolCallStart { index: 0, id: String::new(), name: "search".into() }),
                Ok(StreamEvent::ToolCallDelta { index: 0, arguments: r#"{"q":"rust"}"#.into() }),
                Ok(StreamEvent::ToolCallStart { index: 1, id: "fc-7".into(), name: "time".into() }),
                done(StopReason::ToolUse),
            ]
        );
    }

    #[test]
    fn an_error_in_the_stream_is_typed_as_its_http_twin() {
        let quota = r#"{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"34.5s"}]}}"#;
        for line in [quota.to_owned(), format!("[{quota}]")] {
            let items = replay(&[r#"{"candidates":[{"content":{"parts":[{"text":"partial"}]}}]}"#, &line]);
            assert_eq!(items[0], text("partial"));
            let error = error_of(&items);
            assert_eq!((error.kind(), error.status()), ("RateLimitError", Some(429)), "{line}");
            assert_eq!(error.retry_after(), Some(Duration::from_millis(34_500)));
            assert_eq!(error.code(), Some("RESOURCE_EXHAUSTED"));
            assert_eq!(items.len(), 2, "{items:?}");
        }
        let unavailable = r#"{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}"#;
        let error = error_of(&replay(&[unavailable])).clone();
        assert_eq!((error.kind(), error.status()), ("ServiceUnavailableError", Some(503)));
        assert_eq!(exec_verdict(&error.to_string(), Some(&error)).action, ExecAction::Retry);
        let invalid = r#"{"error":{"code":400,"message":"API key not valid.","status":"INVALID_ARGUMENT"}}"#;
        let error = error_of(&replay(&[invalid])).clone();
        assert_eq!(exec_verdict(&error.to_string(), Some(&error)).action, ExecAction::FailPermanently);
    }

    #[test]
    fn a_blocked_prompt_or_answer_is_permanent_and_says_why() {
        let prompt = replay(&[
            r#"{"promptFeedback":{"blockReason":"PROHIBITED_CONTENT"},"usageMetadata":{"promptTokenCount":9}}"#,
        ]);
        let error = error_of(&prompt).clone();
        assert_eq!(
            error.message(),
            "Gemini blocked the call: the prompt may contain prohibited content (promptFeedback.blockReason \
             PROHIBITED_CONTENT); rephrase the prompt or adjust the request's safety settings, asking again gets the same"
        );
        assert_eq!(
            (error.kind(), error.status(), error.code()),
            ("ContentBlockedError", Some(400), Some("PROHIBITED_CONTENT"))
        );
        assert_eq!(exec_verdict(&error.to_string(), Some(&error)).action, ExecAction::FailPermanently);
        assert_eq!(prompt[0], Ok(StreamEvent::Usage(Usage::new(9, 0))));

        let answer = replay(&[
            r#"{"candidates":[{"content":{"parts":[{"text":"Once upon"}]}}]}"#,
            r#"{"candidates":[{"finishReason":"SAFETY","finishMessage":"harassment","safetyRatings":[]}]}"#,
            r#"{"candidates":[{"content":{"parts":[{"text":"never read"}]},"finishReason":"STOP"}]}"#,
        ]);
        assert_eq!(answer.len(), 2, "{answer:?}");
        let error = error_of(&answer);
        assert!(
            error.message().contains("flagged by the safety filters (finishReason SAFETY): harassment;"),
            "{error}"
        );
        assert_eq!(error.code(), Some("SAFETY"));
        for reason in ["RECITATION", "BLOCKLIST", "SPII", "LANGUAGE", "IMAGE_SAFETY"] {
            let line = format!(r#"{{"candidates":[{{"finishReason":"{reason}"}}]}}"#);
            assert_eq!(error_of(&replay(&[&line])).kind(), "ContentBlockedError", "{reason}");
        }
    }

    /// Google's reasons are upper case; a proxy's lower-case `"safety"` is the same filter, not a
    /// stop. `OTHER` is "unknown reason" in Google's documentation: no answer, and a reason Google
    /// does not document is none either. A prompt blocked for `OTHER` is blocked all the same.
    #[test]
    fn finish_reasons_are_read_in_any_case_and_an_unknown_one_is_no_answer() {
        let safety = replay(&[r#"{"candidates":[{"content":{"parts":[{"text":"Once"}]},"finishReason":"safety"}]}"#]);
        let error = error_of(&safety);
        assert_eq!((error.kind(), error.code()), ("ContentBlockedError", Some("safety")));
        assert_eq!(exec_verdict(&error.to_string(), Some(error)).action, ExecAction::FailPermanently);
        let stop = replay(&[r#"{"candidates":[{"content":{"parts":[{"text":"ok"}]},"finishReason":"Stop"}]}"#]);
        assert_eq!(stop, [text("ok"), done(StopReason::Stop)]);
        for reason in ["OTHER", "SLEEPY"] {
            let line =
                format!(r#"{{"candidates":[{{"content":{{"parts":[{{"text":"Hi"}}]}},"finishReason":"{reason}"}}]}}"#);
            let items = replay(&[&line]);
            let error = error_of(&items);
            assert_eq!(
                (error.transport_kind(), error.code()),
                (Some(TransportKind::Corrupted), Some("unreadable_answer"))
            );
            let what = format!("`finishReason` \"{reason}\" is not a finish reason this client knows");
            assert!(error.message().contains(&what), "{error}");
        }
        let other = replay(&[r#"{"promptFeedback":{"blockReason":"OTHER"}}"#]);
        let error = error_of(&other);
        assert!(error.message().contains("blocked for a reason Google does not name"), "{error}");
        assert_eq!(exec_verdict(&error.to_string(), Some(error)).action, ExecAction::FailPermanently);
    }

    #[test]
    fn a_broken_function_call_is_a_corrupted_answer() {
        let items = replay(&[
            r#"{"candidates":[{"content":{"parts":[{"text":"x"}]},"finishReason":"MALFORMED_FUNCTION_CALL"}]}"#,
        ]);
        let error = error_of(&items);
        assert_eq!(error.transport_kind(), Some(TransportKind::Corrupted));
        assert!(
            error.message().contains("the model's function call was malformed (finishReason MALFORMED_FUNCTION_CALL)")
        );
        assert_eq!(exec_verdict(&error.to_string(), Some(error)).action, ExecAction::Retry);
    }

    #[test]
    fn whole_answers_an_object_or_an_array() {
        let one = r#"{"candidates":[{"content":{"parts":[{"text":"ok"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":1},"modelVersion":"m-1"}"#;
        let expected = [
            Ok(StreamEvent::Model("m-1".into())),
            Ok(StreamEvent::Usage(Usage::new(3, 1))),
            text("ok"),
            done(StopReason::Stop),
        ];
        assert_eq!(whole(one, None), expected);
        let array = format!(
            r#"[{{"candidates":[{{"content":{{"parts":[{{"text":"o"}}]}}}}]}}, {}]"#,
            one.replace(r#""ok""#, r#""k""#)
        );
        let items = whole(&array, None);
        assert_eq!(items[..2], [text("o"), Ok(StreamEvent::Model("m-1".into()))]);
        assert_eq!(items.last(), Some(&done(StopReason::Stop)));

        let key = "AIza-SECRET123";
        let error =
            format!(r#"[{{"error":{{"code":403,"message":"key {key} is denied","status":"PERMISSION_DENIED"}}}}]"#);
        let items = whole(&error, Some(key));
        let typed = error_of(&items);
        assert_eq!((typed.kind(), typed.status()), ("PermissionDeniedError", Some(403)));
        assert!(!format!("{items:?}").contains("SECRET"), "{items:?}");
        assert_eq!(items.len(), 1);

        let other = whole(r#"{"models":[]}"#, None);
        assert_eq!(error_of(&other).kind(), "NotAnAnswerError");
        assert!(error_of(&other).message().contains("is not a Gemini response"), "{other:?}");
        assert_eq!(error_of(&whole("[]", None)).kind(), "NotAnAnswerError");
    }

    #[test]
    fn a_body_of_bare_json_is_read_as_a_whole_answer() {
        // Without `alt=sse` Gemini streams one JSON array; a server that does so is read all the same.
        let body = r#"[{"candidates":[{"content":{"parts":[{"text":"hi"}]},"finishReason":"STOP"}]}]"#;
        let items = http::replay(GeminiDecoder::default(), &[body.as_bytes()], false, None);
        assert_eq!(items, [text("hi"), done(StopReason::Stop)]);
    }

    #[test]
    fn malformed_chunks_and_counts_of_the_wrong_type() {
        let items = replay(&["{not json"]);
        assert_eq!(error_of(&items).transport_kind(), Some(TransportKind::Corrupted));
        let odd = replay(&[
            r#"{"candidates":[{"content":{"parts":[{"text":"a"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":"9","candidatesTokenCount":-1},"modelVersion":7}"#,
        ]);
        assert_eq!(odd, [text("a"), done(StopReason::Stop)]);
    }
}
