//! What the test server saw: the calls it got, the cancels, the idempotency keys, kept in memory
//! for a server in the test's process and appended to a file for one in a child process (which may
//! exit before the test reads it).

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::watch;

/// How long [`Record::wait_for`] waits for an event before it gives up: 10 s. The events it waits
/// for follow a message the test has already sent, on loopback or a pipe; 10 s is generous on a
/// loaded CI machine and still ends a broken test.
pub const EVENT_WAIT: Duration = Duration::from_secs(10);

/// The events of one server, in order: `call NAME`, `cancelled NAME`, `key KEY`.
pub struct Record {
    events: Mutex<Vec<String>>,
    changed: watch::Sender<usize>,
    file: Option<PathBuf>,
}

impl Record {
    /// A record kept in memory and, with `file`, appended to it line by line.
    pub fn new(file: Option<PathBuf>) -> Self {
        Self { events: Mutex::new(Vec::new()), changed: watch::Sender::new(0), file }
    }

    /// Notes `event`; the line is in the file before this returns.
    pub fn push(&self, event: String) {
        let count = {
            // Under the lock, and in one write: two calls at once would interleave their pieces.
            let mut events = self.events.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            if let Some(path) = &self.file {
                let mut file =
                    std::fs::OpenOptions::new().append(true).create(true).open(path).expect("the record opens");
                file.write_all(format!("{event}\n").as_bytes()).expect("the record is writable");
            }
            events.push(event);
            events.len()
        };
        self.changed.send_replace(count);
    }

    /// The events so far.
    pub fn events(&self) -> Vec<String> {
        self.events.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
    }

    /// How many events are `event`.
    pub fn count(&self, event: &str) -> usize {
        self.events().iter().filter(|seen| *seen == event).count()
    }

    /// Waits until `event` has been seen `times` times, at most [`EVENT_WAIT`]; returns how many
    /// times it was seen.
    pub async fn wait_for(&self, event: &str, times: usize) -> usize {
        let mut changed = self.changed.subscribe();
        let seen = changed.wait_for(|_| self.count(event) >= times);
        let _ = tokio::time::timeout(EVENT_WAIT, seen).await;
        self.count(event)
    }
}

/// The events a server in a child process appended to `file` (none if it wrote nothing).
pub fn read_file(file: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(file).map(|text| text.lines().map(str::to_owned).collect()).unwrap_or_default()
}
