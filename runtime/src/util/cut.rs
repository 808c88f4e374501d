//! Cutting untrusted text to a size bound, on a char boundary: with a note saying how much was
//! cut (what a tool result sends to the model, and what a trace line may hold), or with a `…` (a
//! name or a server's words in a message).

use std::borrow::Cow;

/// How many bytes the note of [`cut`] may take at most (its numbers included), so that a text and
/// its note stay within the bound.
pub(crate) const NOTE_BYTES: usize = 120;

/// The length of the longest prefix of `text` whose `cost` (summed over its chars) is at most
/// `budget`: a char boundary. With `cost = char::len_utf8` it is the prefix of at most `budget`
/// bytes.
pub(crate) fn prefix_len(text: &str, budget: usize, cost: impl Fn(char) -> usize) -> usize {
    let mut spent = 0usize;
    for (index, char) in text.char_indices() {
        spent = spent.saturating_add(cost(char));
        if spent > budget {
            return index;
        }
    }
    text.len()
}

/// The bytes `char` takes inside a JSON string as `serde_json` writes it: `\"`, `\\` and the
/// short escapes take 2, other control characters `\u00XX` 6, the rest their UTF-8 length.
pub(crate) fn json_len(char: char) -> usize {
    match char {
        '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
        '\0'..='\u{1f}' => 6,
        _ => char.len_utf8(),
    }
}

/// `text` within `max` units of `cost`, the note included: as it is when it fits (`total`, its
/// whole cost, is at most `max`), else its longest prefix that leaves room for the note, then
/// `note(cut_bytes, total_bytes)` (at most [`NOTE_BYTES`] long; a `max` below that gives the note
/// alone).
pub(crate) fn cut(
    mut text: String,
    max: usize,
    total: usize,
    cost: impl Fn(char) -> usize,
    note: impl Fn(usize, usize) -> String,
) -> String {
    if total > max {
        let length = text.len();
        let kept = prefix_len(&text, max.saturating_sub(NOTE_BYTES), cost);
        text.truncate(kept);
        text.push_str(&note(length - kept, length));
        // A cut of a huge text gives its memory back.
        text.shrink_to_fit();
    }
    text
}

/// `text` cut to `max_chars` characters, with `…` at the cut: for showing a long name or a server's
/// words in a message. Text that fits is borrowed as it is.
pub(crate) fn shorten(text: &str, max_chars: usize) -> Cow<'_, str> {
    match text.char_indices().nth(max_chars) {
        None => Cow::Borrowed(text),
        Some((cut, _)) => Cow::Owned(format!("{}…", &text[..cut])),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(cut: usize, total: usize) -> String {
        format!(" [{cut} of {total} bytes cut]")
    }

    #[test]
    fn a_cut_lands_on_a_char_boundary_and_the_note_fits() {
        let text = "é".repeat(200); // 400 bytes
        let shorter = cut(text, NOTE_BYTES + 3, 400, char::len_utf8, note);
        assert_eq!(shorter, "é [398 of 400 bytes cut]");
        assert!(shorter.len() <= NOTE_BYTES + 3);
        assert_eq!(cut("short".into(), 5, 5, char::len_utf8, note), "short");
        assert_eq!(cut("too long".into(), 0, 8, char::len_utf8, note), " [8 of 8 bytes cut]");
    }

    #[test]
    fn json_costs_count_escapes() {
        let text = "a\"\\\n\u{1}é";
        let escaped = serde_json::to_string(text).unwrap();
        assert_eq!(text.chars().map(json_len).sum::<usize>(), escaped.len() - 2);
        assert_eq!(prefix_len(text, 3, json_len), 2, "`a` and `\\\"` fit in 3, `\\\\` does not");
        assert_eq!(prefix_len(text, usize::MAX, json_len), text.len());
    }

    #[test]
    fn shortening_counts_chars_and_marks_the_cut() {
        assert_eq!(shorten("run-1", 8), "run-1");
        assert_eq!(shorten("run-5f1c9a2e", 8), "run-5f1c…");
        assert_eq!(shorten("", 0), "");
        assert_eq!(shorten("ab", 0), "…");
        assert_eq!(shorten("a\u{1F600}b", 2), "a\u{1F600}…");
        assert!(matches!(shorten("fits", 4), Cow::Borrowed("fits")));
    }
}
