//! Server-sent events, parsed as the WHATWG HTML standard says ("Parsing an event stream").
//!
//! Bytes arrive in reads that may split anything: a line, a UTF-8 character, a CR from its LF. The
//! decoder keeps the incomplete line between reads, accepts CRLF, LF and CR line endings, joins
//! multi-line `data:` with `'\n'`, skips comment lines (`:`), keeps the `event:` name and dispatches
//! an event at each blank line. At the end of the stream an event without its blank line is
//! discarded, as the standard says; [`SseDecoder::has_partial_event`] tells whether one was.
//! Lines and events are bounded ([`MAX_LINE`], [`MAX_EVENT`]) so a server cannot exhaust memory.
//!
//! A server that writes its error as bare JSON instead of an event (`{"error": ..}` on a line of its
//! own, without `data:`) would have it ignored by the standard (a field of an unknown name): the
//! decoder keeps it instead when the body begins with it (before any field), for
//! [`SseDecoder::take_json`] (one line) or [`SseDecoder::take_json_body`] (a body that is JSON on
//! several lines, once the stream ended), and reads no events from such a body.
//!
//! The HTTP providers read their streams with it; it needs no HTTP stack, so a [`Provider`] of your
//! own for another server's event stream can use it with the core alone:
//!
//! ```
//! use agentic_runtime::provider::sse::SseDecoder;
//!
//! let mut decoder = SseDecoder::new();
//! let mut events = Vec::new();
//! // Reads split anywhere: here inside the second event's `data:` line.
//! decoder.feed(b"event: delta\ndata: Hel", &mut events).unwrap();
//! decoder.feed(b"lo\n\n: a keep-alive comment\ndata: [DONE]\n\n", &mut events).unwrap();
//! assert_eq!((events[0].name(), events[0].data.as_str()), ("delta", "Hello"));
//! assert_eq!((events[1].name(), events[1].data.as_str()), ("message", "[DONE]"));
//! assert!(!decoder.has_partial_event()); // a body that ended here ended cleanly
//! ```
//!
//! [`Provider`]: super::Provider

use crate::error::{ModelError, TransportKind};

/// The longest line accepted, in bytes (1 MiB).
pub const MAX_LINE: usize = 1 << 20;

/// The most data one event may carry, in bytes (1 MiB).
pub const MAX_EVENT: usize = 1 << 20;

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SseEvent {
    /// The `event:` field, empty when the server sent none (the standard's default is `message`).
    pub event: String,
    /// The `data:` lines, joined with `'\n'`.
    pub data: String,
}

impl SseEvent {
    /// The event's type: its `event:` field, or `message`.
    pub fn name(&self) -> &str {
        if self.event.is_empty() { "message" } else { &self.event }
    }
}

/// An incremental SSE decoder: feed it bytes as they arrive, collect the events.
#[derive(Debug, Default)]
pub struct SseDecoder {
    /// The bytes of the current, not yet terminated line.
    line: Vec<u8>,
    /// The last read ended with a CR: a LF at the start of the next read belongs to it.
    skip_lf: bool,
    /// The first line is next (a byte order mark is stripped from it).
    started: bool,
    /// The data buffer (`data:` values, each followed by `'\n'`).
    data: String,
    /// The event type buffer.
    event: String,
    /// A field line was seen since the last dispatch.
    pending: bool,
    /// A field line was seen at all.
    fields: bool,
    /// The body's first line, when it was a JSON value by itself, not yet taken.
    json: Option<String>,
    /// The body began with a JSON value on one line: it is no event stream, the rest is ignored.
    after_json: bool,
    /// The body so far, when its first line opened a JSON value that the line did not close: the
    /// body is JSON on several lines, not an event stream.
    json_body: Option<String>,
}

