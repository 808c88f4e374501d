//! What the flags that name a target share, the primary's (`--provider`, `--base-url`) and each
//! fallback's (`--fallback-provider`, `--fallback-base-url`): the wire's name parsed against the
//! registry, and a base URL checked before any request is made.

use agentic_runtime::provider::WireKind;
use agentic_runtime::provider::display_url;

/// The values of a flag that names a wire: every wire of the registry, by name, with its summary as
/// the help (an unknown name lists them and suggests the nearest, as clap does).
pub(crate) fn provider_parser() -> impl clap::builder::TypedValueParser<Value = WireKind> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    let values = WireKind::ALL.iter().map(|kind| PossibleValue::new(kind.name()).help(kind.summary()));
    // Only the names listed get here: the parser refuses any other first.
    PossibleValuesParser::new(values).map(|name| WireKind::from_name(&name).unwrap_or(WireKind::ALL[0]))
}

/// Whose base URL a message is about, and the flag that sets it.
#[derive(Clone, Copy)]
pub(crate) struct Whose<'a> {
    /// `""` for the primary, ` of fallback 1 (anthropic)` for a fallback.
    pub(crate) owner: &'a str,
    /// `--base-url` or `--fallback-base-url`.
    pub(crate) flag: &'a str,
}

/// `Ok` when `base_url` is one a provider of `kind` can call: an http(s) URL without a fragment.
/// The messages show the URL with any credentials in it redacted.
pub(crate) fn check_base_url(base_url: &str, kind: WireKind, whose: Whose<'_>) -> Result<(), String> {
    let Whose { owner, flag } = whose;
    if !base_url.starts_with("http://") && !base_url.starts_with("https://") {
        return Err(format!(
            "the base URL `{}`{owner} is not an http(s) URL: pass e.g. {flag} http://127.0.0.1:8080{}",
            display_url(base_url),
            base_path(kind.default_base_url())
        ));
    }
    if base_url.contains('#') {
        // The provider would refuse it at the first call; a flag's mistake is a usage error, now.
        return Err(format!(
            "the base URL `{}`{owner} has a fragment (`#...`), which is never sent to the server: remove it \
             (a query, `?api-version=...`, is kept after the path)",
            display_url(base_url)
        ));
    }
    Ok(())
}

/// Whether `base_url` is the wire's own (`https://api.openai.com/v1`), where a key is required.
pub(crate) fn is_default_base_url(base_url: &str, kind: WireKind) -> bool {
    base_url.trim_end_matches('/') == kind.default_base_url()
}

/// The path of a wire's own base URL (`/v1` of `https://api.openai.com/v1`), for the example of a
/// local one.
fn base_path(default_url: &str) -> &str {
    let after_scheme = default_url.split_once("://").map_or(default_url, |(_, rest)| rest);
    after_scheme.find('/').map_or("", |at| &after_scheme[at..])
}
