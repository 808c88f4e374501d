//! The HTTP client rmcp's streamable HTTP transport sends through ([`McpHttp`]): reqwest 0.13 with
//! a TLS configuration of ours (`tls.rs`: rustls on ring with the Mozilla roots, no process-wide
//! crypto provider), and three rules of ours:
//!
//! - rmcp knows the URL without its secrets (it logs it, and its errors print it); the client alone
//!   holds the URL as given, and sends every request there.
//! - No redirect is followed: a 3xx is [`HttpError::Redirect`], naming the status and the origin
//!   it pointed to. Following it would send the session, the tools' arguments and the idempotency
//!   keys to another server, and a 302 would turn the POST into a GET.
//! - Each message is bounded ([`MCP_MAX_MESSAGE_BYTES`]) where its bytes arrive: an answer over it
//!   is replaced by an error answer saying so (see `bound.rs`; events, `sse.rs`).
//!
//! An error of ours never holds the URL ([`HttpError`]).

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use futures_util::stream::BoxStream;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue, LOCATION, RETRY_AFTER};
use reqwest::{RequestBuilder, Response, StatusCode, Url};
use reqwest_013 as reqwest;
use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::common::http_header::{
    EVENT_STREAM_MIME_TYPE, HEADER_LAST_EVENT_ID, HEADER_SESSION_ID, JSON_MIME_TYPE,
};
use rmcp::transport::streamable_http_client::{
    HttpStatusError, SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
};
use sse_stream::Sse;

use crate::bound::{Dropped, MCP_MAX_MESSAGE_BYTES, screen};
use crate::http_error::HttpError;
use crate::sse::events;
use crate::text::{describe, shorten};
use crate::tls::client_config;

/// The most bytes of an error response's body read, for the JSON-RPC error it may hold: 64 KiB.
const ERROR_BODY_BYTES: usize = 64 * 1024;

/// The most characters of an error response's body shown in its error: 1000.
const ERROR_BODY_CHARS: usize = 1000;

type Failed = StreamableHttpError<HttpError>;

/// The client of one server: its URL as given, the client that sends there.
#[derive(Clone)]
pub(crate) struct McpHttp {
    client: reqwest::Client,
    url: Arc<Url>,
    server: Arc<str>,
}

impl McpHttp {
    /// The client of the server `server` at `url` (the URL as given, secrets and all).
    pub(crate) fn new(url: Url, server: &str) -> Result<Self, String> {
        let tls = client_config().map_err(|error| format!("TLS could not be set up: {}", describe(&error)))?;
        let client = reqwest::Client::builder()
            .user_agent(concat!("agentic-mcp/", env!("CARGO_PKG_VERSION")))
            .redirect(reqwest::redirect::Policy::none())
            .use_preconfigured_tls(tls)
            .build()
            .map_err(|error| format!("the HTTP client could not be built: {}", describe(&error)))?;
        Ok(Self { client, url: Arc::new(url), server: Arc::from(server) })
    }

    /// A request to the server's URL. rmcp's `uri` is the URL without its secrets, the one it was
    /// given: the request goes to the URL as given instead.
    fn request(
        &self,
        method: reqwest::Method,
        session: Option<&str>,
        auth: Option<String>,
        headers: HashMap<HeaderName, HeaderValue>,
    ) -> RequestBuilder {
        let mut request = self.client.request(method, Url::clone(&self.url));
        if let Some(session) = session {
            request = request.header(HEADER_SESSION_ID, session);
        }
        if let Some(token) = auth {
            request = request.bearer_auth(token);
        }
        headers.into_iter().fold(request, |request, (name, value)| request.header(name, value))
    }

    /// `response`, unless it is a redirect: that is an error naming where it pointed.
    fn not_redirected(&self, response: Response) -> Result<Response, Failed> {
        if !response.status().is_redirection() {
            return Ok(response);
        }
        let status = response.status().as_u16();
        let target = location_origin(&self.url, response.headers());
        Err(StreamableHttpError::Client(HttpError::Redirect { status, target }))
    }

