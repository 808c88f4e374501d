//! The Messages stream, read: its events until `message_stop` (the answer tool's blocks as the
//! answer's text, the usage merged from `message_start` and each `message_delta`), a whole message
//! from a server that ignored streaming, and the stop reasons Anthropic documents.

use serde::Deserialize;
use serde_json::Value;

use super::super::super::http::{self, DecodeError, Decoder, ErrorFacts, Out};
use super::super::super::sse::SseEvent;
use super::super::finish;
use crate::message::StopReason;
use crate::message::usage::Usage;

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Event {
    /// Read as any JSON: a message of an unexpected shape reports no model or usage, and the
    /// call goes on.
    MessageStart {
        #[serde(default)]
        message: Value,
    },
    ContentBlockStart {
        index: u32,
        content_block: Block,
    },
    ContentBlockDelta {
        index: u32,
        delta: Delta,
    },
    MessageDelta {
        delta: MessageDeltaBody,
        #[serde(default)]
        usage: Value,
    },
    MessageStop,
    Error {
        #[serde(default)]
        error: Value,
    },
    /// `content_block_stop`, `ping`, and any event type added later.
    #[serde(other)]
    Ignored,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
    },
    /// A thinking block, whose start may carry the first of its text.
    Thinking {
        #[serde(default)]
        thinking: String,
    },
    /// `redacted_thinking` (encrypted: nothing to show), `server_tool_use` and the others.
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(tag = "type")]
enum Delta {
    #[serde(rename = "text_delta")]
    Text { text: String },
    #[serde(rename = "input_json_delta")]
    InputJson { partial_json: String },
    /// The reasoning of a thinking block: shown, never the answer.
    #[serde(rename = "thinking_delta")]
    Thinking { thinking: String },
    /// `signature_delta`, `citations_delta` and the others.
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct MessageDeltaBody {
    #[serde(default)]
    stop_reason: Option<String>,
}

/// The Messages stream: events until `message_stop`.
#[derive(Debug, Default)]
pub(crate) struct AnthropicDecoder {
    /// The `stop_reason` of the `message_delta`, once sent.
    stop_reason: Option<StopReason>,
    /// A `tool_use` block of a tool other than the answer tool was started.
    tool_use: bool,
    /// The tool forced to carry the answer, for a request with a schema.
    answer_tool: Option<String>,
    /// The indices of the answer tool's blocks: their input is the answer's text.
    answer_blocks: Vec<u32>,
    /// The usage so far: `message_start`'s, with the counts of each `message_delta` in place.
    usage: Option<Usage>,
}

impl AnthropicDecoder {
    /// A wire for a request whose answer comes as the input of the tool `answer_tool`, when there is
    /// one (a request with a schema): that tool's blocks become the answer's text, and the
    /// `tool_use` stop of such an answer a plain stop.
    pub(crate) fn answering(answer_tool: Option<&str>) -> Self {
        Self { answer_tool: answer_tool.map(str::to_owned), ..Self::default() }
    }

    /// Whether a `tool_use` block of tool `name` carries the answer.
    fn is_answer(&self, name: &str) -> bool {
        self.answer_tool.as_deref() == Some(name)
    }

    /// The stop reason: the `message_delta`'s, else the end of a turn or of a tool call. The
    /// answer tool's `tool_use` stop is the answer's end, unless another tool was called too.
    fn stop(&self, sent: Option<StopReason>) -> StopReason {
        match sent {
            Some(StopReason::ToolUse) if !self.tool_use && !self.answer_blocks.is_empty() => StopReason::Stop,
            Some(reason) => reason,
            None if self.tool_use => StopReason::ToolUse,
            None => StopReason::Stop,
        }
    }

