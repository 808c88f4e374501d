//! No input makes `agentic` panic or hold memory without bound: over-long lines (a `/dev/zero`
//! with a newline at last), stdin that never ends, a 64 KiB run id, hostile lines, more malformed
//! lines than are worth showing; and every bound is in the `--help` text.

use crate::common;

use std::io::Write as _;
use std::process::{Command, Stdio};

use agentic_runtime::observe::journal::FailureRecord;
use agentic_test_support::temp_file::TempFile;
use common::{Run, agentic};
use serde_json::{Value, json};

/// The one-line bound of every line reader: 1 MiB.
const MIB: usize = 1024 * 1024;

const TOO_LONG: &str = "longer than 1 MiB (the limit for one line); it was skipped";

/// What every line reader says when a line runs past 64 MiB without a line ending.
const ENDLESS: &str = "line 1 has no line ending within 64 MiB; stopped reading (this is not a file of lines: a device such as /dev/zero, or binary data?)";

/// How long a command reading endless input may run before the test kills it: a safety net so
/// that a regression fails instead of hanging the suite, never the assertion (a run takes well
/// under a second).
const SAFETY_NET: std::time::Duration = std::time::Duration::from_secs(120);

/// Where an endless input comes from.
#[derive(Clone, Copy)]
enum Endless {
    /// stdin is `/dev/zero`.
    DevZero,
    /// stdin is a pipe a thread fills with zeros until the command closes it.
    Pipe,
}

/// Runs `agentic args..` on endless stdin, killed after [`SAFETY_NET`] if it has not ended.
fn agentic_on_endless(args: &[&str], input: Endless) -> Run {
    let stdin = match input {
        Endless::DevZero => Stdio::from(std::fs::File::open("/dev/zero").expect("/dev/zero opens")),
        Endless::Pipe => Stdio::piped(),
    };
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentic"))
        .args(args)
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the agentic binary starts");
    if let Some(mut pipe) = child.stdin.take() {
        std::thread::spawn(move || {
            let zeros = vec![0u8; 64 * 1024];
            // Ends when the command closes its stdin (a broken pipe).
            while pipe.write_all(&zeros).is_ok() {}
        });
    }
    let pid = child.id();
    let (done, finished) = std::sync::mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        if finished.recv_timeout(SAFETY_NET).is_err() {
            let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
        }
    });
    let output = child.wait_with_output().expect("the agentic binary runs");
    let _ = done.send(());
    watchdog.join().expect("the watchdog does not panic");
    Run {
        code: output.status.code().unwrap_or_else(|| panic!("{args:?} did not end within {SAFETY_NET:?}")),
        stdout: String::from_utf8(output.stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(output.stderr).expect("stderr is UTF-8"),
    }
}

#[cfg(target_os = "linux")]
#[test]
fn journal_and_grade_of_dev_zero_stop_with_a_usage_error() {
    let journal = agentic(&["journal", "/dev/zero"], "");
    assert_no_panic(&journal);
    assert_eq!((journal.code, journal.stdout.as_str()), (2, ""));
    assert_eq!(journal.stderr, format!("error: cannot read /dev/zero: {ENDLESS}\n"));
    let grade = agentic(&["grade", "/dev/zero"], "");
    assert_no_panic(&grade);
    assert_eq!((grade.code, grade.stdout.as_str()), (2, ""));
    assert_eq!(grade.stderr, format!("error: cannot read `/dev/zero`: {ENDLESS}\n"));
}

#[cfg(target_os = "linux")]
#[test]
fn readers_of_endless_stdin_stop_with_a_usage_error() {
    for input in [Endless::DevZero, Endless::Pipe] {
        for args in [&["classify", "--json"][..], &["classify"][..]] {
            let run = agentic_on_endless(args, input);
            assert_no_panic(&run);
            assert_eq!((run.code, run.stdout.as_str()), (2, ""), "{args:?}");
            assert_eq!(run.stderr, format!("error: cannot read stdin: {ENDLESS}\n"), "{args:?}");
        }
        let grade = agentic_on_endless(&["grade", "-"], input);
        assert_eq!(grade.code, 2);
        assert_eq!(grade.stderr, format!("error: cannot read `-`: {ENDLESS}\n"));
    }
}

