//! `agentic ask` and `agentic chaos` end to end: the binary against the chaos server on 127.0.0.1.

use std::io::{BufRead as _, BufReader};
use std::process::{Child, Command, Output, Stdio};

use agentic_chaos::{ChaosServer, Scenario, Step, WireFormat};
use serde_json::Value;

const CANARY: &str = "sk-canary-SECRET-7f3a";

/// Runs `agentic` with no provider variables from the environment.
fn agentic(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_agentic"))
        .args(args)
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("ANTHROPIC_BASE_URL")
        .env_remove("GEMINI_API_KEY")
        .env_remove("GOOGLE_API_KEY")
        .env_remove("GEMINI_BASE_URL")
        .stdin(Stdio::null())
        .output()
        .expect("the agentic binary runs")
}

async fn agentic_async(args: Vec<String>) -> Output {
    tokio::task::spawn_blocking(move || agentic(&args.iter().map(String::as_str).collect::<Vec<_>>())).await.unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}

const FAST: [&str; 4] = ["--session-base-delay-ms", "2", "--exec-base-delay-ms", "2"];

fn args(base: &[&str], rest: &[&str]) -> Vec<String> {
    base.iter().chain(FAST.iter()).chain(rest.iter()).map(|s| s.to_string()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_after_a_rate_limit_a_dropped_stream_and_a_503() {
    let scenario = Scenario::new()
        .then(Step::http_error(429).retry_after_ms(20))
        .then(Step::drop_stream(1))
        .then(Step::http_error(503))
        .otherwise(Step::ok("hello from chaos"));
    let server = ChaosServer::start(scenario).await.unwrap();
    let url = server.openai_base_url();
    let output = agentic_async(args(&["ask", "--base-url", &url, "--json"], &["say hi"])).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["answer"], "hello from chaos");
    assert_eq!(json["calls"], 4);
    let attempts = json["attempts"].as_array().unwrap();
    let verdicts: Vec<&str> = attempts.iter().map(|a| a["verdict"].as_str().unwrap()).collect();
    assert_eq!(verdicts, ["retry", "retry", "retry"]);
    // The server's 20 ms Retry-After is the wait (the schedule's would be 2 ms), with jitter only
    // above it and at most a quarter of it.
    let delay = attempts[0]["delay_ms"].as_u64().unwrap();
    assert!((20..=25).contains(&delay), "{delay}");
    assert_eq!(attempts[0]["reason"], "HTTP 429 is transient");
    assert_eq!(attempts[1]["reason"], "transport failure (stream dropped) is transient");
    let calls: Vec<Option<String>> = server.journal().into_iter().map(|entry| entry.agentic_call).collect();
    assert_eq!(calls, ["1", "2", "3", "4"].map(|call| Some(call.to_owned())));
}

/// `--provider gemini` through the registry: Gemini's path with the model in it, the key in
/// `x-goog-api-key` (never in the URL or the output), Google's 429 retried after the server's wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemini_answers_after_a_rate_limit() {
    let scenario =
        Scenario::new().then(Step::http_error(429).retry_after_ms(20)).otherwise(Step::ok("hello from gemini"));
    let server = ChaosServer::start(scenario).await.unwrap();
    let url = server.base_url(WireFormat::Gemini);
    let flags =
        ["ask", "--provider", "gemini", "--base-url", &url, "--api-key", CANARY, "--model", "gemini-test", "--json"];
    let output = agentic_async(args(&flags, &["say hi"])).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!((json["answer"].as_str(), json["calls"].as_u64()), (Some("hello from gemini"), Some(2)));
    let delay = json["attempts"][0]["delay_ms"].as_u64().unwrap();
    assert!((20..=25).contains(&delay), "the server's wait, jittered only above it: {delay}");
    assert!(json["attempts"][0]["error"].as_str().unwrap().contains("RESOURCE_EXHAUSTED"), "{json}");
    for entry in server.journal() {
        assert_eq!(
            (entry.wire, entry.model.as_deref(), entry.auth),
            (Some(WireFormat::Gemini), Some("gemini-test"), true)
        );
        assert!(entry.path.ends_with("/models/gemini-test:streamGenerateContent"), "{}", entry.path);
    }
    assert!(!text(&output.stdout).contains(CANARY) && !text(&output.stderr).contains(CANARY));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_key_fails_at_once_and_the_key_never_shows() {
    let server = ChaosServer::start(Scenario::new().otherwise(Step::invalid_api_key())).await.unwrap();
    for (provider, url) in [("openai", server.openai_base_url()), ("anthropic", server.anthropic_base_url())] {
        let output = agentic_async(args(
            &["ask", "--provider", provider, "--base-url", &url, "--api-key", CANARY, "-v"],
            &["say hi"],
        ))
        .await;
        assert_eq!(output.status.code(), Some(1));
        let stderr = text(&output.stderr);
        assert!(stderr.contains("exec() failed permanently:\nAttempt 1: AuthenticationError: 401"), "{stderr}");
        assert!(!stderr.contains(CANARY) && !text(&output.stdout).contains(CANARY), "{stderr}");
    }
    assert_eq!(server.journal().len(), 2);
    assert!(server.journal().iter().all(|entry| entry.auth));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn speaks_anthropic_and_retries_an_overloaded_event() {
    let scenario = Scenario::new().then(Step::sse_error(1)).otherwise(Step::ok("bonjour"));
    let server = ChaosServer::start(scenario).await.unwrap();
    let url = server.anthropic_base_url();
    let output = agentic_async(args(&["ask", "--provider", "anthropic", "--base-url", &url], &["hi"])).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "bonjour\n");
    assert_eq!(server.journal().len(), 2);
}

/// `--provider responses`: OpenAI's Responses wire, through the registry, with OpenAI's key and base
/// URL; a `response.failed` on the 200 stream is retried as the 500 it stands for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn speaks_responses_and_retries_a_failed_response() {
    let scenario = Scenario::new().then(Step::sse_error(1)).otherwise(Step::ok("bonjour"));
    let server = ChaosServer::start(scenario).await.unwrap();
    let url = server.base_url(agentic_chaos::WireFormat::Responses);
    let output =
        agentic_async(args(&["ask", "--provider", "responses", "--base-url", &url, "--json", "-v"], &["hi"])).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["answer"], "bonjour");
    assert_eq!(json["attempts"][0]["verdict"], "retry", "{json}");
    assert!(json["attempts"][0]["error"].as_str().unwrap().starts_with("InternalServerError: "), "{json}");
    let journal = server.journal();
    assert_eq!(journal.len(), 2);
    assert!(journal.iter().all(|entry| entry.wire == Some(agentic_chaos::WireFormat::Responses)), "{journal:?}");
    let output = agentic(&["ask", "--provider", "responses", "hi"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output.stderr).contains("set OPENAI_API_KEY"), "{}", text(&output.stderr));
}

