//! One model request being answered: its step dispatched to the code that sends it, and the heads
//! every answer shares.

use std::io;
use std::time::Duration;

use crate::boundary;
use crate::http::{self, Conn};
use crate::step::{Completion, Hang, HangAt, Preset, Step, ToolUse};
use crate::wire::render::Exchange;
use crate::wire::shared::ErrorParts;

/// What happens to the connection after a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum After {
    KeepAlive,
    Close,
}

/// A fault in the middle of an answer, after some text chunks.
pub(super) enum Fault {
    None,
    Drop(u32),
    Truncate(u32),
    SseError(u32, ErrorParts, u16),
    Malformed(u32, String),
    Stall(u32, u64),
    Hang(u32),
    Flood(u32, FloodOf, u64),
}

impl Fault {
    pub(super) fn after_chunks(&self) -> Option<u32> {
        match self {
            Self::None => None,
            Self::Drop(k)
            | Self::Truncate(k)
            | Self::SseError(k, ..)
            | Self::Malformed(k, _)
            | Self::Stall(k, _)
            | Self::Hang(k)
            | Self::Flood(k, ..) => Some(*k),
        }
    }
}

/// What a flood sends over and over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FloodOf {
    /// Keep-alive comments, or Anthropic pings.
    KeepAlive { ping: bool },
    /// Text chunks with empty text.
    EmptyChunks,
    /// Newlines: JSON whitespace.
    Newlines,
}

/// One model request being answered.
pub(super) struct Answer<'a> {
    pub(super) conn: &'a mut Conn,
    pub(super) exchange: Exchange,
    pub(super) stream: bool,
    pub(super) keep_alive: bool,
    /// The request's API key, for an error that echoes a piece of it; never stored beyond the
    /// answer.
    pub(super) api_key: Option<String>,
    /// The request's path, without its query: where a redirect loop points.
    pub(super) path: String,
    /// The rate-limit headers every response to the request carries (none without a rate limit).
    pub(super) rate_headers: Vec<(&'static str, String)>,
}

