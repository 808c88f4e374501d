//! `agentic ask`'s spend limits against the chaos server: a limit stops the call that would pass
//! it before it is sent, `--json` says what was spent and which limit stopped the exec, a dollar
//! limit counts at the prices of a litellm file, and each bad limit or prices file is a usage error.

use agentic_chaos::{ChaosServer, Scenario, Step, TokenUsage};
use serde_json::json;

use crate::common::{self, Run};

const FAST: [&str; 6] = ["--session-base-delay-ms", "2", "--exec-base-delay-ms", "2", "--jitter", "none"];

/// `agentic ask --base-url URL` with the fast schedule, then `rest`, off the test's thread.
async fn ask(url: &str, rest: &[&str]) -> Run {
    let args: Vec<String> =
        ["ask", "--base-url", url].iter().chain(FAST.iter()).chain(rest).map(|arg| arg.to_string()).collect();
    tokio::task::spawn_blocking(move || run(&args)).await.unwrap()
}

/// `agentic args..` without the provider variables of the environment.
fn run(args: &[String]) -> Run {
    let output = common::agentic_command(&args.iter().map(String::as_str).collect::<Vec<_>>())
        .output()
        .expect("the agentic binary runs");
    Run {
        code: output.status.code().expect("the binary exits normally"),
        stdout: String::from_utf8(output.stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(output.stderr).expect("stderr is UTF-8"),
    }
}

fn fixture(name: &str) -> String {
    format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// A prompt of 4000 bytes: about 1000 tokens by the runtime's estimate (four bytes a token), which a
/// call that fails without reporting its usage is counted at.
fn long_prompt() -> String {
    "word ".repeat(800)
}

/// A 503 (no usage reported: the call is counted at its input estimate, about 1000 tokens), then an
/// answer. Under `--max-total-tokens 1500` the retry, which sends the same request again, cannot
/// fit: it is not sent. Without the limit it is, and answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_total_token_limit_stops_the_retry_before_it_is_sent() {
    let scenario = || Scenario::new().then(Step::http_error(503)).otherwise(Step::ok("hello"));
    let prompt = long_prompt();

    let server = ChaosServer::start(scenario()).await.unwrap();
    let json = ask(&server.openai_base_url(), &["--max-total-tokens", "1500", "--json", &prompt]).await;
    assert_eq!(json.code, 1, "{}", json.stderr);
    assert_eq!(server.journal().len(), 1, "the retry was sent");
    let outcome = json.json();
    assert_eq!(outcome["error_kind"], "usage_limit", "{outcome}");
    let limit = &outcome["limit"];
    assert_eq!((&limit["limit"], &limit["max"]), (&json!("max_total_tokens"), &json!(1500)), "{outcome}");
    let (used, needed) = (limit["used"].as_u64().unwrap(), limit["needed"].as_u64().unwrap());
    // The failed call's input estimate was spent; the retry needs it again and one output token.
    assert!((1000..1500).contains(&used), "{outcome}");
    assert_eq!(needed, used + 1, "{outcome}");
    let spent = &outcome["spent"];
    assert_eq!(spent["total_tokens"].as_u64(), Some(used), "{outcome}");
    assert_eq!((spent["input_tokens"].as_u64(), spent["output_tokens"].as_u64()), (Some(used), Some(0)));
    assert_eq!((&spent["tool_calls"], &spent["cost_usd"]), (&json!(0), &json!(0.0)), "{outcome}");

    // Plain: the spent line, then the error as ever, naming the limit, what was spent and what was
    // needed.
    let server = ChaosServer::start(scenario()).await.unwrap();
    let plain = ask(&server.openai_base_url(), &["--max-total-tokens", "1500", &prompt]).await;
    assert_eq!((plain.code, plain.stdout.as_str()), (1, ""), "{}", plain.stderr);
    assert_eq!(server.journal().len(), 1);
    let refused = format!(
        "`max_total_tokens` (1500) would be passed: {used} spent, the next step needs {needed}, {} left",
        1500 - used
    );
    assert!(plain.stderr.contains(&refused), "{refused:?} not in:\n{}", plain.stderr);
    assert!(plain.stderr.starts_with(&format!("spent: {used} of --max-total-tokens 1500\n")), "{}", plain.stderr);

    let server = ChaosServer::start(scenario()).await.unwrap();
    let unlimited = ask(&server.openai_base_url(), &["--json", &prompt]).await;
    assert_eq!(unlimited.code, 0, "{}", unlimited.stderr);
    assert_eq!(server.journal().len(), 2);
    let outcome = unlimited.json();
    assert!(outcome.get("spent").is_none() && outcome.get("limit").is_none(), "no limits, no spent: {outcome}");
}

/// The reported usage is what is spent: `--json`'s `spent` (and `--stream --json`'s `done`) has the
/// five amounts, and no `limit` on an answer; `-v` and the plain output one line against each limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_and_verbose_say_what_was_spent_against_the_limits() {
    let server =
        ChaosServer::start(Scenario::new().otherwise(Step::ok("hello").usage(TokenUsage::new(120, 40)))).await.unwrap();
    let url = server.openai_base_url();
    let limits = ["--max-total-tokens", "10000", "--max-output-tokens", "50", "--max-tool-calls", "3"];
    let expected =
        json!({"input_tokens": 120, "output_tokens": 40, "total_tokens": 160, "tool_calls": 0, "cost_usd": 0.0});

    let answered = ask(&url, &[&limits[..], &["--json", "say hi"]].concat()).await;
    assert_eq!(answered.code, 0, "{}", answered.stderr);
    let outcome = answered.json();
    assert_eq!(outcome["spent"], expected, "{outcome}");
    assert!(outcome.get("limit").is_none(), "{outcome}");

    let streamed = ask(&url, &[&limits[..], &["--stream", "--json", "say hi"]].concat()).await;
    assert_eq!(streamed.code, 0, "{}", streamed.stderr);
    let done = streamed.json_lines().pop().unwrap();
    assert_eq!((&done["event"], &done["spent"]), (&json!("done"), &expected), "{done}");

    let verbose = ask(&url, &[&limits[..], &["-v", "say hi"]].concat()).await;
    assert_eq!((verbose.code, verbose.stdout.as_str()), (0, "hello\n"), "{}", verbose.stderr);
    let line = "spent: 40 of --max-output-tokens 50, 160 of --max-total-tokens 10000, 0 of --max-tool-calls 3\n";
    assert!(verbose.stderr.ends_with(&format!("tokens: 120 in, 40 out\n{line}")), "{}", verbose.stderr);
    let plain = ask(&url, &[&limits[..], &["say hi"]].concat()).await;
    assert_eq!((plain.code, plain.stdout.as_str(), plain.stderr.as_str()), (0, "hello\n", line));
    let quiet = ask(&url, &[&limits[..], &["-q", "say hi"]].concat()).await;
    assert_eq!((quiet.code, quiet.stderr.as_str()), (0, ""));
    let unlimited = ask(&url, &["say hi"]).await;
    assert_eq!((unlimited.code, unlimited.stderr.as_str()), (0, ""), "no limits, no line");
}

