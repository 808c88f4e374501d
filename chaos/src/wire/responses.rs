//! OpenAI's Responses API: `POST /v1/responses` (and `/responses`, for a base URL without `/v1`).
//! (About 600 lines: this API names more events than the other wires, and its unit tests stay
//! beside the bytes they check.)
//!
//! # Requests
//!
//! The model is the body's `model`, the stream flag its `stream`; the usage is always sent. The key
//! is read from `authorization: Bearer ...` (then `x-api-key`, then Azure's `api-key`), as OpenAI's.
//! The conversation is `instructions` (the system prompt) and `input`: a string, or items, each a
//! turn: a message (its `content`, a string or parts with `text`), a `function_call` (its
//! `arguments`) or a `function_call_output` (its `output`). The schema is `text.format.name` of a
//! `json_schema` format; the tools are `tools[].name`. `tool_choice` `{"type": "function", "name"}`
//! forces that tool, `"required"` one of the tools (see
//! [forced tool choice](crate#forced-tool-choice)): a text answer is then a `function_call` item
//! (`response.output_item.added`, one `response.function_call_arguments.delta` per piece, then
//! `.done`, `response.output_item.done` and the finish; whole: the item in `output`).
//!
//! # Answers
//!
//! A stream is typed events, each named in `event:` and in its data's `type`, with a
//! `sequence_number`: `response.created`, `response.in_progress`, `response.output_item.added` (the
//! message), `response.content_part.added`, one `response.output_text.delta` per text piece, then
//! the finish, `response.completed` (or `response.incomplete` with `incomplete_details.reason:
//! "max_output_tokens"` when the step is cut by the token limit) with the usage (`input_tokens`,
//! `input_tokens_details.cached_tokens`, `output_tokens` (the step's reasoning tokens included),
//! `output_tokens_details.reasoning_tokens`, `total_tokens`). There is no end marker after it (no `[DONE]`). The final event lists the
//! output items without repeating the text the deltas carried. Tool calls are `function_call` items
//! (`call_id`, `name`), each with its `response.function_call_arguments.delta`s, `.done` and
//! `response.output_item.done`, after the text's message item if there is text. A whole answer is
//! one Response object (`"object": "response"`, `status`, `output` items, `usage`). A typed answer
//! is a text answer whose text is the JSON. Ids: `resp_chaos{seq:016}`, `msg_chaos{seq:016}`,
//! `fc_chaos{seq:06}_{i}`, `call_chaos{seq:06}_{i}`; the request id header is `x-request-id`.
//!
//! # Errors
//!
//! HTTP errors are OpenAI's: the same bodies, statuses and presets as
//! [`openai`](super::openai). A mid-stream `sse_error` is `response.failed` (its response with
//! `status: "failed"`, the usage of the input and `error: {code, message}`) when its code is one a
//! failed response carries (`server_error`, the default, `rate_limit_exceeded`, `invalid_prompt`,
//! `vector_store_timeout` and the image codes), else an `error` event (`{"type": "error", code,
//! message, param}`, e.g. `server_is_overloaded`, `context_length_exceeded`); a step's `type`
//! without a code stands for its code (`overloaded_error` -> `server_is_overloaded`,
//! `rate_limit_error` -> `rate_limit_exceeded`, `invalid_request_error` -> `invalid_prompt`). The
//! body then ends cleanly. Step options: `code` and `param` are rendered (`param` in `error` events
//! and HTTP bodies); `ping` of a keep-alive flood is ignored (this wire has no ping event).

use serde_json::{Value, json};

use super::openai::OpenAi;
use super::render::{Exchange, Render, Rich, Sent};
use super::shared::{ErrorParts, event, is_whole, openai_tool_choice, sse_events, tool_names};
use super::{Asked, Names, NotAnAnswerBody, Route};
use crate::conversation::Conversation;
use crate::step::{NotAnAnswer, Preset};

/// The Responses wire.
pub(crate) struct Responses;

const NAMES: Names = Names {
    label: "OpenAI Responses",
    path: "/v1/responses",
    base_path: "/v1",
    key_headers: &["authorization"],
    request_id_header: Some("x-request-id"),
    rate_limit_headers: Some(super::RateLimitHeaders::OpenAi),
};

/// The events before the first text piece: created, in progress, the message item, its text part.
const PREAMBLE: usize = 4;

/// The events before the first piece of a forced call's arguments: created, in progress, the
/// `function_call` item.
const CALL_PREAMBLE: usize = 3;

