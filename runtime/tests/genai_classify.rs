//! `Classify for genai::Error` against the chaos server: a `genai::Client` on its OpenAI-compatible
//! endpoint gets, for each failure of `classify_support::cases`, the verdict our own `OpenAiProvider` gets of
//! the same response (genai keeps the status, the headers and the body), and `Resilient` around a
//! genai call waits what the server asked.

mod classify_support;

use agentic_chaos::{Scenario, Step};
use agentic_runtime::RetryPolicy;
use agentic_runtime::classify::ExecAction;
use agentic_runtime::resilient::{Classification, Classify, Resilient};
use classify_support::{Case, KEY, MODEL, cases, each_case, failing_streams, ours, serve, whole};
use futures_util::StreamExt as _;
use genai::adapter::AdapterKind;
use genai::chat::{ChatMessage, ChatRequest};
use genai::resolver::{AuthData, Endpoint, ServiceTargetResolver};
use genai::{Client, ModelIden, ServiceTarget};

/// A genai client whose every model goes to the chaos server's OpenAI-compatible endpoint (plain
/// http), with the test key.
fn client(server: &agentic_chaos::ChaosServer) -> Client {
    client_with_key(server, KEY)
}

fn question() -> ChatRequest {
    ChatRequest::new(vec![ChatMessage::user("What is the answer?")])
}

/// genai's error of one chat call against a server playing `step`.
async fn chat_error(step: Step) -> genai::Error {
    let server = serve(step).await;
    client(&server).exec_chat(MODEL, question(), None).await.expect_err("the call fails")
}

/// genai's error of one streamed chat call: the call's, or the stream's first.
async fn stream_error(step: Step) -> genai::Error {
    let server = serve(step).await;
    match client(&server).exec_chat_stream(MODEL, question(), None).await {
        Err(error) => error,
        Ok(response) => {
            let items: Vec<_> = response.stream.collect().await;
            items.into_iter().find_map(Result::err).expect("the stream fails")
        }
    }
}

/// genai's verdict equals ours: whole for an HTTP error (the same reading of the same status,
/// headers and body); for a connection closed before the headers, the action and the (absent)
/// hint, since genai hands over reqwest's error, judged by reqwest's rules, not the phase our
/// provider's driver knows (its reason names a reset before the headers).
fn same_verdict(case: &Case, theirs: &Classification, ours: &Classification) {
    if matches!(case.step, Step::CloseBeforeHeaders) {
        assert_eq!((&theirs.action, theirs.retry_after), (&ours.action, ours.retry_after), "{}", case.name);
        assert_eq!(theirs.action, ExecAction::Retry, "{}", case.name);
    } else {
        assert_eq!(theirs, ours, "{}", case.name);
    }
}

#[tokio::test(start_paused = true)]
async fn a_chat_calls_errors_get_our_providers_verdicts() {
    each_case(cases(), chat_error, same_verdict).await;
}

#[tokio::test(start_paused = true)]
async fn a_streamed_chat_calls_errors_get_our_providers_verdicts() {
    each_case(cases(), stream_error, same_verdict).await;
}

/// The hints reach the verdict, as our provider reads them (the cases' `same_verdict` already
/// compares them; this says what they are).
#[tokio::test(start_paused = true)]
async fn the_headers_hints_are_kept() {
    use std::time::Duration;
    let verdict = chat_error(Step::http_error(429).retry_after_secs(2).into()).await.classify();
    assert_eq!((verdict.action, verdict.retry_after), (ExecAction::Retry, Some(Duration::from_secs(2))));
    let verdict = chat_error(Step::http_error(429).retry_after_ms(1500).into()).await.classify();
    assert_eq!(verdict.retry_after, Some(Duration::from_millis(1500)));
    let verdict = chat_error(Step::http_error(503).should_retry(false).into()).await.classify();
    assert_eq!(verdict.action, ExecAction::FailPermanently);
    let verdict = chat_error(Step::invalid_api_key().into()).await.classify();
    assert_eq!(verdict.action, ExecAction::FailPermanently);
}

#[tokio::test(start_paused = true)]
async fn resilient_around_a_genai_call_waits_the_servers_hint() {
    let scenario = Scenario::new().then(Step::http_error(429).retry_after_secs(3)).otherwise(Step::ok("the answer"));
    let server = agentic_chaos::ChaosServer::start(scenario).await.expect("the chaos server starts");
    let client = client(&server);
    let policy = RetryPolicy::new().with_max_retries(3);
    let started = tokio::time::Instant::now();
    let answer = Resilient::new("genai chat", &policy)
        .with_jitter_seed(7)
        .call(|| client.exec_chat(MODEL, question(), None))
        .await
        .expect("answered after the 429");
    let waited = started.elapsed();
    assert_eq!(answer.first_text(), Some("the answer"));
    assert_eq!(server.requests_served(), 2);
    // The hint, jittered only above it, by at most a quarter.
    assert!(waited >= std::time::Duration::from_secs(3), "{waited:?}");
    assert!(waited <= std::time::Duration::from_millis(3750), "{waited:?}");
}

