//! A TLS server on 127.0.0.1 port 0 with a self-signed certificate (`self_signed.crt`, for
//! `localhost` and 127.0.0.1): a client that trusts only real authorities refuses it. It counts the
//! connections it accepts; to a client that trusted the certificate it answers a 500 the client
//! could not mistake for a model's or a server's answer. It stops when dropped.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::io::AsyncWriteExt as _;
use tokio::net::TcpListener;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject as _;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// The running server.
pub struct TlsServer {
    port: u16,
    accepted: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl TlsServer {
    /// Starts the server.
    ///
    /// # Panics
    ///
    /// If loopback takes no listener (the certificate is this crate's own, and valid).
    pub async fn start() -> Self {
        let cert = CertificateDer::from_pem_slice(include_bytes!("self_signed.crt")).expect("a PEM certificate");
        let key = PrivateKeyDer::from_pem_slice(include_bytes!("self_signed.key")).expect("a PEM key");
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .expect("ring has the default protocol versions")
            .with_no_client_auth()
            .with_single_cert(vec![cert], key)
            .expect("the certificate and its key match");
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("the loopback interface takes a listener");
        let port = listener.local_addr().expect("a bound listener has an address").port();
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = Arc::clone(&accepted);
        let task = tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    // A client that trusted the certificate would get an answer it could not read.
                    if let Ok(mut stream) = acceptor.accept(socket).await {
                        stream.write_all(b"HTTP/1.1 500 Trusted\r\ncontent-length: 0\r\n\r\n").await.ok();
                    }
                });
            }
        });
        Self { port, accepted, task }
    }

    /// The port it listens on, on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// How many connections it accepted.
    pub fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}
