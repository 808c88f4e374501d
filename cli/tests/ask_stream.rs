//! `agentic ask --stream` against the chaos server: the events as JSON lines, the answer alone on
//! a pipe, and on a terminal (a pseudo-terminal here) the answer as it arrives with a failed
//! call's text erased; the exit codes of `ask`.

use std::process::Output;

use agentic_chaos::{ChaosServer, Scenario, Step};
use serde_json::Value;

use crate::common::{Terminal, TerminalRun, agentic_command, on_terminal};

/// The answer that follows the dropped stream.
const ANSWER: &str = "hello from chaos";

/// The first call's text as far as it gets (three chunks, one per word): 23 columns, two rows of
/// a terminal 20 wide.
const CUT: &str = "Streaming answers wrap ";

/// A first call that shows [`CUT`] and drops, then [`ANSWER`].
fn dropped_then_answered() -> Scenario {
    Scenario::new().then(Step::drop_stream(3).text(format!("{CUT}around narrow terminals"))).otherwise(Step::ok(ANSWER))
}

/// `ask` against `url` with short exact waits (no jitter, so that two runs decide alike).
fn ask(url: &str, flags: &[&str]) -> Vec<String> {
    let base = ["ask", "--base-url", url, "--session-base-delay-ms", "2", "--exec-base-delay-ms", "2"];
    base.iter()
        .chain(["--jitter", "none"].iter())
        .chain(flags)
        .chain(["say hi"].iter())
        .map(|s| s.to_string())
        .collect()
}

async fn run(args: Vec<String>) -> Output {
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        agentic_command(&args).output().expect("agentic runs")
    })
    .await
    .unwrap()
}

async fn run_on_terminal(args: Vec<String>, which: Terminal) -> TerminalRun {
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        on_terminal(agentic_command(&args), which, 20)
    })
    .await
    .unwrap()
}

fn text(bytes: &[u8]) -> &str {
    std::str::from_utf8(bytes).unwrap()
}

fn json_lines(output: &Output) -> Vec<Value> {
    text(&output.stdout).lines().map(|line| serde_json::from_str(line).unwrap()).collect()
}

