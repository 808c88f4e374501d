//! A [`reqwest_middleware::Middleware`] with the tower layer's rules (feature `reqwest-middleware`):
//! a team on reqwest-middleware keeps its client and its other middleware, and each request goes
//! through the runtime's two retry layers, as [`RetryLayer`] sends one through a tower service.
//!
//! ```
//! use agentic_runtime::tower::RetryMiddleware;
//!
//! let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new()) // reqwest 0.13
//!     .with(RetryMiddleware::default())
//!     .build();
//! # let _ = client;
//! ```
//!
//! (reqwest 0.13 is the one reqwest-middleware 0.5 is built on: `reqwest = "0.13"` in your
//! manifest.)

use std::future::Future;
use std::pin::Pin;

use http::Extensions;
use reqwest::{Request, Response};
use reqwest_middleware::{Middleware, Next};

use super::RetryLayer;
use super::attempts::{self, Exchange};
use crate::resilient::{Failure, GaveUp};

/// A [`Middleware`] (reqwest-middleware 0.5, reqwest 0.13) that sends each request through both
/// retry layers of a [`RetryLayer`]: its policy, hints, deadline and storm control; its observer
/// hears every decision.
///
/// What it does that reqwest-retry cannot:
/// - it honours all three of the server's hints: `Retry-After` (seconds, or an HTTP date),
///   `retry-after-ms`, and `x-should-retry` (`false` makes a 503 final, `true` makes a status
///   that is final by default worth another call), because an error response is read into the
///   same `ModelError` our HTTP providers make of it, its JSON error's code and message too (a 429
///   for a spent quota is permanent, an overflowing context is no rate limit);
/// - no piece of the request's API key (found in its headers or query, or named with
///   [`RetryLayer::redacting`]) reaches a decision, a failure, an error, or the body and headers
///   of an error response handed back, when a server echoes it (name it to the layer when a
///   middleware after this one adds it);
/// - it runs both layers of an exec: calls again while the failure is transient
///   (`session_retries`), then judges the last failure for another attempt (`max_retries`);
/// - one deadline (`budget_ms`) bounds the whole request, waits included, up to the last byte of
///   the body the caller reads (what the caller then does with the bytes is its own), and a
///   per-call limit (`timeout_ms`) each call until its head (and an error response's body);
/// - its retries spend a retry quota, and with [`RetryLayer::sharing`] the runtime's: a team's
///   client and our providers spend one budget per scope, wait out one cooldown and count in one
///   breaker.
///
/// Each attempt runs the rest of the chain (the middleware after this one, then the client) on a
/// copy of the request made before it is sent; a request whose body is a stream cannot be copied
/// (`try_clone` is `None`) and gets one attempt. A success is handed back as it streams, its body
/// bounded in time ([`BodyBounds`](super::BodyBounds): the first bytes, the gaps, the end by the
/// deadline); when the layers give up on an error response, that response is handed back with
/// what the layer read of its body (at most 16 KiB), then the end, for the caller to read its
/// error as it would without the middleware. An error is the chain's last one when there is one
/// (without the key); else (the last call was cut at
/// its limit, or a breaker or the deadline refused it) a [`reqwest_middleware::Error::Middleware`]
/// whose `anyhow::Error` downcasts to the [`Failure<reqwest_middleware::Error>`](Failure), with the
/// decisions.
///
/// ```
/// use agentic_runtime::RetryPolicy;
/// use agentic_runtime::resilient::Failure;
/// use agentic_runtime::tower::{RetryLayer, RetryMiddleware};
///
/// # async fn ask(url: &str) -> Result<(), Box<dyn std::error::Error>> {
/// let layer = RetryLayer::new(RetryPolicy::new().with_max_retries(4))?
///     .with_observer(|decision| eprintln!("{decision}"));
/// let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
///     .with(RetryMiddleware::new(layer))
///     .build();
/// match client.post(url).body(r#"{"model": "gpt-4o-mini", "messages": []}"#).send().await {
///     Ok(response) => println!("{}", response.status()),
///     Err(reqwest_middleware::Error::Middleware(error)) => {
///         let failure = error.downcast_ref::<Failure<reqwest_middleware::Error>>();
///         eprintln!("{} decisions", failure.map_or(0, |failure| failure.decisions().len()));
///     }
///     Err(error) => eprintln!("{error}"),
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, Default)]
pub struct RetryMiddleware {
    layer: RetryLayer,
}

impl RetryMiddleware {
    /// A middleware applying `layer`'s policy, with its storm control and observer.
    pub fn new(layer: RetryLayer) -> Self {
        Self { layer }
    }

    /// The layer whose rules the middleware applies.
    pub fn layer(&self) -> &RetryLayer {
        &self.layer
    }
}

impl From<RetryLayer> for RetryMiddleware {
    fn from(layer: RetryLayer) -> Self {
        Self::new(layer)
    }
}

/// The future `Middleware::handle` returns (the trait is `#[async_trait]`: its signature, written
/// out, so that the crate needs no `async-trait` of its own).
type Handled<'f> = Pin<Box<dyn Future<Output = reqwest_middleware::Result<Response>> + Send + 'f>>;

impl Middleware for RetryMiddleware {
    fn handle<'s, 'x, 'n, 'f>(&'s self, request: Request, extensions: &'x mut Extensions, next: Next<'n>) -> Handled<'f>
    where
        's: 'f,
        'x: 'f,
        'n: 'f,
        Self: 'f,
    {
        Box::pin(async move {
            let mut chain = Chain { next, extensions };
            let result = attempts::run(&self.layer.layered, request, &mut chain).await.into_result();
            result.map_err(|failure| {
                // The chain's error says nothing of the layers: a retrying middleware before this
                // one finds the mark in the request's extensions, and does not call again.
                chain.extensions.insert(GaveUp::new(failure.kind()));
                into_error(failure)
            })
        })
    }
}

/// The rest of a middleware chain as the layers' way to send: each attempt runs it anew.
struct Chain<'n, 'x> {
    next: Next<'n>,
    extensions: &'x mut Extensions,
}

impl Exchange<Request> for Chain<'_, '_> {
    type Response = Response;
    type Error = reqwest_middleware::Error;

    fn send(&mut self, request: Request) -> impl Future<Output = reqwest_middleware::Result<Response>> + Send {
        self.next.clone().run(request, self.extensions)
    }

    fn gave_up(&mut self) -> Option<GaveUp> {
        self.extensions.remove::<GaveUp>()
    }
}

/// The chain's last error, or else the failure itself (with its decisions) as a middleware's error.
fn into_error(failure: Failure<reqwest_middleware::Error>) -> reqwest_middleware::Error {
    if failure.last_error().is_none() {
        return reqwest_middleware::Error::middleware(failure);
    }
    failure.into_last_error().expect("checked above")
}
