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

/// The provider variables `agentic ask` reads, which a test must not inherit.
const PROVIDER_VARIABLES: [&str; 7] = [
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GEMINI_BASE_URL",
];

/// The built `agentic` with `args`, none of the provider variables of the environment, and no
/// stdin.
#[allow(dead_code)]
pub fn agentic_command(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agentic"));
    for variable in PROVIDER_VARIABLES {
        command.env_remove(variable);
    }
    command.args(args).stdin(Stdio::null());
    command
}

/// Which of a command's outputs go to the pseudo-terminal.
#[allow(dead_code)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Terminal {
    /// Stdout; stderr is piped.
    Stdout,
    /// Stderr; stdout is piped.
    Stderr,
    /// Both, as in a shell.
    Both,
}

/// What a run on a pseudo-terminal gave.
#[allow(dead_code)]
#[derive(Debug)]
pub struct TerminalRun {
    /// The exit code.
    pub code: Option<i32>,
    /// Every byte the terminal received (the line discipline turns `\n` into `\r\n`).
    pub terminal: Vec<u8>,
    /// What the output that was not on the terminal received (empty with [`Terminal::Both`]).
    pub piped: Vec<u8>,
}

/// Runs `command` with `which` of its outputs on a pseudo-terminal `columns` wide.
#[allow(dead_code)]
pub fn on_terminal(mut command: Command, which: Terminal, columns: u16) -> TerminalRun {
    use std::io::Read as _;
    use std::os::fd::{FromRawFd as _, OwnedFd};

    let (mut master, mut slave) = (0, 0);
    let size = libc::winsize { ws_row: 24, ws_col: columns, ws_xpixel: 0, ws_ypixel: 0 };
    // SAFETY: openpty writes two new descriptors into the ints; the null name and termios are
    // allowed, and the window size is read only.
    let opened = unsafe { libc::openpty(&mut master, &mut slave, std::ptr::null_mut(), std::ptr::null(), &size) };
    assert_eq!(opened, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors were just opened and are owned here alone.
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    let terminal = || Stdio::from(slave.try_clone().expect("the terminal's descriptor duplicates"));
    match which {
        Terminal::Stdout => command.stdout(terminal()).stderr(Stdio::piped()),
        Terminal::Stderr => command.stdout(Stdio::piped()).stderr(terminal()),
        Terminal::Both => command.stdout(terminal()).stderr(terminal()),
    };
    let mut child = command.spawn().expect("agentic runs");
    // The child holds the only other ends now: reading ends (EIO) when it exits.
    drop((command, slave));
    let reader = std::thread::spawn(move || {
        let mut terminal = std::fs::File::from(master);
        let mut seen = Vec::new();
        let mut buffer = [0; 4096];
        while let Ok(read) = terminal.read(&mut buffer) {
            if read == 0 {
                break;
            }
            seen.extend_from_slice(&buffer[..read]);
        }
        seen
    });
    let mut piped = Vec::new();
    if let Some(mut out) = child.stdout.take() {
        out.read_to_end(&mut piped).expect("stdout is read");
    }
    if let Some(mut err) = child.stderr.take() {
        err.read_to_end(&mut piped).expect("stderr is read");
    }
    let status = child.wait().expect("agentic ends");
    TerminalRun { code: status.code(), terminal: reader.join().expect("the reader ends"), piped }
}
