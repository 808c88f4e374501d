//! `agentic ask --fallback-provider P --fallback-base-url URL [--fallback-model M]`: the binary
//! against two chaos servers on 127.0.0.1, the primary on the OpenAI wire, the fallback on
//! Anthropic's, each journaling the requests it was sent.

use std::process::Output;

use agentic_chaos::{ChaosServer, EchoKey, Scenario, Step, WireFormat};
use agentic_runtime::provider::WireKind;
use serde_json::Value;

const CANARY: &str = "sk-ant-canary-SECRET-9c2e";

/// Runs `agentic args..` with no provider variable from the environment but those of `env`.
fn agentic(args: &[String], env: &[(&str, &str)]) -> Output {
    crate::common::agentic_command(&[]).args(args).envs(env.iter().copied()).output().expect("the agentic binary runs")
}

/// [`agentic`] off the async runtime, which serves the chaos servers meanwhile.
async fn agentic_async(args: Vec<String>, env: Vec<(&'static str, String)>) -> Output {
    tokio::task::spawn_blocking(move || {
        let env: Vec<(&str, &str)> = env.iter().map(|(name, value)| (*name, value.as_str())).collect();
        agentic(&args, &env)
    })
    .await
    .unwrap()
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|arg| arg.to_string()).collect()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}

/// The two servers: the primary speaks OpenAI's wire and plays `primary`, the fallback Anthropic's
/// and plays `fallback`.
struct Servers {
    primary: ChaosServer,
    fallback: ChaosServer,
}

impl Servers {
    async fn start(primary: Scenario, fallback: Scenario) -> Self {
        Self {
            primary: ChaosServer::start(primary).await.unwrap(),
            fallback: ChaosServer::start(fallback).await.unwrap(),
        }
    }

    /// `ask` with the primary and one Anthropic fallback (its `model` if given), the delays of both
    /// layers at 2 ms, then `rest`.
    fn args(&self, model: Option<&str>, rest: &[&str]) -> Vec<String> {
        let (primary, fallback) = (self.primary.openai_base_url(), self.fallback.anthropic_base_url());
        let mut args = strings(&["ask", "--base-url", &primary, "--fallback-provider", "anthropic"]);
        args.extend(strings(&["--fallback-base-url", &fallback]));
        if let Some(model) = model {
            args.extend(strings(&["--fallback-model", model]));
        }
        args.extend(strings(&["--session-base-delay-ms", "2", "--exec-base-delay-ms", "2"]));
        args.extend(strings(rest));
        args
    }

    /// How many requests each server was sent, the primary's first.
    fn requests(&self) -> (usize, usize) {
        (self.primary.journal().len(), self.fallback.journal().len())
    }
}

fn verdicts(json: &Value) -> Vec<&str> {
    json["attempts"].as_array().unwrap().iter().map(|attempt| attempt["verdict"].as_str().unwrap()).collect()
}

/// The primary's key refused: one request to it, then the fallback's one answer, at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_key_moves_to_the_anthropic_fallback_at_once() {
    let servers = Servers::start(
        Scenario::new().otherwise(Step::invalid_api_key()),
        Scenario::new().otherwise(Step::ok("hello from the fallback")),
    )
    .await;
    let output = agentic_async(servers.args(Some("claude-fallback"), &["--json", "-v", "say hi"]), vec![]).await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["answer"], "hello from the fallback");
    assert_eq!(json["target"], "anthropic/claude-fallback");
    assert_eq!(json["calls"], 2);
    assert_eq!(verdicts(&json), ["give_up", "fallback"], "{json}");
    let moved = &json["attempts"][1];
    let reason = "fallback: `openai/gpt-4o-mini` failed permanently for this target (HTTP 401 is permanent \
                  (a 4xx other than 408, 409, 425, 429)) → `anthropic/claude-fallback`";
    assert_eq!((moved["layer"].as_str(), moved["reason"].as_str()), (Some("exec"), Some(reason)), "{json}");
    assert_eq!(moved["delay_ms"], 0);
    // -v prints the move as its Display, the reason included.
    assert!(stderr.lines().any(|line| line.contains("-> fallback (") && line.contains(reason)), "{stderr}");
    assert_eq!(servers.requests(), (1, 1));
    let asked = &servers.fallback.journal()[0];
    assert_eq!((asked.wire, asked.model.as_deref()), (Some(WireFormat::Anthropic), Some("claude-fallback")));
}

