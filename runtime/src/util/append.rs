//! Appending records, one line each, so that each lands whole or not at all: the journal's and the
//! trace's files.
//!
//! A write can stop part way: a full disk (`ENOSPC`) takes the first bytes of a record and refuses
//! the rest. Left there, the cut record would glue itself to the next one, and a reader would lose
//! both. So a record that could not be written whole is taken back (the file is cut back to where
//! it was) when nothing was written after it; when that is not possible (a pipe, another process
//! appended meanwhile, the truncation failed) the next record starts with a newline, so that only
//! the cut one is lost. A file that already ends mid-line when it is opened (a writer crashed) gets
//! the same newline before its first record.
//!
//! A record that is lost never fails the caller's work (a trace line or a journal record is not
//! worth an exec), but it is not forgotten either: [`Lost`] keeps the first failure and the count,
//! for the writer's `flush` to report, as Go's `bufio.Writer` keeps its first error for `Flush`.

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, Read as _, Seek as _, SeekFrom, Write};
use std::path::Path;
use std::sync::{Mutex, PoisonError};

/// Where records go: a file opened for appending, or any writer.
pub(crate) trait Append: Send {
    /// Writes some of `bytes`, as [`Write::write`].
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize>;

    /// Flushes what was written, as [`Write::flush`].
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }

    /// Takes back the last `written` bytes, which this handle's last writes put at the end; whether
    /// it could (nothing was written after them, and the target can be cut back).
    fn take_back(&mut self, _written: u64) -> io::Result<bool> {
        Ok(false)
    }
}

impl<T: Append + ?Sized> Append for Box<T> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        (**self).write(bytes)
    }

    fn flush(&mut self) -> io::Result<()> {
        (**self).flush()
    }

    fn take_back(&mut self, written: u64) -> io::Result<bool> {
        (**self).take_back(written)
    }
}

impl Append for File {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        Write::write(self, bytes)
    }

    fn take_back(&mut self, written: u64) -> io::Result<bool> {
        // In append mode the offset after a write is the end of what it wrote; if the file is no
        // longer than that, nobody appended since.
        let end = self.stream_position()?;
        if self.metadata()?.len() != end || written > end {
            return Ok(false);
        }
        self.set_len(end - written)?;
        Ok(true)
    }
}

impl Append for Vec<u8> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn take_back(&mut self, written: u64) -> io::Result<bool> {
        match usize::try_from(written).ok().and_then(|written| self.len().checked_sub(written)) {
            Some(kept) => {
                self.truncate(kept);
                Ok(true)
            }
            None => Ok(false),
        }
    }
}

/// Any writer as an [`Append`]: flushed after every record, never taken back.
pub(crate) struct Writer(pub(crate) Box<dyn Write + Send>);

impl Append for Writer {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.write(bytes)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

/// Opens `path` for appending, creating it if needed, as the records of `what` (for the error:
/// ``cannot open the failure journal `PATH`: ...``, with the error's kind kept), and whether it ends
/// mid-line. It is opened readable too, to see its last byte; a file that may only be written is
/// opened for appending alone, and taken to end a line.
pub(crate) fn open(path: &Path, what: &str) -> io::Result<Records<Box<dyn Append>>> {
    let append = || OpenOptions::new().create(true).append(true).clone();
    let opened = match append().read(true).open(path) {
        Ok(mut file) => Ok((ends_mid_line(&mut file), file)),
        Err(error) if error.kind() == io::ErrorKind::PermissionDenied => append().open(path).map(|file| (false, file)),
        Err(error) => Err(error),
    };
    match opened {
        Ok((cut, file)) => Ok(Records::new(Box::new(file), cut)),
        Err(error) => Err(io::Error::new(error.kind(), format!("cannot open {what} `{}`: {error}", path.display()))),
    }
}

/// Whether `file` is not empty and its last byte is not a newline. A file that cannot be read
/// (a device, a pipe) counts as ending a line.
pub(crate) fn ends_mid_line(file: &mut File) -> bool {
    let mut last = [0u8];
    let read = file.seek(SeekFrom::End(-1)).and_then(|_| file.read_exact(&mut last));
    read.is_ok() && last[0] != b'\n'
}

/// A target and whether what was last written to it is a cut record, which the next record must
/// not be glued to.
pub(crate) struct Records<T> {
    target: T,
    cut: bool,
}

impl<T> fmt::Debug for Records<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Records").field("cut", &self.cut).finish_non_exhaustive()
    }
}

