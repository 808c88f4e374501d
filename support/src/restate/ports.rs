//! Free ports on 127.0.0.1, and the bounded polling the harness waits with.

use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::time::Duration;

use super::error::HarnessError;

/// How often a wait polls.
pub(crate) const POLL: Duration = Duration::from_millis(20);

/// `count` distinct ports nothing listens on now. The listeners are closed before this returns, so
/// another process may take one first: the callers try again with new ports when a bind fails.
pub(crate) fn free_ports(count: usize) -> Result<Vec<u16>, HarnessError> {
    // Held together until all are picked, so the OS gives distinct ports.
    let listeners = (0..count)
        .map(|_| TcpListener::bind((Ipv4Addr::LOCALHOST, 0)))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|source| HarnessError::Io { doing: "binding 127.0.0.1:0 to find a free port".to_owned(), source })?;
    listeners
        .iter()
        .map(|listener| listener.local_addr().map(|addr| addr.port()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|source| HarnessError::Io { doing: "reading a bound port".to_owned(), source })
}

/// Whether something accepts TCP connections on `addr` now.
pub(crate) async fn accepts(addr: SocketAddr) -> bool {
    tokio::time::timeout(Duration::from_secs(1), tokio::net::TcpStream::connect(addr))
        .await
        .is_ok_and(|connected| connected.is_ok())
}