/// The codes a failed response's `error` carries (the API's `ResponseError`); other failures of a
/// stream are `error` events.
fn fails_the_response(code: &str) -> bool {
    matches!(code, "server_error" | "rate_limit_exceeded" | "invalid_prompt" | "vector_store_timeout")
        || code.contains("image")
}

/// The code of an error whose step names a type but no code: this wire names failures by code only.
fn code_for_type(error_type: &str) -> &str {
    match error_type {
        "api_error" => "server_error",
        "overloaded_error" => "server_is_overloaded",
        "rate_limit_error" | "requests" | "tokens" => "rate_limit_exceeded",
        "invalid_request_error" => "invalid_prompt",
        other => other,
    }
}

impl Responses {
    fn id(x: &Exchange) -> String {
        format!("resp_chaos{:016}", x.seq)
    }

    fn message_id(x: &Exchange) -> String {
        format!("msg_chaos{:016}", x.seq)
    }

    /// Event `kind` with its `sequence_number`: named in `event:` and in the data's `type`.
    fn event(kind: &str, sequence: usize, mut data: Value) -> String {
        if let Value::Object(object) = &mut data {
            object.insert("type".to_owned(), Value::from(kind));
            object.insert("sequence_number".to_owned(), Value::from(sequence));
        }
        event(kind, &data)
    }

    /// The Response object: its `status`, `output` items, usage (`None` while in progress), and
    /// what ended it (`error`, `incomplete_details`).
    fn response(x: &Exchange, status: &str, output: Vec<Value>, usage: Option<Value>, ending: [Value; 2]) -> Value {
        let [error, incomplete_details] = ending;
        json!({
            "id": Self::id(x),
            "object": "response",
            "created_at": x.created,
            "status": status,
            "model": x.model,
            "output": output,
            "usage": usage,
            "error": error,
            "incomplete_details": incomplete_details,
        })
    }

    /// The usage of an answer of `counted` output pieces; the step's reasoning tokens are part of
    /// `output_tokens`, as OpenAI counts them, and also reported apart.
    fn usage(x: &Exchange, counted: u64) -> Value {
        let reasoning_tokens = x.usage.reasoning_tokens;
        let output_tokens = x.output_tokens(counted).saturating_add(reasoning_tokens);
        json!({
            "input_tokens": x.input_tokens,
            "input_tokens_details": {"cached_tokens": x.usage.cache_read_input_tokens},
            "output_tokens": output_tokens,
            "output_tokens_details": {"reasoning_tokens": reasoning_tokens},
            "total_tokens": x.input_tokens.saturating_add(output_tokens),
        })
    }

    /// The message item; with `text` its one text part (`None`: as the stream's events carry it,
    /// the text being theirs).
    fn message(x: &Exchange, text: Option<&str>) -> Value {
        let content: Vec<Value> =
            text.map(|text| json!({"type": "output_text", "text": text, "annotations": []})).into_iter().collect();
        json!({"id": Self::message_id(x), "type": "message", "role": "assistant", "status": "completed", "content": content})
    }

    /// The `reasoning` item; with `summary` its one summary part (`None`: as the stream's events
    /// carry it, the text being theirs).
    fn reasoning(x: &Exchange, summary: Option<&str>) -> Value {
        let summary: Vec<Value> =
            summary.map(|text| json!({"type": "summary_text", "text": text})).into_iter().collect();
        json!({"id": Self::reasoning_id(x), "type": "reasoning", "summary": summary})
    }

    fn reasoning_id(x: &Exchange) -> String {
        format!("rs_chaos{:016}", x.seq)
    }

    /// The id of the `function_call` item of call `i`.
    fn call_item_id(x: &Exchange, i: usize) -> String {
        format!("fc_chaos{:06}_{i}", x.seq)
    }

    /// The `function_call` item of call `i`, with its arguments once they are complete.
    fn call(x: &Exchange, i: usize, name: &str, arguments: Option<&str>) -> Value {
        json!({
            "id": Self::call_item_id(x, i),
            "type": "function_call",
            "call_id": format!("call_chaos{:06}_{i}", x.seq),
            "name": name,
            "arguments": arguments.unwrap_or(""),
            "status": if arguments.is_some() { "completed" } else { "in_progress" },
        })
    }