#[test]
fn says_which_key_to_set() {
    let output = agentic(&["ask", "hi"]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        text(&output.stderr),
        "error: no API key for openai: pass --api-key-env VAR or --api-key, or set OPENAI_API_KEY (a server of \
         your own needs none: pass --base-url or set OPENAI_BASE_URL)\n"
    );
    let output = agentic(&["ask", "--provider", "anthropic", "hi"]);
    assert!(text(&output.stderr).contains("set ANTHROPIC_API_KEY"));
}

#[test]
fn an_invalid_policy_gives_the_attributes_message() {
    let output = agentic(&["ask", "--base-url", "http://127.0.0.1:9/v1", "--max-calls", "100", "hi"]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        text(&output.stderr),
        "error: `max_calls` (100) is more than the 12 calls this policy can make; lower it or raise \
         `max_retries` / `session_retries`\n"
    );
    let output = agentic(&["ask", "--jitter", "wobbly", "hi"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output.stderr).contains("none, full, equal, decorrelated, proportional"));
}

#[test]
fn a_base_url_with_a_fragment_is_a_usage_error_before_any_request() {
    const KEY: &str = "sk-proj-Zq7vK2mN9xR4tB8wL1pC6hJ3fD5gS0yE";
    // Port 9: nothing listens there; a request would be a connection error (exit 1), not exit 2.
    let output = agentic(&["ask", "--base-url", &format!("http://127.0.0.1:9/v1#{KEY}"), "--api-key", KEY, "hi"]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        text(&output.stderr),
        "error: the base URL `http://127.0.0.1:9/v1#<redacted>` has a fragment (`#...`), which is never sent to the \
         server: remove it (a query, `?api-version=...`, is kept after the path)\n"
    );
    assert!(output.stdout.is_empty());
}