    /// Merges the counts `usage` has into the call's usage and sends the result; a usage with none
    /// of the four counts (or not an object) changes nothing.
    fn usage(&mut self, usage: &Value, out: &mut Out<'_>) {
        let count = |key| http::tokens(usage, key);
        let counts = [
            count("input_tokens"),
            count("output_tokens"),
            count("cache_read_input_tokens"),
            count("cache_creation_input_tokens"),
        ];
        if counts.iter().all(Option::is_none) {
            return;
        }
        let merged = self.usage.get_or_insert_default();
        let [input, output, cache_read, cache_creation] = counts;
        merged.input_tokens = input.unwrap_or(merged.input_tokens);
        merged.output_tokens = output.unwrap_or(merged.output_tokens);
        merged.cache_read_input_tokens = cache_read.unwrap_or(merged.cache_read_input_tokens);
        merged.cache_creation_input_tokens = cache_creation.unwrap_or(merged.cache_creation_input_tokens);
        out.usage(*merged);
    }
}

/// The answering model of a message (`message_start`'s, or a whole answer's).
fn model(message: &Value, out: &mut Out<'_>) {
    if let Some(model) = message.get("model").and_then(Value::as_str) {
        out.model(model);
    }
}

/// One event, parsed once from its text when its data names its `type` (as the API's always do);
/// else the SSE `event:` field stands in for it, at the cost of a second pass over a `Value`.
fn parse(event: &SseEvent) -> Result<Event, DecodeError> {
    let data = event.data.trim();
    if let Ok(parsed) = serde_json::from_str::<Event>(data) {
        return Ok(parsed);
    }
    let mut value: Value = serde_json::from_str(data)?;
    if let Value::Object(object) = &mut value {
        if !object.contains_key("type") && !event.event.is_empty() {
            object.insert("type".to_owned(), Value::String(event.event.clone()));
        }
    }
    http::read(&value)
}

impl Decoder for AnthropicDecoder {
    const ANSWER: &'static str = "a message (an object with `\"type\": \"message\"` and `content`)";

    fn event(&mut self, event: &SseEvent, out: &mut Out<'_>) -> Result<(), DecodeError> {
        let parsed = parse(event)?;
        let before = out.mark();
        // The answer's closing events say nothing about a model still thinking.
        let closing = matches!(parsed, Event::MessageDelta { .. } | Event::MessageStop | Event::Error { .. });
        match parsed {
            Event::MessageStart { message } => {
                model(&message, out);
                if let Some(usage) = message.get("usage") {
                    self.usage(usage, out);
                }
            }
            Event::ContentBlockStart { index, content_block } => match content_block {
                Block::Text { text } => out.text(text),
                Block::ToolUse { name, .. } if self.is_answer(&name) => self.answer_blocks.push(index),
                Block::ToolUse { id, name } => {
                    self.tool_use = true;
                    out.tool_start(index, id, name);
                }
                Block::Thinking { thinking } => out.reasoning(thinking),
                Block::Other => {}
            },
            Event::ContentBlockDelta { index, delta } => match delta {
                Delta::Text { text } => out.text(text),
                Delta::InputJson { partial_json } if self.answer_blocks.contains(&index) => out.text(partial_json),
                Delta::InputJson { partial_json } => out.tool_args(index, partial_json),
                Delta::Thinking { thinking } => out.reasoning(thinking),
                Delta::Other => {}
            },
            Event::MessageDelta { delta, usage } => {
                self.usage(&usage, out);
                if let Some(reason) = delta.stop_reason {
                    match stop_reason(&reason) {
                        Some(Stop::Ends(stop)) => self.stop_reason = Some(stop),
                        Some(Stop::Refused) => out.error(finish::filtered(&format!("`stop_reason` {reason:?}"))),
                        None => return Err(finish::unknown("stop_reason", &reason)),
                    }
                }
            }
            Event::MessageStop => out.done(self.stop(self.stop_reason)),
            Event::Error { error } => out.error(ErrorFacts::from_error(&error).unwrap_or_default()),
            Event::Ignored => {}
        }
        // The API pings while the model thinks: every event without content proves the call alive
        // (reasoning does so itself).
        if !closing && !out.alive_since(before) {
            out.heartbeat();
        }
        Ok(())
    }

