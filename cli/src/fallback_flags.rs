//! `agentic ask`'s fallbacks: `--fallback-provider P --fallback-base-url URL [--fallback-model M]`,
//! repeatable, the targets an exec moves to in order (`Runtime::with_fallback`).
//!
//! The n-th `--fallback-base-url` and `--fallback-model` go with the n-th `--fallback-provider`, as
//! clap collects each flag's values in order; a count that does not match is a usage error naming
//! the fallback left without its flag, rather than a guess at which one was meant.

use std::sync::Arc;

use agentic_runtime::provider::display_url;
use agentic_runtime::{MAX_TARGETS, Provider, WireKind};

use crate::wire_flags::{Whose, check_base_url, is_default_base_url, provider_parser};

/// The fallbacks of one exec, in the order given.
#[derive(Debug, Default, clap::Args)]
pub(crate) struct FallbackFlags {
    /// A target to fall back to, by wire name as for --provider (repeatable: the targets in order).
    /// Its key comes from that wire's variables (ANTHROPIC_API_KEY, ...), never from a flag.
    #[arg(long = "fallback-provider", value_name = "P", value_parser = provider_parser(), help_heading = "Fallback")]
    providers: Vec<WireKind>,
    /// The base URL of the n-th --fallback-provider (one for each).
    #[arg(long = "fallback-base-url", value_name = "URL", help_heading = "Fallback")]
    base_urls: Vec<String>,
    /// The model of the n-th --fallback-provider (one for each, or none) [default: its wire's].
    #[arg(long = "fallback-model", value_name = "M", help_heading = "Fallback")]
    models: Vec<String>,
}

impl FallbackFlags {
    /// The fallbacks' providers in order, each with the key its wire's variables hold (`env` reads
    /// them), or what is wrong with the flags.
    pub(crate) fn providers(&self, env: &dyn Fn(&str) -> Option<String>) -> Result<Vec<Arc<dyn Provider>>, String> {
        if self.providers.len() >= MAX_TARGETS {
            return Err(format!(
                "--fallback-provider is given {} times, and a runtime has at most {} fallbacks (its targets \
                 are at most {MAX_TARGETS}, the primary included)",
                self.providers.len(),
                MAX_TARGETS - 1
            ));
        }
        self.paired("--fallback-base-url", &self.base_urls, false, |url| display_url(url).into_owned())?;
        self.paired("--fallback-model", &self.models, true, Clone::clone)?;
        let fallbacks = self.providers.iter().zip(&self.base_urls).enumerate();
        fallbacks
            .map(|(at, (&kind, base_url))| {
                let owner = format!(" of fallback {} ({})", at + 1, kind.name());
                check_base_url(base_url, kind, Whose { owner: &owner, flag: "--fallback-base-url" })?;
                let key = kind.key_variables().iter().find_map(|name| env(name));
                if key.is_none() && is_default_base_url(base_url, kind) {
                    return Err(format!(
                        "no API key for fallback {} ({}): set {} (a fallback's key comes from its wire's \
                         variables, never from a flag; a server of your own needs none)",
                        at + 1,
                        kind.name(),
                        kind.key_variables().join(" or ")
                    ));
                }
                Ok(kind.provider(base_url.clone(), key, self.models.get(at).map(String::as_str)))
            })
            .collect()
    }

    /// `Ok` when `flag` has one value per --fallback-provider (or none, when `optional`: the models,
    /// each then its wire's default); else the first fallback without one, or the first value
    /// without a fallback (`shown` says it as the message shows it).
    fn paired(
        &self,
        flag: &str,
        values: &[String],
        optional: bool,
        shown: impl Fn(&String) -> String,
    ) -> Result<(), String> {
        if optional && values.is_empty() {
            return Ok(());
        }
        let same_order = format!("the n-th {flag} goes with the n-th --fallback-provider");
        if let Some(kind) = self.providers.get(values.len()) {
            let or_none = if optional {
                format!(
                    ", or give none (each fallback then asks for its wire's default model, `{}` for {})",
                    kind.default_model(),
                    kind.name()
                )
            } else {
                String::new()
            };
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