    /// The response created and in progress: the first two events of every stream.
    fn opening_events(x: &Exchange) -> [String; 2] {
        let response =
            json!({"response": Self::response(x, "in_progress", Vec::new(), None, [Value::Null, Value::Null])});
        [Self::event("response.created", 0, response.clone()), Self::event("response.in_progress", 1, response)]
    }

    /// The finish at `sequence`: `response.completed` with `output`, or `response.incomplete` when
    /// the token limit cut the answer.
    fn end(x: &Exchange, output: Vec<Value>, counted: u64, sequence: usize) -> String {
        let usage = Some(Self::usage(x, counted));
        if x.cut_by_token_limit {
            let response =
                Self::response(x, "incomplete", output, usage, [Value::Null, json!({"reason": "max_output_tokens"})]);
            Self::event("response.incomplete", sequence, json!({"response": response}))
        } else {
            let response = Self::response(x, "completed", output, usage, [Value::Null, Value::Null]);
            Self::event("response.completed", sequence, json!({"response": response}))
        }
    }

    /// A whole Response whose `output` is `output`.
    fn whole(x: &Exchange, output: Vec<Value>, counted: u64) -> String {
        let usage = Some(Self::usage(x, counted));
        let response = if x.cut_by_token_limit {
            Self::response(x, "incomplete", output, usage, [Value::Null, json!({"reason": "max_output_tokens"})])
        } else {
            Self::response(x, "completed", output, usage, [Value::Null, Value::Null])
        };
        response.to_string()
    }
}

