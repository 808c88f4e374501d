//! `tower::RetryLayer` around reqwest's client against the chaos server: the server's hints are
//! the waits, a refusal is one request, a burst is ridden out, the body of a success streams
//! untouched and an error response is handed back whole, tower's own layers compose, and the
//! decisions are the ones an exec over our OpenAI provider makes of the same responses.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentic_chaos::{ChaosServer, EchoKey, Scenario, Step};
use agentic_runtime::budget::RetryQuota;
use agentic_runtime::tower::RetryLayer;
use agentic_runtime::{BreakerSettings, Decision, ExecErrorKind, Layer, OpenAiProvider, RetryPolicy, Runtime, Verdict};
use tower::{Service as _, ServiceBuilder, ServiceExt as _};

const KEY: &str = "sk-test-tower";

/// A streamed chat completion request to `server`.
fn request(server: &ChaosServer) -> reqwest::Request {
    let body = serde_json::json!({
        "model": "test-model",
        "stream": true,
        "messages": [{"role": "user", "content": "What is the answer?"}],
    });
    reqwest::Client::new()
        .post(format!("{}/chat/completions", server.openai_base_url()))
        .bearer_auth(KEY)
        .header("content-type", "application/json")
        .body(body.to_string())
        .build()
        .unwrap()
}

/// The text of a chat-completions event stream.
fn streamed_text(body: &str) -> String {
    body.lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter(|data| *data != "[DONE]")
        .filter_map(|data| serde_json::from_str::<serde_json::Value>(data).ok())
        .filter_map(|chunk| chunk["choices"][0]["delta"]["content"].as_str().map(str::to_owned))
        .collect()
}

/// A layer on `policy` (seeded) whose decisions land in the returned list.
fn layer(policy: RetryPolicy) -> (RetryLayer, Arc<Mutex<Vec<Decision>>>) {
    let decisions = Arc::new(Mutex::new(Vec::new()));
    let seen = decisions.clone();
    let layer = RetryLayer::new(policy)
        .unwrap()
        .with_jitter_seed(7)
        .with_observer(move |decision| seen.lock().unwrap().push(decision.clone()));
    (layer, decisions)
}

async fn start(scenario: Scenario) -> ChaosServer {
    ChaosServer::start(scenario).await.expect("the chaos server starts")
}

fn verdicts(decisions: &[Decision]) -> Vec<(Layer, Verdict)> {
    decisions.iter().map(|decision| (decision.layer, decision.verdict)).collect()
}