/// A primary answering 503s: layer 1's retries on it (one), then the fallback at once, without
/// layer 2's backoff; the fallback asks for its wire's default model.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_primary_out_of_retries_on_503s_moves_to_the_fallback_with_its_default_model() {
    let servers = Servers::start(
        Scenario::new().otherwise(Step::http_error(503)),
        Scenario::new().otherwise(Step::ok("hello from the fallback")),
    )
    .await;
    let output = agentic_async(servers.args(None, &["--session-retries", "1", "--json", "say hi"]), vec![]).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["answer"], "hello from the fallback");
    let default_model = WireKind::Anthropic.default_model();
    assert_eq!(json["target"].as_str(), Some(format!("anthropic/{default_model}").as_str()));
    assert_eq!(verdicts(&json), ["retry", "retries_exhausted", "fallback"], "{json}");
    assert_eq!(servers.requests(), (2, 1));
    assert_eq!(servers.fallback.journal()[0].model.as_deref(), Some(default_model));
}

/// Two fallbacks, in order: the n-th base URL and model go with the n-th provider. The primary's
/// server also plays the first fallback (Gemini's wire), which refuses its key too; the second
/// (Anthropic's, on the other server) answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_fallbacks_are_tried_in_order_each_with_its_own_url_and_model() {
    let servers = Servers::start(
        Scenario::new().otherwise(Step::invalid_api_key()),
        Scenario::new().otherwise(Step::ok("hello from the second fallback")),
    )
    .await;
    let (gemini, anthropic) = (servers.primary.base_url(WireFormat::Gemini), servers.fallback.anthropic_base_url());
    let args = strings(&[
        "ask",
        "--base-url",
        &servers.primary.openai_base_url(),
        "--fallback-provider",
        "gemini",
        "--fallback-provider",
        "anthropic",
        "--fallback-base-url",
        &gemini,
        "--fallback-base-url",
        &anthropic,
        "--fallback-model",
        "gemini-x",
        "--fallback-model",
        "claude-y",
        "--json",
        "say hi",
    ]);
    let output = agentic_async(args, vec![]).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        (json["answer"].as_str(), json["target"].as_str()),
        (Some("hello from the second fallback"), Some("anthropic/claude-y"))
    );
    assert_eq!(verdicts(&json), ["give_up", "fallback", "give_up", "fallback"], "{json}");
    let moves: Vec<&str> = [1, 3].iter().map(|&at| json["attempts"][at]["reason"].as_str().unwrap()).collect();
    assert!(
        moves[0].starts_with("fallback: `openai/gpt-4o-mini` ") && moves[0].ends_with(" → `gcp.gemini/gemini-x`"),
        "{json}"
    );
    assert!(
        moves[1].starts_with("fallback: `gcp.gemini/gemini-x` ") && moves[1].ends_with(" → `anthropic/claude-y`"),
        "{json}"
    );
    let asked = |server: &ChaosServer| -> Vec<(Option<WireFormat>, Option<String>)> {
        server.journal().into_iter().map(|entry| (entry.wire, entry.model)).collect()
    };
    assert_eq!(
        asked(&servers.primary),
        [
            (Some(WireFormat::OpenAi), Some("gpt-4o-mini".to_owned())),
            (Some(WireFormat::Gemini), Some("gemini-x".to_owned()))
        ]
    );
    assert_eq!(asked(&servers.fallback), [(Some(WireFormat::Anthropic), Some("claude-y".to_owned()))]);
}