/// `--prices` in litellm's format prices the model the CLI sends: 1000 input tokens at $1 a million
/// and 500 output at $2 cost $0.002. A model priced at $1000 a million input tokens cannot send
/// even the prompt under `--max-cost-usd 0.001`: no request, and the limit in dollars.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dollar_limit_counts_at_the_prices_file() {
    let server = ChaosServer::start(Scenario::new().otherwise(Step::ok("hello").usage(TokenUsage::new(1000, 500))))
        .await
        .unwrap();
    let url = server.openai_base_url();
    let prices = fixture("prices.json");
    let dollars = ["--prices", &prices, "--max-cost-usd", "0.01"];

    let answered = ask(&url, &[&dollars[..], &["--model", "chaos-model", "--json", "say hi"]].concat()).await;
    assert_eq!(answered.code, 0, "{}", answered.stderr);
    let outcome = answered.json();
    let cost = outcome["spent"]["cost_usd"].as_f64().unwrap();
    assert!((cost - 0.002).abs() < 1e-12, "{outcome}");
    let plain = ask(&url, &[&dollars[..], &["--model", "chaos-model", "say hi"]].concat()).await;
    assert_eq!(plain.stderr, "spent: $0.002000 of --max-cost-usd 0.01\n");

    let before = server.journal().len();
    let refused =
        ask(&url, &["--prices", &prices, "--max-cost-usd", "0.001", "--model", "chaos-dear", "--json", "say hi"]).await;
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert_eq!(server.journal().len(), before, "no request under a limit its prompt alone passes");
    let outcome = refused.json();
    assert_eq!(outcome["error_kind"], "usage_limit", "{outcome}");
    let limit = &outcome["limit"];
    assert_eq!((&limit["limit"], &limit["max"], &limit["used"]), (&json!("max_cost_usd"), &json!(0.001), &json!(0.0)));
    assert!(limit["needed"].as_f64().unwrap() > 0.001, "{outcome}");
    assert!(
        refused.stderr.contains("`max_cost_usd` ($0.001000) would be passed: $0.000000 spent"),
        "{}",
        refused.stderr
    );
}

