//! The TLS of the crate's HTTP clients (the providers'), built here and handed
//! to each client (`ClientBuilder::tls_backend_preconfigured`): rustls on ring, TLS 1.2 and 1.3, and
//! the certificate authorities of Mozilla's list built in (not the system's store). So the crate
//! builds no C code (reqwest's own TLS default, aws-lc, does) and installs no process-wide crypto
//! provider, nor needs one: a program's other rustls users keep whatever provider they choose.

use std::sync::Arc;

use rustls::{ClientConfig, RootCertStore};

/// A client configuration: ring's cryptography, the protocol versions rustls deems safe, Mozilla's
/// roots, no client certificate. No ALPN protocol is offered: the clients speak HTTP/1.1.
pub(crate) fn client_config() -> Result<ClientConfig, rustls::Error> {
    let roots = RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_configuration_trusts_mozillas_roots_with_ring_and_offers_no_alpn() {
        let config = client_config().unwrap();
        assert!(config.alpn_protocols.is_empty());
        assert_eq!(config.crypto_provider().cipher_suites, rustls::crypto::ring::default_provider().cipher_suites);
        assert!(rustls::crypto::CryptoProvider::get_default().is_none(), "nothing installed process-wide");
    }
}
