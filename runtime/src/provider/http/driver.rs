//! The stream loop every wire shares: [`Driver`] sends one request (under the connect and headers
//! bounds, with its fallback), reads an error response to a bound with its hints, reads a 2xx body
//! as SSE events through the wire's [`Decoder`] (or as one JSON answer or error object), and ends
//! the call as the body ends: finished, truncated, dropped, or with no answer at all. Whatever the
//! status (but a redirect's), the rate limits the response's headers state come first.

use std::collections::VecDeque;
use std::time::SystemTime;

use reqwest::header::HeaderMap;

use super::super::boundary::redirect_error;
use super::super::secret::Secret;
use super::super::sse::{MAX_EVENT, SseDecoder, SseEvent};
use super::super::{CallBounds, EventStream, StreamEvent};
use super::errors::{
    MAX_ERROR_BODY, empty_answer, error_event, excerpt, http_error_of, malformed, not_a_stream, not_an_answer,
    undecodable,
};
use super::hints::Hints;
use super::seam::{Decoder, Out, is_content};
use super::send::{
    BodyKind, Fallback, Phase, body_kind, error_body_deadline, read_bounded, read_capped, transport_error,
};
use crate::error::{ModelError, TransportKind};
use crate::policy::rules::{format_ms, millis};
use crate::storm::pace::{RateLimits, is_rate_limit_header};

/// Sends `request` and streams the response through `decoder`, within `bounds.connect` (the
/// client's) and `bounds.headers`; `fallback`, if the first response calls for it.
pub(super) fn stream<D: Decoder>(
    client: reqwest::Client,
    request: reqwest::Request,
    fallback: Option<Fallback>,
    decoder: D,
    secret: Option<Secret>,
    bounds: CallBounds,
) -> EventStream<'static> {
    let path = request.url().path().to_owned();
    let driver = Driver { start: Some((client, request)), fallback, ..Driver::new(bounds, decoder, secret, path) };
    Box::pin(futures_util::stream::unfold(driver, |mut driver| async move {
        let item = driver.next().await?;
        Some((item, driver))
    }))
}

/// One item of a call's stream.
pub(crate) type Item = Result<StreamEvent, ModelError>;

/// One call's response read into [`StreamEvent`]s: the send phase, then the body's events through
/// the wire's decoder `D`, then the end of the body. Generic, so each wire's copy is monomorphic.
struct Driver<D> {
    bounds: CallBounds,
    start: Option<(reqwest::Client, reqwest::Request)>,
    fallback: Option<Fallback>,
    response: Option<reqwest::Response>,
    sse: SseDecoder,
    decoder: D,
    secret: Option<Secret>,
    /// The answering model was reported ([`Out::model`]).
    model_sent: bool,
    events: Vec<SseEvent>,
    out: Vec<StreamEvent>,
    queue: VecDeque<Item>,
    ended: bool,
    /// The path posted to, for the message when a JSON body is not an answer.
    path: String,
    /// What the stream brought before its answer: its events, and an excerpt of the first.
    seen: Seen,
}

/// The events of a stream so far, until content comes: enough to say what came back when none did.
/// The first is kept as the decoder made it (moved, not copied: the success path pays nothing).
#[derive(Default)]
struct Seen {
    events: u32,
    first: Option<SseEvent>,
    answered: bool,
}

impl<D: Decoder> Driver<D> {
    fn new(bounds: CallBounds, decoder: D, secret: Option<Secret>, path: String) -> Self {
        Driver {
            bounds,
            start: None,
            fallback: None,
            response: None,
            sse: SseDecoder::new(),
            decoder,
            secret,
            model_sent: false,
            events: Vec::new(),
            out: Vec::new(),
            queue: VecDeque::new(),
            ended: false,
            path,
            seen: Seen::default(),
        }
    }

    async fn next(&mut self) -> Option<Item> {
        loop {
            if let Some(item) = self.queue.pop_front() {
                return Some(item);
            }
            if self.ended {
                return None;
            }
            if let Some((client, request)) = self.start.take() {
                self.send(client, request).await;
                continue;
            }
            let Some(response) = self.response.as_mut() else {
                self.ended = true;
                continue;
            };
            match response.chunk().await {
                Ok(Some(bytes)) => self.feed(&bytes),
                Ok(None) => self.end_of_body(None),
                Err(error) => self.end_of_body(Some(error)),
            }
        }
    }

