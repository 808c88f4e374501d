//! The answers that never end: floods of keep-alives, empty chunks or whitespace, and endless
//! text, each until the client hangs up.

use std::io;
use std::time::Duration;

use serde_json::Value;

use super::answer::{After, Answer, Fault, FloodOf};
use crate::http;
use crate::step::{Completion, DEFAULT_TEXT, EndlessText, KeepAliveFlood, Pieces};

/// The text chunks of an endless answer: the non-empty pieces of its text, or of the default
/// text when it has none.
fn non_empty_pieces(completion: &Completion) -> impl Iterator<Item = &str> + '_ {
    let text = if completion.text.is_empty() { DEFAULT_TEXT } else { completion.text.as_str() };
    let pieces = match completion.chunks {
        None => Pieces::words(text),
        Some(n) => Pieces::even(text, n as usize),
    };
    pieces.filter(|piece| !piece.is_empty())
}

/// A string's JSON form without its quotes: what goes between them.
fn json_escaped(text: &str) -> String {
    let quoted = Value::from(text).to_string();
    quoted[1..quoted.len() - 1].to_owned()
}

impl Answer<'_> {
    pub(super) async fn keep_alive_flood(&mut self, f: &KeepAliveFlood) -> io::Result<After> {
        let of = FloodOf::KeepAlive { ping: f.ping };
        if !self.stream {
            let head = self.json_head(None, &f.completion.headers);
            self.conn.send(&head);
            return self.flood(FloodOf::Newlines, 0, f.interval_ms).await;
        }
        match f.after_chunks {
            Some(k) => self.completion(&f.completion, Fault::Flood(k, of, f.interval_ms)).await,
            None => {
                let head = self.stream_head(&f.completion.headers);
                self.conn.send(&head);
                self.flood(of, 0, f.interval_ms).await
            }
        }
    }

    /// A 200 `application/json` whose body opens the answer object and then sends newlines.
    pub(super) async fn endless_json(&mut self, headers: &[(String, String)], interval_ms: u64) -> io::Result<After> {
        let head = self.json_head(None, headers);
        self.conn.send(&head);
        self.conn.send_chunk(self.exchange.json_opening().as_bytes());
        self.flood(FloodOf::Newlines, 0, interval_ms).await
    }

    /// The text's chunks over and over: as stream events, or inside an unclosed JSON string.
    pub(super) async fn endless_text(&mut self, e: &EndlessText) -> io::Result<After> {
        let interval = Duration::from_millis(e.interval_ms);
        let completion = &e.completion;
        let mut pieces = non_empty_pieces(completion);
        let mut next_piece = move || {
            pieces.next().unwrap_or_else(|| {
                pieces = non_empty_pieces(completion);
                pieces.next().unwrap_or(DEFAULT_TEXT)
            })
        };
        if self.stream {
            let head = self.stream_head(&completion.headers);
            self.conn.send(&head);
            for event in self.exchange.preamble() {
                self.conn.send_chunk(event.as_bytes());
            }
            let exchange = &self.exchange;
            let mut i = 0;
            self.conn
                .flood(interval, |out| {
                    http::chunk_into(out, exchange.chunk(i, next_piece()).as_bytes());
                    i += 1;
                })
                .await;
        } else {
            let head = self.json_head(None, &completion.headers);
            self.conn.send(&head);
            self.conn.send_chunk(self.exchange.text_opening().as_bytes());
            self.conn.flood(interval, |out| http::chunk_into(out, json_escaped(next_piece()).as_bytes())).await;
        }
        Ok(After::Close)
    }

    /// Send `of` over and over until the client leaves; `sent` text chunks came before.
    pub(super) async fn flood(&mut self, of: FloodOf, sent: usize, interval_ms: u64) -> io::Result<After> {
        /// 1023 blanks and a newline: what an unpaced flood of blank lines sends per chunk.
        const BLANK_LINE: &[u8] = &{
            let mut line = [b' '; 1024];
            line[1023] = b'\n';
            line
        };
        let interval = Duration::from_millis(interval_ms);
        match of {
            FloodOf::KeepAlive { ping } => {
                let event = self.exchange.keep_alive(ping);
                self.conn.flood(interval, |out| http::chunk_into(out, event.as_bytes())).await;
            }
            FloodOf::EmptyChunks => {
                // The first chunk of an OpenAI answer also carries the role.
                let mut first = Some(self.exchange.chunk(sent, ""));
                let rest = self.exchange.chunk(sent.max(1), "");
                self.conn
                    .flood(interval, |out| http::chunk_into(out, first.take().as_ref().unwrap_or(&rest).as_bytes()))
                    .await;
            }
            FloodOf::Newlines => {
                // As fast as the client reads: whole lines of blanks, so that the client spends its
                // time on bytes rather than on the framing of one-byte chunks.
                let piece: &[u8] = if interval.is_zero() { BLANK_LINE } else { b"\n" };
                self.conn.flood(interval, |out| http::chunk_into(out, piece)).await
            }
        }
        Ok(After::Close)
    }
}
