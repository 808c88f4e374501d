//! DRAFT (not in the crate yet: no `mod` line; ported onto `Render` in part B).
//!
//! Google's Gemini API as the chaos server speaks it: `POST /v1beta/models/{model}:streamGenerateContent`
//! (`?alt=sse`: an event stream of whole `GenerateContentResponse`s) and `:generateContent` (one JSON
//! response). What each step sends on this wire:
//!
//! | step | Gemini |
//! |---|---|
//! | `ok` | one chunk per text piece (`candidates[0].content.parts[0].text`, `usageMetadata` so far, `modelVersion`, `responseId`), then a last chunk with `finishReason: "STOP"` (`"MAX_TOKENS"` when cut by the token limit) and the final `usageMetadata` (`promptTokenCount` with the cached tokens in it, `candidatesTokenCount`, `cachedContentTokenCount`, `thoughtsTokenCount`, `totalTokenCount`). No end marker: the body ends. |
//! | `truncate` | the body ends cleanly before the chunk with `finishReason`: the stream Google's clients must call truncated |
//! | `drop_stream` | the connection drops mid-body |
//! | `http_error` | `{"error": {"code": <status>, "message", "status": <canonical name>, "details": [...]}}` by status: 400 `INVALID_ARGUMENT`, 401 `UNAUTHENTICATED`, 403 `PERMISSION_DENIED`, 404 `NOT_FOUND`, 429 `RESOURCE_EXHAUSTED` (a per-minute `QuotaFailure`, and a `RetryInfo` when the step gives a body hint), 500 `INTERNAL`, 503 `UNAVAILABLE`, 504 `DEADLINE_EXCEEDED`; `error_type` overrides the status name; `code` and `param` (OpenAI's) are ignored |
//! | `context_overflow` | 400 `INVALID_ARGUMENT` "The input token count (250000) exceeds the maximum number of tokens allowed (1048576)." |
//! | `invalid_api_key` | `INVALID_ARGUMENT` "API key not valid. Please pass a valid API key." with an `ErrorInfo` `API_KEY_INVALID` (Google answers a bad key with 400; the step's status is kept) |
//! | `sse_error` | a `data:` line holding the error object (default 503 `UNAVAILABLE` "The model is overloaded. Please try again later.") |
//! | `bare_json_error` | the error object as one bare line (default the bad-key answer) |
//! | `tool_use` | the text (if any) as one chunk, each call as one `functionCall` part with its whole `args` (Gemini never splits them; calls carry no id), then the `finishReason: "STOP"` chunk |
//! | `keep_alive_flood` | SSE comments (`: keep-alive`); Gemini has no ping event, `ping` is ignored |
//! | `malformed_chunk` | a `data:` line cut mid-JSON |
//! | `not_an_answer` | `no_choices`: `{"candidates": [], "usageMetadata"}`; `done_only`: one chunk with `usageMetadata` alone (no finish reason); `empty_chunk`: one chunk whose text is empty and no finish reason |
//!
//! The request: the model and whether it streams come from the path; the key from `x-goog-api-key`
//! (else `?key=`, which clients must never use, or a Bearer token); tools from
//! `tools[].functionDeclarations[].name`; a typed answer from `generationConfig.responseJsonSchema`
//! (or `responseSchema`); the conversation from `systemInstruction.parts[].text` and `contents[].parts[]`
//! (`text`, `functionCall.args`, `functionResponse.response`).

use serde_json::{Value, json};

use crate::step::ToolUse;

/// Google's canonical status name of an HTTP status, and the message Gemini sends with it.
pub(crate) fn status_defaults(status: u16) -> (&'static str, &'static str) {
    match status {
        400 => ("INVALID_ARGUMENT", "Request contains an invalid argument."),
        401 => (
            "UNAUTHENTICATED",
            "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other \
             valid authentication credential.",
        ),
        403 => ("PERMISSION_DENIED", "The caller does not have permission"),
        404 => ("NOT_FOUND", "models/chaos-model is not found for API version v1beta, or is not supported for generateContent."),
        409 => ("ABORTED", "The operation was aborted."),
        429 => ("RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota)."),
        499 => ("CANCELLED", "The operation was cancelled."),
        501 => ("UNIMPLEMENTED", "Operation is not implemented, or supported, or enabled."),
        503 | 529 => ("UNAVAILABLE", "The model is overloaded. Please try again later."),
        504 => ("DEADLINE_EXCEEDED", "Deadline expired before operation could complete."),
        400..=499 => ("FAILED_PRECONDITION", "Precondition check failed."),
        _ => (
            "INTERNAL",
            "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting",
        ),
    }
}

/// The HTTP status of a Google status name (an `sse_error` answered without streaming).
pub(crate) fn status_of(name: &str) -> u16 {
    match name {
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
        _ => 500,
    }
}

