//! Counting a journal's failures by cause since a time, one line at a time, keeping only the
//! counts: what `agentic journal` prints.
//!
//! Records are grouped by event, op, name, kind and [label](super::label), most frequent first
//! (then the most recent first, then by name). Final failures and retries are separate groups
//! ([`Count::event`]).

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::Path;

use agentic_runtime::observe::journal::{Event, FailureRecord};
use serde::Serialize;

use super::label::failure_label;
use super::read::{CorruptLine, read_lines};
use crate::text::bytes_text;

/// How often one cause made calls fail (or retry) since a time: one row of `agentic journal`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Count {
    /// Final failures or retries (they are never counted together).
    pub(crate) event: Event,
    /// What failed: `"exec"`, or another operation's name.
    pub(crate) op: String,
    /// The function's name, or `"exec"`.
    pub(crate) name: String,
    /// Why it gave up (`"exhausted"`, `"permanent"`, ...), or `"retry"`.
    pub(crate) kind: String,
    /// The short summary of the last error ([`failure_label`]).
    pub(crate) label: String,
    /// How many records.
    pub(crate) count: usize,
    /// The time of the earliest, in milliseconds since the Unix epoch.
    pub(crate) first_ms: u64,
    /// The time of the latest, in milliseconds since the Unix epoch.
    pub(crate) last_ms: u64,
}

/// How many corrupt lines [`JournalCounts`] keeps with what is wrong with them; the others are
/// counted only. A hundred show what is wrong with a file; a million would be a million lines of
/// noise and memory.
pub(crate) const MAX_CORRUPT_KEPT: usize = 100;

/// How much memory [`count_journal`] spends on its groups, at most: 64 MiB.
///
/// A group costs about 200 bytes and its op, name, kind and label; a journal has one group per
/// function and cause, a few hundred at most, so 64 MiB is room for a hundred thousand times
/// that. Only input made to be hostile (every line a new function name a megabyte long) reaches
/// it; then counting stops with an error instead of taking all the memory there is.
pub(crate) const MAX_COUNT_BYTES: usize = 64 * 1024 * 1024;

/// The memory one group takes besides its strings.
const GROUP_COST: usize = 200;

/// What [`count_journal`] gives: the counts, and the corrupt lines skipped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct JournalCounts {
    /// The groups, most frequent first.
    pub(crate) counts: Vec<Count>,
    /// The first [`MAX_CORRUPT_KEPT`] corrupt lines, in file order.
    pub(crate) corrupt: Vec<CorruptLine>,
    /// How many lines were corrupt, all of them.
    pub(crate) corrupt_lines: usize,
}

/// Counts the records of the journal at `path` made at or after `since_ms` (milliseconds since
/// the Unix epoch), reading one line at a time (as [`read_lines`] does) and keeping only the
/// counts and the first [`MAX_CORRUPT_KEPT`] corrupt lines. Memory stays bounded whatever the
/// file holds: one line, up to [`MAX_COUNT_BYTES`] of groups, and the corrupt lines kept.
///
/// # Errors
///
/// When the file cannot be opened or read, or, with an error of kind
/// [`io::ErrorKind::OutOfMemory`], when its groups would take more than [`MAX_COUNT_BYTES`].
pub(crate) fn count_journal(path: impl AsRef<Path>, since_ms: u64) -> io::Result<JournalCounts> {
    count_lines(BufReader::new(File::open(path)?), since_ms, MAX_COUNT_BYTES)
}

/// The counts of the journal lines of `reader`, as [`count_journal`] makes them, with a memory
/// limit of `max_bytes` for the groups.
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
        let label = failure_label(&record.kind, &record.last_error, record.status, record.code.as_deref());
        let key = (record.event, record.op.clone(), record.name.clone(), record.kind.clone(), label);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn record(name: &str, kind: &str, last_error: &str, time_ms: u64) -> FailureRecord {
        FailureRecord::new(name, kind, last_error).with_time_ms(time_ms)
    }

    fn lines(records: &[FailureRecord]) -> String {
        records.iter().map(|record| serde_json::to_string(record).unwrap() + "\n").collect()
    }

    fn counts(records: &[FailureRecord], since_ms: u64) -> Vec<Count> {
        count_lines(lines(records).as_bytes(), since_ms, MAX_COUNT_BYTES).unwrap().counts
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
        let got: Vec<_> = counts(&records, 10)
            .into_iter()
            .map(|c| (c.event, c.name, c.kind, c.label, c.count, c.first_ms, c.last_ms))
            .collect();
        let row = |event, name: &str, kind: &str, label: &str, count, first_ms, last_ms| {
            (event, name.to_owned(), kind.to_owned(), label.to_owned(), count, first_ms, last_ms)
        };
        assert_eq!(
            got,
            [
                row(Event::Failure, "summarize", "exhausted", "429 rate limited", 2, 10, 30),
                row(Event::Retry, "summarize", "retry", "429 rate limited", 1, 50, 50),
                row(Event::Failure, "summarize", "refused", "429 rate limited", 1, 40, 40),
                row(Event::Failure, "exec", "exhausted", "503 unavailable", 1, 35, 35),
                row(Event::Failure, "summarize", "exhausted", "503 unavailable", 1, 20, 20),
            ]
        );
        assert_eq!(counts(&records, 0).iter().map(|c| c.count).sum::<usize>(), 7);
        assert!(counts(&records, 51).is_empty());
    }

    #[test]
    fn records_of_kind_budget_count_with_those_of_kind_refused() {
        let older = r#"{"time_ms":7,"name":"f","kind":"budget","last_error":"TimeoutError: no reply"}"#;
        let text = format!("{older}\n{}", lines(&[record("f", "refused", "TimeoutError: no reply", 9)]));
        let counts = count_lines(text.as_bytes(), 0, MAX_COUNT_BYTES).unwrap().counts;
        let got: Vec<(&str, &str, usize, u64, u64)> =
            counts.iter().map(|c| (c.kind.as_str(), c.label.as_str(), c.count, c.first_ms, c.last_ms)).collect();
        assert_eq!(got, [("refused", "timeout", 2, 7, 9)]);
    }

    #[test]
    fn counting_keeps_the_counts_and_the_first_corrupt_lines() {
        let records: Vec<FailureRecord> =
            (0..10).map(|time| record(if time % 2 == 0 { "f" } else { "g" }, "exhausted", "x", time)).collect();
        let text = format!("{}{}", lines(&records), "nope\n".repeat(MAX_CORRUPT_KEPT + 5));
        let counted = count_lines(text.as_bytes(), 3, MAX_COUNT_BYTES).unwrap();
        let got: Vec<(&str, usize, u64, u64)> =
            counted.counts.iter().map(|c| (c.name.as_str(), c.count, c.first_ms, c.last_ms)).collect();
        assert_eq!(got, [("g", 4, 3, 9), ("f", 3, 4, 8)]);
        assert_eq!((counted.corrupt.len(), counted.corrupt_lines), (MAX_CORRUPT_KEPT, MAX_CORRUPT_KEPT + 5));
        assert_eq!(counted.corrupt[0].line, 11);
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

    #[test]
    fn a_missing_file_is_an_error_of_its_kind() {
        let path = std::env::temp_dir().join(format!("agentic-no-journal-{}.jsonl", std::process::id()));
        assert_eq!(count_journal(&path, 0).unwrap_err().kind(), io::ErrorKind::NotFound);
    }
}
