//! What the wires share: SSE framing, the parts of an error body and the statuses of error types,
//! and the readers of the request shapes the OpenAI and Anthropic families have in common.

use std::fmt::Display;

use serde_json::Value;

use crate::conversation::Conversation;
use crate::forced::ToolChoice;

/// An SSE event with a name: `event: {name}` then its JSON data.
pub(crate) fn event(name: &str, data: &Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

/// An SSE event of one `data:` line and no name.
pub(crate) fn data(payload: &impl Display) -> String {
    format!("data: {payload}\n\n")
}

/// The SSE comment a keep-alive flood sends.
pub(crate) const KEEP_ALIVE: &str = ": keep-alive\n\n";

/// The `(event name, data)` of each event of a stream: the part of SSE the reference readers
/// need (one `data:` line per event, as every wire here sends).
pub(crate) fn sse_events(body: &[u8]) -> Vec<(Option<&str>, &str)> {
    let text = std::str::from_utf8(body).unwrap_or_default();
    let mut events = Vec::new();
    for block in text.split("\n\n") {
        let mut name = None;
        let mut payload = None;
        for line in block.lines() {
            if let Some(n) = line.strip_prefix("event: ") {
                name = Some(n);
            } else if let Some(d) = line.strip_prefix("data: ") {
                payload = Some(d);
            }
        }
        if let Some(payload) = payload {
            events.push((name, payload));
        }
    }
    events
}

/// Whether a body is a whole JSON answer rather than an event stream.
pub(crate) fn is_whole(body: &[u8]) -> bool {
    body.first() == Some(&b'{')
}

/// The `type`, `message`, `code` and `param` of an error body (each wire renders those it has).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ErrorParts {
    pub(crate) error_type: String,
    pub(crate) message: String,
    pub(crate) code: Option<String>,
    pub(crate) param: Option<String>,
}

impl ErrorParts {
    pub(crate) fn new(error_type: &str, message: &str, code: Option<&str>) -> Self {
        Self {
            error_type: error_type.to_owned(),
            message: message.to_owned(),
            code: code.map(str::to_owned),
            param: None,
        }
    }

    /// These parts with the step's `type`, `message` and `code`, where it sets them.
    pub(super) fn overridden(
        mut self,
        error_type: &Option<String>,
        message: &Option<String>,
        code: &Option<String>,
    ) -> Self {
        if let Some(t) = error_type {
            self.error_type.clone_from(t);
        }
        if let Some(m) = message {
            self.message.clone_from(m);
        }
        if code.is_some() {
            self.code.clone_from(code);
        }
        self
    }
}

/// The statuses of the error types every wire here shares; a wire's
/// [`status_of`](super::render::Render::status_of) starts from it.
pub(crate) fn status_of_type(error_type: &str) -> u16 {
    match error_type {
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

/// The names of the tools a request body offers, `tools[].function.name` or `tools[].name`: the
/// two shapes of the OpenAI and Anthropic families.
pub(crate) fn tool_names(body: Option<&Value>) -> Vec<String> {
    let Some(tools) = body.and_then(|b| b.get("tools")).and_then(Value::as_array) else {
        return Vec::new();
    };
    tools
        .iter()
        .filter_map(|tool| tool.pointer("/function/name").or_else(|| tool.get("name")).and_then(Value::as_str))
        .map(str::to_owned)
        .collect()
}

/// The texts and tool inputs of a content in the OpenAI and Anthropic families: a string, or a
/// list of blocks, each with its `text` (a string), its `content` (a tool result's, by this same
/// rule) and its `input` (a tool use's, as compact JSON). The nesting is bounded by the JSON
/// parser's depth limit.
pub(crate) fn read_content<'a>(value: Option<&'a Value>, texts: &mut Vec<&'a str>, c: &mut Conversation<'a>) {
    match value {
        Some(Value::String(text)) => texts.push(text),
        Some(Value::Array(blocks)) => blocks.iter().for_each(|block| read_content(Some(block), texts, c)),
        Some(Value::Object(block)) => {
            if let Some(text) = block.get("text").and_then(Value::as_str) {
                texts.push(text);
            }
            read_content(block.get("content"), texts, c);
            if let Some(input) = block.get("input") {
                c.tool_inputs.push(input.to_string().into());
            }
        }
        _ => {}
    }
}

/// A forced call's arguments as a JSON value, for a wire whose calls carry an object: the text
/// parsed as JSON, or the text as a JSON string when it is not JSON.
pub(crate) fn arguments_value(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::from(text))
}

/// The tool choice of the OpenAI family: `"required"` forces a call of any tool, `{"type":
/// "function", ..}` a call of the function named at `name` in it (a JSON pointer: `/function/name`
/// on Chat Completions, `/name` on Responses); anything else lets the model choose.
pub(crate) fn openai_tool_choice(choice: Option<&Value>, name: &str) -> ToolChoice {
    match choice {
        Some(Value::String(choice)) if choice == "required" => ToolChoice::Any { among: Vec::new() },
        Some(choice) if choice.get("type").and_then(Value::as_str) == Some("function") => choice
            .pointer(name)
            .and_then(Value::as_str)
            .map_or(ToolChoice::Auto, |name| ToolChoice::Tool(name.to_owned())),
        _ => ToolChoice::Auto,
    }
}
