//! Google's Gemini API: `POST /v1beta/models/{model}:streamGenerateContent` (with `?alt=sse`, an
//! event stream of whole `GenerateContentResponse`s) and `:generateContent` (one JSON response).
//!
//! # Requests
//!
//! The model and the stream flag come from the path (the model percent-decoded); the usage is always
//! sent. The key is read from `x-goog-api-key` (then `authorization: Bearer ...`, then `api-key`).
//! The conversation is `systemInstruction.parts[].text` and `contents[]` (one message each): each
//! part's `text`, a `functionResponse.response`'s strings (`output`, `error`) and a
//! `functionCall.args` (as compact JSON). The tools are `tools[].functionDeclarations[].name`; a
//! typed answer is `generationConfig.responseJsonSchema` (or `responseSchema`), named by its
//! `title` (else `responseJsonSchema`): its text is the JSON, as any text answer.
//! `toolConfig.functionCallingConfig` with `mode: "ANY"` forces a call: of the one function
//! `allowedFunctionNames` names, else of one of them (see
//! [forced tool choice](crate#forced-tool-choice)). A text answer is then a `functionCall` with
//! the text parsed as its `args`, whole in the last response (the text's pieces go as SSE
//! comments, which carry nothing: Gemini never splits a call).
//!
//! # Answers
//!
//! Every event is one `data:` line and a blank line. A stream is one
//! response per text piece (`candidates[0].content.parts[0].text`, the `usageMetadata` so far, the
//! `modelVersion`, the `responseId`), then one last response with an empty text part, the
//! `finishReason` (`STOP`, or `MAX_TOKENS` when the step is cut by the token limit) and the final
//! `usageMetadata`: `promptTokenCount` (the input tokens, the cached ones included),
//! `candidatesTokenCount`, `cachedContentTokenCount` and `thoughtsTokenCount` (when not 0: the
//! step's cache reads and reasoning tokens) and `totalTokenCount`. There is no end marker: a
//! `truncate` step ends the body before that last response, a stream without any `finishReason`.
//! A tool use is the text (if any) as one response, then one response per call whose part is a
//! `functionCall` with its whole `args` (Gemini never splits them, so `argument_chunks` is ignored;
//! calls carry no id), then the finish (`STOP`). There is no opening event (a hang after the start
//! sends one response with an empty text) and no ping (a keep-alive flood sends SSE comments,
//! `ping` is ignored). No request id header.
//!
//! # Errors
//!
//! The body is `{"error": {"code": <status>, "message", "status": <Google's status name>,
//! "details": [...]}}`; an in-stream error is the same object as a `data:` line. By status:
//!
//! | status | `status` | message |
//! |---|---|---|
//! | 400 | `INVALID_ARGUMENT` | Request contains an invalid argument. |
//! | 401 | `UNAUTHENTICATED` | Request had invalid authentication credentials. ... |
//! | 403 | `PERMISSION_DENIED` | The caller does not have permission |
//! | 404 | `NOT_FOUND` | models/... is not found for API version v1beta, ... |
//! | 409 | `ABORTED` | The operation was aborted. |
//! | 429 | `RESOURCE_EXHAUSTED` | Resource has been exhausted (e.g. check quota). |
//! | 499 | `CANCELLED` | The operation was cancelled. |
//! | 501 | `UNIMPLEMENTED` | Operation is not implemented, or supported, or enabled. |
//! | 503, 529 | `UNAVAILABLE` | The model is overloaded. Please try again later. |
//! | 504 | `DEADLINE_EXCEEDED` | Deadline expired before operation could complete. |
//! | other 4xx | `FAILED_PRECONDITION` | Precondition check failed. |
//! | 5xx | `INTERNAL` | An internal error has occurred. ... |
//!
//! The `code` is the status of the `status` name (so a step's `error_type` sets both); a
//! `RESOURCE_EXHAUSTED` carries a per-minute `QuotaFailure` and a `Help` link, a bad key an
//! `ErrorInfo` with reason `API_KEY_INVALID`. A `RetryInfo` (the wait in the body) or a daily quota is
//! the step's `body`. `context_overflow` is `INVALID_ARGUMENT` "The input token count (250000) exceeds
//! the maximum number of tokens allowed (1048576)."; `invalid_api_key` is `INVALID_ARGUMENT` "API key
//! not valid. Please pass a valid API key." (Google answers a bad key with 400; the step's status is
//! kept on the status line). A mid-stream `sse_error` is `UNAVAILABLE` unless set. Step options:
//! `code` and `param` (OpenAI's) are ignored.