#[test]
fn a_rejected_base_url_is_shown_without_the_key() {
    const KEY: &str = "sk-proj-Zq7vK2mN9xR4tB8wL1pC6hJ3fD5gS0yE";
    let cases = [
        (format!("ftp://user:{KEY}@host/v1?key={KEY}"), "ftp://<redacted>:<redacted>@host/v1?key=<redacted>"),
        // The key where the URL goes (the two values swapped).
        (KEY.to_owned(), "<redacted>"),
    ];
    for (url, shown) in cases {
        let output = agentic(&["ask", "--base-url", &url, "--api-key", KEY, "hi"]);
        assert_eq!(output.status.code(), Some(2));
        assert_eq!(
            text(&output.stderr),
            format!(
                "error: the base URL `{shown}` is not an http(s) URL: pass e.g. --base-url http://127.0.0.1:8080/v1\n"
            )
        );
        assert!(output.stdout.is_empty());
    }
}

#[test]
fn help_states_every_bound_with_its_default_and_reason() {
    let output = agentic(&["ask", "--help"]);
    assert_eq!(output.status.code(), Some(0));
    let help = text(&output.stdout).split_whitespace().collect::<Vec<_>>().join(" ");
    for expected in [
        "--connect-timeout-ms <MS>",
        "[default: 10000: the OpenAI and Anthropic SDKs allow 5 s",
        "--headers-timeout-ms <MS>",
        "[default: 120000:",
        "--first-token-timeout-ms <MS>",
        "[default: 300000: reasoning models think for minutes",
        "--idle-timeout-ms <MS>",
        "[default: 60000: a live stream does not pause for a minute mid-answer]",
        "--timeout-ms <MS>",
        "[default: 600000: what the OpenAI and Anthropic SDKs allow one request]",
        "--turn-timeout-ms <MS>",
        "an exec whose calls never return ends within 15 minutes]",
        "--max-answer-bytes <BYTES>",
        "[default: 4194304 (4 MiB)",
        "[default: proportional",
    ] {
        assert!(help.contains(expected), "`agentic ask --help` lacks {expected:?}:\n{help}");
    }
}

#[test]
fn a_bound_that_could_never_be_reached_is_refused_like_the_attribute_refuses_it() {
    let output = agentic(&["ask", "--base-url", "http://127.0.0.1:9/v1", "--first-token-timeout-ms", "700000", "hi"]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        text(&output.stderr),
        "error: `first_token_timeout_ms` (700000) must not exceed `timeout_ms` (600000, the default): the call \
         would end first; raise `timeout_ms` too\n"
    );
}

#[test]
fn a_refused_connection_is_retried_then_reported() {
    let args: Vec<&str> = crate::common::REFUSED_FAST.into_iter().chain(["--api-key", CANARY]).collect();
    let output = agentic(&args);
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    assert!(
        stderr.starts_with("exec() failed after 2 attempts (4 model calls):\nAttempt 1: ConnectionError:"),
        "{stderr}"
    );
    assert!(!stderr.contains(CANARY));
}

