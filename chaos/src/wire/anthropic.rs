//! Anthropic messages: `POST /v1/messages`.
//!
//! # Requests
//!
//! The model is the body's `model`, the stream flag its `stream`; the usage is always sent. The
//! key is read from `x-api-key` (then `authorization: Bearer ...`, then `api-key`). The
//! conversation is the top-level `system` (a string or text blocks) and `messages[]`: each
//! `content` (a string or blocks: `text`, a `tool_result`'s `content`, a `tool_use`'s `input`).
//! A forced tool (`tool_choice: {"type": "tool", "name"}`) is the schema, and `{"type": "any"}`
//! forces a call of one of the tools (see [forced tool choice](crate#forced-tool-choice)): a text
//! answer is sent as that tool's `tool_use` block, its text as `input_json_delta` fragments (whole:
//! its `input`, the text parsed as JSON), as the real API answers a request for a schema.
//!
//! # Answers
//!
//! A stream is `message_start` (usage with 1 output token), `content_block_start`, `ping`, one
//! `content_block_delta` per text piece, `content_block_stop`, `message_delta` (the
//! `stop_reason`: `end_turn`, `tool_use`, or `max_tokens` when the step is cut by the token
//! limit; the output tokens) and `message_stop`. Each event is named as its data's `type`. Ids:
//! `msg_chaos{seq:016}`, `toolu_chaos{seq:06}_{i}`; the request id header is `request-id`.
//!
//! # Errors
//!
//! The body is `{"type": "error", "error": {"type", "message"}}`; an in-stream error is the same
//! object as `event: error`. By status:
//!
//! | status | `type` |
//! |---|---|
//! | 401 | `authentication_error` |
//! | 402 | `billing_error` |
//! | 403 | `permission_error` |
//! | 404 | `not_found_error` |
//! | 409 | `conflict_error` |
//! | 413 | `request_too_large` |
//! | 429 | `rate_limit_error` |
//! | 503, 529 | `overloaded_error` |
//! | 504 | `timeout_error` |
//! | other 4xx | `invalid_request_error` |
//! | 5xx | `api_error` |
//!
//! `overloaded_error` answered without a stream is a 529. `context_overflow` is
//! `prompt is too long: 250000 tokens > 200000 maximum`. Step options: `code` and `param` are
//! ignored (the body has neither); `ping` of a keep-alive flood sends `event: ping`.

use serde_json::{Value, json};

use super::render::{Exchange, Render, Rich, Sent};
use super::shared::{
    ErrorParts, arguments_value, event, is_whole, read_content, sse_events, status_of_type, tool_names,
};
use super::{Asked, Names, NotAnAnswerBody, Route};
use crate::conversation::Conversation;
use crate::forced::ToolChoice;
use crate::step::{NotAnAnswer, Preset};

/// The Messages wire.
pub(crate) struct Anthropic;

const NAMES: Names = Names {
    label: "Anthropic",
    path: "/v1/messages",
    base_path: "",
    key_headers: &["x-api-key"],
    request_id_header: Some("request-id"),
    rate_limit_headers: Some(super::RateLimitHeaders::Anthropic),
};

impl Anthropic {
    fn id(x: &Exchange) -> String {
        format!("msg_chaos{:016}", x.seq)
    }

    fn tool_call_id(x: &Exchange, i: usize) -> String {
        format!("toolu_chaos{:06}_{i}", x.seq)
    }

    /// The signature of a thinking block (the real one is an opaque token the API checks).
    fn signature(x: &Exchange) -> String {
        format!("chaos-signature-{:06}", x.seq)
    }

    /// An event named as its data's `type`.
    fn typed(name: &str, mut data: Value) -> String {
        if let Value::Object(fields) = &mut data {
            // `type` first, as the API sends it.
            let mut typed = serde_json::Map::new();
            typed.insert("type".to_owned(), Value::from(name));
            typed.extend(std::mem::take(fields));
            data = Value::Object(typed);
        }
        event(name, &data)
    }

    fn message_start(x: &Exchange) -> String {
        // The real API reports 1 output token at the start.
        Self::typed("message_start", json!({"message": Self::empty_message(x, 1)}))
    }

    /// A message with no content and no stop reason yet: what `message_start` carries.
    fn empty_message(x: &Exchange, output_tokens: u64) -> Value {
        json!({
            "id": Self::id(x),
            "type": "message",
            "role": "assistant",
            "model": x.model,
            "content": [],
            "stop_reason": null,
            "stop_sequence": null,
            "usage": Self::usage(x, output_tokens),
        })
    }

