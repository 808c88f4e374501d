//! The HTTP client at the trust boundary (docs/design.md §3), over the wire, on every wire (`wires::all`): a
//! redirect is never followed (the key and the prompt stay here), an error body that stalls keeps
//! its status, a certificate that is not trusted and a response head over the client's limits are
//! named and never retried, a base URL's query stays a query, and a key echoed percent-encoded is
//! redacted. Each exec runs with the default policy, so a failure judged transient would make 12
//! requests; each test counts the requests that were made.

use crate::providers_support;
use agentic_runtime::exec::RuntimeBuilder;

use std::sync::Arc;
use std::time::Duration;

use agentic_chaos::{BadHead, ChaosServer, Scenario, Step};
use agentic_runtime::provider::Provider;
use agentic_runtime::provider::TransportKind;
use agentic_runtime::{ExecError, ExecErrorKind, RetryPolicy};
use agentic_test_support::tls_server::TlsServer;
use agentic_test_support::wires::{self, Wire, named};
use providers_support::{Reply, Server};
use tokio::time::Instant;

/// A gateway-style canary key: `/`, `+` and `=` are percent-encoded in a URL or a form.
const KEY: &str = "gw-canary/Zq7vK2mN+9xR4tB8w=L1pC6hJ3==";

/// A provider of `wire` with the canary key for the server at `base_url`.
fn provider(wire: Wire, base_url: &str) -> Arc<dyn Provider> {
    wire.provider_at(base_url, Some(KEY), None)
}

/// The base URL of the raw test server for `wire` (its path before the wire's request path).
fn raw_url(wire: Wire, server: &Server) -> String {
    format!("{}{}", server.url(), wire.format.base_path())
}

/// An exec with the default policy (4 calls per attempt, 3 attempts), by a provider of `wire` with
/// the canary key for the server at `base_url`, that must fail.
async fn exec_error(wire: Wire, base_url: &str) -> ExecError {
    match RuntimeBuilder::from_shared(provider(wire, base_url)).build().unwrap().exec("What is the answer?").await {
        Ok(reply) => panic!("{wire}: the call must fail, yet it answered {:?}", reply.text()),
        Err(error) => error,
    }
}

/// The error's text, its Debug output and every attempt, with no piece of the key in any form.
fn shown(wire: Wire, error: &ExecError) -> String {
    let text = format!("{error}\n{error:?}\n{}", error.attempt_errors().join("\n"));
    let encoded = KEY.replace('/', "%2F").replace('+', "%2B").replace('=', "%3D");
    for key in [KEY, encoded.as_str()] {
        for window in key.as_bytes().windows(8) {
            let window = std::str::from_utf8(window).unwrap();
            assert!(!text.contains(window), "{wire}: `{window}` of the key leaked:\n{text}");
        }
    }
    text
}

