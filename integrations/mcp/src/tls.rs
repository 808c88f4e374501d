//! The MCP client's TLS: rustls on ring with the Mozilla roots, built here as a finished
//! `rustls::ClientConfig` and handed to reqwest, which then asks rustls for no provider of its own.
//!
//! Nothing here is process-wide: no crypto provider is installed, so a program's other rustls
//! users and reqwest clients pick theirs as they would without this crate.

use std::sync::Arc;

use rustls::crypto::ring;
use rustls::{ClientConfig, RootCertStore};

/// The TLS configuration of one MCP HTTP client: TLS 1.2 and 1.3 with ring's safe defaults, the
/// server's certificate checked against the Mozilla roots (`webpki-roots`), HTTP/1.1 offered by
/// ALPN (the only HTTP the client speaks).
pub(crate) fn client_config() -> Result<ClientConfig, rustls::Error> {
    let roots = RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
    let mut config = ClientConfig::builder_with_provider(Arc::new(ring::default_provider()))
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}