impl Render for Responses {
    fn names(&self) -> &'static Names {
        &NAMES
    }

    fn route(&self, path: &str) -> Option<Route> {
        matches!(path, "/v1/responses" | "/responses").then(Route::default)
    }

    fn read<'a>(&self, body: Option<&'a Value>, _route: Route) -> Asked<'a> {
        let mut conversation = Conversation::default();
        let get = |pointer: &str| body.and_then(|b| b.pointer(pointer));
        conversation.system.extend(get("/instructions").and_then(Value::as_str));
        match get("/input") {
            Some(Value::String(text)) => {
                conversation.messages = 1;
                conversation.texts.push(text);
                conversation.opening = Some(1);
            }
            Some(Value::Array(items)) => {
                conversation.messages = items.len();
                for item in items {
                    match item.get("type").and_then(Value::as_str) {
                        Some("function_call") => {
                            conversation
                                .tool_inputs
                                .extend(item.get("arguments").and_then(Value::as_str).map(Into::into));
                        }
                        Some("function_call_output") => texts_of(item.get("output"), &mut conversation.texts),
                        // A message, typed (`"type": "message"`) or not.
                        _ => texts_of(item.get("content"), &mut conversation.texts),
                    }
                    let is_user = item.get("role").and_then(Value::as_str) == Some("user");
                    conversation.mark_opening(is_user, conversation.texts.len());
                }
            }
            _ => {}
        }
        let format =
            get("/text/format").filter(|format| format.get("type").and_then(Value::as_str) == Some("json_schema"));
        Asked {
            model: get("/model").and_then(Value::as_str).map(str::to_owned),
            stream: get("/stream").and_then(Value::as_bool) == Some(true),
            usage_asked: true,
            tool_choice: openai_tool_choice(get("/tool_choice"), "/name"),
            schema: format.and_then(|format| format.get("name")).and_then(Value::as_str).map(str::to_owned),
            tools: tool_names(body),
            max_tokens: get("/max_output_tokens").and_then(Value::as_u64),
            conversation,
        }
    }

    fn error_parts(&self, status: u16, preset: Preset) -> ErrorParts {
        OpenAi.error_parts(status, preset)
    }

    /// OpenAI's server error; its type stands for its code ([`code_for_type`]).
    fn stream_error_parts(&self) -> ErrorParts {
        OpenAi.stream_error_parts()
    }

    fn bare_error_parts(&self) -> ErrorParts {
        OpenAi.bare_error_parts()
    }

    fn error_body(&self, parts: &ErrorParts) -> Value {
        OpenAi.error_body(parts)
    }

    fn default_malformed(&self) -> &'static str {
        r#"{"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":"#
    }

    /// The event's `output_index` a string.
    fn default_unreadable(&self) -> &'static str {
        r#"{"type":"response.output_text.delta","output_index":"first","content_index":0,"delta":"Hello"}"#
    }

    fn opening(&self, x: &Exchange) -> String {
        let [created, _] = Self::opening_events(x);
        created
    }

    /// A forced call opens its `function_call` item instead of the message and its text part.
    fn preamble(&self, x: &Exchange) -> Vec<String> {
        let mut events = Vec::from(Self::opening_events(x));
        if let Some(name) = &x.answer_tool {
            let item = json!({"output_index": 0, "item": Self::call(x, 0, name, None)});
            events.push(Self::event("response.output_item.added", 2, item));
            return events;
        }
        let item = json!({"output_index": 0, "item": Self::message(x, None)});
        events.push(Self::event("response.output_item.added", 2, item));
        let part = json!({"item_id": Self::message_id(x), "output_index": 0, "content_index": 0,
            "part": {"type": "output_text", "text": "", "annotations": []}});
        events.push(Self::event("response.content_part.added", 3, part));
        events
    }

    fn chunk(&self, x: &Exchange, i: usize, text: &str) -> String {
        if x.answer_tool.is_some() {
            let delta = json!({"item_id": Self::call_item_id(x, 0), "output_index": 0, "delta": text});
            return Self::event("response.function_call_arguments.delta", CALL_PREAMBLE + i, delta);
        }
        let delta = json!({"item_id": Self::message_id(x), "output_index": 0, "content_index": 0, "delta": text});
        Self::event("response.output_text.delta", PREAMBLE + i, delta)
    }

    /// A forced call's arguments are done (`response.function_call_arguments.done` with the whole
    /// text, `response.output_item.done`) before the finish, whose output is the call.
    fn epilogue(&self, x: &Exchange, text: &str, output_tokens: u64) -> Vec<String> {
        let chunks = usize::try_from(output_tokens).unwrap_or(usize::MAX);
        let Some(name) = &x.answer_tool else {
            return vec![Self::end(x, vec![Self::message(x, None)], output_tokens, PREAMBLE.saturating_add(chunks))];
        };
        let sequence = CALL_PREAMBLE.saturating_add(chunks);
        let done = Self::call(x, 0, name, Some(text));
        let arguments = json!({"item_id": Self::call_item_id(x, 0), "output_index": 0, "arguments": text});
        vec![
            Self::event("response.function_call_arguments.done", sequence, arguments),
            Self::event("response.output_item.done", sequence + 1, json!({"output_index": 0, "item": done})),
            Self::end(x, vec![done], output_tokens, sequence + 2),
        ]
    }

    fn error_event(&self, x: &Exchange, parts: &ErrorParts) -> String {
        let code = parts.code.clone().unwrap_or_else(|| code_for_type(&parts.error_type).to_owned());
        if !fails_the_response(&code) {
            return Self::event("error", 0, json!({"code": code, "message": parts.message, "param": parts.param}));
        }
        let error = json!({"code": code, "message": parts.message});
        let response = Self::response(x, "failed", Vec::new(), Some(Self::usage(x, 0)), [error, Value::Null]);
        Self::event("response.failed", 0, json!({"response": response}))
    }

    fn malformed(&self, payload: &str) -> String {
        format!("event: response.output_text.delta\ndata: {payload}\n\n")
    }

    /// The opening, then an output item per part: the `reasoning` item (its summary part, one
    /// `response.reasoning_summary_text.delta` per piece, `.done`), the message (its text part, one
    /// `response.output_text.delta` per piece), each `function_call` (its argument deltas, `.done`),
    /// then the finish with every item.
    fn rich_events(&self, x: &Exchange, a: &Rich<'_>) -> Vec<Sent> {
        let mut events: Vec<Sent> = Self::opening_events(x).into_iter().map(Sent::Event).collect();
        let mut push = |kind: &str, data: Value, chunk: bool| {
            let event = Self::event(kind, events.len(), data);
            events.push(if chunk { Sent::Chunk(event) } else { Sent::Event(event) });
        };
        let mut output = Vec::new();
        if let Some(reasoning) = a.reasoning {
            let (index, id) = (output.len(), Self::reasoning_id(x));
            let at = json!({"item_id": id, "output_index": index, "summary_index": 0});
            let with = |mut at: Value, key: &str, value: Value| {
                at[key] = value;
                at
            };
            push("response.output_item.added", json!({"output_index": index, "item": Self::reasoning(x, None)}), false);
            let part = |text: &str| json!({"type": "summary_text", "text": text});
            push("response.reasoning_summary_part.added", with(at.clone(), "part", part("")), false);
            for piece in &a.reasoning_pieces {
                push("response.reasoning_summary_text.delta", with(at.clone(), "delta", json!(piece)), true);
            }
            push("response.reasoning_summary_text.done", with(at.clone(), "text", json!(reasoning)), false);
            push("response.reasoning_summary_part.done", with(at, "part", part(reasoning)), false);
            let done = Self::reasoning(x, Some(reasoning));
            push("response.output_item.done", json!({"output_index": index, "item": done}), false);
            output.push(done);
        }
        if !a.text_pieces.is_empty() {
            let (index, id) = (output.len(), Self::message_id(x));
            push("response.output_item.added", json!({"output_index": index, "item": Self::message(x, None)}), false);
            let part = json!({"item_id": id, "output_index": index, "content_index": 0,
                "part": {"type": "output_text", "text": "", "annotations": []}});
            push("response.content_part.added", part, false);
            for piece in &a.text_pieces {
                let delta = json!({"item_id": id, "output_index": index, "content_index": 0, "delta": piece});
                push("response.output_text.delta", delta, true);
            }
            let done = Self::message(x, Some(a.text));
            push("response.output_item.done", json!({"output_index": index, "item": done}), false);
            output.push(done);
        }
        for (i, call) in a.calls.iter().enumerate() {
            let (index, item_id) = (output.len(), Self::call_item_id(x, i));
            let added = json!({"output_index": index, "item": Self::call(x, i, call.name, None)});
            push("response.output_item.added", added, false);
            for piece in &call.pieces {
                let delta = json!({"item_id": item_id, "output_index": index, "delta": piece});
                push("response.function_call_arguments.delta", delta, true);
            }
            let arguments = json!({"item_id": item_id, "output_index": index, "arguments": call.arguments});
            push("response.function_call_arguments.done", arguments, false);
            let done = Self::call(x, i, call.name, Some(&call.arguments));
            push("response.output_item.done", json!({"output_index": index, "item": done}), false);
            output.push(done);
        }
        let sequence = events.len();
        events.push(Sent::Event(Self::end(x, output, a.output_tokens, sequence)));
        events
    }

    fn rich_body(&self, x: &Exchange, a: &Rich<'_>) -> String {
        let mut output: Vec<Value> = a.reasoning.iter().map(|reasoning| Self::reasoning(x, Some(reasoning))).collect();
        if !a.text_pieces.is_empty() {
            output.push(Self::message(x, Some(a.text)));
        }
        for (i, call) in a.calls.iter().enumerate() {
            output.push(Self::call(x, i, call.name, Some(&call.arguments)));
        }
        Self::whole(x, output, a.output_tokens)
    }

    fn full_body(&self, x: &Exchange, text: &str, output_tokens: u64) -> String {
        let item = match &x.answer_tool {
            Some(name) => Self::call(x, 0, name, Some(text)),
            None => Self::message(x, Some(text)),
        };
        Self::whole(x, vec![item], output_tokens)
    }

    fn json_opening(&self, x: &Exchange) -> String {
        let (id, model) = (Value::from(Self::id(x)), Value::from(x.model.as_str()));
        format!(r#"{{"id":{id},"object":"response","created_at":{},"model":{model},"#, x.created)
    }

    fn text_opening(&self, x: &Exchange) -> String {
        let opening = self.json_opening(x);
        format!(
            r#"{opening}"status":"completed","output":[{{"type":"message","role":"assistant","content":[{{"type":"output_text","text":""#
        )
    }

    /// `no_choices`: a Response with no output item; `done_only`: the stream's opening and its
    /// `response.completed` with no output item; `empty_chunk`: the preamble, one empty delta,
    /// then that same empty completion.
    fn empty_answer(&self, x: &Exchange, shape: NotAnAnswer) -> NotAnAnswerBody {
        let end = |sequence| {
            let response =
                Self::response(x, "completed", Vec::new(), Some(Self::usage(x, 0)), [Value::Null, Value::Null]);
            Self::event("response.completed", sequence, json!({"response": response}))
        };
        match shape {
            NotAnAnswer::DoneOnly => NotAnAnswerBody::Events(vec![self.opening(x), end(1)]),
            NotAnAnswer::EmptyChunk => {
                let mut events = self.preamble(x);
                events.push(self.chunk(x, 0, ""));
                events.push(end(PREAMBLE + 1));
                NotAnAnswerBody::Events(events)
            }
            _ => NotAnAnswerBody::Json(Self::whole(x, Vec::new(), 0)),
        }
    }

    /// Finished: `response.completed` (a whole Response of status `completed`).
    fn read_back(&self, body: &[u8]) -> (String, bool) {
        if is_whole(body) {
            let answer: Value = serde_json::from_slice(body).unwrap_or_default();
            let items = answer.get("output").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
            let message = items.iter().find(|item| item["type"] == "message");
            let parts = message.and_then(|item| item["content"].as_array()).map_or(&[][..], Vec::as_slice);
            let text: String = parts.iter().filter_map(|part| part.get("text").and_then(Value::as_str)).collect();
            return (text, answer.get("status").and_then(Value::as_str) == Some("completed"));
        }
        let (mut text, mut completed) = (String::new(), false);
        for (_, payload) in sse_events(body) {
            let event: Value = serde_json::from_str(payload).unwrap_or_default();
            match event.get("type").and_then(Value::as_str) {
                Some("response.output_text.delta") => text.push_str(event["delta"].as_str().unwrap_or_default()),
                Some("response.completed") => completed = true,
                _ => {}
            }
        }
        (text, completed)
    }
}

