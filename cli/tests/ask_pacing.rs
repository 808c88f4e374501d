//! `agentic ask` under the chaos server's rate limit: a wait for the limit is a decision, shown by
//! `--verbose` as it is made and in `--json`'s attempts; `--rpm`, `--tpm` and `--no-pacing`.

use std::process::{Command, Output, Stdio};
use std::time::Duration;

use agentic_chaos::{ChaosServer, RateLimit, Scenario, Step};
use serde_json::Value;

fn agentic(args: &[String]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agentic"));
    for name in ["OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"] {
        command.env_remove(name);
    }
    command.args(args).stdin(Stdio::null()).output().expect("the agentic binary runs")
}

async fn agentic_async(args: &[&str]) -> Output {
    let args: Vec<String> = args.iter().map(|arg| arg.to_string()).collect();
    tokio::task::spawn_blocking(move || agentic(&args)).await.unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Two requests per 3 s, the first two answered by a 503: the second retry (2 ms after the second
/// 503 by the schedule) waits for the limit the 503s' headers stated: two used, full again in 3 s,
/// which the pacer reads as the longest window the rounding allows (6 s: one in 3 s); one used
/// tells no rate. Real time: the wait is what is left of those 3 s when the retry comes, a second
/// or more on any machine.
async fn limited_server() -> ChaosServer {
    let limit = RateLimit::new().requests(2).window(Duration::from_secs(3));
    let scenario =
        Scenario::new().then_times(2, Step::http_error(503)).otherwise(Step::ok("hello")).with_rate_limit(limit);
    ChaosServer::start(scenario).await.unwrap()
}

const FAST: [&str; 4] = ["--session-base-delay-ms", "2", "--jitter", "none"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verbose_shows_the_wait_for_the_limit_as_a_decision_and_no_request_is_refused() {
    // OpenAI's headers carry their window in the reset; Anthropic's limits are per minute (the
    // pacer reads them so), so this 3 s window is an OpenAI-wire case (tests/tests/pacing_wires.rs
    // paces Anthropic's minute on paused time).
    for wire in ["openai", "responses"] {
        let server = limited_server().await;
        let url = server.base_url(agentic_chaos::WireFormat::from_name(wire).unwrap());
        let mut args = vec!["ask", "--provider", wire, "--base-url", &url, "-v"];
        args.extend(FAST);
        args.push("say hi");
        let output = agentic_async(&args).await;
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "{wire}: {stderr}");
        assert_eq!(text(&output.stdout).trim(), "hello");
        let paced: Vec<&str> = stderr.lines().filter(|line| line.contains("-> paced")).collect();
        assert_eq!(paced.len(), 1, "{wire}: {stderr}");
        assert!(
            paced[0].contains("call 3: RateLimit: the provider's rate limit has not refilled enough for this call yet")
                && paced[0].contains("(the requests rate limit (2) is used up: waiting for it to refill"),
            "{wire}: {}",
            paced[0]
        );
        let journal = server.journal();
        assert_eq!((journal.len(), journal.iter().filter(|entry| entry.rate_limited).count()), (3, 0), "{wire}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_has_the_paced_attempt_and_no_pacing_meets_the_429_instead() {
    let server = limited_server().await;
    let url = server.openai_base_url();
    let mut args = vec!["ask", "--base-url", &url, "--json"];
    args.extend(FAST);
    args.push("say hi");
    let output = agentic_async(&args).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    let verdicts: Vec<&str> =
        json["attempts"].as_array().unwrap().iter().map(|a| a["verdict"].as_str().unwrap()).collect();
    assert_eq!(verdicts, ["retry", "retry", "paced"], "{json}");
    let waited = json["attempts"][2]["delay_ms"].as_u64().unwrap();
    assert!((1_000..=3_100).contains(&waited), "{waited}");

    let server = limited_server().await;
    let url = server.openai_base_url();
    let mut args = vec!["ask", "--base-url", &url, "--json", "--no-pacing"];
    args.extend(FAST);
    args.push("say hi");
    let output = agentic_async(&args).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(server.journal().iter().any(|entry| entry.rate_limited), "without pacing the retry meets the limit");
}

#[test]
fn a_zero_limit_and_no_pacing_with_a_limit_are_usage_errors() {
    let run = |flags: &[&str]| {
        let mut args: Vec<String> =
            ["ask", "--base-url", "http://127.0.0.1:9/v1"].iter().map(|a| a.to_string()).collect();
        args.extend(flags.iter().map(|flag| flag.to_string()));
        args.push("hi".to_owned());
        agentic(&args)
    };
    let zero = run(&["--rpm", "0"]);
    assert_eq!(zero.status.code(), Some(2));
    assert!(text(&zero.stderr).contains("`requests_per_minute` (0) must be at least 1"), "{}", text(&zero.stderr));
    let both = run(&["--no-pacing", "--tpm", "100"]);
    assert_eq!(both.status.code(), Some(2));
    assert!(text(&both.stderr).contains("cannot be used with"), "{}", text(&both.stderr));
}

/// One 503 states 2 requests, none left, full again in 14 minutes: the pacer would wait 838 s for
/// the retry, past the 60 s `--retry-after-cap-ms`. The wait is not made: the retry is sent (after
/// the backoff) and the server answers it; no paced attempt, no refusal. Against the old rule the
/// exec slept 838 s, or with `--budget-ms` was refused without a request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stated_wait_past_the_cap_is_not_made_and_the_server_answers() {
    for budget in [Some("30000"), None] {
        let fourteen_minutes = Step::http_error(503)
            .header("x-ratelimit-limit-requests", "2")
            .header("x-ratelimit-remaining-requests", "0")
            .header("x-ratelimit-reset-requests", "14m");
        let scenario = Scenario::new().then(fourteen_minutes).otherwise(Step::ok("hello"));
        let server = ChaosServer::start(scenario).await.unwrap();
        let url = server.openai_base_url();
        let mut args = vec!["ask", "--base-url", &url, "--json"];
        args.extend(FAST);
        if let Some(budget) = budget {
            args.extend(["--budget-ms", budget]);
        }
        args.push("say hi");
        let output = agentic_async(&args).await;
        assert_eq!(output.status.code(), Some(0), "{budget:?}: {}", text(&output.stderr));
        let json: Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(json["answer"], "hello", "{json}");
        let verdicts: Vec<&str> =
            json["attempts"].as_array().unwrap().iter().map(|a| a["verdict"].as_str().unwrap()).collect();
        assert_eq!(verdicts, ["retry"], "{budget:?}: the 503's retry only, no wait for the limit: {json}");
        assert_eq!(server.journal().len(), 2, "{budget:?}: the 503 and the answered retry");
    }
}
