//! `tower::RetryLayer` around reqwest's client against the chaos server: the server's hints are
//! the waits, a refusal is one request, a burst is ridden out, the body of a success streams
//! untouched and an error response is handed back whole, tower's own layers compose, and the
//! decisions are the ones an exec over our OpenAI provider makes of the same responses.

#[macro_use]
mod adapters_support;

use std::time::Duration;

use adapters_support::{
    Answer, KEY, Refused, chat_body, chat_url, layer, start, streamed_text, verdicts, within_a_minute,
};
use agentic_chaos::{ChaosServer, Scenario, Step, WireFormat};
use agentic_runtime::decision::{Layer, Verdict};
use agentic_runtime::resilient::{Failure, GaveUp};
use agentic_runtime::tower::RetryLayer;
use agentic_runtime::{ExecErrorKind, RetryPolicy};
use tower::{ServiceBuilder, ServiceExt as _};

/// A streamed chat completion request to `server`.
fn request(server: &ChaosServer) -> reqwest::Request {
    reqwest::Client::new()
        .post(chat_url(server))
        .bearer_auth(KEY)
        .header("content-type", "application/json")
        .body(chat_body())
        .build()
        .unwrap()
}

/// One request through `layer` around reqwest's client: what came back, or the failure.
async fn send(layer: RetryLayer, server: &ChaosServer) -> Result<Answer, Refused> {
    let service = ServiceBuilder::new().layer(layer).service(reqwest::Client::new());
    let response = service.oneshot(request(server)).await.map_err(|failure| Refused::failure(&failure))?;
    let (status, headers) = (response.status().as_u16(), response.headers().clone());
    let gave_up = response.extensions().get::<GaveUp>().map(GaveUp::kind);
    let debug = format!("{response:?}");
    let body = response.text().await.map_err(Refused::client)?;
    Ok(Answer { status, headers: Some(headers), gave_up, shown: format!("{debug}\n{body}"), body })
}

adapter_tests!(send);

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
    assert!(decisions[0].error().contains("timed out"), "{}", decisions[0].error());
}

#[tokio::test(start_paused = true)]
async fn the_policys_per_call_timeout_cuts_a_hung_call_and_the_deadline_holds() {
    let server = start(Scenario::new().otherwise(Step::hang())).await;
    let policy = RetryPolicy::new().with_timeout_ms(1000).with_budget_ms(Some(5000));
    let (layer, _) = layer(policy);
    let started = tokio::time::Instant::now();
    let service = ServiceBuilder::new().layer(layer).service(reqwest::Client::new());
    let failure = service.oneshot(request(&server)).await.unwrap_err();
    assert_eq!(failure.kind(), ExecErrorKind::Refused);
    assert!(failure.last_error().is_none(), "the last call was cut: no error of the service's");
    assert!(failure.decisions().iter().any(|decision| decision.error().contains("timed out after 1 s")), "{failure}");
    assert!(started.elapsed() <= Duration::from_secs(5), "{:?}", started.elapsed());
}

/// A Gemini request to `server` (the key in `x-goog-api-key`, as Google's SDKs send it).
fn gemini_request(server: &ChaosServer) -> reqwest::Request {
    let body = serde_json::json!({"contents": [{"role": "user", "parts": [{"text": "What is the answer?"}]}]});
    let url = format!("{}/models/gemini-test:streamGenerateContent?alt=sse", server.base_url(WireFormat::Gemini));
    reqwest::Client::new()
        .post(url)
        .header("x-goog-api-key", KEY)
        .header("content-type", "application/json")
        .body(body.to_string())
        .build()
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn googles_retry_info_in_the_body_is_the_wait_when_no_header_names_one() {
    let body = serde_json::json!({"error": {"code": 429, "message": "Resource has been exhausted (e.g. check quota).",
    "status": "RESOURCE_EXHAUSTED", "details": [
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "3s"},
    ]}});
    let fault = Step::http_error(429).body(body.to_string()).header("content-type", "application/json");
    let server = start(Scenario::new().then(fault).otherwise(Step::ok("42"))).await;
    let (layer, decisions) = layer(RetryPolicy::new());
    let service = ServiceBuilder::new().layer(layer).service(reqwest::Client::new());
    let started = tokio::time::Instant::now();
    let response = service.oneshot(gemini_request(&server)).await.unwrap();
    assert_eq!(response.status(), 200);
    assert!(response.text().await.unwrap().contains("42"));
    assert!(started.elapsed() >= Duration::from_secs(3), "{:?}", started.elapsed());
    let delay = decisions.lock().unwrap()[0].delay().unwrap();
    assert!(delay >= Duration::from_secs(3) && delay <= Duration::from_millis(3750), "{delay:?}");
    assert_eq!(server.requests_served(), 2);
}

