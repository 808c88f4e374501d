//! Reading untrusted text line by line with a bound on each line.
//!
//! A line reader that buffers a whole line before looking at it holds all of a file with no
//! newline in memory: `/dev/zero` fills gigabytes in seconds. [`BoundedLines`] keeps at most
//! [`MAX_LINE_BYTES`] of a line (or the bound it is given); the rest of a longer line is read in
//! the reader's own chunks and dropped, and the line is reported as [`TooLong`], so the lines
//! after it are still read. Skipping has a bound too, [`MAX_SKIPPED_BYTES`]: input that runs past
//! it without a line ending (`/dev/zero`, a device, binary data) is not lines at all, and reading
//! stops with an [`Endless`] error instead of running forever. `agentic classify --json`, `grade`
//! and `journal` read their input with it.

use std::fmt;
use std::io::{self, BufRead};

use crate::text::bytes_text;

/// The default bound on one line, in bytes, without its line ending: the longest line the
/// runtime's trace sink writes (1 MiB), so that every line it writes is read. A line of a journal
/// or of `classify --json` input is a few hundred bytes.
pub(crate) const MAX_LINE_BYTES: usize = agentic_runtime::observe::trace::MAX_LINE_BYTES;

/// The most bytes of one over-long line that are read and dropped before reading stops: 64 MiB.
///
/// A line over [`MAX_LINE_BYTES`] is one bad record among good ones (a tool result quoted whole, a
/// writer's bug), worth skipping to read the next; 64 times that without a line ending is not a
/// file of lines (`/dev/zero`, a device, an image), and skipping it would read forever. Reading
/// 64 MiB to skip takes well under a second.
pub(crate) const MAX_SKIPPED_BYTES: u64 = 64 * 1024 * 1024;

/// Input that ran past the skipping bound ([`MAX_SKIPPED_BYTES`]) without a line ending: reading
/// stopped there. [`BoundedLines::next_line`] returns it as an [`io::Error`] of kind
/// [`InvalidData`](io::ErrorKind::InvalidData) whose inner error it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Endless {
    /// The number of the line that did not end, from 1.
    pub(crate) line: usize,
    /// The bound it passed, in bytes.
    pub(crate) max_skipped: u64,
}

impl fmt::Display for Endless {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {} has no line ending within {}; stopped reading (this is not a file of lines: a device such as /dev/zero, or binary data?)",
            self.line,
            bytes_text(usize::try_from(self.max_skipped).unwrap_or(usize::MAX))
        )
    }
}

impl std::error::Error for Endless {}

/// A line longer than the bound; its bytes were skipped, not kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TooLong {
    /// The bound it broke, in bytes.
    pub(crate) max: usize,
}

impl fmt::Display for TooLong {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "longer than {} (the limit for one line); it was skipped", bytes_text(self.max))
    }
}

impl std::error::Error for TooLong {}

/// One line read by [`BoundedLines::next_line`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Line<'a> {
    /// The line's number, from 1; every line counts, blank and over-long ones too.
    pub(crate) number: usize,
    /// Its bytes without the line ending (`\n` or `\r\n`), or [`TooLong`] when it had more than
    /// the bound.
    pub(crate) bytes: Result<&'a [u8], TooLong>,
    /// Whether a `\n` ended it; only the last line of the input may lack one.
    pub(crate) ended: bool,
}

/// The lines of a reader, each at most a bound long; see the [module](self) documentation.
#[derive(Debug)]
pub(crate) struct BoundedLines<R> {
    reader: R,
    max: usize,
    max_skipped: u64,
    number: usize,
    buffer: Vec<u8>,
}

impl<R: BufRead> BoundedLines<R> {
    /// The lines of `reader`, each at most [`MAX_LINE_BYTES`] long, reading at most
    /// [`MAX_SKIPPED_BYTES`] of one over-long line.
    pub(crate) fn new(reader: R) -> Self {
        Self::with_bounds(reader, MAX_LINE_BYTES, MAX_SKIPPED_BYTES)
    }

    /// The lines of `reader`, each at most `max` bytes long (without the line ending), reading at
    /// most `max_skipped` bytes of one over-long line before stopping with [`Endless`] (at least
    /// `max` whatever this says).
    pub(crate) fn with_bounds(reader: R, max: usize, max_skipped: u64) -> Self {
        Self { reader, max, max_skipped, number: 0, buffer: Vec::new() }
    }

