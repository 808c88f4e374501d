//! `agentic ask`'s progress line: on a terminal, one line on stderr that says what the exec is
//! waiting for and why ("ServiceUnavailableError: 503 ...; retrying in 2.1 s (session layer, retry
//! 2 of 3)"), rewritten in place at each decision and cleared at the end. Off with `-q`, with `-v`
//! (which prints every decision on its own line) and when stderr is not a terminal (a pipe, a
//! file: no control sequences in logs).

use std::io::{IsTerminal as _, Write as _};
use std::sync::Mutex;

use agentic_runtime::RetryPolicy;
use agentic_runtime::decision::Decision;
use agentic_runtime::decision::{Layer, Verdict};

use crate::terminal::shown;

/// The most characters of a failure the line shows: one line of a narrow terminal with the rest.
const ERROR_CHARS: usize = 60;

/// What ends a line and clears it: carriage return, then "erase the whole line".
const CLEAR: &str = "\r\x1b[2K";

/// The progress line, when stderr is a terminal and it is wanted.
pub(crate) struct Progress {
    session_retries: u32,
    max_retries: u32,
    /// The session layer's retries within the current exec attempt: (attempt, retries seen).
    session: Mutex<(u32, u32)>,
}

impl Progress {
    /// A progress line for an exec on `policy`, or `None` when it is not to be shown.
    pub(crate) fn on_terminal(policy: &RetryPolicy, quiet: bool, verbose: bool) -> Option<Self> {
        if quiet || verbose || !std::io::stderr().is_terminal() {
            return None;
        }
        Some(Self {
            session_retries: policy.session_retries(),
            max_retries: policy.max_retries(),
            session: Mutex::new((0, 0)),
        })
    }

    /// Shows what the exec does first.
    pub(crate) fn start(&self, what: &str) {
        self.show(&format!("waiting for {what}…"));
    }

    /// Shows what `decision` makes the exec wait for.
    pub(crate) fn decided(&self, decision: &Decision) {
        let Some(delay) = decision.delay() else {
            return;
        };
        let wait = format!("{:.1} s", delay.as_secs_f64());
        let line = match decision.verdict() {
            Verdict::Retry => {
                let (layer, retry, of) = match decision.layer() {
                    Layer::Session => {
                        let mut session = self.session.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                        if session.0 != decision.attempt() {
                            *session = (decision.attempt(), 0);
                        }
                        session.1 += 1;
                        ("session", session.1, self.session_retries)
                    }
                    // Exec attempt `attempt` failed: the next is retry `attempt` of `max_retries - 1`.
                    layer => (layer.name(), decision.attempt(), self.max_retries.saturating_sub(1)),
                };
                format!("{}; retrying in {wait} ({layer} layer, retry {retry} of {of})", excerpt(decision.error()))
            }
            _ => format!("waiting {wait}: {}", excerpt(&decision.reason().to_string())),
        };
        self.show(&line);
    }

    /// Clears the line, before the answer or the error is printed.
    pub(crate) fn finish(&self) {
        let mut stderr = std::io::stderr().lock();
        let _ = write!(stderr, "{CLEAR}");
        let _ = stderr.flush();
    }

    fn show(&self, line: &str) {
        let mut stderr = std::io::stderr().lock();
        let _ = write!(stderr, "{CLEAR}{}", shown(line));
        let _ = stderr.flush();
    }
}

/// `text` cut to [`ERROR_CHARS`] characters, on one line.
pub(crate) fn excerpt(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    let mut cut: String = line.chars().take(ERROR_CHARS).collect();
    if cut.len() < line.len() || line.len() < text.len() {
        cut.push('…');
    }
    cut
}
