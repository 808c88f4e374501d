//! OpenAI-compatible chat completions: `POST /v1/chat/completions`.
//!
//! # Requests
//!
//! The model is the body's `model`, the stream flag its `stream`; a streamed answer carries its
//! usage chunk only when `stream_options.include_usage` is true. The key is read from
//! `authorization: Bearer ...` (then `x-api-key`, then Azure's `api-key`). The conversation is
//! `messages[]`: each `content` (a string or parts with `text`) and each
//! `tool_calls[].function.arguments`. The schema is `response_format.json_schema.name`.
//! `tool_choice` `{"type": "function", "function": {"name"}}` forces that tool, `"required"` one
//! of the tools (see [forced tool choice](crate#forced-tool-choice)): a text answer is then sent
//! as one call's `arguments`, in pieces (`delta.tool_calls[0]`, its first chunk with the id and
//! the name; whole: `message.tool_calls`), finished with `tool_calls`.
//!
//! # Answers
//!
//! A stream is `chat.completion.chunk`s: the first carries `role: assistant`, each text piece a
//! `delta.content`, the last a `finish_reason` (`stop`, `tool_calls`, or `length` when the step
//! is cut by the token limit), then the usage chunk (`choices: []`) when asked, then
//! `data: [DONE]`. Tool calls stream as `delta.tool_calls[]` (one chunk opening each call, then
//! chunks of its `arguments`). Ids: `chatcmpl-chaos{seq:012}`, `call_chaos{seq:06}_{i}`; the
//! request id header is `x-request-id`.
//!
//! # Errors
//!
//! The body is `{"error": {"message", "type", "param", "code"}}`; an in-stream error is the same
//! object as a `data:` line. By status:
//!
//! | status | `type` | `code` |
//! |---|---|---|
//! | 401 | `invalid_request_error` | `invalid_api_key` |
//! | 403 | `invalid_request_error` | |
//! | 404 | `invalid_request_error` | `model_not_found` |
//! | 429 | `requests` | `rate_limit_exceeded` |
//! | 503, 529 | `server_error` (overloaded) | |
//! | 504 | `server_error` (timed out) | |
//! | other 4xx | `invalid_request_error` | |
//! | 5xx | `server_error` | |
//!
//! `context_overflow` is `context_length_exceeded` with `param: "messages"`; `invalid_api_key`
//! the `invalid_api_key` code. Step options: `code` and `param` are rendered; `ping` of a
//! keep-alive flood is ignored (the SSE comment `: keep-alive` is sent).

use serde_json::{Value, json};

use super::render::{Exchange, Render, Rich, Sent};
use super::shared::{ErrorParts, data, is_whole, openai_tool_choice, read_content, sse_events, tool_names};
use super::{Asked, Names, NotAnAnswerBody, Route};
use crate::conversation::Conversation;
use crate::step::{NotAnAnswer, Preset};

/// The Chat Completions wire.
pub(crate) struct OpenAi;

const NAMES: Names = Names {
    label: "OpenAI",
    path: "/v1/chat/completions",
    base_path: "/v1",
    key_headers: &["authorization"],
    request_id_header: Some("x-request-id"),
    rate_limit_headers: Some(super::RateLimitHeaders::OpenAi),
};
const SERVER_ERROR: &str = "The server had an error while processing your request. Sorry about that!";
const OVERLOADED: &str = "The engine is currently overloaded, please try again later.";
/// The end of every stream.
const DONE: &str = "data: [DONE]\n\n";

impl OpenAi {
    fn id(x: &Exchange) -> String {
        format!("chatcmpl-chaos{:012}", x.seq)
    }

    fn tool_call_id(x: &Exchange, i: usize) -> String {
        format!("call_chaos{:06}_{i}", x.seq)
    }

    fn chunk_event(x: &Exchange, delta: Value, finish_reason: Option<&str>) -> String {
        let chunk = json!({
            "id": Self::id(x),
            "object": "chat.completion.chunk",
            "created": x.created,
            "model": x.model,
            "choices": [{
                "index": 0,
                "delta": delta,
                "logprobs": null,
                "finish_reason": finish_reason,
            }],
        });
        data(&chunk)
    }