    fn whole(&mut self, answer: &Value, out: &mut Out<'_>) -> Result<(), DecodeError> {
        let message: WholeMessage = http::read(answer)?;
        model(answer, out);
        for (index, block) in (0u32..).zip(message.content) {
            match block {
                WholeBlock::Text { text } => out.text(text),
                WholeBlock::ToolUse { name, input, .. } if self.is_answer(&name) => {
                    self.answer_blocks.push(index);
                    out.text(input.to_string());
                }
                WholeBlock::ToolUse { id, name, input } => {
                    self.tool_use = true;
                    out.tool_start(index, id, name);
                    if !input.is_null() {
                        out.tool_args(index, input.to_string());
                    }
                }
                WholeBlock::Thinking { thinking } => out.reasoning(thinking),
                WholeBlock::Other => {}
            }
        }
        self.usage(&message.usage, out);
        if let Some(reason) = message.stop_reason {
            match stop_reason(&reason) {
                Some(Stop::Ends(stop)) => self.stop_reason = Some(stop),
                Some(Stop::Refused) => {
                    out.error(finish::filtered(&format!("`stop_reason` {reason:?}")));
                    return Ok(());
                }
                None => return Err(finish::unknown("stop_reason", &reason)),
            }
        }
        out.done(self.stop(self.stop_reason));
        Ok(())
    }

    fn is_answer(answer: &Value) -> bool {
        answer.get("type").and_then(Value::as_str) == Some("message")
            || answer.get("content").is_some_and(Value::is_array)
    }

    fn finished(&self) -> bool {
        self.stop_reason.is_some()
    }
}

/// A whole message (not streamed).
#[derive(Deserialize)]
struct WholeMessage {
    #[serde(default)]
    content: Vec<WholeBlock>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: Value,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WholeBlock {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Value,
    },
    Thinking {
        #[serde(default)]
        thinking: String,
    },
    #[serde(other)]
    Other,
}

/// What a `stop_reason` says of the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stop {
    /// It is complete, cut, or asks for tools.
    Ends(StopReason),
    /// The API's classifiers refused it (`refusal`): the same request is refused again.
    Refused,
}