#[tokio::test(start_paused = true)]
async fn a_redirect_to_another_port_is_not_followed_for_any_status() {
    for wire in wires::all() {
        for status in [301, 302, 303, 307, 308] {
            let target = ChaosServer::start(Scenario::new().otherwise(Step::ok("stolen"))).await.unwrap();
            let path = wire.request_path();
            let location = format!("http://{}{path}?key=sk-in-the-query", target.addr());
            let origin = ChaosServer::start(Scenario::new().then(Step::redirect().status(status).location(location)))
                .await
                .unwrap();
            let error = exec_error(wire, &wire.base_url(&origin)).await;
            let text = shown(wire, &error);
            assert_eq!(error.kind(), ExecErrorKind::Permanent, "{wire} {status}: {text}");
            let to = format!("RedirectError: {status} ");
            let target_origin = format!(" redirect to http://{}, not followed: ", target.addr());
            assert!(text.contains(&to) && text.contains(&target_origin), "{wire} {status}: {text}");
            assert!(!text.contains("sk-in-the-query") && !text.contains(&path), "{wire} {status}: {text}");
            assert_eq!(origin.journal().len(), 1, "{wire} {status}: one request, no retry");
            assert!(target.journal().is_empty(), "{wire} {status}: the target got {:?}", target.journal());
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_redirect_loop_is_one_request() {
    for wire in wires::all() {
        // A server's plea to retry does not make a redirect worth following.
        let redirect = Step::redirect().header("x-should-retry", "true").header("retry-after", "1");
        let server = ChaosServer::start(Scenario::new().then_times(200, redirect)).await.unwrap();
        let error = exec_error(wire, &wire.base_url(&server)).await;
        let text = shown(wire, &error);
        assert_eq!(error.kind(), ExecErrorKind::Permanent, "{wire}: {text}");
        let expected =
            format!("RedirectError: 307 redirect to http://{} (this same server), not followed", server.addr());
        assert!(text.contains(&expected), "{wire}: {text}");
        assert_eq!(server.journal().len(), 1, "{wire}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_401_whose_body_stalls_keeps_its_status_and_stops_after_the_idle_bound() {
    let idle = RetryPolicy::new().idle_timeout();
    for wire in wires::all() {
        for after in [0, 10] {
            let scenario = Scenario::new().otherwise(Step::invalid_api_key().stall_body_after(after));
            let server = ChaosServer::start(scenario).await.unwrap();
            let started = Instant::now();
            let error = exec_error(wire, &wire.base_url(&server)).await;
            let waited = started.elapsed();
            let text = shown(wire, &error);
            assert_eq!(error.kind(), ExecErrorKind::Permanent, "{wire} {after}: {text}");
            let stalled = format!("(error body stalled after {after} bytes)");
            assert!(text.contains(&stalled), "{wire} {after}: {text}");
            // The bad-key answer of OpenAI and Anthropic is a 401 (another wire's may be a 400 or a 403).
            if ["openai", "anthropic"].contains(&wire.name()) {
                assert!(text.contains("AuthenticationError: 401 "), "{wire} {after}: {text}");
            }
            assert_eq!(server.journal().len(), 1, "{wire} {after}");
            // On the paused clock: the idle bound, not the first-token bound of each of 3 calls.
            assert!(waited >= idle && waited < RetryPolicy::new().first_token_timeout(), "{wire}: {waited:?}");
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_self_signed_certificate_is_permanent_at_once() {
    for wire in wires::all() {
        // By address and by name: neither makes the certificate trusted.
        for host in ["127.0.0.1", "localhost"] {
            let server = TlsServer::start().await;
            let base = format!("https://{host}:{}{}", server.port(), wire.format.base_path());
            let error = exec_error(wire, &base).await;
            let text = shown(wire, &error);
            assert_eq!(error.kind(), ExecErrorKind::Permanent, "{wire}: {text}");
            assert!(
                text.contains("CertificateError: the server's TLS certificate is not trusted"),
                "{wire} {host}: {text}"
            );
            assert!(text.contains("retrying cannot help"), "{wire} {host}: {text}");
            let typed = error.model_error().and_then(|error| error.transport_kind());
            assert_eq!(typed, Some(TransportKind::Certificate), "{wire} {host}");
            assert_eq!(server.accepted(), 1, "{wire} {host}: one connection, no retry");
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_response_head_over_the_limits_or_malformed_is_named_and_not_retried() {
    for wire in wires::all() {
        for shape in BadHead::ALL {
            let server = ChaosServer::start(Scenario::new().otherwise(Step::bad_head(shape))).await.unwrap();
            let error = exec_error(wire, &wire.base_url(&server)).await;
            let text = shown(wire, &error);
            assert_eq!(error.kind(), ExecErrorKind::Permanent, "{wire} {shape:?}: {text}");
            let expected = match shape {
                BadHead::GarbageStatus => "the response head was malformed (not an HTTP/1.1 status line and headers",
                _ => "the response head was too large (over the client's limits: 100 headers, 408 KiB)",
            };
            assert!(text.contains(&format!("MalformedResponseError: {expected}")), "{wire} {shape:?}: {text}");
            assert!(
                text.contains("retrying cannot help") && !text.contains("reset before headers"),
                "{wire} {shape:?}: {text}"
            );
            let typed = error.model_error().and_then(|error| error.transport_kind());
            assert_eq!(typed, Some(TransportKind::BadHead), "{wire} {shape:?}");
            assert_eq!(server.journal().len(), 1, "{wire} {shape:?}");
        }
    }
}

#[tokio::test(start_paused = true)]
async fn another_protocol_on_the_port_is_a_malformed_head() {
    for wire in wires::all() {
        let greeting = b"SSH-2.0-OpenSSH_9.6\r\n".to_vec();
        let server =
            Server::start((0..12).map(|_| Reply(vec![providers_support::Part::Bytes(greeting.clone())]))).await;
        let error = exec_error(wire, &raw_url(wire, &server)).await;
        let text = shown(wire, &error);
        assert_eq!(error.kind(), ExecErrorKind::Permanent, "{wire}: {text}");
        assert!(text.contains("MalformedResponseError: the response head was malformed"), "{wire}: {text}");
        assert_eq!(server.requests().len(), 1, "{wire}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_base_urls_query_stays_after_the_path() {
    for wire in wires::all() {
        let server = Server::start([Reply::status(400, &[], "{\"error\": {\"message\": \"stop here\"}}")]).await;
        let base = format!("{}/?api-version=2024-10-21", raw_url(wire, &server));
        let error = exec_error(wire, &base).await;
        assert_eq!(error.kind(), ExecErrorKind::Permanent, "{wire}: {error}");
        let paths: Vec<String> = server.requests().into_iter().map(|request| request.path).collect();
        // The base URL's query comes first, after the path; a wire's own parameters (Gemini's
        // `alt=sse`) may follow it.
        let sent = format!("{}?api-version=2024-10-21", wire.request_path());
        let rest = paths.first().and_then(|path| path.strip_prefix(&sent));
        assert!(
            paths.len() == 1 && rest.is_some_and(|rest| rest.is_empty() || rest.starts_with('&')),
            "{wire}: {paths:?}"
        );
        if ["openai", "anthropic"].contains(&wire.name()) {
            assert_eq!(paths, [sent], "{wire}");
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_base_url_with_a_fragment_is_refused_before_any_request() {
    for wire in wires::all() {
        let server = Server::start([]).await;
        let base = format!("{}#{KEY}", raw_url(wire, &server));
        let error = exec_error(wire, &base).await;
        let text = shown(wire, &error);
        assert_eq!(error.kind(), ExecErrorKind::Programming, "{wire}: {text}");
        assert!(
            text.contains("#<redacted>` has a fragment (`#...`), which is never sent to the server"),
            "{wire}: {text}"
        );
        assert!(server.requests().is_empty(), "{wire}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_key_echoed_percent_encoded_is_redacted() {
    let encoded = KEY.replace('/', "%2F").replace('+', "%2B").replace('=', "%3D");
    let lower = KEY.replace('/', "%2f").replace('+', "%2b").replace('=', "%3d");
    for wire in wires::all() {
        let body = format!("{{\"error\": {{\"message\": \"invalid key: {encoded} (as sent: ...{})\"}}}}", &lower[12..]);
        let server = Server::start([Reply::status(401, &[], body)]).await;
        let error = exec_error(wire, &raw_url(wire, &server)).await;
        let text = shown(wire, &error);
        assert_eq!(error.kind(), ExecErrorKind::Permanent, "{wire}: {text}");
        assert!(text.contains("invalid key: <redacted> (as sent: ...<redacted>)"), "{wire}: {text}");
        assert_eq!(server.requests().len(), 1, "{wire}");
    }
}

/// The bound an error body's read waits, by the policy: shorter bounds shorten it.
#[tokio::test(start_paused = true)]
async fn a_stalled_error_body_waits_the_policys_idle_bound() {
    let policy = RetryPolicy::new().with_idle_timeout_ms(5_000).with_session_retries(0).with_max_retries(1);
    let wire = named("openai");
    let server =
        ChaosServer::start(Scenario::new().otherwise(Step::http_error(429).stall_body_after(3))).await.unwrap();
    let runtime =
        RuntimeBuilder::from_shared(provider(wire, &wire.base_url(&server))).with_policy(policy).build().unwrap();
    let started = Instant::now();
    let error = runtime.exec("What is the answer?").await.unwrap_err();
    assert!(started.elapsed() >= Duration::from_secs(5) && started.elapsed() < Duration::from_secs(6));
    let text = shown(wire, &error);
    assert!(text.contains("RateLimitError: 429 ") && text.contains("(error body stalled after 3 bytes)"), "{text}");
}

/// A user's own reqwest calls through `Resilient` (`Classify for reqwest::Error`) get the same
/// verdicts as the providers: a refused certificate and an unreadable response head are permanent,
/// one attempt, not a transient failure retried until the attempts run out.
#[tokio::test(start_paused = true)]
async fn a_users_reqwest_call_through_resilient_judges_a_certificate_and_a_bad_head_permanent() {
    use agentic_runtime::resilient::Resilient;
    let client = reqwest::Client::new();
    let policy = RetryPolicy::new();

    let server = TlsServer::start().await;
    let url = format!("https://127.0.0.1:{}/", server.port());
    let failure = Resilient::new("fetch", &policy).call(|| client.get(&url).send()).await.unwrap_err();
    assert_eq!(failure.kind(), ExecErrorKind::Permanent, "{failure}");
    assert!(
        failure.decisions()[0].reason().to_string().starts_with("the server's TLS certificate is not trusted"),
        "{failure}"
    );
    assert_eq!(server.accepted(), 1);

    for shape in BadHead::ALL {
        let chaos = ChaosServer::start(Scenario::new().otherwise(Step::bad_head(shape))).await.unwrap();
        let url = format!("{}/chat/completions", chaos.openai_base_url());
        let failure = Resilient::new("post", &policy).call(|| client.post(&url).body("{}").send()).await.unwrap_err();
        assert_eq!(failure.kind(), ExecErrorKind::Permanent, "{shape:?}: {failure}");
        assert!(
            failure.decisions()[0].reason().to_string().starts_with("the response head was"),
            "{shape:?}: {failure}"
        );
        assert_eq!(chaos.journal().len(), 1, "{shape:?}");
    }
}
