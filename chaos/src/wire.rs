//! The two wire formats: bodies, SSE events and error shapes as the real APIs send them.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::step::{BareJsonError, HttpError, Preset, SseError, ToolUse};
use crate::usage::TokenUsage;

/// The API a request spoke, told by its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum WireFormat {
    /// OpenAI-compatible chat completions: `POST /v1/chat/completions`.
    #[serde(rename = "openai")]
    OpenAi,
    /// Anthropic messages: `POST /v1/messages`.
    #[serde(rename = "anthropic")]
    Anthropic,
}

impl WireFormat {
    /// The format served at `path` (without its query), if any.
    pub fn from_path(path: &str) -> Option<Self> {
        match path {
            "/v1/chat/completions" => Some(Self::OpenAi),
            "/v1/messages" => Some(Self::Anthropic),
            _ => None,
        }
    }

    /// The path this format is served at.
    pub const fn path(self) -> &'static str {
        match self {
            Self::OpenAi => "/v1/chat/completions",
            Self::Anthropic => "/v1/messages",
        }
    }
}

/// The `type`, `message`, `code` and `param` of an error body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ErrorParts {
    pub(crate) error_type: String,
    pub(crate) message: String,
    pub(crate) code: Option<String>,
    pub(crate) param: Option<String>,
}

impl ErrorParts {
    fn new(error_type: &str, message: &str, code: Option<&str>) -> Self {
        Self {
            error_type: error_type.to_owned(),
            message: message.to_owned(),
            code: code.map(str::to_owned),
            param: None,
        }
    }
}

const OPENAI_SERVER_ERROR: &str = "The server had an error while processing your request. Sorry about that!";
const OPENAI_OVERLOADED: &str = "The engine is currently overloaded, please try again later.";

/// The type, message and code a provider sends with `status`.
fn defaults_for_status(wire: WireFormat, status: u16) -> ErrorParts {
    match wire {
        WireFormat::Anthropic => {
            let (error_type, message) = match status {
                401 => ("authentication_error", "invalid x-api-key"),
                402 => ("billing_error", "Your credit balance is too low to access the Anthropic API."),
                403 => ("permission_error", "Your API key does not have permission to use the specified resource."),
                404 => ("not_found_error", "The requested resource could not be found."),
                409 => ("conflict_error", "Conflict"),
                413 => ("request_too_large", "Request exceeds the maximum allowed number of bytes."),
                429 => ("rate_limit_error", "Number of requests has exceeded your rate limit. Please try again later."),
                503 | 529 => ("overloaded_error", "Overloaded"),
                504 => ("timeout_error", "Request timed out"),
                400..=499 => ("invalid_request_error", "Invalid request"),
                _ => ("api_error", "Internal server error"),
            };
            ErrorParts::new(error_type, message, None)
        }
        WireFormat::OpenAi => {
            let (error_type, message, code) = match status {
                401 => ("invalid_request_error", "Incorrect API key provided.", Some("invalid_api_key")),
                403 => ("invalid_request_error", "You are not allowed to access this resource.", None),
                404 => (
                    "invalid_request_error",
                    "The model does not exist or you do not have access to it.",
                    Some("model_not_found"),
                ),
                429 => (
                    "requests",
                    "Rate limit reached for requests. Please try again later.",
                    Some("rate_limit_exceeded"),
                ),
                503 | 529 => ("server_error", OPENAI_OVERLOADED, None),
                504 => ("server_error", "Request timed out.", None),
                400..=499 => ("invalid_request_error", "Invalid request.", None),
                _ => ("server_error", OPENAI_SERVER_ERROR, None),
            };
            ErrorParts::new(error_type, message, code)
        }
    }
}

