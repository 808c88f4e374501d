//! The answers that look like a model's and are not, in each wire format: a 200 with no answer in
//! it, a provider's JSON error sent bare on an event stream, and heads a client must refuse. The
//! server frames the answers; this module knows only what they carry.

use serde_json::json;

use crate::http;
use crate::step::{BadHead, NotAnAnswer};
use crate::wire::{Exchange, WireFormat};

/// What a `not_an_answer` step sends: one JSON body, or the events of a stream that ends cleanly.
pub(crate) enum NotAnAnswerBody {
    Json(String),
    Events(Vec<String>),
}

impl Exchange {
    /// The body of a 200 of `shape` (see [`NotAnAnswer`]).
    pub(crate) fn not_an_answer(&self, shape: NotAnAnswer) -> NotAnAnswerBody {
        let json = |value: serde_json::Value| NotAnAnswerBody::Json(value.to_string());
        match (shape, self.wire) {
            (NotAnAnswer::JsonObject, _) => json(json!({})),
            (NotAnAnswer::StatusOk, _) => json(json!({"status": "ok"})),
            (NotAnAnswer::JsonArray, _) => json(json!([])),
            (NotAnAnswer::NoChoices, WireFormat::OpenAi) => json(json!({
                "id": self.id(),
                "object": "chat.completion",
                "created": self.created,
                "model": self.model,
                "choices": [],
            })),
            (NotAnAnswer::NoChoices, WireFormat::Anthropic) => json(self.anthropic_empty_message(0)),
            (NotAnAnswer::ModelsList, _) => json(json!({
                "object": "list",
                "data": [{"id": self.model, "object": "model", "owned_by": "chaos"}],
            })),
            (NotAnAnswer::DoneOnly, WireFormat::OpenAi) => NotAnAnswerBody::Events(vec![DONE.to_owned()]),
            (NotAnAnswer::DoneOnly, WireFormat::Anthropic) => {
                NotAnAnswerBody::Events(vec![self.opening(), message_stop()])
            }
            (NotAnAnswer::EmptyChunk, WireFormat::OpenAi) => {
                NotAnAnswerBody::Events(vec![self.opening(), DONE.to_owned()])
            }
            (NotAnAnswer::EmptyChunk, WireFormat::Anthropic) => NotAnAnswerBody::Events(vec![
                self.opening(),
                Exchange::anthropic_event(
                    "content_block_start",
                    &json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
                ),
                Exchange::anthropic_event("content_block_stop", &json!({"type": "content_block_stop", "index": 0})),
                message_stop(),
            ]),
        }
    }
}

/// OpenAI's end of stream.
const DONE: &str = "data: [DONE]\n\n";

/// Anthropic's end of stream.
fn message_stop() -> String {
    Exchange::anthropic_event("message_stop", &json!({"type": "message_stop"}))
}

/// The head of a `bad_head` step, `id` its request id header; the connection closes after it.
pub(crate) fn bad_head(shape: BadHead, id: (&str, &str)) -> Vec<u8> {
    let mut extra: Vec<(String, String)> = Vec::new();
    match shape {
        BadHead::ManyHeaders => {
            extra.extend((1..=BadHead::EXTRA_HEADERS).map(|n| (format!("x-chaos-{n}"), n.to_string())));
        }
        BadHead::HugeHeader => extra.push(("x-chaos-huge".to_owned(), "a".repeat(BadHead::HUGE_HEADER_BYTES))),
        BadHead::GarbageStatus => {}
    }
    let mut headers = vec![("content-type", "application/json"), ("content-length", "0"), id];
    headers.extend(extra.iter().map(|(name, value)| (name.as_str(), value.as_str())));
    let head = http::head(200, &headers, false);
    match shape {
        BadHead::GarbageStatus => [b"HTTP/1.1 abc not-a-status", &head[b"HTTP/1.1 200 OK".len()..]].concat(),
        _ => head,
    }
}
