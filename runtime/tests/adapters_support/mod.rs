//! What the adapters' tests share (tower_layer.rs, reqwest_middleware.rs): the chaos server's
//! scenarios and what each must show, run through whichever client a test file sends with. A
//! client is an `async fn(RetryLayer, &ChaosServer) -> Result<Answer, Refused>`: one streamed chat
//! completion request through the layer (or what is built from it), and what came back.
//! `adapter_tests!(send)` makes a `#[tokio::test]` of each check, on the paused clock.
#![allow(dead_code)] // each test file uses part of it

/// One `#[tokio::test(start_paused = true)]` per check of this module, named as it, sending with
/// `$send`.
macro_rules! adapter_tests {
    ($send:ident) => {
        adapter_tests!(
            $send;
            a_429_with_retry_after_waits_the_header_then_streams_the_answer_untouched,
            retry_after_ms_is_the_wait,
            a_retry_after_date_is_waited_until,
            x_should_retry_false_is_one_request_and_the_error_response_comes_back_whole,
            a_burst_of_503s_is_ridden_out_through_both_layers,
            a_401_is_one_request,
            a_connection_closed_before_the_first_byte_is_called_again,
            in_an_outage_a_teams_client_and_our_provider_spend_one_retry_quota,
            a_server_hint_to_the_layer_makes_the_runtimes_next_exec_wait,
            the_layers_failures_open_the_runtimes_breaker_and_its_execs_go_to_the_fallback,
            no_piece_of_the_key_a_server_echoes_reaches_a_decision,
            the_layer_decides_as_an_exec_over_our_provider_decides_on_the_same_responses,
            an_error_body_that_stalls_comes_back_cut_by_the_deadline,
            a_success_whose_body_stalls_ends_by_the_deadline,
            an_error_body_of_50_mib_comes_back_as_the_16_kib_the_layer_read,
            no_piece_of_the_key_is_in_what_the_client_gets_back
        );
    };
    ($send:ident; $($check:ident),+) => {
        $(
            #[tokio::test(start_paused = true)]
            async fn $check() {
                adapters_support::$check($send).await;
            }
        )+
    };
}

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentic_chaos::{ChaosServer, EchoKey, Scenario, Step};
use agentic_runtime::decision::Decision;
use agentic_runtime::decision::{Layer, Verdict};
use agentic_runtime::provider::OpenAiProvider;
use agentic_runtime::resilient::Failure;
use agentic_runtime::storm::BreakerSettings;
use agentic_runtime::storm::RetryQuota;
use agentic_runtime::tower::RetryLayer;
use agentic_runtime::{ExecErrorKind, RetryPolicy, Runtime};

/// The API key every request sends: no decision may show it.
pub const KEY: &str = "sk-test-adapters";

/// The body of a streamed chat completion request.
pub fn chat_body() -> String {
    serde_json::json!({
        "model": "test-model",
        "stream": true,
        "messages": [{"role": "user", "content": "What is the answer?"}],
    })
    .to_string()
}

/// The chat completions URL of `server`.
pub fn chat_url(server: &ChaosServer) -> String {
    format!("{}/chat/completions", server.openai_base_url())
}

/// What a client got back: the response's status, headers (`None`: the client keeps none, as
/// async-openai's `ApiError`) and whole body; the kind of the layers' failure when they gave up on
/// it (the response's mark, or the failure async-openai gets); and everything a log of it would
/// show (the response's Debug and body, or the error's Display and Debug).
pub struct Answer {
    pub status: u16,
    pub headers: Option<http::HeaderMap>,
    pub body: String,
    pub gave_up: Option<ExecErrorKind>,
    pub shown: String,
}

/// Why a client got no response: the kind of the layers' failure when that is what came back (not
/// the client's own error), the error's text with its sources, and its Display and Debug.
#[derive(Debug)]
pub struct Refused {
    pub kind: Option<ExecErrorKind>,
    pub text: String,
    pub shown: String,
}