/// The parts of an `http_error`, `context_overflow` or `invalid_api_key` body.
pub(crate) fn http_error_parts(wire: WireFormat, e: &HttpError, preset: Preset) -> ErrorParts {
    let mut parts = match (preset, wire) {
        (Preset::Generic, _) => defaults_for_status(wire, e.status),
        (Preset::ContextOverflow, WireFormat::OpenAi) => ErrorParts {
            param: Some("messages".to_owned()),
            ..ErrorParts::new(
                "invalid_request_error",
                "This model's maximum context length is 128000 tokens. However, your messages \
                 resulted in 250000 tokens. Please reduce the length of the messages.",
                Some("context_length_exceeded"),
            )
        },
        (Preset::ContextOverflow, WireFormat::Anthropic) => {
            ErrorParts::new("invalid_request_error", "prompt is too long: 250000 tokens > 200000 maximum", None)
        }
        (Preset::InvalidApiKey, WireFormat::OpenAi) => ErrorParts::new(
            "invalid_request_error",
            "Incorrect API key provided: sk-****. You can find your API key at \
             https://platform.openai.com/account/api-keys.",
            Some("invalid_api_key"),
        ),
        (Preset::InvalidApiKey, WireFormat::Anthropic) => {
            ErrorParts::new("authentication_error", "invalid x-api-key", None)
        }
    };
    override_parts(&mut parts, &e.error_type, &e.message, &e.code);
    if e.param.is_some() {
        parts.param.clone_from(&e.param);
    }
    parts
}

/// The parts of an `sse_error` event.
pub(crate) fn sse_error_parts(wire: WireFormat, e: &SseError) -> ErrorParts {
    let mut parts = match wire {
        WireFormat::Anthropic => ErrorParts::new("overloaded_error", "Overloaded", None),
        WireFormat::OpenAi => ErrorParts::new("server_error", OPENAI_SERVER_ERROR, None),
    };
    override_parts(&mut parts, &e.error_type, &e.message, &e.code);
    parts
}

/// The parts of a `bare_json_error` line: the provider's answer to a bad key unless set.
pub(crate) fn bare_json_error_parts(wire: WireFormat, e: &BareJsonError) -> ErrorParts {
    let mut parts = match wire {
        WireFormat::OpenAi => {
            ErrorParts::new("invalid_request_error", "Incorrect API key provided: sk-****.", Some("invalid_api_key"))
        }
        WireFormat::Anthropic => ErrorParts::new("authentication_error", "invalid x-api-key", None),
    };
    override_parts(&mut parts, &e.error_type, &e.message, &e.code);
    parts
}

fn override_parts(
    parts: &mut ErrorParts,
    error_type: &Option<String>,
    message: &Option<String>,
    code: &Option<String>,
) {
    if let Some(t) = error_type {
        parts.error_type.clone_from(t);
    }
    if let Some(m) = message {
        parts.message.clone_from(m);
    }
    if code.is_some() {
        parts.code.clone_from(code);
    }
}

/// The HTTP status that fits an error type, for an `sse_error` answered without streaming.
pub(crate) fn status_for_type(wire: WireFormat, error_type: &str) -> u16 {
    match error_type {
        "overloaded_error" if wire == WireFormat::Anthropic => 529,
        "overloaded_error" => 503,
        "rate_limit_error" | "requests" | "tokens" => 429,
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "billing_error" => 402,
        "permission_error" => 403,
        "not_found_error" => 404,
        "request_too_large" => 413,
        "timeout_error" => 504,
        _ => 500,
    }
}

/// The payload of a malformed chunk when none is given: a text chunk cut off mid-JSON.
pub(crate) fn default_malformed(wire: WireFormat) -> &'static str {
    match wire {
        WireFormat::OpenAi => {
            r#"{"id":"chatcmpl-chaos","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"#
        }
        WireFormat::Anthropic => r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"#,
    }
}

/// The error object as the provider wraps it.
pub(crate) fn error_json(wire: WireFormat, parts: &ErrorParts) -> Value {
    match wire {
        WireFormat::OpenAi => json!({
            "error": {
                "message": parts.message,
                "type": parts.error_type,
                "param": parts.param,
                "code": parts.code,
            }
        }),
        WireFormat::Anthropic => json!({
            "type": "error",
            "error": {"type": parts.error_type, "message": parts.message},
        }),
    }
}

/// The canonical reason phrase of a status.
pub(crate) fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        413 => "Content Too Large",
        422 => "Unprocessable Content",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        529 => "Overloaded",
        _ => "Unknown",
    }
}

