//! OpenAI's Responses API, `POST /v1/responses` (and `/responses`): what the chaos server sends on
//! this wire for each step.
//!
//! DRAFT, not yet in the crate: written against today's `Exchange` (`wire.rs`) and to be moved onto
//! the `Render` trait when `wire/mod.rs` lands. Each function is one decision a wire makes.
//!
//! | step | what this wire sends |
//! |---|---|
//! | `ok` | `response.created`, `response.in_progress`, `response.output_item.added` (a message), `response.content_part.added`, one `response.output_text.delta` per chunk, then `response.output_text.done`, `response.content_part.done`, `response.output_item.done` and `response.completed` with the usage (`input_tokens`, `input_tokens_details.cached_tokens`, `output_tokens`, `output_tokens_details.reasoning_tokens`, `total_tokens`) |
//! | `ok` cut by the token limit | the same, ending with `response.incomplete` (`incomplete_details.reason: "max_output_tokens"`) |
//! | `http_error`, `context_overflow`, `invalid_api_key` | OpenAI's error bodies (`{"error": {message, type, param, code}}`) and headers: this is OpenAI's API |
//! | `sse_error` | `response.failed` with `error: {code, message}` (default `server_error`), its usage, then the body ends cleanly |
//! | `sse_error` of the stream | an `error` event, `{"type": "error", code, message, param}` |
//! | `truncate` | the body ends cleanly before `response.completed` |
//! | `drop_stream` | the connection drops before `response.completed` |
//! | `malformed_chunk` | a `response.output_text.delta` cut off mid-JSON |
//! | `keep_alive_flood` | `: keep-alive` comments (there is no ping event on this wire) |
//! | `empty_chunk_flood` | `response.output_text.delta` events with an empty `delta` |
//! | `tool_use` | the text (if any) as a message item, then per call a `function_call` item (`call_id`, `name`) with its `response.function_call_arguments.delta`s, `.done` and `response.output_item.done`; `response.completed` |
//! | non-streamed | one Response object (`"object": "response"`, `output` items, `usage`, `status`) |
//!
//! A typed answer (`text.format` with a `json_schema`) is a text answer whose text is the JSON.

use serde_json::{Value, json};

use crate::step::{SseError, ToolUse};
use crate::wire::{ErrorParts, Exchange};

/// The paths this wire is served at: OpenAI's, and the same without the `/v1` a base URL may hold.
pub(crate) const ROUTES: [&str; 2] = ["/v1/responses", "/responses"];

/// The facts of a Responses request the answer depends on.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Asked {
    pub(crate) model: Option<String>,
    pub(crate) stream: bool,
    /// `text.format.name` when the request asks for a JSON schema.
    pub(crate) schema: Option<String>,
    /// The names of the function tools offered.
    pub(crate) tools: Vec<String>,
    /// The number of `input` items (a string `input` is one).
    pub(crate) items: usize,
    /// `instructions`, and every text of the conversation: message parts, tool outputs.
    pub(crate) texts: Vec<String>,
    /// The arguments of the conversation's `function_call` items, as sent (JSON text).
    pub(crate) tool_inputs: Vec<String>,
}

/// Reads a request body: `model`, `stream`, `text.format`, `tools`, `instructions` and `input`
/// (a string, or items: messages whose `content` is a string or parts with `text`,
/// `function_call` with `arguments`, `function_call_output` with `output`).
pub(crate) fn read(body: &Value) -> Asked {
    let mut asked = Asked {
        model: body.get("model").and_then(Value::as_str).map(str::to_owned),
        stream: body.get("stream").and_then(Value::as_bool) == Some(true),
        schema: body
            .pointer("/text/format")
            .filter(|format| format.get("type").and_then(Value::as_str) == Some("json_schema"))
            .and_then(|format| format.get("name"))
            .and_then(Value::as_str)
            .map(str::to_owned),
        tools: body
            .get("tools")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|tool| tool.get("name").and_then(Value::as_str).map(str::to_owned))
            .collect(),
        ..Asked::default()
    };
    if let Some(instructions) = body.get("instructions").and_then(Value::as_str) {
        asked.texts.push(instructions.to_owned());
    }
    match body.get("input") {
        Some(Value::String(text)) => {
            asked.items = 1;
            asked.texts.push(text.clone());
        }
        Some(Value::Array(items)) => {
            asked.items = items.len();
            for item in items {
                match item.get("type").and_then(Value::as_str) {
                    Some("function_call") => {
                        if let Some(arguments) = item.get("arguments").and_then(Value::as_str) {
                            asked.tool_inputs.push(arguments.to_owned());
                        }
                    }
                    Some("function_call_output") => texts_of(item.get("output"), &mut asked.texts),
                    // A message, typed (`"type": "message"`) or not.
                    _ => texts_of(item.get("content"), &mut asked.texts),
                }
            }
        }
        _ => {}
    }
    asked
}

