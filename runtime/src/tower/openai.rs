//! async-openai's door in (feature `async-openai`): `Client::with_http_service` takes any tower
//! service of its `HttpRequestFactory` (which builds each attempt's request anew, so every request
//! can be sent again) answering `reqwest::Response`, whose error converts into `OpenAIError`.
//! [`Retry`] around its `ReqwestService` (or any such service) is one.
//!
//! What the client gets back (docs/design.md §16, "Adapters"): a success's response, its body
//! bounded in time ([`BodyBounds`](super::BodyBounds)); when the layers gave up, an error, never
//! the response: `OpenAIError::Boxed` of the [`Failure<OpenAIError>`](Failure), whose
//! [`last_error`](Failure::last_error) is what async-openai would have made of the last response
//! (its `ApiError`, from the at most 16 KiB the layer read, the key taken out) or the service's
//! last error. The failure's source is the [`GaveUp`](crate::resilient::GaveUp) mark, so that a
//! retry around the client (`Resilient`, another layer) stops too, where an `ApiError` would have
//! been judged again and every call multiplied. [`last_openai_error`] reads the error either way.
//!
//! ```no_run
//! use agentic_runtime::tower::RetryLayer;
//! use async_openai::{config::OpenAIConfig, middleware::ReqwestService};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let key = std::env::var("OPENAI_API_KEY")?;
//! // Named to the layer, which cannot see it in requests async-openai builds after it: no piece of it
//! // shows in a decision when a server echoes it (in a request's headers, the layer finds it itself).
//! let layer = RetryLayer::default().redacting(key.clone());
//! let service = layer.around(ReqwestService::new(reqwest::Client::new())); // reqwest 0.13
//! let config = OpenAIConfig::new().with_api_key(key);
//! let client = async_openai::Client::with_config(config).with_http_service(service);
//! # let _ = client;
//! # Ok(())
//! # }
//! ```
//!
//! (reqwest 0.13 is the one async-openai 0.43 is built on: `reqwest = "0.13"` in your manifest.)
//! async-openai's own `OpenAIRetryLayer` is then off: the client sends through this
//! service alone.

use std::task::{Context, Poll};

use async_openai::error::{ApiError, ApiErrorResponse, OpenAIError, WrappedError};
use async_openai::middleware::HttpRequestFactory;
use reqwest::Response;

use super::attempts::{self, Ended, Exchange};
use super::{Replay, ResponseFuture, Retry};
use crate::resilient::Failure;

/// [`Retry`] as async-openai's HTTP service: both retry layers around `S` (async-openai's
/// `ReqwestService`, or any service of its request factory whose error converts into
/// `OpenAIError`), handing back a success, or the [`Failure`] when the layers gave up.
impl<S> tower_service::Service<HttpRequestFactory> for Retry<S>
where
    S: tower_service::Service<HttpRequestFactory, Response = Response> + Clone + Send + 'static,
    S::Error: Into<OpenAIError>,
    S::Future: Send,
{
    type Response = Response;
    type Error = Failure<OpenAIError>;
    type Future = ResponseFuture<Response, OpenAIError>;

    /// Always ready: each call waits for the wrapped service's readiness itself.
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: HttpRequestFactory) -> Self::Future {
        let mut exchange = OpenAi(self.inner.clone());
        let layered = self.layered.clone();
        Box::pin(async move {
            match attempts::run(&layered, Factory(request), &mut exchange).await {
                Ended::Answered(response) => Ok(response),
                // An error with the mark, not the response: async-openai would make an `ApiError`
                // of it, and the mark would be lost.
                Ended::GaveUpOn { response, body, failure } => {
                    Err(failure.with_last_error(api_error(response.status(), &body)))
                }
                Ended::Failed(failure) => Err(failure),
            }
        })
    }
}

/// async-openai's request factory: each call builds its request anew.
struct Factory(HttpRequestFactory);

impl Replay for Factory {
    fn replay(&self) -> Option<Self> {
        Some(Self(self.0.clone()))
    }
}

/// The service the layers send each call through.
struct OpenAi<S>(S);

impl<S> Exchange<Factory> for OpenAi<S>
where
    S: tower_service::Service<HttpRequestFactory, Response = Response> + Send,
    S::Error: Into<OpenAIError>,
    S::Future: Send,
{
    type Response = Response;
    type Error = OpenAIError;

    async fn send(&mut self, request: Factory) -> Result<Response, OpenAIError> {
        std::future::poll_fn(|cx| self.0.poll_ready(cx)).await.map_err(Into::into)?;
        self.0.call(request.0).await.map_err(Into::into)
    }
}

/// The error async-openai makes of an error response of `status` whose body is `body` (its
/// `read_error_response`, on the bytes the layer read): a 5xx's body whole as the message (it need
/// not be JSON), else OpenAI's `{"error": ...}`, else the body it could not read.
fn api_error(status: http::StatusCode, body: &[u8]) -> OpenAIError {
    let api = |api_error| OpenAIError::ApiError(ApiErrorResponse { status_code: status, api_error });
    if status.is_server_error() {
        let message = String::from_utf8_lossy(body).into_owned();
        return api(ApiError { message, r#type: None, param: None, code: None, misalignment: None });
    }
    match serde_json::from_slice::<WrappedError>(body) {
        Ok(wrapped) => api(wrapped.error),
        Err(error) => OpenAIError::JSONDeserialize(error, String::from_utf8_lossy(body).into_owned()),
    }
}

impl From<Failure<OpenAIError>> for OpenAIError {
    /// The failure itself, boxed: `OpenAIError::Boxed`, which downcasts to `Failure<OpenAIError>`,
    /// with its decisions and the last error ([`last_openai_error`] reads it), and whose source is
    /// the [`GaveUp`](crate::resilient::GaveUp) mark a retry around the client finds.
    fn from(failure: Failure<OpenAIError>) -> Self {
        OpenAIError::Boxed(Box::new(failure))
    }
}

/// The error async-openai itself would have returned: the last error inside the failure the layer
/// gave back (`OpenAIError::Boxed` of a [`Failure<OpenAIError>`](Failure), as many layers deep as
/// they are nested), else `error` as it is. `None` when the layers gave up with no error of the
/// server's or the service's (the last call was cut at its limit, a breaker or the deadline refused
/// the request): the failure says why.
///
/// ```
/// use agentic_runtime::tower::last_openai_error;
/// use async_openai::error::OpenAIError;
///
/// fn status(error: &OpenAIError) -> Option<u16> {
///     match last_openai_error(error)? {
///         OpenAIError::ApiError(response) => Some(response.status_code.as_u16()),
///         _ => None,
///     }
/// }
/// # assert_eq!(status(&OpenAIError::InvalidArgument("no model".into())), None);
/// ```
pub fn last_openai_error(error: &OpenAIError) -> Option<&OpenAIError> {
    let OpenAIError::Boxed(boxed) = error else { return Some(error) };
    match boxed.downcast_ref::<Failure<OpenAIError>>() {
        Some(failure) => last_openai_error(failure.last_error()?),
        None => Some(error),
    }
}
