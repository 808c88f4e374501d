//! The answers that are not a model's: an HTTP error (its body, its headers, a body that stalls or
//! never ends), a 200 of the wrong type, a redirect, a 200 that is not an answer.

use std::io;
use std::time::{SystemTime, UNIX_EPOCH};

use super::answer::{After, Answer, FloodOf, id_header};
use super::plain::send_json;
use crate::http;
use crate::step::{HttpError, NotAnAnswer, Preset, Redirect, StatedLimit, WrongContentType};
use crate::wire::NotAnAnswerBody;
use crate::wire::shared::ErrorParts;

/// The error object `error` of `e` with the rate limit it states, as OpenRouter sends it: the
/// status as its numeric `code` (unless the step sets one), and the limit in `metadata.headers`.
fn stated_limit(error: &mut serde_json::Value, e: &HttpError, limit: &StatedLimit) {
    let Some(error) = error.as_object_mut() else { return };
    let now_ms = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |since| since.as_millis());
    if e.code.is_none() {
        error.insert("code".to_owned(), serde_json::Value::from(e.status));
    }
    error.insert("metadata".to_owned(), limit.metadata(u64::try_from(now_ms).unwrap_or(u64::MAX)));
}

impl Answer<'_> {
    pub(super) async fn http_error(&mut self, e: &HttpError, preset: Preset) -> io::Result<After> {
        let key = self.api_key.as_deref();
        let body = match &e.body {
            Some(body) => e.echo_key.map_or_else(|| body.clone(), |echo| echo.append(body, key)),
            None => {
                let mut parts = self.exchange.http_error_parts(e, preset);
                if let Some(echo) = e.echo_key {
                    parts.message = echo.append(&parts.message, key);
                }
                let mut body = self.exchange.error_json(&parts);
                if let (Some(limit), Some(error)) = (e.stated_limit, body.get_mut("error")) {
                    stated_limit(error, e, &limit);
                }
                body.to_string()
            }
        };
        let id = self.request_id();
        let length = body.len().to_string();
        let retry_after_ms = e.retry_after_ms.map(|ms| ms.to_string());
        let should_retry = e.should_retry.map(|b| b.to_string());
        let mut headers: Vec<(&str, &str)> = Vec::new();
        if !e.headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("content-type")) {
            headers.push(("content-type", "application/json"));
        }
        match e.endless {
            Some(_) => headers.push(("transfer-encoding", "chunked")),
            None => headers.push(("content-length", &length)),
        }
        headers.extend(id_header(&id));
        if let Some(v) = &e.retry_after {
            headers.push(("retry-after", v));
        }
        if let Some(v) = &retry_after_ms {
            headers.push(("retry-after-ms", v));
        }
        if let Some(v) = &should_retry {
            headers.push(("x-should-retry", v));
        }
        headers.extend(e.headers.iter().map(|(n, v)| (n.as_str(), v.as_str())));
        self.conn.send(&http::head(e.status, &headers, self.keep_alive));
        if let Some(bytes) = e.stall_body_after {
            let sent = usize::try_from(bytes).unwrap_or(usize::MAX).min(body.len());
            self.conn.send(&body.as_bytes()[..sent]);
            self.conn.hang().await;
            return Ok(After::Close);
        }
        let Some(interval_ms) = e.endless else {
            self.conn.send(body.as_bytes());
            return Ok(After::KeepAlive);
        };
        self.conn.send_chunk(body.as_bytes());
        self.flood(FloodOf::Newlines, 0, interval_ms).await
    }

    pub(super) fn error_response(&mut self, status: u16, parts: &ErrorParts) {
        let body = self.exchange.error_json(parts).to_string();
        let id = self.request_id();
        let headers: Vec<_> = id_header(&id).collect();
        send_json(self.conn, status, &body, &headers, self.keep_alive);
    }

    pub(super) fn wrong_content_type(&mut self, w: &WrongContentType) {
        let id = self.request_id();
        let length = w.body.len().to_string();
        let mut headers = vec![("content-type", w.content_type.as_str()), ("content-length", &length)];
        headers.extend(id_header(&id));
        headers.extend(w.headers.iter().map(|(n, v)| (n.as_str(), v.as_str())));
        self.conn.send(&http::head(200, &headers, self.keep_alive));
        self.conn.send(w.body.as_bytes());
    }

    /// A redirect with an empty body, to its location or back to the request's own URL.
    pub(super) fn redirect(&mut self, r: &Redirect) -> io::Result<After> {
        let location = match &r.location {
            Some(url) => url.clone(),
            None => format!("http://{}{}", self.conn.local_addr()?, self.path),
        };
        let id = self.request_id();
        let mut headers = vec![("location", location.as_str()), ("content-length", "0")];
        headers.extend(id_header(&id));
        headers.extend(r.headers.iter().map(|(n, v)| (n.as_str(), v.as_str())));
        self.conn.send(&http::head(r.status, &headers, self.keep_alive));
        Ok(After::KeepAlive)
    }

    /// A 200 that is not an answer: a JSON body, or a stream that ends cleanly.
    pub(super) fn not_an_answer(&mut self, shape: NotAnAnswer) {
        match self.exchange.not_an_answer(shape) {
            NotAnAnswerBody::Json(body) => {
                let head = self.json_head(Some(body.len()), &[]);
                self.conn.send(&head);
                self.conn.send(body.as_bytes());
            }
            NotAnAnswerBody::Events(events) => {
                let head = self.stream_head(&[]);
                self.conn.send(&head);
                for event in events {
                    self.conn.send_chunk(event.as_bytes());
                }
                self.conn.send_last_chunk();
            }
        }
    }
}
