//! The tower layer's success path: one request through an in-memory service that answers 200 at
//! once, bare, through `tower::RetryLayer`, and through tower's own `Retry` with a policy that
//! never retries (the least a retry layer does: clone the request, call, look at the result).
//! Run with `cargo bench --manifest-path benches/Cargo.toml --bench tower --features tower`.

use std::convert::Infallible;
use std::hint::black_box;

use bytes::Bytes;
use criterion::{Criterion, criterion_group, criterion_main};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt as _, Full};
use tower::ServiceExt as _;
use tower::retry::Policy;

use agentic_runtime::tower::RetryLayer;

type Response = http::Response<UnsyncBoxBody<Bytes, Infallible>>;

/// The service every variant wraps: answers 200 with a small body at once.
async fn answer(request: http::Request<Bytes>) -> Result<Response, Infallible> {
    black_box(&request);
    Ok(http::Response::new(Full::new(Bytes::from_static(b"data: {}\n\n")).boxed_unsync()))
}

fn request() -> http::Request<Bytes> {
    http::Request::post("http://127.0.0.1/v1/chat/completions")
        .header("content-type", "application/json")
        .header("authorization", "Bearer sk-bench")
        .body(Bytes::from_static(br#"{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}"#))
        .unwrap()
}

/// tower's `Retry` with a policy that retries nothing (but clones each request, as any retry
/// policy must before the call).
#[derive(Clone)]
struct Never;

impl Policy<http::Request<Bytes>, Response, Infallible> for Never {
    type Future = std::future::Ready<()>;

    fn retry(&mut self, _: &mut http::Request<Bytes>, _: &mut Result<Response, Infallible>) -> Option<Self::Future> {
        None
    }

    fn clone_request(&mut self, request: &http::Request<Bytes>) -> Option<http::Request<Bytes>> {
        Some(request.clone())
    }
}

fn success_path(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
    let bare = tower::service_fn(answer);
    let ours = RetryLayer::default().around(tower::service_fn(answer));
    let towers = tower::retry::Retry::new(Never, tower::service_fn(answer));
    let mut group = c.benchmark_group("tower_success");
    group.bench_function("bare", |b| b.to_async(&runtime).iter(|| bare.oneshot(request())));
    group.bench_function("tower_retry", |b| b.to_async(&runtime).iter(|| towers.clone().oneshot(request())));
    group.bench_function("retry_layer", |b| b.to_async(&runtime).iter(|| ours.clone().oneshot(request())));
    group.finish();
}

criterion_group!(benches, success_path);
criterion_main!(benches);