/// Each bad limit or prices file: exit 2, a message naming what is wrong and how to fix it, before
/// any call (the port refuses every connection).
#[test]
fn bad_spend_flags_are_usage_errors() {
    let prices = fixture("prices.json");
    let malformed = fixture("prices_malformed.json");
    let missing = fixture("no-such-prices.json");
    let cases: [(&[&str], &str); 8] = [
        (&["--max-total-tokens", "0"], "`max_total_tokens` = 0 allows nothing: set it to at least 1"),
        (&["--max-input-tokens", "-5"], "`max_input_tokens` = -5 allows nothing: set it to at least 1"),
        (&["--max-tool-calls", "9007199254740993"], "`max_tool_calls` = 9007199254740993 is past the largest limit"),
        (&["--max-cost-usd", "-0.5"], "`max_cost_usd` = -0.5 allows nothing: set a price above 0"),
        (
            &["--max-cost-usd", "0.5"],
            "the target `openai/gpt-4o-mini` has no price, and a dollar limit needs one for every target",
        ),
        (&["--max-cost-usd", "0.5", "--prices", &prices], "the target `openai/gpt-4o-mini` has no price"),
        (&["--prices", &missing], "--prices: the prices file `"),
        (&["--max-cost-usd", "0.5", "--prices", &malformed], "--prices: the prices are not litellm's JSON, at line 2"),
    ];
    let refused = |flags: &[&str]| {
        let args = ["ask", "--base-url", "http://127.0.0.1:9/v1"].iter().chain(flags).chain(&["hi"]);
        run(&args.map(|arg| arg.to_string()).collect::<Vec<_>>())
    };
    for (flags, message) in cases {
        let refused = refused(flags);
        assert_eq!((refused.code, refused.stdout.as_str()), (2, ""), "{flags:?}: {}", refused.stderr);
        assert!(refused.stderr.starts_with(&format!("error: {message}")), "{flags:?}: {}", refused.stderr);
    }
    let unpriced = |flags: &[&str]| refused(flags).stderr;
    let without = unpriced(&["--max-cost-usd", "0.5"]);
    assert!(without.ends_with("hint: --max-cost-usd needs --prices FILE (litellm's model_prices_and_context_window.json) pricing every target\n"), "{without}");
    let with = unpriced(&["--max-cost-usd", "0.5", "--prices", &prices]);
    assert!(with.contains(&format!("hint: --prices `{prices}` has no price for it: add the model's entry")), "{with}");
}

#[test]
fn ask_help_documents_the_spend_flags() {
    let help = common::agentic(&["ask", "--help"], "");
    assert_eq!(help.code, 0, "{}", help.stderr);
    for flag in [
        "Spend limits:",
        "--max-input-tokens <N>",
        "--max-output-tokens <N>",
        "--max-total-tokens <N>",
        "--max-tool-calls <N>",
        "--max-cost-usd <USD>",
        "--prices <FILE>",
        "\"spent\"",
        "\"limit\"",
    ] {
        assert!(help.stdout.contains(flag), "{flag} not in:\n{}", help.stdout);
    }
}
