//! The server's child process: started with piped stdio, the last lines of its stderr kept, reaped
//! by a task of its own that knows its exit status, and killed when the toolbox is dropped.
//!
//! rmcp's own child transport kills the child on drop too, but keeps the process to itself: the
//! exit status and stderr that tell a person why a server died are ours only if we hold the child.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::AsyncReadExt as _;
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::sync::{oneshot, watch};

use crate::error::McpError;

/// How long a server's process has to exit by itself once its stdin is closed (the MCP way to ask
/// a stdio server to stop) before it is killed: 2 s. Enough for a server to flush and exit; short
/// enough that dropping a toolbox does not leave a stuck process around for long.
pub const MCP_CHILD_EXIT_GRACE: Duration = Duration::from_secs(2);

/// How long, once a server's connection closed, the toolbox waits for its process's exit status
/// and the rest of its stderr before it words the error without them: 1 s. A process that closed
/// its stdout is exiting; one that lingers is not worth a longer wait.
pub const MCP_EXIT_REPORT_WAIT: Duration = Duration::from_secs(1);

/// How many of the last lines of a server's stderr are kept for its errors: 20. Enough for a
/// panic message or a stack trace's top; a server that logs a lot keeps only its last words.
pub const MCP_STDERR_TAIL_LINES: usize = 20;

/// The longest stderr line kept, in bytes (longer ones are cut): 512.
pub const MCP_STDERR_LINE_BYTES: usize = 512;

/// What starts a server's process.
#[derive(Debug, Clone)]
pub(crate) struct Launch {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    pub envs: Vec<(OsString, OsString)>,
    pub current_dir: Option<PathBuf>,
}

/// A started process: its pipes to talk over, the view of it, and the guard that stops it.
pub(crate) struct Started {
    pub stdout: ChildStdout,
    pub stdin: ChildStdin,
    pub process: ChildProcess,
    pub stop: StopOnDrop,
}

/// Asks the reaper to stop the process when dropped (held by the toolbox, not by [`ChildProcess`]
/// clones, so a user's handle does not keep the server alive).
pub(crate) struct StopOnDrop {
    _stop: oneshot::Sender<()>,
}

/// An MCP server's process, as seen from its toolbox: its id, its exit status once it has been
/// reaped, and the last lines of its stderr. Cloning shares the view; it does not keep the process
/// alive (the process stops when the last [`McpToolbox`](crate::toolbox::McpToolbox) clone is dropped).
#[derive(Debug, Clone)]
pub struct ChildProcess {
    id: u32,
    exit: watch::Receiver<Option<Option<ExitStatus>>>,
    stderr: Arc<Mutex<StderrTail>>,
    stderr_done: watch::Receiver<bool>,
}

impl ChildProcess {
    /// The process id.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The exit status, once the process has exited and been reaped.
    pub fn exit_status(&self) -> Option<ExitStatus> {
        self.exit.borrow().flatten()
    }

    /// Waits until the process has exited and been reaped (its id is free again), and gives its
    /// exit status; `None` if it could not be waited for.
    pub async fn exited(&self) -> Option<ExitStatus> {
        let mut exit = self.exit.clone();
        let reaped = exit.wait_for(Option::is_some).await.map(|status| status.flatten());
        reaped.ok().flatten()
    }

    /// The last lines the process wrote to stderr (at most [`MCP_STDERR_TAIL_LINES`], each cut at
    /// [`MCP_STDERR_LINE_BYTES`]).
    pub fn stderr_tail(&self) -> Vec<String> {
        self.stderr.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).lines()
    }

    /// Waits at most [`MCP_EXIT_REPORT_WAIT`] for the exit status and the end of stderr, for an
    /// error that reports them.
    pub(crate) async fn settle(&self) -> (Option<ExitStatus>, Vec<String>) {
        let mut stderr_done = self.stderr_done.clone();
        let both = async {
            let _ = stderr_done.wait_for(|done| *done).await;
            self.exited().await
        };
        let status = tokio::time::timeout(MCP_EXIT_REPORT_WAIT, both).await.ok().flatten();
        (status.or_else(|| self.exit_status()), self.stderr_tail())
    }
}