#[tokio::test(start_paused = true)]
async fn a_429_with_retry_after_waits_the_header_then_streams_the_answer_untouched() {
    let server = start(Scenario::new().then(Step::http_error(429).retry_after_secs(2)).otherwise(Step::ok("42"))).await;
    let (layer, decisions) = layer(RetryPolicy::new());
    let mut service = ServiceBuilder::new().layer(layer).service(reqwest::Client::new());
    let started = tokio::time::Instant::now();
    let response = service.ready().await.unwrap().call(request(&server)).await.unwrap();
    let waited = started.elapsed();
    assert_eq!(response.status(), 200);
    assert!(response.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"));
    assert_eq!(streamed_text(&response.text().await.unwrap()), "42");
    assert_eq!(server.requests_served(), 2);
    let decisions = decisions.lock().unwrap();
    assert_eq!(verdicts(&decisions), [(Layer::Session, Verdict::Retry)]);
    let delay = decisions[0].delay.unwrap();
    assert!(delay >= Duration::from_secs(2) && delay <= Duration::from_millis(2500), "{delay:?}");
    assert!(waited >= Duration::from_secs(2), "{waited:?}");
}

/// One request through `layer` around reqwest's client: the response (or the failure's kind), and
/// the requests the server saw.
async fn send(layer: RetryLayer, server: &ChaosServer) -> Result<reqwest::Response, ExecErrorKind> {
    let service = ServiceBuilder::new().layer(layer).service(reqwest::Client::new());
    service.oneshot(request(server)).await.map_err(|failure| failure.kind())
}

#[tokio::test(start_paused = true)]
async fn retry_after_ms_is_the_wait() {
    let server =
        start(Scenario::new().then(Step::http_error(429).retry_after_ms(1500)).otherwise(Step::ok("42"))).await;
    let (layer, decisions) = layer(RetryPolicy::new());
    let started = tokio::time::Instant::now();
    let response = send(layer, &server).await.unwrap();
    assert_eq!(streamed_text(&response.text().await.unwrap()), "42");
    let delay = decisions.lock().unwrap()[0].delay.unwrap();
    assert!(delay >= Duration::from_millis(1500) && delay <= Duration::from_millis(1875), "{delay:?}");
    assert!(started.elapsed() >= Duration::from_millis(1500));
    assert_eq!(server.requests_served(), 2);
}

#[tokio::test(start_paused = true)]
async fn x_should_retry_false_is_one_request_and_the_error_response_comes_back_whole() {
    let server = start(
        Scenario::new()
            .then(Step::http_error(503).should_retry(false).message("upstream refuses"))
            .otherwise(Step::ok("42")),
    )
    .await;
    let (layer, decisions) = layer(RetryPolicy::new());
    let response = send(layer, &server).await.unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(response.headers()["x-should-retry"], "false");
    let body: serde_json::Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
    assert_eq!(body["error"]["message"], "upstream refuses");
    assert_eq!(server.requests_served(), 1);
    assert_eq!(
        verdicts(&decisions.lock().unwrap()),
        [(Layer::Session, Verdict::GiveUp), (Layer::Exec, Verdict::FailPermanently)]
    );
}

#[tokio::test(start_paused = true)]
async fn a_burst_of_503s_is_ridden_out_through_both_layers() {
    let server =
        start(Scenario::new().then_times(5, Step::http_error(503)).otherwise(Step::ok("after the burst"))).await;
    let (layer, decisions) = layer(RetryPolicy::new());
    let response = send(layer, &server).await.unwrap();
    assert_eq!(streamed_text(&response.text().await.unwrap()), "after the burst");
    assert_eq!(server.requests_served(), 6);
    use {Layer::*, Verdict::*};
    let expected = [
        (Session, Retry),
        (Session, Retry),
        (Session, Retry),
        (Session, RetriesExhausted),
        (Exec, Retry),
        (Session, Retry),
    ];
    assert_eq!(verdicts(&decisions.lock().unwrap()), expected);
}

#[tokio::test(start_paused = true)]
async fn a_401_is_one_request() {
    let server = start(Scenario::new().then(Step::invalid_api_key()).otherwise(Step::ok("42"))).await;
    let (layer, decisions) = layer(RetryPolicy::new());
    let response = send(layer, &server).await.unwrap();
    assert_eq!(response.status(), 401);
    assert_eq!(server.requests_served(), 1);
    assert_eq!(decisions.lock().unwrap().last().unwrap().verdict, Verdict::FailPermanently);
    // The body is the server's, for the client to read; the key is not in any decision.
    assert!(response.text().await.unwrap().contains("API key"));
    assert!(decisions.lock().unwrap().iter().all(|decision| !decision.error.contains(KEY)));
}

#[tokio::test(start_paused = true)]
async fn a_connection_closed_before_the_first_byte_is_called_again() {
    let server = start(Scenario::new().then(Step::close_before_headers()).otherwise(Step::ok("42"))).await;
    let (layer, decisions) = layer(RetryPolicy::new());
    let response = send(layer, &server).await.unwrap();
    assert_eq!(streamed_text(&response.text().await.unwrap()), "42");
    assert_eq!(verdicts(&decisions.lock().unwrap()), [(Layer::Session, Verdict::Retry)]);
}

#[tokio::test(start_paused = true)]
async fn when_the_layers_give_up_on_a_transport_error_the_failure_carries_it_and_the_decisions() {
    let server = start(Scenario::new().otherwise(Step::close_before_headers())).await;
    let (layer, _) = layer(RetryPolicy::new().with_max_retries(2).with_session_retries(1));
    let service = ServiceBuilder::new().layer(layer).service(reqwest::Client::new());
    let failure = service.oneshot(request(&server)).await.unwrap_err();
    assert_eq!(failure.kind(), ExecErrorKind::Exhausted);
    assert!(failure.last_error().is_some_and(|error| error.is_request() || error.is_connect()), "{failure}");
    assert_eq!(server.requests_served(), 4);
    // Per call, layer 1's decision; after the second and the fourth, layer 2's too.
    assert_eq!(failure.decisions().len(), 6);
}

#[tokio::test(start_paused = true)]
async fn the_layer_composes_with_towers_timeout_and_concurrency_limit() {
    // The first call hangs: tower's timeout inside the layer cuts it, and the layer calls again.
    let server = start(Scenario::new().then(Step::hang()).otherwise(Step::ok("42"))).await;
    let (layer, decisions) = layer(RetryPolicy::new());
    let service = ServiceBuilder::new()
        .layer(layer)
        .concurrency_limit(1)
        .timeout(Duration::from_secs(5))
        .service(reqwest::Client::new());
    let response = service.oneshot(request(&server)).await.unwrap();
    assert_eq!(streamed_text(&response.text().await.unwrap()), "42");
    let decisions = decisions.lock().unwrap();
    assert_eq!(verdicts(&decisions), [(Layer::Session, Verdict::Retry)]);
    assert!(decisions[0].error.contains("timed out"), "{}", decisions[0].error);
}

#[tokio::test(start_paused = true)]
async fn the_policys_per_call_timeout_cuts_a_hung_call_and_the_deadline_holds() {
    let server = start(Scenario::new().otherwise(Step::hang())).await;
    let policy = RetryPolicy::new().with_timeout_ms(Some(1000)).with_budget_ms(Some(5000));
    let (layer, _) = layer(policy);
    let started = tokio::time::Instant::now();
    let service = ServiceBuilder::new().layer(layer).service(reqwest::Client::new());
    let failure = service.oneshot(request(&server)).await.unwrap_err();
    assert_eq!(failure.kind(), ExecErrorKind::Budget);
    assert!(failure.last_error().is_none(), "the last call was cut: no error of the service's");
    assert!(failure.decisions().iter().any(|decision| decision.error.contains("timed out after 1 s")), "{failure}");
    assert!(started.elapsed() <= Duration::from_secs(5), "{:?}", started.elapsed());
}

/// A runtime over our OpenAI provider on `server`, its retry budget two retries and no share of
/// successes, so that a few failures spend it.
fn runtime_with_a_small_budget(server: &ChaosServer) -> Runtime {
    let provider = OpenAiProvider::new(server.openai_base_url(), Some(KEY.to_owned())).with_model("test-model");
    let quota = RetryQuota::standard().with_min_retries(2).with_retry_percent(0);
    Runtime::new(provider).with_retry_quota(Some(quota)).with_jitter_seed(3)
}

#[tokio::test(start_paused = true)]
async fn in_an_outage_a_teams_client_and_our_provider_spend_one_retry_budget() {
    let server = start(Scenario::new().otherwise(Step::http_error(503))).await;
    let runtime = runtime_with_a_small_budget(&server);
    let shared = RetryLayer::sharing(&runtime, RetryPolicy::new()).unwrap().with_jitter_seed(7);
    let response = send(shared, &server).await.unwrap();
    assert_eq!(response.status(), 503);
    // The layer spent both retries, and the third was refused by the budget.
    assert_eq!(server.requests_served(), 3);
    let error = runtime.exec("What is the answer?").await.unwrap_err();
    assert_eq!(error.kind(), ExecErrorKind::Budget);
    assert_eq!(server.requests_served(), 4, "the exec's retry was refused: the budget was spent by the layer");
    assert_eq!(runtime.retry_budget(), Some(0));

    // A layer of its own spends a budget of its own: the runtime's is not touched.
    let server = start(Scenario::new().otherwise(Step::http_error(503))).await;
    let runtime = runtime_with_a_small_budget(&server);
    let (own, _) = layer(RetryPolicy::new());
    send(own, &server).await.unwrap();
    assert_eq!(runtime.retry_budget(), Some(2));
}

#[tokio::test(start_paused = true)]
async fn a_server_hint_to_the_layer_makes_the_runtimes_next_exec_wait() {
    let server = start(Scenario::new().then(Step::http_error(429).retry_after_secs(3)).otherwise(Step::ok("42"))).await;
    let runtime = runtime_with_a_small_budget(&server);
    let shared = RetryLayer::sharing(&runtime, RetryPolicy::new().with_max_retries(1).with_session_retries(0)).unwrap();
    // The layer's only call meets the 429 and gives the response back; its hint cools the scope.
    assert_eq!(send(shared, &server).await.unwrap().status(), 429);
    let reply = runtime.exec("What is the answer?").await.unwrap();
    assert_eq!(reply.text(), "42");
    assert_eq!(reply.decisions()[0].verdict, Verdict::CooledDown);
}

/// The decisions an exec over our OpenAI provider makes against a server playing `scenario`.
async fn exec_verdicts(scenario: Scenario, policy: &RetryPolicy) -> Vec<(Layer, Verdict)> {
    let server = start(scenario).await;
    let provider = OpenAiProvider::new(server.openai_base_url(), Some(KEY.to_owned())).with_model("test-model");
    let runtime = Runtime::new(provider).with_jitter_seed(1);
    match runtime.exec_with(policy, "What is the answer?").await {
        Ok(reply) => verdicts(reply.decisions()),
        Err(error) => verdicts(error.decisions()),
    }
}

#[tokio::test(start_paused = true)]
async fn the_layer_decides_as_an_exec_over_our_provider_decides_on_the_same_responses() {
    let policy = RetryPolicy::new();
    let faults: Vec<(&str, Step)> = vec![
        ("429 Retry-After", Step::http_error(429).retry_after_secs(2).into()),
        ("429 retry-after-ms", Step::http_error(429).retry_after_ms(700).into()),
        ("503 x-should-retry: false", Step::http_error(503).should_retry(false).into()),
        ("503", Step::http_error(503).into()),
        ("529", Step::http_error(529).into()),
        ("500 html", Step::http_error(500).body("<html>bad gateway</html>").header("content-type", "text/html").into()),
        ("401", Step::invalid_api_key().into()),
        ("400 context overflow", Step::context_overflow().into()),
        ("429 insufficient_quota", Step::http_error(429).code("insufficient_quota").into()),
        ("closed before headers", Step::close_before_headers()),
    ];
    for (name, fault) in faults {
        let scenario = || Scenario::new().then_times(2, fault.clone()).otherwise(Step::ok("42"));
        let server = start(scenario()).await;
        let (layer, decisions) = layer(policy);
        let _ = send(layer, &server).await;
        let ours = verdicts(&decisions.lock().unwrap());
        assert!(!ours.is_empty(), "{name}");
        assert_eq!(ours, exec_verdicts(scenario(), &policy).await, "{name}");
    }
}

#[tokio::test(start_paused = true)]
async fn no_piece_of_the_key_a_server_echoes_reaches_a_decision() {
    for echo in [EchoKey::Whole, EchoKey::First12, EchoKey::Last12, EchoKey::WithoutPrefix] {
        let server = start(Scenario::new().then(Step::http_error(503).echo_key(echo)).otherwise(Step::ok("42"))).await;
        let (layer, decisions) = layer(RetryPolicy::new());
        let response = send(layer, &server).await.unwrap();
        assert_eq!(streamed_text(&response.text().await.unwrap()), "42");
        let decisions = decisions.lock().unwrap();
        assert_eq!(decisions.len(), 1, "{echo:?}");
        let error = &decisions[0].error;
        assert!(error.contains("<redacted>"), "{echo:?}: {error}");
        for piece in [KEY, &KEY[..12], &KEY[KEY.len() - 12..], "test-tower"] {
            assert!(!error.contains(piece), "{echo:?}: {error}");
        }
    }
}

#[tokio::test(start_paused = true)]
async fn the_layers_failures_open_the_runtimes_breaker_and_its_execs_go_to_the_fallback() {
    let primary = start(Scenario::new().otherwise(Step::http_error(503))).await;
    let secondary = start(Scenario::new().otherwise(Step::ok("from the fallback"))).await;
    let provider = |server: &ChaosServer, model: &str| {
        OpenAiProvider::new(server.openai_base_url(), Some(KEY.to_owned())).with_model(model)
    };
    let breaker = BreakerSettings::new(50, 4, Duration::from_secs(60), Duration::from_secs(30)).unwrap();
    let runtime = Runtime::new(provider(&primary, "model-a"))
        .with_fallback(provider(&secondary, "model-b"))
        .with_breaker(breaker);
    // The team's client sends to the primary through a layer sharing the runtime's storm control.
    let policy = RetryPolicy::new().with_max_retries(1).with_session_retries(3);
    let shared = RetryLayer::sharing(&runtime, policy).unwrap().with_jitter_seed(1);
    let response = send(shared.clone(), &primary).await.unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(primary.requests_served(), 4, "four failed calls: the breaker opened after the fourth");
    // Open: the layer's next request is refused before any call, with the breaker in the failure.
    let failure = send_failure(shared, &primary).await;
    assert_eq!(failure.kind(), ExecErrorKind::Budget);
    assert!(failure.to_string().contains("open"), "{failure}");
    assert_eq!(primary.requests_served(), 4);
    // And the runtime's exec skips the open primary for its fallback, without calling it.
    let reply = runtime.exec("What is the answer?").await.unwrap();
    assert_eq!((reply.text(), reply.target()), ("from the fallback", Some("openai/model-b")));
    assert_eq!(primary.requests_served(), 4);
}

async fn send_failure(layer: RetryLayer, server: &ChaosServer) -> agentic_runtime::resilient::Failure<reqwest::Error> {
    let service = ServiceBuilder::new().layer(layer).service(reqwest::Client::new());
    service.oneshot(request(server)).await.unwrap_err()
}
