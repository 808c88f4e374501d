//! `agentic ask --trace FILE` and `--journal FILE` when the record cannot be written: `/dev/full`
//! takes the open and refuses every write (ENOSPC). The answer is still the answer, but the run's
//! record is lost: exit 1, the flag, the path and the cause on stderr.
#![cfg(target_os = "linux")]

use std::process::{Command, Output, Stdio};

use agentic_chaos::{ChaosServer, Scenario, Step};

/// Runs `agentic ask --base-url URL` with fast delays, then `rest`, off the async runtime (which
/// serves the chaos server meanwhile).
async fn ask(url: String, rest: &[&str]) -> Output {
    let mut args: Vec<String> =
        ["ask", "--base-url", &url, "--session-base-delay-ms", "2", "--exec-base-delay-ms", "2"]
            .iter()
            .chain(rest)
            .map(|arg| arg.to_string())
            .collect();
    args.push("say hi".to_owned());
    tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_agentic"))
            .args(&args)
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            .stdin(Stdio::null())
            .output()
            .expect("the agentic binary runs")
    })
    .await
    .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}

const ENOSPC: &str = "No space left on device (os error 28)";

/// The exec answers; its trace's two lines (agent_start, agent_finish) are lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_whose_trace_is_lost_exits_1_naming_the_path_and_the_cause() {
    let server = ChaosServer::start(Scenario::new().otherwise(Step::ok("hello"))).await.unwrap();
    for json in [false, true] {
        let rest = if json { &["--trace", "/dev/full", "--json"][..] } else { &["--trace", "/dev/full"] };
        let output = ask(server.openai_base_url(), rest).await;
        assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
        let stdout = text(&output.stdout);
        assert!(if json { stdout.contains("\"answer\":\"hello\"") } else { stdout == "hello\n" }, "{stdout}");
        assert_eq!(
            text(&output.stderr),
            format!(
                "error: --trace /dev/full: cannot write the trace to the file `/dev/full`: {ENOSPC} (2 lines lost)\n"
            )
        );
    }
}

/// A retry that the journal could not record: exit 1; an exec with nothing to record: exit 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_journal_record_that_is_lost_exits_1_and_none_to_write_exits_0() {
    let server =
        ChaosServer::start(Scenario::new().then(Step::http_error(503)).otherwise(Step::ok("hello"))).await.unwrap();
    let output = ask(server.openai_base_url(), &["--journal", "/dev/full"]).await;
    assert_eq!((output.status.code(), text(&output.stdout).as_str()), (Some(1), "hello\n"), "{}", text(&output.stderr));
    assert_eq!(
        text(&output.stderr),
        format!(
            "error: --journal /dev/full: cannot write to the failure journal `/dev/full`: {ENOSPC} (1 record lost)\n"
        )
    );
    // No retry and no failure: the journal had nothing to write, and lost nothing.
    let output = ask(server.openai_base_url(), &["--journal", "/dev/full"]).await;
    assert_eq!((output.status.code(), text(&output.stderr).as_str()), (Some(0), ""));
}

/// A failed exec (exit 1 already) with both records lost: each said, after the exec's error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_exec_with_both_records_lost_says_each() {
    let server = ChaosServer::start(Scenario::new().otherwise(Step::invalid_api_key())).await.unwrap();
    let output = ask(server.openai_base_url(), &["--trace", "/dev/full", "--journal", "/dev/full"]).await;
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert!(lines[0].starts_with("exec() failed permanently"), "{stderr}");
    assert_eq!(
        &lines[lines.len() - 2..],
        [
            format!("error: --trace /dev/full: cannot write the trace to the file `/dev/full`: {ENOSPC} (1 line lost)"),
            format!(
                "error: --journal /dev/full: cannot write to the failure journal `/dev/full`: {ENOSPC} (1 record lost)"
            ),
        ]
    );
}

/// A file that takes the writes: exit 0, nothing on stderr, the lines there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_written_whole_exits_0() {
    let server = ChaosServer::start(Scenario::new().otherwise(Step::ok("hello"))).await.unwrap();
    let path = std::env::temp_dir().join(format!("agentic-ask-records-{}.jsonl", std::process::id()));
    let output = ask(server.openai_base_url(), &["--trace", path.to_str().unwrap()]).await;
    let written = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_eq!((output.status.code(), text(&output.stderr).as_str()), (Some(0), ""));
    assert_eq!(written.lines().count(), 2, "{written}");
}