#[cfg(target_os = "linux")]
#[test]
fn ask_refuses_a_schema_that_never_ends() {
    let ask = |schema: &str, input| {
        agentic_on_endless(
            &["ask", "--base-url", "http://127.0.0.1:9/v1", "--api-key", "k", "--schema", schema, "q"],
            input,
        )
    };
    let zero = ask("/dev/zero", Endless::DevZero);
    assert_no_panic(&zero);
    assert_eq!(zero.code, 2, "{zero:?}");
    assert_eq!(zero.stderr, "error: the schema /dev/zero is over 1 MiB; a JSON Schema is a few KiB\n");
    let pipe = ask("/dev/stdin", Endless::Pipe);
    assert_eq!(pipe.code, 2, "{pipe:?}");
    assert_eq!(pipe.stderr, "error: the schema /dev/stdin is over 1 MiB; a JSON Schema is a few KiB\n");
}

/// 8 MiB of zeros with no newline (what `/dev/zero` gives, cut short), then a newline.
fn zeros_then_newline() -> Vec<u8> {
    let mut bytes = vec![0u8; 8 * MIB];
    bytes.push(b'\n');
    bytes
}

/// The same, followed by `line`.
fn zeros_then(line: &str) -> Vec<u8> {
    let mut bytes = zeros_then_newline();
    bytes.extend_from_slice(line.as_bytes());
    bytes.push(b'\n');
    bytes
}

/// A file holding `bytes` as they are.
fn file_with(name: &str, bytes: &[u8]) -> TempFile {
    let file = TempFile::new(name);
    file.append_raw(bytes);
    file
}

fn assert_no_panic(run: &Run) {
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    assert_ne!(run.code, 101, "{run:?}");
}

fn record_line(name: &str) -> String {
    serde_json::to_string(&FailureRecord::new(name, "exhausted", "ValueError: bad").with_time_ms(1_000)).unwrap()
}

fn trace_line(run: &str) -> String {
    json!({"event": "agent_finish", "run_id": run, "final_text": "ok", "iterations": 1}).to_string()
}

