//! async-openai's door in (feature `async-openai`): `Client::with_http_service` takes any tower
//! service of its `HttpRequestFactory` (which builds each attempt's request anew, so every request
//! can be sent again) answering `reqwest::Response`, whose error converts into `OpenAIError`.
//! [`Retry`] around its `ReqwestService` is one: this module gives its error that conversion.
//!
//! ```
//! use agentic_runtime::tower::RetryLayer;
//! use async_openai::config::OpenAIConfig;
//! use async_openai::middleware::ReqwestService;
//!
//! let service = RetryLayer::default().around(ReqwestService::new(reqwest_013::Client::new()));
//! let client = async_openai::Client::with_config(OpenAIConfig::new()).with_http_service(service);
//! # let _ = client;
//! ```
//!
//! (`reqwest_013` is reqwest 0.13, the one async-openai 0.43 is built on: `reqwest = "0.13"` in
//! your manifest.) async-openai's own `OpenAIRetryLayer` is then off: the client sends through this
//! service alone.

use async_openai::error::OpenAIError;

#[cfg(doc)]
use super::Retry;
use crate::resilient::Failure;

impl From<Failure<OpenAIError>> for OpenAIError {
    /// The service's last error, as async-openai made it, when the layers gave up on one; else
    /// (the last call was cut at its limit, or a breaker or the deadline refused the request) the
    /// failure itself, boxed, with its decisions: `OpenAIError::Boxed`, which downcasts to
    /// `Failure<OpenAIError>`.
    fn from(failure: Failure<OpenAIError>) -> Self {
        if failure.last_error().is_some() {
            if let Some(error) = failure.into_last_error() {
                return error;
            }
            unreachable!("the last error was there");
        }
        OpenAIError::Boxed(Box::new(failure))
    }
}
