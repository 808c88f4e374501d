//! The wires the HTTP providers speak, one module each (the wire's type and data and the request it
//! sends in `openai.rs`, the events it reads, its error vocabulary and its usage in `openai/`), on
//! the plumbing of `provider/http/`; the provider every wire shares, [`HttpProvider`]
//! (`http_provider.rs`); and their registry, [`WireKind`], the only place that names every wire.
//!
//! A new wire is a file here (see `http/seam.rs` for what it holds: its type, its data, its request
//! and its decoder; the public block is [`HttpProvider`]'s), one `WireKind` variant, and one arm in
//! each `match` below ([`WireKind::name`], [`WireKind::summary`] and `dispatch!`): the compiler
//! points at each. Nothing else in the crate names a wire: `agentic ask`, the fuzz targets and the
//! tests go through [`WireKind::ALL`]. Beside the wires: `finish.rs`, the failures a finish reason
//! comes to on every wire, and `parts.rs`, a Chat Completions `content` made of parts.

mod anthropic;
mod finish;
mod gemini;
mod http_provider;
mod openai;
mod parts;
mod responses;

use std::sync::Arc;

pub use self::anthropic::{Anthropic, AnthropicProvider};
pub use self::gemini::{Gemini, GeminiProvider};
pub use self::http_provider::{HttpProvider, Wire};
pub use self::openai::{OpenAi, OpenAiProvider};
pub use self::responses::{Responses, ResponsesProvider};
use super::Provider;
use super::http::{self, Codec, ConfigError, Item, Secret};

/// A wire format an HTTP provider speaks, by the name the chaos server's journal and `agentic ask
/// --provider` use for it.
///
/// # Examples
///
/// ```
/// use agentic_runtime::provider::WireKind;
///
/// let kind = WireKind::from_name("anthropic").unwrap();
/// assert_eq!(kind.base_url_variable(), "ANTHROPIC_BASE_URL");
/// // A provider of that wire, for a server of your own (no key).
/// let provider = kind.provider("http://127.0.0.1:8080", None, Some("claude-3-5-haiku-latest"));
/// assert_eq!(provider.name(), "anthropic");
/// assert!(WireKind::ALL.iter().all(|kind| WireKind::from_name(kind.name()) == Some(*kind)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WireKind {
    /// OpenAI-compatible chat completions, `POST {base}/chat/completions` ([`OpenAi`]).
    OpenAi,
    /// Anthropic's Messages, `POST {base}/v1/messages` ([`Anthropic`]).
    Anthropic,
    /// Google's Gemini, `POST {base}/models/{model}:streamGenerateContent?alt=sse` ([`Gemini`]).
    Gemini,
    /// OpenAI's Responses, `POST {base}/responses` ([`Responses`]).
    Responses,
}

/// Runs `$body` with `$W` the type of wire `$kind`: one monomorphic arm per wire.
macro_rules! dispatch {
    ($kind:expr, $W:ident => $body:expr) => {
        match $kind {
            WireKind::OpenAi => {
                type $W = OpenAi;
                $body
            }
            WireKind::Anthropic => {
                type $W = Anthropic;
                $body
            }
            WireKind::Gemini => {
                type $W = Gemini;
                $body
            }
            WireKind::Responses => {
                type $W = Responses;
                $body
            }
        }
    };
}

impl WireKind {
    /// Every wire, in a fixed order: new wires are appended, so that a fuzz input that picks
    /// `ALL[byte % len]` keeps its meaning for the wires it already knew.
    pub const ALL: &'static [WireKind] =
        &[WireKind::OpenAi, WireKind::Anthropic, WireKind::Gemini, WireKind::Responses];

