//! An error's text with the texts of its causes, for messages: transport errors (reqwest's)
//! say the useful part ("connection refused", "certificate expired") only in a cause.

use std::error::Error;

/// `text` followed by each cause down the `source` chain, joined by `": "`; a cause whose text is
/// already in what was written is left out (wrappers often repeat their cause's words).
pub(crate) fn with_causes(mut text: String, mut source: Option<&(dyn Error + 'static)>) -> String {
    while let Some(cause) = source {
        let words = cause.to_string();
        if !text.contains(&words) {
            text.push_str(": ");
            text.push_str(&words);
        }
        source = cause.source();
    }
    text
}

/// `error` and its causes (see [`with_causes`]).
pub(crate) fn describe(error: &(dyn Error + 'static)) -> String {
    with_causes(error.to_string(), error.source())
}
