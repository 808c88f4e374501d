//! A provider's configuration from the environment, and which server a key from it may go to.
//!
//! A wire's variables come as a pair: the key (`OPENAI_API_KEY`) and the base URL it goes with
//! (`OPENAI_BASE_URL`, else the provider's own API). The key is sent only to that base URL's
//! origin, its scheme, host and port: any other server (a local Ollama, a gateway, a fallback on
//! another host) gets no key from the variables, so that pointing a target elsewhere never hands
//! it the user's real key. docs/design.md §19.

use super::endpoint::check_base_url;

/// A provider's configuration from the environment is incomplete or invalid (see
/// [`HttpProvider::from_env`] and [`WireKind::from_env`]). Its text names the environment variable
/// to set.
///
/// [`HttpProvider::from_env`]: crate::provider::HttpProvider::from_env
/// [`WireKind::from_env`]: crate::provider::WireKind::from_env
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// No API key, and the base URL is the provider's own (a local server needs none).
    #[error(
        "{provider}: no API key: set {key_variable} to your API key \
         (or set {base_url_variable} to a server that needs none)"
    )]
    MissingApiKey {
        /// The provider, e.g. `"openai"`.
        provider: &'static str,
        /// The variable that holds the key, e.g. `OPENAI_API_KEY`.
        key_variable: &'static str,
        /// The variable that holds the base URL, e.g. `OPENAI_BASE_URL`.
        base_url_variable: &'static str,
    },
    /// The base URL is not an absolute `http` or `https` URL.
    #[error("{variable} is not a valid base URL ({reason}): set it to e.g. {example}")]
    InvalidBaseUrl {
        /// The variable that holds it, e.g. `OPENAI_BASE_URL`.
        variable: &'static str,
        /// What is wrong with it.
        reason: String,
        /// A valid value.
        example: &'static str,
    },
}

/// The environment variables and defaults of one provider.
pub(crate) struct EnvNames {
    /// e.g. `"openai"`.
    pub(crate) provider: &'static str,
    /// The variables that may hold the key, read in this order, e.g. `["OPENAI_API_KEY"]` (Gemini's
    /// SDKs read `GEMINI_API_KEY`, then `GOOGLE_API_KEY`). The first is the one errors name; never empty.
    pub(crate) keys: &'static [&'static str],
    /// e.g. `OPENAI_BASE_URL`.
    pub(crate) base_url: &'static str,
    /// The provider's own base URL (a key is required there).
    pub(crate) default_base_url: &'static str,
}

