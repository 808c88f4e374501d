//! `agentic ask`'s progress line: on a terminal (a pseudo-terminal here) one line on stderr says
//! what the exec waits for and why, rewritten in place and cleared at the end; without a terminal,
//! or with `-q`, nothing of it is written.

use std::fs::File;
use std::io::Read as _;
use std::os::fd::{FromRawFd as _, OwnedFd};
use std::process::{Command, Stdio};

use crate::common::REFUSED_FAST as FAILING;

fn agentic() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agentic"));
    for variable in ["OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"] {
        command.env_remove(variable);
    }
    command.stdin(Stdio::null()).stdout(Stdio::null());
    command
}

/// Runs `agentic args` with its stderr on a pseudo-terminal: its exit code and what it wrote there.
fn on_terminal(args: &[&str]) -> (Option<i32>, String) {
    let (mut master, mut slave) = (0, 0);
    // SAFETY: openpty writes two new descriptors into the ints; the null name, termios and window
    // size are allowed.
    let opened =
        unsafe { libc::openpty(&mut master, &mut slave, std::ptr::null_mut(), std::ptr::null(), std::ptr::null()) };
    assert_eq!(opened, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors were just opened and are owned here alone.
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    let mut child = agentic().args(args).stderr(Stdio::from(slave)).spawn().expect("agentic runs");
    // The child holds the only other end now: reading ends (EIO) when it exits.
    let reader = std::thread::spawn(move || {
        let mut terminal = File::from(master);
        let mut seen = Vec::new();
        let mut buffer = [0; 4096];
        while let Ok(read) = terminal.read(&mut buffer) {
            if read == 0 {
                break;
            }
            seen.extend_from_slice(&buffer[..read]);
        }
        String::from_utf8_lossy(&seen).into_owned()
    });
    let status = child.wait().expect("agentic ends");
    (status.code(), reader.join().expect("the reader ends"))
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
    let piped = agentic().args(FAILING).stderr(Stdio::piped()).output().expect("agentic runs");
    assert_eq!(piped.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&piped.stderr);
    assert!(stderr.starts_with("exec() failed after 2 attempts"), "{stderr:?}");
    assert!(!stderr.contains("retrying in") && !stderr.contains('\x1b'), "{stderr:?}");

    let quiet: Vec<&str> = FAILING.iter().copied().chain(["-q"]).collect();
    let (code, terminal) = on_terminal(&quiet);
    assert_eq!(code, Some(1));
    assert!(!terminal.contains("retrying in") && !terminal.contains("waiting for"), "{terminal:?}");
}