impl Refused {
    /// The client's own error (of the call, or of reading the body): its text, then its sources'.
    pub fn client(error: impl std::error::Error) -> Self {
        let mut text = error.to_string();
        let mut source = error.source();
        while let Some(cause) = source {
            text.push_str(&format!(": {cause}"));
            source = cause.source();
        }
        Self { kind: None, shown: format!("{text}\n{error:?}"), text }
    }

    /// The layers' failure.
    pub fn failure<E: std::fmt::Debug>(failure: &Failure<E>) -> Self {
        Self { kind: Some(failure.kind()), text: failure.to_string(), shown: format!("{failure}\n{failure:?}") }
    }
}

/// `work`, or a panic that says the client was still waiting after a minute (of the paused clock):
/// the layers' deadlines are all shorter.
pub async fn within_a_minute<T>(work: impl Future<Output = T>) -> T {
    match tokio::time::timeout(Duration::from_secs(60), work).await {
        Ok(done) => done,
        Err(_) => panic!("the client was still waiting after 60 s"),
    }
}

/// Asserts that `shown` holds no 8-byte piece of [`KEY`] (`what` names it in the message).
pub fn assert_no_piece_of_the_key(what: &str, shown: &str) {
    for window in KEY.as_bytes().windows(8) {
        let piece = std::str::from_utf8(window).unwrap();
        assert!(!shown.contains(piece), "{what}: `{piece}` of the key leaked:\n{shown}");
    }
}

/// The text of a chat-completions event stream.
pub fn streamed_text(body: &str) -> String {
    body.lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter(|data| *data != "[DONE]")
        .filter_map(|data| serde_json::from_str::<serde_json::Value>(data).ok())
        .filter_map(|chunk| chunk["choices"][0]["delta"]["content"].as_str().map(str::to_owned))
        .collect()
}

/// A layer on `policy` (seeded) whose decisions land in the returned list.
pub fn layer(policy: RetryPolicy) -> (RetryLayer, Arc<Mutex<Vec<Decision>>>) {
    let decisions = Arc::new(Mutex::new(Vec::new()));
    let seen = decisions.clone();
    let layer = RetryLayer::new(policy)
        .unwrap()
        .with_jitter_seed(7)
        .with_observer(move |decision| seen.lock().unwrap().push(decision.clone()));
    (layer, decisions)
}

pub async fn start(scenario: Scenario) -> ChaosServer {
    ChaosServer::start(scenario).await.expect("the chaos server starts")
}

pub fn verdicts(decisions: &[Decision]) -> Vec<(Layer, Verdict)> {
    decisions.iter().map(|decision| (decision.layer(), decision.verdict())).collect()
}

/// A 429 with `Retry-After: 2`, then an answer: the wait is the header's (at most a quarter more,
/// the jitter), and the answer streams untouched.
pub async fn a_429_with_retry_after_waits_the_header_then_streams_the_answer_untouched(
    send: impl AsyncFn(RetryLayer, &ChaosServer) -> Result<Answer, Refused>,
) {
    let server = start(Scenario::new().then(Step::http_error(429).retry_after_secs(2)).otherwise(Step::ok("42"))).await;
    let (layer, decisions) = layer(RetryPolicy::new());
    let started = tokio::time::Instant::now();
    let answer = send(layer, &server).await.unwrap();
    let waited = started.elapsed();
    assert_eq!(answer.status, 200);
    let headers = answer.headers.expect("a success's headers");
    assert!(headers["content-type"].to_str().unwrap().starts_with("text/event-stream"));
    assert_eq!(streamed_text(&answer.body), "42");
    assert_eq!(server.requests_served(), 2);
    let decisions = decisions.lock().unwrap();
    assert_eq!(verdicts(&decisions), [(Layer::Session, Verdict::Retry)]);
    let delay = decisions[0].delay().unwrap();
    assert!(delay >= Duration::from_secs(2) && delay <= Duration::from_millis(2500), "{delay:?}");
    assert!(waited >= Duration::from_secs(2), "{waited:?}");
}