use serde_json::{Value, json};

use super::render::{Exchange, Render, Rich, Sent};
use super::shared::{ErrorParts, KEEP_ALIVE, arguments_value, data, is_whole, status_of_type, tool_names};
use super::{Asked, Names, NotAnAnswerBody, Route};
use crate::conversation::Conversation;
use crate::forced::ToolChoice;
use crate::step::{NotAnAnswer, Preset};

/// The Gemini wire.
pub(crate) struct Gemini;

const NAMES: Names = Names {
    label: "Gemini",
    path: "/v1beta/models/{model}:streamGenerateContent",
    base_path: "/v1beta",
    key_headers: &["x-goog-api-key"],
    request_id_header: None,
    rate_limit_headers: None,
};

/// The message of a bad key, which also says which details go with it.
const BAD_KEY: &str = "API key not valid. Please pass a valid API key.";

/// Google's status name of an HTTP status, and the message Gemini sends with it.
fn status_defaults(status: u16) -> (&'static str, &'static str) {
    match status {
        400 => ("INVALID_ARGUMENT", "Request contains an invalid argument."),
        401 => (
            "UNAUTHENTICATED",
            "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other \
             valid authentication credential.",
        ),
        403 => ("PERMISSION_DENIED", "The caller does not have permission"),
        404 => (
            "NOT_FOUND",
            "models/chaos-model is not found for API version v1beta, or is not supported for generateContent.",
        ),
        409 => ("ABORTED", "The operation was aborted."),
        429 => ("RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota)."),
        499 => ("CANCELLED", "The operation was cancelled."),
        501 => ("UNIMPLEMENTED", "Operation is not implemented, or supported, or enabled."),
        503 | 529 => ("UNAVAILABLE", "The model is overloaded. Please try again later."),
        504 => ("DEADLINE_EXCEEDED", "Deadline expired before operation could complete."),
        _ if (400..500).contains(&status) => ("FAILED_PRECONDITION", "Precondition check failed."),
        _ => (
            "INTERNAL",
            "An internal error has occurred. Please retry or report in \
             https://developers.generativeai.google/guide/troubleshooting",
        ),
    }
}

impl Gemini {
    fn response_id(x: &Exchange) -> String {
        format!("chaos-response-{:012}", x.seq)
    }

    /// `usageMetadata` after `candidates` output tokens (the reasoning tokens are reported apart, as
    /// `thoughtsTokenCount`, and count in the total).
    fn usage(x: &Exchange, candidates: u64) -> Value {
        let thoughts = x.usage.reasoning_tokens;
        let mut usage = json!({
            "promptTokenCount": x.input_tokens,
            "candidatesTokenCount": candidates,
            "totalTokenCount": x.input_tokens.saturating_add(candidates).saturating_add(thoughts),
        });
        if x.usage.cache_read_input_tokens > 0 {
            usage["cachedContentTokenCount"] = json!(x.usage.cache_read_input_tokens);
        }
        if thoughts > 0 {
            usage["thoughtsTokenCount"] = json!(thoughts);
        }
        usage
    }

    /// One `GenerateContentResponse` with `parts`, a finish reason for the last, and the usage after
    /// `candidates` output tokens.
    fn response(x: &Exchange, parts: Vec<Value>, finish: Option<&str>, candidates: u64) -> Value {
        let mut candidate = json!({"content": {"parts": parts, "role": "model"}, "index": 0});
        if let Some(reason) = finish {
            candidate["finishReason"] = json!(reason);
        }
        json!({
            "candidates": [candidate],
            "usageMetadata": Self::usage(x, candidates),
            "modelVersion": x.model,
            "responseId": Self::response_id(x),
        })
    }

