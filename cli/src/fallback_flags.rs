//! `agentic ask`'s fallbacks: `--fallback-provider P --fallback-base-url URL [--fallback-model M]
//! [--fallback-api-key-env VAR]`, repeatable, the targets an exec moves to in order
//! (`RuntimeBuilder::with_fallback`).
//!
//! The n-th `--fallback-base-url`, `--fallback-model` and `--fallback-api-key-env` go with the n-th
//! `--fallback-provider`, as clap collects each flag's values in order; a count that does not match
//! is a usage error naming the fallback left without its flag, rather than a guess at which one was
//! meant.

use agentic_runtime::exec::MAX_TARGETS;
use agentic_runtime::provider::WireKind;
use agentic_runtime::provider::display_url;

use crate::target_key::{KeyOwner, Target, shown_name, target_key};
use crate::wire_flags::{Whose, check_base_url, is_default_base_url, provider_parser};

/// The fallbacks of one exec, in the order given.
#[derive(Debug, Default, clap::Args)]
pub(crate) struct FallbackFlags {
    /// A target to fall back to, by wire name as for --provider (repeatable: the targets in order).
    /// Its key: the variable --fallback-api-key-env names, else its wire's (ANTHROPIC_API_KEY, ...)
    /// only at the origin of the base URL that key goes with (ANTHROPIC_BASE_URL, else the
    /// provider's own API), else none.
    #[arg(long = "fallback-provider", value_name = "P", value_parser = provider_parser(), help_heading = "Fallback")]
    providers: Vec<WireKind>,
    /// The base URL of the n-th --fallback-provider (one for each).
    #[arg(long = "fallback-base-url", value_name = "URL", help_heading = "Fallback")]
    base_urls: Vec<String>,
    /// The model of the n-th --fallback-provider (one for each, or none) [default: its wire's].
    #[arg(long = "fallback-model", value_name = "M", help_heading = "Fallback")]
    models: Vec<String>,
    /// The name of the environment variable holding the key of the n-th --fallback-provider (one
    /// for each, or none; "" for one that takes none named). Never the key itself.
    #[arg(long = "fallback-api-key-env", value_name = "VAR", help_heading = "Fallback")]
    key_variables: Vec<String>,
}

impl FallbackFlags {
    /// The fallbacks in order, each with its key (see `target_key`: `env` reads the variables), or
    /// what is wrong with the flags.
    pub(crate) fn targets(&self, env: &dyn Fn(&str) -> Option<String>) -> Result<Vec<Target>, String> {
        if self.providers.len() >= MAX_TARGETS {
            return Err(format!(
                "--fallback-provider is given {} times, and a runtime has at most {} fallbacks (its targets \
                 are at most {MAX_TARGETS}, the primary included)",
                self.providers.len(),
                MAX_TARGETS - 1
            ));
        }
        self.paired("--fallback-base-url", &self.base_urls, None, |url| display_url(url).into_owned())?;
        let default_model = |kind: WireKind| {
            format!(
                "each fallback then asks for its wire's default model, `{}` for {}",
                kind.default_model(),
                kind.name()
            )
        };
        self.paired("--fallback-model", &self.models, Some(&default_model), Clone::clone)?;
        let wire_key = |_: WireKind| {
            "each fallback then gets its wire's key only at the origin that key goes with; \"\" for one of them \
             names no variable"
                .to_owned()
        };
        self.paired("--fallback-api-key-env", &self.key_variables, Some(&wire_key), |name| shown_name(name))?;
        let fallbacks = self.providers.iter().zip(&self.base_urls).enumerate();
        fallbacks
            .map(|(at, (&kind, base_url))| {
                let owner = format!(" of fallback {} ({})", at + 1, kind.name());
                check_base_url(base_url, kind, Whose { owner: &owner, flag: "--fallback-base-url" })?;
                let named = self.key_variables.get(at).map(String::as_str).filter(|name| !name.is_empty());
                let target = format!("fallback {} ({})", at + 1, kind.name());
                let key_owner = KeyOwner { target: &target, flag: "--fallback-api-key-env" };
                let key = target_key(kind, base_url, named, key_owner, env)?;
                if key.key.is_none() && is_default_base_url(base_url, kind) {
                    return Err(format!(
                        "no API key for {target} at its provider's own API: set {} (with {} unset, or set to that \
                         API), or pass --fallback-api-key-env VAR naming a variable that holds its key (a server of \
                         your own needs none)",
                        kind.key_variables().join(" or "),
                        kind.base_url_variable()
                    ));
                }
                let provider = kind.provider(base_url.clone(), key.key, self.models.get(at).map(String::as_str));
                Ok(Target { provider, withheld: key.withheld })
            })
            .collect()
    }

    /// `Ok` when `flag` has one value per --fallback-provider (or none, when `none` says what none
    /// means for a fallback of a wire: the models, each then its wire's default); else the first
    /// fallback without one, or the first value without a fallback (`shown` says it as the message
    /// shows it).
    fn paired(
        &self,
        flag: &str,
        values: &[String],
        none: Option<&dyn Fn(WireKind) -> String>,
        shown: impl Fn(&String) -> String,
    ) -> Result<(), String> {
        if none.is_some() && values.is_empty() {
            return Ok(());
        }
        let same_order = format!("the n-th {flag} goes with the n-th --fallback-provider");
        if let Some(&kind) = self.providers.get(values.len()) {
            let or_none = none.map_or_else(String::new, |none| format!(", or give none ({})", none(kind)));
            return Err(format!(
                "fallback {} (--fallback-provider {}) has no {flag}: give one for each --fallback-provider{or_none}; \
                 {same_order}",
                values.len() + 1,
                kind.name()
            ));
        }
        if let Some(value) = values.get(self.providers.len()) {
            return Err(format!(
                "{flag} `{}` has no --fallback-provider: fallback {} needs one (e.g. --fallback-provider \
                 anthropic); {same_order}",
                shown(value),
                self.providers.len() + 1
            ));
        }
        Ok(())
    }
}
