//! `agentic ask --stream` on a terminal: the answer written as it arrives, and a rewind erased.
//!
//! What the exec shows of a model turn goes to stdout as it comes (control characters escaped, as
//! for any answer). When a call that showed text fails and another replaces it, the turn's rows are
//! erased (the cursor goes back to where the turn began) and one line on stderr says why. Nothing
//! else is written inside a turn's text: a `--verbose` line or the progress line that comes while
//! the turn shows text waits until the turn is erased or ended, so that the rows counted are the
//! rows written even when stdout and stderr are one terminal. A turn that asked for tools ends its
//! line and stays on the screen; the answer is the last turn's text, ended by a newline; an exec
//! that failed erases what its last turn showed (the error says why, as without `--stream`).

use std::io::Write as _;
use std::sync::Arc;

use agentic_runtime::decision::Decision;
use agentic_runtime::exec::ExecEvent;
use agentic_runtime::{ExecError, Reply};

use crate::progress::{Progress, excerpt};
use crate::stream::rows::{Written, terminal_width};
use crate::terminal::shown;
use crate::tool_flags::{call_line, result_line};

/// The terminal's side of a streamed exec.
pub(crate) struct Screen {
    /// What the current turn wrote on stdout.
    written: Written,
    /// Lines for stderr that came while the turn showed text.
    held: Vec<String>,
    progress: Option<Arc<Progress>>,
    /// Whether the progress line may hold something that the next text must clear first.
    progress_shown: bool,
    verbose: bool,
    /// The target of the last decision's failed call: a rewind to another says where it goes.
    failed_on: Option<String>,
}

impl Screen {
    /// A screen with the progress line (if any: it was started, and says what the exec first
    /// waits for) and `--verbose`'s lines.
    pub(crate) fn new(progress: Option<Arc<Progress>>, verbose: bool) -> Self {
        let progress_shown = progress.is_some();
        Self { written: Written::default(), held: Vec::new(), progress, progress_shown, verbose, failed_on: None }
    }

    /// Shows `event`.
    pub(crate) fn show(&mut self, event: &ExecEvent) {
        match event {
            ExecEvent::TextDelta(text) => self.text(text),
            ExecEvent::ToolCall { name, arguments, .. } => {
                self.end_turn();
                if self.verbose {
                    self.note(call_line(name, arguments));
                }
            }
            ExecEvent::ToolResult { name, content, is_error, .. } if self.verbose => {
                self.note(result_line(name, content, *is_error));
            }
            ExecEvent::Decision(decision) => self.decided(decision),
            ExecEvent::Rewind { attempt, call, error, wait, target, .. } => {
                self.erase();
                let moved = target.as_deref().filter(|target| Some(*target) != self.failed_on.as_deref());
                let mut line = format!(
                    "agentic: rewound: call {call} (attempt {attempt}) failed after its text was shown ({}); retrying",
                    excerpt(error)
                );
                if let Some(target) = moved {
                    line += &format!(" on {target}");
                }
                line += &wait.map_or_else(|| " now".to_owned(), |wait| format!(" in {:.1} s", wait.as_secs_f64()));
                self.note(shown(line));
            }
            ExecEvent::Done(result) => self.done(result),
            // Reasoning is not the answer: `--json` has it.
            _ => {}
        }
    }

    fn text(&mut self, text: &str) {
        if std::mem::take(&mut self.progress_shown)
            && let Some(progress) = &self.progress
        {
            progress.finish();
        }
        let text = shown(text);
        self.written.push(&text);
        out(&text);
    }

    fn decided(&mut self, decision: &Decision) {
        self.failed_on = decision.target().map(str::to_owned);
        if self.verbose {
            self.note(shown(decision));
        } else if self.written.is_empty()
            && let Some(progress) = &self.progress
        {
            progress.decided(decision);
            self.progress_shown = true;
        }
    }

    /// Writes `line` on stderr, or holds it while the turn shows text.
    fn note(&mut self, line: String) {
        if self.written.is_empty() {
            eprintln!("{line}");
        } else {
            self.held.push(line);
        }
    }

    fn release_held(&mut self) {
        for line in std::mem::take(&mut self.held) {
            eprintln!("{line}");
        }
    }

    /// Erases what the turn wrote.
    fn erase(&mut self) {
        if !self.written.is_empty() {
            out(&self.written.erase(terminal_width()));
        }
        self.release_held();
    }

    /// Ends the turn's line; its text stays.
    fn end_turn(&mut self) {
        if !self.written.at_line_start() {
            out("\n");
        }
        self.written = Written::default();
        self.release_held();
    }

    fn done(&mut self, result: &Result<Reply, ExecError>) {
        match result {
            Ok(_) => {
                out("\n");
                self.written = Written::default();
                self.release_held();
            }
            Err(_) => self.erase(),
        }
    }
}

/// Writes `text` on stdout at once; a terminal that went away is not the exec's failure.
fn out(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes());
    let _ = stdout.flush();
}