    /// The usage with `output_tokens` (already pinned or counted).
    fn usage(x: &Exchange, output_tokens: u64) -> Value {
        json!({
            "input_tokens": x.input_tokens,
            "cache_creation_input_tokens": x.usage.cache_creation_input_tokens,
            "cache_read_input_tokens": x.usage.cache_read_input_tokens,
            "output_tokens": output_tokens,
        })
    }

    fn ping() -> String {
        Self::typed("ping", json!({}))
    }

    fn message_stop() -> String {
        Self::typed("message_stop", json!({}))
    }

    fn block_start(index: usize, block: Value) -> String {
        Self::typed("content_block_start", json!({"index": index, "content_block": block}))
    }

    fn block_stop(index: usize) -> String {
        Self::typed("content_block_stop", json!({"index": index}))
    }

    /// Why the answer stopped: the token limit cut it, it called a tool, or the turn ended.
    fn stop_reason(x: &Exchange, tool_use: bool) -> &'static str {
        match (x.cut_by_token_limit, tool_use) {
            (true, _) => "max_tokens",
            (false, true) => "tool_use",
            (false, false) => "end_turn",
        }
    }

    /// `message_delta` with the stop reason and the output tokens, then `message_stop`.
    fn push_stream_end(x: &Exchange, events: &mut Vec<String>, tool_use: bool, output_tokens: u64) {
        events.push(Self::typed(
            "message_delta",
            json!({
                "delta": {"stop_reason": Self::stop_reason(x, tool_use), "stop_sequence": null},
                "usage": {"output_tokens": x.output_tokens(output_tokens)},
            }),
        ));
        events.push(Self::message_stop());
    }

    /// A whole message with `content` and its stop reason.
    fn message(x: &Exchange, content: Value, stop_reason: &str, output_tokens: u64) -> String {
        json!({
            "id": Self::id(x),
            "type": "message",
            "role": "assistant",
            "model": x.model,
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": null,
            "usage": Self::usage(x, x.output_tokens(output_tokens)),
        })
        .to_string()
    }
}