/// A 429 with `retry-after-ms: 1500`: that is the wait.
pub async fn retry_after_ms_is_the_wait(send: impl AsyncFn(RetryLayer, &ChaosServer) -> Result<Answer, Refused>) {
    let server =
        start(Scenario::new().then(Step::http_error(429).retry_after_ms(1500)).otherwise(Step::ok("42"))).await;
    let (layer, decisions) = layer(RetryPolicy::new());
    let started = tokio::time::Instant::now();
    let answer = send(layer, &server).await.unwrap();
    assert_eq!(streamed_text(&answer.body), "42");
    let delay = decisions.lock().unwrap()[0].delay().unwrap();
    assert!(delay >= Duration::from_millis(1500) && delay <= Duration::from_millis(1875), "{delay:?}");
    assert!(started.elapsed() >= Duration::from_millis(1500));
    assert_eq!(server.requests_served(), 2);
}

/// A 429 whose `Retry-After` is an HTTP date 3 s ahead: the wait runs until then (the date's
/// whole seconds, less what the wall clock ran since; at most a quarter more, the jitter).
pub async fn a_retry_after_date_is_waited_until(
    send: impl AsyncFn(RetryLayer, &ChaosServer) -> Result<Answer, Refused>,
) {
    let date = httpdate::fmt_http_date(std::time::SystemTime::now() + Duration::from_secs(3));
    let server = start(Scenario::new().then(Step::http_error(429).retry_after(date)).otherwise(Step::ok("42"))).await;
    let (layer, decisions) = layer(RetryPolicy::new());
    let answer = send(layer, &server).await.unwrap();
    assert_eq!(streamed_text(&answer.body), "42");
    assert_eq!(server.requests_served(), 2);
    let delay = decisions.lock().unwrap()[0].delay().unwrap();
    assert!(delay > Duration::from_secs(1) && delay <= Duration::from_millis(3750), "{delay:?}");
}

/// A 503 with `x-should-retry: false`: one request, and the 503 handed back whole.
pub async fn x_should_retry_false_is_one_request_and_the_error_response_comes_back_whole(
    send: impl AsyncFn(RetryLayer, &ChaosServer) -> Result<Answer, Refused>,
) {
    let server = start(
        Scenario::new()
            .then(Step::http_error(503).should_retry(false).message("upstream refuses"))
            .otherwise(Step::ok("42")),
    )
    .await;
    let (layer, decisions) = layer(RetryPolicy::new());
    let answer = send(layer, &server).await.unwrap();
    assert_eq!((answer.status, answer.gave_up), (503, Some(ExecErrorKind::Permanent)));
    if let Some(headers) = &answer.headers {
        assert_eq!(headers["x-should-retry"], "false");
    }
    let body: serde_json::Value = serde_json::from_str(&answer.body).unwrap();
    assert_eq!(body["error"]["message"], "upstream refuses");
    assert_eq!(server.requests_served(), 1);
    assert_eq!(
        verdicts(&decisions.lock().unwrap()),
        [(Layer::Session, Verdict::GiveUp), (Layer::Exec, Verdict::FailPermanently)]
    );
}