impl SseDecoder {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Decodes `bytes`, appending every event they complete to `out`.
    ///
    /// Fails with a [`TransportKind::Corrupted`] error when a line or an event exceeds its bound;
    /// the decoder should not be used after that.
    pub fn feed(&mut self, mut bytes: &[u8], out: &mut Vec<SseEvent>) -> Result<(), ModelError> {
        if self.skip_lf && !bytes.is_empty() {
            self.skip_lf = false;
            if bytes[0] == b'\n' {
                bytes = &bytes[1..];
            }
        }
        while let Some(end) = bytes.iter().position(|&byte| byte == b'\n' || byte == b'\r') {
            self.extend_line(&bytes[..end])?;
            let terminator = bytes[end];
            bytes = &bytes[end + 1..];
            if terminator == b'\r' {
                match bytes.first() {
                    Some(b'\n') => bytes = &bytes[1..],
                    Some(_) => {}
                    None => self.skip_lf = true,
                }
            }
            let line = std::mem::take(&mut self.line);
            self.process_line(&line, out)?;
            self.line = line;
            self.line.clear();
        }
        self.extend_line(bytes)
    }

    /// The body's first line (before any field), not yet taken, when it was a JSON value by itself
    /// (it starts with `{` or `[`) rather than an SSE field: a server's bare JSON error. Such a body
    /// is no event stream: what follows the line is ignored.
    pub fn take_json(&mut self) -> Option<String> {
        self.json.take()
    }

    /// Once the stream ended: the body, when it was JSON rather than an event stream and not taken
    /// as one line by [`SseDecoder::take_json`] (its first line opened a JSON value that a later line
    /// closes, or its only line has no line ending), bounded by [`MAX_EVENT`] and [`MAX_LINE`].
    /// Whether it parses is the caller's to find out.
    pub fn take_json_body(&mut self) -> Option<String> {
        let last = String::from_utf8_lossy(&self.line);
        match self.json_body.take() {
            Some(body) => Some(body + &last),
            None if !self.fields && !self.after_json && last.starts_with(['{', '[']) => Some(last.into_owned()),
            None => None,
        }
    }

    /// True when the stream so far ends inside an event (a field line or a partial line without
    /// the blank line that would dispatch it). At the end of the stream such an event is discarded.
    pub fn has_partial_event(&self) -> bool {
        self.pending || !self.line.is_empty()
    }

