//! Where a call goes and with what: the base URL checked and joined with a wire's path, the key
//! kept as a [`Secret`], the model, temperature and token limit, the HTTP clients (one per connect
//! bound), the scope fingerprint.

use std::fmt;
use std::time::Duration;

use super::super::secret::{Secret, display_url, redact};
use super::send::describe;
use crate::error::ModelError;

/// What every HTTP provider holds, whatever its wire: the clients, where to send, the key, and the
/// caller's settings (the model, the sampling temperature, the token limit, the context window).
#[derive(Clone)]
pub(crate) struct Endpoint {
    clients: Clients,
    pub(crate) base_url: String,
    /// The base URL's host and port, parsed once: every call's span records them.
    server: Option<(String, u16)>,
    pub(crate) api_key: Option<Secret>,
    pub(crate) model: String,
    pub(crate) temperature: Option<f32>,
    /// The most tokens an answer may have, sent in the wire's field for it when set.
    pub(crate) max_tokens: Option<u32>,
    /// The model's context window in tokens, when the user declared it.
    pub(crate) context_window: Option<u64>,
}

impl Endpoint {
    /// The token limit a call's body asks for: the endpoint's, or `default` (a wire that requires
    /// one), lowered to what the exec's spend limits leave the call (`request_limit`).
    pub(crate) fn max_tokens_for(&self, request_limit: Option<u64>, default: Option<u32>) -> Option<u32> {
        let own = self.max_tokens.or(default);
        match (own, request_limit) {
            (own, None) => own,
            (None, Some(left)) => Some(u32::try_from(left).unwrap_or(u32::MAX)),
            (Some(own), Some(left)) => Some(own.min(u32::try_from(left).unwrap_or(u32::MAX))),
        }
    }

    /// An endpoint at `base_url` (trimmed: no surrounding whitespace, no trailing `/`) with
    /// `api_key` (an empty one is none), asking for `model`, with no temperature, token limit or
    /// context window.
    pub(crate) fn new(base_url: String, api_key: Option<String>, model: &str) -> Self {
        let base_url = trim_base_url(&base_url).to_owned();
        Self {
            clients: Clients::default(),
            server: server_of(&base_url),
            base_url,
            api_key: Secret::new(api_key),
            model: model.to_owned(),
            temperature: None,
            max_tokens: None,
            context_window: None,
        }
    }

    /// The server's host and port (`server.address`, `server.port` in traces); `None` for an
    /// invalid base URL.
    pub(crate) fn server(&self) -> Option<(&str, u16)> {
        self.server.as_ref().map(|(host, port)| (host.as_str(), *port))
    }

    /// The URL to post to: `path` (e.g. `/chat/completions`) after the base URL's path and before its
    /// query, which is kept (Azure's `?api-version=...`). A base URL with a fragment is refused as a
    /// programming error: a fragment is never sent, so `/v1#x` would post to `/v1` (from the
    /// environment, [`EnvNames::read`](super::env::EnvNames::read) refuses it first, as a
    /// [`ConfigError`](super::env::ConfigError)).
    pub(crate) fn url(&self, path: &str) -> Result<String, ModelError> {
        join_path(&self.base_url, path).map_err(|reason| {
            let text = format!("the base URL `{}` {reason}", display_url(&self.base_url));
            ModelError::programming("ConfigError", redact(&text, self.api_key.as_ref()))
        })
    }

    /// The HTTP client whose connections time out after `connect` (built once per value).
    pub(crate) fn client(&self, connect: Duration) -> Result<reqwest::Client, ModelError> {
        self.clients.get(connect)
    }

    /// `"<provider>:<fingerprint>"`: the first 16 hex digits of SHA-256 over the base URL and the
    /// key, so that calls with the same key share a retry quota and cooldowns, and the key itself
    /// never leaves the process. A one-way hash, because the fingerprint does leave it (a fleet's
    /// Redis keys), and a fixed one, because every process of a fleet, whatever its build, must
    /// compute the same (std's hasher may change between Rust releases). ring's SHA-256: rustls
    /// builds it anyway.
    pub(crate) fn scope(&self, provider: &str) -> String {
        let mut hasher = ring::digest::Context::new(&ring::digest::SHA256);
        hasher.update(self.base_url.as_bytes());
        hasher.update(&[0]);
        hasher.update(self.api_key.as_ref().map_or("", Secret::expose).as_bytes());
        let digest = hasher.finish();
        let hex: String = digest.as_ref()[..8].iter().map(|byte| format!("{byte:02x}")).collect();
        format!("{provider}:{hex}")
    }

