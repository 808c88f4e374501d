//! Reading stdin and writing results: numbered lines, UTF-8 checks, a closed stdout, usage errors.

use std::fmt::Display;
use std::io::{self, BufRead, IsTerminal as _, Read as _, Write};
use std::process::ExitCode;

/// The exit code of a usage error (the same as clap's).
pub(crate) const USAGE: u8 = 2;

/// Prints `error: <message>` on stderr and returns exit code 2.
pub(crate) fn usage_error(message: impl Display) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::from(USAGE)
}

/// Tells a person at a terminal that the command is waiting for stdin (scripts never see it).
pub(crate) fn hint_if_terminal(what: &str) {
    if io::stdin().is_terminal() {
        eprintln!("reading {what} from stdin (end with Ctrl-D)");
    }
}

/// One line of input: its number (from 1, counting every line, blank ones too) and its text, or
/// the fact that it is not UTF-8. The line ending (`\n` or `\r\n`) is removed.
pub(crate) struct Line {
    /// The line's number, from 1.
    pub(crate) number: usize,
    /// The text, or `None` when the bytes are not valid UTF-8.
    pub(crate) text: Option<String>,
}

/// The numbered lines of `reader`. A line that is not UTF-8 is reported as such and the next lines
/// still come; a read error ends the iteration with that error.
pub(crate) fn numbered_lines(reader: impl BufRead) -> impl Iterator<Item = io::Result<Line>> {
    let mut reader = reader;
    let mut number = 0;
    let mut buffer = Vec::new();
    std::iter::from_fn(move || {
        buffer.clear();
        match reader.read_until(b'\n', &mut buffer) {
            Ok(0) => None,
            Ok(_) => {
                number += 1;
                if buffer.last() == Some(&b'\n') {
                    buffer.pop();
                    if buffer.last() == Some(&b'\r') {
                        buffer.pop();
                    }
                }
                let text = String::from_utf8(std::mem::take(&mut buffer)).ok();
                Some(Ok(Line { number, text }))
            }
            Err(error) => Some(Err(error)),
        }
    })
}

/// All of stdin as text, or a usage message saying why it could not be read.
pub(crate) fn read_stdin_to_string() -> Result<String, String> {
    let mut bytes = Vec::new();
    io::stdin().lock().read_to_end(&mut bytes).map_err(|error| format!("cannot read stdin: {error}"))?;
    String::from_utf8(bytes).map_err(|error| {
        format!("stdin is not valid UTF-8 (invalid byte at offset {})", error.utf8_error().valid_up_to())
    })
}

/// Writes one line to `out`. Returns false when nobody reads any more (a closed pipe, as with
/// `| head -1`) or stdout failed; the caller stops producing output then.
pub(crate) fn emit(out: &mut impl Write, line: impl Display) -> bool {
    match writeln!(out, "{line}").and_then(|()| out.flush()) {
        Ok(()) => true,
        Err(error) if error.kind() == io::ErrorKind::BrokenPipe => false,
        Err(error) => {
            eprintln!("error: cannot write to stdout: {error}");
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_every_line_and_strips_line_endings() {
        let input: &[u8] = b"a\r\n\nb\xff\nlast";
        let lines: Vec<(usize, Option<String>)> =
            numbered_lines(input).map(|line| line.map(|line| (line.number, line.text)).unwrap()).collect();
        assert_eq!(
            lines,
            [(1, Some("a".to_owned())), (2, Some(String::new())), (3, None), (4, Some("last".to_owned())),]
        );
    }
}
