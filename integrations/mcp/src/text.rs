//! Words for messages: an error's text with its causes' (transport errors, reqwest's and rmcp's,
//! say the useful part, "connection refused" or "certificate expired", only in a cause), and text
//! cut to a size. A few lines each, kept here rather than borrowed from the runtime's internals.

use std::borrow::Cow;
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

/// `text` cut to `max_chars` characters, with `…` at the cut; text that fits is borrowed as it is.
pub(crate) fn shorten(text: &str, max_chars: usize) -> Cow<'_, str> {
    match text.char_indices().nth(max_chars) {
        None => Cow::Borrowed(text),
        Some((cut, _)) => Cow::Owned(format!("{}…", &text[..cut])),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("{0}")]
    struct Layer(&'static str, #[source] Option<Box<Layer>>);

    #[test]
    fn causes_are_joined_and_repeats_left_out() {
        let error = Layer(
            "error sending request: connection refused",
            Some(Box::new(Layer("connection refused", Some(Box::new(Layer("os error 111", None)))))),
        );
        assert_eq!(describe(&error), "error sending request: connection refused: os error 111");
    }

    #[test]
    fn text_is_cut_at_a_character() {
        assert_eq!(shorten("run-1", 8), "run-1");
        assert_eq!(shorten("run-5f1c9a2e", 8), "run-5f1c…");
        assert_eq!(shorten("a\u{1F600}b", 2), "a\u{1F600}…");
    }
}