impl Render for Anthropic {
    fn names(&self) -> &'static Names {
        &NAMES
    }

    fn read<'a>(&self, body: Option<&'a Value>, _route: Route) -> Asked<'a> {
        let mut conversation = Conversation::default();
        let mut system = Vec::new();
        read_content(body.and_then(|b| b.get("system")), &mut system, &mut conversation);
        let messages = body.and_then(|b| b.get("messages")).and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
        conversation.messages = messages.len();
        let mut texts = Vec::new();
        for message in messages {
            read_content(message.get("content"), &mut texts, &mut conversation);
            conversation.mark_opening(message.get("role").and_then(Value::as_str) == Some("user"), texts.len());
        }
        (conversation.system, conversation.texts) = (system, texts);
        let get = |pointer: &str| body.and_then(|b| b.pointer(pointer));
        let named = get("/tool_choice/name").and_then(Value::as_str).map(str::to_owned);
        let tool_choice = match (get("/tool_choice/type").and_then(Value::as_str), named) {
            (Some("tool"), Some(name)) => ToolChoice::Tool(name),
            (Some("any"), _) => ToolChoice::Any { among: Vec::new() },
            _ => ToolChoice::Auto,
        };
        Asked {
            model: get("/model").and_then(Value::as_str).map(str::to_owned),
            stream: get("/stream").and_then(Value::as_bool) == Some(true),
            usage_asked: true,
            // A forced tool is how a request for a schema reads on this wire.
            schema: match &tool_choice {
                ToolChoice::Tool(name) => Some(name.clone()),
                _ => None,
            },
            tool_choice,
            tools: tool_names(body),
            max_tokens: get("/max_tokens").and_then(Value::as_u64),
            conversation,
        }
    }

    fn error_parts(&self, status: u16, preset: Preset) -> ErrorParts {
        let (error_type, message) = match preset {
            Preset::Generic => match status {
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
            },
            Preset::ContextOverflow => ("invalid_request_error", "prompt is too long: 250000 tokens > 200000 maximum"),
            Preset::InvalidApiKey => ("authentication_error", "invalid x-api-key"),
        };
        ErrorParts::new(error_type, message, None)
    }

    fn stream_error_parts(&self) -> ErrorParts {
        ErrorParts::new("overloaded_error", "Overloaded", None)
    }

    fn bare_error_parts(&self) -> ErrorParts {
        ErrorParts::new("authentication_error", "invalid x-api-key", None)
    }

    fn status_of(&self, error_type: &str) -> u16 {
        match error_type {
            "overloaded_error" => 529,
            _ => status_of_type(error_type),
        }
    }

    fn error_body(&self, parts: &ErrorParts) -> Value {
        json!({
            "type": "error",
            "error": {"type": parts.error_type, "message": parts.message},
        })
    }

    fn default_malformed(&self) -> &'static str {
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"#
    }

    /// The block's `index` a string.
    fn default_unreadable(&self) -> &'static str {
        r#"{"type":"content_block_delta","index":"first","delta":{"type":"text_delta","text":"Hello"}}"#
    }

    fn opening(&self, x: &Exchange) -> String {
        Self::message_start(x)
    }

    fn preamble(&self, x: &Exchange) -> Vec<String> {
        let block = match &x.answer_tool {
            Some(name) => json!({"type": "tool_use", "id": Self::tool_call_id(x, 0), "name": name, "input": {}}),
            None => json!({"type": "text", "text": ""}),
        };
        vec![Self::message_start(x), Self::block_start(0, block), Self::ping()]
    }

    fn chunk(&self, x: &Exchange, _i: usize, text: &str) -> String {
        let delta = match x.answer_tool {
            Some(_) => json!({"type": "input_json_delta", "partial_json": text}),
            None => json!({"type": "text_delta", "text": text}),
        };
        Self::typed("content_block_delta", json!({"index": 0, "delta": delta}))
    }

    fn epilogue(&self, x: &Exchange, _text: &str, output_tokens: u64) -> Vec<String> {
        let mut events = vec![Self::block_stop(0)];
        Self::push_stream_end(x, &mut events, x.answer_tool.is_some(), output_tokens);
        events
    }

    fn error_event(&self, _x: &Exchange, parts: &ErrorParts) -> String {
        event("error", &self.error_body(parts))
    }

    fn keep_alive(&self, ping: bool) -> String {
        if ping { Self::ping() } else { super::shared::KEEP_ALIVE.to_owned() }
    }

    fn malformed(&self, payload: &str) -> String {
        format!("event: content_block_delta\ndata: {payload}\n\n")
    }

    /// `message_start`, then one content block per part: the reasoning's `thinking` block
    /// (`thinking_delta`s, then a `signature_delta`), the text's, then each call's with its
    /// `input_json_delta`s; the `ping` follows the first block's start.
    fn rich_events(&self, x: &Exchange, a: &Rich<'_>) -> Vec<Sent> {
        let mut events = vec![Sent::Event(Self::message_start(x))];
        let mut blocks: Vec<(Value, Vec<Value>, Option<Value>)> = Vec::new();
        if a.reasoning.is_some() {
            let deltas = a.reasoning_pieces.iter().map(|piece| json!({"type": "thinking_delta", "thinking": piece}));
            let signature = json!({"type": "signature_delta", "signature": Self::signature(x)});
            blocks.push((json!({"type": "thinking", "thinking": ""}), deltas.collect(), Some(signature)));
        }
        if !a.text_pieces.is_empty() {
            let deltas = a.text_pieces.iter().map(|piece| json!({"type": "text_delta", "text": piece}));
            blocks.push((json!({"type": "text", "text": ""}), deltas.collect(), None));
        }
        for (i, call) in a.calls.iter().enumerate() {
            let block = json!({"type": "tool_use", "id": Self::tool_call_id(x, i), "name": call.name, "input": {}});
            let deltas = call.pieces.iter().map(|piece| json!({"type": "input_json_delta", "partial_json": piece}));
            blocks.push((block, deltas.collect(), None));
        }
        for (index, (block, deltas, closing)) in blocks.into_iter().enumerate() {
            events.push(Sent::Event(Self::block_start(index, block)));
            if index == 0 {
                events.push(Sent::Event(Self::ping()));
            }
            let delta = |delta| Self::typed("content_block_delta", json!({"index": index, "delta": delta}));
            events.extend(deltas.into_iter().map(|d| Sent::Chunk(delta(d))));
            events.extend(closing.map(|d| Sent::Event(delta(d))));
            events.push(Sent::Event(Self::block_stop(index)));
        }
        let mut end = Vec::new();
        Self::push_stream_end(x, &mut end, a.tool_use(), a.output_tokens);
        events.extend(end.into_iter().map(Sent::Event));
        events
    }

    fn rich_body(&self, x: &Exchange, a: &Rich<'_>) -> String {
        let mut content: Vec<Value> = Vec::new();
        if let Some(reasoning) = a.reasoning {
            content.push(json!({"type": "thinking", "thinking": reasoning, "signature": Self::signature(x)}));
        }
        if !a.text_pieces.is_empty() {
            content.push(json!({"type": "text", "text": a.text}));
        }
        for (i, call) in a.calls.iter().enumerate() {
            content.push(json!({"type": "tool_use", "id": Self::tool_call_id(x, i), "name": call.name,
                "input": arguments_value(&call.arguments)}));
        }
        Self::message(x, Value::from(content), Self::stop_reason(x, a.tool_use()), a.output_tokens)
    }

    fn full_body(&self, x: &Exchange, text: &str, output_tokens: u64) -> String {
        let block = match &x.answer_tool {
            // The tool's input is the answer's JSON (kept as a string when it is not JSON).
            Some(name) => json!({"type": "tool_use", "id": Self::tool_call_id(x, 0), "name": name,
                "input": arguments_value(text)}),
            None => json!({"type": "text", "text": text}),
        };
        Self::message(x, json!([block]), Self::stop_reason(x, x.answer_tool.is_some()), output_tokens)
    }

    fn json_opening(&self, x: &Exchange) -> String {
        let (id, model) = (Value::from(Self::id(x)), Value::from(x.model.as_str()));
        format!(r#"{{"id":{id},"type":"message","role":"assistant","model":{model},"#)
    }

    fn text_opening(&self, x: &Exchange) -> String {
        let opening = self.json_opening(x);
        format!(r#"{opening}"content":[{{"type":"text","text":""#)
    }

    fn empty_answer(&self, x: &Exchange, shape: NotAnAnswer) -> NotAnAnswerBody {
        match shape {
            NotAnAnswer::DoneOnly => NotAnAnswerBody::Events(vec![self.opening(x), Self::message_stop()]),
            NotAnAnswer::EmptyChunk => NotAnAnswerBody::Events(vec![
                self.opening(x),
                Self::block_start(0, json!({"type": "text", "text": ""})),
                Self::block_stop(0),
                Self::message_stop(),
            ]),
            _ => NotAnAnswerBody::Json(Self::empty_message(x, 0).to_string()),
        }
    }

    /// Finished: `message_stop` (streamed), a `stop_reason` of `end_turn` (whole). An event whose
    /// name is not its data's `type` ends the reading unfinished.
    fn read_back(&self, body: &[u8]) -> (String, bool) {
        if is_whole(body) {
            let answer: Value = serde_json::from_slice(body).unwrap_or_default();
            let blocks = answer.get("content").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
            let text = blocks.iter().find(|block| block["type"] == "text").and_then(|block| block["text"].as_str());
            let text = text.unwrap_or_default();
            return (text.to_owned(), answer.get("stop_reason").and_then(Value::as_str) == Some("end_turn"));
        }
        let (mut text, mut stopped) = (String::new(), false);
        for (name, payload) in sse_events(body) {
            let data: Value = serde_json::from_str(payload).unwrap_or_default();
            if name.is_none() || name != data.get("type").and_then(Value::as_str) {
                return (text, false);
            }
            if let Some(piece) = data.pointer("/delta/text").and_then(Value::as_str) {
                text.push_str(piece);
            }
            stopped |= name == Some("message_stop");
        }
        (text, stopped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::render::fixture;

    #[test]
    fn it_reads_back_what_it_renders() {
        fixture::reads_back_what_it_renders(&Anthropic);
    }

    #[test]
    fn it_reads_the_system_the_messages_and_the_forced_tool() {
        let body = json!({"model": "m", "system": [{"type": "text", "text": "Be brief."}],
            "tool_choice": {"type": "tool", "name": "answer"}, "messages": [
            {"role": "user", "content": "Weather?"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {"city": "Paris"}}]},
        ]});
        let asked = Anthropic.read(Some(&body), Route::default());
        assert_eq!(asked.conversation.system, ["Be brief."]);
        assert_eq!(asked.conversation.texts, ["Weather?"]);
        assert_eq!(asked.conversation.tool_inputs, [r#"{"city":"Paris"}"#]);
        assert_eq!((asked.tool_choice, asked.schema.as_deref()), (ToolChoice::Tool("answer".into()), Some("answer")));
        assert!(!asked.stream);
        let choice =
            |choice: Value| Anthropic.read(Some(&json!({"tool_choice": choice})), Route::default()).tool_choice;
        assert_eq!(choice(json!({"type": "any"})), ToolChoice::Any { among: Vec::new() });
        assert_eq!(choice(json!({"type": "auto"})), ToolChoice::Auto);
        assert_eq!(choice(json!({"type": "tool"})), ToolChoice::Auto, "a forced tool without a name forces nothing");
    }
}