/// One request's answer in its wire format: ids, model and token counts.
#[derive(Debug, Clone)]
pub(crate) struct Exchange {
    pub(crate) wire: WireFormat,
    pub(crate) seq: u64,
    /// The request's `model`, echoed in every answer.
    pub(crate) model: String,
    pub(crate) created: u64,
    /// The request's input tokens: the step's pinned count, or the words of the prompt.
    pub(crate) input_tokens: u64,
    /// The step's pinned counts: the output tokens when pinned, and the cache counts.
    pub(crate) usage: TokenUsage,
    /// The OpenAI request asked for the usage chunk (`stream_options.include_usage`).
    pub(crate) include_usage: bool,
    /// The tool an Anthropic request forces (`tool_choice.type == "tool"`): a text answer is sent
    /// as that tool's `tool_use` block, its text as `input_json_delta` fragments, as the real API
    /// answers a request for a schema.
    pub(crate) answer_tool: Option<String>,
    /// The answer ends as one the token limit cut: OpenAI `finish_reason: "length"`, Anthropic
    /// `stop_reason: "max_tokens"`.
    pub(crate) cut_by_token_limit: bool,
}

impl Exchange {
    pub(crate) fn id(&self) -> String {
        match self.wire {
            WireFormat::OpenAi => format!("chatcmpl-chaos{:012}", self.seq),
            WireFormat::Anthropic => format!("msg_chaos{:016}", self.seq),
        }
    }

    /// The request id header the provider sends.
    pub(crate) fn request_id_header(&self) -> (&'static str, String) {
        let name = match self.wire {
            WireFormat::OpenAi => "x-request-id",
            WireFormat::Anthropic => "request-id",
        };
        (name, format!("req_chaos{:012}", self.seq))
    }