/// The texts of a content: a string, or parts each with a `text`.
fn texts_of<'a>(content: Option<&'a Value>, out: &mut Vec<&'a str>) {
    match content {
        Some(Value::String(text)) => out.push(text),
        Some(Value::Array(parts)) => {
            out.extend(parts.iter().filter_map(|part| part.get("text").and_then(Value::as_str)))
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forced::ToolChoice;
    use crate::step::{SseError, Step};
    use crate::wire::render::fixture;

    #[test]
    fn it_reads_back_what_it_renders() {
        fixture::reads_back_what_it_renders(&Responses);
    }

    #[test]
    fn it_reads_instructions_and_input_items() {
        let body = json!({"model": "m", "stream": true, "instructions": "Be brief.",
        "text": {"format": {"type": "json_schema", "name": "Invoice", "schema": {}, "strict": true}},
        "tools": [{"type": "function", "name": "get_weather", "parameters": {}}],
        "input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Weather?"}]},
            {"type": "function_call", "call_id": "c", "name": "get_weather", "arguments": "{\"city\":\"Paris\"}"},
            {"type": "function_call_output", "call_id": "c", "output": "sunny"},
            {"role": "user", "content": "thanks"},
        ]});
        let asked = Responses.read(Some(&body), Route::default());
        assert_eq!(asked.conversation.messages, 4);
        assert_eq!(asked.conversation.system, ["Be brief."]);
        assert_eq!(asked.conversation.texts, ["Weather?", "sunny", "thanks"]);
        assert_eq!(asked.conversation.tool_inputs, [r#"{"city":"Paris"}"#]);
        assert_eq!((asked.schema.as_deref(), asked.tools), (Some("Invoice"), vec!["get_weather".to_owned()]));
        assert!(asked.stream && asked.usage_asked);
        let body = json!({"input": "hello there"});
        let plain = Responses.read(Some(&body), Route::default());
        assert_eq!((plain.conversation.messages, plain.conversation.texts), (1, vec!["hello there"]));
        let choice =
            |choice: Value| Responses.read(Some(&json!({"tool_choice": choice})), Route::default()).tool_choice;
        assert_eq!(choice(json!("required")), ToolChoice::Any { among: Vec::new() });
        assert_eq!(choice(json!({"type": "function", "name": "f"})), ToolChoice::Tool("f".into()));
        assert_eq!(choice(json!("auto")), ToolChoice::Auto);
        assert_eq!(Responses.route("/responses"), Some(Route::default()));
        assert_eq!(Responses.route("/v1/chat/completions"), None);
    }

    /// The events of a stream, as `(type, data)`: every event is named as its data's type, and
    /// their sequence numbers count from 0.
    fn events(stream: &[String]) -> Vec<(String, Value)> {
        let body = stream.concat();
        let events: Vec<(String, Value)> = sse_events(body.as_bytes())
            .into_iter()
            .map(|(name, payload)| {
                let data: Value = serde_json::from_str(payload).unwrap();
                assert_eq!(name, data["type"].as_str(), "{payload}");
                (name.unwrap_or_default().to_owned(), data)
            })
            .collect();
        let numbers: Vec<u64> = events.iter().filter_map(|(_, data)| data["sequence_number"].as_u64()).collect();
        assert_eq!(numbers, (0..events.len() as u64).collect::<Vec<_>>());
        events
    }

    #[test]
    fn an_answer_streams_text_then_completes_with_its_usage() {
        let mut x = fixture::exchange(&Responses, None);
        x.usage = crate::usage::TokenUsage::new(120, 40).with_cache_read(100);
        let mut stream = x.preamble();
        stream.extend(["Hel", "lo"].iter().enumerate().map(|(i, text)| x.chunk(i, text)));
        stream.extend(x.epilogue("Hello", 2));
        let streamed = events(&stream);
        let kinds: Vec<&str> = streamed.iter().map(|(kind, _)| kind.as_str()).collect();
        assert_eq!(
            kinds,
            [
                "response.created",
                "response.in_progress",
                "response.output_item.added",
                "response.content_part.added",
                "response.output_text.delta",
                "response.output_text.delta",
                "response.completed",
            ]
        );
        let usage = &streamed[6].1["response"]["usage"];
        assert_eq!((usage["input_tokens"].as_u64(), usage["output_tokens"].as_u64()), (Some(2), Some(40)));
        assert_eq!(usage["input_tokens_details"]["cached_tokens"], 100);
        x.cut_by_token_limit = true;
        stream.pop();
        stream.extend(x.epilogue("Hello", 2));
        let (kind, cut) = events(&stream).pop().unwrap();
        assert_eq!(kind, "response.incomplete");
        assert_eq!(cut["response"]["incomplete_details"]["reason"], "max_output_tokens");
    }

    #[test]
    fn a_failure_is_a_failed_response_or_an_error_event_by_its_code() {
        let x = fixture::exchange(&Responses, None);
        let rendered = |step: SseError| {
            let parts = x.sse_error_parts(&step);
            let body = x.error_event(&parts);
            let (name, payload) = sse_events(body.as_bytes())[0];
            (name.unwrap_or_default().to_owned(), serde_json::from_str::<Value>(payload).unwrap())
        };
        let (kind, data) = rendered(Step::sse_error(1));
        assert_eq!(kind, "response.failed");
        assert_eq!(data["response"]["status"], "failed");
        assert_eq!(data["response"]["error"]["code"], "server_error");
        assert!(data["response"]["error"]["message"].as_str().unwrap().contains("The server had an error"));
        let (kind, data) = rendered(Step::sse_error(1).code("rate_limit_exceeded").message("Please try again in 7s."));
        assert_eq!(
            (kind.as_str(), &data["response"]["error"]["message"]),
            ("response.failed", &json!("Please try again in 7s."))
        );
        let (kind, data) = rendered(Step::sse_error(1).code("server_is_overloaded"));
        assert_eq!((kind.as_str(), &data["code"]), ("error", &json!("server_is_overloaded")));
        let (kind, data) = rendered(Step::sse_error(1).error_type("overloaded_error"));
        assert_eq!((kind.as_str(), &data["code"]), ("error", &json!("server_is_overloaded")));
    }

    #[test]
    fn tool_calls_are_function_call_items_with_their_argument_deltas() {
        let x = fixture::exchange(&Responses, None);
        let t = match Step::tool_use("get_weather", json!({"city": "Paris"})).text("Let me look.").into_step() {
            Step::ToolUse(t) => t,
            other => panic!("{other:?}"),
        };
        let streamed =
            events(&x.rich_events(&t.as_completion()).into_iter().map(Sent::into_string).collect::<Vec<_>>());
        let arguments: String = streamed
            .iter()
            .filter(|(kind, _)| kind == "response.function_call_arguments.delta")
            .map(|(_, data)| data["delta"].as_str().unwrap())
            .collect();
        assert_eq!(arguments, r#"{"city":"Paris"}"#);
        let added =
            streamed.iter().find(|(kind, data)| kind == "response.output_item.added" && data["output_index"] == 1);
        let item = &added.unwrap().1["item"];
        assert_eq!(
            (&item["type"], &item["call_id"], &item["name"]),
            (&json!("function_call"), &json!("call_chaos000003_0"), &json!("get_weather"))
        );
        let (kind, last) = streamed.last().unwrap();
        assert_eq!(kind, "response.completed");
        assert_eq!(last["response"]["output"][1]["arguments"], r#"{"city":"Paris"}"#);
        let whole: Value = serde_json::from_str(&x.rich_body(&t.as_completion())).unwrap();
        assert_eq!(whole["output"][1]["call_id"], "call_chaos000003_0");
    }
}
