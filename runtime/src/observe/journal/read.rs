//! Reading a journal back, skipping corrupt lines, and counting failures by cause.

use std::collections::HashMap;
use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::Path;

use serde::Serialize;

use super::record::{Event, FailureRecord};
use crate::util::lines::{BoundedLines, bytes_text, shorten};

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

/// How many corrupt lines [`JournalCounts`] keeps with what is wrong with them; the others are
/// counted only. A hundred show what is wrong with a file; a million would be a million lines of
/// noise and memory.
pub const MAX_CORRUPT_KEPT: usize = 100;

/// How much memory [`count_journal`] spends on its groups, at most: 64 MiB.
///
/// A group costs about 200 bytes and its op, name, kind and label; a journal has one group per
/// function and cause, a few hundred at most, so 64 MiB is room for a hundred thousand times
/// that. Only input made to be hostile (every line a new function name a megabyte long) reaches
/// it; then counting stops with an error instead of taking all the memory there is.
pub const MAX_COUNT_BYTES: usize = 64 * 1024 * 1024;

/// The memory one group takes besides its strings.
const GROUP_COST: usize = 200;

/// The longest error message of a corrupt line, in characters, before its column: serde's
/// messages quote the value they met, which may be a megabyte of text.
const MAX_ERROR_CHARS: usize = 200;

/// Reads the journal at `path`.
///
/// Each line is one [`FailureRecord`]. Blank lines are skipped. A line that is not valid UTF-8,
/// not JSON, not a record, or longer than [`MAX_LINE_BYTES`](crate::util::lines::MAX_LINE_BYTES) is
/// reported in [`JournalContents::corrupt`] with its line number and skipped; the lines after it
/// are still read. A last line without its newline that is not a record (a writer stopped in the
/// middle of it) is reported as truncated; with its newline missing but whole, it is read. Only a
/// file that cannot be opened or read is an error.
///
/// Every record is kept in memory; to count the records of a journal of any size, use
/// [`count_journal`], which keeps only the counts.
///
/// # Examples
///
/// ```
/// use agentic_runtime::observe::journal::{FailureRecord, Journal, read_journal};
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
    ///
    /// # Errors
    ///
    /// When reading fails.
    pub fn read_from(reader: impl BufRead) -> io::Result<Self> {
        let mut contents = Self::default();
        read_lines(reader, |line, record| {
            match record {
                Ok(record) => contents.records.push(record),
                Err(error) => contents.corrupt.push(CorruptLine { line, error }),
            }
            Ok(())
        })?;
        Ok(contents)
    }

    /// The records made at or after `since_ms` (milliseconds since the Unix epoch), grouped by
    /// event, op, name, kind and [label](FailureRecord::label), most frequent first (then the most
    /// recent first, then by name).
    ///
    /// Final failures and retries are separate groups ([`Count::event`]).
    pub fn counts_since(&self, since_ms: u64) -> Vec<Count> {
        let mut counter = Counter::default();
        for record in self.records.iter().filter(|record| record.time_ms >= since_ms) {
            counter.add(record);
        }
        counter.counts()
    }
}

/// What [`count_journal`] gives: the counts, and the corrupt lines skipped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct JournalCounts {
    /// The groups, as [`JournalContents::counts_since`] gives them.
    pub counts: Vec<Count>,
    /// The first [`MAX_CORRUPT_KEPT`] corrupt lines, in file order.
    pub corrupt: Vec<CorruptLine>,
    /// How many lines were corrupt, all of them.
    pub corrupt_lines: usize,
}