    /// Why the answer stopped: the token limit cut it, it called a tool, or the turn ended.
    fn stop_reason(x: &Exchange, tool_use: bool) -> &'static str {
        match (x.cut_by_token_limit, tool_use) {
            (true, _) => "length",
            (false, true) => "tool_calls",
            (false, false) => "stop",
        }
    }

    /// The usage of an answer of `counted` output chunks.
    fn usage(x: &Exchange, counted: u64) -> Value {
        let output_tokens = x.output_tokens(counted);
        json!({
            "prompt_tokens": x.input_tokens,
            "completion_tokens": output_tokens,
            "total_tokens": x.input_tokens.saturating_add(output_tokens),
            "prompt_tokens_details": {"cached_tokens": x.usage.cache_read_input_tokens},
        })
    }

    /// The finish chunk, the usage chunk when asked, and `[DONE]`.
    fn push_stream_end(x: &Exchange, events: &mut Vec<String>, tool_use: bool, output_tokens: u64) {
        events.push(Self::chunk_event(x, json!({}), Some(Self::stop_reason(x, tool_use))));
        if x.usage_asked {
            let usage = json!({
                "id": Self::id(x),
                "object": "chat.completion.chunk",
                "created": x.created,
                "model": x.model,
                "choices": [],
                "usage": Self::usage(x, output_tokens),
            });
            events.push(data(&usage));
        }
        events.push(DONE.to_owned());
    }

    /// A whole `chat.completion` with `message` and its finish reason.
    fn completion(x: &Exchange, message: Value, finish_reason: &str, output_tokens: u64) -> String {
        json!({
            "id": Self::id(x),
            "object": "chat.completion",
            "created": x.created,
            "model": x.model,
            "choices": [{
                "index": 0,
                "message": message,
                "logprobs": null,
                "finish_reason": finish_reason,
            }],
            "usage": Self::usage(x, output_tokens),
        })
        .to_string()
    }
}

