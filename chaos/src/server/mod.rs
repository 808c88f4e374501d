//! The server: a handle ([`ChaosServer`]) on a task that accepts connections and answers each
//! request as the scenario says.
//!
//! Each module uses only those after it in this list: `lifecycle` (the listener and the
//! per-connection loop), `routes` (a request to its answer: the model routes, the 404 and 405),
//! `control` (the `/_chaos/...` routes), `state` (the scenario, the journal and the step chosen
//! under the lock), `key` (the API key a request carries), `answer` (one model request being
//! answered: the step dispatch and the heads), `completion` (an answer's text and the faults in
//! it), `endless` (the floods and endless bodies), `errors` (the answers that are not a model's:
//! HTTP errors, a page, a redirect, a 200 that is not an answer).

mod answer;
mod completion;
mod control;
mod endless;
mod errors;
mod key;
mod lifecycle;
mod plain;
mod routes;
mod state;

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::journal::JournalEntry;
use crate::scenario::Scenario;
use crate::wire::WireFormat;
use lifecycle::{accept_loop, listen};
use state::Shared;

/// A running chaos server.
///
/// It serves in a tokio task from [`start`](ChaosServer::start) until the handle is dropped or
/// [`shutdown`](ChaosServer::shutdown) is awaited; dropping it closes the listener and every open
/// connection (promptly, on the runtime's next turn), `shutdown` does so before it returns.
///
/// # Examples
///
/// ```
/// use agentic_chaos::{ChaosServer, Scenario, Step, StepKind};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> std::io::Result<()> {
/// let server = ChaosServer::start(Scenario::new().then(Step::http_error(503))).await?;
/// println!("OPENAI_BASE_URL={}", server.openai_base_url()); // http://127.0.0.1:PORT/v1
/// println!("ANTHROPIC_BASE_URL={}", server.anthropic_base_url()); // http://127.0.0.1:PORT
/// // ... point a client at it ...
/// assert_eq!(server.requests_served(), 0);
/// server.shutdown().await;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct ChaosServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl ChaosServer {
    /// Start serving `scenario` on 127.0.0.1, on a port the system picks.
    ///
    /// # Errors
    ///
    /// If the socket cannot be bound.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime.
    pub async fn start(scenario: Scenario) -> io::Result<Self> {
        Self::start_on(SocketAddr::from(([127, 0, 0, 1], 0)), scenario).await
    }

    /// Start serving `scenario` on `addr` (port 0: the system picks one). Anything but a loopback
    /// address exposes the server beyond this machine.
    ///
    /// # Errors
    ///
    /// If the socket cannot be bound (e.g. the port is taken).
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime.
    pub async fn start_on(addr: SocketAddr, scenario: Scenario) -> io::Result<Self> {
        let listener = listen(addr)?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared::new(scenario));
        let (stop, stopped) = watch::channel(false);
        let task = tokio::spawn(accept_loop(listener, Arc::clone(&shared), stopped));
        Ok(Self { addr, shared, stop, task })
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The base URL for clients of `wire`: `http://127.0.0.1:PORT` and the wire's
    /// [`base_path`](WireFormat::base_path), the URL its SDK appends its own path to.
    pub fn base_url(&self, wire: WireFormat) -> String {
        format!("http://{}{}", self.addr, wire.base_path())
    }

    /// The base URL for OpenAI-compatible clients, `http://127.0.0.1:PORT/v1`; they POST to
    /// `{base}/chat/completions`.
    pub fn openai_base_url(&self) -> String {
        self.base_url(WireFormat::OpenAi)
    }

    /// The base URL for Anthropic clients, `http://127.0.0.1:PORT`; they POST to
    /// `{base}/v1/messages`.
    pub fn anthropic_base_url(&self) -> String {
        self.base_url(WireFormat::Anthropic)
    }

    /// Every request since the start (or the last reset), in arrival order.
    pub fn journal(&self) -> Vec<JournalEntry> {
        self.shared.lock().journal.clone()
    }

    /// How many requests the journal holds: every request since the start (or the last reset)
    /// except those to `/_chaos/...`.
    pub fn requests_served(&self) -> usize {
        self.shared.lock().journal.len()
    }

    /// How many connections the server holds open right now: a connection stays open while a
    /// response is written (a flood or a hang included) and, between requests, while the client
    /// keeps it alive. A test can wait for it to fall to 0 to see that the server let go of a
    /// client that hung up.
    pub fn open_connections(&self) -> usize {
        self.shared.open.load(Ordering::Relaxed)
    }

    /// Start the scenario over from its first step and clear the journal; the scenario's clock
    /// (the journal's `at_ms`, the [outages](Scenario::with_outage)) starts again at 0.
    pub fn reset(&self) {
        self.shared.reset(None);
    }

    /// Serve `scenario` from its first step on, and clear the journal; its clock (the journal's
    /// `at_ms`, its [outages](Scenario::with_outage)) starts at 0 now.
    pub fn set_scenario(&self, scenario: Scenario) {
        self.shared.reset(Some(scenario));
    }

    /// Stop: close the listener and every connection, then return.
    pub async fn shutdown(mut self) {
        let _ = self.stop.send(true);
        let _ = (&mut self.task).await;
    }
}

impl Drop for ChaosServer {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        // Dropping the accept loop drops its JoinSet, which aborts every connection.
        self.task.abort();
    }
}