/// The texts of a content: a string, or parts each with a `text`.
fn texts_of(content: Option<&Value>, out: &mut Vec<String>) {
    match content {
        Some(Value::String(text)) => out.push(text.clone()),
        Some(Value::Array(parts)) => {
            out.extend(parts.iter().filter_map(|part| part.get("text").and_then(Value::as_str)).map(str::to_owned));
        }
        _ => {}
    }
}

/// The key: `Authorization: Bearer <key>`, as OpenAI's.
pub(crate) const KEY_HEADER: &str = "authorization";

/// The request id header, as OpenAI's.
pub(crate) const REQUEST_ID_HEADER: &str = "x-request-id";

/// The code a `response.failed` carries for an error type, when the step names a type but no code:
/// the Responses API names its failures by code only.
fn code_for_type(error_type: &str) -> &str {
    match error_type {
        "server_error" | "api_error" => "server_error",
        "overloaded_error" => "server_is_overloaded",
        "rate_limit_error" | "requests" | "tokens" => "rate_limit_exceeded",
        "invalid_request_error" => "invalid_prompt",
        other => other,
    }
}

/// The default of an `sse_error` on this wire: the server error OpenAI sends.
pub(crate) fn stream_error_parts(e: &SseError) -> ErrorParts {
    // OpenAI's parts (type `server_error`, its message), overridden by the step.
    crate::wire::sse_error_parts(crate::wire::WireFormat::OpenAi, e)
}

impl Exchange {
    /// `resp_chaos…`: the response's id.
    fn response_id(&self) -> String {
        format!("resp_chaos{:016}", self.seq)
    }

    /// One event: its name in `event:` and in the data's `type`, with its sequence number.
    fn responses_event(kind: &str, sequence: usize, mut data: Value) -> String {
        if let Value::Object(object) = &mut data {
            object.insert("type".to_owned(), Value::from(kind));
            object.insert("sequence_number".to_owned(), Value::from(sequence));
        }
        format!("event: {kind}\ndata: {data}\n\n")
    }

    /// The Response object: `status`, its `output` items, its usage (`None` while in progress) and
    /// what ended it.
    fn response(&self, status: &str, output: Vec<Value>, usage: Option<Value>, ending: (Value, Value)) -> Value {
        let (error, incomplete_details) = ending;
        json!({
            "id": self.response_id(),
            "object": "response",
            "created_at": self.created,
            "status": status,
            "model": self.model,
            "output": output,
            "usage": usage,
            "error": error,
            "incomplete_details": incomplete_details,
        })
    }

    /// The usage of an answer of `counted` output chunks.
    fn responses_usage(&self, counted: u64) -> Value {
        let output_tokens = self.usage.output_tokens.unwrap_or(counted);
        json!({
            "input_tokens": self.input_tokens,
            "input_tokens_details": {"cached_tokens": self.usage.cache_read_input_tokens},
            "output_tokens": output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": self.input_tokens.saturating_add(output_tokens),
        })
    }

    /// The message item carrying `text` (`None`: still empty, as `output_item.added` sends it).
    fn message_item(&self, text: Option<&str>) -> Value {
        let content: Vec<Value> =
            text.map(|text| json!({"type": "output_text", "text": text, "annotations": []})).into_iter().collect();
        let status = if text.is_some() { "completed" } else { "in_progress" };
        json!({"id": format!("msg_chaos{:016}", self.seq), "type": "message", "role": "assistant", "status": status, "content": content})
    }

    /// The opening events: the response created and in progress, its message item and text part.
    pub(crate) fn responses_preamble(&self) -> Vec<String> {
        let response = self.response("in_progress", Vec::new(), None, (Value::Null, Value::Null));
        vec![
            Self::responses_event("response.created", 0, json!({"response": response})),
            Self::responses_event("response.in_progress", 1, json!({"response": response})),
            Self::responses_event(
                "response.output_item.added",
                2,
                json!({"output_index": 0, "item": self.message_item(None)}),
            ),
            Self::responses_event(
                "response.content_part.added",
                3,
                json!({"item_id": format!("msg_chaos{:016}", self.seq), "output_index": 0, "content_index": 0,
                       "part": {"type": "output_text", "text": "", "annotations": []}}),
            ),
        ]
    }

