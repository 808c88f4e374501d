//! A canary key that a server echoes back in pieces (its first 12 characters, its last 12, the key
//! without `sk-` or without `sk-ant-api03-`, the whole key) in error bodies, error events, a
//! malformed chunk and a body cut in the middle of the key, through both HTTP providers and both
//! retry layers: no 8-character piece of it reaches the exec error, a decision, the provider's
//! Debug output, a log line, a trace or the journal. The key is in the base URL too (userinfo and
//! query), where Debug output and errors must not show it either.

use crate::providers_support;
use agentic_runtime::exec::RuntimeBuilder;

use std::fmt::Debug;
use std::sync::Arc;

use agentic_runtime::decision::Verdict;
use agentic_runtime::observe::journal::Journal;
use agentic_runtime::observe::trace::TraceSink;
use agentic_runtime::policy::Jitter;
use agentic_runtime::provider::{AnthropicProvider, OpenAiProvider, Provider, display_url};
use agentic_runtime::{ExecError, ExecErrorKind, RetryPolicy, Runtime};
use agentic_test_support::captured_log::capture;
use agentic_test_support::temp_file::TempFile;
use providers_support::{Reply, Server};
use serde_json::{Value, json};

/// The canary: an Anthropic-shaped key (the longest prefix a server might strip).
const KEY: &str = "sk-ant-api03-Zq7vK2mN9xR4tB8wL1pC6hJ3fD5gS0yEaB-cD_eF7gH";

/// The shortest piece of the key that must never show.
const FRAGMENT: usize = 8;

/// How many bytes of an error body the providers keep.
const MAX_ERROR_BODY: usize = 16 * 1024;

/// Fails when any `FRAGMENT`-character window of `key` appears in `haystack`.
fn assert_no_fragment(haystack: &str, key: &str) {
    for (start, window) in key.as_bytes().windows(FRAGMENT).enumerate() {
        let window = std::str::from_utf8(window).expect("the canary key is ASCII");
        if let Some(at) = haystack.find(window) {
            panic!("bytes {start}..{} of the key (`{window}`) leaked at byte {at} of:\n{haystack}", start + FRAGMENT);
        }
    }
}

/// What a server might echo of a key it rejects.
fn echo() -> String {
    let first = &KEY[..12];
    let last = &KEY[KEY.len() - 12..];
    let without_sk = &KEY["sk-".len()..];
    let without_prefix = &KEY["sk-ant-api03-".len()..];
    format!(
        "key {first}...{last} rejected (also tried '{without_sk}', '{without_prefix}' and '{KEY}' \
         \u{2014} \u{e9}t\u{e9})"
    )
}

/// A body longer than the providers read, cut 10 characters into the key.
fn body_cut_in_the_key() -> String {
    format!("{}{KEY} and more", "x".repeat(MAX_ERROR_BODY - 10))
}

/// `http://canary:KEY@127.0.0.1:PORT/v1?api_key=KEY`: the key pasted into the base URL as well.
fn keyed_url(server: &Server) -> String {
    let url = server.url();
    let host = url.strip_prefix("http://").expect("an http URL");
    format!("http://canary:{KEY}@{host}/v1?api_key={KEY}")
}

/// The default retry counts with millisecond delays and no jitter.
fn fast_policy() -> RetryPolicy {
    RetryPolicy::new().with_session_base_delay_ms(1).with_exec_base_delay_ms(1).with_jitter(Jitter::None)
}

/// Everything one failed exec left behind, as text.
struct Leftovers {
    error: ExecError,
    journal: String,
    trace: String,
    log: String,
}

/// One exec of `provider` with a journal (retries included), an in-memory trace and every
/// `tracing` event captured.
async fn exec(provider: impl Provider) -> Leftovers {
    let journal_file = TempFile::new("secret-fragments.jsonl");
    let journal = Journal::open(journal_file.path()).expect("the journal opens").with_retries(true);
    let trace = TraceSink::in_memory();
    let runtime = Runtime::builder(provider).with_journal(journal).with_trace(trace.clone()).build().unwrap();

    let (default, captured) = capture(tracing::Level::TRACE);
    let error =
        runtime.request("What is the answer?").policy(&fast_policy()).send().await.expect_err("every call fails");
    drop(default);
    let journal = std::fs::read_to_string(journal_file.path()).expect("the journal was written");
    Leftovers { error, journal, trace: trace.contents().unwrap_or_default(), log: captured.text() }
}

