//! Reading a journal back, skipping corrupt lines, and counting failures by cause.

use std::collections::HashMap;
use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::Path;

use serde::Serialize;

use super::record::{Event, FailureRecord};

/// A line of a journal that is not a record; it was skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorruptLine {
    /// The line's number, from 1 (every line counts, blank ones too).
    pub line: usize,
    /// What is wrong with it.
    pub error: String,
}

impl fmt::Display for CorruptLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.error)
    }
}

/// What a journal holds: its records in file order, and the lines that were skipped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JournalContents {
    /// The records, in the order they were written.
    pub records: Vec<FailureRecord>,
    /// The lines that could not be read as a record, in file order.
    pub corrupt: Vec<CorruptLine>,
}

/// How often one cause made calls fail (or retry) since a time: one row of `agentic journal`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Count {
    /// Final failures or retries (they are never counted together).
    pub event: Event,
    /// What failed: `"exec"`, or another operation's name.
    pub op: String,
    /// The function's name, or `"exec"`.
    pub name: String,
    /// Why it gave up (`"exhausted"`, `"permanent"`, ...), or `"retry"`.
    pub kind: String,
    /// The short summary of the last error ([`FailureRecord::label`]).
    pub label: String,
    /// How many records.
    pub count: usize,
    /// The time of the earliest, in milliseconds since the Unix epoch.
    pub first_ms: u64,
    /// The time of the latest, in milliseconds since the Unix epoch.
    pub last_ms: u64,
}

/// Reads the journal at `path`.
///
/// Each line is one [`FailureRecord`]. Blank lines are skipped. A line that is not valid UTF-8,
/// not JSON, or not a record is reported in [`JournalContents::corrupt`] with its line number and
/// skipped; the lines after it are still read. A last line without its newline that is not a
/// record (a writer stopped in the middle of it) is reported as truncated; with its newline missing
/// but whole, it is read. Only a file that cannot be opened or read is an error.
///
/// # Examples
///
/// ```
/// use agentic_runtime::journal::{FailureRecord, Journal, read_journal};
///
/// let path = std::env::temp_dir().join(format!("agentic-doc-journal-{}.jsonl", std::process::id()));
/// # let _ = std::fs::remove_file(&path);
/// let journal = Journal::open(&path)?;
/// journal.record(&FailureRecord::new("summarize", "exhausted", "RateLimitError: 429 Too Many Requests"))?;
/// std::fs::OpenOptions::new().append(true).open(&path).and_then(|mut file| {
///     std::io::Write::write_all(&mut file, b"{\"time_ms\": 12, \"na")
/// })?;
///
/// let contents = read_journal(&path)?;
/// assert_eq!(contents.records.len(), 1);
/// assert_eq!(contents.corrupt[0].line, 2);
/// assert_eq!(contents.counts_since(0)[0].label, "429 rate limited");
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn read_journal(path: impl AsRef<Path>) -> io::Result<JournalContents> {
    JournalContents::read_from(BufReader::new(File::open(path)?))
}

impl JournalContents {
    /// Reads journal lines from `reader`, as [`read_journal`] does from a file.
    pub fn read_from(mut reader: impl BufRead) -> io::Result<Self> {
        let mut contents = Self::default();
        let mut buffer = Vec::new();
        let mut number = 0;
        loop {
            buffer.clear();
            if reader.read_until(b'\n', &mut buffer)? == 0 {
                return Ok(contents);
            }
            number += 1;
            let whole = buffer.last() == Some(&b'\n');
            match parse_line(&buffer) {
                Ok(None) => {}
                Ok(Some(record)) => contents.records.push(record),
                Err(error) => {
                    let error = if whole { error } else { format!("truncated last line (no newline): {error}") };
                    contents.corrupt.push(CorruptLine { line: number, error });
                }
            }
        }
    }

    /// The records made at or after `since_ms` (milliseconds since the Unix epoch), grouped by
    /// event, op, name, kind and [label](FailureRecord::label), most frequent first (then the most
    /// recent first, then by name).
    ///
    /// Final failures and retries are separate groups ([`Count::event`]).
    pub fn counts_since(&self, since_ms: u64) -> Vec<Count> {
        let mut groups: HashMap<(Event, &str, &str, &str, String), Count> = HashMap::new();
        for record in self.records.iter().filter(|record| record.time_ms >= since_ms) {
            let label = record.label();
            let key = (record.event, record.op.as_str(), record.name.as_str(), record.kind.as_str(), label);
            let count = groups.entry(key).or_insert_with_key(|(event, op, name, kind, label)| Count {
                event: *event,
                op: (*op).to_owned(),
                name: (*name).to_owned(),
                kind: (*kind).to_owned(),
                label: label.clone(),
                count: 0,
                first_ms: record.time_ms,
                last_ms: record.time_ms,
            });
            count.count += 1;
            count.first_ms = count.first_ms.min(record.time_ms);
            count.last_ms = count.last_ms.max(record.time_ms);
        }
        let mut counts: Vec<Count> = groups.into_values().collect();
        counts.sort_by(|a, b| {
            (b.count, b.last_ms).cmp(&(a.count, a.last_ms)).then_with(|| {
                (a.event, &a.op, &a.name, &a.kind, &a.label).cmp(&(b.event, &b.op, &b.name, &b.kind, &b.label))
            })
        });
        counts
    }
}