/// Two layers nested: a `RetryLayer` around one that gave up sends the server no more
/// requests than the inner one alone, on an error response (handed back marked) and on a transport
/// error (its `Failure`, boxed by tower's timeout between the two). Before, the outer layer judged
/// the inner one's 503 again, and its boxed failure as an unknown error, transient: 16 requests
/// where the inner layer alone sent 4.
#[tokio::test(start_paused = true)]
async fn a_layer_around_one_that_gave_up_sends_no_more_requests() {
    let policy = RetryPolicy::new().with_max_retries(2).with_session_retries(1);
    for step in [Step::from(Step::http_error(503)), Step::close_before_headers()] {
        let alone = start(Scenario::new().otherwise(step.clone())).await;
        let inner = || layer(policy).0;
        let _ = ServiceBuilder::new().layer(inner()).service(reqwest::Client::new()).oneshot(request(&alone)).await;
        assert_eq!(alone.requests_served(), 4, "{step:?}: two attempts of two calls");

        let nested = start(Scenario::new().otherwise(step.clone())).await;
        let (outer, decisions) = layer(policy);
        let service = ServiceBuilder::new()
            .layer(outer)
            .timeout(Duration::from_secs(600))
            .layer(inner())
            .service(reqwest::Client::new());
        let answer = service.oneshot(request(&nested)).await;
        assert_eq!(nested.requests_served(), 4, "{step:?}: the inner layer's calls, once");
        match answer {
            Ok(response) => assert_eq!(response.status(), 503, "the server's response, handed back"),
            Err(error) => assert_eq!(error.kind(), ExecErrorKind::Permanent, "{error}"),
        }
        let decisions = decisions.lock().unwrap();
        assert_eq!(verdicts(&decisions), [(Layer::Session, Verdict::GiveUp), (Layer::Exec, Verdict::FailPermanently)]);
        let reason = decisions[0].reason().to_string();
        assert!(reason.starts_with("an inner retry layer gave up (kind `exhausted`)"), "{reason}");
    }
    // Without a layer between, the inner failure is the outer layer's service error: judged by its kind.
    let server = start(Scenario::new().otherwise(Step::close_before_headers())).await;
    let service = ServiceBuilder::new().layer(layer(policy).0).layer(layer(policy).0).service(reqwest::Client::new());
    let failure = service.oneshot(request(&server)).await.unwrap_err();
    assert_eq!((server.requests_served(), failure.kind()), (4, ExecErrorKind::Permanent));
    assert_eq!(failure.last_error().map(Failure::kind), Some(ExecErrorKind::Exhausted));
}