/// Counts the records of the journal at `path` made at or after `since_ms` (milliseconds since
/// the Unix epoch), as [`JournalContents::counts_since`] does, reading one line at a time and
/// keeping only the counts: what `agentic journal` prints.
///
/// Lines are read and reported as [`read_journal`] does; the first [`MAX_CORRUPT_KEPT`] corrupt
/// lines are kept. Memory stays bounded whatever the file holds: one line, up to
/// [`MAX_COUNT_BYTES`] of groups, and the corrupt lines kept.
///
/// # Errors
///
/// When the file cannot be opened or read, or, with an error of kind
/// [`io::ErrorKind::OutOfMemory`], when its groups would take more than [`MAX_COUNT_BYTES`].
///
/// # Examples
///
/// ```
/// use agentic_runtime::observe::journal::{FailureRecord, Journal, count_journal};
///
/// let path = std::env::temp_dir().join(format!("agentic-doc-count-{}.jsonl", std::process::id()));
/// # let _ = std::fs::remove_file(&path);
/// let journal = Journal::open(&path)?;
/// journal.record(&FailureRecord::new("summarize", "exhausted", "RateLimitError: 429 Too Many Requests"))?;
/// journal.record(&FailureRecord::new("summarize", "exhausted", "RateLimitError: 429 slow down"))?;
///
/// let counts = count_journal(&path, 0)?;
/// assert_eq!((counts.counts[0].label.as_str(), counts.counts[0].count), ("429 rate limited", 2));
/// assert_eq!(counts.corrupt_lines, 0);
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn count_journal(path: impl AsRef<Path>, since_ms: u64) -> io::Result<JournalCounts> {
    JournalCounts::read_from(BufReader::new(File::open(path)?), since_ms)
}

impl JournalCounts {
    /// Counts the journal lines of `reader`, as [`count_journal`] does from a file.
    ///
    /// # Errors
    ///
    /// As [`count_journal`].
    pub fn read_from(reader: impl BufRead, since_ms: u64) -> io::Result<Self> {
        count_lines(reader, since_ms, MAX_COUNT_BYTES)
    }
}

/// [`JournalCounts::read_from`] with a memory limit of `max_bytes` for the groups.
fn count_lines(reader: impl BufRead, since_ms: u64, max_bytes: usize) -> io::Result<JournalCounts> {
    let mut counter = Counter::default();
    let mut corrupt = Vec::new();
    let mut corrupt_lines = 0;
    read_lines(reader, |line, record| {
        match record {
            Ok(record) if record.time_ms >= since_ms => {
                counter.add(&record);
                if counter.bytes > max_bytes {
                    return Err(io::Error::new(
                        io::ErrorKind::OutOfMemory,
                        format!(
                            "the groups counted up to line {line} would take more than {} of memory ({} groups); \
                             count a shorter time window",
                            bytes_text(max_bytes),
                            counter.groups.len()
                        ),
                    ));
                }
            }
            Ok(_) => {}
            Err(error) => {
                corrupt_lines += 1;
                if corrupt.len() < MAX_CORRUPT_KEPT {
                    corrupt.push(CorruptLine { line, error });
                }
            }
        }
        Ok(())
    })?;
    Ok(JournalCounts { counts: counter.counts(), corrupt, corrupt_lines })
}

