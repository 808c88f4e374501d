//! `agentic ask`'s progress line: on a terminal (a pseudo-terminal here) one line on stderr says
//! what the exec waits for and why, rewritten in place and cleared at the end; without a terminal,
//! or with `-q`, nothing of it is written.

use std::process::Stdio;

use crate::common::{self, REFUSED_FAST as FAILING, Terminal, agentic_command};

/// Runs `agentic args` with its stderr on a pseudo-terminal: its exit code and what it wrote there.
fn on_terminal(args: &[&str]) -> (Option<i32>, String) {
    let run = common::on_terminal(agentic_command(args), Terminal::Stderr, 80);
    (run.code, String::from_utf8_lossy(&run.terminal).into_owned())
}

#[test]
fn on_a_terminal_one_line_says_what_the_exec_waits_for_and_is_cleared() {
    let (code, terminal) = on_terminal(&FAILING);
    assert_eq!(code, Some(1), "{terminal}");
    assert!(terminal.contains("\r\x1b[2Kwaiting for openai…"), "{terminal:?}");
    assert!(terminal.contains("; retrying in 0.0 s (session layer, retry 1 of 1)"), "{terminal:?}");
    assert!(terminal.contains("; retrying in 0.0 s (exec layer, retry 1 of 1)"), "{terminal:?}");
    // Cleared before the error, which is printed on its own lines.
    assert!(terminal.contains("\r\x1b[2Kexec() failed after 2 attempts (4 model calls):"), "{terminal:?}");
    // Never a newline inside the progress line: it is rewritten in place.
    let progress: Vec<&str> = terminal.split("\r\x1b[2K").filter(|part| part.contains("retrying in")).collect();
    assert!(progress.iter().all(|line| !line.contains('\n')), "{progress:?}");
}

#[test]
fn without_a_terminal_or_with_quiet_there_is_no_progress_line() {
    let piped = agentic_command(&FAILING).stderr(Stdio::piped()).output().expect("agentic runs");
    assert_eq!(piped.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&piped.stderr);
    assert!(stderr.starts_with("exec() failed after 2 attempts"), "{stderr:?}");
    assert!(!stderr.contains("retrying in") && !stderr.contains('\x1b'), "{stderr:?}");

    let quiet: Vec<&str> = FAILING.iter().copied().chain(["-q"]).collect();
    let (code, terminal) = on_terminal(&quiet);
    assert_eq!(code, Some(1));
    assert!(!terminal.contains("retrying in") && !terminal.contains("waiting for"), "{terminal:?}");
}