/// A cooldown longer than the layer's `retry_after_cap_ms` refuses the request in the layer, none
/// sent: a runtime that shares the layer's storm control, with a cap of 10 minutes, honoured a
/// server's `Retry-After: 120` (its scope cools down for 2 minutes); the layer's cap is the default
/// minute. Before, the layer slept a minute of it and then sent the request anyway, a minute
/// earlier than the server asked.
#[tokio::test(start_paused = true)]
async fn a_cooldown_longer_than_the_cap_refuses_in_the_layer_and_no_request_is_sent() {
    use agentic_runtime::{Runtime, Scripted, ScriptedProvider};
    let asked = Scripted::http(429, "slow down").with_retry_after(Duration::from_secs(120));
    let runtime = Runtime::new(ScriptedProvider::new([asked]));
    // One call, no retry: the exec ends at once, the cooldown it honoured stays.
    let patient = RetryPolicy::new().with_retry_after_cap_ms(600_000).with_session_retries(0).with_max_retries(1);
    runtime.request("hi").policy(&patient).send().await.unwrap_err();

    let server = start(Scenario::new().otherwise(Step::ok("42"))).await;
    let layer = RetryLayer::sharing(&runtime, RetryPolicy::new()).unwrap();
    let started = tokio::time::Instant::now();
    let service = ServiceBuilder::new().layer(layer).service(reqwest::Client::new());
    let failure = service.oneshot(request(&server)).await.unwrap_err();
    assert_eq!(server.requests_served(), 0, "no request went");
    assert_eq!(started.elapsed(), Duration::ZERO, "nothing was waited for");
    assert_eq!(failure.kind(), ExecErrorKind::Refused);
    assert_eq!(failure.refusal().map(|refusal| refusal.name()), Some("cooldown"));
    assert!(failure.last_error().is_none(), "{failure}");
    let text = failure.to_string();
    assert!(
        text.starts_with(
            "request stopped after 0 attempts: the provider is cooling down for 120 s more (a server asked its \
             callers to wait), longer than `retry_after_cap_ms` (60 s)"
        ),
        "{text}"
    );
}

/// A request that made 3 calls in 1 attempt (layer 1 called twice more): the failure counts both,
/// in words that agree, and lists each call once. Before: "stopped after 1 attempts", "Attempt 1"
/// to "Attempt 4" (the last two the same call) and `calls()` 1.
#[tokio::test(start_paused = true)]
async fn a_failure_counts_its_calls_and_its_attempts_in_words_that_agree() {
    let server = start(Scenario::new().otherwise(Step::close_before_headers())).await;
    let (layer, _) = layer(RetryPolicy::new().with_max_retries(1).with_session_retries(2));
    let service = ServiceBuilder::new().layer(layer).service(reqwest::Client::new());
    let failure = service.oneshot(request(&server)).await.unwrap_err();
    assert_eq!((server.requests_served(), failure.calls(), failure.attempts()), (3, 3, 1));
    assert_eq!(failure.record().calls, 3);
    let text = failure.to_string();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "request failed after 1 attempt, 3 calls (exhausted):", "{text}");
    assert_eq!(lines.len(), 4, "{text}");
    for (line, call) in lines[1..].iter().zip(1..) {
        assert!(line.starts_with(&format!("Attempt 1, call {call}: ")), "{text}");
    }
}

/// Without a deadline, a success's body that stalls ends at the idle bound (`idle_timeout_ms`),
/// with the bound's words; one that flows is untouched.
#[tokio::test(start_paused = true)]
async fn a_success_whose_body_stalls_ends_at_the_idle_bound() {
    let server = start(Scenario::new().otherwise(Step::hang().after_chunks(1).text("The answer is 42."))).await;
    let (layer, _) = layer(RetryPolicy::new().with_idle_timeout_ms(3_000));
    let service = ServiceBuilder::new().layer(layer).service(reqwest::Client::new());
    let response = service.oneshot(request(&server)).await.unwrap();
    let started = tokio::time::Instant::now();
    let error = within_a_minute(response.text()).await.unwrap_err();
    assert_eq!(started.elapsed(), Duration::from_secs(3));
    let text = Refused::client(error).text;
    assert!(text.contains("the response's body stalled: nothing for 3 s (`idle_timeout_ms` = 3000)"), "{text}");
}