/// Both targets refuse their keys: the ask fails as any failed ask does (exit 1), the JSON's target
/// is the last one tried, and the fallback's key, read from ANTHROPIC_API_KEY (sent: its server is
/// on the origin of ANTHROPIC_BASE_URL), and echoed by its server, is printed nowhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_targets_failing_fail_the_ask_with_the_last_target_and_never_print_the_key() {
    let servers = Servers::start(
        Scenario::new().otherwise(Step::invalid_api_key()),
        // The fallback's server sends the key it was sent back in its error, as some gateways do.
        Scenario::new().otherwise(Step::invalid_api_key().echo_key(EchoKey::Whole)),
    )
    .await;
    let env =
        vec![("ANTHROPIC_API_KEY", CANARY.to_owned()), ("ANTHROPIC_BASE_URL", servers.fallback.anthropic_base_url())];
    for rest in [&["--json", "-v", "say hi"][..], &["-v", "say hi"]] {
        let output = agentic_async(servers.args(Some("claude-fallback"), rest), env.clone()).await;
        let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
        assert_eq!(output.status.code(), Some(1), "{stderr}");
        assert!(!stdout.contains(CANARY) && !stderr.contains(CANARY), "{stdout}\n{stderr}");
        // Every 8 bytes of the key are secret (docs/design.md §19): no run of them shows either.
        for window in CANARY.as_bytes().windows(8) {
            let piece = std::str::from_utf8(window).unwrap();
            assert!(!stdout.contains(piece) && !stderr.contains(piece), "`{piece}` shown");
        }
        assert!(stderr.contains("AuthenticationError: 401"), "{stderr}");
        assert!(stderr.contains("<redacted>"), "the echoed key is redacted, not dropped: {stderr}");
        if rest[0] == "--json" {
            let json: Value = serde_json::from_str(&stdout).unwrap();
            assert_eq!(json["target"], "anthropic/claude-fallback", "{json}");
            assert_eq!(json["error_kind"], "permanent", "{json}");
            assert_eq!(verdicts(&json), ["give_up", "fallback", "give_up", "fail_permanently"], "{json}");
        }
    }
    assert_eq!(servers.requests(), (2, 2));
    // The primary got no key (none was given), the fallback its wire's.
    assert!(servers.primary.journal().iter().all(|entry| !entry.auth));
    assert!(servers.fallback.journal().iter().all(|entry| entry.auth));
}

/// Without fallbacks the line is as before: no `target` (a runtime of one provider names none).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_fallbacks_the_json_has_no_target() {
    let server = ChaosServer::start(Scenario::new().otherwise(Step::ok("hello"))).await.unwrap();
    let output =
        agentic_async(strings(&["ask", "--base-url", &server.openai_base_url(), "--json", "hi"]), vec![]).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["answer"], "hello");
    assert!(json.get("target").is_none(), "{json}");
}

/// A usage error, before any request (port 9: nothing listens there, so a request would exit 1).
fn usage_error(fallback_flags: &[&str]) -> String {
    let mut args = strings(&["ask", "--base-url", "http://127.0.0.1:9/v1"]);
    args.extend(strings(fallback_flags));
    args.push("hi".to_owned());
    let output = agentic(&args, &[]);
    assert_eq!(output.status.code(), Some(2), "{args:?}: {}", text(&output.stderr));
    assert!(output.stdout.is_empty());
    text(&output.stderr)
}

#[test]
fn a_fallback_flag_without_its_fallback_provider_is_a_usage_error() {
    assert_eq!(
        usage_error(&["--fallback-base-url", "http://127.0.0.1:9"]),
        "error: --fallback-base-url `http://127.0.0.1:9` has no --fallback-provider: fallback 1 needs one \
         (e.g. --fallback-provider anthropic); the n-th --fallback-base-url goes with the n-th --fallback-provider\n"
    );
    assert_eq!(
        usage_error(&["--fallback-provider", "anthropic"]),
        "error: fallback 1 (--fallback-provider anthropic) has no --fallback-base-url: give one for each \
         --fallback-provider; the n-th --fallback-base-url goes with the n-th --fallback-provider\n"
    );
    let two = ["--fallback-provider", "anthropic", "--fallback-base-url", "http://127.0.0.1:9"];
    let two =
        [&two[..], &["--fallback-provider", "gemini", "--fallback-base-url", "http://127.0.0.1:9/v1beta"]].concat();
    assert_eq!(
        usage_error(&[&two[..], &["--fallback-model", "claude-x"]].concat()),
        "error: fallback 2 (--fallback-provider gemini) has no --fallback-model: give one for each \
         --fallback-provider, or give none (each fallback then asks for its wire's default model, \
         `gemini-2.5-flash` for gemini); the n-th --fallback-model goes with the n-th --fallback-provider\n"
    );
    // A key in a URL given to the wrong flag is not shown.
    assert_eq!(
        usage_error(&[&two[..], &["--fallback-base-url", &format!("http://user:{CANARY}@127.0.0.1:9")]].concat()),
        "error: --fallback-base-url `http://<redacted>:<redacted>@127.0.0.1:9` has no --fallback-provider: \
         fallback 3 needs one (e.g. --fallback-provider anthropic); the n-th --fallback-base-url goes with the \
         n-th --fallback-provider\n"
    );
}

