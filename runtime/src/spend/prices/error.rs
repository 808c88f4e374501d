//! [`PricesError`]: why prices could not be read.

use std::io;
use std::path::PathBuf;

/// Why [`Prices::from_litellm_json`](super::Prices::from_litellm_json) or
/// [`Prices::from_litellm_file`](super::Prices::from_litellm_file) read no prices. Each says what
/// to fix; the facts (path, size, line and column) are data too.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PricesError {
    /// The file could not be opened or read, or is not UTF-8 text.
    #[error("the prices file `{}` could not be read: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The prices are larger than [`MAX_PRICES_FILE_BYTES`](super::MAX_PRICES_FILE_BYTES).
    #[error(
        "the prices are {bytes} bytes or more, past the limit of {limit} bytes: litellm's whole file is a tenth of that; \
         pass `model_prices_and_context_window.json` itself, or the entries of the models you call"
    )]
    TooLarge {
        /// How many bytes were seen (at least).
        bytes: u64,
        /// The limit.
        limit: u64,
    },
    /// The text is not JSON, or not an object keyed by model name.
    #[error("the prices are not litellm's JSON, at line {line} column {column}: {message}")]
    Json {
        /// The line of the error (from 1).
        line: usize,
        /// The column of the error (from 1; 0 when it is the line's end).
        column: usize,
        /// What is wrong there.
        message: String,
    },
    /// No entry priced a chat model of a provider the runtime calls.
    #[error(
        "the prices give no model of `openai`, `anthropic` or `gemini` both an `input_cost_per_token` and an \
         `output_cost_per_token`: is this litellm's `model_prices_and_context_window.json`?"
    )]
    NoPrices,
}

impl From<serde_json::Error> for PricesError {
    fn from(error: serde_json::Error) -> Self {
        let (line, column) = (error.line(), error.column());
        let text = error.to_string();
        // serde_json puts the position at the end of its text: it is kept apart, as data.
        let suffix = format!(" at line {line} column {column}");
        let message = text.strip_suffix(&suffix).unwrap_or(&text).to_owned();
        PricesError::Json { line, column, message }
    }
}