    fn openai_chunk(&self, delta: Value, finish_reason: Option<&str>) -> String {
        let chunk = json!({
            "id": self.id(),
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{
                "index": 0,
                "delta": delta,
                "logprobs": null,
                "finish_reason": finish_reason,
            }],
        });
        format!("data: {chunk}\n\n")
    }

    pub(crate) fn anthropic_event(name: &str, data: &Value) -> String {
        format!("event: {name}\ndata: {data}\n\n")
    }

    pub(crate) fn anthropic_message_start(&self) -> String {
        // The real API reports 1 output token at the start.
        let message = self.anthropic_empty_message(1);
        Self::anthropic_event("message_start", &json!({"type": "message_start", "message": message}))
    }

    /// An Anthropic message with no content and no stop reason yet: what `message_start` carries.
    pub(crate) fn anthropic_empty_message(&self, output_tokens: u64) -> Value {
        json!({
            "id": self.id(),
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": [],
            "stop_reason": null,
            "stop_sequence": null,
            "usage": self.anthropic_usage(output_tokens),
        })
    }

    /// The stream's opening event, before any content: OpenAI a chunk whose delta is the
    /// assistant's role alone (`finish_reason: null`), Anthropic `message_start`.
    pub(crate) fn opening(&self) -> String {
        match self.wire {
            WireFormat::OpenAi => self.openai_chunk(json!({"role": "assistant"}), None),
            WireFormat::Anthropic => self.anthropic_message_start(),
        }
    }

    /// The events before the first text chunk.
    pub(crate) fn preamble(&self) -> Vec<String> {
        match self.wire {
            WireFormat::OpenAi => Vec::new(),
            WireFormat::Anthropic => vec![
                self.anthropic_message_start(),
                Self::anthropic_event(
                    "content_block_start",
                    &json!({
                        "type": "content_block_start",
                        "index": 0,
                        "content_block": match &self.answer_tool {
                            Some(name) => json!({"type": "tool_use", "id": self.tool_call_id(0), "name": name, "input": {}}),
                            None => json!({"type": "text", "text": ""}),
                        },
                    }),
                ),
                Self::anthropic_event("ping", &json!({"type": "ping"})),
            ],
        }
    }

    /// The event carrying text chunk number `i` (from 0).
    pub(crate) fn chunk(&self, i: usize, text: &str) -> String {
        match self.wire {
            WireFormat::OpenAi if i == 0 => self.openai_chunk(json!({"role": "assistant", "content": text}), None),
            WireFormat::OpenAi => self.openai_chunk(json!({"content": text}), None),
            WireFormat::Anthropic => Self::anthropic_event(
                "content_block_delta",
                &json!({
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": match self.answer_tool {
                        Some(_) => json!({"type": "input_json_delta", "partial_json": text}),
                        None => json!({"type": "text_delta", "text": text}),
                    },
                }),
            ),
        }
    }

    /// The events after the last text chunk, ending the answer.
    pub(crate) fn epilogue(&self, output_tokens: u64) -> Vec<String> {
        let mut events = Vec::new();
        if self.wire == WireFormat::Anthropic {
            events
                .push(Self::anthropic_event("content_block_stop", &json!({"type": "content_block_stop", "index": 0})));
        }
        self.push_stream_end(&mut events, self.answer_tool.is_some(), output_tokens);
        events
    }

    /// Why the answer stopped, in the request's format: the token limit cut it, it called a tool,
    /// or the turn ended.
    fn stop_reason(&self, tool_use: bool) -> &'static str {
        match (self.wire, self.cut_by_token_limit, tool_use) {
            (WireFormat::OpenAi, true, _) => "length",
            (WireFormat::OpenAi, false, true) => "tool_calls",
            (WireFormat::OpenAi, false, false) => "stop",
            (WireFormat::Anthropic, true, _) => "max_tokens",
            (WireFormat::Anthropic, false, true) => "tool_use",
            (WireFormat::Anthropic, false, false) => "end_turn",
        }
    }

    /// The events that end every streamed answer: its stop reason (a tool call, the end of the
    /// turn or the token limit), the usage when asked for, and the end marker.
    fn push_stream_end(&self, events: &mut Vec<String>, tool_use: bool, output_tokens: u64) {
        let stop_reason = self.stop_reason(tool_use);
        match self.wire {
            WireFormat::OpenAi => {
                events.push(self.openai_chunk(json!({}), Some(stop_reason)));
                if self.include_usage {
                    let usage = json!({
                        "id": self.id(),
                        "object": "chat.completion.chunk",
                        "created": self.created,
                        "model": self.model,
                        "choices": [],
                        "usage": self.openai_usage(output_tokens),
                    });
                    events.push(format!("data: {usage}\n\n"));
                }
                events.push("data: [DONE]\n\n".to_owned());
            }
            WireFormat::Anthropic => {
                events.push(Self::anthropic_event(
                    "message_delta",
                    &json!({
                        "type": "message_delta",
                        "delta": {"stop_reason": stop_reason, "stop_sequence": null},
                        "usage": {"output_tokens": self.output_tokens(output_tokens)},
                    }),
                ));
                events.push(Self::anthropic_event("message_stop", &json!({"type": "message_stop"})));
            }
        }
    }

    /// A mid-stream error event.
    pub(crate) fn error_event(&self, parts: &ErrorParts) -> String {
        let data = error_json(self.wire, parts);
        match self.wire {
            WireFormat::OpenAi => format!("data: {data}\n\n"),
            WireFormat::Anthropic => Self::anthropic_event("error", &data),
        }
    }

    /// A keep-alive: the SSE comment `: keep-alive`, or with `ping` for Anthropic its `ping` event.
    pub(crate) fn keep_alive(&self, ping: bool) -> String {
        match self.wire {
            WireFormat::Anthropic if ping => Self::anthropic_event("ping", &json!({"type": "ping"})),
            _ => ": keep-alive\n\n".to_owned(),
        }
    }

    /// The start of a non-streamed answer's JSON object, up to and with the comma after its
    /// model: what an endless JSON body sends before its whitespace.
    pub(crate) fn json_opening(&self) -> String {
        let (id, model) = (Value::from(self.id()), Value::from(self.model.as_str()));
        match self.wire {
            WireFormat::OpenAi => {
                format!(r#"{{"id":{id},"object":"chat.completion","created":{},"model":{model},"#, self.created)
            }
            WireFormat::Anthropic => format!(r#"{{"id":{id},"type":"message","role":"assistant","model":{model},"#),
        }
    }

    /// The start of a non-streamed answer up to the opening quote of its text: what an endless
    /// text body sends before the text.
    pub(crate) fn text_opening(&self) -> String {
        let opening = self.json_opening();
        match self.wire {
            WireFormat::OpenAi => {
                format!(r#"{opening}"choices":[{{"index":0,"message":{{"role":"assistant","content":""#)
            }
            WireFormat::Anthropic => format!(r#"{opening}"content":[{{"type":"text","text":""#),
        }
    }

    /// A `data:` line that is not JSON, under the event name the stream uses for text.
    pub(crate) fn malformed_event(&self, data: &str) -> String {
        match self.wire {
            WireFormat::OpenAi => format!("data: {data}\n\n"),
            WireFormat::Anthropic => format!("event: content_block_delta\ndata: {data}\n\n"),
        }
    }

    /// The output tokens of an answer of `counted` chunks (by the rule), unless the step pins them.
    fn output_tokens(&self, counted: u64) -> u64 {
        self.usage.output_tokens.unwrap_or(counted)
    }

    /// OpenAI's `usage` for an answer of `counted` output chunks.
    fn openai_usage(&self, counted: u64) -> Value {
        let output_tokens = self.output_tokens(counted);
        json!({
            "prompt_tokens": self.input_tokens,
            "completion_tokens": output_tokens,
            "total_tokens": self.input_tokens.saturating_add(output_tokens),
            "prompt_tokens_details": {"cached_tokens": self.usage.cache_read_input_tokens},
        })
    }

    /// Anthropic's `usage` with `output_tokens` (already pinned or counted).
    fn anthropic_usage(&self, output_tokens: u64) -> Value {
        json!({
            "input_tokens": self.input_tokens,
            "cache_creation_input_tokens": self.usage.cache_creation_input_tokens,
            "cache_read_input_tokens": self.usage.cache_read_input_tokens,
            "output_tokens": output_tokens,
        })
    }

    /// The id of tool call `i` (from 0) of this answer.
    fn tool_call_id(&self, i: usize) -> String {
        match self.wire {
            WireFormat::OpenAi => format!("call_chaos{:06}_{i}", self.seq),
            WireFormat::Anthropic => format!("toolu_chaos{:06}_{i}", self.seq),
        }
    }

    /// The output tokens a tool-use answer reports: one per text piece and argument piece.
    fn tool_use_tokens(t: &ToolUse) -> u64 {
        let arguments: usize = t.calls.iter().map(|(_, input)| t.argument_pieces(input).len()).sum();
        (arguments + usize::from(t.text.is_some())) as u64
    }

    /// Every event of a streamed tool-use answer, in order (see [`ToolUse`]).
    pub(crate) fn tool_use_events(&self, t: &ToolUse) -> Vec<String> {
        let mut events = match self.wire {
            WireFormat::OpenAi => self.openai_tool_use_chunks(t),
            WireFormat::Anthropic => self.anthropic_tool_use_blocks(t),
        };
        self.push_stream_end(&mut events, true, Self::tool_use_tokens(t));
        events
    }

    /// OpenAI: the text (if any) as one chunk, then each call as a chunk that opens it and chunks
    /// of its arguments; the first chunk of the answer carries the assistant's role.
    fn openai_tool_use_chunks(&self, t: &ToolUse) -> Vec<String> {
        let mut events = Vec::new();
        if let Some(text) = &t.text {
            events.push(self.openai_chunk(json!({"role": "assistant", "content": text}), None));
        }
        for (i, (name, input)) in t.calls.iter().enumerate() {
            let call = json!({
                "index": i,
                "id": self.tool_call_id(i),
                "type": "function",
                "function": {"name": name, "arguments": ""},
            });
            let delta = if events.is_empty() {
                json!({"role": "assistant", "content": null, "tool_calls": [call]})
            } else {
                json!({"tool_calls": [call]})
            };
            events.push(self.openai_chunk(delta, None));
            for piece in t.argument_pieces(input) {
                let delta = json!({"tool_calls": [{"index": i, "function": {"arguments": piece}}]});
                events.push(self.openai_chunk(delta, None));
            }
        }
        events
    }

    /// Anthropic: `message_start`, then one content block per part (the text, if any, then each
    /// call with its `input_json_delta`s); the `ping` follows the first block's start.
    fn anthropic_tool_use_blocks(&self, t: &ToolUse) -> Vec<String> {
        let mut events = vec![self.anthropic_message_start()];
        let text_block = t.text.as_ref().map(|text| {
            let delta = json!({"type": "text_delta", "text": text});
            (json!({"type": "text", "text": ""}), vec![delta])
        });
        let call_blocks = t.calls.iter().enumerate().map(|(i, (name, input))| {
            let block = json!({"type": "tool_use", "id": self.tool_call_id(i), "name": name, "input": {}});
            let pieces = t.argument_pieces(input);
            let deltas = pieces.into_iter().map(|piece| json!({"type": "input_json_delta", "partial_json": piece}));
            (block, deltas.collect())
        });
        for (index, (block, deltas)) in text_block.into_iter().chain(call_blocks).enumerate() {
            events.extend(Self::anthropic_block(index, block, deltas));
        }
        events
    }

    /// One Anthropic content block: its start (and the stream's `ping` after the first), its
    /// deltas and its stop.
    fn anthropic_block(index: usize, block: Value, deltas: Vec<Value>) -> Vec<String> {
        let mut events = vec![Self::anthropic_event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index, "content_block": block}),
        )];
        if index == 0 {
            events.push(Self::anthropic_event("ping", &json!({"type": "ping"})));
        }
        for delta in deltas {
            events.push(Self::anthropic_event(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": index, "delta": delta}),
            ));
        }
        events
            .push(Self::anthropic_event("content_block_stop", &json!({"type": "content_block_stop", "index": index})));
        events
    }

    /// A tool-use answer as one JSON body, for a request without `"stream": true`.
    pub(crate) fn tool_use_body(&self, t: &ToolUse) -> String {
        let tokens = Self::tool_use_tokens(t);
        let body = match self.wire {
            WireFormat::OpenAi => {
                let calls: Vec<Value> = t
                    .calls
                    .iter()
                    .enumerate()
                    .map(|(i, (name, input))| {
                        json!({
                            "id": self.tool_call_id(i),
                            "type": "function",
                            "function": {"name": name, "arguments": input.to_string()},
                        })
                    })
                    .collect();
                json!({
                    "id": self.id(),
                    "object": "chat.completion",
                    "created": self.created,
                    "model": self.model,
                    "choices": [{
                        "index": 0,
                        "message": {"role": "assistant", "content": t.text, "refusal": null, "tool_calls": calls},
                        "logprobs": null,
                        "finish_reason": "tool_calls",
                    }],
                    "usage": self.openai_usage(tokens),
                })
            }
            WireFormat::Anthropic => {
                let mut content: Vec<Value> = Vec::new();
                if let Some(text) = &t.text {
                    content.push(json!({"type": "text", "text": text}));
                }
                for (i, (name, input)) in t.calls.iter().enumerate() {
                    content.push(json!({"type": "tool_use", "id": self.tool_call_id(i), "name": name, "input": input}));
                }
                json!({
                    "id": self.id(),
                    "type": "message",
                    "role": "assistant",
                    "model": self.model,
                    "content": content,
                    "stop_reason": "tool_use",
                    "stop_sequence": null,
                    "usage": self.anthropic_usage(self.output_tokens(tokens)),
                })
            }
        };
        body.to_string()
    }

    /// The whole answer as one JSON body, for a request without `"stream": true`.
    pub(crate) fn full_body(&self, text: &str, output_tokens: u64) -> String {
        let body = match self.wire {
            WireFormat::OpenAi => json!({
                "id": self.id(),
                "object": "chat.completion",
                "created": self.created,
                "model": self.model,
                "choices": [{
                    "index": 0,
                    "message": {"role": "assistant", "content": text, "refusal": null},
                    "logprobs": null,
                    "finish_reason": self.stop_reason(false),
                }],
                "usage": self.openai_usage(output_tokens),
            }),
            WireFormat::Anthropic => json!({
                "id": self.id(),
                "type": "message",
                "role": "assistant",
                "model": self.model,
                "content": [match &self.answer_tool {
                    // The tool's input is the answer's JSON (kept as a string when it is not JSON).
                    Some(name) => json!({"type": "tool_use", "id": self.tool_call_id(0), "name": name,
                        "input": serde_json::from_str::<Value>(text).unwrap_or_else(|_| Value::from(text))}),
                    None => json!({"type": "text", "text": text}),
                }],
                "stop_reason": self.stop_reason(self.answer_tool.is_some()),
                "stop_sequence": null,
                "usage": self.anthropic_usage(self.output_tokens(output_tokens)),
            }),
        };
        body.to_string()
    }
}