impl Render for OpenAi {
    fn names(&self) -> &'static Names {
        &NAMES
    }

    fn read<'a>(&self, body: Option<&'a Value>, _route: Route) -> Asked<'a> {
        let mut conversation = Conversation::default();
        let messages = body.and_then(|b| b.get("messages")).and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
        conversation.messages = messages.len();
        let mut texts = Vec::new();
        for message in messages {
            read_content(message.get("content"), &mut texts, &mut conversation);
            conversation.mark_opening(message.get("role").and_then(Value::as_str) == Some("user"), texts.len());
            let calls = message.get("tool_calls").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
            let arguments = calls.iter().filter_map(|call| call.pointer("/function/arguments").and_then(Value::as_str));
            conversation.tool_inputs.extend(arguments.map(Into::into));
        }
        conversation.texts = texts;
        let get = |pointer: &str| body.and_then(|b| b.pointer(pointer));
        Asked {
            model: get("/model").and_then(Value::as_str).map(str::to_owned),
            stream: get("/stream").and_then(Value::as_bool) == Some(true),
            usage_asked: get("/stream_options/include_usage").and_then(Value::as_bool) == Some(true),
            tool_choice: openai_tool_choice(get("/tool_choice"), "/function/name"),
            schema: get("/response_format/json_schema/name").and_then(Value::as_str).map(str::to_owned),
            tools: tool_names(body),
            max_tokens: get("/max_tokens").or_else(|| get("/max_completion_tokens")).and_then(Value::as_u64),
            conversation,
        }
    }

    fn error_parts(&self, status: u16, preset: Preset) -> ErrorParts {
        match preset {
            Preset::Generic => {
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
                    503 | 529 => ("server_error", OVERLOADED, None),
                    504 => ("server_error", "Request timed out.", None),
                    400..=499 => ("invalid_request_error", "Invalid request.", None),
                    _ => ("server_error", SERVER_ERROR, None),
                };
                ErrorParts::new(error_type, message, code)
            }
            Preset::ContextOverflow => ErrorParts {
                param: Some("messages".to_owned()),
                ..ErrorParts::new(
                    "invalid_request_error",
                    "This model's maximum context length is 128000 tokens. However, your messages \
                     resulted in 250000 tokens. Please reduce the length of the messages.",
                    Some("context_length_exceeded"),
                )
            },
            Preset::InvalidApiKey => ErrorParts::new(
                "invalid_request_error",
                "Incorrect API key provided: sk-****. You can find your API key at \
                 https://platform.openai.com/account/api-keys.",
                Some("invalid_api_key"),
            ),
        }
    }

    fn stream_error_parts(&self) -> ErrorParts {
        ErrorParts::new("server_error", SERVER_ERROR, None)
    }

    fn bare_error_parts(&self) -> ErrorParts {
        ErrorParts::new("invalid_request_error", "Incorrect API key provided: sk-****.", Some("invalid_api_key"))
    }

    fn error_body(&self, parts: &ErrorParts) -> Value {
        json!({
            "error": {
                "message": parts.message,
                "type": parts.error_type,
                "param": parts.param,
                "code": parts.code,
            }
        })
    }

    fn default_malformed(&self) -> &'static str {
        r#"{"id":"chatcmpl-chaos","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"#
    }

    /// The delta's `content` an object: neither a string nor a list of parts.
    fn default_unreadable(&self) -> &'static str {
        r#"{"id":"chatcmpl-chaos","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":{"value":"Hello"}}}]}"#
    }

    fn opening(&self, x: &Exchange) -> String {
        Self::chunk_event(x, json!({"role": "assistant"}), None)
    }

    fn preamble(&self, _x: &Exchange) -> Vec<String> {
        Vec::new()
    }

    /// A forced call's first chunk opens it (`delta.tool_calls[0]` with its id, type and name, and
    /// the first piece of its arguments), the next carry the rest of its `arguments`.
    fn chunk(&self, x: &Exchange, i: usize, text: &str) -> String {
        let delta = match (&x.answer_tool, i) {
            (Some(name), 0) => json!({"role": "assistant", "content": null, "tool_calls": [{"index": 0,
                "id": Self::tool_call_id(x, 0), "type": "function", "function": {"name": name, "arguments": text}}]}),
            (Some(_), _) => json!({"tool_calls": [{"index": 0, "function": {"arguments": text}}]}),
            (None, 0) => json!({"role": "assistant", "content": text}),
            (None, _) => json!({"content": text}),
        };
        Self::chunk_event(x, delta, None)
    }

    fn epilogue(&self, x: &Exchange, _text: &str, output_tokens: u64) -> Vec<String> {
        let mut events = Vec::new();
        Self::push_stream_end(x, &mut events, x.answer_tool.is_some(), output_tokens);
        events
    }

    fn error_event(&self, _x: &Exchange, parts: &ErrorParts) -> String {
        data(&self.error_body(parts))
    }

    fn malformed(&self, payload: &str) -> String {
        data(&payload)
    }

    /// The reasoning's pieces (`delta.reasoning_content`), the text's (`delta.content`), then each
    /// call as a chunk that opens it and chunks of its arguments; the first chunk of the answer
    /// carries the assistant's role.
    fn rich_events(&self, x: &Exchange, a: &Rich<'_>) -> Vec<Sent> {
        let mut events = Vec::new();
        let mut first = true;
        // The first chunk carries the role, and `content: null` unless it is text.
        let mut chunk = |mut delta: Value| {
            if std::mem::take(&mut first) {
                delta["role"] = json!("assistant");
                if delta.get("content").is_none() {
                    delta["content"] = Value::Null;
                }
            }
            Self::chunk_event(x, delta, None)
        };
        for piece in &a.reasoning_pieces {
            events.push(Sent::Chunk(chunk(json!({"reasoning_content": piece}))));
        }
        for piece in &a.text_pieces {
            events.push(Sent::Chunk(chunk(json!({"content": piece}))));
        }
        for (i, call) in a.calls.iter().enumerate() {
            let opening = json!({"index": i, "id": Self::tool_call_id(x, i), "type": "function",
                "function": {"name": call.name, "arguments": ""}});
            events.push(Sent::Event(chunk(json!({"tool_calls": [opening]}))));
            for piece in &call.pieces {
                let delta = json!({"tool_calls": [{"index": i, "function": {"arguments": piece}}]});
                events.push(Sent::Chunk(chunk(delta)));
            }
        }
        let mut end = Vec::new();
        Self::push_stream_end(x, &mut end, a.tool_use(), a.output_tokens);
        events.extend(end.into_iter().map(Sent::Event));
        events
    }

    fn rich_body(&self, x: &Exchange, a: &Rich<'_>) -> String {
        let mut message = json!({"role": "assistant", "content": null, "refusal": null});
        if !a.text.is_empty() || !a.tool_use() {
            message["content"] = json!(a.text);
        }
        if let Some(reasoning) = a.reasoning {
            message["reasoning_content"] = json!(reasoning);
        }
        if a.tool_use() {
            let calls: Vec<Value> = a
                .calls
                .iter()
                .enumerate()
                .map(|(i, call)| {
                    json!({"id": Self::tool_call_id(x, i), "type": "function",
                        "function": {"name": call.name, "arguments": call.arguments}})
                })
                .collect();
            message["tool_calls"] = Value::from(calls);
        }
        Self::completion(x, message, Self::stop_reason(x, a.tool_use()), a.output_tokens)
    }

    fn full_body(&self, x: &Exchange, text: &str, output_tokens: u64) -> String {
        let message = match &x.answer_tool {
            Some(name) => json!({"role": "assistant", "content": null, "refusal": null, "tool_calls": [{
                "id": Self::tool_call_id(x, 0), "type": "function", "function": {"name": name, "arguments": text}}]}),
            None => json!({"role": "assistant", "content": text, "refusal": null}),
        };
        Self::completion(x, message, Self::stop_reason(x, x.answer_tool.is_some()), output_tokens)
    }

    fn json_opening(&self, x: &Exchange) -> String {
        let (id, model) = (Value::from(Self::id(x)), Value::from(x.model.as_str()));
        format!(r#"{{"id":{id},"object":"chat.completion","created":{},"model":{model},"#, x.created)
    }

    fn text_opening(&self, x: &Exchange) -> String {
        let opening = self.json_opening(x);
        format!(r#"{opening}"choices":[{{"index":0,"message":{{"role":"assistant","content":""#)
    }

    fn empty_answer(&self, x: &Exchange, shape: NotAnAnswer) -> NotAnAnswerBody {
        match shape {
            NotAnAnswer::DoneOnly => NotAnAnswerBody::Events(vec![DONE.to_owned()]),
            NotAnAnswer::EmptyChunk => NotAnAnswerBody::Events(vec![self.opening(x), DONE.to_owned()]),
            _ => NotAnAnswerBody::Json(
                json!({
                    "id": Self::id(x),
                    "object": "chat.completion",
                    "created": x.created,
                    "model": x.model,
                    "choices": [],
                })
                .to_string(),
            ),
        }
    }

    /// Finished: a `finish_reason` of `stop` (and, streamed, `[DONE]` after it).
    fn read_back(&self, body: &[u8]) -> (String, bool) {
        if is_whole(body) {
            let answer: Value = serde_json::from_slice(body).unwrap_or_default();
            let text = answer.pointer("/choices/0/message/content").and_then(Value::as_str).unwrap_or_default();
            let stopped = answer.pointer("/choices/0/finish_reason").and_then(Value::as_str) == Some("stop");
            return (text.to_owned(), stopped);
        }
        let (mut text, mut stopped, mut done) = (String::new(), false, false);
        for (_, payload) in sse_events(body) {
            if payload == "[DONE]" {
                done = true;
                continue;
            }
            let chunk: Value = serde_json::from_str(payload).unwrap_or_default();
            if let Some(content) = chunk.pointer("/choices/0/delta/content").and_then(Value::as_str) {
                text.push_str(content);
            }
            if chunk.pointer("/choices/0/finish_reason").and_then(Value::as_str) == Some("stop") {
                stopped = true;
            }
        }
        (text, stopped && done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forced::ToolChoice;
    use crate::wire::render::fixture;

    #[test]
    fn it_reads_back_what_it_renders() {
        fixture::reads_back_what_it_renders(&OpenAi);
    }

    #[test]
    fn it_reads_the_conversation_of_messages_and_tool_calls() {
        let body = json!({"model": "m", "stream": true, "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": "Weather?"}]},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "{}"}}]},
        ]});
        let asked = OpenAi.read(Some(&body), Route::default());
        assert_eq!(asked.conversation.messages, 3);
        assert_eq!(asked.conversation.texts, ["Be brief.", "Weather?"]);
        assert_eq!(asked.conversation.tool_inputs, ["{}"]);
        assert!(asked.stream && !asked.usage_asked);
        assert_eq!(asked.model.as_deref(), Some("m"));
    }

    #[test]
    fn it_reads_the_tool_choice() {
        let choice = |choice: Value| OpenAi.read(Some(&json!({"tool_choice": choice})), Route::default()).tool_choice;
        assert_eq!(choice(json!("required")), ToolChoice::Any { among: Vec::new() });
        assert_eq!(choice(json!({"type": "function", "function": {"name": "f"}})), ToolChoice::Tool("f".into()));
        assert_eq!(choice(json!("auto")), ToolChoice::Auto);
        assert_eq!(choice(json!("none")), ToolChoice::Auto);
    }
}
