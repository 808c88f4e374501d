//! Which key each target of `agentic ask` sends, the primary's and each fallback's.
//!
//! A key named for the target goes to it: `--api-key`, or the variable `--api-key-env` /
//! `--fallback-api-key-env` names (a name, so that no key is on a command line). Without one, a
//! target gets its wire's key (`OPENAI_API_KEY`, ...) only when its base URL has the origin of the
//! base URL that key goes with (`OPENAI_BASE_URL`, else the provider's own API:
//! `WireKind::env_key_for`), and none elsewhere: a local server, a gateway or a fallback on another
//! host never receives the user's real key unasked.

use std::sync::Arc;

use agentic_runtime::provider::display_url;
use agentic_runtime::provider::{Provider, WireKind};

/// A target of the exec, and the note about a key its wire's variables hold that it does not get.
pub(crate) struct Target {
    pub(crate) provider: Arc<dyn Provider>,
    pub(crate) withheld: Option<String>,
}

/// The key a target sends, and, when its wire's variables hold a key it does not get, the note
/// that says so (shown if the exec fails: a server that wanted a key answers 401).
#[derive(Debug, Default)]
pub(crate) struct TargetKey {
    pub(crate) key: Option<String>,
    pub(crate) withheld: Option<String>,
}

/// Who the key is for, as the messages name them.
#[derive(Clone, Copy)]
pub(crate) struct KeyOwner<'a> {
    /// `openai` for the primary, `fallback 1 (anthropic)` for a fallback.
    pub(crate) target: &'a str,
    /// The flag that names a variable for it: `--api-key-env` or `--fallback-api-key-env`.
    pub(crate) flag: &'a str,
}

/// The key of a target of `kind` at `base_url`: the one the variable `named` holds when a
/// variable is named (an error when it is not set, or is not a variable's name), else its wire's
/// under the origin rule. `env` reads the environment (an empty value is none).
pub(crate) fn target_key(
    kind: WireKind,
    base_url: &str,
    named: Option<&str>,
    owner: KeyOwner<'_>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<TargetKey, String> {
    if let Some(name) = named {
        return named_key(name, owner, env).map(|key| TargetKey { key: Some(key), withheld: None });
    }
    let key = kind.env_key_for(base_url, env);
    let set = kind.key_variables().iter().copied().find(|name| env(name).is_some());
    let withheld = match (&key, set) {
        (None, Some(variable)) => Some(withheld_note(kind, base_url, variable, owner, env)),
        _ => None,
    };
    Ok(TargetKey { key, withheld })
}

/// The key the variable `name` holds. The name is shown in the messages only when it is a
/// variable's name: anything else may be the key itself, passed by mistake.
fn named_key(name: &str, owner: KeyOwner<'_>, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let KeyOwner { target, flag } = owner;
    if !is_variable_name(name) {
        return Err(format!(
            "{flag} for {target} is not an environment variable's name (upper-case letters, digits and `_`, e.g. \
             MY_GATEWAY_KEY), so it is not shown, in case it is a key: pass the name of a variable that holds the \
             key, never the key itself"
        ));
    }
    env(name).ok_or_else(|| {
        format!(
            "{flag} {name} (for {target}) names a variable that is not set, or is empty: set {name} to the key \
             for that server, or leave {flag} out to send it none"
        )
    })
}

/// A `--fallback-api-key-env` value as a message may show it: the name, or a note that it is not one.
pub(crate) fn shown_name(name: &str) -> String {
    if is_variable_name(name) { name.to_owned() } else { "(not a variable's name: not shown)".to_owned() }
}

/// Whether `name` is an environment variable's name in the portable form: upper-case ASCII
/// letters, digits and `_`, not starting with a digit (POSIX's names for the utilities' variables).
/// Keys have `-` or lower-case letters, so a key passed by mistake is not taken for a name.
fn is_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|first| first == '_' || first.is_ascii_uppercase())
        && chars.all(|c| c == '_' || c.is_ascii_uppercase() || c.is_ascii_digit())
}

/// "OPENAI_API_KEY is set, but not sent to `http://h/v1` (fallback 1 (openai)): ..." — what a user
/// whose server answers 401 needs to know.
fn withheld_note(
    kind: WireKind,
    base_url: &str,
    variable: &str,
    owner: KeyOwner<'_>,
    env: &dyn Fn(&str) -> Option<String>,
) -> String {
    let url_variable = kind.base_url_variable();
    let home = match env(url_variable) {
        Some(url) => format!("{url_variable}, `{}`", display_url(&url)),
        None => format!("{} ({url_variable} is unset)", kind.default_base_url()),
    };
    format!(
        "note: {variable} is set, but was not sent to `{}` ({}): a wire's key goes only to the origin of the \
         base URL it is paired with, {home}; to send that server a key, set a variable to it and pass {} VAR",
        display_url(base_url),
        owner.target,
        owner.flag
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variable_names_are_the_portable_ones() {
        for name in ["OPENAI_API_KEY", "_K", "K2", "MY_GATEWAY_KEY_2"] {
            assert!(is_variable_name(name), "{name}");
        }
        for name in ["", "2K", "sk-abc123", "my_key", "AIzaSyA-bc", "K EY", "KÉY"] {
            assert!(!is_variable_name(name), "{name}");
        }
        assert_eq!(shown_name("sk-secret"), "(not a variable's name: not shown)");
    }
}
