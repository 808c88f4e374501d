//! TLS with the `mcp` feature in the build: the MCP client brings its own (rustls on ring, the
//! Mozilla roots), and another reqwest 0.13 client of the program starts as it would without the
//! feature: the feature sets no process-wide crypto provider and asks for none.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agentic_runtime::mcp::{McpError, McpServer};
use tokio::net::TcpListener;

#[test]
fn another_reqwest_013_client_starts_without_a_crypto_provider_installed() {
    // This panicked ("No rustls crypto provider is configured") when the feature turned on reqwest
    // 0.13's `rustls-no-provider` for the whole build.
    let _client = reqwest_013::Client::new();
    reqwest_013::Client::builder().build().expect("a reqwest 0.13 client builds");
}

/// A TLS server on 127.0.0.1 port 0 with the self-signed certificate of `tests/fixtures`: it counts
/// the connections it accepts.
async fn tls_server() -> (u16, Arc<AtomicUsize>, tokio::task::JoinHandle<()>) {
    use tokio_rustls::rustls;
    use tokio_rustls::rustls::pki_types::pem::PemObject;
    use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let cert = CertificateDer::from_pem_slice(include_bytes!("../fixtures/self_signed.crt")).unwrap();
    let key = PrivateKeyDer::from_pem_slice(include_bytes!("../fixtures/self_signed.key")).unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&accepted);
    let task = tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let _ = acceptor.accept(socket).await;
            });
        }
    });
    (port, accepted, task)
}

#[tokio::test]
async fn the_mcp_client_speaks_tls_and_refuses_a_certificate_it_does_not_trust() {
    let (port, accepted, task) = tls_server().await;
    let error = McpServer::http(format!("https://127.0.0.1:{port}/mcp")).name("files").connect().await.unwrap_err();
    task.abort();
    assert!(matches!(error, McpError::Unreachable { .. }), "{error:?}");
    let message = error.to_string();
    assert!(message.contains("certificate"), "{message}");
    assert!(accepted.load(Ordering::SeqCst) >= 1, "the client connected and offered TLS");
}
