//! A tower layer that applies a [`RetryPolicy`] to any tower `Service` of HTTP requests (feature
//! `tower`): a team's own client, reqwest's, hyper's, or async-openai's (`with_http_service`, feature
//! `async-openai`) gets the runtime's two retry layers, classifiers, hints, deadline and storm
//! control without switching to our providers (docs/design.md §16, "Adapters").
//!
//! Each request goes through both layers of an exec: layer 1 calls again while the failure is
//! transient (`session_retries`), layer 2 makes another attempt (`max_retries` in all), stops for
//! good on a permanent failure, or returns a programming error at once. A response with an error
//! status (400 and above) is judged as our HTTP providers judge the same response: its body (at most
//! 16 KiB) and headers make the same `ModelError`, so the verdicts and the server's hints
//! (`retry-after-ms`, `Retry-After`, `x-should-retry`, Google's `RetryInfo`) are the same.
//!
//! What it hands back is bounded as the request is (docs/design.md §16, "Adapters"):
//! - a success (any status below 400): its bytes as the server sends them (a stream stays a
//!   stream), its body bounded in time ([`BodyBounds`]): the first bytes within
//!   `first_token_timeout_ms`, no gap longer than `idle_timeout_ms`, the end by the request's
//!   deadline (`budget_ms`, else `turn_timeout_ms`, from the request's start); past a bound the
//!   body ends with an error that names it;
//! - an error response the layers gave up on: its status and headers, and as its body what the
//!   layer read of it (at most 16 KiB, within the call's limit), then the end (`content-length`
//!   says so): a body that stalled or was longer comes back cut where the layer stopped reading;
//! - the service's last error, or a [`Failure`] when there is none ([`Retry`]);
//! - through async-openai, an error in place of the response (`tower/openai.rs`).
//!
//! No piece of the API key (found in the request, or named with [`RetryLayer::redacting`]) is in
//! any of them: not in the body or headers of an error response handed back, nor in the text of
//! an error ([`Classify::redact`]). The layer's bound stops at the last byte of the body: what the
//! client does with the bytes (decoding them, calling tools) is its own.
//!
//! Each call is cut at its limit (`timeout_ms`, within the deadline) until the response's head,
//! and an error response's body. A request whose body cannot be sent again (a stream) gets its
//! one call.
//!
//! The layer's storm control is its own scope's unless it shares a [`Runtime`]'s
//! ([`RetryLayer::sharing`]): then its requests and the runtime's execs spend one retry quota,
//! wait out one cooldown and count in one breaker.
//!
//! ```
//! use agentic_runtime::tower::RetryLayer;
//! use tower::ServiceBuilder;
//!
//! let service = ServiceBuilder::new()
//!     .layer(RetryLayer::default().with_observer(|decision| eprintln!("{decision}")))
//!     .timeout(std::time::Duration::from_secs(30)) // each call's own, inside the retries
//!     .service(reqwest::Client::new());
//! # let _ = service;
//! ```
//!
//! The README's snippets of the adapters are compiled here, beside the code, with the features they
//! need: this one, async-openai's (`tower/openai.rs`) and `RetryMiddleware`'s.

mod attempts;
mod bounded;
#[cfg(feature = "reqwest-middleware")]
mod middleware;
#[cfg(feature = "async-openai")]
#[cfg_attr(docsrs, doc(cfg(feature = "async-openai")))]
mod openai;
mod replay;
mod response;

use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use self::attempts::Exchange;
pub use self::bounded::{BodyBounds, Bounded};
#[cfg(feature = "reqwest-middleware")]
#[cfg_attr(docsrs, doc(cfg(feature = "reqwest-middleware")))]
pub use self::middleware::RetryMiddleware;
#[cfg(feature = "async-openai")]
#[cfg_attr(docsrs, doc(cfg(feature = "async-openai")))]
pub use self::openai::last_openai_error;
pub use self::replay::Replay;
pub use self::response::{ErrorBody, HttpResponse};
use crate::decision::{Decision, Observer};
use crate::error::PolicyError;
use crate::exec::Runtime;
use crate::policy::RetryPolicy;
use crate::policy::backoff::Rng;
use crate::provider::Secret;
use crate::resilient::{Classify, Failure};
use crate::retry::validate_policy;
use crate::storm::pace::Pacing;
use crate::storm::{Governor, RetryQuota};

/// A tower [`Layer`](tower_layer::Layer) that wraps a service in [`Retry`]: both retry layers of an
/// exec, under one [`RetryPolicy`], for every request the service sends.
#[derive(Clone)]
pub struct RetryLayer {
    layered: Arc<Layered>,
}