/// Checks every text `leftovers` and `provider` offer for a piece of the key, and what the
/// retries decided.
fn assert_nothing_leaked(leftovers: &Leftovers, provider: &impl Debug) {
    let Leftovers { error, journal, trace, log } = leftovers;
    assert_eq!((error.kind(), error.calls()), (ExecErrorKind::Permanent, 5), "{error}");
    let verdicts: Vec<Verdict> = error.decisions().iter().map(|decision| decision.verdict()).collect();
    assert_eq!(
        verdicts,
        [
            Verdict::Retry,
            Verdict::Retry,
            Verdict::Retry,
            Verdict::RetriesExhausted,
            Verdict::Retry,
            Verdict::GiveUp,
            Verdict::FailPermanently,
        ]
    );
    // The server's texts did arrive, with the key redacted in place.
    let cut = &error.decisions()[3].error();
    assert!(cut.ends_with("xxxx<redacted> (error body cut at 16 KiB)"), "{}", &cut[cut.len() - 60..]);
    let last = error.attempt_errors().last().expect("two attempts");
    let echoed = "key <redacted>...<redacted> rejected \
                  (also tried '<redacted>', '<redacted>' and '<redacted>' \u{2014} \u{e9}t\u{e9})";
    assert!(last.contains(echoed), "{last}");

    assert_no_fragment(&format!("{error}"), KEY);
    assert_no_fragment(&format!("{error:?}"), KEY);
    for decision in error.decisions() {
        assert_no_fragment(&format!("{decision} {} {}", decision.error(), decision.reason()), KEY);
    }
    for attempt in error.attempt_errors() {
        assert_no_fragment(attempt, KEY);
    }
    if let Some(model_error) = error.model_error() {
        assert_no_fragment(&format!("{model_error} {model_error:?} {:?}", model_error.code()), KEY);
    }
    assert_no_fragment(&format!("{provider:?}"), KEY);

    assert_eq!(journal.lines().count(), 5, "four retries and the failure:\n{journal}");
    assert!(journal.contains("<redacted>"), "{journal}");
    assert_no_fragment(journal, KEY);
    assert!(trace.contains("\"agent_start\""), "the trace was written:\n{trace}");
    assert_no_fragment(trace, KEY);
    assert!(log.contains("model call failed"), "the log has the decisions:\n{log}");
    assert_no_fragment(log, KEY);
}

/// An OpenAI chat completion chunk carrying an error object.
fn openai_error_event(message: &str) -> String {
    let event = json!({"error": {"message": message, "type": "server_error", "code": &KEY[..12]}});
    format!("data: {event}\n\n")
}

/// An Anthropic SSE event of type `error`.
fn anthropic_error_event(kind: &str, message: &str) -> String {
    let event = json!({"type": "error", "error": {"type": kind, "message": message}});
    format!("event: error\ndata: {event}\n\n")
}

fn anthropic_error_body(kind: &str, message: &str) -> String {
    json!({"type": "error", "error": {"type": kind, "message": message}}).to_string()
}

/// A chunk that is not JSON, the key inside: a corrupted stream, retried.
fn malformed_chunk() -> String {
    format!("data: {{\"broken\": \"{}\n\n", echo())
}

#[tokio::test(start_paused = true)]
async fn openai_never_shows_a_piece_of_the_key() {
    let error_body: Value =
        json!({"error": {"message": echo(), "type": "server_error", "code": &KEY[KEY.len() - 12..]}});
    let unauthorized: Value =
        json!({"error": {"message": echo(), "type": "invalid_request_error", "code": "invalid_api_key"}});
    let server = Server::start([
        Reply::status(500, &[("content-type", "application/json")], error_body.to_string()),
        Reply::sse([openai_error_event(&echo())]),
        Reply::sse([malformed_chunk()]),
        Reply::status(502, &[], body_cut_in_the_key()),
        Reply::status(401, &[("content-type", "application/json")], unauthorized.to_string()),
    ])
    .await;
    let provider = OpenAiProvider::new(keyed_url(&server), Some(KEY.to_owned())).with_model("test-model");
    let leftovers = exec(provider.clone()).await;
    assert_nothing_leaked(&leftovers, &provider);
    assert_eq!(server.requests().len(), 5);
    let debug = format!("{provider:?}");
    let expected = "base_url: \"http://<redacted>:<redacted>@127.0.0.1:";
    assert!(debug.contains(expected) && debug.contains("/v1?api_key=<redacted>\""), "{debug}");
}

