//! Runs the built `agentic` binary with arguments and stdin, and parses its JSON lines.

use std::io::Write as _;
use std::process::{Command, Stdio};

use serde_json::Value;

/// What one run of `agentic` gave.
#[derive(Debug)]
pub struct Run {
    /// The exit code.
    pub code: i32,
    /// Everything written to stdout.
    pub stdout: String,
    /// Everything written to stderr.
    pub stderr: String,
}

impl Run {
    /// Each stdout line parsed as JSON.
    #[allow(dead_code)]
    pub fn json_lines(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .map(|line| serde_json::from_str(line).unwrap_or_else(|error| panic!("{line:?} is not JSON: {error}")))
            .collect()
    }

    /// The single stdout line, parsed as JSON.
    #[allow(dead_code)]
    pub fn json(&self) -> Value {
        let lines = self.json_lines();
        assert_eq!(lines.len(), 1, "expected one line, got {:?} (stderr {:?})", self.stdout, self.stderr);
        lines.into_iter().next().unwrap()
    }
}

/// Runs `agentic args..` with `stdin`.
pub fn agentic(args: &[&str], stdin: impl AsRef<[u8]>) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentic"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the agentic binary starts");
    let mut input = child.stdin.take().expect("stdin is piped");
    let stdin = stdin.as_ref().to_vec();
    // Written from a thread so that a large output cannot block a large input; a command that
    // does not read stdin closes it, which is not an error here.
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(&stdin);
    });
    let output = child.wait_with_output().expect("the agentic binary runs");
    writer.join().expect("the stdin writer does not panic");
    Run {
        code: output.status.code().expect("the binary exits normally"),
        stdout: String::from_utf8(output.stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(output.stderr).expect("stderr is UTF-8"),
    }
}

/// `ask` against a refused port on loopback (9, discard: nothing listens), with 2 × 2 calls and
/// 1 ms waits: every call fails, fast.
#[allow(dead_code)]
pub const REFUSED_FAST: [&str; 12] = [
    "ask",
    "--base-url",
    "http://127.0.0.1:9/v1",
    "--max-retries",
    "2",
    "--session-retries",
    "1",
    "--session-base-delay-ms",
    "1",
    "--exec-base-delay-ms",
    "1",
    "hi",
];