/// An answer's own headers (its request id, its rate-limit headers) as header pairs.
pub(super) fn id_header<'a>(id: &'a [(&'static str, String)]) -> impl Iterator<Item = (&'a str, &'a str)> {
    id.iter().map(|(name, id)| (*name, id.as_str()))
}

/// Pause `ms` milliseconds; no timer at all for 0.
pub(super) async fn sleep_ms(ms: u64) {
    if ms > 0 {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
}

impl Answer<'_> {
    pub(super) async fn step(&mut self, step: Step) -> io::Result<After> {
        match step {
            Step::Ok(completion) => self.completion(&completion, Fault::None).await,
            Step::HttpError(e) => self.http_error(&e, Preset::Generic).await,
            Step::ContextOverflow(e) => self.http_error(&e, Preset::ContextOverflow).await,
            Step::InvalidApiKey(e) => self.http_error(&e, Preset::InvalidApiKey).await,
            Step::CloseBeforeHeaders => Ok(After::Close),
            Step::DropStream(i) => self.completion(&i.completion, Fault::Drop(i.after_chunks)).await,
            Step::Truncate(i) => self.completion(&i.completion, Fault::Truncate(i.after_chunks)).await,
            Step::SseError(e) => {
                let mut parts = self.exchange.sse_error_parts(&e);
                if let Some(echo) = e.echo_key {
                    parts.message = echo.append(&parts.message, self.api_key.as_deref());
                }
                let status = e.status.unwrap_or_else(|| self.exchange.status_for_type(&parts.error_type));
                self.completion(&e.completion, Fault::SseError(e.after_chunks, parts, status)).await
            }
            Step::Stall(s) => match s.after_chunks {
                Some(k) => self.completion(&s.completion, Fault::Stall(k, s.ms)).await,
                None => {
                    sleep_ms(s.ms).await;
                    self.completion(&s.completion, Fault::None).await
                }
            },
            Step::Hang(h) => self.hang(&h).await,
            Step::MalformedChunk(m) => {
                let data = m.data.unwrap_or_else(|| self.exchange.default_malformed(m.shape).to_owned());
                self.completion(&m.completion, Fault::Malformed(m.after_chunks, data)).await
            }
            Step::ToolUse(t) => self.tool_use(&t).await,
            Step::KeepAliveFlood(f) => self.keep_alive_flood(&f).await,
            Step::EmptyChunkFlood(f) if self.stream => {
                self.completion(&f.completion, Fault::Flood(f.after_chunks, FloodOf::EmptyChunks, f.interval_ms)).await
            }
            Step::EmptyChunkFlood(f) => self.endless_json(&f.completion.headers, f.interval_ms).await,
            Step::EndlessText(e) => self.endless_text(&e).await,
            Step::EndlessJson(e) => self.endless_json(&e.headers, e.interval_ms).await,
            Step::WrongContentType(w) => {
                self.wrong_content_type(&w);
                Ok(After::KeepAlive)
            }
            Step::Redirect(r) => self.redirect(&r),
            Step::NotAnAnswer(shape) => {
                self.not_an_answer(shape);
                Ok(After::KeepAlive)
            }
            Step::BareJsonError(e) => {
                let line = format!("{}\n", self.exchange.error_json(&self.exchange.bare_json_error_parts(&e)));
                let head = self.stream_head(&e.headers);
                self.conn.send(&head);
                self.conn.send_chunk(line.as_bytes());
                self.conn.send_last_chunk();
                Ok(After::KeepAlive)
            }
            Step::BadHead(shape) => {
                let id = self.request_id();
                let own: Vec<_> = id_header(&id).collect();
                self.conn.send(&boundary::bad_head(shape, &own));
                Ok(After::Close)
            }
        }
    }

    /// The headers every response to the request carries: the request id header (when the wire
    /// sends one) and the rate-limit headers.
    pub(super) fn request_id(&self) -> Vec<(&'static str, String)> {
        let id = self.exchange.request_id_header();
        id.into_iter().chain(self.rate_headers.iter().cloned()).collect()
    }

    /// The head of a 200 event stream, with chunked framing.
    pub(super) fn stream_head(&self, extra: &[(String, String)]) -> Vec<u8> {
        let id = self.request_id();
        let mut headers = vec![
            ("content-type", "text/event-stream; charset=utf-8"),
            ("cache-control", "no-cache"),
            ("transfer-encoding", "chunked"),
        ];
        headers.extend(id_header(&id));
        headers.extend(extra.iter().map(|(n, v)| (n.as_str(), v.as_str())));
        http::head(200, &headers, self.keep_alive)
    }

    /// The head of a 200 `application/json` answer: `content-length` when `length` is known,
    /// chunked otherwise.
    pub(super) fn json_head(&self, length: Option<usize>, extra: &[(String, String)]) -> Vec<u8> {
        let id = self.request_id();
        let length = length.map(|n| n.to_string());
        let mut headers = vec![("content-type", "application/json")];
        match &length {
            Some(length) => headers.push(("content-length", length)),
            None => headers.push(("transfer-encoding", "chunked")),
        }
        headers.extend(id_header(&id));
        headers.extend(extra.iter().map(|(n, v)| (n.as_str(), v.as_str())));
        http::head(200, &headers, self.keep_alive)
    }

    /// The head a completion would have: an event stream, or JSON with the whole body's length.
    pub(super) fn completion_head(&self, completion: &Completion) -> Vec<u8> {
        if self.stream {
            self.stream_head(&completion.headers)
        } else {
            let body = self.whole_body(completion);
            self.json_head(Some(body.len()), &completion.headers)
        }
    }

    pub(super) async fn hang(&mut self, h: &Hang) -> io::Result<After> {
        match h.at {
            HangAt::BeforeHeaders => {}
            HangAt::InHeaders => {
                let head = self.completion_head(&h.completion);
                // Without the blank line that ends the head.
                self.conn.send(&head[..head.len() - 2]);
            }
            HangAt::AfterHeaders => {
                let head = self.completion_head(&h.completion);
                self.conn.send(&head);
            }
            HangAt::AfterStart if self.stream => {
                let head = self.stream_head(&h.completion.headers);
                self.conn.send(&head);
                self.conn.send_chunk(self.exchange.opening().as_bytes());
            }
            HangAt::AfterStart => {
                let head = self.json_head(None, &h.completion.headers);
                self.conn.send(&head);
                self.conn.send_chunk(self.exchange.json_opening().as_bytes());
            }
            HangAt::AfterChunks(k) => return self.completion(&h.completion, Fault::Hang(k)).await,
        }
        self.conn.hang().await;
        Ok(After::Close)
    }

    /// A tool-use answer: its reasoning, text and calls, streamed or as one JSON body.
    pub(super) async fn tool_use(&mut self, t: &ToolUse) -> io::Result<After> {
        self.completion(&t.as_completion(), Fault::None).await
    }
}