/// What every request of a layer shares: the policy, the scope's storm control, who hears the
/// decisions.
pub(crate) struct Layered {
    pub(crate) policy: RetryPolicy,
    pub(crate) governor: Arc<Governor>,
    pub(crate) observer: Option<Arc<Observer>>,
    pub(crate) name: Option<&'static str>,
    /// The key named with [`RetryLayer::redacting`], over any a request carries.
    pub(crate) secret: Option<Secret>,
    /// The jitter seed and a count of requests, so that each request's delays replay (`None`: random).
    seed: Option<(u64, AtomicU64)>,
}

impl Layered {
    /// One request's jitter: drawn from the seed and the request's number when seeded, else seeded
    /// at random at its first use (a request that succeeds at once draws nothing).
    pub(crate) fn rng(&self) -> Rng {
        match &self.seed {
            Some((seed, requests)) => {
                let request = requests.fetch_add(1, Ordering::Relaxed);
                Rng::with_seed(seed ^ request.wrapping_mul(0x9E37_79B9_7F4A_7C15))
            }
            None => Rng::unseeded(),
        }
    }

    /// The name the scope's cooldown metrics give it.
    pub(crate) fn scope(&self) -> &str {
        self.name.unwrap_or("tower")
    }
}

impl fmt::Debug for RetryLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let layered = &*self.layered;
        f.debug_struct("RetryLayer")
            .field("policy", &layered.policy)
            .field("governor", &layered.governor)
            .field("observer", &layered.observer.is_some())
            .field("name", &layered.name)
            .finish()
    }
}

impl Default for RetryLayer {
    /// The default policy ([`RetryPolicy::new`]), with a storm control of its own.
    fn default() -> Self {
        Self::with_governor(RetryPolicy::new(), Arc::new(own_governor()))
    }
}

/// A layer's own storm control: the standard retry quota and cooldowns over the layer's requests,
/// no breaker, no pacing (the layer reads no rate-limit headers).
fn own_governor() -> Governor {
    Governor::new("tower".to_owned(), Some(RetryQuota::standard()), None).with_pacing(&Pacing::off())
}

impl RetryLayer {
    /// A layer applying `policy`, with a storm control of its own (the standard retry quota and
    /// the server's cooldowns, over this layer's requests). An invalid policy is a [`PolicyError`]:
    /// a `const` policy is judged at compile time already.
    pub fn new(policy: RetryPolicy) -> Result<Self, PolicyError> {
        validate_policy(&policy)?;
        Ok(Self::with_governor(policy, Arc::new(own_governor())))
    }

    /// A layer applying `policy` that shares `runtime`'s storm control (its first target's, when it
    /// has fallbacks): its requests and the runtime's execs spend one retry quota (and a fleet's,
    /// with a shared store), wait out one cooldown, and count in one breaker. The runtime's observer
    /// hears this layer's decisions too, unless [`RetryLayer::with_observer`] names another. Build
    /// it from the runtime as configured: a later `with_*` on the runtime makes it a new scope.
    pub fn sharing(runtime: &Runtime, policy: RetryPolicy) -> Result<Self, PolicyError> {
        validate_policy(&policy)?;
        let mut layer = Self::with_governor(policy, runtime.governor().clone());
        Arc::get_mut(&mut layer.layered).expect("a new layer is not shared yet").observer = runtime.observer().cloned();
        Ok(layer)
    }

    fn with_governor(policy: RetryPolicy, governor: Arc<Governor>) -> Self {
        Self { layered: Arc::new(Layered { policy, governor, observer: None, name: None, secret: None, seed: None }) }
    }

    /// Calls `observer` with every decision of both layers as it is made (before the sleep it
    /// decides), as [`RuntimeBuilder::with_observer`](crate::exec::RuntimeBuilder::with_observer) does for execs.
    pub fn with_observer(self, observer: impl Fn(&Decision) + Send + Sync + 'static) -> Self {
        self.map(|layered| layered.observer = Some(Arc::new(observer)))
    }

    /// Names the requests in decisions, logs and failures (`"request"` otherwise).
    pub fn with_name(self, name: &'static str) -> Self {
        self.map(|layered| layered.name = Some(name))
    }