/// Reads every line of `reader`, giving `each` its number and its record or what is wrong with
/// it (blank lines give nothing); stops at the first error of `each`.
fn read_lines(
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

/// What groups records: event, op, name, kind and label.
type GroupKey = (Event, String, String, String, String);

/// The groups of records: their counts, first and last times, and the memory their keys take.
#[derive(Default)]
struct Counter {
    groups: HashMap<GroupKey, (usize, u64, u64)>,
    bytes: usize,
}

impl Counter {
    fn add(&mut self, record: &FailureRecord) {
        let key = (record.event, record.op.clone(), record.name.clone(), record.kind.clone(), record.label());
        let (count, first_ms, last_ms) = self.groups.entry(key).or_insert_with_key(|(_, op, name, kind, label)| {
            self.bytes = self.bytes.saturating_add(GROUP_COST + op.len() + name.len() + kind.len() + label.len());
            (0, record.time_ms, record.time_ms)
        });
        *count += 1;
        *first_ms = (*first_ms).min(record.time_ms);
        *last_ms = (*last_ms).max(record.time_ms);
    }

    /// The groups, most frequent first, then the most recent first, then by name.
    fn counts(self) -> Vec<Count> {
        let mut counts: Vec<Count> = self
            .groups
            .into_iter()
            .map(|((event, op, name, kind, label), (count, first_ms, last_ms))| Count {
                event,
                op,
                name,
                kind,
                label,
                count,
                first_ms,
                last_ms,
            })
            .collect();
        counts.sort_by(|a, b| {
            (b.count, b.last_ms).cmp(&(a.count, a.last_ms)).then_with(|| {
                (a.event, &a.op, &a.name, &a.kind, &a.label).cmp(&(b.event, &b.op, &b.name, &b.kind, &b.label))
            })
        });
        counts
    }
}

/// One line (without its line ending): a record, nothing (blank), or what is wrong with it.
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
            Some((what, column)) => format!("{} at column {column}", shorten(what, MAX_ERROR_CHARS)),
            None => shorten(&error, MAX_ERROR_CHARS).into_owned(),
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
            record("summarize", "refused", "RateLimitError: 429 Too Many Requests", 40),
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
                (Event::Failure, "summarize", "refused", "429 rate limited", 1, 40, 40),
                (Event::Failure, "exec", "exhausted", "503 unavailable", 1, 35, 35),
                (Event::Failure, "summarize", "exhausted", "503 unavailable", 1, 20, 20),
            ]
        );
        assert_eq!(contents.counts_since(0).iter().map(|c| c.count).sum::<usize>(), 7);
        assert!(contents.counts_since(51).is_empty());
    }

    #[test]
    fn an_over_long_line_is_corrupt_and_the_next_lines_are_read() {
        let mut text = vec![b' '; crate::util::lines::MAX_LINE_BYTES + 1];
        text.push(b'\n');
        text.extend_from_slice(lines(&[record("f", "exhausted", "x", 1)]).as_bytes());
        let contents = JournalContents::read_from(&text[..]).unwrap();
        assert_eq!(
            contents.corrupt[0].to_string(),
            "line 1: longer than 1 MiB (the limit for one line); it was skipped"
        );
        assert_eq!(contents.records.len(), 1);
    }

    #[test]
    fn values_quoted_in_errors_are_shortened() {
        let text = format!("{{\"time_ms\": \"{}\"}}\n", "9".repeat(10_000));
        let contents = JournalContents::read_from(text.as_bytes()).unwrap();
        let error = &contents.corrupt[0].error;
        assert!(error.starts_with("invalid type: string \"999"), "{error}");
        assert!(error.ends_with("… at column 10014"), "{error}");
        assert_eq!(error.chars().count(), MAX_ERROR_CHARS + "… at column 10014".chars().count());
    }

    #[test]
    fn counting_keeps_the_counts_and_the_first_corrupt_lines() {
        let records: Vec<FailureRecord> =
            (0..10).map(|time| record(if time % 2 == 0 { "f" } else { "g" }, "exhausted", "x", time)).collect();
        let text = format!("{}{}", lines(&records), "nope\n".repeat(MAX_CORRUPT_KEPT + 5));
        let counts = JournalCounts::read_from(text.as_bytes(), 3).unwrap();
        let contents = JournalContents::read_from(text.as_bytes()).unwrap();
        assert_eq!(counts.counts, contents.counts_since(3));
        assert_eq!((counts.corrupt.len(), counts.corrupt_lines), (MAX_CORRUPT_KEPT, MAX_CORRUPT_KEPT + 5));
        assert_eq!(counts.corrupt[0].line, 11);
    }

    #[test]
    fn counting_stops_at_the_memory_limit_with_a_clear_error() {
        let records: Vec<FailureRecord> =
            (0..100).map(|name| record(&format!("function_{name}"), "exhausted", "x", 1)).collect();
        let error = count_lines(lines(&records).as_bytes(), 0, 4096).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::OutOfMemory);
        assert_eq!(
            error.to_string(),
            "the groups counted up to line 19 would take more than 4 KiB of memory (19 groups); \
             count a shorter time window"
        );
        assert!(count_lines(lines(&records).as_bytes(), 2, 4096).unwrap().counts.is_empty());
    }
}