/// A chunk that is not JSON and an error event (of a retryable type and of a permanent one): genai
/// keeps what our provider reads, so the verdict is ours, whole. A stream cut mid-way: the action
/// (genai hands over reqwest's body error, judged by reqwest's rules). (A 2xx body that is not an
/// answer is no error to genai: it answers with empty content.)
#[tokio::test(start_paused = true)]
async fn streams_that_fail_get_our_providers_verdicts() {
    each_case(failing_streams(), stream_error, whole).await;
    let dropped = || Step::from(Step::drop_stream(2));
    let (theirs, ours) = (stream_error(dropped()).await.classify(), ours(dropped()).await);
    assert_eq!((theirs.action, ours.action), (ExecAction::Retry, ExecAction::Retry));
}

/// A key long enough to redact in pieces (8 bytes and more).
const LONG_KEY: &str = "sk-genai-canary-Zq7vK2mN9xR4";

/// A genai client on `server`'s OpenAI-compatible endpoint that sends `key`.
fn client_with_key(server: &agentic_chaos::ChaosServer, key: &'static str) -> Client {
    // genai appends `chat/completions` to the endpoint: the base ends with a slash.
    let base = format!("{}/", server.openai_base_url());
    let resolver = ServiceTargetResolver::from_resolver_fn(
        move |target: ServiceTarget| -> Result<ServiceTarget, genai::resolver::Error> {
            Ok(ServiceTarget {
                endpoint: Endpoint::from_owned(base.clone()),
                auth: AuthData::from_single(key),
                model: ModelIden::new(AdapterKind::OpenAI, target.model.model_name),
            })
        },
    );
    Client::builder().with_service_target_resolver(resolver).build().expect("the genai client builds")
}

/// Asserts that `shown` holds no 8-byte piece of [`LONG_KEY`].
fn assert_no_piece_of_the_key(what: &str, shown: &str) {
    for window in LONG_KEY.as_bytes().windows(8) {
        let piece = std::str::from_utf8(window).unwrap();
        assert!(!shown.contains(piece), "{what}: `{piece}` of the key leaked:\n{shown}");
    }
}

/// `Resilient` told the key (`redacting`) around a genai call, whole or streamed, against a 401, 429
/// or 503 whose message echoes it: no piece of it in the failure's Display or Debug, nor in genai's
/// error inside it. Before, the decisions and genai's error text carried the key.
#[tokio::test(start_paused = true)]
async fn no_piece_of_the_key_is_in_the_failure_of_a_genai_call() {
    use agentic_chaos::EchoKey;
    let policy = RetryPolicy::new().with_max_retries(2);
    for status in [401, 429, 503] {
        for echo in [EchoKey::Whole, EchoKey::First12, EchoKey::Last12, EchoKey::WithoutPrefix] {
            let server = serve(Step::http_error(status).echo_key(echo).header("x-echo", LONG_KEY).into()).await;
            let client = client_with_key(&server, LONG_KEY);
            let resilient = Resilient::new("genai chat", &policy).redacting(LONG_KEY).with_jitter_seed(7);
            let whole = resilient.call(|| async { client.exec_chat(MODEL, question(), None).await.map(drop) });
            let whole = whole.await.unwrap_err();
            // Streamed: the call's error, or the stream's first.
            let streamed = resilient.call(|| async {
                let response = client.exec_chat_stream(MODEL, question(), None).await?;
                let items: Vec<_> = response.stream.collect().await;
                items.into_iter().find_map(Result::err).map_or(Ok(()), Err)
            });
            let streamed = streamed.await.unwrap_err();
            for (how, failure) in [("whole", whole), ("streamed", streamed)] {
                let last = failure.last_error().expect("genai's error");
                let shown = format!("{failure}\n{failure:?}\n{last}\n{last:?}");
                assert!(shown.contains("<redacted>"), "{status} {echo:?} {how}: {shown}");
                assert_no_piece_of_the_key(&format!("{status} {echo:?} {how}"), &shown);
                // Redacted, it is judged as before: the key is no part of the verdict.
                assert_eq!(last.classify().action == ExecAction::Retry, status != 401, "{status} {how}");
            }
        }
    }
}

/// An empty 400 or 413 is read as a context overflow, unless the server says `x-should-retry: true`:
/// then it is worth another call, as the README says. Before, genai's `Classify` stopped on it as an
/// overflow.
#[tokio::test(start_paused = true)]
async fn an_empty_400_or_413_with_x_should_retry_true_is_worth_another_call() {
    for status in [400, 413] {
        let empty = || Step::http_error(status).body("");
        let overflow = chat_error(empty().into()).await.classify();
        assert_eq!(overflow.action, ExecAction::ContextOverflow, "{status}");
        let worth_it = chat_error(empty().should_retry(true).into()).await.classify();
        assert_eq!(worth_it.action, ExecAction::Retry, "{status}: {:?}", worth_it.reason);
        assert_eq!(worth_it, ours(empty().should_retry(true).into()).await, "{status}: our provider's verdict too");
    }
}
