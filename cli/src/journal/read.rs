//! A journal's lines read back as the records the runtime wrote, each line the
//! `agentic_runtime::observe::journal::FailureRecord` it holds or what is wrong with it.
//!
//! Blank lines are skipped. A line that is not valid UTF-8, not JSON, not a record, or longer than
//! [`MAX_LINE_BYTES`](crate::lines::MAX_LINE_BYTES) is corrupt: reported with its line number and
//! what is wrong, and skipped; the lines after it are still read. A last line without its newline
//! that is not a record (a writer stopped in the middle of it) is reported as truncated; with its
//! newline missing but whole, it is read. Fields a record does not know are ignored, so newer
//! writers can add some; a record of an older writer reads as today's (its kind `budget` is
//! `refused`).

use std::io::{self, BufRead};

use agentic_runtime::observe::journal::FailureRecord;

use crate::lines::BoundedLines;
use crate::text::shorten;

/// A line of a journal that is not a record; it was skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CorruptLine {
    /// The line's number, from 1 (every line counts, blank ones too).
    pub(crate) line: usize,
    /// What is wrong with it.
    pub(crate) error: String,
}

/// The longest error message of a corrupt line, in characters, before its column: serde's
/// messages quote the value they met, which may be a megabyte of text.
const MAX_ERROR_CHARS: usize = 200;

/// What kind `refused` was named in journals written before it was renamed: a cap of the exec or
/// the shared state refused the next call.
const REFUSED_FORMERLY: &str = "budget";

/// Reads every line of `reader`, giving `each` its number and its record or what is wrong with
/// it (blank lines give nothing); stops at the first error of `each`.
pub(super) fn read_lines(
    reader: impl BufRead,
    mut each: impl FnMut(usize, Result<FailureRecord, String>) -> io::Result<()>,
) -> io::Result<()> {
    let mut lines = BoundedLines::new(reader);
    while let Some(line) = lines.next_line()? {
        let record = match line.bytes {
            Err(too_long) => Err(too_long.to_string()),
            Ok(bytes) => match parse_line(bytes) {
                Ok(None) => continue,
                Ok(Some(record)) => Ok(record),
                Err(error) if line.ended => Err(error),
                Err(error) => Err(format!("truncated last line (no newline): {error}")),
            },
        };
        each(line.number, record)?;
    }
    Ok(())
}

/// One line (without its line ending): a record, nothing (blank), or what is wrong with it.
fn parse_line(bytes: &[u8]) -> Result<Option<FailureRecord>, String> {
    let text = std::str::from_utf8(bytes)
        .map_err(|error| format!("not valid UTF-8 (invalid byte at column {})", error.valid_up_to() + 1))?;
    if text.trim().is_empty() {
        return Ok(None);
    }
    let mut record: FailureRecord = serde_json::from_str(text.trim_end()).map_err(|error| {
        let error = error.to_string();
        // serde_json says "at line 1 column N"; the line is the journal's, the column is enough.
        match error.rsplit_once(" at line 1 column ") {
            Some((what, column)) => format!("{} at column {column}", shorten(what, MAX_ERROR_CHARS)),
            None => shorten(&error, MAX_ERROR_CHARS).into_owned(),
        }
    })?;
    if record.kind == REFUSED_FORMERLY {
        record.kind = "refused".to_owned();
    }
    Ok(Some(record))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lines::MAX_LINE_BYTES;

    /// The records of `text`, and its corrupt lines.
    fn read(text: &[u8]) -> (Vec<FailureRecord>, Vec<CorruptLine>) {
        let (mut records, mut corrupt) = (Vec::new(), Vec::new());
        read_lines(text, |line, record| {
            match record {
                Ok(record) => records.push(record),
                Err(error) => corrupt.push(CorruptLine { line, error }),
            }
            Ok(())
        })
        .unwrap();
        (records, corrupt)
    }

    fn line(record: &FailureRecord) -> String {
        serde_json::to_string(record).unwrap() + "\n"
    }

    fn record(name: &str) -> FailureRecord {
        FailureRecord::new(name, "exhausted", "x").with_time_ms(1)
    }

    #[test]
    fn blank_lines_are_skipped_but_counted() {
        let (records, corrupt) = read(format!("\n{}  \n", line(&record("f"))).as_bytes());
        assert_eq!((records, corrupt), (vec![record("f")], vec![]));
        let (_, corrupt) = read(format!("\n\nnot json\n{}", line(&record("f"))).as_bytes());
        assert_eq!(corrupt[0].line, 3);
    }

    #[test]
    fn corrupt_lines_say_what_is_wrong() {
        let text =
            b"{\"time_ms\": 1}\n42\n\xff\xfe\n{\"time_ms\": 1, \"name\": \"f\", \"kind\": \"k\", \"last_error\": 5}\n";
        let (records, corrupt) = read(&text[..]);
        let corrupt: Vec<(usize, &str)> = corrupt.iter().map(|line| (line.line, line.error.as_str())).collect();
        assert_eq!(
            corrupt,
            [
                (1, "missing field `name` at column 14"),
                (2, "invalid type: integer `42`, expected struct FailureRecord at column 2"),
                (3, "not valid UTF-8 (invalid byte at column 1)"),
                (4, "invalid type: integer `5`, expected a string at column 56"),
            ]
        );
        assert!(records.is_empty());
    }

    #[test]
    fn a_whole_last_line_without_its_newline_is_read_and_a_cut_one_is_truncated() {
        let whole = line(&record("f"));
        assert_eq!(read(whole.trim_end().as_bytes()), (vec![record("f")], vec![]));
        let (records, corrupt) = read(format!("{whole}{}", &whole[..20]).as_bytes());
        assert_eq!(records, [record("f")]);
        assert_eq!(
            corrupt,
            [CorruptLine {
                line: 2,
                error: "truncated last line (no newline): EOF while parsing an object at column 20".to_owned()
            }]
        );
    }

    #[test]
    fn an_over_long_line_is_corrupt_and_the_next_lines_are_read() {
        let mut text = vec![b' '; MAX_LINE_BYTES + 1];
        text.push(b'\n');
        text.extend_from_slice(line(&record("f")).as_bytes());
        let (records, corrupt) = read(&text);
        assert_eq!(
            corrupt,
            [CorruptLine { line: 1, error: "longer than 1 MiB (the limit for one line); it was skipped".to_owned() }]
        );
        assert_eq!(records, [record("f")]);
    }

    #[test]
    fn values_quoted_in_errors_are_shortened() {
        let (_, corrupt) = read(format!("{{\"time_ms\": \"{}\"}}\n", "9".repeat(10_000)).as_bytes());
        let error = &corrupt[0].error;
        assert!(error.starts_with("invalid type: string \"999"), "{error}");
        assert!(error.ends_with("… at column 10014"), "{error}");
        assert_eq!(error.chars().count(), MAX_ERROR_CHARS + "… at column 10014".chars().count());
    }

    #[test]
    fn a_record_of_kind_budget_from_an_older_writer_reads_as_refused() {
        let older =
            r#"{"time_ms":5,"event":"failure","op":"exec","name":"f","kind":"budget","last_error":"ModelError"}"#;
        let (records, corrupt) = read(format!("{older}\n").as_bytes());
        assert!(corrupt.is_empty(), "{corrupt:?}");
        assert_eq!((records[0].name.as_str(), records[0].kind.as_str()), ("f", "refused"));
        let (records, _) = read(line(&FailureRecord::new("g", "refused", "x")).as_bytes());
        assert_eq!(records[0].kind, "refused", "today's name is kept");
    }
}