    /// Keeps `key` and every piece of it out of the decisions, logs and failures, and out of what
    /// the layer hands back (an error response's body and headers, the service's last error), when
    /// a server echoes it in an error. The layer finds a key in each request's headers itself
    /// ([`Replay::api_key`]); name it here for a client that builds its requests after the layer
    /// (async-openai's `HttpRequestFactory`). An empty key is no key.
    pub fn redacting(self, key: impl Into<String>) -> Self {
        let secret = Secret::new(Some(key.into()));
        self.map(|layered| layered.secret = secret)
    }

    /// Seeds the jitter so that delays replay exactly (each request draws its own from the seed).
    pub fn with_jitter_seed(self, seed: u64) -> Self {
        self.map(|layered| layered.seed = Some((seed, AtomicU64::new(0))))
    }

    /// `inner` wrapped in the layer: [`tower_layer::Layer::layer`], without importing the trait.
    pub fn around<S>(&self, inner: S) -> Retry<S> {
        Retry { inner, layered: self.layered.clone() }
    }

    /// The policy applied.
    pub fn policy(&self) -> &RetryPolicy {
        &self.layered.policy
    }

    /// `self` changed by `change`: a layer that is shared already (cloned, or given to a service)
    /// gets a copy of its parts, that shares the same storm control.
    fn map(mut self, change: impl FnOnce(&mut Layered)) -> Self {
        if Arc::get_mut(&mut self.layered).is_none() {
            let layered = &*self.layered;
            let seed = layered.seed.as_ref().map(|(seed, _)| (*seed, AtomicU64::new(0)));
            self.layered = Arc::new(Layered {
                policy: layered.policy,
                governor: layered.governor.clone(),
                observer: layered.observer.clone(),
                name: layered.name,
                secret: layered.secret.clone(),
                seed,
            });
        }
        change(Arc::get_mut(&mut self.layered).expect("unshared above"));
        self
    }
}

impl<S> tower_layer::Layer<S> for RetryLayer {
    type Service = Retry<S>;

    fn layer(&self, inner: S) -> Retry<S> {
        self.around(inner)
    }
}

/// A service whose requests go through both retry layers ([`RetryLayer`]). Its error is the
/// [`Failure`] of a request the layers gave up on without a response to hand back: the service's
/// last error ([`Failure::last_error`], without the key), or none when the last call was cut at its
/// limit or a breaker or the deadline refused it; with the decisions that led there. As
/// async-openai's HTTP service (its `HttpRequestFactory`), it hands back the [`Failure`] whenever
/// the layers gave up, its last error the `ApiError` async-openai would have made of the response
/// (`tower/openai.rs`): the [`GaveUp`](crate::resilient::GaveUp) mark then reaches a retry around
/// the client.
#[derive(Clone)]
pub struct Retry<S> {
    inner: S,
    layered: Arc<Layered>,
}

impl<S: fmt::Debug> fmt::Debug for Retry<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Retry").field("inner", &self.inner).field("policy", &self.layered.policy).finish()
    }
}

impl<S> Retry<S> {
    /// The wrapped service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The wrapped service, for good.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

/// The future of a request through [`Retry`].
pub type ResponseFuture<T, E> = Pin<Box<dyn Future<Output = Result<T, Failure<E>>> + Send>>;

impl<S, R> tower_service::Service<R> for Retry<S>
where
    S: tower_service::Service<R> + Clone + Send + 'static,
    S::Response: HttpResponse + Send + 'static,
    S::Error: Classify + fmt::Display + Send + 'static,
    S::Future: Send,
    R: Replay + Send + 'static,
{
    type Response = S::Response;
    type Error = Failure<S::Error>;
    type Future = ResponseFuture<S::Response, S::Error>;

    /// Always ready: each call waits for the wrapped service's readiness itself, on a clone of it,
    /// so that a concurrency limit or a buffer inside holds each attempt, not the whole request.
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: R) -> Self::Future {
        let mut exchange = Tower(self.inner.clone());
        let layered = self.layered.clone();
        Box::pin(async move { attempts::run(&layered, request, &mut exchange).await.into_result() })
    }
}

/// A tower service as the layers' way to send: its readiness, then the call.
struct Tower<S>(S);

impl<S, R> Exchange<R> for Tower<S>
where
    S: tower_service::Service<R> + Send,
    S::Response: HttpResponse + Send,
    S::Error: Classify + fmt::Display + Send,
    S::Future: Send,
    R: Send,
{
    type Response = S::Response;
    type Error = S::Error;

    async fn send(&mut self, request: R) -> Result<S::Response, S::Error> {
        std::future::poll_fn(|cx| self.0.poll_ready(cx)).await?;
        self.0.call(request).await
    }
}
