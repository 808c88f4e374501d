//! A server's event stream (`text/event-stream`), read into the events rmcp's transport takes, each
//! within the bound of one message ([`MCP_MAX_MESSAGE_BYTES`]) or replaced by its stand-in (see
//! `bound.rs`).
//!
//! The format is the WHATWG one: lines end with `\n`, `\r\n` or `\r`; `data:` lines join with `\n`;
//! `event:`, `id:` and `retry:` set the event's fields; a blank line ends the event; `:` starts a
//! comment. An event's data past the bound is scanned as it is dropped ([`Scan`]): if it answers a
//! request, that request gets an error answer saying why.

use std::collections::VecDeque;

use futures_util::StreamExt as _;
use futures_util::stream::BoxStream;
use reqwest_013 as reqwest;
use rmcp::transport::streamable_http_client::SseError;
use sse_stream::Sse;

use crate::bound::{Dropped, MCP_MAX_MESSAGE_BYTES, screen};
use crate::http_error::HttpError;
use crate::scan::Scan;

/// The longest value of an `event:`, `id:` or `retry:` line kept: 1 KiB; the rest is ignored.
const FIELD_BYTES: usize = 1024;

/// The longest field name read: the names are `data`, `event`, `id`, `retry`.
const NAME_BYTES: usize = 8;

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// The value of an `event:`, `id:` or `retry:` line so far, and how much more of it is kept.
fn field_value(value: &mut Option<Vec<u8>>) -> (&mut Vec<u8>, usize) {
    let value = value.get_or_insert_with(Vec::new);
    let room = FIELD_BYTES.saturating_sub(value.len());
    (value, room)
}

/// The events of `response`'s body; `server` names the server in the warning of an event dropped
/// with no request to tell.
pub(crate) fn events(response: reqwest::Response, server: String) -> BoxStream<'static, Result<Sse, SseError>> {
    let reading = Reading { response: Some(response), parser: Parser::new(server) };
    futures_util::stream::unfold(reading, |mut reading| async move {
        let next = reading.next().await?;
        Some((next, reading))
    })
    .boxed()
}

struct Reading {
    /// `None` once the body ended or failed.
    response: Option<reqwest::Response>,
    parser: Parser,
}

impl Reading {
    async fn next(&mut self) -> Option<Result<Sse, SseError>> {
        loop {
            if let Some(event) = self.parser.ready.pop_front() {
                return Some(event);
            }
            let response = self.response.as_mut()?;
            match response.chunk().await {
                Ok(Some(chunk)) => self.parser.feed(&chunk),
                Ok(None) => {
                    self.response = None;
                    return None;
                }
                Err(error) => {
                    self.response = None;
                    return Some(Err(SseError::Body(Box::new(HttpError::from(error)))));
                }
            }
        }
    }
}

/// The field a line sets, known once its name is read.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Field {
    Data,
    Event,
    Id,
    Retry,
    /// A comment, or a name the format does not have: ignored.
    Ignored,
}

/// The event being read: its fields, its data kept or (past the bound) scanned.
#[derive(Default)]
struct Event {
    data: Option<Vec<u8>>,
    scan: Option<Scan>,
    event: Option<Vec<u8>>,
    id: Option<Vec<u8>>,
    retry: Option<Vec<u8>>,
    /// A field line was seen (an event of comments alone is no event).
    any: bool,
}

struct Parser {
    server: String,
    /// The name of the line being read, until its `:` (a few bytes: longer names are no field's).
    name: Vec<u8>,
    /// The line's field, once its `:` is read.
    field: Option<Field>,
    /// The line's first value byte is next (a space there is dropped).
    value_starts: bool,
    /// The last byte was `\r`: a `\n` next is the same line ending.
    after_cr: bool,
    /// The first line is being read (a byte order mark may begin it).
    first_line: bool,
    event: Event,
    ready: VecDeque<Result<Sse, SseError>>,
}

impl Parser {
    fn new(server: String) -> Self {
        Self {
            server,
            name: Vec::new(),
            field: None,
            value_starts: false,
            after_cr: false,
            first_line: true,
            event: Event::default(),
            ready: VecDeque::new(),
        }
    }

    fn feed(&mut self, mut bytes: &[u8]) {
        while let Some(&first) = bytes.first() {
            if std::mem::take(&mut self.after_cr) && first == b'\n' {
                bytes = &bytes[1..];
                continue;
            }
            let end = bytes.iter().position(|byte| matches!(byte, b'\n' | b'\r'));
            let (part, rest) = bytes.split_at(end.unwrap_or(bytes.len()));
            self.line_part(part);
            match rest.first() {
                Some(ending) => {
                    self.after_cr = *ending == b'\r';
                    self.line_end();
                    bytes = &rest[1..];
                }
                None => bytes = rest,
            }
        }
    }

    /// Reads `part` of the current line (no line ending in it).
    fn line_part(&mut self, mut part: &[u8]) {
        if self.field.is_none() {
            let colon = part.iter().position(|byte| *byte == b':');
            let name = &part[..colon.unwrap_or(part.len())];
            let room = (BOM.len() + NAME_BYTES).saturating_sub(self.name.len());
            self.name.extend_from_slice(&name[..name.len().min(room)]);
            let Some(colon) = colon else { return };
            self.field = Some(self.field_named());
            self.value_starts = true;
            part = &part[colon + 1..];
        }
        if part.is_empty() {
            return;
        }
        if std::mem::take(&mut self.value_starts) && part[0] == b' ' {
            part = &part[1..];
        }
        self.value(part);
    }