    /// The next line, or `None` at the end of the input.
    ///
    /// At most the bound plus one byte (a `\r` that may precede the `\n`) is kept in memory,
    /// however long the line is.
    ///
    /// # Errors
    ///
    /// When reading fails (an interrupted read is retried), and when a line runs past the skipping
    /// bound without a line ending ([`Endless`], kind [`InvalidData`](io::ErrorKind::InvalidData)):
    /// nothing more is read then. The lines before it were given.
    pub(crate) fn next_line(&mut self) -> io::Result<Option<Line<'_>>> {
        self.buffer.clear();
        // The bound plus a `\r` that the line ending may hold.
        let keep = self.max.saturating_add(1);
        let mut too_long = false;
        let mut read_any = false;
        // Bytes of this line read so far, to stop skipping one that never ends.
        let mut line_bytes = 0u64;
        let ended = loop {
            let chunk = match self.reader.fill_buf() {
                Ok(chunk) => chunk,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(error) => return Err(error),
            };
            if chunk.is_empty() {
                break false;
            }
            read_any = true;
            let newline = chunk.iter().position(|&byte| byte == b'\n');
            let part = &chunk[..newline.unwrap_or(chunk.len())];
            if !too_long && part.len() <= keep - self.buffer.len() {
                self.buffer.extend_from_slice(part);
            } else if !too_long {
                too_long = true;
                self.buffer.clear();
            }
            let used = newline.map_or(chunk.len(), |end| end + 1);
            self.reader.consume(used);
            if newline.is_some() {
                break true;
            }
            line_bytes = line_bytes.saturating_add(used as u64);
            if too_long && line_bytes > self.max_skipped {
                let endless = Endless { line: self.number + 1, max_skipped: self.max_skipped };
                return Err(io::Error::new(io::ErrorKind::InvalidData, endless));
            }
        };
        if !read_any {
            return Ok(None);
        }
        self.number += 1;
        if ended && self.buffer.last() == Some(&b'\r') {
            self.buffer.pop();
        }
        let bytes = if too_long || self.buffer.len() > self.max {
            Err(TooLong { max: self.max })
        } else {
            Ok(self.buffer.as_slice())
        };
        Ok(Some(Line { number: self.number, bytes, ended }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every line as (number, text or the too-long message, ended).
    fn lines(input: &[u8], max: usize, chunk: usize) -> Vec<(usize, String, bool)> {
        let reader = io::BufReader::with_capacity(chunk, input);
        let mut lines = BoundedLines::with_bounds(reader, max, MAX_SKIPPED_BYTES);
        let mut all = Vec::new();
        while let Some(line) = lines.next_line().unwrap() {
            let text = match line.bytes {
                Ok(bytes) => String::from_utf8_lossy(bytes).into_owned(),
                Err(too_long) => too_long.to_string(),
            };
            all.push((line.number, text, line.ended));
        }
        all
    }

    #[test]
    fn lines_are_numbered_and_lose_their_endings() {
        for chunk in [1, 2, 3, 8192] {
            assert_eq!(
                lines(b"a\r\n\nb\rc\n\r\nlast\r", 10, chunk),
                [
                    (1, "a".to_owned(), true),
                    (2, String::new(), true),
                    (3, "b\rc".to_owned(), true),
                    (4, String::new(), true),
                    (5, "last\r".to_owned(), false),
                ],
                "chunk {chunk}"
            );
        }
        assert!(lines(b"", 10, 8).is_empty());
    }

    #[test]
    fn a_line_over_the_bound_is_skipped_and_the_next_lines_come() {
        let skipped = "longer than 4 bytes (the limit for one line); it was skipped".to_owned();
        for chunk in [1, 2, 3, 5, 8192] {
            assert_eq!(
                lines(b"abcd\nabcde\nabcd\r\nabcde\r\nok\nabcdefgh", 4, chunk),
                [
                    (1, "abcd".to_owned(), true),
                    (2, skipped.clone(), true),
                    (3, "abcd".to_owned(), true),
                    (4, skipped.clone(), true),
                    (5, "ok".to_owned(), true),
                    (6, skipped.clone(), false),
                ],
                "chunk {chunk}"
            );
        }
    }

    #[test]
    fn memory_stays_at_the_bound_however_long_the_line() {
        let input = vec![0u8; 4 * 1024 * 1024];
        let mut lines = BoundedLines::with_bounds(&input[..], 1024, MAX_SKIPPED_BYTES);
        let line = lines.next_line().unwrap().unwrap();
        assert_eq!(line.bytes, Err(TooLong { max: 1024 }));
        assert!(lines.buffer.capacity() <= 4 * 1024, "{}", lines.buffer.capacity());
        assert!(lines.next_line().unwrap().is_none());
    }

    #[test]
    fn a_line_past_the_skipping_bound_stops_the_reading() {
        // Chunks shorter than the line: a line whose end is in the chunk read is skipped, never stopped at.
        for chunk in [1, 3, 16] {
            let mut input = b"ok\n".to_vec();
            input.extend_from_slice(&[0u8; 100]);
            input.extend_from_slice(b"\nnever read\n");
            let reader = io::BufReader::with_capacity(chunk, &input[..]);
            let mut lines = BoundedLines::with_bounds(reader, 4, 50);
            assert_eq!(lines.next_line().unwrap().unwrap().bytes, Ok(&b"ok"[..]));
            let error = lines.next_line().unwrap_err();
            assert_eq!(error.kind(), io::ErrorKind::InvalidData);
            assert_eq!(
                error.to_string(),
                "line 2 has no line ending within 50 bytes; stopped reading (this is not a file of lines: a device such as /dev/zero, or binary data?)"
            );
            let endless = error.get_ref().and_then(|inner| inner.downcast_ref::<Endless>());
            assert_eq!(endless, Some(&Endless { line: 2, max_skipped: 50 }), "chunk {chunk}");
        }
        // Within the bound, the line is skipped and the next one read.
        let mut input = vec![0u8; 50];
        input.extend_from_slice(b"\nnext\n");
        let mut lines = BoundedLines::with_bounds(&input[..], 4, 50);
        assert_eq!(lines.next_line().unwrap().unwrap().bytes, Err(TooLong { max: 4 }));
        assert_eq!(lines.next_line().unwrap().unwrap().bytes, Ok(&b"next"[..]));
    }

    #[test]
    fn an_endless_reader_ends() {
        let mut lines = BoundedLines::new(io::BufReader::new(io::repeat(0)));
        let error = lines.next_line().unwrap_err();
        assert!(error.to_string().starts_with("line 1 has no line ending within 64 MiB; stopped reading"), "{error}");
    }
}
