//! The listener and the per-connection loop: accept, read a request, answer it, until the client
//! leaves or the server stops.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;

use super::answer::After;
use super::plain::{generic_error, send_json};
use super::routes::respond;
use super::state::Shared;
use crate::http::{Conn, ReadError};

/// Counts a connection as open while it lives.
struct Open<'a>(&'a AtomicUsize);

impl<'a> Open<'a> {
    fn new(open: &'a AtomicUsize) -> Self {
        open.fetch_add(1, Ordering::Relaxed);
        Self(open)
    }
}

impl Drop for Open<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Connections the kernel may queue before the server accepts them. tokio's `TcpListener::bind`
/// asks for 128, which drops connections when thousands of clients connect at once (a load test).
const BACKLOG: u32 = 4096;

/// A listener on `addr` with a deep accept queue.
pub(super) fn listen(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = if addr.is_ipv4() { tokio::net::TcpSocket::new_v4()? } else { tokio::net::TcpSocket::new_v6()? };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(BACKLOG)
}

pub(super) async fn accept_loop(listener: TcpListener, shared: Arc<Shared>, mut stopped: watch::Receiver<bool>) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let _ = stream.set_nodelay(true);
                    connections.spawn(serve(stream, Arc::clone(&shared)));
                }
                // Out of file descriptors or similar: give the system a moment.
                Err(_) => tokio::time::sleep(Duration::from_millis(5)).await,
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            _ = stopped.changed() => break,
        }
    }
    drop(listener);
    connections.shutdown().await;
}

async fn serve(stream: TcpStream, shared: Arc<Shared>) {
    let _open = Open::new(&shared.open);
    let mut conn = Conn::new(stream);
    loop {
        let request = match conn.read_request().await {
            Ok(Some(request)) => request,
            Ok(None) | Err(ReadError::Io) => return,
            Err(ReadError::Bad { status, message }) => {
                let body = generic_error(status, message);
                send_json(&mut conn, status, &body, &[], false);
                let _ = conn.flush().await;
                return;
            }
        };
        let keep_alive = request.keep_alive;
        let after = match respond(&mut conn, &shared, request).await {
            Ok(after) => after,
            Err(_) => After::Close,
        };
        if after == After::Close || !keep_alive || conn.flush().await.is_err() {
            let _ = conn.flush().await;
            return;
        }
    }
}
