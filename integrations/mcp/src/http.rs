//! A server over streamable HTTP: its URL (and the same URL without its secrets, for rmcp and for
//! messages), and rmcp's transport on our client ([`McpHttp`]), which alone sends to the URL as
//! given.

use std::sync::Arc;
use std::time::Duration;

use reqwest_013 as reqwest;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::common::client_side_sse::ExponentialBackoff;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

use crate::error::McpError;
use crate::http_client::McpHttp;

/// How many times the client reconnects a server's event stream that broke, before it gives the
/// pending calls up: 2, after 0.5 s and 1 s. rmcp's default retries forever, which turns a dead
/// server into a call that waits for its timeout; two tries ride out a proxy's hiccup.
pub const MCP_SSE_RECONNECTS: usize = 2;

/// An MCP server's URL, kept whole to connect and shown without its userinfo, query and fragment.
#[derive(Clone)]
pub(crate) struct Endpoint {
    url: reqwest::Url,
    shown: String,
    host: String,
    /// The pieces of the URL that must not appear in a message (`user:password@`, the password,
    /// the query), as given and as a URL encoder writes them. (The fragment is never sent: a
    /// server cannot echo it.)
    secrets: Vec<String>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint").field("url", &self.shown).finish_non_exhaustive()
    }
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
        let query = tail.split('#').next().unwrap_or_default();
        let shown = format!("{scheme}://{host_port}{path}");
        if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
            return Err(invalid(&shown, &format!("the scheme `{scheme}` is not `http` or `https`")));
        }
        let host = host_name(host_port);
        if host.is_empty() {
            return Err(invalid(&shown, "it has no host"));
        }
        let mut parsed = reqwest::Url::parse(url).map_err(|error| invalid(&shown, &error.to_string()))?;
        // Never sent, and never shown: not kept either.
        parsed.set_fragment(None);
        let mut secrets = Vec::new();
        if let Some(userinfo) = userinfo {
            secrets.push(format!("{userinfo}@"));
        }
        let query = query.strip_prefix('?').filter(|query| !query.is_empty());
        secrets.extend([query, parsed.query()].into_iter().flatten().map(str::to_owned));
        // A server may echo a piece alone: the password, a parameter's value, as given or encoded.
        // A piece shorter than 4 characters is no secret worth garbling every message for.
        let passwords =
            [userinfo.and_then(|userinfo| userinfo.split_once(':')).map(|(_, password)| password), parsed.password()];
        let values = [query, parsed.query()]
            .into_iter()
            .flatten()
            .flat_map(|query| query.split('&'))
            .filter_map(|pair| pair.split_once('='))
            .map(|(_, value)| value);
        secrets
            .extend(passwords.into_iter().flatten().chain(values).filter(|piece| piece.len() >= 4).map(str::to_owned));
        // The longest first: a piece inside another is gone with it.
        secrets.sort_by(|one, other| other.len().cmp(&one.len()).then_with(|| one.cmp(other)));
        secrets.dedup();
        Ok(Self { url: parsed, shown, host: host.to_owned(), secrets })
    }

    /// The URL without its userinfo, query or fragment.
    pub(crate) fn shown(&self) -> &str {
        &self.shown
    }

    /// The host, the server's default name.
    pub(crate) fn host(&self) -> &str {
        &self.host
    }

    /// `text` (an error of the HTTP stack, or a server's words, which may quote the URL) without
    /// the URL's secrets, as given or encoded.
    pub(crate) fn redact(&self, text: &str) -> String {
        let mut text = text.to_owned();
        for secret in &self.secrets {
            let replacement = if secret.ends_with('@') { "" } else { "***" };
            text = text.replace(secret.as_str(), replacement);
        }
        text
    }

    /// rmcp's streamable HTTP transport to this server, re-initialising an expired session once
    /// (rmcp's `reinit_on_expired_session`, on here whatever its default becomes). rmcp is given
    /// the URL without its secrets ([`Endpoint::shown`]), which it may log; our client sends to the
    /// URL as given.
    pub(crate) fn transport(&self, server: &str) -> Result<StreamableHttpClientTransport<McpHttp>, McpError> {
        let client = McpHttp::new(self.url.clone(), server)
            .map_err(|reason| McpError::Initialize { server: server.to_owned(), reason })?;
        let mut reconnect = ExponentialBackoff::default();
        reconnect.max_times = Some(MCP_SSE_RECONNECTS);
        reconnect.base_duration = Duration::from_millis(500);
        let mut config =
            StreamableHttpClientTransportConfig::with_uri(self.shown.as_str()).reinit_on_expired_session(true);
        config.retry_config = Arc::new(reconnect);
        Ok(StreamableHttpClientTransport::with_client(client, config))
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_and_query_never_show() {
        let endpoint = Endpoint::parse("https://ann:s3cret@mcp.example.com:8443/v1/mcp?token=abc#x").unwrap();
        assert_eq!(endpoint.shown(), "https://mcp.example.com:8443/v1/mcp");
        assert_eq!(endpoint.host(), "mcp.example.com");
        let error = "error sending request for url (https://ann:s3cret@mcp.example.com:8443/v1/mcp?token=abc#x)";
        assert_eq!(endpoint.redact(error), "error sending request for url (https://mcp.example.com:8443/v1/mcp?***#x)");
    }

    #[test]
    fn secrets_are_redacted_as_given_and_encoded() {
        let endpoint = Endpoint::parse("http://ann:p@ss word@127.0.0.1:9/mcp?token=Q TOKEN|SECRET#frag ment").unwrap();
        assert_eq!(endpoint.shown(), "http://127.0.0.1:9/mcp");
        let echoed = "p@ss word p%40ss%20word Q TOKEN|SECRET Q%20TOKEN|SECRET";
        assert_eq!(endpoint.redact(echoed), "*** *** *** ***");
        assert!(!format!("{endpoint:?}").contains("TOKEN"), "{endpoint:?}");
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