/// The `stop_reason`s Anthropic documents; `None` for any other, which is no answer (whether it
/// is complete cannot be told). `pause_turn` (a server tool's long turn, paused) ends the answer
/// as it stands: this crate offers no server tools to resume.
pub(super) fn stop_reason(reason: &str) -> Option<Stop> {
    Some(match reason {
        "end_turn" | "stop_sequence" | "pause_turn" => Stop::Ends(StopReason::Stop),
        "max_tokens" | "model_context_window_exceeded" => Stop::Ends(StopReason::Length),
        "tool_use" => Stop::Ends(StopReason::ToolUse),
        "refusal" => Stop::Refused,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::error::ModelError;
    use crate::provider::StreamEvent;

    /// A `refusal` is the classifiers' stop, not the model's: a permanent `ContentFilterError`, as
    /// on the other wires; a stop reason Anthropic does not document is no answer.
    #[test]
    fn a_refusal_fails_and_an_unknown_stop_reason_is_no_answer() {
        let with = |reason: &str| {
            replay(&[
                json!({"type": "message_start", "message": {"model": "claude", "usage": {"input_tokens": 5}}}),
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Sure, here"}}),
                json!({"type": "message_delta", "delta": {"stop_reason": reason}, "usage": {"output_tokens": 3}}),
                json!({"type": "message_stop"}),
            ])
        };
        let events = with("refusal");
        let Some(Ok(StreamEvent::Error { message, error: Some(error) })) = events.last() else { panic!("{events:?}") };
        assert_eq!(
            (error.kind(), error.status(), error.code()),
            ("ContentFilterError", Some(400), Some("content_filter"))
        );
        assert!(message.contains("(`stop_reason` \"refusal\")"), "{message}");
        // The usage of the refused call is still reported, before the error.
        assert_eq!(usages(&events).last(), Some(&Usage::new(5, 3)));
        let events = with("sleepy");
        let Some(Err(error)) = events.last() else { panic!("{events:?}") };
        assert!(
            error.message().contains("`stop_reason` \"sleepy\" is not a finish reason this client knows"),
            "{error}"
        );
        let whole = json!({"type": "message", "content": [{"type": "text", "text": "no"}], "stop_reason": "refusal"});
        let events = http::replay(AnthropicDecoder::default(), &[whole.to_string().as_bytes()], true, None);
        assert!(
            matches!(events.last(), Some(Ok(StreamEvent::Error { error: Some(error), .. })) if error.kind() == "ContentFilterError"),
            "{events:?}"
        );
    }

    /// The events of a streamed body made of `events`, each named by its `type`.
    fn replay(events: &[Value]) -> Vec<Result<StreamEvent, ModelError>> {
        let body: String =
            events.iter().map(|data| format!("event: {}\ndata: {data}\n\n", data["type"].as_str().unwrap())).collect();
        http::replay(AnthropicDecoder::default(), &[body.as_bytes()], false, None)
    }

    fn usages(events: &[Result<StreamEvent, ModelError>]) -> Vec<Usage> {
        events
            .iter()
            .filter_map(|event| match event {
                Ok(StreamEvent::Usage(usage)) => Some(*usage),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn message_start_reports_the_model_and_message_delta_merges_the_usage() {
        let events = replay(&[
            json!({"type": "message_start", "message": {"model": "claude-x-1", "content": [], "usage":
                {"input_tokens": 20, "output_tokens": 1, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 5}}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}}),
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 12}}),
            json!({"type": "message_delta", "delta": {}, "usage": {"input_tokens": 21, "cache_read_input_tokens": null}}),
            json!({"type": "message_stop"}),
        ]);
        let start = Usage::new(20, 1).with_cache_read(100).with_cache_creation(5);
        assert_eq!(
            events,
            [
                Ok(StreamEvent::Model("claude-x-1".into())),
                Ok(StreamEvent::Usage(start)),
                // Every event without content proves the call alive.
                Ok(StreamEvent::Heartbeat),
                Ok(StreamEvent::TextDelta("Hi".into())),
                Ok(StreamEvent::Usage(Usage::new(20, 12).with_cache_read(100).with_cache_creation(5))),
                Ok(StreamEvent::Usage(Usage::new(21, 12).with_cache_read(100).with_cache_creation(5))),
                Ok(StreamEvent::Done { stop_reason: StopReason::Stop }),
            ]
        );
    }

    #[test]
    fn missing_and_malformed_usage_is_left_out() {
        let stop = json!({"type": "message_stop"});
        let end_turn = json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}});
        for message in [
            json!(null),
            json!(5),
            json!({}),
            json!({"model": 3, "usage": "lots"}),
            json!({"usage": {"input_tokens": -2}}),
        ] {
            let events =
                replay(&[json!({"type": "message_start", "message": message}), end_turn.clone(), stop.clone()]);
            let done = Ok(StreamEvent::Done { stop_reason: StopReason::Stop });
            assert_eq!(events, [Ok(StreamEvent::Heartbeat), done], "{message}");
        }
        let no_start = replay(&[
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 3}}),
            json!({"type": "message_delta", "delta": {}, "usage": null}),
            stop,
        ]);
        assert_eq!(usages(&no_start), [Usage::new(0, 3)]);
    }

    #[test]
    fn a_whole_message_reports_its_model_and_usage() {
        let answer = json!({"model": "claude-x-1", "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
            "usage": {"input_tokens": 4, "output_tokens": 1, "cache_read_input_tokens": 2}});
        let events = http::replay(AnthropicDecoder::default(), &[answer.to_string().as_bytes()], true, None);
        assert_eq!(
            events,
            [
                Ok(StreamEvent::Model("claude-x-1".into())),
                Ok(StreamEvent::TextDelta("ok".into())),
                Ok(StreamEvent::Usage(Usage::new(4, 1).with_cache_read(2))),
                Ok(StreamEvent::Done { stop_reason: StopReason::Stop }),
            ]
        );
    }

    /// The data's own `type` is read in one pass; without one, the SSE event name stands in; a
    /// repeated `message_start` reports the model once.
    #[test]
    fn events_are_typed_by_their_data_or_their_sse_name_and_the_model_is_reported_once() {
        let start = r#"{"type":"message_start","message":{"model":"claude-x-1"}}"#;
        let body = format!(
            "event: message_start\ndata: {start}\n\nevent: message_start\ndata: {start}\n\n\
             event: content_block_delta\ndata: {{\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"Hi\"}}}}\n\n\
             event: ping\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"!\"}}}}\n\n\
             data: {{\"type\":\"message_stop\"}}\n\n"
        );
        assert_eq!(
            http::replay(AnthropicDecoder::default(), &[body.as_bytes()], false, None),
            [
                Ok(StreamEvent::Model("claude-x-1".into())),
                Ok(StreamEvent::Heartbeat),
                Ok(StreamEvent::Heartbeat),
                Ok(StreamEvent::TextDelta("Hi".into())),
                // The data's `type` wins over the SSE name.
                Ok(StreamEvent::TextDelta("!".into())),
                Ok(StreamEvent::Done { stop_reason: StopReason::Stop }),
            ]
        );
    }

    /// A thinking block's text is reasoning (a heartbeat for the clocks, so no other is added),
    /// never the answer; its signature and a redacted block show nothing but prove the call alive.
    #[test]
    fn thinking_deltas_are_reasoning_and_never_the_answer() {
        let events = replay(&[
            json!({"type": "message_start", "message": {"model": "claude", "content": []}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Let me"}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": " add."}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "EqQB"}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "redacted_thinking", "data": "EmwK"}}),
            json!({"type": "content_block_start", "index": 2, "content_block": {"type": "text", "text": ""}}),
            json!({"type": "content_block_delta", "index": 2, "delta": {"type": "text_delta", "text": "4"}}),
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}}),
            json!({"type": "message_stop"}),
        ]);
        assert_eq!(
            events,
            [
                Ok(StreamEvent::Model("claude".into())),
                Ok(StreamEvent::Heartbeat),
                // The thinking block's start, empty.
                Ok(StreamEvent::Heartbeat),
                Ok(StreamEvent::ReasoningDelta("Let me".into())),
                Ok(StreamEvent::ReasoningDelta(" add.".into())),
                // The signature, the block's stop, the redacted block, the text block's start.
                Ok(StreamEvent::Heartbeat),
                Ok(StreamEvent::Heartbeat),
                Ok(StreamEvent::Heartbeat),
                Ok(StreamEvent::Heartbeat),
                Ok(StreamEvent::TextDelta("4".into())),
                Ok(StreamEvent::Done { stop_reason: StopReason::Stop }),
            ]
        );
        let whole = json!({"type": "message", "content": [{"type": "thinking", "thinking": "2+2", "signature": "s"},
            {"type": "redacted_thinking", "data": "x"}, {"type": "text", "text": "4"}], "stop_reason": "end_turn"});
        let events = http::replay(AnthropicDecoder::default(), &[whole.to_string().as_bytes()], true, None);
        assert_eq!(
            events,
            [
                Ok(StreamEvent::ReasoningDelta("2+2".into())),
                Ok(StreamEvent::TextDelta("4".into())),
                Ok(StreamEvent::Done { stop_reason: StopReason::Stop }),
            ]
        );
    }

    #[test]
    fn an_overloaded_error_event_is_typed_and_retryable() {
        let body = "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
        let out = http::replay(AnthropicDecoder::default(), &[body.as_bytes()], false, None);
        let [Ok(StreamEvent::Error { message, error: Some(error) })] = out.as_slice() else { panic!("{out:?}") };
        assert_eq!(message, "Overloaded");
        assert_eq!(
            (error.kind(), error.code(), error.status()),
            ("OverloadedError", Some("overloaded_error"), Some(529))
        );
        let verdict = crate::classify::session_verdict(StopReason::Error, message, Some(error));
        assert!(verdict.retryable, "{verdict}");
        let empty = crate::classify::session_verdict(StopReason::Error, "", Some(error));
        assert!(empty.retryable, "{empty}");
    }
}