    /// The finish of an answer that is not a tool call.
    fn finish(x: &Exchange) -> &'static str {
        if x.cut_by_token_limit { "MAX_TOKENS" } else { "STOP" }
    }

    fn text(text: &str) -> Value {
        json!({"text": text})
    }

    /// A thought summary's part: reasoning, not the answer.
    fn thought(text: &str) -> Value {
        json!({"text": text, "thought": true})
    }

    fn call(name: &str, input: &Value) -> Value {
        json!({"functionCall": {"name": name, "args": input}})
    }

    /// The `google.rpc` details Gemini sends with an error of `status_name`.
    fn details(parts: &ErrorParts) -> Vec<Value> {
        let mut details = Vec::new();
        if parts.message == BAD_KEY {
            details.push(json!({
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "API_KEY_INVALID",
                "domain": "googleapis.com",
                "metadata": {"service": "generativelanguage.googleapis.com"},
            }));
        }
        if parts.error_type == "RESOURCE_EXHAUSTED" {
            details.push(json!({
                "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                "violations": [{
                    "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                    "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
                    "quotaDimensions": {"location": "global", "model": "chaos-model"},
                    "quotaValue": "10",
                }],
            }));
            details.push(json!({
                "@type": "type.googleapis.com/google.rpc.Help",
                "links": [{"description": "Learn more about Gemini API quotas",
                    "url": "https://ai.google.dev/gemini-api/docs/rate-limits"}],
            }));
        }
        details
    }
}

/// A `functionCallingConfig`'s choice: mode `ANY` forces a call, of the one allowed function or
/// of one among the allowed (any offered when none is named); any other mode lets the model choose.
fn tool_choice(config: Option<&Value>) -> ToolChoice {
    if config.and_then(|c| c.get("mode")).and_then(Value::as_str) != Some("ANY") {
        return ToolChoice::Auto;
    }
    let allowed = config.and_then(|c| c.get("allowedFunctionNames")).and_then(Value::as_array);
    let mut among: Vec<String> = allowed.into_iter().flatten().filter_map(Value::as_str).map(str::to_owned).collect();
    match among.len() {
        1 => ToolChoice::Tool(among.remove(0)),
        _ => ToolChoice::Any { among },
    }
}

