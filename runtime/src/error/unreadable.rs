//! An answer in a shape its wire does not read, as its error carries it: the code that marks it,
//! what could not be read (the same on every call that fails on the same shape), and the error it
//! becomes at the second such call. The providers make the first (`provider/http/errors.rs`);
//! layer 1 reads them (`session.rs`), with or without the providers built.

use crate::error::{ModelError, TransportKind};

/// The code of an answer in a shape the wire does not read.
pub(crate) const UNREADABLE: &str = "unreadable_answer";

/// How the text of every chunk a decoder could not read begins.
pub(crate) const MALFORMED: &str = "malformed chunk: ";

/// What an unreadable answer's error says could not be read: its text between [`MALFORMED`] and
/// the excerpt of the data (`malformed chunk: {what}: {excerpt}`), the same on every call that
/// fails on the same shape, whatever the data's ids. `None` for any other error.
pub(crate) fn unreadable_what(error: &ModelError) -> Option<&str> {
    if error.code() != Some(UNREADABLE) {
        return None;
    }
    let text = error.message().strip_prefix(MALFORMED)?;
    // The excerpt is quoted, its own quotes escaped: its opening `: "` is the last one.
    text.rsplit_once(": \"").map(|(what, _)| what)
}

/// An unreadable answer's error after the second call that failed on it: a format this client
/// does not read, saying so (layer 1 stops on it, layer 2 judges it permanent for the target).
#[cold]
pub(crate) fn unreadable_again(error: &ModelError) -> ModelError {
    let text = error.message().strip_prefix(MALFORMED).unwrap_or(error.message());
    let text = format!(
        "{MALFORMED}an answer in a format this client does not read, the same on two calls (not a corrupted \
         stream: not asked again): {text}"
    );
    ModelError::transport(TransportKind::Corrupted, text).with_code(UNREADABLE)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unreadable(text: &str) -> ModelError {
        ModelError::transport(TransportKind::Corrupted, text).with_code(UNREADABLE)
    }

    #[test]
    fn what_could_not_be_read_is_the_text_before_the_excerpt() {
        let what = "`choices[0].index`: invalid type: string \"0\", expected u32";
        let one = unreadable(&format!("{MALFORMED}{what}: \"{{\\\"id\\\":\\\"a: \\\\\\\"b\\\"}}\""));
        assert_eq!(unreadable_what(&one), Some(what));
        let other = unreadable(&format!("{MALFORMED}{what}: \"{{\\\"id\\\":\\\"c\\\"}}...\""));
        assert_eq!(unreadable_what(&other), unreadable_what(&one));
        // Another code, or no excerpt: not an unreadable answer.
        let corrupted = ModelError::transport(TransportKind::Corrupted, format!("{MALFORMED}{what}: \"x\""));
        assert_eq!(unreadable_what(&corrupted), None);
        assert_eq!(unreadable_what(&unreadable("something else")), None);
        let again = unreadable_again(&one);
        assert!(again.message().starts_with("malformed chunk: an answer in a format this client does not read"));
        assert!(again.message().ends_with(one.message().strip_prefix(MALFORMED).unwrap()), "{again}");
        assert_eq!(again.code(), Some(UNREADABLE));
    }
}
