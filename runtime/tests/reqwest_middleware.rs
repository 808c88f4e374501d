//! `tower::RetryMiddleware` in a reqwest-middleware client (0.5, reqwest 0.13) against the chaos
//! server: the server's hints are the waits, a refusal is one request, a burst is ridden out, a
//! request whose body cannot be copied is sent once, the middleware's errors are the chain's or the
//! failure with its decisions, and the decisions are the ones an exec over our OpenAI provider
//! makes of the same responses.

#[macro_use]
mod adapters_support;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use adapters_support::{Answer, KEY, Refused, chat_body, chat_url, layer, start, verdicts};
use agentic_chaos::{ChaosServer, Scenario, Step};
use agentic_runtime::decision::{Layer, Verdict};
use agentic_runtime::resilient::{Failure, GaveUp};
use agentic_runtime::tower::{RetryLayer, RetryMiddleware};
use agentic_runtime::{ExecErrorKind, RetryPolicy};
use http::Extensions;
use reqwest_013::{Request, Response};
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware, Next, RequestBuilder};

/// A client whose requests go through `middleware`.
fn client(middleware: RetryMiddleware) -> ClientWithMiddleware {
    ClientBuilder::new(reqwest_013::Client::new()).with(middleware).build()
}

/// A streamed chat completion request to `server`, without its body.
fn post(client: &ClientWithMiddleware, server: &ChaosServer) -> RequestBuilder {
    client.post(chat_url(server)).bearer_auth(KEY).header("content-type", "application/json")
}

/// One request through the middleware built from `layer`: what came back, or the error.
async fn send(layer: RetryLayer, server: &ChaosServer) -> Result<Answer, Refused> {
    let client = client(RetryMiddleware::from(layer));
    let response = post(&client, server).body(chat_body()).send().await.map_err(refused)?;
    let (status, headers) = (response.status().as_u16(), response.headers().clone());
    let gave_up = response.extensions().get::<GaveUp>().map(GaveUp::kind);
    let debug = format!("{response:?}");
    let body = response.text().await.map_err(Refused::client)?;
    Ok(Answer { status, headers: Some(headers), gave_up, shown: format!("{debug}\n{body}"), body })
}

/// The middleware's error as the checks read it: the layers' failure, or the client's own error.
fn refused(error: reqwest_middleware::Error) -> Refused {
    let failure = match &error {
        reqwest_middleware::Error::Middleware(error) => error.downcast_ref::<Failure<reqwest_middleware::Error>>(),
        reqwest_middleware::Error::Reqwest(_) => None,
    };
    match failure {
        Some(failure) => Refused::failure(failure),
        None => Refused::client(error),
    }
}

adapter_tests!(send);

#[tokio::test(start_paused = true)]
async fn a_request_whose_streamed_body_cannot_be_copied_is_sent_once() {
    let server = start(Scenario::new().then(Step::http_error(503)).otherwise(Step::ok("42"))).await;
    let (layer, decisions) = layer(RetryPolicy::new());
    let client = client(layer.into());
    let frames =
        futures_util::stream::iter([Ok::<_, std::io::Error>(http_body::Frame::data(bytes::Bytes::from(chat_body())))]);
    let body = reqwest_013::Body::wrap(http_body_util::StreamBody::new(frames));
    let response = post(&client, &server).body(body).send().await.unwrap();
    // The 503 is handed back: a second request would have had no body to send.
    assert_eq!(response.status(), 503);
    assert_eq!(server.requests_served(), 1);
    let decisions = decisions.lock().unwrap();
    assert_eq!(verdicts(&decisions), [(Layer::Session, Verdict::GiveUp)]);
    assert!(decisions[0].reason().to_string().contains("cannot be sent again"), "{}", decisions[0].reason());
}

