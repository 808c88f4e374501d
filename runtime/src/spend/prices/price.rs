//! [`Price`]: what one model's tokens cost.

use crate::error::PolicyError;
use crate::message::Usage;

/// The most a price may be, in US dollars per million tokens: a dollar a token (the dearest models
/// ask a few hundred dollars a million). Past it, a price is a typo (per token where per million
/// was meant is a million times too small, the other way round a million times too large).
pub const MAX_USD_PER_MILLION: f64 = 1e6;

/// What a model's tokens cost, in US dollars per million tokens: input, output, input read from the
/// provider's prompt cache and input written to it. Valid by construction: every price is a
/// number, at least 0 and at most [`MAX_USD_PER_MILLION`].
///
/// A price not given is the input price: no discount is assumed for cached reads, and no
/// surcharge for cache writes, unless the provider's price says so.
///
/// # Examples
///
/// ```
/// use agentic_runtime::spend::Price;
///
/// // gpt-4o-mini: $0.15 in, $0.60 out, $0.075 for cached input, per million tokens.
/// let price = Price::per_million(0.15, 0.60)?.with_cached_input(0.075)?;
/// assert_eq!(price.output_per_million(), 0.60);
/// let error = Price::per_million(-0.15, 0.60).unwrap_err();
/// assert_eq!(error.key(), "input_per_million");
/// # Ok::<(), agentic_runtime::policy::PolicyError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Price {
    input: f64,
    output: f64,
    cached_input: f64,
    cache_write: f64,
    /// Whether the provider's `input_tokens` include the cached ones (OpenAI, Gemini) or not
    /// (Anthropic); set from the target's provider when the price joins
    /// [`Prices`](super::Prices).
    input_includes_cached: bool,
}

impl Price {
    /// `input` and `output` US dollars per million tokens; cached input at the input price.
    pub fn per_million(input: f64, output: f64) -> Result<Self, PolicyError> {
        let input = checked("input_per_million", input)?;
        let output = checked("output_per_million", output)?;
        Ok(Self { input, output, cached_input: input, cache_write: input, input_includes_cached: true })
    }

    /// With input read from the provider's prompt cache at `usd` per million tokens.
    pub fn with_cached_input(mut self, usd: f64) -> Result<Self, PolicyError> {
        self.cached_input = checked("cached_input_per_million", usd)?;
        Ok(self)
    }

    /// With input written to the provider's prompt cache (Anthropic's cache writes) at `usd` per
    /// million tokens.
    pub fn with_cache_write(mut self, usd: f64) -> Result<Self, PolicyError> {
        self.cache_write = checked("cache_write_per_million", usd)?;
        Ok(self)
    }

    /// US dollars per million input tokens.
    pub fn input_per_million(&self) -> f64 {
        self.input
    }

    /// US dollars per million output tokens.
    pub fn output_per_million(&self) -> f64 {
        self.output
    }

    /// US dollars per million input tokens read from the prompt cache.
    pub fn cached_input_per_million(&self) -> f64 {
        self.cached_input
    }

    /// US dollars per million input tokens written to the prompt cache.
    pub fn cache_write_per_million(&self) -> f64 {
        self.cache_write
    }

    /// What a call that used `usage` cost, in US dollars: the input not cached at the input price,
    /// the cached reads at the cached price, the cache writes at the cache-write price and the
    /// output at the output price.
    ///
    /// The providers count input two ways ([`Usage`]): OpenAI's and Gemini's `input_tokens`
    /// include the cached tokens (the uncached are the input minus the cached), Anthropic's leave
    /// them out. A price found in [`Prices`](super::Prices) knows its target's way; a price of
    /// its own counts as OpenAI does.
    ///
    /// ```
    /// use agentic_runtime::message::Usage;
    /// use agentic_runtime::spend::Price;
    ///
    /// let price = Price::per_million(2.0, 8.0)?.with_cached_input(0.5)?;
    /// // 1 000 input tokens of which 400 cached, 100 output: 600 × $2 + 400 × $0.5 + 100 × $8, per million.
    /// let cost = price.cost_usd(&Usage::new(1_000, 100).with_cache_read(400));
    /// assert!((cost - 0.0022).abs() < 1e-12);
    /// # Ok::<(), agentic_runtime::policy::PolicyError>(())
    /// ```
    pub fn cost_usd(&self, usage: &Usage) -> f64 {
        let reads = usage.cache_read_input_tokens;
        let writes = usage.cache_creation_input_tokens;
        let uncached = if self.input_includes_cached {
            usage.input_tokens.saturating_sub(reads).saturating_sub(writes)
        } else {
            usage.input_tokens
        };
        let sum = uncached as f64 * self.input
            + reads as f64 * self.cached_input
            + writes as f64 * self.cache_write
            + usage.output_tokens as f64 * self.output;
        sum / 1e6
    }