    /// Text chunk `i` (from 0).
    pub(crate) fn responses_chunk(&self, i: usize, text: &str) -> String {
        Self::responses_event(
            "response.output_text.delta",
            4 + i,
            json!({"item_id": format!("msg_chaos{:016}", self.seq), "output_index": 0, "content_index": 0, "delta": text}),
        )
    }

    /// The events after `count` text chunks that made `text`: the text, its part and its item done,
    /// then the response completed, or incomplete when the token limit cut it.
    pub(crate) fn responses_epilogue(&self, text: &str, count: u64) -> Vec<String> {
        let sequence = 4 + usize::try_from(count).unwrap_or(usize::MAX);
        let item_id = format!("msg_chaos{:016}", self.seq);
        let part = json!({"type": "output_text", "text": text, "annotations": []});
        let mut events = vec![
            Self::responses_event(
                "response.output_text.done",
                sequence,
                json!({"item_id": item_id, "output_index": 0, "content_index": 0, "text": text}),
            ),
            Self::responses_event(
                "response.content_part.done",
                sequence + 1,
                json!({"item_id": item_id, "output_index": 0, "content_index": 0, "part": part}),
            ),
            Self::responses_event(
                "response.output_item.done",
                sequence + 2,
                json!({"output_index": 0, "item": self.message_item(Some(text))}),
            ),
        ];
        events.push(self.responses_end(vec![self.message_item(Some(text))], count, sequence + 3));
        events
    }

    /// The final event: `response.completed`, or `response.incomplete` for an answer the token limit
    /// cut.
    fn responses_end(&self, output: Vec<Value>, counted: u64, sequence: usize) -> String {
        let usage = Some(self.responses_usage(counted));
        if self.cut_by_token_limit {
            let details = json!({"reason": "max_output_tokens"});
            let response = self.response("incomplete", output, usage, (Value::Null, details));
            Self::responses_event("response.incomplete", sequence, json!({"response": response}))
        } else {
            let response = self.response("completed", output, usage, (Value::Null, Value::Null));
            Self::responses_event("response.completed", sequence, json!({"response": response}))
        }
    }

    /// A failure mid-stream: `response.failed`, its error the step's code (or the code its type
    /// stands for) and message, with the usage of the input; or, for a failure of the stream rather
    /// than of the response, an `error` event.
    pub(crate) fn responses_error_event(&self, parts: &ErrorParts, of_stream: bool) -> String {
        let code = parts.code.clone().unwrap_or_else(|| code_for_type(&parts.error_type).to_owned());
        if of_stream {
            return Self::responses_event(
                "error",
                0,
                json!({"code": code, "message": parts.message, "param": parts.param}),
            );
        }
        let error = json!({"code": code, "message": parts.message});
        let response = self.response("failed", Vec::new(), Some(self.responses_usage(0)), (error, Value::Null));
        Self::responses_event("response.failed", 0, json!({"response": response}))
    }

    /// A delta whose JSON is cut off: the default payload of a `malformed_chunk`.
    pub(crate) const RESPONSES_MALFORMED: &'static str =
        r#"{"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":"#;

    /// A `data:` line that is not JSON, under the event name text comes in.
    pub(crate) fn responses_malformed(data: &str) -> String {
        format!("event: response.output_text.delta\ndata: {data}\n\n")
    }

    /// The `function_call` item of call `i`: still empty, or with its arguments.
    fn call_item(&self, i: usize, name: &str, arguments: Option<&str>) -> Value {
        let status = if arguments.is_some() { "completed" } else { "in_progress" };
        json!({
            "id": format!("fc_chaos{:06}_{i}", self.seq),
            "type": "function_call",
            "call_id": format!("call_chaos{:06}_{i}", self.seq),
            "name": name,
            "arguments": arguments.unwrap_or(""),
            "status": status,
        })
    }