/// `value` without the fields that differ from run to run.
fn timeless(mut value: Value) -> Value {
    value.as_object_mut().unwrap().remove("elapsed_ms");
    value
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_lines_show_the_cut_call_its_rewind_and_the_answer_and_done_is_what_json_prints() {
    let server = ChaosServer::start(dropped_then_answered()).await.unwrap();
    let output = run(ask(&server.openai_base_url(), &["--stream", "--json"])).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let events = json_lines(&output);
    let names: Vec<&str> = events.iter().map(|event| event["event"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "text_delta",
            "text_delta",
            "text_delta",
            "decision",
            "rewind",
            "text_delta",
            "text_delta",
            "text_delta",
            "done"
        ]
    );
    let shown = |range: std::ops::Range<usize>| -> String {
        events[range].iter().map(|event| event["text"].as_str().unwrap()).collect()
    };
    assert_eq!((shown(0..3), shown(5..8)), (CUT.to_owned(), ANSWER.to_owned()));
    let (decision, rewind) = (&events[3], &events[4]);
    assert_eq!(
        (&decision["verdict"], &decision["reason"]),
        (&"retry".into(), &"transport failure (stream dropped) is transient".into())
    );
    assert_eq!(
        (&rewind["attempt"], &rewind["call"], &rewind["wait_ms"]),
        (&1.into(), &1.into(), &decision["delay_ms"])
    );
    assert_eq!(rewind["error"], decision["error"]);
    assert!(rewind["error"].as_str().unwrap().starts_with("StreamDroppedError"), "{rewind}");
    assert!(rewind.get("target").is_none(), "no fallbacks, no target: {rewind}");

    // The same scenario without --stream: `done` is what --json prints, with "event" first.
    let again = ChaosServer::start(dropped_then_answered()).await.unwrap();
    let plain = run(ask(&again.openai_base_url(), &["--json"])).await;
    assert_eq!(plain.status.code(), Some(0), "{}", text(&plain.stderr));
    let mut done = events[8].clone();
    assert_eq!(done.as_object_mut().unwrap().remove("event"), Some("done".into()));
    assert_eq!(timeless(done), timeless(json_lines(&plain).remove(0)));
    assert_eq!(events[8]["answer"], ANSWER);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_pipe_only_the_answer_is_printed() {
    let server = ChaosServer::start(dropped_then_answered()).await.unwrap();
    let output = run(ask(&server.openai_base_url(), &["--stream"])).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), format!("{ANSWER}\n"));
    assert_eq!(text(&output.stderr), "", "nothing to say when nothing was shown");
    assert_eq!(server.journal().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_terminal_the_cut_call_is_erased_and_the_answer_replaces_it() {
    let server = ChaosServer::start(dropped_then_answered()).await.unwrap();
    let run = run_on_terminal(ask(&server.openai_base_url(), &["--stream"]), Terminal::Stdout).await;
    assert_eq!(run.code, Some(0), "{}", text(&run.piped));
    // Two rows of 20 columns: back to the start of the first (carriage return, one row up), the
    // rest of the screen erased, then the answer and its newline (`\r\n` from the terminal).
    assert_eq!(text(&run.terminal), format!("{CUT}\r\x1b[1A\x1b[J{ANSWER}\r\n"));
    let stderr = text(&run.piped);
    assert!(
        stderr.starts_with("agentic: rewound: call 1 (attempt 1) failed after its text was shown (StreamDroppedError"),
        "{stderr:?}"
    );
    assert!(stderr.ends_with("); retrying in 0.0 s\n") && stderr.lines().count() == 1, "{stderr:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_one_terminal_for_both_the_rewind_line_sits_between_and_the_progress_line_is_cleared_first() {
    let server = ChaosServer::start(dropped_then_answered()).await.unwrap();
    let run = run_on_terminal(ask(&server.openai_base_url(), &["--stream"]), Terminal::Both).await;
    assert_eq!(run.code, Some(0));
    let screen = text(&run.terminal);
    let (rewound, after) = screen.split_once("agentic: rewound: ").expect("the rewind line");
    // The progress line, cleared before the first text; the text, erased before the line.
    assert_eq!(rewound, format!("\r\x1b[2Kwaiting for openai…\r\x1b[2K{CUT}\r\x1b[1A\x1b[J"));
    let (line, rest) = after.split_once("\r\n").unwrap();
    assert!(line.ends_with("; retrying in 0.0 s") && !line.contains('\x1b'), "{line:?}");
    // The answer, then the progress line's last clear (on the empty row below it).
    assert_eq!(rest, format!("{ANSWER}\r\n\r\x1b[2K"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_exec_exits_as_without_stream_and_its_text_is_erased() {
    // Every call shows two words and drops: 2 attempts of 2 calls.
    let failing = || Scenario::new().otherwise(Step::drop_stream(2).text("never finished here"));
    let limits = ["--max-retries", "2", "--session-retries", "1"];
    let server = ChaosServer::start(failing()).await.unwrap();
    let plain = run(ask(&server.openai_base_url(), &limits)).await;
    assert_eq!(plain.status.code(), Some(1));
    let error = text(&plain.stderr).lines().next().unwrap().to_owned();
    assert!(error.starts_with("exec() failed after 2 attempts (4 model calls)"), "{error}");

    let streamed: Vec<&str> = limits.iter().copied().chain(["--stream"]).collect();
    let server = ChaosServer::start(failing()).await.unwrap();
    let piped = run(ask(&server.openai_base_url(), &streamed)).await;
    assert_eq!((piped.status.code(), text(&piped.stdout)), (Some(1), ""));
    assert_eq!(text(&piped.stderr).lines().next(), Some(error.as_str()));

    let server = ChaosServer::start(failing()).await.unwrap();
    let on_screen = run_on_terminal(ask(&server.openai_base_url(), &streamed), Terminal::Stdout).await;
    assert_eq!(on_screen.code, Some(1));
    // Each call's text erased: three by a rewind, the last as the exec fails.
    assert_eq!(text(&on_screen.terminal), "never finished \r\x1b[J".repeat(4));
    let stderr = text(&on_screen.piped);
    assert_eq!(stderr.matches("agentic: rewound: ").count(), 3, "{stderr}");
    assert!(stderr.contains(&format!("\n{error}\n")), "{stderr}");

    let json: Vec<&str> = streamed.iter().copied().chain(["--json"]).collect();
    let server = ChaosServer::start(failing()).await.unwrap();
    let lines = run(ask(&server.openai_base_url(), &json)).await;
    assert_eq!(lines.status.code(), Some(1));
    let done = json_lines(&lines).pop().unwrap();
    assert_eq!((&done["event"], &done["error_kind"], &done["calls"]), (&"done".into(), &"exhausted".into(), &4.into()));
    assert_eq!(json_lines(&lines).iter().filter(|event| event["event"] == "rewind").count(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verbose_lines_wait_while_a_calls_text_is_on_the_screen() {
    let server = ChaosServer::start(dropped_then_answered()).await.unwrap();
    let run = run_on_terminal(ask(&server.openai_base_url(), &["--stream", "-v"]), Terminal::Both).await;
    assert_eq!(run.code, Some(0));
    let screen = text(&run.terminal);
    // The decision was made while the cut text was shown: it is written after the erase, then the
    // rewind line, then the answer, then the tokens spent.
    let (before, after) = screen.split_once("\r\x1b[1A\x1b[J").expect("the erase");
    assert_eq!(before, CUT);
    let lines: Vec<&str> = after.split("\r\n").collect();
    assert!(lines[0].contains("StreamDroppedError") && lines[0].contains("retry"), "{lines:?}");
    assert!(lines[1].starts_with("agentic: rewound: call 1 (attempt 1)"), "{lines:?}");
    assert_eq!(lines[2], ANSWER);
    assert!(lines[3].starts_with("tokens: ") && lines[4].is_empty() && lines.len() == 5, "{lines:?}");
}