/// `google.rpc` details: a per-minute (or daily) `QuotaFailure` for a 429, a `RetryInfo` when the
/// step gives the wait in the body, an `ErrorInfo` for a bad key.
pub(crate) fn details(status_name: &str, retry_delay_ms: Option<u64>, daily: bool, bad_key: bool) -> Vec<Value> {
    let mut details = Vec::new();
    if bad_key {
        details.push(json!({
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": "API_KEY_INVALID",
            "domain": "googleapis.com",
            "metadata": {"service": "generativelanguage.googleapis.com"},
        }));
    }
    if status_name == "RESOURCE_EXHAUSTED" {
        let quota = if daily { "GenerateRequestsPerDayPerProjectPerModel-FreeTier" } else { "GenerateRequestsPerMinutePerProjectPerModel-FreeTier" };
        details.push(json!({
            "@type": "type.googleapis.com/google.rpc.QuotaFailure",
            "violations": [{
                "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                "quotaId": quota,
                "quotaDimensions": {"location": "global", "model": "chaos-model"},
                "quotaValue": "10",
            }],
        }));
        details.push(json!({
            "@type": "type.googleapis.com/google.rpc.Help",
            "links": [{"description": "Learn more about Gemini API quotas", "url": "https://ai.google.dev/gemini-api/docs/rate-limits"}],
        }));
    }
    if let Some(ms) = retry_delay_ms {
        details.push(json!({"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": proto_duration(ms)}));
    }
    details
}

/// A wait as a protobuf `Duration` in JSON: `"34s"`, `"1.5s"`.
pub(crate) fn proto_duration(ms: u64) -> String {
    match ms % 1000 {
        0 => format!("{}s", ms / 1000),
        rest => format!("{}.{rest:03}s", ms / 1000),
    }
}

/// The error object: `{"error": {"code", "message", "status", "details"}}` (no `details` when empty).
pub(crate) fn error_json(status: u16, status_name: &str, message: &str, details: Vec<Value>) -> Value {
    let mut error = json!({"code": status, "message": message, "status": status_name});
    if !details.is_empty() {
        error["details"] = Value::Array(details);
    }
    json!({"error": error})
}

/// What one answer says about itself in every chunk.
pub(crate) struct Answer<'a> {
    pub(crate) model: &'a str,
    pub(crate) response_id: String,
    pub(crate) prompt_tokens: u64,
    pub(crate) cached_tokens: u64,
    pub(crate) thoughts_tokens: u64,
    pub(crate) cut_by_token_limit: bool,
}