    /// The shared Debug fields; the key shows as `<redacted>`.
    pub(crate) fn debug_fields<'a, 'b>(&self, f: &'a mut fmt::DebugStruct<'a, 'b>) -> &'a mut fmt::DebugStruct<'a, 'b> {
        f.field("base_url", &redact(&display_url(&self.base_url), self.api_key.as_ref()))
            .field("api_key", &self.api_key)
            .field("model", &self.model)
            .field("temperature", &self.temperature)
            .field("max_tokens", &self.max_tokens)
    }
}

/// The HTTP clients of one provider, one per connect timeout in use (reqwest sets that timeout per
/// client, not per request). A program uses one or two policies, so the list stays short; past
/// [`Clients::MAX`] values the oldest is dropped.
#[derive(Clone, Default)]
struct Clients(std::sync::Arc<std::sync::Mutex<Vec<(Duration, reqwest::Client)>>>);

impl Clients {
    const MAX: usize = 8;

    fn get(&self, connect: Duration) -> Result<reqwest::Client, ModelError> {
        let mut clients = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((_, client)) = clients.iter().find(|(timeout, _)| *timeout == connect) {
            return Ok(client.clone());
        }
        let client = client(connect)?;
        if clients.len() >= Self::MAX {
            clients.remove(0);
        }
        clients.push((connect, client.clone()));
        Ok(client)
    }
}

/// An HTTP client (the crate's TLS: rustls on ring with Mozilla's roots, `util/tls.rs`; HTTP/1.1;
/// the `HTTP_PROXY`/`HTTPS_PROXY` variables) whose connections time out after `connect`: a
/// connection that is never accepted must not hold a call until the kernel gives up (minutes); it
/// becomes a retryable timeout.
///
/// It follows no redirect: a model API answers a POST itself, and reqwest, following one to another
/// port or host, would send it the `x-api-key` header (it strips only `Authorization` and cookies)
/// and, on a 307 or 308, the prompt; a 3xx becomes a permanent error instead ([`redirect_error`](super::super::boundary::redirect_error)).
pub(crate) fn client(connect: Duration) -> Result<reqwest::Client, ModelError> {
    let unbuilt = |error: &(dyn std::error::Error + 'static)| {
        ModelError::programming("ConfigError", format!("cannot build the HTTP client: {}", describe(error)))
    };
    let tls = crate::util::tls::client_config().map_err(|error| unbuilt(&error))?;
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .user_agent(concat!("agentic-runtime/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(connect)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|error| unbuilt(&error))
}

/// Checks a base URL: absolute, `http` or `https`, no fragment. Returns it without a trailing `/`.
pub(crate) fn check_base_url(url: &str) -> Result<String, String> {
    let trimmed = trim_base_url(url);
    let parsed = reqwest::Url::parse(trimmed).map_err(|error| error.to_string())?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!("scheme `{}` is not http or https", parsed.scheme()));
    }
    join_path(trimmed, "").map_err(|reason| format!("it {reason}"))?;
    Ok(trimmed.to_owned())
}

/// `url` without surrounding whitespace, and without a trailing `/` unless it ends a query (where it
/// may be part of a value: [`join_path`] drops the path's own).
fn trim_base_url(url: &str) -> &str {
    let url = url.trim();
    if url.contains('?') { url } else { url.trim_end_matches('/') }
}

/// `base` with `path` appended to its path, before its query (`https://h/v1?v=1` and `/x` give
/// `https://h/v1/x?v=1`), the path's trailing `/` dropped; an error for a base with a fragment.
/// Text only: nothing is decoded or normalized, the URL is checked when the request is built.
fn join_path(base: &str, path: &str) -> Result<String, &'static str> {
    if base.contains('#') {
        return Err("has a fragment (`#...`), which is never sent to the server (calls would go to the URL \
             without it): remove it, and put what it holds in the path or the query");
    }
    let (before, query) = match base.split_once('?') {
        Some((before, query)) => (before, Some(query)),
        None => (base, None),
    };
    let mut url = format!("{}{path}", before.trim_end_matches('/'));
    if let Some(query) = query {
        url.push('?');
        url.push_str(query);
    }
    Ok(url)
}