#[test]
fn thirty_one_fallbacks_run_and_one_more_is_a_usage_error() {
    let one = ["--fallback-provider", "openai", "--fallback-base-url", "http://127.0.0.1:9/v1"];
    assert_eq!(
        usage_error(&one.repeat(agentic_runtime::exec::MAX_TARGETS)),
        "error: --fallback-provider is given 32 times, and a runtime has at most 31 fallbacks (its targets \
         are at most 32, the primary included)\n"
    );
    // One fewer is a runtime of 32 targets, each tried once (port 9 refuses every connection); the
    // targets of one wire and model are told apart by their position.
    let mut args = strings(&["ask", "--base-url", "http://127.0.0.1:9/v1", "--max-retries", "1", "--session-retries"]);
    args.extend(strings(&["0", "--json"]));
    args.extend(strings(&one.repeat(agentic_runtime::exec::MAX_TARGETS - 1)));
    args.push("hi".to_owned());
    let output = agentic(&args, &[]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!((json["calls"].as_u64(), json["target"].as_str()), (Some(32), Some("openai/gpt-4o-mini#32")), "{json}");
    assert_eq!(verdicts(&json).iter().filter(|verdict| **verdict == "fallback").count(), 31, "{json}");
}

#[test]
fn an_unknown_fallback_provider_is_refused_with_the_suggestion_given_for_provider() {
    let fallback = usage_error(&["--fallback-provider", "antropic", "--fallback-base-url", "http://127.0.0.1:9"]);
    let primary = agentic(&strings(&["ask", "--provider", "antropic", "hi"]), &[]);
    assert_eq!(primary.status.code(), Some(2));
    let suggestion =
        "  [possible values: openai, anthropic, gemini, responses]\n\n  tip: a similar value exists: 'anthropic'\n";
    assert!(text(&primary.stderr).contains(suggestion), "{}", text(&primary.stderr));
    assert!(fallback.starts_with("error: invalid value 'antropic' for '--fallback-provider <P>'\n"), "{fallback}");
    assert!(fallback.contains(suggestion), "{fallback}");
}

#[test]
fn a_fallback_needs_a_key_at_its_wires_own_url_and_an_http_url() {
    assert_eq!(
        usage_error(&["--fallback-provider", "anthropic", "--fallback-base-url", "https://api.anthropic.com/"]),
        "error: no API key for fallback 1 (anthropic) at its provider's own API: set ANTHROPIC_API_KEY (with \
         ANTHROPIC_BASE_URL unset, or set to that API), or pass --fallback-api-key-env VAR naming a variable that \
         holds its key (a server of your own needs none)\n"
    );
    assert_eq!(
        usage_error(&["--fallback-provider", "openai", "--fallback-base-url", "127.0.0.1:9/v1"]),
        // Without a scheme it may be a key given where the URL goes: it is not shown.
        "error: the base URL `<redacted>` of fallback 1 (openai) is not an http(s) URL: pass e.g. \
         --fallback-base-url http://127.0.0.1:8080/v1\n"
    );
}

#[test]
fn help_documents_the_fallback_flags_and_the_move_rules() {
    let output = agentic(&strings(&["ask", "--help"]), &[]);
    assert_eq!(output.status.code(), Some(0));
    let help = text(&output.stdout).split_whitespace().collect::<Vec<_>>().join(" ");
    for expected in [
        "--fallback-provider <P>",
        "--fallback-base-url <URL>",
        "--fallback-model <M>",
        "--fallback-api-key-env <VAR>",
        "Fallbacks: --fallback-provider P --fallback-base-url URL [--fallback-model M], repeatable",
        "--api-key and --api-key-env are the primary's, and a key is never given to a fallback on the command line",
        "which goes only to the origin (scheme, host and port; the path does not matter) of the base URL it is \
         paired with",
        "The exec moves to the next target at once, without sleeping, when the target's circuit breaker is open",
        "it stays on a Retry-After within the cap",
        "--json adds \"target\": \"<provider>/<model>\"",
    ] {
        assert!(help.contains(expected), "`agentic ask --help` lacks {expected:?}:\n{help}");
    }
}
