//! Reading stdin and writing results: numbered lines, UTF-8 checks, a closed stdout, usage errors.

use std::fmt::Display;
use std::io::{self, BufRead, IsTerminal as _, Read, Write};
use std::process::ExitCode;

use crate::lines::BoundedLines;
use crate::terminal::shown;
use crate::text::bytes_text;

/// The exit code of a usage error (the same as clap's).
pub(crate) const USAGE: u8 = 2;

/// Prints `error: <message>` on stderr (control characters escaped) and returns exit code 2.
pub(crate) fn usage_error(message: impl Display) -> ExitCode {
    eprintln!("error: {}", shown(message));
    ExitCode::from(USAGE)
}

/// Tells a person at a terminal that the command is waiting for stdin (scripts never see it).
pub(crate) fn hint_if_terminal(what: &str) {
    if io::stdin().is_terminal() {
        eprintln!("reading {what} from stdin (end with Ctrl-D)");
    }
}

/// One line of input: its number (from 1, counting every line, blank and over-long ones too) and
/// its text, or what is wrong with it (not UTF-8, longer than
/// [`MAX_LINE_BYTES`](crate::lines::MAX_LINE_BYTES)). The line ending (`\n` or `\r\n`)
/// is removed.
pub(crate) struct Line {
    /// The line's number, from 1.
    pub(crate) number: usize,
    /// The text, or why there is none: `not valid UTF-8`, `longer than 1 MiB ...`.
    pub(crate) text: Result<String, String>,
}

/// The numbered lines of `reader`, each at most
/// [`MAX_LINE_BYTES`](crate::lines::MAX_LINE_BYTES) long: a longer one is skipped
/// without being held in memory and reported, as is one that is not UTF-8, and the next lines
/// still come. A read error ends the iteration with that error.
pub(crate) fn numbered_lines(reader: impl BufRead) -> impl Iterator<Item = io::Result<Line>> {
    let mut lines = BoundedLines::new(reader);
    std::iter::from_fn(move || match lines.next_line() {
        Ok(None) => None,
        Ok(Some(line)) => {
            let text = match line.bytes {
                Ok(bytes) => String::from_utf8(bytes.to_vec()).map_err(|_| "not valid UTF-8".to_owned()),
                Err(too_long) => Err(too_long.to_string()),
            };
            Some(Ok(Line { number: line.number, text }))
        }
        Err(error) => Some(Err(error)),
    })
}

/// The most `agentic simulate` reads from stdin: 1 MiB.
///
/// A simulation is a policy and a list of outcomes, each a few dozen bytes: 1 MiB holds tens of
/// thousands of them, far more than any retry policy makes calls, while stdin that never ends
/// (`/dev/zero`, a mistaken pipe) is refused instead of read into memory until none is left.
pub(crate) const MAX_STDIN_BYTES: usize = 1024 * 1024;

/// All of stdin as text, at most [`MAX_STDIN_BYTES`], or a usage message saying why it could
/// not be read.
pub(crate) fn read_stdin_to_string() -> Result<String, String> {
    read_to_string_bounded(io::stdin().lock(), MAX_STDIN_BYTES)
}

/// All of `reader` as text, or why not: a read error, more than `max` bytes, not UTF-8.
fn read_to_string_bounded(reader: impl Read, max: usize) -> Result<String, String> {
    let mut bytes = Vec::new();
    let limit = u64::try_from(max).unwrap_or(u64::MAX).saturating_add(1);
    reader.take(limit).read_to_end(&mut bytes).map_err(|error| format!("cannot read stdin: {error}"))?;
    if bytes.len() > max {
        return Err(format!(
            "stdin is longer than {}, the most a simulation may be; give fewer outcomes",
            bytes_text(max)
        ));
    }
    String::from_utf8(bytes).map_err(|error| {
        format!("stdin is not valid UTF-8 (invalid byte at offset {})", error.utf8_error().valid_up_to())
    })
}

/// Writes one line for people to `out`, its control characters escaped ([`shown`]); see [`emit`].
pub(crate) fn emit_text(out: &mut impl Write, line: impl Display) -> bool {
    emit(out, shown(line))
}

/// Writes one line to `out` as it is (JSON, whose strings escape control characters). Returns false when nobody reads any more (a closed pipe, as with
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
        let lines: Vec<(usize, Result<String, String>)> =
            numbered_lines(input).map(|line| line.map(|line| (line.number, line.text)).unwrap()).collect();
        assert_eq!(
            lines,
            [
                (1, Ok("a".to_owned())),
                (2, Ok(String::new())),
                (3, Err("not valid UTF-8".to_owned())),
                (4, Ok("last".to_owned())),
            ]
        );
    }

    #[test]
    fn stdin_past_the_bound_is_refused() {
        assert_eq!(read_to_string_bounded(&b"12345"[..], 5), Ok("12345".to_owned()));
        assert_eq!(
            read_to_string_bounded(&b"123456"[..], 5),
            Err("stdin is longer than 5 bytes, the most a simulation may be; give fewer outcomes".to_owned())
        );
        assert_eq!(
            read_to_string_bounded(io::repeat(b'{'), MAX_STDIN_BYTES),
            Err("stdin is longer than 1 MiB, the most a simulation may be; give fewer outcomes".to_owned())
        );
        assert_eq!(
            read_to_string_bounded(&b"ab\xff"[..], 5),
            Err("stdin is not valid UTF-8 (invalid byte at offset 2)".to_owned())
        );
    }
}
