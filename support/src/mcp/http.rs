//! The test server over streamable HTTP, in the test's process, on 127.0.0.1 port 0.

use std::net::SocketAddr;
use std::sync::Arc;

use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use rmcp::transport::streamable_http_server::session::SessionManager as _;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::record::Record;
use super::server::{Options, TestServer};

/// A running test server over HTTP; it stops when dropped.
pub struct HttpServer {
    address: SocketAddr,
    record: Arc<Record>,
    sessions: Arc<LocalSessionManager>,
    stop: CancellationToken,
    accept: JoinHandle<()>,
}

/// Starts the test server with `options` on 127.0.0.1 port 0, at the path `/mcp`. Its tool
/// `exit` stops it (every connection is closed, the call never answered).
pub async fn serve_http(options: Options) -> HttpServer {
    let listener = TcpListener::bind(("127.0.0.1", 0)).await.expect("the loopback interface takes a listener");
    let address = listener.local_addr().expect("a bound listener has an address");
    let stop = CancellationToken::new();
    let record = Arc::new(Record::new(None));
    let on_exit: Arc<dyn Fn() + Send + Sync> = Arc::new({
        let stop = stop.clone();
        move || stop.cancel()
    });
    let server = TestServer::new(options, record.clone(), on_exit);
    let sessions = Arc::new(LocalSessionManager::default());
    let config = StreamableHttpServerConfig::default().with_cancellation_token(stop.child_token());
    let service = StreamableHttpService::new(move || Ok(server.clone()), sessions.clone(), config);
    let accept = tokio::spawn(accept_loop(listener, TowerToHyperService::new(service), stop.clone()));
    HttpServer { address, record, sessions, stop, accept }
}

async fn accept_loop(
    listener: TcpListener,
    service: TowerToHyperService<StreamableHttpService<TestServer, LocalSessionManager>>,
    stop: CancellationToken,
) {
    loop {
        let stream = tokio::select! {
            () = stop.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => stream,
                Err(_) => continue,
            },
        };
        // Small answers go out at once, not after the peer's delayed ACK (Nagle's 40 ms).
        let _ = stream.set_nodelay(true);
        let service = service.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            let connection = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service);
            // Stopping drops the connection mid-answer: a server that died.
            tokio::select! {
                () = stop.cancelled() => {}
                _ = connection => {}
            }
        });
    }
}

impl HttpServer {
    /// The server's MCP endpoint, `http://127.0.0.1:PORT/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.address)
    }

    /// What the server saw.
    pub fn record(&self) -> &Record {
        &self.record
    }

    /// Ends every session, as a server that restarted or timed them out: the next request of a
    /// client with one gets 404. Returns how many there were.
    pub async fn expire_sessions(&self) -> usize {
        let ids: Vec<_> = self.sessions.sessions.read().await.keys().cloned().collect();
        for id in &ids {
            let _ = self.sessions.close_session(id).await;
        }
        ids.len()
    }

    /// How many sessions are open.
    pub async fn session_count(&self) -> usize {
        self.sessions.sessions.read().await.len()
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.stop.cancel();
        self.accept.abort();
    }
}
