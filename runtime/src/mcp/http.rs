//! A server over streamable HTTP: its URL (and the same URL without its secrets, for messages),
//! and rmcp's transport on a reqwest 0.13 client with rustls on ring and the Mozilla roots.

use std::sync::Arc;
use std::time::Duration;

use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::common::client_side_sse::ExponentialBackoff;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

use super::error::McpError;

/// How many times the client reconnects a server's event stream that broke, before it gives the
/// pending calls up: 2, after 0.5 s and 1 s. rmcp's default retries forever, which turns a dead
/// server into a call that waits for its timeout; two tries ride out a proxy's hiccup.
pub const MCP_SSE_RECONNECTS: usize = 2;

/// An MCP server's URL, kept whole to connect and shown without its userinfo and query.
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    url: String,
    shown: String,
    host: String,
    /// The pieces of `url` that must not appear in a message (`user:password@`, `?query`).
    secrets: Vec<String>,
}

impl Endpoint {
    /// Reads `url`: `http://` or `https://`, a host, anything after.
    pub(crate) fn parse(url: &str) -> Result<Self, McpError> {
        let invalid = |shown: &str, reason: &str| McpError::Url { url: shown.to_owned(), reason: reason.to_owned() };
        let Some((scheme, rest)) = url.split_once("://") else {
            return Err(invalid(&shorten_url(url), "it has no scheme"));
        };
        let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, after) = rest.split_at(authority_end);
        let (userinfo, host_port) = match authority.rsplit_once('@') {
            Some((userinfo, host_port)) => (Some(userinfo), host_port),
            None => (None, authority),
        };
        let path_end = after.find(['?', '#']).unwrap_or(after.len());
        let (path, tail) = after.split_at(path_end);
        let query = tail.split('#').next().filter(|query| query.len() > 1);
        let shown = format!("{scheme}://{host_port}{path}");
        if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
            return Err(invalid(&shown, &format!("the scheme `{scheme}` is not `http` or `https`")));
        }
        let host = host_name(host_port);
        if host.is_empty() {
            return Err(invalid(&shown, "it has no host"));
        }
        let mut secrets = Vec::new();
        if let Some(userinfo) = userinfo {
            secrets.push(format!("{userinfo}@"));
            secrets.extend(userinfo.split_once(':').map(|(_, password)| password.to_owned()).filter(|p| !p.is_empty()));
        }
        secrets.extend(query.map(str::to_owned));
        Ok(Self { url: url.to_owned(), shown, host: host.to_owned(), secrets })
    }

    /// The URL without its userinfo, query or fragment.
    pub(crate) fn shown(&self) -> &str {
        &self.shown
    }

    /// The host, the server's default name.
    pub(crate) fn host(&self) -> &str {
        &self.host
    }

    /// `text` (an error of the HTTP stack, which may quote the URL) without the URL's secrets.
    pub(crate) fn redact(&self, text: &str) -> String {
        let mut text = text.to_owned();
        for secret in &self.secrets {
            let replacement = match secret.as_bytes() {
                [.., b'@'] => "",
                [b'?', ..] => "?***",
                _ => "***",
            };
            text = text.replace(secret.as_str(), replacement);
        }
        text
    }

    /// rmcp's streamable HTTP transport to this URL, re-initialising an expired session once
    /// (rmcp's `reinit_on_expired_session`, on here whatever its default becomes).
    pub(crate) fn transport(
        &self,
        server: &str,
    ) -> Result<StreamableHttpClientTransport<reqwest_013::Client>, McpError> {
        let client = client().map_err(|reason| McpError::Initialize { server: server.to_owned(), reason })?;
        let mut reconnect = ExponentialBackoff::default();
        reconnect.max_times = Some(MCP_SSE_RECONNECTS);
        reconnect.base_duration = Duration::from_millis(500);
        let mut config =
            StreamableHttpClientTransportConfig::with_uri(self.url.as_str()).reinit_on_expired_session(true);
        config.retry_config = Arc::new(reconnect);
        Ok(StreamableHttpClientTransport::with_client(client, config))
    }
}

/// A reqwest 0.13 client whose TLS is rustls on ring with the Mozilla roots, as the HTTP
/// providers' reqwest 0.12 (no aws-lc, no process-wide crypto provider needed).
fn client() -> Result<reqwest_013::Client, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let roots = rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|error| format!("TLS setup failed: {error}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    reqwest_013::Client::builder()
        .tls_backend_preconfigured(tls)
        .build()
        .map_err(|error| format!("the HTTP client could not be built: {error}"))
}

/// The host of `host[:port]` or `[v6]:port`.
fn host_name(host_port: &str) -> &str {
    if let Some(bracketed) = host_port.strip_prefix('[') {
        return bracketed.split(']').next().unwrap_or_default();
    }
    host_port.split(':').next().unwrap_or_default()
}

/// A URL that does not parse, shown up to its first `@`-free part and without a query.
fn shorten_url(url: &str) -> String {
    let no_query = url.split(['?', '#']).next().unwrap_or_default();
    match no_query.rsplit_once('@') {
        Some((_, after)) => after.to_owned(),
        None => no_query.to_owned(),
    }
}

/// Installs rustls's ring provider as the process's default, unless one is installed already;
/// true when this call installed it.
///
/// The `mcp` feature turns on reqwest 0.13's `rustls-no-provider` (its own client is given a TLS
/// configuration on ring, so no C build of aws-lc is needed). Cargo unifies features, so every
/// reqwest 0.13 client of the build gets rustls without a provider: one built without a TLS
/// configuration of its own (`reqwest::Client::new()` in async-openai or reqwest-middleware code,
/// say) panics with "No rustls crypto provider is configured" unless a default is installed. Call
/// this once at start, before building such clients.
///
/// # Examples
///
/// ```
/// agentic_runtime::mcp::install_ring_crypto_provider();
/// assert!(!agentic_runtime::mcp::install_ring_crypto_provider(), "installed once");
/// ```
pub fn install_ring_crypto_provider() -> bool {
    rustls::crypto::ring::default_provider().install_default().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_and_query_never_show() {
        let endpoint = Endpoint::parse("https://ann:s3cret@mcp.example.com:8443/v1/mcp?token=abc#x").unwrap();
        assert_eq!(endpoint.shown(), "https://mcp.example.com:8443/v1/mcp");
        assert_eq!(endpoint.host(), "mcp.example.com");
        let error = "error sending request for url (https://ann:s3cret@mcp.example.com:8443/v1/mcp?token=abc)";
        let redacted = endpoint.redact(error);
        assert!(
            !redacted.contains("s3cret") && !redacted.contains("token=abc") && !redacted.contains("ann"),
            "{redacted}"
        );
    }

    #[test]
    fn bad_urls_say_what_is_wrong() {
        let no_scheme = Endpoint::parse("mcp.example.com/mcp?key=1").unwrap_err().to_string();
        assert_eq!(
            no_scheme,
            "invalid MCP server URL `mcp.example.com/mcp`: it has no scheme; give an `http://` or `https://` URL such as `https://example.com/mcp`"
        );
        let ftp = Endpoint::parse("ftp://u:p@host/x").unwrap_err().to_string();
        assert!(ftp.starts_with("invalid MCP server URL `ftp://host/x`: the scheme `ftp`"), "{ftp}");
        assert!(Endpoint::parse("http:///mcp").unwrap_err().to_string().contains("it has no host"));
        assert_eq!(Endpoint::parse("http://[::1]:9/mcp").unwrap().host(), "::1");
    }
}
