//! What every HTTP wire shares, naming none: where a call goes ([`endpoint`]), the configuration
//! from the environment and which server its key may go to ([`env`](mod@env)), sending it
//! ([`send`]), the server's hints ([`hints`]), errors typed and redacted ([`errors`]), the stream
//! loop ([`driver`]), borrowed-parse helpers ([`json`]), what a decoder could not read ([`decode`]), and the seam a wire plugs into ([`seam`]:
//! [`Wire`], [`Decoder`], [`Out`]; its module docs are the manual for writing a wire).
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
pub(crate) use self::seam::{Auth, Decoder, Form, Out, Wire};
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

/// One call of `request` over `wire`: the request built from the wire's URL, headers and body (and
/// its fallback), sent within `request.bounds`, and its response read by the wire's decoder. A
/// request that cannot be built fails the stream at once.
pub(crate) fn stream_call<W: Wire>(wire: &W, request: &Request<'_>) -> EventStream<'static> {
    match build(wire, request) {
        Ok((client, built, fallback)) => driver::stream(
            client,
            built,
            fallback,
            wire.decoder(request),
            wire.endpoint().api_key.clone(),
            request.bounds,
        ),
        Err(error) => failed(error),
    }
}

/// The client, the request, and for a wire that has one the fallback request.
fn build<W: Wire>(
    wire: &W,
    request: &Request<'_>,
) -> Result<(reqwest::Client, reqwest::Request, Option<Fallback>), ModelError> {
    let endpoint = wire.endpoint();
    let client = endpoint.client(request.bounds.connect)?;
    let secret = endpoint.api_key.as_ref();
    let mut headers = HeaderMap::new();
    if let Some(secret) = secret {
        headers.insert(HeaderName::from_static(W::AUTH.header), secret_header(W::AUTH.prefix, secret)?);
    }
    wire.headers(&mut headers);
    let url = wire.url(request)?;
    let post = |form| post(&client, &url, headers.clone(), &wire.body(request, form), request, secret);
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

/// What every HTTP provider type has alike, written once: its `Provider` impl (`name` from
/// [`Wire::PROVIDER`], `scope` as the endpoint's fingerprint, `model`, `server`, `max_output_tokens`
/// as [`Wire::max_tokens`], `stream` as [`stream_call`]`::<Self>`), its `Debug` (the endpoint's
/// fields with the key `<redacted>`, then the listed fields of its own), the accessors `base_url`,
/// `model`, `has_api_key`, the builder `with_temperature`, the private `from_lookup` (the
/// environment through [`Wire::ENV`]) and, for tests, `body(request)` (the primary form). The type
/// holds `endpoint: Endpoint` and implements [`Wire`] and `new(base_url, api_key)`.
///
/// `impl_http_provider!(OpenAiProvider { max_tokens });`
macro_rules! impl_http_provider {
    ($provider:ident { $($field:ident),* $(,)? }) => {
        impl $provider {
            /// The base URL, without a trailing `/`.
            pub fn base_url(&self) -> &str {
                &self.endpoint.base_url
            }

            /// The model asked for.
            pub fn model(&self) -> &str {
                &self.endpoint.model
            }

            /// True when a key is set.
            pub fn has_api_key(&self) -> bool {
                self.endpoint.api_key.is_some()
            }

            /// The sampling temperature.
            ///
            /// # Default
            ///
            /// Unset: the server's default.
            pub fn with_temperature(mut self, temperature: f32) -> Self {
                self.endpoint.temperature = Some(temperature);
                self
            }

            /// The model's context window in tokens: with fallbacks (`RuntimeBuilder::with_fallback`), a
            /// conversation that overflows this provider moves to the next target when that one
            /// declares a larger window.
            ///
            /// # Default
            ///
            /// Unset: an overflow is compacted or ends the exec, as without fallbacks.
            pub fn with_context_window(mut self, tokens: u64) -> Self {
                self.endpoint.context_window = Some(tokens);
                self
            }

            /// The body of `request` as first sent.
            #[cfg(test)]
            fn body(&self, request: &$crate::provider::Request<'_>) -> serde_json::Value {
                $crate::provider::http::Wire::body(self, request, $crate::provider::http::Form::Primary)
            }

            /// The provider the variables `lookup` gives describe (see `from_env`).
            fn from_lookup(
                lookup: impl Fn(&str) -> Option<String>,
            ) -> Result<Self, $crate::provider::http::ConfigError> {
                let (base_url, api_key) = <Self as $crate::provider::http::Wire>::ENV.read(lookup)?;
                Ok(Self::new(base_url, api_key))
            }
        }

        impl ::std::fmt::Debug for $provider {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                self.endpoint
                    .debug_fields(&mut f.debug_struct(stringify!($provider)))
                    $(.field(stringify!($field), &self.$field))*
                    .finish_non_exhaustive()
            }
        }

        impl $crate::provider::Provider for $provider {
            fn name(&self) -> &str {
                <Self as $crate::provider::http::Wire>::PROVIDER
            }

            fn scope(&self) -> String {
                self.endpoint.scope(<Self as $crate::provider::http::Wire>::PROVIDER)
            }

            fn model(&self) -> Option<&str> {
                Some(&self.endpoint.model)
            }

            fn server(&self) -> Option<(&str, u16)> {
                self.endpoint.server()
            }

            fn context_window(&self) -> Option<u64> {
                self.endpoint.context_window
            }

            fn max_output_tokens(&self) -> Option<u64> {
                <Self as $crate::provider::http::Wire>::max_tokens(self)
            }

            fn stream<'a>(
                &'a self,
                request: &'a $crate::provider::Request<'a>,
            ) -> $crate::provider::EventStream<'a> {
                $crate::provider::http::stream_call(self, request)
            }
        }
    };
}
pub(crate) use impl_http_provider;
