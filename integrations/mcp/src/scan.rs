//! What a message too large to keep was: read piece by piece as it is dropped, a JSON object's
//! top-level `id` and whether it is an answer (a `result` or an `error`), in bounded memory.
//!
//! A server may put the `id` first or last (the TypeScript SDK writes `{"result":…,"jsonrpc":"2.0",
//! "id":3}`), so the whole message is scanned; only the bytes of the `id`'s value and of the key
//! being read are kept, each a few bytes.

use rmcp::model::RequestId;

/// The longest key kept while scanning: longer ones are none of `id`, `result`, `error`.
const KEY_BYTES: usize = 8;

/// The longest `id` value kept: a request id is a number or a short string.
const ID_BYTES: usize = 256;

/// A scan of one JSON message, fed its bytes in order ([`Scan::feed`]).
#[derive(Debug, Default)]
pub(crate) struct Scan {
    /// How deep in objects and arrays the next byte is (1: in the message's own object).
    depth: usize,
    in_string: bool,
    escaped: bool,
    /// At depth 1, the next string is a key.
    expect_key: bool,
    /// The key being read (or last read), while `key_fits`.
    key: Vec<u8>,
    key_fits: bool,
    reading_key: bool,
    /// The raw value of `id` being read, then read.
    id: Option<Vec<u8>>,
    /// `id`'s value is being read (after its `:`, before the `,` or `}` that ends it).
    reading_id: bool,
    /// A `result` or `error` key was seen at depth 1.
    answer: bool,
}

impl Scan {
    /// Reads `bytes`, the next part of the message.
    pub(crate) fn feed(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.byte(byte);
        }
    }

    fn byte(&mut self, byte: u8) {
        if self.in_string {
            self.string_byte(byte);
            return;
        }
        match byte {
            b'"' => {
                self.in_string = true;
                if self.depth == 1 && self.expect_key {
                    self.expect_key = false;
                    self.reading_key = true;
                    self.key.clear();
                    self.key_fits = true;
                } else {
                    self.keep_id_byte(byte);
                }
            }
            b'{' | b'[' => {
                if self.reading_id && self.depth == 1 {
                    // An object or array is no request id.
                    self.reading_id = false;
                    self.id = None;
                }
                self.depth += 1;
                if self.depth == 1 {
                    self.expect_key = byte == b'{';
                }
            }
            b'}' | b']' => {
                self.end_id_at_depth_one();
                self.depth = self.depth.saturating_sub(1);
            }
            b':' if self.depth == 1 => match self.key.as_slice() {
                _ if !self.key_fits => {}
                b"id" => {
                    self.id = Some(Vec::new());
                    self.reading_id = true;
                }
                b"result" | b"error" => self.answer = true,
                _ => {}
            },
            b',' => {
                self.end_id_at_depth_one();
                if self.depth == 1 {
                    self.expect_key = true;
                }
            }
            b' ' | b'\t' | b'\n' | b'\r' => {}
            _ => self.keep_id_byte(byte),
        }
    }

    fn string_byte(&mut self, byte: u8) {
        let ends = !self.escaped && byte == b'"';
        self.escaped = !self.escaped && byte == b'\\';
        if ends {
            self.in_string = false;
            self.reading_key = false;
        } else if self.reading_key {
            if self.key.len() < KEY_BYTES {
                self.key.push(byte);
            } else {
                self.key_fits = false;
            }
        }
        if !self.reading_key {
            self.keep_id_byte(byte);
        }
    }

    /// Keeps `byte` of `id`'s value, while it is read and short.
    fn keep_id_byte(&mut self, byte: u8) {
        if !self.reading_id || self.depth != 1 {
            return;
        }
        match &mut self.id {
            Some(id) if id.len() < ID_BYTES => id.push(byte),
            _ => {
                self.reading_id = false;
                self.id = None;
            }
        }
    }

    fn end_id_at_depth_one(&mut self) {
        if self.depth == 1 {
            self.reading_id = false;
        }
    }

    /// The id of the answer the message was, if it was one (a top-level `result` or `error`
    /// beside an `id`); `None` for a request or a notification, or bytes that named nothing.
    pub(crate) fn answer_id(&self) -> Option<RequestId> {
        if !self.answer {
            return None;
        }
        serde_json::from_slice(self.id.as_deref()?).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(pieces: &[&str]) -> Option<RequestId> {
        let mut scan = Scan::default();
        for piece in pieces {
            scan.feed(piece.as_bytes());
        }
        scan.answer_id()
    }

    #[test]
    fn the_id_is_found_first_or_last_and_across_pieces() {
        assert_eq!(scan(&[r#"{"jsonrpc":"2.0","id":7,"result":{"content":[]}}"#]), Some(RequestId::Number(7)));
        assert_eq!(
            scan(&[r#"{"result":{"id":99,"x":[1,{"id":5}]},"jsonrpc":"2.0","id":"a-1"}"#]),
            Some(RequestId::String("a-1".into()))
        );
        assert_eq!(
            scan(&[r#"{"res"#, r#"ult": {"text": "\"id\": 4"}, "i"#, r#"d" : 12"#, "3 }"]),
            Some(RequestId::Number(123))
        );
        assert_eq!(
            scan(&[r#"{"jsonrpc":"2.0","id":3,"error":{"code":-1,"message":"no"}}"#]),
            Some(RequestId::Number(3))
        );
    }

    #[test]
    fn requests_notifications_and_garbage_are_no_answer() {
        assert_eq!(scan(&[r#"{"jsonrpc":"2.0","id":7,"method":"sampling/createMessage"}"#]), None);
        assert_eq!(scan(&[r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"result":1}}"#]), None);
        assert_eq!(scan(&[r#"{"id":{"nested":1},"result":{}}"#]), None);
        assert_eq!(scan(&[r#"{"id":7,"result":"#]), Some(RequestId::Number(7)), "cut short: the id is known");
        assert_eq!(scan(&["not json at all"]), None);
        let long_id = format!(r#"{{"id":"{}","result":{{}}}}"#, "x".repeat(ID_BYTES + 1));
        assert_eq!(scan(&[&long_id]), None);
    }
}
