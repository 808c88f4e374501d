//! [`Prices`]: the user's prices of the models an exec may call, keyed by target.

mod error;
mod litellm;
mod price;

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::Path;

use crate::error::PolicyError;

pub use error::PricesError;
pub use litellm::MAX_PRICES_FILE_BYTES;
pub use price::{MAX_USD_PER_MILLION, Price};

/// What the user pays for each model, keyed by target (`"<provider>/<model>"`, as
/// [`Runtime::targets`](crate::Runtime::targets) names them: `openai/gpt-4o-mini`,
/// `anthropic/claude-haiku-4-5`, `gcp.gemini/gemini-2.0-flash`, `scripted/<model>`). Built in
/// code, or read from litellm's `model_prices_and_context_window.json`.
///
/// There is no built-in price: prices change, and only the user knows theirs. A model with no price
/// under a dollar limit is an error before the first call, never a guess.
///
/// Gemini's provider is `gcp.gemini` in target names; `gemini/<model>` names the same one here.
///
/// # Examples
///
/// ```
/// use agentic_runtime::message::Usage;
/// use agentic_runtime::spend::{Price, Prices};
///
/// let prices = Prices::new()
///     .with("openai/gpt-4o-mini", Price::per_million(0.15, 0.60)?.with_cached_input(0.075)?)?
///     .with("gemini/gemini-2.0-flash", Price::per_million(0.10, 0.40)?)?;
/// let price = prices.price_of("openai/gpt-4o-mini").expect("priced");
/// assert!((price.cost_usd(&Usage::new(1_000_000, 0)) - 0.15).abs() < 1e-12);
/// assert!(prices.price_of("gcp.gemini/gemini-2.0-flash").is_some());
/// assert!(prices.price_of("openai/gpt-4o").is_none());
/// # Ok::<(), agentic_runtime::policy::PolicyError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Prices {
    /// By target, its provider in the runtime's spelling ([`canonical_target`]).
    by_target: HashMap<String, Price>,
}

impl Prices {
    /// No price at all.
    pub fn new() -> Self {
        Self::default()
    }

    /// With `price` for `target` (`"<provider>/<model>"`, or a provider's name alone for a
    /// provider that names no model), replacing any price it had.
    ///
    /// An error names a target that is empty, or whose provider or model is.
    pub fn with(mut self, target: &str, price: Price) -> Result<Self, PolicyError> {
        if target.trim().is_empty() || target.starts_with('/') || target.ends_with('/') {
            return Err(PolicyError::new(
                "target",
                format!("the target `{target}` names no model: write `<provider>/<model>`, e.g. `openai/gpt-4o-mini`"),
            ));
        }
        self.insert(canonical_target(target).into_owned(), price);
        Ok(self)
    }

    /// The price of `target`, if there is one: its exact name, the provider spelt as the runtime
    /// or as litellm spells it (`gcp.gemini/..` or `gemini/..`).
    pub fn price_of(&self, target: &str) -> Option<&Price> {
        self.by_target.get(canonical_target(target).as_ref())
    }

    /// How many targets have a price.
    pub fn len(&self) -> usize {
        self.by_target.len()
    }

    /// Whether no target has a price.
    pub fn is_empty(&self) -> bool {
        self.by_target.is_empty()
    }

    /// The prices of litellm's `model_prices_and_context_window.json`, read from `text`: the
    /// chat models of OpenAI, Anthropic and Gemini, at their prices per token
    /// (`input_cost_per_token`, `output_cost_per_token`, `cache_read_input_token_cost`,
    /// `cache_creation_input_token_cost`); every other field and entry is ignored.
    ///
    /// An entry keyed `gpt-4o-mini` of `"litellm_provider": "openai"` prices `openai/gpt-4o-mini`;
    /// one keyed `gemini/gemini-2.0-flash` of `gemini`, `gcp.gemini/gemini-2.0-flash` (where
    /// Gemini's own API and Vertex AI's (`vertex_ai-language-models`) both price a model, the
    /// Gemini API's, which the runtime calls, wins). An entry without both token prices (an
    /// image model, `sample_spec`), of another provider, or with a price that is not one is
    /// skipped: that model has no price, and a dollar limit refuses to call it.
    ///
    /// Errors: a text over [`MAX_PRICES_FILE_BYTES`], text that is not JSON (with its line and
    /// column) or not an object, and a file that prices none of these providers' models.
    ///
    /// ```
    /// use agentic_runtime::spend::Prices;
    ///
    /// let prices = Prices::from_litellm_json(r#"{
    ///     "sample_spec": {"input_cost_per_token": 0.0, "litellm_provider": "one of https://docs.litellm.ai/docs/providers"},
    ///     "gpt-4o-mini": {"input_cost_per_token": 1.5e-07, "output_cost_per_token": 6e-07,
    ///                     "cache_read_input_token_cost": 7.5e-08, "litellm_provider": "openai", "mode": "chat"}
    /// }"#)?;
    /// let price = prices.price_of("openai/gpt-4o-mini").expect("priced");
    /// assert!((price.cached_input_per_million() - 0.075).abs() < 1e-12);
    /// assert_eq!(prices.len(), 1);
    /// # Ok::<(), agentic_runtime::spend::PricesError>(())
    /// ```
    pub fn from_litellm_json(text: &str) -> Result<Self, PricesError> {
        litellm::parse(text)
    }

    /// [`Prices::from_litellm_json`] of the file at `path`, read at once (no more than
    /// [`MAX_PRICES_FILE_BYTES`] of it, whatever the file claims its size is).
    ///
    /// ```no_run
    /// use agentic_runtime::spend::Prices;
    ///
    /// let prices = Prices::from_litellm_file("model_prices_and_context_window.json")?;
    /// # Ok::<(), agentic_runtime::spend::PricesError>(())
    /// ```
    pub fn from_litellm_file(path: impl AsRef<Path>) -> Result<Self, PricesError> {
        litellm::parse(&litellm::read_bounded(path.as_ref())?)
    }

    /// Sets `target`'s price (`target` canonical), with the provider's way of counting input.
    fn insert(&mut self, target: String, price: Price) {
        let provider = target.split_once('/').map_or(target.as_str(), |(provider, _)| provider);
        let price = price.counting_cached_in_input(provider != ANTHROPIC);
        self.by_target.insert(target, price);
    }
}

/// The Anthropic provider's name: its `input_tokens` leave the cached tokens out.
const ANTHROPIC: &str = "anthropic";

/// Gemini's provider as target names spell it ([`Provider::name`](crate::provider::Provider::name)).
const GEMINI: &str = "gcp.gemini";

/// `target` with its provider spelt as the runtime's target names spell it: `gemini/..` is
/// `gcp.gemini/..`.
fn canonical_target(target: &str) -> Cow<'_, str> {
    match target.strip_prefix("gemini/") {
        Some(model) => Cow::Owned(format!("{GEMINI}/{model}")),
        None => Cow::Borrowed(target),
    }
}