impl Answer<'_> {
    /// `usageMetadata` after `candidates` output tokens.
    pub(crate) fn usage(&self, candidates: u64) -> Value {
        let mut usage = json!({
            "promptTokenCount": self.prompt_tokens,
            "candidatesTokenCount": candidates,
            "totalTokenCount": self.prompt_tokens.saturating_add(candidates).saturating_add(self.thoughts_tokens),
        });
        if self.cached_tokens > 0 {
            usage["cachedContentTokenCount"] = json!(self.cached_tokens);
        }
        if self.thoughts_tokens > 0 {
            usage["thoughtsTokenCount"] = json!(self.thoughts_tokens);
        }
        usage
    }

    /// One `GenerateContentResponse` with `parts` (and a finish reason, for the last).
    pub(crate) fn response(&self, parts: Vec<Value>, finish: Option<&str>, candidates: u64) -> Value {
        let mut candidate = json!({"content": {"parts": parts, "role": "model"}, "index": 0});
        if let Some(reason) = finish {
            candidate["finishReason"] = json!(reason);
        }
        json!({
            "candidates": [candidate],
            "usageMetadata": self.usage(candidates),
            "modelVersion": self.model,
            "responseId": self.response_id,
        })
    }

    /// The finish reason of a whole answer.
    pub(crate) fn finish(&self) -> &'static str {
        if self.cut_by_token_limit { "MAX_TOKENS" } else { "STOP" }
    }

    /// Text chunk `i` (from 0): an event of its own; Gemini separates events with `\r\n\r\n`.
    pub(crate) fn chunk(&self, i: usize, text: &str) -> String {
        event(&self.response(vec![json!({"text": text})], None, i as u64 + 1))
    }

    /// The last chunk: no text, the finish reason and the final usage.
    pub(crate) fn epilogue(&self, output_tokens: u64) -> Vec<String> {
        vec![event(&self.response(vec![json!({"text": ""})], Some(self.finish()), output_tokens))]
    }

    /// A tool-use answer's events: the text, each call as a `functionCall` part, the finish.
    pub(crate) fn tool_use_events(&self, t: &ToolUse, tokens: u64) -> Vec<String> {
        let mut events = Vec::new();
        if let Some(text) = &t.text {
            events.push(event(&self.response(vec![json!({"text": text})], None, 1)));
        }
        for (name, input) in &t.calls {
            let call = json!({"functionCall": {"name": name, "args": input}});
            events.push(event(&self.response(vec![call], None, tokens)));
        }
        events.push(event(&self.response(Vec::new(), Some("STOP"), tokens)));
        events
    }

    /// A tool-use answer as one response.
    pub(crate) fn tool_use_body(&self, t: &ToolUse, tokens: u64) -> String {
        let mut parts: Vec<Value> = t.text.iter().map(|text| json!({"text": text})).collect();
        parts.extend(t.calls.iter().map(|(name, input)| json!({"functionCall": {"name": name, "args": input}})));
        self.response(parts, Some("STOP"), tokens).to_string()
    }

    /// A text answer as one response.
    pub(crate) fn full_body(&self, text: &str, output_tokens: u64) -> String {
        self.response(vec![json!({"text": text})], Some(self.finish()), output_tokens).to_string()
    }

    /// The start of a whole answer up to and with the comma after its model (an endless JSON body).
    pub(crate) fn json_opening(&self) -> String {
        format!(r#"{{"modelVersion":{},"responseId":{},"#, Value::from(self.model), Value::from(self.response_id.as_str()))
    }

    /// The start of a whole answer up to the opening quote of its text (an endless text body).
    pub(crate) fn text_opening(&self) -> String {
        format!(r#"{}"candidates":[{{"index":0,"content":{{"role":"model","parts":[{{"text":""#, self.json_opening())
    }
}

/// One SSE event of a `data:` line.
pub(crate) fn event(data: &Value) -> String {
    format!("data: {data}\r\n\r\n")
}

/// The payload of a malformed chunk: a text chunk cut off mid-JSON.
pub(crate) const DEFAULT_MALFORMED: &str = r#"{"candidates":[{"content":{"parts":[{"text":"#;

/// The model and the stream flag of a Gemini path: `/v1beta/models/{model}:streamGenerateContent`
/// or `:generateContent` (any version prefix); the model percent-decoded.
pub(crate) fn route(path: &str) -> Option<(String, bool)> {
    let (_, rest) = path.split_once("/models/")?;
    let (model, method) = rest.rsplit_once(':')?;
    let stream = match method {
        "streamGenerateContent" => true,
        "generateContent" => false,
        _ => return None,
    };
    (!model.is_empty() && !model.contains('/')).then(|| (percent_decode(model), stream))
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok()).and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
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

/// The names of the tools a request offers.
pub(crate) fn tool_names(body: &Value) -> Vec<String> {
    let tools = body.get("tools").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    tools
        .iter()
        .filter_map(|tool| tool.get("functionDeclarations").and_then(Value::as_array))
        .flatten()
        .filter_map(|declaration| declaration.get("name").and_then(Value::as_str).map(str::to_owned))
        .collect()
}

/// Whether the request asks for a typed answer, and the schema's `title` as its name when it has one.
pub(crate) fn schema_name(body: &Value) -> Option<String> {
    let config = body.get("generationConfig")?;
    let schema = config.get("responseJsonSchema").or_else(|| config.get("responseSchema"))?;
    Some(schema.get("title").and_then(Value::as_str).unwrap_or("responseJsonSchema").to_owned())
}

/// The texts of a request, for the word and byte rules: the system instruction's, then each part's
/// `text`, `functionCall.args` (compact JSON) and `functionResponse.response` (its strings).
pub(crate) fn texts(body: &Value) -> Vec<String> {
    let mut texts = Vec::new();
    let parts = |content: &Value| content.get("parts").and_then(Value::as_array).cloned().unwrap_or_default();
    if let Some(system) = body.get("systemInstruction") {
        texts.extend(parts(system).iter().filter_map(|p| p.get("text").and_then(Value::as_str)).map(str::to_owned));
    }
    for content in body.get("contents").and_then(Value::as_array).into_iter().flatten() {
        for part in parts(content) {
            if let Some(text) = part.get("text").and_then(Value::as_str) {
                texts.push(text.to_owned());
            }
            if let Some(args) = part.pointer("/functionCall/args") {
                texts.push(args.to_string());
            }
            if let Some(response) = part.pointer("/functionResponse/response") {
                texts.extend(response.as_object().into_iter().flatten().filter_map(|(_, v)| v.as_str()).map(str::to_owned));
            }
        }
    }
    texts
}

/// The reference reader: the text of a Gemini event stream, and whether a finish reason came.
#[doc(hidden)]
pub fn read_back(body: &str) -> (String, bool) {
    let mut text = String::new();
    let mut finished = false;
    for line in body.lines() {
        let Some(data) = line.strip_prefix("data:") else { continue };
        let Ok(chunk) = serde_json::from_str::<Value>(data.trim()) else { continue };
        for candidate in chunk.get("candidates").and_then(Value::as_array).into_iter().flatten() {
            for part in candidate.pointer("/content/parts").and_then(Value::as_array).into_iter().flatten() {
                text.push_str(part.get("text").and_then(Value::as_str).unwrap_or(""));
            }
            finished |= candidate.get("finishReason").is_some();
        }
    }
    (text, finished)
}