    async fn send(&mut self, client: reqwest::Client, request: reqwest::Request) {
        let started = tokio::time::Instant::now();
        let path = request.url().path().to_owned();
        let headers = self.bounds.headers;
        let sent = match tokio::time::timeout(headers, client.execute(request)).await {
            Ok(sent) => sent,
            Err(_) => {
                let text = format!(
                    "model call timed out: no response headers after {} (`headers_timeout_ms` = {})",
                    format_ms(millis(headers)),
                    millis(headers)
                );
                return self.fail(ModelError::transport(TransportKind::Timeout, text));
            }
        };
        match sent {
            Err(error) if error.is_connect() && error.is_timeout() => {
                let connect = self.bounds.connect;
                let text = format!(
                    "model call timed out: no connection after {} (`connect_timeout_ms` = {})",
                    format_ms(millis(connect)),
                    millis(connect)
                );
                self.fail(ModelError::transport(TransportKind::Timeout, text));
            }
            Err(error) => self.fail(transport_error(error, Phase::Send, self.secret.as_ref())),
            Ok(response) if response.status().is_success() => {
                self.rate_limits(response.headers());
                match body_kind(&response) {
                    BodyKind::Stream => self.response = Some(response),
                    BodyKind::Json => {
                        let mut response = response;
                        self.whole(&mut response).await;
                    }
                    BodyKind::Other(content_type) => {
                        let status = response.status();
                        self.fail(not_a_stream(status, &content_type, &path, self.secret.as_ref()));
                    }
                }
            }
            // No hints and no limits: a redirect is never followed, whatever the server says of
            // retrying, and its headers may not be the provider's.
            Ok(response) if response.status().is_redirection() => {
                self.fail(redirect_error(&response, self.secret.as_ref()))
            }
            Ok(mut response) => {
                self.rate_limits(response.headers());
                let status = response.status().as_u16();
                let hints = Hints::from_headers(response.headers(), SystemTime::now());
                let deadline = error_body_deadline(&self.bounds, started);
                let (body, end) = read_bounded(&mut response, MAX_ERROR_BODY, Some(deadline)).await;
                let text = String::from_utf8_lossy(&body);
                if let Some(fallback) = self.fallback.take_if(|fallback| (fallback.applies)(status, &text)) {
                    self.start = Some((client, fallback.request));
                    return;
                }
                self.fail(hints.apply(http_error_of(status, &body, end, D::error_body, self.secret.as_ref())));
            }
        }
    }

    /// Queues the rate limits `headers` state as the call's first event (after those of a first
    /// response that its fallback replaced). A response without any costs one scan of its header
    /// names and no allocation.
    fn rate_limits(&mut self, headers: &HeaderMap) {
        if !headers.keys().any(|name| is_rate_limit_header(name.as_str())) {
            return;
        }
        let header = |name: &str| headers.get(name).and_then(|value| value.to_str().ok());
        let limits = RateLimits::from_headers(header, SystemTime::now());
        if !limits.is_empty() {
            self.queue.push_back(Ok(StreamEvent::RateLimits(Box::new(limits))));
        }
    }

    /// A JSON answer instead of a stream: an error object becomes an error event, an answer its events.
    async fn whole(&mut self, response: &mut reqwest::Response) {
        let (body, cut) = read_capped(response, MAX_EVENT).await;
        self.whole_body(&body, cut);
    }

    /// [`Driver::whole`] once the body is read (`cut`: it was longer than the bound). An error object
    /// becomes an error event; a body that is not shaped like the wire's answer is a wrong base URL;
    /// an answer without content, tool calls or finish reason, a reply cut short.
    fn whole_body(&mut self, body: &[u8], cut: bool) {
        let secret = self.secret.as_ref();
        if cut {
            let text = format!("malformed chunk: a JSON answer larger than {} KiB", MAX_EVENT / 1024);
            return self.fail(ModelError::transport(TransportKind::Corrupted, text));
        }
        let text = String::from_utf8_lossy(body);
        let answer = match serde_json::from_str::<serde_json::Value>(&text) {
            Ok(answer) => answer,
            Err(error) => return self.fail(malformed(&text, &error, secret)),
        };
        let mut out = Vec::new();
        match answer.get("error").filter(|error| !error.is_null()) {
            Some(_) => out.push(error_event(&D::error_body(&answer).unwrap_or_default(), secret)),
            None if !D::is_answer(&answer) => return self.fail(not_an_answer(&self.path, D::ANSWER, &text, secret)),
            None => {
                let whole = self.decoder.whole(&answer, &mut Out::new(&mut out, secret, &mut self.model_sent));
                if let Err(error) = whole {
                    return self.fail(undecodable(&text, error, secret));
                }
                if !self.decoder.finished() && !out.iter().any(is_content) {
                    return self.fail(empty_answer(&format!("the JSON answer was {}", excerpt(&text, secret))));
                }
            }
        }
        self.ended = true;
        self.queue.extend(out.into_iter().map(Ok));
    }