/// Five 503s then an answer: layer 1's retries, then layer 2's attempt, six requests.
pub async fn a_burst_of_503s_is_ridden_out_through_both_layers(
    send: impl AsyncFn(RetryLayer, &ChaosServer) -> Result<Answer, Refused>,
) {
    let server =
        start(Scenario::new().then_times(5, Step::http_error(503)).otherwise(Step::ok("after the burst"))).await;
    let (layer, decisions) = layer(RetryPolicy::new());
    let answer = send(layer, &server).await.unwrap();
    assert_eq!(streamed_text(&answer.body), "after the burst");
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

/// An invalid key: one request, the server's body handed back, the key in no decision.
pub async fn a_401_is_one_request(send: impl AsyncFn(RetryLayer, &ChaosServer) -> Result<Answer, Refused>) {
    let server = start(Scenario::new().then(Step::invalid_api_key()).otherwise(Step::ok("42"))).await;
    let (layer, decisions) = layer(RetryPolicy::new());
    let answer = send(layer, &server).await.unwrap();
    assert_eq!(answer.status, 401);
    assert_eq!(server.requests_served(), 1);
    let decisions = decisions.lock().unwrap();
    assert_eq!(decisions.last().unwrap().verdict(), Verdict::FailPermanently);
    assert!(answer.body.contains("API key"));
    assert!(decisions.iter().all(|decision| !decision.error().contains(KEY)));
}

/// A connection closed before the response's head: called again.
pub async fn a_connection_closed_before_the_first_byte_is_called_again(
    send: impl AsyncFn(RetryLayer, &ChaosServer) -> Result<Answer, Refused>,
) {
    let server = start(Scenario::new().then(Step::close_before_headers()).otherwise(Step::ok("42"))).await;
    let (layer, decisions) = layer(RetryPolicy::new());
    let answer = send(layer, &server).await.unwrap();
    assert_eq!(streamed_text(&answer.body), "42");
    assert_eq!(verdicts(&decisions.lock().unwrap()), [(Layer::Session, Verdict::Retry)]);
    assert_eq!(server.requests_served(), 2);
}

/// A runtime over our OpenAI provider on `server`, its retry quota two retries and no share of
/// successes, so that a few failures spend it.
pub fn runtime_with_a_small_budget(server: &ChaosServer) -> Runtime {
    let provider = OpenAiProvider::new(server.openai_base_url(), Some(KEY.to_owned())).with_model("test-model");
    let quota = RetryQuota::standard().with_min_retries(2).with_retry_percent(0);
    Runtime::builder(provider).with_retry_quota(Some(quota)).with_jitter_seed(3).build().unwrap()
}

/// An outage: the client's requests spend the runtime's retry quota, and the runtime's exec is
/// refused its retry; a layer of its own spends a budget of its own.
pub async fn in_an_outage_a_teams_client_and_our_provider_spend_one_retry_quota(
    send: impl AsyncFn(RetryLayer, &ChaosServer) -> Result<Answer, Refused>,
) {
    let server = start(Scenario::new().otherwise(Step::http_error(503))).await;
    let runtime = runtime_with_a_small_budget(&server);
    let shared = RetryLayer::sharing(&runtime, RetryPolicy::new()).unwrap().with_jitter_seed(7);
    let answer = send(shared, &server).await.unwrap();
    assert_eq!(answer.status, 503);
    // The client spent both retries, and the third was refused by the budget.
    assert_eq!(server.requests_served(), 3);
    let error = runtime.exec("What is the answer?").await.unwrap_err();
    assert_eq!(error.kind(), ExecErrorKind::Refused);
    assert_eq!(server.requests_served(), 4, "the exec's retry was refused: the budget was spent by the client");
    assert_eq!(runtime.retry_quota_left(), Some(0));

    let server = start(Scenario::new().otherwise(Step::http_error(503))).await;
    let runtime = runtime_with_a_small_budget(&server);
    let (own, _) = layer(RetryPolicy::new());
    send(own, &server).await.unwrap();
    assert_eq!(runtime.retry_quota_left(), Some(2));
}

/// A 429's hint met by the client cools the shared scope: the runtime's next exec waits it out.
pub async fn a_server_hint_to_the_layer_makes_the_runtimes_next_exec_wait(
    send: impl AsyncFn(RetryLayer, &ChaosServer) -> Result<Answer, Refused>,
) {
    let server = start(Scenario::new().then(Step::http_error(429).retry_after_secs(3)).otherwise(Step::ok("42"))).await;
    let runtime = runtime_with_a_small_budget(&server);
    let shared = RetryLayer::sharing(&runtime, RetryPolicy::new().with_max_retries(1).with_session_retries(0)).unwrap();
    assert_eq!(send(shared, &server).await.unwrap().status, 429);
    let reply = runtime.exec("What is the answer?").await.unwrap();
    assert_eq!(reply.text(), "42");
    assert_eq!(reply.decisions()[0].verdict(), Verdict::CooledDown);
}

/// The client's failures, through a layer sharing the runtime's storm control, open its breaker:
/// the client's next request is refused before any call, and the runtime's exec goes to its
/// fallback without calling the primary.
pub async fn the_layers_failures_open_the_runtimes_breaker_and_its_execs_go_to_the_fallback(
    send: impl AsyncFn(RetryLayer, &ChaosServer) -> Result<Answer, Refused>,
) {
    let primary = start(Scenario::new().otherwise(Step::http_error(503))).await;
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
    assert_eq!(primary.requests_served(), 4, "four failed calls: the breaker opened after the fourth");
    let Err(refused) = send(shared, &primary).await else { panic!("the open breaker let the request through") };
    assert_eq!(refused.kind, Some(ExecErrorKind::Refused), "{}", refused.text);
    assert!(refused.text.contains("open"), "{}", refused.text);
    assert_eq!(primary.requests_served(), 4);
    let reply = runtime.exec("What is the answer?").await.unwrap();
    assert_eq!((reply.text(), reply.target()), ("from the fallback", Some("openai/model-b")));
    assert_eq!(primary.requests_served(), 4);
}

/// A server that echoes the request's key (whole, or a piece of it) in its error: no piece of it
/// reaches a decision.
pub async fn no_piece_of_the_key_a_server_echoes_reaches_a_decision(
    send: impl AsyncFn(RetryLayer, &ChaosServer) -> Result<Answer, Refused>,
) {
    for echo in [EchoKey::Whole, EchoKey::First12, EchoKey::Last12, EchoKey::WithoutPrefix] {
        let server = start(Scenario::new().then(Step::http_error(503).echo_key(echo)).otherwise(Step::ok("42"))).await;
        let (layer, decisions) = layer(RetryPolicy::new());
        let answer = send(layer, &server).await.unwrap();
        assert_eq!(streamed_text(&answer.body), "42");
        let decisions = decisions.lock().unwrap();
        assert_eq!(decisions.len(), 1, "{echo:?}");
        let error = &decisions[0].error();
        assert!(error.contains("<redacted>"), "{echo:?}: {error}");
        for piece in [KEY, &KEY[..12], &KEY[KEY.len() - 12..], &KEY[3..]] {
            assert!(!error.contains(piece), "{echo:?}: {error}");
        }
    }
}

/// The decisions an exec over our OpenAI provider makes against a server playing `scenario`.
async fn exec_verdicts(scenario: Scenario, policy: &RetryPolicy) -> Vec<(Layer, Verdict)> {
    let server = start(scenario).await;
    let provider = OpenAiProvider::new(server.openai_base_url(), Some(KEY.to_owned())).with_model("test-model");
    let runtime = Runtime::builder(provider).with_jitter_seed(1).build().unwrap();
    match runtime.request("What is the answer?").policy(policy).send().await {
        Ok(reply) => verdicts(reply.decisions()),
        Err(error) => verdicts(error.decisions()),
    }
}

/// On each fault (twice, then an answer), the client's decisions are the ones an exec over our
/// OpenAI provider makes: the same layers and verdicts.
pub async fn the_layer_decides_as_an_exec_over_our_provider_decides_on_the_same_responses(
    send: impl AsyncFn(RetryLayer, &ChaosServer) -> Result<Answer, Refused>,
) {
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

/// A 500 whose body stalls after 28 bytes, with `timeout_ms` 2 s and `budget_ms` 5 s: the layers
/// give up at the deadline and the client has the 28 bytes, then the end, at once. Before, the
/// response came back with its body still stalled: a client reading it waited for ever.
pub async fn an_error_body_that_stalls_comes_back_cut_by_the_deadline(
    send: impl AsyncFn(RetryLayer, &ChaosServer) -> Result<Answer, Refused>,
) {
    let body = r#"{"error":{"message":"The server had an error while processing your request."}}"#;
    let server = start(Scenario::new().otherwise(Step::http_error(500).body(body).stall_body_after(28))).await;
    let (layer, decisions) = layer(RetryPolicy::new().with_timeout_ms(2_000).with_budget_ms(Some(5_000)));
    let started = tokio::time::Instant::now();
    let answer = within_a_minute(send(layer, &server)).await.unwrap();
    assert_eq!(started.elapsed(), Duration::from_secs(5), "the deadline bounds the whole call");
    assert_eq!((answer.status, answer.body.as_str()), (500, &body[..28]));
    assert_eq!(answer.gave_up, Some(ExecErrorKind::Refused));
    if let Some(headers) = &answer.headers {
        assert_eq!(headers["content-length"], "28", "what is handed back, not what the server announced");
    }
    let decisions = decisions.lock().unwrap();
    assert!(decisions.iter().all(|decision| decision.error().contains("error body stalled after 28 bytes")));
}

/// A 200 whose stream stalls after its first chunk, with `budget_ms` 5 s: the body the client reads
/// ends at the deadline, with an error that says so.
pub async fn a_success_whose_body_stalls_ends_by_the_deadline(
    send: impl AsyncFn(RetryLayer, &ChaosServer) -> Result<Answer, Refused>,
) {
    let server = start(Scenario::new().otherwise(Step::hang().after_chunks(1).text("The answer is 42."))).await;
    let (layer, decisions) = layer(RetryPolicy::new().with_budget_ms(Some(5_000)));
    let started = tokio::time::Instant::now();
    let refused = within_a_minute(send(layer, &server)).await.err().expect("the body cannot end well");
    assert_eq!(started.elapsed(), Duration::from_secs(5));
    assert_eq!(refused.kind, None, "the client's error, reading the body: {}", refused.text);
    let said = "the response's body did not end by the request's deadline (`budget_ms` = 5000)";
    assert!(refused.text.contains(said), "{}", refused.text);
    assert_eq!(server.requests_served(), 1);
    assert!(decisions.lock().unwrap().is_empty(), "the call succeeded: no decision");
}

/// A 500 of 50 MiB: the client gets the first 16 KiB the layer read, not the rest. Before, the whole
/// body came back (async-openai then held it three times over).
pub async fn an_error_body_of_50_mib_comes_back_as_the_16_kib_the_layer_read(
    send: impl AsyncFn(RetryLayer, &ChaosServer) -> Result<Answer, Refused>,
) {
    let body = format!("{{\"error\":{{\"message\":\"{}\"}}}}", "x".repeat(50 << 20));
    let server = start(Scenario::new().otherwise(Step::http_error(500).body(body.clone()).should_retry(false))).await;
    let (layer, _) = layer(RetryPolicy::new());
    let answer = within_a_minute(send(layer, &server)).await.unwrap();
    assert_eq!((answer.status, answer.gave_up), (500, Some(ExecErrorKind::Permanent)));
    assert_eq!(answer.body, body[..16 * 1024]);
    if let Some(headers) = &answer.headers {
        assert_eq!(headers["content-length"], "16384");
    }
    assert_eq!(server.requests_served(), 1);
}

/// A 401, 429 or 503 whose message echoes the request's key (whole, or a piece of it): no piece of
/// it in what the client gets back (the body it reads, the response's or the error's Display and
/// Debug), as none is in a decision.
pub async fn no_piece_of_the_key_is_in_what_the_client_gets_back(
    send: impl AsyncFn(RetryLayer, &ChaosServer) -> Result<Answer, Refused>,
) {
    for status in [401, 429, 503] {
        for echo in [EchoKey::Whole, EchoKey::First12, EchoKey::Last12, EchoKey::WithoutPrefix] {
            let step = Step::http_error(status).echo_key(echo).header("x-echo", KEY);
            let server = start(Scenario::new().otherwise(step)).await;
            let (layer, decisions) = layer(RetryPolicy::new().with_max_retries(1).with_session_retries(0));
            let shown = match within_a_minute(send(layer, &server)).await {
                Ok(answer) => {
                    assert_eq!((answer.status, answer.gave_up.is_some()), (status, true), "{status} {echo:?}");
                    assert!(answer.body.contains("<redacted>"), "{status} {echo:?}: {}", answer.body);
                    answer.shown
                }
                Err(refused) => panic!("{status} {echo:?}: the response was not handed back: {}", refused.text),
            };
            assert_no_piece_of_the_key(&format!("{status} {echo:?}"), &shown);
            let decisions = format!("{:?}", decisions.lock().unwrap());
            assert_no_piece_of_the_key(&format!("{status} {echo:?}: decisions"), &decisions);
        }
    }
}