    async fn post(
        &self,
        message: ClientJsonRpcMessage,
        session: Option<Arc<str>>,
        auth: Option<String>,
        headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, Failed> {
        let answered = match &message {
            ClientJsonRpcMessage::Request(request) => Some(request.id.clone()),
            _ => None,
        };
        // reqwest's `json` is a feature of its own; the body is the message's JSON all the same.
        let body = serde_json::to_vec(&message).map_err(StreamableHttpError::Deserialize)?;
        let request = self
            .request(reqwest::Method::POST, session.as_deref(), auth, headers)
            .header(ACCEPT, format!("{EVENT_STREAM_MIME_TYPE}, {JSON_MIME_TYPE}"))
            .header(CONTENT_TYPE, JSON_MIME_TYPE)
            .body(body);
        let response = self.not_redirected(request.send().await.map_err(client)?)?;
        let status = response.status();
        if matches!(status, StatusCode::ACCEPTED | StatusCode::NO_CONTENT) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if status == StatusCode::NOT_FOUND && session.is_some() {
            return Err(StreamableHttpError::SessionExpired);
        }
        if !status.is_success() {
            // A JSON-RPC error in the body is the server's answer to the request.
            return failure(response).await.map(|refusal| StreamableHttpPostResponse::Json(refusal, None));
        }
        let session = response.headers().get(HEADER_SESSION_ID).and_then(|id| id.to_str().ok()).map(str::to_owned);
        let kind = content_type(response.headers());
        let Some(answered) = answered else {
            // A notification or an answer of ours: nothing in the body is waited for.
            return Ok(StreamableHttpPostResponse::Accepted);
        };
        match kind {
            Some(kind) if media_type_is(&kind, EVENT_STREAM_MIME_TYPE) => {
                Ok(StreamableHttpPostResponse::Sse(events(response, self.server.to_string()), session))
            }
            Some(kind) if media_type_is(&kind, JSON_MIME_TYPE) => {
                let Some(body) = bounded_body(response, MCP_MAX_MESSAGE_BYTES).await? else {
                    return Ok(StreamableHttpPostResponse::Json(Dropped::TooLarge.answer(answered), session));
                };
                let body = match screen(&body) {
                    Some(stand_in) => stand_in.into_bytes(),
                    None => body,
                };
                match serde_json::from_slice(&body) {
                    Ok(answer) => Ok(StreamableHttpPostResponse::Json(answer, session)),
                    Err(error) => Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(format!(
                        "the answer is not a JSON-RPC message ({error})"
                    )))),
                }
            }
            kind => Err(StreamableHttpError::UnexpectedContentType(kind)),
        }
    }

    async fn stream(
        &self,
        session: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth: Option<String>,
        headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Failed> {
        let mut request = self
            .request(reqwest::Method::GET, session.as_deref(), auth, headers)
            .header(ACCEPT, EVENT_STREAM_MIME_TYPE);
        if let Some(last_event_id) = last_event_id {
            request = request.header(HEADER_LAST_EVENT_ID, last_event_id);
        }
        let response = self.not_redirected(request.send().await.map_err(client)?)?;
        if response.status() == StatusCode::METHOD_NOT_ALLOWED {
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        if !response.status().is_success() {
            return Err(failure_words(response).await);
        }
        match content_type(response.headers()) {
            Some(kind) if media_type_is(&kind, EVENT_STREAM_MIME_TYPE) => Ok(events(response, self.server.to_string())),
            kind => Err(StreamableHttpError::UnexpectedContentType(kind)),
        }
    }

    async fn delete(
        &self,
        session: Arc<str>,
        auth: Option<String>,
        headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Failed> {
        let request = self.request(reqwest::Method::DELETE, Some(&session), auth, headers);
        let response = self.not_redirected(request.send().await.map_err(client)?)?;
        // A server that keeps its sessions to itself says 405: nothing to end.
        if response.status().is_success() || response.status() == StatusCode::METHOD_NOT_ALLOWED {
            return Ok(());
        }
        Err(failure_words(response).await)
    }
}

// rmcp's `*_with_response_limits` and `*_with_max_sse_event_size` fall back on these: our bounds
// are kept in `post` and `events`, not passed in.
impl StreamableHttpClient for McpHttp {
    type Error = HttpError;

    async fn post_message(
        &self,
        _uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, Failed> {
        self.post(message, session_id, auth_header, custom_headers).await
    }

    async fn delete_session(
        &self,
        _uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Failed> {
        self.delete(session_id, auth_header, custom_headers).await
    }

    async fn get_stream(
        &self,
        _uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Failed> {
        self.stream(session_id, last_event_id, auth_header, custom_headers).await
    }
}

fn client(error: reqwest::Error) -> Failed {
    StreamableHttpError::Client(HttpError::from(error))
}

/// What a response that is not a success says: the JSON-RPC error its body holds, the server's
/// words for the request; else an error with the status and the start of the body.
async fn failure(response: Response) -> Result<ServerJsonRpcMessage, Failed> {
    let status = response.status();
    let retry_after = response.headers().get(RETRY_AFTER).and_then(|value| value.to_str().ok()).map(str::to_owned);
    let body = prefix(response, ERROR_BODY_BYTES).await?;
    if let Ok(refusal @ JsonRpcMessage::Error(_)) = serde_json::from_slice::<ServerJsonRpcMessage>(&body) {
        return Ok(refusal);
    }
    if status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error() {
        return Err(StreamableHttpError::HttpStatus(HttpStatusError::new(status.as_u16(), retry_after)));
    }
    let body = String::from_utf8_lossy(&body);
    let words = match body.trim() {
        "" => format!("HTTP {status}"),
        body => format!("HTTP {status}: {}", shorten(body, ERROR_BODY_CHARS)),
    };
    Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(words)))
}

/// [`failure`] as an error, a JSON-RPC error in words too (no request waits for it).
async fn failure_words(response: Response) -> Failed {
    let status = response.status();
    match failure(response).await {
        Ok(JsonRpcMessage::Error(refusal)) => StreamableHttpError::UnexpectedServerResponse(Cow::Owned(format!(
            "HTTP {status}: {} ({})",
            shorten(&refusal.error.message, ERROR_BODY_CHARS),
            refusal.error.code.0
        ))),
        Ok(_) => StreamableHttpError::UnexpectedServerResponse(Cow::Owned(format!("HTTP {status}"))),
        Err(error) => error,
    }
}

/// Up to `limit` bytes of `response`'s body (the rest is not read).
async fn prefix(mut response: Response, limit: usize) -> Result<Vec<u8>, Failed> {
    let mut body = Vec::new();
    while body.len() < limit {
        match response.chunk().await.map_err(client)? {
            Some(chunk) => body.extend_from_slice(&chunk[..chunk.len().min(limit - body.len())]),
            None => break,
        }
    }
    Ok(body)
}

/// `response`'s whole body, or `None` when it is longer than `limit` (read no further).
async fn bounded_body(mut response: Response, limit: usize) -> Result<Option<Vec<u8>>, Failed> {
    if response.content_length().is_some_and(|length| length > limit as u64) {
        return Ok(None);
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(client)? {
        if chunk.len() > limit - body.len() {
            return Ok(None);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Some(body))
}

fn content_type(headers: &HeaderMap) -> Option<String> {
    headers.get(CONTENT_TYPE).map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned())
}

/// Whether the media type of `content_type` (parameters aside, any case) is `expected`.
fn media_type_is(content_type: &str, expected: &str) -> bool {
    content_type.split(';').next().is_some_and(|essence| essence.trim().eq_ignore_ascii_case(expected))
}

/// The origin (`scheme://host[:port]`) the `Location` of `headers` points to, resolved against
/// `url`: never its userinfo, path, query or fragment.
fn location_origin(url: &Url, headers: &HeaderMap) -> String {
    let Some(location) = headers.get(LOCATION) else { return "nowhere (no `Location` header)".to_owned() };
    let resolved = location.to_str().ok().and_then(|location| url.join(location.trim()).ok());
    match resolved.map(|resolved| resolved.origin()) {
        Some(origin) if origin.is_tuple() => origin.ascii_serialization(),
        _ => "an invalid or non-HTTP `Location`".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_location_is_shown_as_its_origin_alone() {
        let url = Url::parse("https://ann:pw@mcp.example.com/mcp?token=t").unwrap();
        let origin = |location: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(LOCATION, HeaderValue::from_str(location).unwrap());
            location_origin(&url, &headers)
        };
        assert_eq!(origin("http://evil.example:8080/steal?token=t"), "http://evil.example:8080");
        assert_eq!(origin("/elsewhere?token=t#x"), "https://mcp.example.com");
        assert_eq!(origin("https://u:p@other.example/"), "https://other.example");
        assert_eq!(origin("mailto:a@b"), "an invalid or non-HTTP `Location`");
        assert_eq!(location_origin(&url, &HeaderMap::new()), "nowhere (no `Location` header)");
    }

    #[test]
    fn media_types_match_their_essence() {
        assert!(media_type_is("Text/Event-Stream; charset=utf-8", EVENT_STREAM_MIME_TYPE));
        assert!(!media_type_is("application/jsonx", JSON_MIME_TYPE));
    }
}