impl<T: Append> Records<T> {
    /// Records appended to `target`; `cut` when it ends mid-line already.
    pub(crate) fn new(target: T, cut: bool) -> Self {
        Self { target, cut }
    }

    /// Flushes the target.
    pub(crate) fn flush(&mut self) -> io::Result<()> {
        self.target.flush()
    }

    /// Appends `line` (ending with `\n`) whole, or gives the error that stopped it after taking
    /// back what it wrote (or, when it cannot, marking the target cut).
    pub(crate) fn append(&mut self, line: &[u8]) -> io::Result<()> {
        let after_cut;
        let bytes = if self.cut {
            after_cut = [b"\n", line].concat();
            &after_cut[..]
        } else {
            line
        };
        let mut written = 0;
        let error = loop {
            if written == bytes.len() {
                self.cut = false;
                return self.target.flush();
            }
            match self.target.write(&bytes[written..]) {
                Ok(0) => break io::Error::from(io::ErrorKind::WriteZero),
                Ok(more) => written += more,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) => break error,
            }
        };
        if written > 0 && !self.target.take_back(written as u64).unwrap_or(false) {
            self.cut = true;
        }
        Err(error)
    }
}

/// The records a writer lost: the first failure (its kind and text) and how many, kept until the
/// writer is dropped.
#[derive(Debug, Default)]
pub(crate) struct Lost(Mutex<Option<FirstLoss>>);

#[derive(Debug)]
struct FirstLoss {
    kind: io::ErrorKind,
    text: String,
    count: u64,
}

impl Lost {
    /// Counts one record lost to `error`; true when it is the first (the caller logs that one).
    pub(crate) fn note(&self, error: &io::Error) -> bool {
        let mut lost = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        match &mut *lost {
            Some(first) => {
                first.count += 1;
                false
            }
            None => {
                *lost = Some(FirstLoss { kind: error.kind(), text: error.to_string(), count: 1 });
                true
            }
        }
    }

    /// `Ok` when no record was lost; else an error of the first failure's kind saying what was
    /// being written (`cannot write {what}`), why, and how many `unit`s (`line`, `record`) were lost.
    pub(crate) fn check(&self, what: &str, unit: &str) -> io::Result<()> {
        let lost = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(FirstLoss { kind, text, count }) = &*lost else { return Ok(()) };
        let plural = if *count == 1 { "" } else { "s" };
        Err(io::Error::new(*kind, format!("cannot write {what}: {text} ({count} {unit}{plural} lost)")))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    /// A disk that holds `room` more bytes, then fails with `ENOSPC`, cutting the write that
    /// fills it; `undo` says whether it can take bytes back. The bytes are shared with the test.
    #[derive(Clone)]
    pub(crate) struct FullDisk {
        pub(crate) bytes: Arc<Mutex<Vec<u8>>>,
        pub(crate) room: Arc<Mutex<usize>>,
        pub(crate) undo: bool,
    }

    impl FullDisk {
        pub(crate) fn new(room: usize, undo: bool) -> Self {
            Self { bytes: Arc::default(), room: Arc::new(Mutex::new(room)), undo }
        }

        pub(crate) fn text(&self) -> String {
            String::from_utf8(self.bytes.lock().unwrap().clone()).unwrap()
        }

        pub(crate) fn make_room(&self, room: usize) {
            *self.room.lock().unwrap() = room;
        }
    }

    impl Append for FullDisk {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            let mut room = self.room.lock().unwrap();
            if *room == 0 {
                return Err(io::Error::from_raw_os_error(28));
            }
            let taken = bytes.len().min(*room);
            *room -= taken;
            self.bytes.lock().unwrap().extend_from_slice(&bytes[..taken]);
            Ok(taken)
        }

        fn take_back(&mut self, written: u64) -> io::Result<bool> {
            if !self.undo {
                return Ok(false);
            }
            let mut bytes = self.bytes.lock().unwrap();
            let kept = bytes.len() - written as usize;
            bytes.truncate(kept);
            *self.room.lock().unwrap() += written as usize;
            Ok(true)
        }
    }