    /// The most a call of `input_tokens` in and `output_tokens` out can cost, in US dollars: every
    /// input token at the dearest of the input prices (a cache write may cost more than plain
    /// input), every output token at the output price. What a call reserves before it is sent.
    ///
    /// ```
    /// use agentic_runtime::spend::Price;
    ///
    /// let price = Price::per_million(3.0, 15.0)?.with_cached_input(0.3)?.with_cache_write(3.75)?;
    /// // 10 000 tokens in at $3.75 (a cache write), 2 000 out at $15, per million.
    /// assert!((price.worst_case_usd(10_000, 2_000) - 0.0675).abs() < 1e-12);
    /// # Ok::<(), agentic_runtime::policy::PolicyError>(())
    /// ```
    pub fn worst_case_usd(&self, input_tokens: u64, output_tokens: u64) -> f64 {
        let dearest_input = self.input.max(self.cached_input).max(self.cache_write);
        (input_tokens as f64 * dearest_input + output_tokens as f64 * self.output) / 1e6
    }

    /// This price, for a provider whose `input_tokens` leave the cached tokens out (`false`) or
    /// include them (`true`).
    pub(super) fn counting_cached_in_input(mut self, included: bool) -> Self {
        self.input_includes_cached = included;
        self
    }
}

/// `usd` if it can be a price per million tokens, else what is wrong with it, under `key`.
fn checked(key: &'static str, usd: f64) -> Result<f64, PolicyError> {
    if (0.0..=MAX_USD_PER_MILLION).contains(&usd) {
        return Ok(usd);
    }
    let message = if usd.is_nan() || usd < 0.0 {
        format!("`{key}` = {usd} is not a price: set US dollars per million tokens, 0 or more")
    } else {
        format!(
            "`{key}` = {usd} is past the largest price ({MAX_USD_PER_MILLION} US dollars per million tokens, a dollar a token): \
             is it per token, or per thousand?"
        )
    };
    Err(PolicyError::new(key, message))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_price_that_is_no_price_is_named() {
        for (input, output, key) in [
            (-0.01, 1.0, "input_per_million"),
            (f64::NAN, 1.0, "input_per_million"),
            (1.0, f64::INFINITY, "output_per_million"),
            (1.0, 2e6, "output_per_million"),
        ] {
            let error = Price::per_million(input, output).unwrap_err();
            assert_eq!(error.key(), key, "{input} {output}");
            assert!(error.message().contains(key), "{}", error.message());
        }
        let price = Price::per_million(0.0, 0.0).unwrap();
        assert_eq!(price.with_cached_input(-1.0).unwrap_err().key(), "cached_input_per_million");
        assert_eq!(price.with_cache_write(f64::NAN).unwrap_err().key(), "cache_write_per_million");
        assert!(Price::per_million(MAX_USD_PER_MILLION, 0.0).is_ok());
    }

    #[test]
    fn anthropic_counts_cached_tokens_apart_from_its_input() {
        let price =
            Price::per_million(3.0, 15.0).unwrap().with_cached_input(0.3).unwrap().with_cache_write(3.75).unwrap();
        // Anthropic: 20 uncached, 100 read, 5 written, 10 out.
        let usage = Usage::new(20, 10).with_cache_read(100).with_cache_creation(5);
        let apart = price.counting_cached_in_input(false).cost_usd(&usage);
        let by_hand = (20.0 * 3.0 + 100.0 * 0.3 + 5.0 * 3.75 + 10.0 * 15.0) / 1e6;
        assert!((apart - by_hand).abs() < 1e-15, "{apart} {by_hand}");
        // Read the OpenAI way, the same usage would bill no uncached input at all.
        assert!(price.cost_usd(&usage) < apart);
    }

    #[test]
    fn the_largest_usage_costs_a_finite_sum() {
        let price = Price::per_million(MAX_USD_PER_MILLION, MAX_USD_PER_MILLION).unwrap();
        let most = Usage::new(u64::MAX, u64::MAX).with_cache_read(u64::MAX).with_cache_creation(u64::MAX);
        assert!(price.cost_usd(&most).is_finite());
        assert!(price.worst_case_usd(u64::MAX, u64::MAX).is_finite());
        assert_eq!(price.cost_usd(&Usage::ZERO), 0.0);
    }
}