#[tokio::test(start_paused = true)]
async fn a_probe_sent_once_for_its_streamed_body_is_heard_by_the_breaker() {
    use agentic_runtime::Runtime;
    use agentic_runtime::provider::OpenAiProvider;
    use agentic_runtime::storm::{BreakerSettings, BreakerState};
    // Four 503s open the primary's breaker; its probe, a request whose body cannot be copied, gets a
    // 400: the server answered (the request's own fault).
    let primary = start(
        Scenario::new()
            .then(Step::http_error(503))
            .then(Step::http_error(503))
            .then(Step::http_error(503))
            .then(Step::http_error(503))
            .otherwise(Step::http_error(400)),
    )
    .await;
    let secondary = start(Scenario::new().otherwise(Step::ok("from the fallback"))).await;
    let provider = |server: &ChaosServer, model: &str| {
        OpenAiProvider::new(server.openai_base_url(), Some(KEY.to_owned())).with_model(model)
    };
    let breaker = BreakerSettings::new(50, 4, Duration::from_secs(60), Duration::from_secs(30)).unwrap();
    let runtime = Runtime::builder(provider(&primary, "model-a"))
        .with_fallback(provider(&secondary, "model-b"))
        .with_breaker(breaker)
        .build()
        .unwrap();
    let policy = RetryPolicy::new().with_max_retries(1).with_session_retries(3);
    let shared = RetryLayer::sharing(&runtime, policy).unwrap().with_jitter_seed(1);
    assert_eq!(send(shared.clone(), &primary).await.unwrap().status, 503);
    assert!(matches!(runtime.targets()[0].breaker, Some(BreakerState::Open { .. })));
    tokio::time::advance(Duration::from_secs(30)).await;
    let frames =
        futures_util::stream::iter([Ok::<_, std::io::Error>(http_body::Frame::data(bytes::Bytes::from(chat_body())))]);
    let body = reqwest_013::Body::wrap(http_body_util::StreamBody::new(frames));
    let client = client(RetryMiddleware::from(shared));
    let response = post(&client, &primary).body(body).send().await.unwrap();
    assert_eq!(response.status(), 400);
    assert_eq!(primary.requests_served(), 5, "the probe went, once");
    // Its answer closed the breaker (before, it was never heard: half-open for the open period,
    // every exec skipping the primary).
    assert_eq!(runtime.targets()[0].breaker, Some(BreakerState::Closed));
    runtime.exec("What is the answer?").await.unwrap_err();
    assert_eq!((primary.requests_served(), secondary.requests_served()), (6, 0), "the next exec went to the primary");
}

#[tokio::test(start_paused = true)]
async fn when_the_layers_give_up_on_a_transport_error_the_error_is_the_clients_last() {
    let server = start(Scenario::new().otherwise(Step::close_before_headers())).await;
    let (layer, _) = layer(RetryPolicy::new().with_max_retries(2).with_session_retries(1));
    let client = client(RetryMiddleware::new(layer));
    let error = post(&client, &server).body(chat_body()).send().await.unwrap_err();
    assert!(matches!(error, reqwest_middleware::Error::Reqwest(_)), "{error:?}");
    assert!(error.is_request() || error.is_connect(), "{error:?}");
    assert_eq!(server.requests_served(), 4);
}

#[tokio::test(start_paused = true)]
async fn when_no_call_leaves_an_error_the_error_is_the_failure_with_its_decisions() {
    let server = start(Scenario::new().otherwise(Step::hang())).await;
    let policy = RetryPolicy::new().with_timeout_ms(1000).with_budget_ms(Some(5000));
    let (layer, decisions) = layer(policy);
    let client = client(RetryMiddleware::new(layer));
    let started = tokio::time::Instant::now();
    let error = post(&client, &server).body(chat_body()).send().await.unwrap_err();
    assert!(started.elapsed() <= Duration::from_secs(5), "{:?}", started.elapsed());
    let reqwest_middleware::Error::Middleware(error) = error else { panic!("not the middleware's error: {error:?}") };
    let failure = error.downcast_ref::<Failure<reqwest_middleware::Error>>().expect("the failure");
    assert_eq!(failure.kind(), ExecErrorKind::Refused);
    assert!(failure.last_error().is_none());
    assert!(failure.decisions().iter().any(|decision| decision.error().contains("timed out after 1 s")), "{failure}");
    assert_eq!(failure.decisions().len(), decisions.lock().unwrap().len());
}

