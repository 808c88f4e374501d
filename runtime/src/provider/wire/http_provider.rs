//! [`HttpProvider`]: every wire's public block, written once over the wire's type, and [`Wire`],
//! its bound. A wire brings its data and its request and events (`impl Codec`, see
//! `http/seam.rs`); the constructors, the settings, the accessors, the `Provider` impl and the
//! redacted `Debug` are the same for all.

use std::fmt;

use super::super::api_key::ApiKey;
use super::super::http::{self, Codec, ConfigError, Endpoint};
use super::super::{EventStream, Provider, Request};

/// A wire format an [`HttpProvider`] speaks: [`OpenAi`](super::OpenAi) (Chat Completions),
/// [`Anthropic`](super::Anthropic) (Messages), [`Gemini`](super::Gemini) (`generateContent`) and
/// [`Responses`](super::Responses) (OpenAI's Responses). Each wire's page says what it sends and
/// reads, and its settings: the variables `from_env` reads, the defaults, the field
/// `with_max_tokens` sets.
///
/// Sealed: the wires are this crate's (`WireKind` lists them); a server of another format is a
/// [`Provider`] of your own.
// The bound is the crate's own seam (the request a wire builds, the decoder of its stream), which
// names crate-private types: it seals the trait, so that no one else can implement it.
#[allow(private_bounds)]
pub trait Wire: Codec {}

/// A provider for a model API over HTTP, streamed (SSE), speaking the wire `W`: usually named by its
/// alias, [`OpenAiProvider`](super::OpenAiProvider), [`AnthropicProvider`](super::AnthropicProvider),
/// [`GeminiProvider`](super::GeminiProvider) or [`ResponsesProvider`](super::ResponsesProvider).
///
/// On every wire it sends the key in the wire's header (marked sensitive) only to the base URL's
/// server, the call's number as `x-agentic-call`, and the body the wire builds of the request; it
/// follows no redirect, bounds every phase of the call and the answer's size ([`CallBounds`]), and
/// turns every failure into a typed [`ModelError`]: the HTTP status with the error body's message
/// and code, the server's hints (`retry-after-ms`, `Retry-After`, `x-should-retry`), or the
/// transport kind. The key never appears in an error or in Debug output. A clone shares the HTTP
/// clients (their connections).
///
/// [`CallBounds`]: super::super::CallBounds
/// [`ModelError`]: crate::error::ModelError
///
/// # Examples
///
/// ```no_run
/// use agentic_runtime::Runtime;
/// use agentic_runtime::provider::{AnthropicProvider, OpenAiProvider};
///
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// // OPENAI_API_KEY, and OPENAI_BASE_URL for another server (no key needed then).
/// let provider = OpenAiProvider::from_env()?.with_model("gpt-4o-mini").with_max_tokens(512);
/// let reply = Runtime::new(provider).exec("Say hello.").await?;
/// println!("{}", reply.text());
///
/// // A local server: no key.
/// let local = OpenAiProvider::new("http://127.0.0.1:8080/v1", None).with_model("llama3");
/// // Another wire, the same settings.
/// let claude = AnthropicProvider::new("https://api.anthropic.com", "sk-ant-...").with_temperature(0.2);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct HttpProvider<W: Wire> {
    endpoint: Endpoint,
    wire: W,
}

impl<W: Wire> HttpProvider<W> {
    /// The default base URL: the provider's own API, where a key is required (the wire's page
    /// gives it, e.g. `https://api.openai.com/v1`).
    pub const DEFAULT_BASE_URL: &'static str = W::ENV.default_base_url;

    /// The default model (the wire's page gives it, e.g. `gpt-4o-mini`).
    pub const DEFAULT_MODEL: &'static str = W::DEFAULT_MODEL;

    /// A provider for the server at `base_url` (e.g. `https://api.openai.com/v1` or
    /// `http://127.0.0.1:8080/v1`; the wire's path is appended), with `api_key` if the server needs
    /// one (an empty key counts as none). An invalid base URL makes every call fail with a
    /// programming error; [`Self::from_env`] checks it up front.
    ///
    /// `api_key` is `None`, a `&str`, a `String` or an `Option<String>` (see [`ApiKey`]).
    pub fn new(base_url: impl Into<String>, api_key: impl Into<ApiKey>) -> Self {
        let mut endpoint = Endpoint::new(base_url.into(), api_key.into().into_option(), W::DEFAULT_MODEL);
        endpoint.max_tokens = W::DEFAULT_MAX_TOKENS;
        Self { endpoint, wire: W::default() }
    }

