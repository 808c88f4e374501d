//! What every HTTP wire shares, naming none: where a call goes ([`endpoint`]), the configuration
//! from the environment and which server its key may go to ([`env`](mod@env)), sending it
//! ([`send`]), the server's hints ([`hints`]), errors typed and redacted ([`errors`]), the stream
//! loop ([`driver`]), borrowed-parse helpers ([`json`]), what a decoder could not read ([`decode`]),
//! and the seam a wire plugs into ([`seam`]: [`Codec`], [`Decoder`], [`Out`]; its module docs are
//! the manual for writing a wire).
//!
//! A call is [`stream_call`]`::<W>`: generic over the wire, so the hot path (the event loop and the
//! decoder) is one monomorphic copy per wire, and the cold paths (errors, hints, malformed events,
//! the fallback) are out of line and shared.

pub(crate) mod decode;
pub(crate) mod driver;
pub(crate) mod endpoint;
pub(crate) mod env;
pub(crate) mod errors;
pub(crate) mod hints;
pub(crate) mod json;
pub(crate) mod seam;
pub(crate) mod send;

use reqwest::header::{HeaderMap, HeaderName};

pub(crate) use self::decode::{DecodeError, parse, read};
pub(crate) use self::driver::{Item, replay};
pub(crate) use self::endpoint::Endpoint;
pub(crate) use self::env::{ConfigError, EnvNames};
#[cfg(any(feature = "tower", feature = "genai"))]
pub(crate) use self::errors::{BodyEnd, MAX_ERROR_BODY};
pub(crate) use self::errors::{ErrorFacts, http_error};
// The 2xx bodies other clients could not use, as the providers judge the same (`resilient`'s adapters).
#[cfg(feature = "genai")]
pub(crate) use self::errors::{empty_answer, event_error, not_a_stream};
#[cfg(any(feature = "async-openai", feature = "genai"))]
pub(crate) use self::errors::{malformed, undecodable_answer};
pub(crate) use self::hints::Hints;
pub(crate) use self::json::{ModelName, tokens};
pub(crate) use self::seam::{Auth, Codec, Decoder, Form, Out};
use self::send::{Fallback, post, secret_header};
pub(crate) use super::secret::Secret;
use super::{EventStream, Request};
use crate::error::ModelError;

/// The error our providers make of an HTTP error response with status `status`, `headers` and
/// (bounded: at most [`MAX_ERROR_BODY`] bytes, read as far as `end` says) `body`: the body read with
/// the shapes every server sends, the headers' hints (`retry-after-ms`, `Retry-After`,
/// `x-should-retry`) over the body's (Google's `RetryInfo`). One reading for every client, so that
/// the same response gets the same verdict wherever it came through. No key is redacted: the
/// `Classify` of another client's error cannot know the key that client sent
/// ([`response_error_redacted`] for a caller that does).
#[cfg(any(feature = "async-openai", feature = "genai"))]
pub(crate) fn response_error(status: u16, headers: &HeaderMap, body: &[u8], end: BodyEnd) -> ModelError {
    response_error_redacted(status, headers, body, end, None)
}

/// [`response_error`] with `secret` (the request's key, when the caller knows it) and its pieces
/// redacted from the server's text, as our providers redact theirs: a server may echo the key.
#[cfg(any(feature = "tower", feature = "genai"))]
pub(crate) fn response_error_redacted(
    status: u16,
    headers: &HeaderMap,
    body: &[u8],
    end: BodyEnd,
    secret: Option<&Secret>,
) -> ModelError {
    let error = errors::http_error_of(status, body, end, ErrorFacts::parse, secret);
    Hints::from_headers(headers, std::time::SystemTime::now()).apply(error)
}

/// One call of `request` over `wire` to `endpoint`: the request built from the wire's URL, headers
/// and body (and its fallback), sent within `request.bounds`, and its response read by the wire's
/// decoder. A request that cannot be built fails the stream at once.
pub(crate) fn stream_call<W: Codec>(wire: &W, endpoint: &Endpoint, request: &Request<'_>) -> EventStream<'static> {
    match build(wire, endpoint, request) {
        Ok((client, built, fallback)) => {
            driver::stream(client, built, fallback, wire.decoder(request), endpoint.api_key.clone(), request.bounds)
        }
        Err(error) => failed(error),
    }
}

/// The client, the request, and for a wire that has one the fallback request.
fn build<W: Codec>(
    wire: &W,
    endpoint: &Endpoint,
    request: &Request<'_>,
) -> Result<(reqwest::Client, reqwest::Request, Option<Fallback>), ModelError> {
    let client = endpoint.client(request.bounds.connect)?;
    let secret = endpoint.api_key.as_ref();
    let mut headers = HeaderMap::new();
    if let Some(secret) = secret {
        headers.insert(HeaderName::from_static(W::AUTH.header), secret_header(W::AUTH.prefix, secret)?);
    }
    wire.headers(&mut headers);
    let url = wire.url(endpoint, request)?;
    let post = |form| post(&client, &url, headers.clone(), &wire.body(endpoint, request, form), request, secret);
    let built = post(Form::Primary)?;
    let fallback = match wire.fallback(request) {
        Some(applies) => Some(Fallback { request: post(Form::Fallback)?, applies }),
        None => None,
    };
    Ok((client, built, fallback))
}

/// A stream that fails at once with `error`.
pub(crate) fn failed(error: ModelError) -> EventStream<'static> {
    Box::pin(futures_util::stream::iter([Err(error)]))
}