/// `text` with each `%XX` decoded (a model name as a path segment).
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|hex| std::str::from_utf8(hex).ok());
        match (bytes[i], hex.and_then(|hex| u8::from_str_radix(hex, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl Render for Gemini {
    fn names(&self) -> &'static Names {
        &NAMES
    }

    /// `/{version}/models/{model}:streamGenerateContent` or `:generateContent`, any version.
    fn route(&self, path: &str) -> Option<Route> {
        let (_, rest) = path.split_once("/models/")?;
        let (model, method) = rest.rsplit_once(':')?;
        let stream = match method {
            "streamGenerateContent" => true,
            "generateContent" => false,
            _ => return None,
        };
        (!model.is_empty() && !model.contains('/'))
            .then(|| Route { model: Some(percent_decoded(model)), stream: Some(stream) })
    }

    fn request_path(&self, model: &str, stream: bool) -> String {
        let method = if stream { "streamGenerateContent" } else { "generateContent" };
        format!("/v1beta/models/{model}:{method}")
    }

    fn read<'a>(&self, body: Option<&'a Value>, route: Route) -> Asked<'a> {
        let mut conversation = Conversation::default();
        let parts = |content: &'a Value| content.get("parts").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
        if let Some(system) = body.and_then(|b| b.get("systemInstruction")) {
            conversation.system =
                parts(system).iter().filter_map(|part| part.get("text").and_then(Value::as_str)).collect();
        }
        let contents = body.and_then(|b| b.get("contents")).and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
        conversation.messages = contents.len();
        for content in contents {
            for part in parts(content) {
                if let Some(text) = part.get("text").and_then(Value::as_str) {
                    conversation.texts.push(text);
                }
                if let Some(args) = part.pointer("/functionCall/args") {
                    conversation.tool_inputs.push(args.to_string().into());
                }
                for value in part.pointer("/functionResponse/response").and_then(Value::as_object).into_iter().flatten()
                {
                    match value.1 {
                        Value::String(text) => conversation.texts.push(text),
                        other => conversation.tool_inputs.push(other.to_string().into()),
                    }
                }
            }
            // Gemini reads a content without a role as the user's.
            let is_user = content.get("role").and_then(Value::as_str).is_none_or(|role| role == "user");
            conversation.mark_opening(is_user, conversation.texts.len());
        }
        let config = body.and_then(|b| b.get("generationConfig"));
        let schema = config.and_then(|c| c.get("responseJsonSchema").or_else(|| c.get("responseSchema")));
        let tools = body.and_then(|b| b.get("tools")).and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
        let declarations = tools.iter().filter_map(|tool| tool.get("functionDeclarations")).collect::<Vec<_>>();
        Asked {
            model: route.model,
            stream: route.stream.unwrap_or(false),
            usage_asked: true,
            tool_choice: tool_choice(body.and_then(|b| b.pointer("/toolConfig/functionCallingConfig"))),
            schema: schema.map(|s| s.get("title").and_then(Value::as_str).unwrap_or("responseJsonSchema").to_owned()),
            tools: declarations.into_iter().flat_map(|d| tool_names(Some(&json!({"tools": d})))).collect(),
            max_tokens: config.and_then(|c| c.get("maxOutputTokens")).and_then(Value::as_u64),
            conversation,
        }
    }

    fn error_parts(&self, status: u16, preset: Preset) -> ErrorParts {
        let (status_name, message) = match preset {
            Preset::Generic => status_defaults(status),
            Preset::ContextOverflow => (
                "INVALID_ARGUMENT",
                "The input token count (250000) exceeds the maximum number of tokens allowed (1048576).",
            ),
            Preset::InvalidApiKey => ("INVALID_ARGUMENT", BAD_KEY),
        };
        ErrorParts::new(status_name, message, None)
    }

    fn stream_error_parts(&self) -> ErrorParts {
        let (status_name, message) = status_defaults(503);
        ErrorParts::new(status_name, message, None)
    }

    fn bare_error_parts(&self) -> ErrorParts {
        ErrorParts::new("INVALID_ARGUMENT", BAD_KEY, None)
    }

    fn status_of(&self, error_type: &str) -> u16 {
        match error_type {
            "INVALID_ARGUMENT" | "FAILED_PRECONDITION" | "OUT_OF_RANGE" => 400,
            "UNAUTHENTICATED" => 401,
            "PERMISSION_DENIED" => 403,
            "NOT_FOUND" => 404,
            "ABORTED" | "ALREADY_EXISTS" => 409,
            "RESOURCE_EXHAUSTED" => 429,
            "CANCELLED" => 499,
            "UNIMPLEMENTED" => 501,
            "UNAVAILABLE" => 503,
            "DEADLINE_EXCEEDED" => 504,
            "INTERNAL" | "UNKNOWN" | "DATA_LOSS" => 500,
            other => status_of_type(other),
        }
    }

    fn error_body(&self, parts: &ErrorParts) -> Value {
        let mut error = json!({
            "code": self.status_of(&parts.error_type),
            "message": parts.message,
            "status": parts.error_type,
        });
        let details = Self::details(parts);
        if !details.is_empty() {
            error["details"] = Value::from(details);
        }
        json!({"error": error})
    }

    fn default_malformed(&self) -> &'static str {
        r#"{"candidates":[{"content":{"parts":[{"text":"#
    }

    /// The part's `text` an object.
    fn default_unreadable(&self) -> &'static str {
        r#"{"candidates":[{"index":0,"content":{"parts":[{"text":{"value":"Hello"}}]}}]}"#
    }

    fn opening(&self, x: &Exchange) -> String {
        data(&Self::response(x, vec![Self::text("")], None, 0))
    }

    fn preamble(&self, _x: &Exchange) -> Vec<String> {
        Vec::new()
    }

    /// Gemini sends a call whole: a forced call's pieces go as SSE comments, which carry nothing,
    /// and the call comes with the finish.
    fn chunk(&self, x: &Exchange, i: usize, text: &str) -> String {
        match x.answer_tool {
            Some(_) => KEEP_ALIVE.to_owned(),
            None => data(&Self::response(x, vec![Self::text(text)], None, i as u64 + 1)),
        }
    }

    fn epilogue(&self, x: &Exchange, text: &str, output_tokens: u64) -> Vec<String> {
        let part = match &x.answer_tool {
            Some(name) => Self::call(name, &arguments_value(text)),
            None => Self::text(""),
        };
        vec![data(&Self::response(x, vec![part], Some(Self::finish(x)), x.output_tokens(output_tokens)))]
    }

    fn error_event(&self, _x: &Exchange, parts: &ErrorParts) -> String {
        data(&self.error_body(parts))
    }

    fn malformed(&self, payload: &str) -> String {
        data(&payload)
    }

    /// One response per reasoning piece (a part with `"thought": true`) and per text piece, then
    /// per call an SSE comment for each argument piece but the last (Gemini never splits a call)
    /// and, for the last, a response with the whole `functionCall`; then the finish.
    fn rich_events(&self, x: &Exchange, a: &Rich<'_>) -> Vec<Sent> {
        let tokens = x.output_tokens(a.output_tokens);
        let mut events = Vec::new();
        for piece in &a.reasoning_pieces {
            events.push(Sent::Chunk(data(&Self::response(x, vec![Self::thought(piece)], None, 0))));
        }
        for (i, piece) in a.text_pieces.iter().enumerate() {
            events.push(Sent::Chunk(data(&Self::response(x, vec![Self::text(piece)], None, i as u64 + 1))));
        }
        for call in &a.calls {
            // Every piece but the last an SSE comment, the last the whole call.
            events.extend(call.pieces.iter().skip(1).map(|_| Sent::Chunk(KEEP_ALIVE.to_owned())));
            let part = Self::call(call.name, &arguments_value(&call.arguments));
            events.push(Sent::Chunk(data(&Self::response(x, vec![part], None, tokens))));
        }
        events.push(Sent::Event(data(&Self::response(x, Vec::new(), Some(Self::finish(x)), tokens))));
        events
    }

    fn rich_body(&self, x: &Exchange, a: &Rich<'_>) -> String {
        let mut parts: Vec<Value> = a.reasoning.iter().map(|reasoning| Self::thought(reasoning)).collect();
        if !a.text_pieces.is_empty() {
            parts.push(Self::text(a.text));
        }
        parts.extend(a.calls.iter().map(|call| Self::call(call.name, &arguments_value(&call.arguments))));
        Self::response(x, parts, Some(Self::finish(x)), x.output_tokens(a.output_tokens)).to_string()
    }

    fn full_body(&self, x: &Exchange, text: &str, output_tokens: u64) -> String {
        let part = match &x.answer_tool {
            Some(name) => Self::call(name, &arguments_value(text)),
            None => Self::text(text),
        };
        Self::response(x, vec![part], Some(Self::finish(x)), x.output_tokens(output_tokens)).to_string()
    }

    fn json_opening(&self, x: &Exchange) -> String {
        let (model, id) = (Value::from(x.model.as_str()), Value::from(Self::response_id(x)));
        format!(r#"{{"modelVersion":{model},"responseId":{id},"#)
    }

    fn text_opening(&self, x: &Exchange) -> String {
        format!(r#"{}"candidates":[{{"index":0,"content":{{"role":"model","parts":[{{"text":""#, self.json_opening(x))
    }

    /// `no_choices`: a response with no candidate; `done_only`: a stream of one response with the
    /// usage alone (Gemini has no end marker, and no finish came); `empty_chunk`: one response with
    /// an empty text and no finish.
    fn empty_answer(&self, x: &Exchange, shape: NotAnAnswer) -> NotAnAnswerBody {
        let usage_only = json!({"usageMetadata": Self::usage(x, 0), "modelVersion": x.model});
        match shape {
            NotAnAnswer::DoneOnly => NotAnAnswerBody::Events(vec![data(&usage_only)]),
            NotAnAnswer::EmptyChunk => NotAnAnswerBody::Events(vec![self.opening(x)]),
            _ => {
                let mut empty = usage_only;
                empty["candidates"] = json!([]);
                NotAnAnswerBody::Json(empty.to_string())
            }
        }
    }

    /// Finished: a `finishReason` of `STOP`, in the last response of a stream or in a whole one.
    /// Thought parts are not the text.
    fn read_back(&self, body: &[u8]) -> (String, bool) {
        let text = String::from_utf8_lossy(body);
        let responses: Vec<Value> = if is_whole(body) {
            vec![serde_json::from_str(&text).unwrap_or_default()]
        } else {
            text.lines()
                .filter_map(|line| line.strip_prefix("data: "))
                .map(|payload| serde_json::from_str(payload).unwrap_or_default())
                .collect()
        };
        let (mut read, mut stopped) = (String::new(), false);
        for response in &responses {
            let candidate = response.pointer("/candidates/0");
            let parts = candidate.and_then(|c| c.pointer("/content/parts")).and_then(Value::as_array);
            // A thought part is reasoning, not the answer's text.
            for part in parts.into_iter().flatten().filter(|part| part.get("thought") != Some(&Value::Bool(true))) {
                read.push_str(part.get("text").and_then(Value::as_str).unwrap_or_default());
            }
            stopped = candidate.and_then(|c| c.get("finishReason")).and_then(Value::as_str) == Some("STOP");
        }
        (read, stopped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::usage::TokenUsage;
    use crate::wire::render::fixture;

    #[test]
    fn it_reads_back_what_it_renders() {
        fixture::reads_back_what_it_renders(&Gemini);
    }

    #[test]
    fn the_model_and_the_stream_flag_come_from_the_path() {
        let route = |path| Gemini.route(path);
        assert_eq!(
            route("/v1beta/models/gemini-2.5-flash:streamGenerateContent"),
            Some(Route { model: Some("gemini-2.5-flash".into()), stream: Some(true) })
        );
        assert_eq!(route("/v1/models/a%2Fb%3Ac:generateContent").unwrap().model.as_deref(), Some("a/b:c"));
        assert_eq!(route("/v1beta/models/m:generateContent").unwrap().stream, Some(false));
        for other in [
            "/v1/messages",
            "/v1beta/models/m:countTokens",
            "/v1beta/models/:generateContent",
            "/v1beta/models/a/b:generateContent",
        ] {
            assert_eq!(route(other), None, "{other}");
        }
        assert_eq!(Gemini.request_path("m", true), "/v1beta/models/m:streamGenerateContent");
    }

    #[test]
    fn it_reads_the_function_calling_mode() {
        let choice = |config: Value| {
            let body = json!({"toolConfig": {"functionCallingConfig": config}});
            Gemini.read(Some(&body), Route::default()).tool_choice
        };
        assert_eq!(choice(json!({"mode": "ANY"})), ToolChoice::Any { among: Vec::new() });
        assert_eq!(choice(json!({"mode": "ANY", "allowedFunctionNames": ["f"]})), ToolChoice::Tool("f".into()));
        let two = choice(json!({"mode": "ANY", "allowedFunctionNames": ["f", "g"]}));
        assert_eq!(two, ToolChoice::Any { among: vec!["f".into(), "g".into()] });
        assert_eq!(choice(json!({"mode": "AUTO"})), ToolChoice::Auto);
    }

    #[test]
    fn it_reads_the_system_instruction_the_contents_the_tools_and_the_schema() {
        let body = json!({
            "systemInstruction": {"parts": [{"text": "Be brief."}]},
            "contents": [
                {"role": "user", "parts": [{"text": "find rust"}]},
                {"role": "model", "parts": [{"functionCall": {"name": "search", "args": {"q": "rust"}}}]},
                {"role": "user", "parts": [{"functionResponse": {"name": "search", "response": {"output": "found it"}}}]},
            ],
            "tools": [{"functionDeclarations": [{"name": "search"}, {"name": "fetch"}]}],
            "generationConfig": {"responseMimeType": "application/json", "responseJsonSchema": {"title": "Invoice", "type": "object"}},
        });
        let route = Route { model: Some("m".into()), stream: Some(true) };
        let asked = Gemini.read(Some(&body), route);
        assert_eq!((asked.model.as_deref(), asked.stream, asked.schema.as_deref()), (Some("m"), true, Some("Invoice")));
        assert_eq!(asked.tools, ["search", "fetch"]);
        let c = &asked.conversation;
        assert_eq!(
            (c.messages, c.system.as_slice(), c.texts.as_slice()),
            (3, &["Be brief."][..], &["find rust", "found it"][..])
        );
        assert_eq!(c.tool_inputs, [r#"{"q":"rust"}"#]);
        assert_eq!(Gemini.read(None, Route::default()), Asked { usage_asked: true, ..Asked::default() });
    }

    #[test]
    fn the_last_response_carries_the_finish_and_the_whole_usage() {
        let mut x = fixture::exchange(&Gemini, None);
        x.usage = TokenUsage::default().with_cache_read(1).with_reasoning(40);
        let last = x.epilogue("", 5).concat();
        let data: Value = serde_json::from_str(last.strip_prefix("data: ").unwrap().trim_end()).unwrap();
        assert!(last.ends_with("}\n\n"), "{last}");
        assert_eq!(data["candidates"][0]["finishReason"], "STOP");
        assert_eq!(
            data["usageMetadata"],
            json!({"promptTokenCount": 2, "candidatesTokenCount": 5, "cachedContentTokenCount": 1, "thoughtsTokenCount": 40, "totalTokenCount": 47})
        );
        assert_eq!(data["modelVersion"], "m");
        x.cut_by_token_limit = true;
        assert!(x.epilogue("", 5)[0].contains(r#""finishReason":"MAX_TOKENS""#));
        assert!(!x.chunk(0, "a").contains("finishReason"), "no finish before the epilogue");
    }

    #[test]
    fn errors_are_googles_by_status() {
        let x = fixture::exchange(&Gemini, None);
        let body = x.error_json(&Gemini.error_parts(429, Preset::Generic));
        assert_eq!(body["error"]["code"], 429);
        assert_eq!(body["error"]["status"], "RESOURCE_EXHAUSTED");
        assert_eq!(body["error"]["details"][0]["@type"], "type.googleapis.com/google.rpc.QuotaFailure");
        let bad_key = x.error_json(&Gemini.error_parts(401, Preset::InvalidApiKey));
        assert_eq!(bad_key["error"]["code"], 400);
        assert_eq!(bad_key["error"]["details"][0]["reason"], "API_KEY_INVALID");
        for (status, name) in [
            (400, "INVALID_ARGUMENT"),
            (401, "UNAUTHENTICATED"),
            (403, "PERMISSION_DENIED"),
            (503, "UNAVAILABLE"),
            (500, "INTERNAL"),
            (504, "DEADLINE_EXCEEDED"),
        ] {
            let parts = Gemini.error_parts(status, Preset::Generic);
            assert_eq!((parts.error_type.as_str(), Gemini.status_of(&parts.error_type)), (name, status));
            assert!(x.error_json(&parts).get("error").unwrap().get("details").is_none() || status == 429);
        }
        let event = x.error_event(&Gemini.stream_error_parts());
        assert!(event.starts_with(r#"data: {"error":{"code":503,"#), "{event}");
    }

    #[test]
    fn a_tool_use_is_whole_function_calls_then_the_finish() {
        let x = fixture::exchange(&Gemini, None);
        let t = crate::step::Step::tool_use("get_weather", json!({"city": "Paris"})).text("Let me look.");
        let events: Vec<String> = x
            .rich_events(&t.as_completion())
            .into_iter()
            .map(Sent::into_string)
            .filter(|event| event != KEEP_ALIVE)
            .collect();
        assert_eq!(events.len(), 3);
        assert!(
            events[1].contains(r#""functionCall":{"args":{"city":"Paris"},"name":"get_weather"}"#),
            "{}",
            events[1]
        );
        assert!(events[2].contains(r#""finishReason":"STOP""#));
        let body: Value = serde_json::from_str(&x.rich_body(&t.as_completion())).unwrap();
        assert_eq!(body["candidates"][0]["content"]["parts"][1]["functionCall"]["name"], "get_weather");
    }
}
