//! A file in the system's temp directory for one test, removed when dropped, for the tests of every
//! crate that reads or writes files.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A path no other test of this run uses (the test binary, the process, a counter and `name`).
pub struct TempFile(pub PathBuf);

impl TempFile {
    /// The path, with no file behind it yet.
    pub fn new(name: &str) -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let unique = NEXT.fetch_add(1, Ordering::Relaxed);
        let file = format!("{}-{}-{unique}-{name}", test_binary(), std::process::id());
        let path = std::env::temp_dir().join(file);
        let _ = std::fs::remove_file(&path);
        Self(path)
    }

    /// A file holding `contents`.
    pub fn with_contents(name: &str, contents: &str) -> Self {
        let file = Self::new(name);
        std::fs::write(&file.0, contents).expect("the test can write to the temp directory");
        file
    }

    /// The path.
    pub fn path(&self) -> &Path {
        &self.0
    }

    /// The path as a command-line argument.
    pub fn arg(&self) -> &str {
        self.0.to_str().expect("the temp directory's path is UTF-8")
    }

    /// Appends `bytes` as they are (creating the file if needed).
    pub fn append_raw(&self, bytes: &[u8]) {
        let mut file = std::fs::OpenOptions::new().append(true).create(true).open(&self.0).expect("the file opens");
        file.write_all(bytes).expect("the test can write to the temp directory");
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The running test's binary (`journal-1f2e..`), which names the package's test too: compiled here,
/// `CARGO_PKG_NAME` would name this crate instead of the test's.
fn test_binary() -> String {
    let exe = std::env::current_exe().ok();
    let stem = exe.as_deref().and_then(Path::file_stem).map(|stem| stem.to_string_lossy().into_owned());
    stem.unwrap_or_else(|| "test".to_owned())
}