/// One line (with or without its newline): a record, nothing (blank), or what is wrong with it.
fn parse_line(bytes: &[u8]) -> Result<Option<FailureRecord>, String> {
    let text = std::str::from_utf8(bytes)
        .map_err(|error| format!("not valid UTF-8 (invalid byte at column {})", error.valid_up_to() + 1))?;
    if text.trim().is_empty() {
        return Ok(None);
    }
    serde_json::from_str(text.trim_end()).map(Some).map_err(|error| {
        let error = error.to_string();
        // serde_json says "at line 1 column N"; the line is the journal's, the column is enough.
        match error.rsplit_once(" at line 1 column ") {
            Some((what, column)) => format!("{what} at column {column}"),
            None => error,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(name: &str, kind: &str, last_error: &str, time_ms: u64) -> FailureRecord {
        FailureRecord::new(name, kind, last_error).with_time_ms(time_ms)
    }

    fn lines(records: &[FailureRecord]) -> String {
        records.iter().map(|record| serde_json::to_string(record).unwrap() + "\n").collect()
    }

    #[test]
    fn blank_lines_are_skipped_but_counted() {
        let text = format!("\n{}  \n", lines(&[record("f", "exhausted", "x", 1)]));
        let contents = JournalContents::read_from(text.as_bytes()).unwrap();
        assert_eq!(contents.records.len(), 1);
        assert!(contents.corrupt.is_empty());
        let text = format!("\n\nnot json\n{}", lines(&[record("f", "exhausted", "x", 1)]));
        let contents = JournalContents::read_from(text.as_bytes()).unwrap();
        assert_eq!(contents.corrupt[0].line, 3);
    }

    #[test]
    fn corrupt_lines_say_what_is_wrong() {
        let text =
            b"{\"time_ms\": 1}\n42\n\xff\xfe\n{\"time_ms\": 1, \"name\": \"f\", \"kind\": \"k\", \"last_error\": 5}\n";
        let contents = JournalContents::read_from(&text[..]).unwrap();
        let corrupt: Vec<String> = contents.corrupt.iter().map(ToString::to_string).collect();
        assert_eq!(
            corrupt,
            [
                "line 1: missing field `name` at column 14",
                "line 2: invalid type: integer `42`, expected struct FailureRecord at column 2",
                "line 3: not valid UTF-8 (invalid byte at column 1)",
                "line 4: invalid type: integer `5`, expected a string at column 56",
            ]
        );
        assert!(contents.records.is_empty());
    }

    #[test]
    fn a_whole_last_line_without_its_newline_is_read() {
        let text = lines(&[record("f", "exhausted", "x", 1)]);
        let contents = JournalContents::read_from(text.trim_end().as_bytes()).unwrap();
        assert_eq!(contents.records.len(), 1);
        assert!(contents.corrupt.is_empty());
    }

    #[test]
    fn counts_group_by_cause_and_keep_failures_apart_from_retries() {
        let mut retry = record("summarize", "retry", "RateLimitError: 429 Too Many Requests", 50);
        retry.event = Event::Retry;
        let records = [
            record("summarize", "exhausted", "RateLimitError: 429 Too Many Requests", 10),
            record("summarize", "exhausted", "ModelError: 429 slow down", 30),
            record("summarize", "exhausted", "ServiceUnavailableError: 503", 20),
            record("summarize", "budget", "RateLimitError: 429 Too Many Requests", 40),
            record("exec", "exhausted", "ServiceUnavailableError: 503", 35),
            record("summarize", "exhausted", "ServiceUnavailableError: 503", 5),
            retry,
        ];
        let contents = JournalContents { records: records.to_vec(), corrupt: Vec::new() };
        let counts = contents.counts_since(10);
        let got: Vec<_> = counts
            .iter()
            .map(|c| (c.event, c.name.as_str(), c.kind.as_str(), c.label.as_str(), c.count, c.first_ms, c.last_ms))
            .collect();
        assert_eq!(
            got,
            [
                (Event::Failure, "summarize", "exhausted", "429 rate limited", 2, 10, 30),
                (Event::Retry, "summarize", "retry", "429 rate limited", 1, 50, 50),
                (Event::Failure, "summarize", "budget", "429 rate limited", 1, 40, 40),
                (Event::Failure, "exec", "exhausted", "503 unavailable", 1, 35, 35),
                (Event::Failure, "summarize", "exhausted", "503 unavailable", 1, 20, 20),
            ]
        );
        assert_eq!(contents.counts_since(0).iter().map(|c| c.count).sum::<usize>(), 7);
        assert!(contents.counts_since(51).is_empty());
    }
}