/// The host and port of `base_url`: the port the URL names, else its scheme's (80, 443); an IPv6
/// address without its brackets, as OpenTelemetry's `server.address` wants it.
fn server_of(base_url: &str) -> Option<(String, u16)> {
    let url = reqwest::Url::parse(base_url).ok()?;
    let host = url.host_str().filter(|host| !host.is_empty())?;
    let host = host.strip_prefix('[').and_then(|host| host.strip_suffix(']')).unwrap_or(host);
    Some((host.to_owned(), url.port_or_known_default()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The digest a fleet's Redis keys are named by: pinned, so that processes of older and newer
    /// builds (sha2 then, ring now) keep sharing one retry quota and cooldown per key.
    #[test]
    fn the_scope_is_the_sha256_fingerprint_of_the_url_and_the_key() {
        let endpoint = Endpoint::new("https://api.openai.com/v1".to_owned(), Some("sk-test".to_owned()), "m");
        assert_eq!(endpoint.scope("openai"), "openai:493641ab4f38f29f");
        let local = Endpoint::new("http://127.0.0.1:8080/v1/".to_owned(), None, "m");
        assert_eq!(local.scope("anthropic"), "anthropic:ea69aead76bbb8cd");
    }

    #[test]
    fn base_urls_are_checked() {
        assert_eq!(check_base_url("http://127.0.0.1:8080/v1/").unwrap(), "http://127.0.0.1:8080/v1");
        assert!(check_base_url("localhost:8080").is_err());
        assert!(check_base_url("ftp://example.com").is_err());
        assert!(check_base_url("not a url").is_err());
        let azure = "https://x.openai.azure.com/openai/deployments/d?api-version=2024-10-21";
        assert_eq!(check_base_url(azure).unwrap(), azure);
        for fragment in ["http://127.0.0.1:8080/v1#frag", "http://127.0.0.1:8080/v1#", "https://h/v1?a=b#c"] {
            assert!(check_base_url(fragment).unwrap_err().starts_with("it has a fragment (`#...`)"), "{fragment}");
        }
    }

    #[test]
    fn the_path_goes_before_the_query() {
        let url = |base: &str| Endpoint::new(base.to_owned(), None, "m").url("/chat/completions");
        assert_eq!(url("http://h:1/v1").unwrap(), "http://h:1/v1/chat/completions");
        assert_eq!(url("http://h:1/v1/").unwrap(), "http://h:1/v1/chat/completions");
        assert_eq!(
            url("https://x.azure.com/openai/deployments/d/?api-version=2024-10-21").unwrap(),
            "https://x.azure.com/openai/deployments/d/chat/completions?api-version=2024-10-21"
        );
        assert_eq!(url("http://h/v1?a=1&b=/x/").unwrap(), "http://h/v1/chat/completions?a=1&b=/x/");
        assert_eq!(url(" http://h/v1/?b=/ ").unwrap(), "http://h/v1/chat/completions?b=/");
        assert_eq!(url("http://h?").unwrap(), "http://h/chat/completions?");
        let key = "sk-canary-SECRET123";
        let fragment = Endpoint::new(format!("http://h/v1?key={key}#{key}"), Some(key.to_owned()), "m");
        let error = fragment.url("/chat/completions").unwrap_err();
        assert!(error.is_programming(), "{error:?}");
        let text = format!("{error} {error:?}");
        assert!(text.contains("`http://h/v1?key=<redacted>#<redacted>` has a fragment"), "{text}");
        assert!(!text.contains("SECRET"), "{text}");
    }

    #[test]
    fn the_server_is_the_base_urls_host_and_port() {
        let server = |url: &str| Endpoint::new(url.to_owned(), None, "m").server().map(|(h, p)| (h.to_owned(), p));
        assert_eq!(server("https://api.openai.com/v1"), Some(("api.openai.com".to_owned(), 443)));
        assert_eq!(server("http://localhost/v1/"), Some(("localhost".to_owned(), 80)));
        assert_eq!(server(" http://127.0.0.1:8080/v1 "), Some(("127.0.0.1".to_owned(), 8080)));
        assert_eq!(server("https://[::1]:9443"), Some(("::1".to_owned(), 9443)));
        assert_eq!(server("https://user:sk-secret@proxy.example:8443"), Some(("proxy.example".to_owned(), 8443)));
        assert_eq!(server("localhost:8080"), None);
        assert_eq!(server("not a url"), None);
    }
}