    /// A provider configured from the wire's environment variables: its key (e.g.
    /// `OPENAI_API_KEY`) and its base URL (e.g. `OPENAI_BASE_URL`, default
    /// [`Self::DEFAULT_BASE_URL`]); the wire's page names them. Fails when the base URL is invalid,
    /// or when there is no key and the base URL is the provider's own (a local server needs no
    /// key); the error names the variable to set.
    ///
    /// The key is the one paired with that base URL, and goes to its origin alone: for a server
    /// elsewhere, pass its own key to [`Self::new`] ([`WireKind::env_key_for`] gives the
    /// variables' key only to a base URL of their origin).
    ///
    /// [`WireKind::env_key_for`]: super::WireKind::env_key_for
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// The provider the variables `lookup` gives describe (see [`Self::from_env`]).
    pub(super) fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let (base_url, api_key) = W::ENV.read(lookup)?;
        Ok(Self::new(base_url, api_key))
    }

    /// The model to ask for (the wire's page says where it goes).
    ///
    /// # Default
    ///
    /// [`Self::DEFAULT_MODEL`].
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.endpoint.model = model.into();
        self
    }

    /// The most tokens the answer may have, sent in the wire's field for it (the wire's page names
    /// it) and declared to the pacer as the call's output estimate
    /// ([`Provider::max_output_tokens`]).
    ///
    /// # Default
    ///
    /// Unset: the server's default, on every wire whose API lets it be unset; Anthropic's requires
    /// one, 1024 ([`AnthropicProvider::DEFAULT_MAX_TOKENS`](super::AnthropicProvider::DEFAULT_MAX_TOKENS)).
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.endpoint.max_tokens = Some(max_tokens);
        self
    }

    /// The sampling temperature.
    ///
    /// # Default
    ///
    /// Unset: the server's default.
    pub fn with_temperature(mut self, temperature: f32) -> Self {
        self.endpoint.temperature = Some(temperature);
        self
    }

    /// The model's context window in tokens: with fallbacks (`RuntimeBuilder::with_fallback`), a
    /// conversation that overflows this provider moves to the next target when that one declares a
    /// larger window.
    ///
    /// # Default
    ///
    /// Unset: an overflow is compacted or ends the exec, as without fallbacks.
    pub fn with_context_window(mut self, tokens: u64) -> Self {
        self.endpoint.context_window = Some(tokens);
        self
    }

    /// The base URL, without a trailing `/`.
    pub fn base_url(&self) -> &str {
        &self.endpoint.base_url
    }

    /// The model asked for.
    pub fn model(&self) -> &str {
        &self.endpoint.model
    }

    /// True when a key is set.
    pub fn has_api_key(&self) -> bool {
        self.endpoint.api_key.is_some()
    }

    /// The body of `request` as first sent.
    #[cfg(test)]
    pub(super) fn body(&self, request: &Request<'_>) -> serde_json::Value {
        self.wire.body(&self.endpoint, request, http::Form::Primary)
    }

    /// Where the calls go, with the caller's settings.
    #[cfg(test)]
    pub(super) fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }
}

/// `HttpProvider<Gemini> { base_url: .., api_key: <redacted>, model: .., .. }`: the endpoint's
/// fields, the key redacted.
impl<W: Wire> fmt::Debug for HttpProvider<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = format!("HttpProvider<{:?}>", self.wire);
        self.endpoint.debug_fields(&mut f.debug_struct(&name)).finish_non_exhaustive()
    }
}

impl<W: Wire> Provider for HttpProvider<W> {
    fn name(&self) -> &str {
        W::PROVIDER
    }

    /// `"<name>:<fingerprint>"`, a hash of the base URL and the key (never the key itself).
    fn scope(&self) -> String {
        self.endpoint.scope(W::PROVIDER)
    }

    fn model(&self) -> Option<&str> {
        Some(&self.endpoint.model)
    }

    fn server(&self) -> Option<(&str, u16)> {
        self.endpoint.server()
    }

    fn context_window(&self) -> Option<u64> {
        self.endpoint.context_window
    }

    /// The token limit the body asks for: [`HttpProvider::with_max_tokens`]'s, else the wire's
    /// default (Anthropic's API requires one).
    fn max_output_tokens(&self) -> Option<u64> {
        self.endpoint.max_tokens.map(u64::from)
    }

    fn stream<'a>(&'a self, request: &'a Request<'a>) -> EventStream<'a> {
        http::stream_call(&self.wire, &self.endpoint, request)
    }
}
