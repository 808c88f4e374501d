//! What can go wrong starting or talking to the Restate server or a service process.

use std::time::Duration;

/// A failure of the harness, with what it was doing and, where there is one, the tail of the
/// server's log or the service's stderr.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HarnessError {
    /// No server binary: neither `RESTATE_SERVER_BIN` nor a usable `restate-server` on `PATH`.
    #[error("{0}")]
    NoServer(String),
    /// A file or process operation failed.
    #[error("{doing}: {source}")]
    Io {
        /// What the harness was doing.
        doing: String,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A bounded wait ran out.
    #[error("{waiting_for}: not done after {after:?}{}", tail(.log_tail))]
    Timeout {
        /// What the harness waited for.
        waiting_for: String,
        /// How long it waited.
        after: Duration,
        /// The last lines of the server's log or the service's stderr (may be empty).
        log_tail: String,
    },
    /// A process the harness started exited on its own.
    #[error("{what} exited ({status}){}", tail(.log_tail))]
    Exited {
        /// Which process.
        what: String,
        /// Its exit status.
        status: std::process::ExitStatus,
        /// The last lines of its log or stderr.
        log_tail: String,
    },
    /// A request could not be sent or its answer read.
    #[error("{request}: {source}")]
    Http {
        /// The request (method and URL).
        request: String,
        /// reqwest's error.
        source: reqwest::Error,
    },
    /// The server answered a request with a status the harness did not expect.
    #[error("{request}: HTTP {status}: {body}")]
    Status {
        /// The request (method and URL).
        request: String,
        /// The HTTP status.
        status: u16,
        /// The answer's body (at most a few KiB).
        body: String,
    },
    /// The server's answer is not what the harness expected (not JSON, a field missing).
    #[error("{request}: {problem}; the answer: {body}")]
    Answer {
        /// The request (method and URL).
        request: String,
        /// What is wrong with it.
        problem: String,
        /// The answer's body (at most a few KiB).
        body: String,
    },
    /// An argument the harness will not put into a request (an invocation id that is not one).
    #[error("{0}")]
    Argument(String),
}

fn tail(log_tail: &str) -> String {
    if log_tail.is_empty() { String::new() } else { format!("; the log's last lines:\n{log_tail}") }
}

/// At most `max` bytes of `body` (on a character boundary), for an error message.
pub(crate) fn clip(body: &str, max: usize) -> String {
    if body.len() <= max {
        return body.to_owned();
    }
    let mut end = max;
    while !body.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}... ({} bytes)", &body[..end], body.len())
}