/// Starts `launch` with piped stdin, stdout and stderr, and the tasks that read its stderr and
/// reap it.
pub(crate) fn start(server: &str, launch: &Launch) -> Result<Started, McpError> {
    let mut command = Command::new(&launch.program);
    command
        .args(&launch.args)
        .envs(launch.envs.iter().map(|(key, value)| (key, value)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // The safety net if the reaper task is dropped with its runtime: the child still dies.
        .kill_on_drop(true);
    if let Some(dir) = &launch.current_dir {
        command.current_dir(dir);
    }
    let spawn_error = |source| McpError::Spawn { server: server.to_owned(), program: launch.program.clone(), source };
    let mut child = command.spawn().map_err(spawn_error)?;
    let (Some(stdin), Some(stdout), Some(stderr)) = (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        unreachable!("the three pipes were asked for")
    };
    let id = child.id().unwrap_or_default();
    let tail = Arc::new(Mutex::new(StderrTail::default()));
    let (stderr_done_tx, stderr_done) = watch::channel(false);
    tokio::spawn(read_stderr(stderr, tail.clone(), stderr_done_tx, server.to_owned()));
    let (exit_tx, exit) = watch::channel(None);
    let (stop_tx, stop_rx) = oneshot::channel();
    tokio::spawn(reap(child, stop_rx, exit_tx));
    let process = ChildProcess { id, exit, stderr: tail, stderr_done };
    Ok(Started { stdout, stdin, process, stop: StopOnDrop { _stop: stop_tx } })
}

/// Waits for the child to exit, or, once told to stop (or its toolbox is gone), gives it
/// [`MCP_CHILD_EXIT_GRACE`] to exit after its stdin closed and then kills it; either way it is
/// reaped and its status published.
async fn reap(mut child: Child, stop: oneshot::Receiver<()>, exit: watch::Sender<Option<Option<ExitStatus>>>) {
    let status = tokio::select! {
        status = child.wait() => status,
        _ = stop => match tokio::time::timeout(MCP_CHILD_EXIT_GRACE, child.wait()).await {
            Ok(status) => status,
            Err(_still_running) => {
                let _ = child.start_kill();
                child.wait().await
            }
        },
    };
    exit.send_replace(Some(status.ok()));
}

/// Reads the child's stderr to its end, keeping its last lines, so the child never blocks on a
/// full pipe.
async fn read_stderr(mut stderr: ChildStderr, tail: Arc<Mutex<StderrTail>>, done: watch::Sender<bool>, server: String) {
    let mut buffer = [0_u8; 8 * 1024];
    loop {
        match stderr.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(read) => {
                let finished = tail.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push(&buffer[..read]);
                for line in finished {
                    tracing::debug!(target: "agentic_mcp", server = %server, "stderr: {line}");
                }
            }
        }
    }
    tail.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).finish();
    done.send_replace(true);
}

/// The last lines of a stream, each bounded, whatever the stream sends (a line with no end too).
#[derive(Debug, Default)]
struct StderrTail {
    lines: VecDeque<String>,
    current: Vec<u8>,
    cut: bool,
}

impl StderrTail {
    /// Takes in `bytes`; returns the lines they ended.
    fn push(&mut self, bytes: &[u8]) -> Vec<String> {
        let mut finished = Vec::new();
        for piece in bytes.split_inclusive(|byte| *byte == b'\n') {
            let (text, ends) = match piece.strip_suffix(b"\n") {
                Some(text) => (text, true),
                None => (piece, false),
            };
            let room = MCP_STDERR_LINE_BYTES.saturating_sub(self.current.len());
            self.cut |= text.len() > room;
            self.current.extend_from_slice(&text[..text.len().min(room)]);
            if ends {
                finished.push(self.end_line());
            }
        }
        finished
    }

    fn end_line(&mut self) -> String {
        let mut line = String::from_utf8_lossy(&self.current).trim_end_matches('\r').to_owned();
        if std::mem::take(&mut self.cut) {
            line.push('…');
        }
        self.current.clear();
        if self.lines.len() == MCP_STDERR_TAIL_LINES {
            self.lines.pop_front();
        }
        self.lines.push_back(line.clone());
        line
    }

    /// The stream ended: a last line without its newline counts too.
    fn finish(&mut self) {
        if !self.current.is_empty() || self.cut {
            self.end_line();
        }
    }

    fn lines(&self) -> Vec<String> {
        self.lines.iter().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_keeps_the_last_lines_each_bounded() {
        let mut tail = StderrTail::default();
        for number in 0..30 {
            tail.push(format!("line {number}\n").as_bytes());
        }
        let lines = tail.lines();
        assert_eq!(lines.len(), MCP_STDERR_TAIL_LINES);
        assert_eq!(lines.first().map(String::as_str), Some("line 10"));
        assert_eq!(lines.last().map(String::as_str), Some("line 29"));

        tail.push(&vec![b'x'; 10 * MCP_STDERR_LINE_BYTES]);
        tail.push(b"yyy");
        tail.finish();
        let last = tail.lines().pop().unwrap();
        assert_eq!(last, format!("{}…", "x".repeat(MCP_STDERR_LINE_BYTES)));
    }

    #[test]
    fn a_line_split_across_reads_is_one_line() {
        let mut tail = StderrTail::default();
        assert!(tail.push(b"pan").is_empty());
        assert_eq!(tail.push(b"icked\r\nat main.rs\n"), ["panicked", "at main.rs"]);
    }
}
