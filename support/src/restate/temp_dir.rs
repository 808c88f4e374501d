//! A directory in the system's temp directory, removed with its contents when dropped.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use super::error::HarnessError;

pub(crate) struct TempDir(PathBuf);

impl TempDir {
    /// A new, empty directory `agentic-restate-<what>-<pid>-<n>`.
    pub(crate) fn new(what: &str) -> Result<Self, HarnessError> {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let unique = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("agentic-restate-{what}-{}-{unique}", std::process::id()));
        // A directory left by a killed run of the same pid is stale.
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir(&path)
            .map_err(|source| HarnessError::Io { doing: format!("creating {}", path.display()), source })?;
        Ok(Self(path))
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The last `lines` lines of the file at `path` (of its last 64 KiB at most), or a note saying why
/// there are none.
pub(crate) fn tail(path: &Path, lines: usize) -> String {
    use std::io::{Read as _, Seek as _, SeekFrom};
    const WINDOW: u64 = 64 * 1024;
    let read = || -> std::io::Result<String> {
        let mut file = std::fs::File::open(path)?;
        let length = file.metadata()?.len();
        file.seek(SeekFrom::Start(length.saturating_sub(WINDOW)))?;
        let mut bytes = Vec::new();
        file.take(WINDOW).read_to_end(&mut bytes)?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    };
    match read() {
        Ok(text) => {
            let all: Vec<&str> = text.lines().collect();
            all[all.len().saturating_sub(lines)..].join("\n")
        }
        Err(error) => format!("({} could not be read: {error})", path.display()),
    }
}
