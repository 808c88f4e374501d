//! TLS with the `mcp` feature in the build: the MCP client brings its own (rustls on ring, the
//! Mozilla roots, handed to its reqwest client), so it installs no process-wide crypto provider and
//! needs none. (The crate turns on reqwest's `rustls-no-provider` for the build: another reqwest
//! client of the program that brings no TLS of its own needs one; the README's features say so.)

use agentic_runtime::mcp::{McpError, McpServer};
use agentic_test_support::tls_server::TlsServer;

#[tokio::test]
async fn the_mcp_client_speaks_tls_and_refuses_a_certificate_it_does_not_trust() {
    // No provider installed, before or after: a client that looked for one would panic as it is built.
    assert!(rustls::crypto::CryptoProvider::get_default().is_none());
    let server = TlsServer::start().await;
    let url = format!("https://127.0.0.1:{}/mcp", server.port());
    let error = McpServer::http(url).name("files").connect().await.unwrap_err();
    assert!(matches!(error, McpError::Unreachable { .. }), "{error:?}");
    let message = error.to_string();
    assert!(message.contains("certificate"), "{message}");
    assert!(server.accepted() >= 1, "the client connected and offered TLS");
    assert!(rustls::crypto::CryptoProvider::get_default().is_none());
}
