//! The answers that look like a model's and are not: a 200 with no answer in it (the wire renders
//! its own empty answers), and heads a client must refuse. The server frames the answers; this
//! module knows only what they carry.

use serde_json::json;

use crate::http;
use crate::step::{BadHead, NotAnAnswer};
use crate::wire::NotAnAnswerBody;
use crate::wire::render::Exchange;

impl Exchange {
    /// The body of a 200 of `shape` (see [`NotAnAnswer`]): the same on every wire, or the wire's
    /// own empty answer.
    pub(crate) fn not_an_answer(&self, shape: NotAnAnswer) -> NotAnAnswerBody {
        let json = |value: serde_json::Value| NotAnAnswerBody::Json(value.to_string());
        match shape {
            NotAnAnswer::JsonObject => json(json!({})),
            NotAnAnswer::StatusOk => json(json!({"status": "ok"})),
            NotAnAnswer::JsonArray => json(json!([])),
            NotAnAnswer::ModelsList => json(json!({
                "object": "list",
                "data": [{"id": self.model, "object": "model", "owned_by": "chaos"}],
            })),
            NotAnAnswer::NoChoices | NotAnAnswer::DoneOnly | NotAnAnswer::EmptyChunk => {
                self.render.empty_answer(self, shape)
            }
        }
    }
}

/// The head of a `bad_head` step, `id` the answer's own headers (its request id header, if the
/// wire sends one, and its rate-limit headers); the connection closes after it.
pub(crate) fn bad_head(shape: BadHead, id: &[(&str, &str)]) -> Vec<u8> {
    let mut extra: Vec<(String, String)> = Vec::new();
    match shape {
        BadHead::ManyHeaders => {
            extra.extend((1..=BadHead::EXTRA_HEADERS).map(|n| (format!("x-chaos-{n}"), n.to_string())));
        }
        BadHead::HugeHeader => extra.push(("x-chaos-huge".to_owned(), "a".repeat(BadHead::HUGE_HEADER_BYTES))),
        BadHead::GarbageStatus => {}
    }
    let mut headers = vec![("content-type", "application/json"), ("content-length", "0")];
    headers.extend_from_slice(id);
    headers.extend(extra.iter().map(|(name, value)| (name.as_str(), value.as_str())));
    let head = http::head(200, &headers, false);
    match shape {
        BadHead::GarbageStatus => [b"HTTP/1.1 abc not-a-status", &head[b"HTTP/1.1 200 OK".len()..]].concat(),
        _ => head,
    }
}