impl EnvNames {
    /// The base URL and key from `lookup`, checked: a valid URL, and a key unless the URL is a
    /// server of the user's own.
    pub(crate) fn read(
        &self,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<(String, Option<String>), ConfigError> {
        let base_url = self.home(&lookup)?;
        let api_key = self.key_for(&base_url, &lookup);
        if api_key.is_none() && base_url == self.default_base_url {
            return Err(ConfigError::MissingApiKey {
                provider: self.provider,
                key_variable: self.keys.first().copied().unwrap_or_default(),
                base_url_variable: self.base_url,
            });
        }
        Ok((base_url, api_key))
    }

    /// The key the variables give a target at `base_url`: theirs when `base_url` has the origin of
    /// the base URL they go with ([`EnvNames::home`]), else none. A base URL variable that is not
    /// a valid URL goes with no server.
    pub(crate) fn key_for(&self, base_url: &str, lookup: &impl Fn(&str) -> Option<String>) -> Option<String> {
        let home = self.home(lookup).ok()?;
        if !same_origin(base_url, &home) {
            return None;
        }
        self.keys.iter().find_map(|key| non_empty(lookup, key))
    }

    /// The base URL the key variables go with: the base URL variable's value, checked, or the
    /// provider's own when it is unset (or empty).
    fn home(&self, lookup: &impl Fn(&str) -> Option<String>) -> Result<String, ConfigError> {
        match non_empty(lookup, self.base_url) {
            Some(url) => check_base_url(&url).map_err(|reason| ConfigError::InvalidBaseUrl {
                variable: self.base_url,
                reason,
                example: self.default_base_url,
            }),
            None => Ok(self.default_base_url.to_owned()),
        }
    }
}

/// Whether two base URLs have the same origin: scheme, host and port (a scheme's default port
/// written or not, a host in any case), whatever their paths, queries or userinfo. The origin is
/// where a request goes, the boundary reqwest keeps `Authorization` within on a redirect and a
/// browser keeps its credentials within; two paths of one origin are one server. Surrounding
/// whitespace is ignored, as [`check_base_url`] ignores it; a URL that does not parse as an
/// `http(s)` URL has no origin and matches nothing.
pub(crate) fn same_origin(a: &str, b: &str) -> bool {
    let origin = |url: &str| {
        reqwest::Url::parse(url.trim())
            .ok()
            .filter(|url| matches!(url.scheme(), "http" | "https"))
            .map(|url| url.origin())
    };
    match (origin(a), origin(b)) {
        (Some(a), Some(b)) => a.is_tuple() && a == b,
        _ => false,
    }
}

/// Reads a configuration variable through `lookup`; an empty value counts as unset.
pub(crate) fn non_empty(lookup: &impl Fn(&str) -> Option<String>, name: &str) -> Option<String> {
    lookup(name).map(|value| value.trim().to_owned()).filter(|value| !value.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ANTHROPIC: EnvNames = EnvNames {
        provider: "anthropic",
        keys: &["ANTHROPIC_API_KEY"],
        base_url: "ANTHROPIC_BASE_URL",
        default_base_url: "https://api.anthropic.com",
    };

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| pairs.iter().find(|(key, _)| *key == name).map(|(_, value)| (*value).to_owned())
    }

    #[test]
    fn a_base_url_with_a_fragment_from_the_environment_is_a_config_error() {
        let lookup = |name: &str| (name == "ANTHROPIC_BASE_URL").then(|| "http://127.0.0.1:9/#sk-secret".to_owned());
        let error = ANTHROPIC.read(lookup).unwrap_err();
        assert!(matches!(error, ConfigError::InvalidBaseUrl { variable: "ANTHROPIC_BASE_URL", .. }), "{error:?}");
        let text = error.to_string();
        assert!(text.starts_with("ANTHROPIC_BASE_URL is not a valid base URL (it has a fragment (`#...`)"), "{text}");
        assert!(
            text.ends_with(
                "remove it, and put what it holds in the path or the query): set it to e.g. https://api.anthropic.com"
            ),
            "{text}"
        );
        assert!(!text.contains("sk-secret"), "{text}");
    }

    #[test]
    fn origins_are_scheme_host_and_port() {
        for (a, b) in [
            ("https://api.openai.com/v1", "https://api.openai.com/v1/"),
            ("https://api.openai.com/v1", "https://API.openai.com:443/v2?x=1"),
            ("http://127.0.0.1:80/v1", " http://127.0.0.1/ "),
            ("http://user:pass@h:8080/a", "http://h:8080/b"),
            ("https://[::1]:9443/v1", "https://[0:0:0:0:0:0:0:1]:9443"),
        ] {
            assert!(same_origin(a, b), "{a} and {b}");
        }
        for (a, b) in [
            ("https://api.openai.com/v1", "http://api.openai.com/v1"),
            ("https://api.openai.com/v1", "https://api.openai.com:8443/v1"),
            ("https://api.openai.com/v1", "https://api.openai.com.evil.example/v1"),
            ("http://localhost:8080", "http://127.0.0.1:8080"),
            ("http://127.0.0.1:8080/v1", "http://127.0.0.1:8081/v1"),
            ("localhost:8080", "localhost:8080"),
            ("file:///v1", "file:///v1"),
            ("not a url", "not a url"),
        ] {
            assert!(!same_origin(a, b), "{a} and {b}");
        }
    }

    /// The key goes to the base URL it is paired with, and to no other server.
    #[test]
    fn the_key_goes_only_to_the_origin_its_base_url_variable_names() {
        let key = Some("sk-ant-K2".to_owned());
        // No base URL variable: the key goes with the provider's own API.
        let only_key = env(&[("ANTHROPIC_API_KEY", "sk-ant-K2")]);
        assert_eq!(ANTHROPIC.key_for("https://api.anthropic.com", &only_key), key);
        assert_eq!(ANTHROPIC.key_for("https://api.anthropic.com/", &only_key), key);
        assert_eq!(ANTHROPIC.key_for("http://127.0.0.1:11434", &only_key), None);
        assert_eq!(ANTHROPIC.key_for("http://api.anthropic.com", &only_key), None, "not over plain HTTP");
        // A base URL variable: its origin, and no longer the provider's own.
        let gateway =
            env(&[("ANTHROPIC_API_KEY", "sk-ant-K2"), ("ANTHROPIC_BASE_URL", "https://gw.example/anthropic/")]);
        assert_eq!(ANTHROPIC.key_for("https://gw.example/anthropic", &gateway), key);
        assert_eq!(ANTHROPIC.key_for("https://gw.example/other-path", &gateway), key, "one origin, one server");
        assert_eq!(ANTHROPIC.key_for("https://api.anthropic.com", &gateway), None);
        assert_eq!(ANTHROPIC.key_for("https://gw.example:8443/anthropic", &gateway), None);
        // An invalid base URL variable goes with no server; no key variable gives no key.
        let invalid = env(&[("ANTHROPIC_API_KEY", "sk-ant-K2"), ("ANTHROPIC_BASE_URL", "gw.example")]);
        assert_eq!(ANTHROPIC.key_for("https://api.anthropic.com", &invalid), None);
        assert_eq!(ANTHROPIC.key_for("https://api.anthropic.com", &env(&[])), None);
        // from_env's pair is always one origin: the key goes with it.
        assert_eq!(ANTHROPIC.read(&gateway).unwrap(), ("https://gw.example/anthropic".to_owned(), key));
    }
}