/// Kills the chaos process when the test ends, whatever happens.
struct Serving(Child);

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn chaos_serves_a_scenario_file_until_stopped() {
    let dir = std::env::temp_dir().join(format!("agentic-chaos-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("scenario.json");
    std::fs::write(
        &file,
        r#"{"steps": [{"kind": "http_error", "status": 503}], "default": {"kind": "ok", "text": "served"}}"#,
    )
    .unwrap();
    let mut child = Serving(
        Command::new(env!("CARGO_BIN_EXE_agentic"))
            .args(["chaos", "--scenario", file.to_str().unwrap()])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut lines = BufReader::new(child.0.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let url = first.strip_prefix("openai base URL:").unwrap().trim().to_owned();
    assert!(url.starts_with("http://127.0.0.1:") && url.ends_with("/v1"), "{first}");
    // Every wire it serves, with its base URL.
    let root = url.strip_suffix("/v1").unwrap().to_owned();
    let others: Vec<String> = (0..3).map(|_| lines.next().unwrap().unwrap()).collect();
    assert_eq!(
        others,
        [
            format!("anthropic base URL: {root}"),
            format!("gemini base URL:    {root}/v1beta"),
            format!("responses base URL: {root}/v1"),
        ]
    );
    let output = agentic(&["ask", "--base-url", &url, "--session-base-delay-ms", "1", "hi"]);
    assert_eq!(text(&output.stdout), "served\n", "{}", text(&output.stderr));
    drop(child);

    std::fs::write(&file, r#"{"steps": [{"kind": "http_error", "staus": 503}]}"#).unwrap();
    let output = agentic(&["chaos", "--scenario", file.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("scenario.json") && stderr.contains("`steps[0].staus`"), "{stderr}");
    assert!(stderr.contains("did you mean `status`?"), "{stderr}");
    let _ = std::fs::remove_dir_all(dir);
}

/// `--silent-store` serves a store that accepts and never answers, on a port of its own, next to the
/// chaos server: what a fleet store pointed at a hung Redis meets.
#[test]
fn chaos_serves_a_silent_store_that_accepts_and_never_answers() {
    use std::io::{Read as _, Write as _};
    let dir = std::env::temp_dir().join(format!("agentic-chaos-cli-silent-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("scenario.json");
    std::fs::write(&file, r#"{"default": {"kind": "ok"}}"#).unwrap();
    let mut child = Serving(
        Command::new(env!("CARGO_BIN_EXE_agentic"))
            .args(["chaos", "--scenario", file.to_str().unwrap(), "--silent-store"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let lines = BufReader::new(child.0.stdout.take().unwrap()).lines();
    let lines: Vec<String> = lines.take(6).map(Result::unwrap).collect();
    let silent = lines.iter().find_map(|line| line.strip_prefix("silent store:"));
    let url = silent.unwrap_or_else(|| panic!("{lines:?}")).trim();
    let addr = url.strip_prefix("redis://").unwrap();
    assert!(addr.starts_with("127.0.0.1:"), "{url}");
    let mut socket = std::net::TcpStream::connect(addr).unwrap();
    socket.write_all(b"*1\r\n$4\r\nPING\r\n").unwrap();
    // Accepted and read; that it never answers is the silent server's own test (chaos/src/silent.rs),
    // on a paused clock: here nothing has come back, and the socket is still open.
    socket.set_nonblocking(true).unwrap();
    let mut byte = [0u8; 1];
    let read = socket.read(&mut byte);
    assert!(matches!(&read, Err(error) if error.kind() == std::io::ErrorKind::WouldBlock), "{read:?}");
    drop(child);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn chaos_refuses_a_scenario_that_would_exhaust_memory_before_serving() {
    let dir = std::env::temp_dir().join(format!("agentic-chaos-cli-memory-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("huge.json");
    std::fs::write(&file, r#"{"steps":[{"kind":"ok","chunks":4294967295}]}"#).unwrap();
    let output = agentic(&["chaos", "--scenario", file.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(text(&output.stdout), "", "nothing served");
    assert_eq!(
        text(&output.stderr),
        format!(
            "error: scenario file `{}`, `steps[0].chunks`: `chunks` must be at most 100000 (the chaos server's \
             limit), not 4294967295\n",
            file.display()
        )
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reports_the_tokens_spent_failed_calls_included() {
    // The chaos server counts a prompt's words as its input tokens and an answer's words as its
    // output tokens; Anthropic's stream reports the input (and 1 output token) before it drops.
    let scenario = Scenario::new().then(Step::drop_stream(1)).otherwise(Step::ok("hello from chaos"));
    let server = ChaosServer::start(scenario).await.unwrap();
    let url = server.anthropic_base_url();
    let output =
        agentic_async(args(&["ask", "--provider", "anthropic", "--base-url", &url, "--json", "-v"], &["say hi there"]))
            .await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["usage"], serde_json::json!({"input_tokens": 6, "output_tokens": 4}));
    assert!(
        text(&output.stderr).contains("tokens: 6 in, 4 out (3 in, 1 out on failed attempts)"),
        "{}",
        text(&output.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_schema_prints_the_json_once_it_follows_the_schema() {
    let schema = agentic_test_support::temp_file::TempFile::new("invoice.schema.json");
    std::fs::write(
        schema.path(),
        r#"{"title": "Invoice", "type": "object", "required": ["currency", "total"],
            "properties": {"currency": {"type": "string"}, "total": {"type": "number", "minimum": 0}}}"#,
    )
    .unwrap();
    let scenario = Scenario::new()
        .then(Step::ok(r#"{"currency": "EUR", "total": -1}"#))
        .otherwise(Step::ok(r#"{"currency": "EUR", "total": 12.5}"#));
    let server = ChaosServer::start(scenario).await.unwrap();
    let url = server.openai_base_url();
    let schema_arg = schema.path().to_str().unwrap().to_owned();
    let output = agentic_async(args(&["ask", "--base-url", &url, "--schema", &schema_arg, "-v"], &["read it"])).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let answer: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(answer, serde_json::json!({"currency": "EUR", "total": 12.5}));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("`/total` does not follow the schema"), "{stderr}");
    assert!(server.journal().iter().all(|entry| entry.schema.as_deref() == Some("Invoice")));
}

#[test]
fn a_schema_that_is_not_json_is_a_usage_error() {
    let schema = agentic_test_support::temp_file::TempFile::new("broken.schema.json");
    std::fs::write(schema.path(), "{ not json").unwrap();
    let output =
        agentic(&["ask", "--base-url", "http://127.0.0.1:9/v1", "--schema", schema.path().to_str().unwrap(), "q"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output.stderr).contains("is not JSON"), "{}", text(&output.stderr));
}

/// Terminal control sequences a hostile server or model may send: a window title, a clipboard
/// write, a line overwrite, an 8-bit CSI.
const HOSTILE: &str = "\x1b]0;pwned\x07 \x1b]52;c;cm0gLXJmIH4=\x07 \x1b[2K\rall good \u{9b}2J";

/// The same as `agentic` prints it: every control character escaped.
const HOSTILE_SHOWN: &str = "\\u{1b}]0;pwned\\u{7} \\u{1b}]52;c;cm0gLXJmIH4=\\u{7} \\u{1b}[2K\\rall good \\u{9b}2J";

fn assert_no_control_characters(bytes: &[u8], what: &str) {
    let text = text(bytes);
    assert!(
        !text.chars().any(|c| c.is_control() && c != '\n' && c != '\t'),
        "{what} holds a control character: {text:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_sequences_in_a_servers_error_and_a_models_answer_are_escaped() {
    let scenario = Scenario::new()
        .then(Step::http_error(503).message(HOSTILE))
        .then(Step::http_error(400).message(HOSTILE))
        .otherwise(Step::ok(HOSTILE));
    let server = ChaosServer::start(scenario).await.unwrap();
    let url = server.openai_base_url();
    // The 503 is retried (-v shows the decision), the 400 ends the exec: both carry the text.
    let failed = agentic_async(args(&["ask", "--base-url", &url, "-v"], &["q"])).await;
    assert_eq!(failed.status.code(), Some(1), "{}", text(&failed.stderr));
    assert_no_control_characters(&failed.stderr, "stderr");
    assert_no_control_characters(&failed.stdout, "stdout");
    let stderr = text(&failed.stderr);
    assert!(stderr.contains("-> retry") && stderr.contains("-> fail_permanently"), "{stderr}");
    assert!(stderr.matches(HOSTILE_SHOWN).count() >= 3, "the -v decisions and the error: {stderr}");

    let answered = agentic_async(args(&["ask", "--base-url", &url], &["q"])).await;
    assert_eq!(answered.status.code(), Some(0), "{}", text(&answered.stderr));
    assert_no_control_characters(&answered.stdout, "stdout");
    assert_eq!(text(&answered.stdout), format!("{HOSTILE_SHOWN}\n"));
    // --json keeps the exact text, in JSON's own escapes.
    let json = agentic_async(args(&["ask", "--base-url", &url, "--json"], &["q"])).await;
    let json: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(json["answer"], HOSTILE);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_preset_sets_five_calls_in_layer_1() {
    let server = ChaosServer::start(Scenario::new().otherwise(Step::http_error(503))).await.unwrap();
    let url = server.openai_base_url();
    // The preset's waits (2 s to 60 s) made short; its five calls, all in layer 1, kept.
    let rest = ["--preset", "anthropic", "--max-delay-ms", "4", "--json", "hi"];
    let output = agentic_async(args(&["ask", "--base-url", &url], &rest)).await;
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["calls"], 5, "the defaults would make 12");
    let layers: Vec<&str> = json["attempts"].as_array().unwrap().iter().map(|a| a["layer"].as_str().unwrap()).collect();
    // Four session retries, layer 1 giving up on the fifth call, then layer 2 stopping: no calls left.
    assert_eq!(layers, ["session", "session", "session", "session", "session", "exec"]);
    assert_eq!(server.journal().len(), 5);
}

#[test]
fn a_preset_is_judged_with_the_flags_beside_it_and_an_unknown_one_is_a_usage_error() {
    let output = agentic(&[
        "ask",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--preset",
        "gemini-free-tier",
        "--max-retries",
        "1",
        "--session-retries",
        "1",
        "hi",
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        text(&output.stderr),
        "error: `max_calls` (5) is more than the 2 calls this policy can make; lower it or raise \
         `max_retries` / `session_retries`\n"
    );
    let output = agentic(&["ask", "--preset", "gemini", "hi"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains("unknown preset `gemini`; expected one of: anthropic, gemini-free-tier"),
        "{}",
        text(&output.stderr)
    );
}