    fn field_named(&self) -> Field {
        let name = self.name.as_slice();
        let name = if self.first_line { name.strip_prefix(BOM).unwrap_or(name) } else { name };
        match name {
            b"data" => Field::Data,
            b"event" => Field::Event,
            b"id" => Field::Id,
            b"retry" => Field::Retry,
            _ => Field::Ignored,
        }
    }

    /// Reads `part` of the current line's value.
    fn value(&mut self, part: &[u8]) {
        let event = &mut self.event;
        let (kept, room) = match self.field {
            Some(Field::Data) => {
                if let Some(scan) = &mut event.scan {
                    scan.feed(part);
                    return;
                }
                let data = event.data.get_or_insert_with(Vec::new);
                if data.len() + part.len() > MCP_MAX_MESSAGE_BYTES {
                    let mut scan = Scan::default();
                    scan.feed(data);
                    scan.feed(part);
                    event.data = None;
                    event.scan = Some(scan);
                    return;
                }
                (data, part.len())
            }
            Some(Field::Event) => field_value(&mut event.event),
            Some(Field::Id) => field_value(&mut event.id),
            Some(Field::Retry) => field_value(&mut event.retry),
            Some(Field::Ignored) | None => return,
        };
        kept.extend_from_slice(&part[..part.len().min(room)]);
    }

    fn line_end(&mut self) {
        let field = match self.field.take() {
            Some(field) => field,
            None if self.name.is_empty() => return self.dispatch(),
            // A line without a colon: the field its name says, with an empty value.
            None => {
                let field = self.field_named();
                self.field = Some(field);
                self.value(&[]);
                self.field = None;
                field
            }
        };
        self.name.clear();
        self.value_starts = false;
        self.first_line = false;
        match field {
            Field::Data => {
                self.event.any = true;
                // Data lines join with `\n`: each line's goes after it, and the last is taken off
                // when the event ends.
                match &mut self.event.scan {
                    Some(scan) => scan.feed(b"\n"),
                    None => self.event.data.get_or_insert_with(Vec::new).push(b'\n'),
                }
            }
            Field::Event | Field::Id | Field::Retry => self.event.any = true,
            Field::Ignored => {}
        }
    }

    /// Ends the event: it is ready, within the bound or as its stand-in.
    fn dispatch(&mut self) {
        let Event { data, scan, event, id, retry, any } = std::mem::take(&mut self.event);
        if !any {
            return;
        }
        let text = |bytes: Option<Vec<u8>>| bytes.map(|bytes| String::from_utf8_lossy(&bytes).into_owned());
        // Each data line added a `\n` after it; the event's data has none at its end.
        let data = data.map(|mut data| {
            data.pop();
            data
        });
        let data = match (scan, data) {
            (Some(scan), _) => match scan.answer_id() {
                Some(answered) => Some(Dropped::TooLarge.answer_text(answered)),
                None => {
                    tracing::warn!(
                        target: "agentic_mcp",
                        server = %self.server,
                        "the MCP server `{}` sent an event larger than 16 MiB (the limit for one message) that \
                         answers no request; it was dropped",
                        self.server
                    );
                    None
                }
            },
            (None, Some(data)) => match String::from_utf8(data) {
                Ok(data) => Some(screen(data.as_bytes()).unwrap_or(data)),
                Err(error) => {
                    self.ready.push_back(Err(SseError::Utf8Parse(error.utf8_error())));
                    return;
                }
            },
            (None, None) => None,
        };
        let retry = text(retry).and_then(|retry| retry.trim().parse().ok());
        self.ready.push_back(Ok(Sse { event: text(event), data, id: text(id), retry }));
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::{RequestId, ServerJsonRpcMessage};

    use super::*;

    fn parse(pieces: &[&[u8]]) -> Vec<Sse> {
        let mut parser = Parser::new("files".to_owned());
        for piece in pieces {
            parser.feed(piece);
        }
        parser.ready.into_iter().map(|event| event.expect("an event")).collect()
    }

    #[test]
    fn events_are_read_as_the_format_says_whatever_the_pieces() {
        let stream = b"\xEF\xBB\xBF: a comment\n\nid: 1\ndata\n\nevent: message\r\ndata: {\"a\":\r\ndata:1}\r\nretry: 500\r\n\r\nid:2\rdata: x\r\r";
        let whole = parse(&[stream]);
        let expected = [
            Sse { id: Some("1".into()), data: Some(String::new()), ..Sse::default() },
            Sse { event: Some("message".into()), data: Some("{\"a\":\n1}".into()), retry: Some(500), ..Sse::default() },
            Sse { id: Some("2".into()), data: Some("x".into()), ..Sse::default() },
        ];
        assert_eq!(whole, expected);
        let bytewise: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(parse(&bytewise), expected);
    }

    #[test]
    fn an_answer_over_the_bound_becomes_its_stand_in() {
        let text = "x".repeat(MCP_MAX_MESSAGE_BYTES);
        let big = format!("id: 9\ndata: {{\"result\":{{\"text\":\"{text}\"}},\"jsonrpc\":\"2.0\",\"id\":5}}\n\n");
        let notification = format!("data: {{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":\"{text}\"}}\n\n");
        let events = parse(&[big.as_bytes(), notification.as_bytes(), b"data: after\n\n"]);
        assert_eq!(events.len(), 3);
        assert_eq!(events[0].id.as_deref(), Some("9"));
        let data = events[0].data.as_deref().unwrap();
        let ServerJsonRpcMessage::Error(answer) = serde_json::from_str(data).unwrap() else { panic!("{data}") };
        assert_eq!(answer.id, Some(RequestId::Number(5)));
        assert_eq!(Dropped::of(&answer.error), Some(Dropped::TooLarge));
        assert_eq!(events[1], Sse::default(), "the notification is dropped");
        assert_eq!(events[2].data.as_deref(), Some("after"));
    }
}