#[tokio::test(start_paused = true)]
async fn the_default_middleware_rides_out_a_503_on_the_default_policy() {
    let server = start(Scenario::new().then(Step::http_error(503)).otherwise(Step::ok("42"))).await;
    let client = client(RetryMiddleware::default());
    let response = post(&client, &server).body(chat_body()).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(server.requests_served(), 2);
    assert_eq!(RetryMiddleware::default().layer().policy(), &RetryPolicy::new());
}

/// What a middleware of a chain returns.
type Chained<'a> = Pin<Box<dyn Future<Output = reqwest_middleware::Result<Response>> + Send + 'a>>;

/// The requests that reached the middleware before the retry middleware, and after it.
static BEFORE: AtomicUsize = AtomicUsize::new(0);
static AFTER: AtomicUsize = AtomicUsize::new(0);

fn before<'a>(request: Request, extensions: &'a mut Extensions, next: Next<'a>) -> Chained<'a> {
    BEFORE.fetch_add(1, Ordering::Relaxed);
    next.run(request, extensions)
}

fn after<'a>(request: Request, extensions: &'a mut Extensions, next: Next<'a>) -> Chained<'a> {
    AFTER.fetch_add(1, Ordering::Relaxed);
    next.run(request, extensions)
}

#[tokio::test(start_paused = true)]
async fn each_attempt_runs_the_rest_of_the_chain_and_what_comes_before_runs_once() {
    let server = start(Scenario::new().then_times(2, Step::http_error(503)).otherwise(Step::ok("42"))).await;
    let (layer, _) = layer(RetryPolicy::new());
    let client = ClientBuilder::new(reqwest_013::Client::new())
        .with(before)
        .with(RetryMiddleware::new(layer))
        .with(after)
        .build();
    let response = post(&client, &server).body(chat_body()).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(server.requests_served(), 3);
    assert_eq!((BEFORE.load(Ordering::Relaxed), AFTER.load(Ordering::Relaxed)), (1, 3));
}

/// Two `RetryMiddleware`s in one chain: the outer one sends no more requests than the
/// inner one alone, on an error response (handed back marked) and on a transport error (the
/// client's own, handed back as it was, the mark in the request's extensions). Before, the outer
/// one judged each again as transient: 16 requests where the inner one alone sent 4.
#[tokio::test(start_paused = true)]
async fn a_middleware_around_one_that_gave_up_sends_no_more_requests() {
    let policy = RetryPolicy::new().with_max_retries(2).with_session_retries(1);
    for step in [Step::from(Step::http_error(503)), Step::close_before_headers()] {
        let alone = start(Scenario::new().otherwise(step.clone())).await;
        let _ = post(&client(layer(policy).0.into()), &alone).body(chat_body()).send().await;
        assert_eq!(alone.requests_served(), 4, "{step:?}: two attempts of two calls");

        let nested = start(Scenario::new().otherwise(step.clone())).await;
        let (outer, decisions) = layer(policy);
        let both = ClientBuilder::new(reqwest_013::Client::new())
            .with(RetryMiddleware::new(outer))
            .with(RetryMiddleware::new(layer(policy).0))
            .build();
        let answer = post(&both, &nested).body(chat_body()).send().await;
        assert_eq!(nested.requests_served(), 4, "{step:?}: the inner middleware's calls, once");
        match answer {
            Ok(response) => assert_eq!(response.status(), 503, "the server's response, handed back"),
            Err(error) => {
                assert!(matches!(error, reqwest_middleware::Error::Reqwest(_)), "the client's own: {error:?}")
            }
        }
        let decisions = decisions.lock().unwrap();
        assert_eq!(verdicts(&decisions), [(Layer::Session, Verdict::GiveUp), (Layer::Exec, Verdict::FailPermanently)]);
        let reason = decisions[0].reason().to_string();
        assert!(reason.starts_with("an inner retry layer gave up (kind `exhausted`)"), "{reason}");
    }
}
