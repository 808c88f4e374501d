//! A server that accepts connections and never answers: what a hung Redis, a black-holed proxy or a
//! frozen process looks like from the client's side (the TCP handshake succeeds, then nothing).

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::io::AsyncReadExt as _;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};

/// The most connections a [`SilentServer`] keeps open at once; past it a new connection is closed
/// at once, so that a client that reconnects in a loop cannot make it hold file descriptors
/// without bound.
pub const MAX_SILENT_CONNECTIONS: usize = 1024;

/// A TCP server on `127.0.0.1` that accepts every connection, reads and discards whatever arrives,
/// and never writes a byte: a client's request is sent and its answer never comes, so only the
/// client's own timeout ends the wait. Point a store or a provider at it to test that a silent
/// peer cannot hang a call (`RedisStore::lazy(&server.url())`).
///
/// It runs on the tokio runtime it was started on, and stops (closing every connection) when
/// dropped.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> std::io::Result<()> {
/// use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
///
/// let server = agentic_chaos::SilentServer::start().await?;
/// let mut stream = tokio::net::TcpStream::connect(server.addr()).await?;
/// stream.write_all(b"PING\r\n").await?;
/// let mut byte = [0u8; 1];
/// let read = tokio::time::timeout(std::time::Duration::from_millis(50), stream.read(&mut byte)).await;
/// assert!(read.is_err(), "no answer comes");
/// assert!(server.url().starts_with("redis://127.0.0.1:"));
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct SilentServer {
    addr: SocketAddr,
    counts: Arc<Counts>,
    task: JoinHandle<()>,
}

/// What the server has seen.
#[derive(Debug, Default)]
struct Counts {
    connections: AtomicU64,
    bytes: AtomicU64,
}

impl SilentServer {
    /// Starts a server on `127.0.0.1`, on a port the OS picks.
    ///
    /// # Errors
    ///
    /// When no port can be bound.
    pub async fn start() -> io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let counts = Arc::new(Counts::default());
        let task = tokio::spawn(accept_loop(listener, Arc::clone(&counts)));
        Ok(Self { addr, counts, task })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `redis://127.0.0.1:PORT`: a Redis URL for it.
    pub fn url(&self) -> String {
        format!("redis://{}", self.addr)
    }

    /// How many connections it has accepted so far.
    pub fn connections(&self) -> u64 {
        self.counts.connections.load(Ordering::Relaxed)
    }

    /// How many bytes it has read (and discarded) so far.
    pub fn bytes_received(&self) -> u64 {
        self.counts.bytes.load(Ordering::Relaxed)
    }
}

impl Drop for SilentServer {
    fn drop(&mut self) {
        // Dropping the accept loop drops its JoinSet, which closes every connection.
        self.task.abort();
    }
}

async fn accept_loop(listener: TcpListener, counts: Arc<Counts>) {
    let mut connections = JoinSet::new();
    loop {
        let Ok((stream, _)) = listener.accept().await else { continue };
        // Reap the connections their clients closed, so the bound counts open ones only.
        while connections.try_join_next().is_some() {}
        counts.connections.fetch_add(1, Ordering::Relaxed);
        if connections.len() < MAX_SILENT_CONNECTIONS {
            connections.spawn(discard(stream, Arc::clone(&counts)));
        }
    }
}

/// Reads until the client closes, into one small buffer, and never writes.
async fn discard(mut stream: TcpStream, counts: Arc<Counts>) {
    let mut buffer = [0u8; 4096];
    while let Ok(read) = stream.read(&mut buffer).await {
        if read == 0 {
            return;
        }
        counts.bytes.fetch_add(read as u64, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::io::AsyncWriteExt as _;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn reads_everything_answers_nothing_and_stops_when_dropped() {
        let server = SilentServer::start().await.unwrap();
        let addr = server.addr();
        assert!(addr.ip().is_loopback());
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream.write_all(&[b'x'; 10_000]).await.unwrap();
        let mut byte = [0u8; 1];
        let answer = tokio::time::timeout(Duration::from_secs(30), stream.read(&mut byte)).await;
        assert!(answer.is_err(), "it never writes: {answer:?}");
        assert_eq!((server.connections(), server.bytes_received()), (1, 10_000));

        drop(server);
        // The aborted accept loop drops the connections and the listener on the runtime's next turn.
        tokio::task::yield_now().await;
        let closed = tokio::time::timeout(Duration::from_secs(30), stream.read(&mut byte)).await;
        assert!(matches!(closed, Ok(Ok(0)) | Ok(Err(_))), "the connection is closed: {closed:?}");
        assert!(TcpStream::connect(addr).await.is_err(), "nothing listens any more");
    }
}
