//! async-openai's door in (feature `async-openai`): `Client::with_http_service` takes any tower
//! service of its `HttpRequestFactory` (which builds each attempt's request anew, so every request
//! can be sent again) answering `reqwest::Response`, whose error converts into `OpenAIError`.
//! [`Retry`] around its `ReqwestService` is one: this module gives its error that conversion.
//!
//! ```no_run
//! use agentic_runtime::tower::RetryLayer;
//! use async_openai::{config::OpenAIConfig, middleware::ReqwestService};
//! # use reqwest_013 as reqwest;
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
