//! A `tracing` writer that keeps what it is given, for tests that assert what was logged.
//!
//! [`capture`] sets it as the current thread's subscriber. It also keeps one more dispatcher
//! alive for the whole process, because `tracing` caches per call site whether anyone wants its
//! events: while exactly one dispatcher exists, a call site first reached on another thread
//! (another test, with no subscriber) asks only that thread's default, hears "never", and keeps
//! that answer, so this thread's subscriber would miss the call site's lines for good.

use std::io::Write;
use std::sync::{Arc, LazyLock, Mutex};

use tracing::Dispatch;
use tracing::subscriber::DefaultGuard;

/// What `tracing` wrote; clones share one buffer.
#[derive(Clone, Default)]
pub struct Captured(pub Arc<Mutex<Vec<u8>>>);

impl Captured {
    /// Everything written so far, as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A dispatcher that wants every event and is never dropped, so `tracing` always asks every
/// dispatcher (this one says "always"), and no call site is cached as unwanted.
static EVERY_CALL_SITE_WANTED: LazyLock<Dispatch> = LazyLock::new(|| Dispatch::new(tracing_subscriber::registry()));

/// Sets, for this thread until the guard drops, a subscriber that writes `max_level` and above
/// (without colours) into the returned buffer.
pub fn capture(max_level: tracing::Level) -> (DefaultGuard, Captured) {
    LazyLock::force(&EVERY_CALL_SITE_WANTED);
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .with_max_level(max_level)
        .finish();
    let guard = tracing::subscriber::set_default(subscriber);
    // Call sites reached before either dispatcher existed were cached for no subscriber at all.
    tracing::callsite::rebuild_interest_cache();
    (guard, captured)
}
