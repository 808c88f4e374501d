//! A reqwest client for the tests that send requests of their own (to the chaos server, a raw TCP
//! server, a tower service), in a build where reqwest has no TLS of its own choosing.
//!
//! The runtime turns on reqwest's `rustls-no-provider` and hands its own clients a TLS
//! configuration it builds (rustls on ring). Features unify, so in a build with the runtime
//! `reqwest::Client::new()` looks for a process-wide rustls provider and panics without one; a
//! test that installed one would hide whether the runtime's clients need it. These clients get a
//! configuration of their own instead: rustls on ring, trusting no certificate (the tests' servers
//! are on `http://127.0.0.1`; `tls_server` is for the runtime's clients to refuse).

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