    fn extend_line(&mut self, bytes: &[u8]) -> Result<(), ModelError> {
        if self.line.len() + bytes.len() > MAX_LINE {
            return Err(too_large("line", MAX_LINE));
        }
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    fn process_line(&mut self, line: &[u8], out: &mut Vec<SseEvent>) -> Result<(), ModelError> {
        let mut line = line;
        if !self.started {
            self.started = true;
            line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
        }
        if self.after_json {
            return Ok(());
        }
        if let Some(body) = &mut self.json_body {
            if body.len() + line.len() + 1 > MAX_EVENT {
                return Err(too_large("event", MAX_EVENT));
            }
            body.push_str(&String::from_utf8_lossy(line));
            body.push('\n');
            return Ok(());
        }
        if line.is_empty() {
            self.dispatch(out);
            return Ok(());
        }
        if line[0] == b':' {
            return Ok(());
        }
        if !self.fields && matches!(line[0], b'{' | b'[') {
            self.bare_json(line);
            return Ok(());
        }
        self.pending = true;
        self.fields = true;
        let (field, value) = match line.iter().position(|&byte| byte == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        match field {
            b"data" => {
                if self.data.len() + value.len() + 1 > MAX_EVENT {
                    return Err(too_large("event", MAX_EVENT));
                }
                self.data.push_str(&String::from_utf8_lossy(value));
                self.data.push('\n');
            }
            b"event" => self.event = String::from_utf8_lossy(value).into_owned(),
            // `id` and `retry` matter to reconnecting clients only; unknown fields are ignored.
            _ => {}
        }
        Ok(())
    }

    /// The body's first field-like line starts like JSON: kept when it is a JSON value by itself,
    /// else the start of a body that is JSON on several lines. Either way the body is no event stream.
    fn bare_json(&mut self, line: &[u8]) {
        let text = String::from_utf8_lossy(line);
        if serde_json::from_str::<serde::de::IgnoredAny>(&text).is_ok() {
            self.json = Some(text.into_owned());
            self.after_json = true;
        } else {
            self.json_body = Some(text.into_owned() + "\n");
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        self.pending = false;
        if self.data.is_empty() {
            self.event.clear();
            return;
        }
        let mut data = std::mem::take(&mut self.data);
        data.pop(); // the last '\n'
        out.push(SseEvent { event: std::mem::take(&mut self.event), data });
    }
}

fn too_large(what: &str, limit: usize) -> ModelError {
    ModelError::transport(
        TransportKind::Corrupted,
        format!("malformed stream: an SSE {what} exceeds {} KiB", limit / 1024),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_in(reads: &[&[u8]]) -> (Vec<SseEvent>, bool) {
        let mut decoder = SseDecoder::new();
        let mut out = Vec::new();
        for read in reads {
            decoder.feed(read, &mut out).unwrap();
        }
        (out, decoder.has_partial_event())
    }

    fn event(name: &str, data: &str) -> SseEvent {
        SseEvent { event: name.to_owned(), data: data.to_owned() }
    }

    /// Every split of `stream` into reads of one byte, and into two reads at every position.
    fn all_splits(stream: &[u8]) -> Vec<Vec<&[u8]>> {
        let mut splits = vec![stream.chunks(1).collect::<Vec<_>>()];
        for at in 0..=stream.len() {
            splits.push(vec![&stream[..at], &stream[at..]]);
        }
        splits
    }

    #[test]
    fn events_fields_comments_and_multiline_data() {
        let stream = b": keep-alive\n\nevent: delta\ndata: one\ndata:two\ndata\n\nid: 7\nretry: 10\n\ndata: last\n\n";
        let (events, partial) = decode_in(&[stream]);
        assert_eq!(events, [event("delta", "one\ntwo\n"), event("", "last")]);
        assert_eq!(events[1].name(), "message");
        assert!(!partial);
    }

    #[test]
    fn every_line_ending_and_every_split_gives_the_same_events() {
        let text = "event: a\ndata: h\u{e9}llo \u{1f600}\ndata: [DONE]\n\n: note\ndata: {\"x\":1}\n\n";
        let expected = [event("a", "h\u{e9}llo \u{1f600}\n[DONE]"), event("", "{\"x\":1}")];
        for ending in ["\n", "\r\n", "\r"] {
            let stream = text.replace('\n', ending);
            for reads in all_splits(stream.as_bytes()) {
                let (events, partial) = decode_in(&reads);
                assert_eq!(events, expected, "ending {ending:?}, reads {reads:?}");
                assert!(!partial);
            }
        }
    }

    #[test]
    fn a_cr_at_the_end_of_a_read_and_its_lf_in_the_next_make_one_line_ending() {
        let (events, _) = decode_in(&[b"data: a\r", b"\n", b"\r", b"\ndata: b\r\n\r\n"]);
        assert_eq!(events, [event("", "a"), event("", "b")]);
    }

    #[test]
    fn a_final_event_without_its_blank_line_is_discarded_and_reported() {
        let (events, partial) = decode_in(&[b"data: one\n\ndata: two\n"]);
        assert_eq!(events, [event("", "one")]);
        assert!(partial);
        let (_, partial) = decode_in(&[b"data: one\n\ndata: tw"]);
        assert!(partial);
        let (_, partial) = decode_in(&[b"data: one\n\n: comment\n"]);
        assert!(!partial);
    }

    #[test]
    fn an_event_without_data_is_not_dispatched_and_empty_data_is() {
        let (events, _) = decode_in(&[b"event: ping\n\ndata\n\ndata:\n\n"]);
        assert_eq!(events, [event("", ""), event("", "")]);
    }

    #[test]
    fn a_byte_order_mark_is_stripped_from_the_first_line_only() {
        let (events, _) = decode_in(&[b"\xEF\xBB", b"\xBFdata: a\n\n"]);
        assert_eq!(events, [event("", "a")]);
    }

    #[test]
    fn invalid_utf8_is_replaced_not_fatal() {
        let (events, _) = decode_in(&[b"data: \xFF\xFEok\n\n"]);
        assert_eq!(events, [event("", "\u{fffd}\u{fffd}ok")]);
    }

    #[test]
    fn a_bare_json_line_is_kept_not_read_as_a_field() {
        let mut decoder = SseDecoder::new();
        let mut out = Vec::new();
        let error = r#"{"error":{"message":"bad key","code":"invalid_api_key"}}"#;
        decoder.feed(format!("{error}\n").as_bytes(), &mut out).unwrap();
        assert!(out.is_empty() && !decoder.has_partial_event());
        // The body is no event stream: what follows is ignored.
        decoder.feed(b"data: a\n\n", &mut out).unwrap();
        assert!(out.is_empty());
        assert_eq!(decoder.take_json().as_deref(), Some(error));
        assert_eq!(decoder.take_json(), None);
        // After a field line, a line that starts like JSON is a field, as the standard says.
        let mut decoder = SseDecoder::new();
        decoder.feed(b"data: a\n{\"b\":1}\n\n", &mut out).unwrap();
        assert_eq!((out, decoder.take_json(), decoder.take_json_body()), (vec![event("", "a")], None, None));
    }

    #[test]
    fn a_body_that_is_json_on_several_lines_is_kept_whole_and_bounded() {
        let (body, mut decoder) = ("{\n  \"error\": {\"type\": \"overloaded_error\"}\n}\n", SseDecoder::new());
        let mut out = Vec::new();
        for read in body.as_bytes().chunks(3) {
            decoder.feed(read, &mut out).unwrap();
        }
        assert!(out.is_empty() && !decoder.has_partial_event() && decoder.take_json().is_none());
        assert_eq!(decoder.take_json_body().as_deref(), Some(body));
        // Without its last line ending, and a one-line body without any.
        let mut decoder = SseDecoder::new();
        decoder.feed(body.trim_end().as_bytes(), &mut out).unwrap();
        assert_eq!(decoder.take_json_body().as_deref(), Some(body.trim_end()));
        let mut decoder = SseDecoder::new();
        decoder.feed(b"{\"error\":\"no\"}", &mut out).unwrap();
        assert_eq!((decoder.take_json(), decoder.take_json_body().as_deref()), (None, Some("{\"error\":\"no\"}")));

        let mut decoder = SseDecoder::new();
        decoder.feed(b"[\n", &mut out).unwrap();
        let line = [vec![b'1'; 64 * 1024], b",\n".to_vec()].concat();
        let error = (0..=16).find_map(|_| decoder.feed(&line, &mut out).err()).expect("the event bound");
        assert!(error.message().contains("an SSE event exceeds"), "{error}");
    }

    #[test]
    fn oversized_lines_and_events_are_corrupted_streams() {
        let mut decoder = SseDecoder::new();
        let mut out = Vec::new();
        let chunk = vec![b'a'; 64 * 1024];
        decoder.feed(b"data: ", &mut out).unwrap();
        let error = (0..=16).find_map(|_| decoder.feed(&chunk, &mut out).err()).expect("the line bound");
        assert_eq!(error.transport_kind(), Some(TransportKind::Corrupted));
        assert_eq!(error.to_string(), "MalformedStreamError: malformed stream: an SSE line exceeds 1024 KiB");

        let mut decoder = SseDecoder::new();
        let line = [b"data: ".as_slice(), &chunk, b"\n"].concat();
        let error = (0..=16).find_map(|_| decoder.feed(&line, &mut out).err()).expect("the event bound");
        assert!(error.message().contains("an SSE event exceeds"), "{error}");
    }
}
