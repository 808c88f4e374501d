//! TLS with this crate in the build: the MCP client brings its own (rustls on ring, the Mozilla
//! roots, handed to reqwest 0.13 whole), and another reqwest 0.13 client of the program starts as
//! it would without this crate: nothing sets a process-wide crypto provider.

use agentic_mcp::{McpError, McpServer};
use agentic_test_support::tls_server::TlsServer;

#[test]
fn another_reqwest_013_client_starts_without_a_crypto_provider_installed() {
    // This panicked ("No rustls crypto provider is configured") when the MCP client turned on
    // reqwest 0.13's `rustls-no-provider` for the whole build.
    let _client = reqwest_013::Client::new();
    reqwest_013::Client::builder().build().expect("a reqwest 0.13 client builds");
}

#[tokio::test]
async fn the_mcp_client_speaks_tls_and_refuses_a_certificate_it_does_not_trust() {
    let server = TlsServer::start().await;
    let url = format!("https://127.0.0.1:{}/mcp", server.port());
    let error = McpServer::http(url).name("files").connect().await.unwrap_err();
    assert!(matches!(error, McpError::Unreachable { .. }), "{error:?}");
    let message = error.to_string();
    assert!(message.contains("certificate"), "{message}");
    assert!(server.accepted() >= 1, "the client connected and offered TLS");
}
