//! The failure journal: every final failure (and, optionally, every retry) as one JSON line in a
//! file, for the query that turns it into "summarize: 429 rate limited x5 today".
//!
//! - [`Journal`] appends [`FailureRecord`]s to a file, one line each, whole even when many threads
//!   or processes write at once. A write that fails is logged once and never fails the call;
//!   [`Journal::flush`] reports it afterwards.
//! - [`FailureRecord`] is one line, as data: serde writes it and reads it back.
//!
//! The runtime writes the journal; `agentic journal FILE --since 24h` (the CLI) reads it, reporting
//! each corrupt line and skipping it, and prints the failures counted by name, kind and cause.
//!
//! # Examples
//!
//! ```
//! use agentic_runtime::observe::journal::{FailureRecord, Journal};
//! use agentic_runtime::{Runtime, ScriptedProvider, Scripted};
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> std::io::Result<()> {
//! let path = std::env::temp_dir().join(format!("agentic-doc-journal-mod-{}.jsonl", std::process::id()));
//! # let _ = std::fs::remove_file(&path);
//! let journal = Journal::open(&path)?;
//! let runtime = Runtime::new(ScriptedProvider::new([Scripted::http(401, "invalid api key")]));
//! if let Err(error) = runtime.exec("hello").await {
//!     let _ = journal.record_exec_error(&error); // a failed write is logged, never fatal
//! }
//!
//! let text = std::fs::read_to_string(&path)?;
//! let record: FailureRecord = serde_json::from_str(text.trim_end()).expect("one record");
//! assert_eq!((record.name.as_str(), record.kind.as_str(), record.status), ("exec", "permanent", Some(401)));
//! # std::fs::remove_file(&path)?;
//! # Ok(())
//! # }
//! ```

mod record;

pub use record::{AttemptRecord, Event, FailureRecord, now_ms};

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::answer::exec_error::ExecError;
use crate::decision::Decision;
use crate::util::append::{self, Append, Lost, Records};

/// A failure journal file, open for appending. Cloning is cheap; clones write to the same file.
///
/// Each [`record`](Journal::record) appends one JSON line with a single write on a file opened in
/// append mode, behind a lock: lines from threads of one process never interleave, and lines from
/// several processes appending to the same file land whole (POSIX append semantics on a local file
/// system). A record lands whole or not at all: one that a full disk cuts is taken back, or, when
/// it cannot be, the next record starts on a line of its own, so only the cut one is lost; the
/// same for a file that ends mid-line when it is opened (a writer crashed). A line cut short is
/// reported and skipped by its readers (`agentic journal`).
///
/// A record that cannot be written is never an exec's failure (the runtime ignores
/// [`record`](Journal::record)'s result), but it is kept: [`Journal::flush`] reports the first
/// failure and how many records were lost, for every clone (`agentic ask --journal` exits 1).
///
/// Writing is a blocking call of a few microseconds (no flush to disk is forced), fine to make
/// from async code after a call failed.
#[derive(Debug, Clone)]
pub struct Journal {
    shared: Arc<Shared>,
    retries: bool,
}

#[derive(Debug)]
struct Shared {
    path: PathBuf,
    file: Mutex<Records<Box<dyn Append>>>,
    /// The records that could not be written.
    lost: Lost,
}

impl Journal {
    /// Opens the journal at `path` for appending, creating the file if it does not exist (its
    /// directory must exist).
    ///
    /// # Errors
    ///
    /// If the file cannot be opened for appending; the error keeps its kind and its
    /// message names the path, e.g. ``cannot open the failure journal `/var/log/x/journal.jsonl`:
    /// No such file or directory (os error 2)``.
    pub fn open(path: impl AsRef<Path>) -> io::Result<Self> {
        let path = path.as_ref();
        Ok(Self::with_records(path, append::open(path, "the failure journal")?))
    }

    /// A journal that appends `records`, named `path`.
    pub(crate) fn with_records(path: &Path, records: Records<Box<dyn Append>>) -> Self {
        let file = Mutex::new(records);
        Self { shared: Arc::new(Shared { path: path.to_owned(), file, lost: Lost::default() }), retries: false }
    }

    /// Whether retry records ([`Event::Retry`]) are written too; when not, [`record`](Journal::record)
    /// drops them. Set it before cloning: clones made earlier keep their setting.
    ///
    /// # Default
    /// `false`: only final failures are written.
    pub fn with_retries(mut self, retries: bool) -> Self {
        self.retries = retries;
        self
    }

    /// Whether retry records are written.
    pub fn retries(&self) -> bool {
        self.retries
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.shared.path
    }

    /// Appends `record` as one line. A retry record is dropped (and `Ok` returned) unless the
    /// journal was made [`with_retries`](Journal::with_retries).
    ///
    /// # Errors
    ///
    /// The write's error (the record was then not written, or only its start, on a line of its
    /// own). The first failed write of a journal (and its clones) is also logged with
    /// `tracing::warn!`; later ones only return their error. Every failure is kept for
    /// [`Journal::flush`], so callers may ignore the result; it never panics.
    pub fn record(&self, record: &FailureRecord) -> io::Result<()> {
        if record.event == Event::Retry && !self.retries {
            return Ok(());
        }
        let result = serde_json::to_vec(record).map_err(io::Error::other).and_then(|mut line| {
            line.push(b'\n');
            let mut file = self.shared.file.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            file.append(&line)
        });
        if let Err(error) = &result {
            if self.shared.lost.note(error) {
                tracing::warn!(
                    path = %self.shared.path.display(),
                    %error,
                    "cannot write to the failure journal; failures are not recorded while this lasts \
                     (logged once)"
                );
            }
        }
        result
    }

    /// Flushes the file, and reports whether every record since the journal was opened was
    /// written, by this handle or a clone (the runtime's included): `Err` with the first failure's
    /// kind, naming the file, the cause and how many records were lost (``cannot write to the
    /// failure journal `j.jsonl`: No space left on device (os error 28) (2 records lost)``), else
    /// the flush's own result. A lost record stays lost: every later call reports it. Call it when
    /// the journal's work is done (the end of a program), where a record that is missing must be
    /// known.
    ///
    /// # Errors
    ///
    /// As above.
    pub fn flush(&self) -> io::Result<()> {
        let what = format!("to the failure journal `{}`", self.shared.path.display());
        self.shared.lost.check(&what, "record")?;
        self.shared.file.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).flush()
    }

    /// Records a failed `exec`: [`FailureRecord::from_exec_error`], made now.
    ///
    /// # Errors
    ///
    /// As [`record`](Journal::record).
    pub fn record_exec_error(&self, error: &ExecError) -> io::Result<()> {
        self.record(&FailureRecord::from_exec_error(error))
    }

    /// Records `decision` of the function `name` (`None` for a plain `exec`) as a retry
    /// ([`FailureRecord::retry`]) when the journal writes retries and the decision is a retry;
    /// otherwise does nothing. Made to be called from an observer that sees every decision.
    ///
    /// # Errors
    ///
    /// As [`record`](Journal::record).
    pub fn record_decision(&self, name: Option<&str>, decision: &Decision) -> io::Result<()> {
        if !self.retries || !FailureRecord::is_retry(decision) {
            return Ok(());
        }
        self.record(&FailureRecord::retry(name, decision))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::append::tests::FullDisk;

    fn record(name: &str) -> FailureRecord {
        FailureRecord::new(name, "exhausted", "ServiceUnavailableError: 503").with_time_ms(1)
    }

    fn line_of(name: &str) -> usize {
        serde_json::to_vec(&record(name)).unwrap().len() + 1
    }

    /// Each line of `text`: the name of the record it holds, or `None` when it is no record.
    fn names(text: &str) -> Vec<Option<String>> {
        text.lines().map(|line| serde_json::from_str::<FailureRecord>(line).ok().map(|record| record.name)).collect()
    }

    /// The disk fills in the middle of `b`'s record; `c` comes once there is room again.
    fn fill_during_b(undo: bool) -> (FullDisk, io::Error) {
        let disk = FullDisk::new(line_of("a") + 20, undo);
        let journal = Journal::with_records(Path::new("journal.jsonl"), Records::new(Box::new(disk.clone()), false));
        journal.record(&record("a")).unwrap();
        let error = journal.record(&record("b")).unwrap_err();
        disk.make_room(usize::MAX);
        journal.record(&record("c")).unwrap();
        (disk, error)
    }

    /// The runtime ignores `record`'s result (a journal never fails an exec): `flush` still says a
    /// record was lost, on every clone.
    #[tokio::test(start_paused = true)]
    async fn a_record_the_runtime_could_not_write_is_reported_by_flush() {
        use crate::provider::{Scripted, ScriptedProvider};
        let disk = FullDisk::new(0, true);
        let journal = Journal::with_records(Path::new("j.jsonl"), Records::new(Box::new(disk.clone()), false));
        let runtime = crate::Runtime::builder(ScriptedProvider::new([Scripted::http(401, "invalid api key")]))
            .with_journal(journal.clone().with_retries(true))
            .build()
            .unwrap();
        assert!(runtime.exec("hello").await.is_err(), "the exec fails as it would without a journal");
        let error = journal.flush().unwrap_err();
        assert_eq!(error.raw_os_error(), None, "a new error, of the first failure's kind");
        assert_eq!(error.kind(), io::Error::from_raw_os_error(28).kind());
        let cause = io::Error::from_raw_os_error(28).to_string();
        assert_eq!(
            error.to_string(),
            format!("cannot write to the failure journal `j.jsonl`: {cause} (1 record lost)")
        );
        let fine = Journal::with_records(Path::new("k.jsonl"), Records::new(Box::new(Vec::new()), false));
        fine.record(&record("a")).unwrap();
        fine.flush().unwrap();
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_full_device_is_reported_by_flush() {
        let journal = Journal::open("/dev/full").unwrap();
        assert!(journal.record(&record("a")).is_err());
        let _ = journal.record(&record("b"));
        assert_eq!(
            journal.clone().flush().unwrap_err().to_string(),
            "cannot write to the failure journal `/dev/full`: No space left on device (os error 28) (2 records lost)"
        );
    }

    #[test]
    fn a_record_cut_by_a_full_disk_is_taken_back() {
        let (disk, error) = fill_during_b(true);
        assert_eq!(error.raw_os_error(), Some(28), "ENOSPC: {error}");
        assert_eq!(names(&disk.text()), [Some("a".to_owned()), Some("c".to_owned())], "{}", disk.text());
    }

    #[test]
    fn a_cut_that_stays_is_ended_so_the_next_record_is_read() {
        let (disk, _) = fill_during_b(false);
        let text = disk.text();
        assert_eq!(names(&text), [Some("a".to_owned()), None, Some("c".to_owned())], "c was not glued to the cut b");
        let cut = text.lines().nth(1).unwrap();
        let b = serde_json::to_string(&record("b")).unwrap();
        assert!(b.starts_with(cut) && cut.len() < b.len(), "line 2 is the start of b's record: {text}");
    }

    #[test]
    fn open_names_the_path_in_its_error() {
        let error = Journal::open("/no/such/dir/journal.jsonl").unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::NotFound);
        assert_eq!(
            error.to_string(),
            "cannot open the failure journal `/no/such/dir/journal.jsonl`: No such file or directory (os error 2)"
        );
    }
}
