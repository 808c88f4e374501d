//! An answer's text, streamed or whole, and the faults that cut, stall or spoil it part-way.

use std::io;

use super::answer::{After, Answer, Fault, sleep_ms};
use crate::step::Completion;
use crate::wire::render::Sent;

impl Answer<'_> {
    pub(super) async fn completion(&mut self, completion: &Completion, fault: Fault) -> io::Result<After> {
        if self.stream {
            self.stream_completion(completion, fault).await
        } else {
            self.whole_completion(completion, fault).await
        }
    }

    /// A streamed answer: headers, preamble events, text chunks (with the fault after `k` of
    /// them), final events.
    pub(super) async fn stream_completion(&mut self, completion: &Completion, fault: Fault) -> io::Result<After> {
        if completion.is_rich() {
            return self.stream_rich(completion, fault).await;
        }
        let head = self.stream_head(&completion.headers);
        self.conn.send(&head);
        for event in self.exchange.preamble() {
            self.conn.send_chunk(event.as_bytes());
        }
        let count = completion.chunk_count();
        let fault_at = fault.after_chunks().map(|k| (k as usize).min(count));
        for (i, piece) in completion.pieces().enumerate() {
            if fault_at == Some(i) {
                if let Some(after) = self.stream_fault(&fault, i).await? {
                    return Ok(after);
                }
            }
            if completion.chunk_delay_ms > 0 {
                self.conn.flush().await?;
                sleep_ms(completion.chunk_delay_ms).await;
            }
            self.conn.send_chunk(self.exchange.chunk(i, piece).as_bytes());
            self.conn.flush_if_full().await?;
        }
        if fault_at == Some(count) {
            if let Some(after) = self.stream_fault(&fault, count).await? {
                return Ok(after);
            }
        }
        for event in self.exchange.epilogue(&completion.text, count as u64) {
            self.conn.send_chunk(event.as_bytes());
        }
        self.conn.send_last_chunk();
        Ok(After::KeepAlive)
    }

    /// A streamed answer with reasoning or tool calls: its events, with the fault before chunk `k`
    /// (or after the last chunk, before the events that follow it).
    async fn stream_rich(&mut self, completion: &Completion, fault: Fault) -> io::Result<After> {
        let head = self.stream_head(&completion.headers);
        self.conn.send(&head);
        let events = self.exchange.rich_events(completion);
        let count = events.iter().filter(|event| matches!(event, Sent::Chunk(_))).count();
        let mut fault_at = fault.after_chunks().map(|k| (k as usize).min(count));
        let mut sent = 0;
        for event in events {
            let chunk = matches!(event, Sent::Chunk(_));
            if fault_at == Some(sent) && (chunk || sent == count) {
                fault_at = None;
                if let Some(after) = self.stream_fault(&fault, sent).await? {
                    return Ok(after);
                }
            }
            if chunk && completion.chunk_delay_ms > 0 {
                self.conn.flush().await?;
                sleep_ms(completion.chunk_delay_ms).await;
            }
            self.conn.send_chunk(event.into_string().as_bytes());
            sent += usize::from(chunk);
            self.conn.flush_if_full().await?;
        }
        self.conn.send_last_chunk();
        Ok(After::KeepAlive)
    }

    /// The whole answer as one JSON body.
    pub(super) fn whole_body(&self, completion: &Completion) -> String {
        if completion.is_rich() {
            self.exchange.rich_body(completion)
        } else {
            self.exchange.full_body(&completion.text, completion.output_chunks() as u64)
        }
    }

    /// Apply a fault mid-stream, after `sent` chunks; `Some` if the answer ends with it.
    pub(super) async fn stream_fault(&mut self, fault: &Fault, sent: usize) -> io::Result<Option<After>> {
        match fault {
            Fault::None => Ok(None),
            Fault::Drop(_) => {
                self.conn.flush().await?;
                Ok(Some(After::Close))
            }
            Fault::Truncate(_) => {
                self.conn.send_last_chunk();
                Ok(Some(After::KeepAlive))
            }
            Fault::SseError(_, parts, _) => {
                self.conn.send_chunk(self.exchange.error_event(parts).as_bytes());
                self.conn.send_last_chunk();
                Ok(Some(After::KeepAlive))
            }
            Fault::Malformed(_, data) => {
                self.conn.send_chunk(self.exchange.malformed_event(data).as_bytes());
                Ok(None)
            }
            Fault::Stall(_, ms) => {
                self.conn.flush().await?;
                sleep_ms(*ms).await;
                Ok(None)
            }
            Fault::Hang(_) => {
                self.conn.hang().await;
                Ok(Some(After::Close))
            }
            Fault::Flood(_, of, interval_ms) => self.flood(*of, sent, *interval_ms).await.map(Some),
        }
    }

    /// A non-streamed answer: the whole JSON body, or its faulty counterpart.
    pub(super) async fn whole_completion(&mut self, completion: &Completion, fault: Fault) -> io::Result<After> {
        let count = completion.chunk_count() as u64;
        sleep_ms(completion.chunk_delay_ms.saturating_mul(count)).await;
        let body = self.whole_body(completion);
        let head = |length: usize| self.json_head(Some(length), &completion.headers);
        let half = &body.as_bytes()[..body.len() / 2];
        match fault {
            Fault::None => {
                let head = head(body.len());
                self.conn.send(&head);
                self.conn.send(body.as_bytes());
                Ok(After::KeepAlive)
            }
            Fault::Drop(_) => {
                let head = head(body.len());
                self.conn.send(&head);
                self.conn.send(half);
                self.conn.flush().await?;
                Ok(After::Close)
            }
            Fault::Truncate(_) => {
                let head = head(half.len());
                self.conn.send(&head);
                self.conn.send(half);
                Ok(After::KeepAlive)
            }
            Fault::SseError(_, parts, status) => {
                self.error_response(status, &parts);
                Ok(After::KeepAlive)
            }
            Fault::Malformed(_, data) => {
                let head = head(data.len());
                self.conn.send(&head);
                self.conn.send(data.as_bytes());
                Ok(After::KeepAlive)
            }
            Fault::Stall(_, ms) => {
                let head = head(body.len());
                self.conn.send(&head);
                self.conn.flush().await?;
                sleep_ms(ms).await;
                self.conn.send(body.as_bytes());
                Ok(After::KeepAlive)
            }
            Fault::Hang(_) => {
                let head = head(body.len());
                self.conn.send(&head);
                self.conn.hang().await;
                Ok(After::Close)
            }
            Fault::Flood(_, _, interval_ms) => self.endless_json(&completion.headers, interval_ms).await,
        }
    }
}