    /// Every event of a streamed tool-use answer: the opening, the text (if any) as a message item,
    /// each call as a `function_call` item with its argument deltas, and the end.
    pub(crate) fn responses_tool_use_events(&self, t: &ToolUse, tokens: u64) -> Vec<String> {
        let response = self.response("in_progress", Vec::new(), None, (Value::Null, Value::Null));
        let mut events = vec![
            Self::responses_event("response.created", 0, json!({"response": response})),
            Self::responses_event("response.in_progress", 1, json!({"response": response})),
        ];
        let mut event = |kind: &str, data: Value| {
            let sequence = events.len();
            events.push(Self::responses_event(kind, sequence, data));
        };
        let (mut output, offset) = match &t.text {
            Some(text) => {
                event("response.output_item.added", json!({"output_index": 0, "item": self.message_item(None)}));
                event("response.output_text.delta", json!({"output_index": 0, "content_index": 0, "delta": text}));
                event("response.output_text.done", json!({"output_index": 0, "content_index": 0, "text": text}));
                event("response.output_item.done", json!({"output_index": 0, "item": self.message_item(Some(text))}));
                (vec![self.message_item(Some(text))], 1)
            }
            None => (Vec::new(), 0),
        };
        for (i, (name, input)) in t.calls.iter().enumerate() {
            let index = i + offset;
            let arguments = input.to_string();
            let item_id = format!("fc_chaos{:06}_{i}", self.seq);
            event("response.output_item.added", json!({"output_index": index, "item": self.call_item(i, name, None)}));
            for piece in t.argument_pieces(input) {
                event(
                    "response.function_call_arguments.delta",
                    json!({"item_id": item_id, "output_index": index, "delta": piece}),
                );
            }
            event(
                "response.function_call_arguments.done",
                json!({"item_id": item_id, "output_index": index, "arguments": arguments}),
            );
            let done = self.call_item(i, name, Some(&arguments));
            event("response.output_item.done", json!({"output_index": index, "item": done}));
            output.push(done);
        }
        let sequence = events.len();
        events.push(self.responses_end(output, tokens, sequence));
        events
    }

    /// A tool-use answer as one Response object.
    pub(crate) fn responses_tool_use_body(&self, t: &ToolUse, tokens: u64) -> String {
        let mut output: Vec<Value> = t.text.iter().map(|text| self.message_item(Some(text))).collect();
        for (i, (name, input)) in t.calls.iter().enumerate() {
            output.push(self.call_item(i, name, Some(&input.to_string())));
        }
        let usage = Some(self.responses_usage(tokens));
        self.response("completed", output, usage, (Value::Null, Value::Null)).to_string()
    }

    /// The whole answer as one Response object.
    pub(crate) fn responses_full_body(&self, text: &str, output_tokens: u64) -> String {
        let usage = Some(self.responses_usage(output_tokens));
        let output = vec![self.message_item(Some(text))];
        let body = if self.cut_by_token_limit {
            self.response("incomplete", output, usage, (Value::Null, json!({"reason": "max_output_tokens"})))
        } else {
            self.response("completed", output, usage, (Value::Null, Value::Null))
        };
        body.to_string()
    }

    /// The start of a Response object up to and with the comma after its model: what an endless
    /// JSON body sends before its whitespace.
    pub(crate) fn responses_json_opening(&self) -> String {
        let (id, model) = (Value::from(self.response_id()), Value::from(self.model.as_str()));
        format!(r#"{{"id":{id},"object":"response","created_at":{},"model":{model},"#, self.created)
    }

    /// The start of a Response object up to the opening quote of its text.
    pub(crate) fn responses_text_opening(&self) -> String {
        let opening = self.responses_json_opening();
        format!(
            r#"{opening}"status":"completed","output":[{{"type":"message","role":"assistant","content":[{{"type":"output_text","text":""#
        )
    }
}

/// The reference reader: the text of a streamed answer and whether it completed, for the chaos
/// tests (every wire reads back what it renders).
pub(crate) fn read_back(body: &[u8]) -> (String, bool) {
    let text = String::from_utf8_lossy(body);
    let (mut answer, mut finished) = (String::new(), false);
    for data in text.lines().filter_map(|line| line.strip_prefix("data: ")) {
        let Ok(event) = serde_json::from_str::<Value>(data) else { continue };
        match event.get("type").and_then(Value::as_str) {
            Some("response.output_text.delta") => answer.push_str(event["delta"].as_str().unwrap_or("")),
            Some("response.completed" | "response.incomplete") => finished = true,
            _ => {}
        }
    }
    (answer, finished)
}