    #[test]
    fn a_cut_record_is_taken_back_and_the_next_lands_whole() {
        let disk = FullDisk::new(10, true);
        let mut records = Records::new(disk.clone(), false);
        records.append(b"first\n").unwrap();
        let error = records.append(b"second record\n").unwrap_err();
        assert_eq!(error.raw_os_error(), Some(28));
        assert_eq!(disk.text(), "first\n", "the cut record was taken back");
        disk.make_room(100);
        records.append(b"third\n").unwrap();
        assert_eq!(disk.text(), "first\nthird\n");
    }

    #[test]
    fn a_cut_that_cannot_be_taken_back_is_ended_by_the_next_record() {
        let disk = FullDisk::new(10, false);
        let mut records = Records::new(disk.clone(), false);
        records.append(b"first\n").unwrap();
        records.append(b"second record\n").unwrap_err();
        records.append(b"refused\n").unwrap_err(); // no room at all: nothing written, still cut
        disk.make_room(100);
        records.append(b"third\n").unwrap();
        assert_eq!(disk.text(), "first\nseco\nthird\n", "only the cut record is lost");
        records.append(b"fourth\n").unwrap();
        assert_eq!(disk.text(), "first\nseco\nthird\nfourth\n");
    }

    #[test]
    fn a_file_that_ends_mid_line_is_seen_so() {
        let path = std::env::temp_dir().join(format!("agentic-append-{}.jsonl", fastrand::u64(..)));
        std::fs::write(&path, b"whole\ncut").unwrap();
        let open = || std::fs::OpenOptions::new().read(true).append(true).open(&path).unwrap();
        assert!(ends_mid_line(&mut open()));
        let mut records = Records::new(open(), true);
        records.append(b"next\n").unwrap();
        assert!(!ends_mid_line(&mut open()));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "whole\ncut\nnext\n");
        let mut file = open();
        // A partial write of ours, taken back: the file is as it was.
        Append::write(&mut file, b"half").unwrap();
        assert!(file.take_back(4).unwrap());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "whole\ncut\nnext\n");
        std::fs::remove_file(&path).unwrap();
        assert!(!ends_mid_line(&mut tempfile_empty()));
    }

    #[cfg(unix)]
    #[test]
    fn a_file_that_may_only_be_written_opens_for_appending() {
        use std::os::unix::fs::PermissionsExt as _;
        let path = std::env::temp_dir().join(format!("agentic-append-wo-{}.jsonl", fastrand::u64(..)));
        std::fs::write(&path, b"cut").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o200)).unwrap();
        let appended = open(&path, "the test file").and_then(|mut records| records.append(b"next\n"));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        appended.unwrap();
        // Not readable (unless the tests run as root): its cut last line cannot be seen.
        assert!(text == "cutnext\n" || text == "cut\nnext\n", "{text:?}");
        let error = open(Path::new("/no/such/dir/x.jsonl"), "the test file").unwrap_err();
        assert_eq!(
            error.to_string(),
            "cannot open the test file `/no/such/dir/x.jsonl`: No such file or directory (os error 2)"
        );
    }

    #[test]
    fn the_first_loss_is_kept_with_the_count() {
        let lost = Lost::default();
        lost.check("the test file", "line").unwrap();
        assert!(lost.note(&io::Error::from_raw_os_error(28)));
        let one = lost.check("the test file", "line").unwrap_err();
        assert!(!lost.note(&io::Error::other("later, and not the one reported")));
        let two = lost.check("the test file", "line").unwrap_err();
        assert_eq!(one.kind(), io::Error::from_raw_os_error(28).kind());
        let cause = io::Error::from_raw_os_error(28).to_string();
        assert_eq!(one.to_string(), format!("cannot write the test file: {cause} (1 line lost)"));
        assert_eq!(two.to_string(), format!("cannot write the test file: {cause} (2 lines lost)"));
    }

    fn tempfile_empty() -> File {
        let path = std::env::temp_dir().join(format!("agentic-append-empty-{}.jsonl", fastrand::u64(..)));
        let file = std::fs::OpenOptions::new().read(true).append(true).create(true).open(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        file
    }
}
