//! [`ApiKey`]: what a provider's constructor takes as its key, so that `"sk-..."`, a `String`, an
//! `Option<String>` from the environment and `None` all read as themselves.

use std::fmt;

/// A provider's API key, or none (a local server). Made from `&str`, `String` or
/// `Option<String>`; an empty key counts as none. Its `Debug` never shows the key.
///
/// # Examples
///
/// ```
/// use agentic_runtime::provider::OpenAiProvider;
///
/// let local = OpenAiProvider::new("http://127.0.0.1:8080/v1", None);
/// let keyed = OpenAiProvider::new("https://api.openai.com/v1", "sk-example");
/// let from_env = OpenAiProvider::new("https://api.openai.com/v1", std::env::var("OPENAI_API_KEY").ok());
/// assert!(!format!("{keyed:?}").contains("sk-example"));
/// # let _ = (local, from_env);
/// ```
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ApiKey(Option<String>);

impl ApiKey {
    /// The key, if there is one (an empty one is none).
    pub(crate) fn into_option(self) -> Option<String> {
        self.0.filter(|key| !key.is_empty())
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.as_deref().is_some_and(|key| !key.is_empty()) {
            "ApiKey(<redacted>)"
        } else {
            "ApiKey(None)"
        })
    }
}

impl From<&str> for ApiKey {
    fn from(key: &str) -> Self {
        Self(Some(key.to_owned()))
    }
}

impl From<String> for ApiKey {
    fn from(key: String) -> Self {
        Self(Some(key))
    }
}

/// Also what makes a bare `None` read as "no key": it is the one `Option` an `ApiKey` comes from.
impl From<Option<String>> for ApiKey {
    fn from(key: Option<String>) -> Self {
        Self(key)
    }
}
