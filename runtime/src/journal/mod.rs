//! The failure journal: every final failure (and, optionally, every retry) as one JSON line in a
//! file, and the query that turns it into "summarize: 429 rate limited x5 today".
//!
//! - [`Journal`] appends [`FailureRecord`]s to a file, one line each, whole even when many threads
//!   or processes write at once. A write that fails is logged once and never fails the call.
//! - [`read_journal`] reads them back into [`JournalContents`], reporting each corrupt line with its
//!   number and skipping it.
//! - [`JournalContents::counts_since`] counts failures by name, kind and [label](failure_label).
//!
//! `agentic journal FILE --since 24h` prints the counts as a table.
//!
//! # Examples
//!
//! ```
//! use agentic_runtime::journal::{FailureRecord, Journal, now_ms, read_journal};
//! use agentic_runtime::{Runtime, ScriptedProvider, Step};
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> std::io::Result<()> {
//! let path = std::env::temp_dir().join(format!("agentic-doc-journal-mod-{}.jsonl", std::process::id()));
//! # let _ = std::fs::remove_file(&path);
//! let journal = Journal::open(&path)?;
//! let runtime = Runtime::new(ScriptedProvider::new([Step::http(401, "invalid api key")]));
//! if let Err(error) = runtime.exec("hello").await {
//!     let _ = journal.record_exec_error(&error); // a failed write is logged, never fatal
//! }
//!
//! let day_ago = now_ms() - 24 * 3600 * 1000;
//! let counts = read_journal(&path)?.counts_since(day_ago);
//! assert_eq!((counts[0].name.as_str(), counts[0].label.as_str(), counts[0].count), ("exec", "401 unauthorized", 1));
//! # std::fs::remove_file(&path)?;
//! # Ok(())
//! # }
//! ```

mod label;
mod read;
mod record;

pub use label::{MAX_TEXT_LABEL, failure_label};
pub use read::{
    CorruptLine, Count, JournalContents, JournalCounts, MAX_CORRUPT_KEPT, MAX_COUNT_BYTES, count_journal, read_journal,
};
pub use record::{AttemptRecord, Event, FailureRecord, now_ms};

use std::fs::{File, OpenOptions};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::exec_error::ExecError;
use crate::report::Decision;

/// A failure journal file, open for appending. Cloning is cheap; clones write to the same file.
///
/// Each [`record`](Journal::record) appends one JSON line with a single write on a file opened in
/// append mode, behind a lock: lines from threads of one process never interleave, and lines from
/// several processes appending to the same file land whole (POSIX append semantics on a local file
/// system). A line cut short by a crash is reported and skipped by [`read_journal`].
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
    file: Mutex<File>,
    /// Whether a failed write was logged already.
    warned: AtomicBool,
}

impl Journal {
    /// Opens the journal at `path` for appending, creating the file if it does not exist (its
    /// directory must exist).
    pub fn open(path: impl AsRef<Path>) -> io::Result<Self> {
        let path = path.as_ref();
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Self {
            shared: Arc::new(Shared { path: path.to_owned(), file: Mutex::new(file), warned: AtomicBool::new(false) }),
            retries: false,
        })
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
    /// The write's error. The first failed write of a journal (and its clones) is also logged with
    /// `tracing::warn!`; later ones only return their error. It never panics, so callers may ignore
    /// the result.
    pub fn record(&self, record: &FailureRecord) -> io::Result<()> {
        if record.event == Event::Retry && !self.retries {
            return Ok(());
        }
        let result = serde_json::to_vec(record).map_err(io::Error::other).and_then(|mut line| {
            line.push(b'\n');
            let mut file = self.shared.file.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            file.write_all(&line)
        });
        if let Err(error) = &result {
            if !self.shared.warned.swap(true, Ordering::Relaxed) {
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