    fn feed(&mut self, bytes: &[u8]) {
        if let Err(error) = self.sse.feed(bytes, &mut self.events) {
            self.fail(error);
            return;
        }
        let mut events = std::mem::take(&mut self.events);
        let mut out = std::mem::take(&mut self.out);
        for event in events.drain(..) {
            let secret = self.secret.as_ref();
            let mut sink = Out::new(&mut out, secret, &mut self.model_sent);
            let handled = if self.seen.keeps() {
                let first = self.seen.first.insert(event);
                self.decoder.event(first, &mut sink).map_err(|error| undecodable(first.data.trim(), error, secret))
            } else {
                self.decoder.event(&event, &mut sink).map_err(|error| undecodable(event.data.trim(), error, secret))
            };
            for item in out.drain(..) {
                self.push(item);
                if self.ended {
                    break;
                }
            }
            if let Err(error) = handled {
                self.fail(error);
            }
            if self.ended {
                break;
            }
        }
        self.events = events;
        self.out = out;
        // A body that begins with a JSON value (no `data:`) is read as what it is: an error object is
        // the error event it would have been, anything else a whole answer.
        if let Some(json) = self.sse.take_json().filter(|_| !self.ended) {
            self.whole_body(json.as_bytes(), false);
        }
    }

    /// Queues one event of the wire's: content marks the stream answered; a final event ends the
    /// call, and a `Done` that ends a stream with neither content nor finish reason is no answer.
    fn push(&mut self, item: StreamEvent) {
        self.seen.answered |= is_content(&item);
        match item {
            StreamEvent::Done { .. } if !self.seen.answered && !self.decoder.finished() => {
                self.fail(self.seen.no_answer(self.secret.as_ref()))
            }
            StreamEvent::Done { .. } | StreamEvent::Error { .. } => {
                self.queue.push_back(Ok(item));
                self.ended = true;
            }
            item => self.queue.push_back(Ok(item)),
        }
    }

    /// The body ended: cleanly (`None`) or with an error. Without a final event the call either
    /// finishes (the provider already said it was complete), drops (an error), was JSON rather than
    /// events (read as a whole answer), or ends without `Done` (the agent reports a truncated stream;
    /// a stream that brought events but no answer says what came).
    fn end_of_body(&mut self, error: Option<reqwest::Error>) {
        self.ended = true;
        self.response = None;
        if let Some(stop_reason) = self.decoder.completed() {
            self.push(StreamEvent::Done { stop_reason });
        } else if let Some(error) = error {
            self.queue.push_back(Err(transport_error(error, Phase::Body, self.secret.as_ref())));
        } else if let Some(body) = self.sse.take_json_body() {
            self.whole_body(body.as_bytes(), false);
        } else if self.sse.has_partial_event() {
            // The standard discards an event whose blank line never came: the stream was cut.
            let text = "stream ended unexpectedly, in the middle of an event (before its final event)";
            self.queue.push_back(Err(ModelError::transport(TransportKind::Truncated, text)));
        } else if !self.seen.answered && self.seen.events > 0 {
            self.queue.push_back(Err(self.seen.no_answer(self.secret.as_ref())));
        }
    }

    fn fail(&mut self, error: ModelError) {
        self.ended = true;
        self.response = None;
        self.queue.push_back(Err(error));
    }
}

impl Seen {
    /// Counts an event, until content came; true when it is the first, to keep.
    fn keeps(&mut self) -> bool {
        if self.answered {
            return false;
        }
        self.events = self.events.saturating_add(1);
        self.first.is_none()
    }

    /// A stream that ended with no content, tool calls or finish reason: a truncated stream, whose
    /// text says what came back.
    fn no_answer(&self, secret: Option<&Secret>) -> ModelError {
        let first = self.first.as_ref().map_or_else(|| "nothing".to_owned(), |first| excerpt(&first.data, secret));
        let events = if self.events == 1 { "1 event".to_owned() } else { format!("{} events", self.events) };
        empty_answer(&format!("the stream ended after {events} (the first: {first})"))
    }
}

/// Runs `decoder`'s driver over a body that arrives in `reads` (an event stream) or, with `whole`,
/// as one JSON answer, without a connection: the items the call would yield. For the fuzz targets
/// and a wire's tests.
pub(crate) fn replay<D: Decoder>(decoder: D, reads: &[&[u8]], whole: bool, secret: Option<Secret>) -> Vec<Item> {
    let mut driver = Driver::new(CallBounds::DEFAULT, decoder, secret, "/replay".to_owned());
    if whole {
        driver.whole_body(&reads.concat(), false);
    } else {
        for read in reads.iter().filter(|read| !read.is_empty()) {
            if driver.ended {
                break;
            }
            driver.feed(read);
        }
    }
    if !driver.ended {
        driver.end_of_body(None);
    }
    driver.queue.into()
}