#[test]
fn classify_json_reports_an_over_long_line_and_classifies_the_next() {
    let run = agentic(&["classify", "--json"], zeros_then(r#"{"error_message": "429 Too Many Requests"}"#));
    assert_no_panic(&run);
    assert_eq!(run.code, 1, "{run:?}");
    let lines = run.json_lines();
    assert_eq!(lines.len(), 2, "{}", run.stdout);
    assert_eq!(lines[0], json!({"error": format!("line 1: {TOO_LONG}")}));
    assert_eq!(lines[1]["session"]["retryable"], true);
    assert_eq!(lines[1]["exec"]["action"], "retry");
}

#[test]
fn plain_classify_reports_an_over_long_line_on_stderr_and_classifies_the_next() {
    let run = agentic(&["classify"], zeros_then("429 Too Many Requests"));
    assert_no_panic(&run);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(run.stderr, format!("error: line 1: {TOO_LONG}\n"));
    assert!(run.stdout.starts_with("\"429 Too Many Requests\"\n  session: retryable"), "{}", run.stdout);
}

#[test]
fn a_line_exactly_at_the_bound_is_read() {
    let message = "x".repeat(MIB - r#"{"error_message": ""}"#.len());
    let line = format!("{{\"error_message\": \"{message}\"}}\r\n");
    assert_eq!(line.len(), MIB + 2);
    let run = agentic(&["classify", "--json"], &line);
    assert_eq!(run.code, 0, "{}", &run.stdout[..run.stdout.len().min(200)]);
    assert_eq!(run.json()["exec"]["action"], "retry");
    let over = agentic(&["classify", "--json"], format!("{{\"error_message\": \"{message}x\"}}\n"));
    assert_eq!((over.code, over.json()), (1, json!({"error": format!("line 1: {TOO_LONG}")})));
}

#[test]
fn journal_reports_an_over_long_line_and_counts_the_next() {
    let file = file_with("journal-zeros", &zeros_then(&record_line("summarize")));
    let run = agentic(&["journal", file.arg()], "");
    assert_no_panic(&run);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stderr, format!("{}:1: {TOO_LONG}\n", file.arg()));
    assert_eq!(
        run.stdout,
        format!(
            "{}: 1 record in 1 group in the whole journal\n\
             exec summarize: ValueError x1 (exhausted, last 1970-01-01 00:00 UTC)\n",
            file.arg()
        )
    );
}

#[test]
fn journal_of_zeros_without_any_newline_is_one_over_long_line() {
    let file = file_with("journal-no-newline", &vec![0u8; 8 * MIB]);
    let run = agentic(&["journal", "--json", file.arg()], "");
    assert_no_panic(&run);
    assert_eq!((run.code, run.stdout.as_str()), (0, ""));
    assert_eq!(run.stderr, format!("{}:1: {TOO_LONG}\n", file.arg()));
}

#[test]
fn grade_reports_an_over_long_line_and_grades_the_next_from_a_file_and_from_stdin() {
    let trace = zeros_then(&trace_line("after-zeros"));
    let file = file_with("grade-zeros", &trace);
    for (arg, name) in [(file.arg(), file.arg()), ("-", "<stdin>")] {
        let run = agentic(&["grade", "--json", arg], if arg == "-" { &trace[..] } else { &b""[..] });
        assert_no_panic(&run);
        assert_eq!(run.code, 1, "{run:?}");
        assert_eq!(run.stderr, format!("warning: {name}:1: {TOO_LONG}\n"));
        let lines = run.json_lines();
        assert_eq!((lines[0]["run_id"].as_str(), lines[0]["category"].as_str()), (Some("after-zeros"), Some("clean")));
        assert_eq!(lines[1]["totals"]["malformed_lines"], 1);
    }
}

#[test]
fn grade_shortens_a_64_kib_run_id_in_the_table_and_keeps_it_whole_in_json() {
    let long_id = "r".repeat(65_536);
    let long_tool = "t".repeat(1_000);
    let text = [
        json!({"event": "agent_start", "run_id": long_id, "function": "f".repeat(70)}).to_string(),
        json!({"event": "tool_call", "run_id": long_id, "tool": long_tool, "call_id": "c"}).to_string(),
        json!({"event": "tool_result", "run_id": long_id, "call_id": "c", "is_error": true}).to_string(),
        trace_line(&long_id),
        trace_line("short"),
        trace_line("ünïcödé"),
    ]
    .join("\n");
    let file = TempFile::with_contents("grade-long-id", &text);
    let run = agentic(&["grade", file.arg()], "");
    assert_no_panic(&run);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let (r64, f64, t64) = ("r".repeat(64), "f".repeat(64), "t".repeat(64));
    let pad = " ".repeat(60);
    assert_eq!(
        run.stdout,
        format!(
            "{r64}…  tool_error_unrecovered  {f64}…  (1 tool call, 1 error, 1 iteration; unrecovered: {t64}…)\n\
             short{pad}  clean                   -  (0 tool calls, 0 errors, 1 iteration)\n\
             ünïcödé{}  clean                   -  (0 tool calls, 0 errors, 1 iteration)\n\
             total: 3 runs: 2 clean, 0 tool_error_recovered, 1 tool_error_unrecovered, 0 incomplete, 0 unreadable\n",
            " ".repeat(58)
        )
    );
    let json = agentic(&["grade", "--json", file.arg()], "");
    assert_eq!(json.code, 0);
    let lines = json.json_lines();
    assert_eq!(lines[0]["run_id"].as_str(), Some(long_id.as_str()));
    assert_eq!(lines[0]["unrecovered_tools"], json!([long_tool]));
}

#[test]
fn journal_shortens_long_names_in_the_table_only() {
    let name = "n".repeat(10_000);
    let file = file_with("journal-long-name", format!("{}\n", record_line(&name)).as_bytes());
    let run = agentic(&["journal", file.arg()], "");
    assert_no_panic(&run);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let row = run.stdout.lines().nth(1).unwrap();
    assert_eq!(row, format!("exec {}…: ValueError x1 (exhausted, last 1970-01-01 00:00 UTC)", "n".repeat(64)));
    let json = agentic(&["journal", "--json", file.arg()], "");
    assert_eq!(json.json()["name"].as_str(), Some(name.as_str()));
}

#[test]
fn simulate_refuses_stdin_over_1_mib_with_a_usage_error() {
    let mut input = b"{\"outcomes\": [\"ok\"]}".to_vec();
    input.resize(MIB + 1, b' ');
    let run = agentic(&["simulate", "--json"], &input);
    assert_no_panic(&run);
    assert_eq!(run.code, 2, "{run:?}");
    assert_eq!(run.stdout, "");
    assert_eq!(run.stderr, "error: stdin is longer than 1 MiB, the most a simulation may be; give fewer outcomes\n");

    let endless = agentic(&["simulate", "--json"], vec![0u8; 8 * MIB]);
    assert_eq!((endless.code, endless.stderr.as_str()), (2, run.stderr.as_str()));

    input.truncate(MIB);
    let at_the_bound = agentic(&["simulate", "--json"], &input);
    assert_eq!(at_the_bound.code, 0, "{at_the_bound:?}");
    assert_eq!(at_the_bound.json()["outcome"], "ok");
}

/// Lines made to break a parser: a number of 100 000 digits, a number out of every range,
/// 100 000 nested `[`, 50 000 nested objects, bytes that are not UTF-8, NUL bytes, a string never
/// closed, a lone surrogate.
fn hostile_lines() -> Vec<u8> {
    let lines: Vec<Vec<u8>> = vec![
        [b"1".as_slice(), &vec![b'0'; 100_000]].concat(),
        br#"{"error_message": "x", "status": 1e999999}"#.to_vec(),
        vec![b'['; 100_000],
        "{\"a\":".repeat(50_000).into_bytes(),
        b"\xff\xfe\x80".to_vec(),
        b"\0\0\0".to_vec(),
        [b"\"".as_slice(), &vec![b'a'; 500_000]].concat(),
        br#"{"error_message": "\ud800"}"#.to_vec(),
    ];
    let mut bytes = lines.join(&b'\n');
    bytes.push(b'\n');
    bytes
}

#[test]
fn hostile_lines_are_errors_for_classify_json() {
    let run = agentic(&["classify", "--json"], hostile_lines());
    assert_no_panic(&run);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let errors: Vec<String> = run
        .json_lines()
        .iter()
        .map(|line| line["error"].as_str().expect("every line is an error").to_owned())
        .collect();
    assert_eq!(
        errors,
        [
            "line 1: not valid JSON: number out of range at column 100001",
            "line 2: not valid JSON: number out of range at column 41",
            "line 3: not valid JSON: recursion limit exceeded at column 128",
            "line 4: not valid JSON: recursion limit exceeded at column 636",
            "line 5: not valid UTF-8",
            "line 6: not valid JSON: expected value at column 1",
            "line 7: not valid JSON: EOF while parsing a string at column 500001",
            "line 8: not valid JSON: unexpected end of hex escape at column 26",
        ]
    );
}

#[test]
fn hostile_lines_are_corrupt_lines_for_journal() {
    let file = file_with("journal-hostile", &hostile_lines());
    let run = agentic(&["journal", file.arg()], "");
    assert_no_panic(&run);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let reports: Vec<&str> = run.stderr.lines().collect();
    let path = file.arg();
    assert_eq!(
        reports,
        [
            format!("{path}:1: number out of range at column 100001"),
            format!("{path}:2: number out of range at column 41"),
            format!("{path}:3: invalid type: sequence, expected u64 at column 1"),
            format!("{path}:4: EOF while parsing a value at column 250000"),
            format!("{path}:5: not valid UTF-8 (invalid byte at column 1)"),
            format!("{path}:6: expected value at column 1"),
            format!("{path}:7: EOF while parsing a string at column 500001"),
            format!("{path}:8: missing field `time_ms` at column 27"),
        ]
    );
    assert_eq!(run.stdout, format!("{path}: no records in the whole journal\n"));
}

#[test]
fn hostile_lines_are_malformed_lines_for_grade() {
    let file = file_with("grade-hostile", &hostile_lines());
    let run = agentic(&["grade", file.arg()], "");
    assert_no_panic(&run);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let path = file.arg();
    let reports: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(
        reports,
        [
            format!("warning: {path}:1: not JSON: number out of range at line 1 column 100001"),
            format!("warning: {path}:2: not JSON: number out of range at line 1 column 41"),
            format!("warning: {path}:3: not JSON: recursion limit exceeded at line 1 column 128"),
            format!("warning: {path}:4: not JSON: recursion limit exceeded at line 1 column 636"),
            format!("warning: {path}:5: not UTF-8"),
            format!("warning: {path}:6: not JSON: expected value at line 1 column 1"),
            format!("warning: {path}:7: not JSON: EOF while parsing a string at line 1 column 500001"),
            format!("warning: {path}:8: not JSON: unexpected end of hex escape at line 1 column 26"),
        ]
    );
    assert!(run.stdout.ends_with("; 8 malformed lines skipped\n"), "{}", run.stdout);
}

#[test]
fn grade_and_journal_show_the_first_100_bad_lines_and_count_the_rest() {
    let file = TempFile::with_contents("many-bad", &"nope\n".repeat(250));
    let grade = agentic(&["grade", file.arg()], "");
    assert_eq!(grade.code, 1);
    let warnings: Vec<&str> = grade.stderr.lines().collect();
    assert_eq!(warnings.len(), 101, "{}", grade.stderr);
    assert_eq!(warnings[99], format!("warning: {}:100: not JSON: expected ident at line 1 column 2", file.arg()));
    assert_eq!(warnings[100], "warning: 150 more malformed lines not shown");
    assert!(grade.stdout.ends_with("; 250 malformed lines skipped\n"), "{}", grade.stdout);

    let journal = agentic(&["journal", file.arg()], "");
    assert_eq!(journal.code, 0);
    let reports: Vec<&str> = journal.stderr.lines().collect();
    assert_eq!(reports.len(), 101, "{}", journal.stderr);
    assert_eq!(reports[99], format!("{}:100: expected ident at column 2", file.arg()));
    assert_eq!(reports[100], format!("{}: 150 more corrupt lines not shown", file.arg()));
}

#[test]
fn the_long_help_of_each_reader_states_its_bounds() {
    for (command, bounds) in [
        ("classify", &["a line of stdin may be at most 1 MiB", "longer than 1 MiB (the limit for one line)"][..]),
        ("grade", &["a line may be at most 1 MiB", "may \\\ntake at most 256 MiB", "The first 100"][..]),
        ("journal", &["a line may be at most 1 MiB", "at most 64 MiB", "The first 100 corrupt lines"][..]),
        ("simulate", &["at most 1 MiB"][..]),
    ] {
        let run = agentic(&[command, "--help"], "");
        assert_eq!(run.code, 0);
        let help = run.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
        for bound in bounds {
            let bound = bound.replace("\\\n", "").split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(help.contains(&bound), "`agentic {command} --help` lacks {bound:?}:\n{}", run.stdout);
        }
    }
}

/// Reading a line of 128 MiB with no newline within 64 MiB of address space: only a reader that
/// drops what passes the bound, instead of buffering the line, can do it (a reader that buffers
/// dies with "memory allocation failed"); past 64 MiB without a line ending it stops reading.
#[cfg(target_os = "linux")]
#[test]
fn an_endless_line_is_read_in_bounded_memory() {
    let zeros = vec![0u8; 128 * MIB];
    for args in [&["classify", "--json"][..], &["classify"][..], &["grade", "-"][..]] {
        let mut child = Command::new("sh")
            .arg("-c")
            .arg("ulimit -v 65536 && exec \"$0\" \"$@\"")
            .arg(env!("CARGO_BIN_EXE_agentic"))
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("sh starts");
        let mut stdin = child.stdin.take().expect("stdin is piped");
        let input = zeros.clone();
        let writer = std::thread::spawn(move || {
            let _ = stdin.write_all(&input);
        });
        let output = child.wait_with_output().expect("agentic runs");
        writer.join().expect("the stdin writer does not panic");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(ENDLESS), "{args:?}: {stderr}");
        assert!(!stderr.contains("memory allocation") && !stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

#[test]
fn a_64_kib_id_panics_no_command() {
    // A run id of 65 536 characters once made the table's width argument overflow; every
    // other command that formats input is run on the same id here.
    let id = "i".repeat(65_536);
    let classify = agentic(&["classify", "--json"], format!("{}\n", json!({"error_message": id})));
    assert_no_panic(&classify);
    assert_eq!(classify.code, 0);
    let plain = agentic(&["classify", &id], "");
    assert_no_panic(&plain);
    assert_eq!(plain.code, 0);
    let unknown = agentic(&["classify", "--json"], format!("{}\n", json!({"error_message": "x", "stop_reason": id})));
    assert_no_panic(&unknown);
    assert!(unknown.json()["error"].as_str().unwrap().starts_with("line 1: unknown stop_reason \"iii"));
    let journal = file_with(
        "journal-long-kind",
        format!("{}\n", json!({"time_ms": 1, "name": "f", "kind": id, "last_error": id})).as_bytes(),
    );
    let run = agentic(&["journal", journal.arg()], "");
    assert_no_panic(&run);
    assert_eq!(run.code, 0);
    let _: Value = serde_json::from_str(&agentic(&["journal", "--json", journal.arg()], "").stdout).unwrap();
}

#[test]
fn grade_escapes_control_sequences_in_the_table_and_keeps_them_in_json() {
    let id = "run\x1b]0;pwned\x07\x1b[2K\r";
    let file = TempFile::with_contents("grade-escapes", &trace_line(id));
    let run = agentic(&["grade", file.arg()], "");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!run.stdout.chars().any(|c| c.is_control() && c != '\n'), "{:?}", run.stdout);
    assert!(run.stdout.starts_with("run\\u{1b}]0;pwned\\u{7}\\u{1b}[2K\\r  clean"), "{}", run.stdout);
    let json = agentic(&["grade", "--json", file.arg()], "");
    assert_eq!(json.json_lines()[0]["run_id"], id);
}