    /// The wire's name: `openai`, `anthropic` (the chaos journal's and `agentic ask --provider`'s).
    pub const fn name(self) -> &'static str {
        match self {
            WireKind::OpenAi => "openai",
            WireKind::Anthropic => "anthropic",
            WireKind::Gemini => "gemini",
            WireKind::Responses => "responses",
        }
    }

    /// The wire named `name` ([`WireKind::name`]), if any.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|kind| kind.name() == name)
    }

    /// What the wire is and who speaks it, in one line (for `agentic ask --help`).
    pub const fn summary(self) -> &'static str {
        match self {
            WireKind::OpenAi => {
                "OpenAI-compatible `/chat/completions` (OpenAI, vLLM, Ollama, llama.cpp, OpenRouter, ...)"
            }
            WireKind::Anthropic => "Anthropic `/v1/messages`",
            WireKind::Gemini => "Google Gemini `/models/{model}:streamGenerateContent` (key in `x-goog-api-key`)",
            WireKind::Responses => "OpenAI's Responses `/responses` (the key and base URL of `openai`)",
        }
    }

    /// What its providers' `Provider::name()` is: the OpenTelemetry `gen_ai.provider.name` and the
    /// scope prefix (`openai`, `anthropic`, `gcp.gemini`), which may differ from [`WireKind::name`]:
    /// `openai` for both of OpenAI's wires, which share a key's rate limits.
    pub fn provider_name(self) -> &'static str {
        dispatch!(self, W => <W as Codec>::PROVIDER)
    }

    /// The variables that may hold the key, in the order they are read, e.g. `["OPENAI_API_KEY"]`.
    pub fn key_variables(self) -> &'static [&'static str] {
        dispatch!(self, W => <W as Codec>::ENV.keys)
    }

    /// The variable that holds the base URL, e.g. `OPENAI_BASE_URL`.
    pub fn base_url_variable(self) -> &'static str {
        dispatch!(self, W => <W as Codec>::ENV.base_url)
    }

    /// The provider's own base URL, where a key is required (e.g. `https://api.openai.com/v1`).
    pub fn default_base_url(self) -> &'static str {
        dispatch!(self, W => <W as Codec>::ENV.default_base_url)
    }

    /// The model asked for when none is named.
    pub fn default_model(self) -> &'static str {
        dispatch!(self, W => <W as Codec>::DEFAULT_MODEL)
    }

    /// A provider of this wire for the server at `base_url`, with `api_key` if it needs one (an empty
    /// key counts as none) and `model` (else [`WireKind::default_model`]), the wire's other options at
    /// their defaults. As the providers' own `new`, an invalid base URL makes every call fail with a
    /// programming error; [`WireKind::from_env`] checks it up front.
    pub fn provider(
        self,
        base_url: impl Into<String>,
        api_key: Option<String>,
        model: Option<&str>,
    ) -> Arc<dyn Provider> {
        let base_url = base_url.into();
        dispatch!(self, W => {
            let provider = HttpProvider::<W>::new(base_url, api_key);
            Arc::new(match model {
                Some(model) => provider.with_model(model),
                None => provider,
            })
        })
    }

    /// A provider of this wire configured from its environment variables, as its `from_env` does.
    pub fn from_env(self) -> Result<Arc<dyn Provider>, ConfigError> {
        let (base_url, api_key) = dispatch!(self, W => <W as Codec>::ENV.read(|name| std::env::var(name).ok()))?;
        Ok(self.provider(base_url, api_key, None))
    }

    /// The key this wire's variables give a target at `base_url`, read through `lookup` (e.g.
    /// `|name| std::env::var(name).ok()`): the first of [`WireKind::key_variables`] that is set,
    /// when `base_url` has the origin of the base URL that key goes with, the
    /// [`WireKind::base_url_variable`]'s or, when that is unset, [`WireKind::default_base_url`];
    /// otherwise `None`. The origin is the scheme, host and port (the scheme's default port written
    /// or not): a trailing `/` or another path on the same origin is the same server, `http://` for
    /// an `https://` one or another port is not. A base URL variable that is not a valid URL goes
    /// with no server.
    ///
    /// This is the rule `from_env` follows (its base URL is always the variables' own) and
    /// `agentic ask` follows for every target: a local server, a gateway or a fallback on another
    /// host never receives the key meant for the provider's API; give it a key of its own.
    ///
    /// # Examples
    ///
    /// ```
    /// use agentic_runtime::provider::WireKind;
    ///
    /// let env = |name: &str| (name == "OPENAI_API_KEY").then(|| "sk-real".to_owned());
    /// let openai = WireKind::OpenAi;
    /// assert_eq!(openai.env_key_for("https://api.openai.com/v1/", env).as_deref(), Some("sk-real"));
    /// assert_eq!(openai.env_key_for("http://127.0.0.1:11434/v1", env), None); // a local Ollama
    /// assert_eq!(openai.env_key_for("http://api.openai.com/v1", env), None); // not over plain HTTP
    /// ```
    pub fn env_key_for(self, base_url: &str, lookup: impl Fn(&str) -> Option<String>) -> Option<String> {
        dispatch!(self, W => <W as Codec>::ENV.key_for(base_url, &lookup))
    }

    /// What a call of this wire yields for a body that arrives in `reads` (or, with `whole`, as one
    /// JSON answer), without a connection: for the fuzz targets.
    pub(crate) fn replay(self, reads: &[&[u8]], whole: bool, secret: Option<Secret>) -> Vec<Item> {
        dispatch!(self, W => http::replay(<W as Codec>::Decoder::default(), reads, whole, secret))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::StreamEvent;

    #[test]
    fn names_round_trip_and_each_wire_builds_its_provider() {
        assert_eq!(
            WireKind::ALL.iter().map(|kind| kind.name()).collect::<Vec<_>>(),
            ["openai", "anthropic", "gemini", "responses"]
        );
        // What the providers report (traces, scopes): a wire that shares another's keys shares its name.
        let provider_names: Vec<&str> = WireKind::ALL.iter().map(|kind| kind.provider_name()).collect();
        assert_eq!(provider_names, ["openai", "anthropic", "gcp.gemini", "openai"]);
        for &kind in WireKind::ALL {
            assert_eq!(WireKind::from_name(kind.name()), Some(kind));
            let provider = kind.provider("http://127.0.0.1:9/v1", Some("sk-canary-SECRET123".into()), Some("m-1"));
            assert_eq!((provider.name(), provider.model()), (kind.provider_name(), Some("m-1")));
            assert_eq!(provider.server(), Some(("127.0.0.1", 9)));
            assert!(provider.scope().starts_with(&format!("{}:", kind.provider_name())), "{}", provider.scope());
            assert_eq!(kind.provider(kind.default_base_url(), None, None).model(), Some(kind.default_model()));
            assert!(kind.key_variables()[0].ends_with("_API_KEY") && kind.base_url_variable().ends_with("_BASE_URL"));
        }
        assert_eq!(WireKind::from_name("OpenAI"), None);
        assert_eq!(WireKind::OpenAi.default_base_url(), OpenAiProvider::DEFAULT_BASE_URL);
        assert_eq!(WireKind::Anthropic.default_model(), AnthropicProvider::DEFAULT_MODEL);
        assert_eq!(
            (WireKind::Gemini.provider_name(), WireKind::Gemini.key_variables()),
            ("gcp.gemini", &["GEMINI_API_KEY", "GOOGLE_API_KEY"][..])
        );
    }

    /// On every wire the variables' key goes to the origin of the base URL they go with and to no
    /// other, and `from_env` keeps it paired with that base URL.
    #[test]
    fn each_wires_key_goes_only_to_its_base_urls_origin() {
        let local = "http://127.0.0.1:11434/v1";
        for &kind in WireKind::ALL {
            let key_var = kind.key_variables()[kind.key_variables().len() - 1];
            let only_key = |name: &str| (name == key_var).then(|| "sk-real".to_owned());
            let real = Some("sk-real".to_owned());
            assert_eq!(kind.env_key_for(kind.default_base_url(), only_key), real, "{kind:?}");
            assert_eq!(kind.env_key_for(&format!("{}/", kind.default_base_url()), only_key), real, "{kind:?}");
            assert_eq!(kind.env_key_for(local, only_key), None, "{kind:?}");
            let plain_http = kind.default_base_url().replacen("https://", "http://", 1);
            assert_eq!(kind.env_key_for(&plain_http, only_key), None, "{kind:?}");
            let url_var = kind.base_url_variable();
            let at_local = |name: &str| match name {
                _ if name == key_var => Some("sk-real".to_owned()),
                _ if name == url_var => Some(local.to_owned()),
                _ => None,
            };
            assert_eq!(kind.env_key_for(local, at_local), real, "{kind:?}");
            assert_eq!(kind.env_key_for(kind.default_base_url(), at_local), None, "{kind:?}");
            let read = dispatch!(kind, W => <W as Codec>::ENV.read(at_local)).unwrap();
            assert_eq!(read, (local.to_owned(), real), "{kind:?}");
        }
    }

    /// Each wire declares the token limit its body asks for, and only that one.
    #[test]
    fn the_declared_output_limit_is_the_one_the_body_sends() {
        let base = "http://127.0.0.1:9/v1";
        assert_eq!(OpenAiProvider::new(base, None).max_output_tokens(), None);
        assert_eq!(OpenAiProvider::new(base, None).with_max_tokens(300).max_output_tokens(), Some(300));
        assert_eq!(ResponsesProvider::new(base, None).max_output_tokens(), None);
        assert_eq!(ResponsesProvider::new(base, None).with_max_tokens(301).max_output_tokens(), Some(301));
        assert_eq!(GeminiProvider::new(base, None).max_output_tokens(), None);
        assert_eq!(GeminiProvider::new(base, None).with_max_tokens(302).max_output_tokens(), Some(302));
        // Anthropic's API requires one: the default is sent, and declared.
        let anthropic = AnthropicProvider::new(base, None);
        assert_eq!(anthropic.max_output_tokens(), Some(u64::from(AnthropicProvider::DEFAULT_MAX_TOKENS)));
        assert_eq!(anthropic.with_max_tokens(303).max_output_tokens(), Some(303));
        for &kind in WireKind::ALL {
            let declared = kind.provider(base, None, None).max_output_tokens();
            assert_eq!(declared.is_some(), kind == WireKind::Anthropic, "{}", kind.name());
        }
    }

    /// A body that is bare JSON, not events: the same items on every wire wherever the reads split
    /// it, and what it says when it is an error.
    #[test]
    fn a_bare_json_body_gives_the_same_items_however_it_is_split() {
        let error =
            r#"{"error":{"message":"Incorrect API key","type":"invalid_request_error","code":"invalid_api_key"}}"#;
        let pretty = "{\n  \"error\": {\"type\": \"overloaded_error\", \"message\": \"Overloaded\"}\n}";
        for body in [format!("{error}\n"), format!("{error}\ndata: {{}}\n\n"), error.to_owned(), pretty.to_owned()] {
            let bytes = body.as_bytes();
            let first = WireKind::OpenAi.replay(&[bytes], false, None);
            assert!(matches!(&first[..], [Ok(StreamEvent::Error { error: Some(_), .. })]), "{body}: {first:?}");
            for &kind in WireKind::ALL {
                assert_eq!(kind.replay(&[bytes], false, None), first, "{body} on {kind:?}");
            }
            for at in 1..bytes.len() {
                assert_eq!(
                    WireKind::OpenAi.replay(&[&bytes[..at], &bytes[at..]], false, None),
                    first,
                    "{body} at {at}"
                );
            }
        }
    }
}