#[tokio::test(start_paused = true)]
async fn anthropic_never_shows_a_piece_of_the_key() {
    let server = Server::start([
        Reply::status(500, &[], anthropic_error_body("api_error", &echo())),
        Reply::sse([anthropic_error_event("overloaded_error", &echo())]),
        Reply::sse([malformed_chunk()]),
        Reply::status(502, &[], body_cut_in_the_key()),
        Reply::status(401, &[], anthropic_error_body("authentication_error", &echo())),
    ])
    .await;
    let provider = AnthropicProvider::new(keyed_url(&server), Some(KEY.to_owned())).with_model("claude-test");
    let leftovers = exec(provider.clone()).await;
    assert_nothing_leaked(&leftovers, &provider);
    assert_eq!(server.requests().len(), 5);
}

#[tokio::test(start_paused = true)]
async fn a_key_in_a_base_url_that_cannot_be_used_is_not_shown() {
    // A space in the host: the request cannot be built, and the error shows the URL.
    let url = format!("http://canary:{KEY}@exa mple.com/v1?key={KEY}");
    let openai = OpenAiProvider::new(url.as_str(), None);
    let anthropic = AnthropicProvider::new(url.as_str(), None);
    let shown = |path: &str| {
        format!("cannot build a request to `http://<redacted>:<redacted>@exa mple.com/v1{path}?key=<redacted>`")
    };
    for (provider, shown) in [
        (Box::new(openai) as Box<dyn DebugProvider>, shown("/chat/completions")),
        (Box::new(anthropic), shown("/v1/messages")),
    ] {
        assert_no_fragment(&format!("{provider:?}"), KEY);
        let error = RuntimeBuilder::from_shared(provider.shared())
            .build()
            .unwrap()
            .request("hi")
            .policy(&fast_policy())
            .send()
            .await
            .unwrap_err();
        assert_eq!(error.kind(), ExecErrorKind::Programming);
        let text = error.to_string();
        // The path the provider appends goes before the query, whose value is hidden with the key.
        assert!(text.contains(&shown), "{text}");
        assert_no_fragment(&format!("{text} {error:?}"), KEY);
    }
}

/// A provider that can also be shown with Debug, shared behind an `Arc`.
trait DebugProvider: Debug {
    fn shared(&self) -> Arc<dyn Provider>;
}

impl<P: Provider + Clone + Debug> DebugProvider for P {
    fn shared(&self) -> Arc<dyn Provider> {
        Arc::new(self.clone())
    }
}

#[test]
fn display_url_hides_what_can_hold_a_key() {
    let shown = display_url("https://user:sk-ant-api03-abc@api.example.com/v1?api_key=sk-1&model=x#sk-2");
    assert_eq!(
        shown,
        "https://<redacted>:<redacted>@api.example.com/v1?api_key=<redacted>&model=<redacted>#<redacted>"
    );
    assert_eq!(display_url("http://127.0.0.1:8080/v1"), "http://127.0.0.1:8080/v1");
    assert_eq!(display_url(KEY), "<redacted>");
}

#[test]
fn the_assertion_helper_finds_every_piece() {
    let pieces = [&KEY[..8], &KEY[KEY.len() - 8..], &KEY[20..28], KEY];
    for piece in pieces {
        let caught = std::panic::catch_unwind(|| assert_no_fragment(&format!("text {piece} text"), KEY));
        assert!(caught.is_err(), "{piece} was not caught");
    }
    assert_no_fragment(&format!("{} {}", &KEY[..7], &KEY[KEY.len() - 7..]), KEY);
}
