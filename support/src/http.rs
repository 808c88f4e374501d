//! A reqwest client for the tests that send requests of their own (to the chaos server, a raw TCP
//! server, a tower service): a TLS configuration of its own, rustls on ring trusting no
//! certificate, so a test's client can never reach a real server over TLS (the tests' servers are
//! on `http://127.0.0.1`; `tls_server` is for the runtime's clients to refuse), and so the tests
//! depend on no TLS default of reqwest's.

use std::sync::Arc;

/// A client builder with TLS set up (no certificate trusted): add settings, then `build()`.
pub fn client_builder() -> reqwest::ClientBuilder {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("ring supports the default TLS versions")
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth();
    reqwest::Client::builder().tls_backend_preconfigured(tls)
}

/// A client with reqwest's defaults otherwise (for `reqwest::Client::new()`).
pub fn client() -> reqwest::Client {
    client_builder().build().expect("a reqwest client with preconfigured TLS builds")
}
