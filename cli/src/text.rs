//! Values from the input as messages and tables show them: text cut to a number of characters, and
//! sizes in whole units.

use std::borrow::Cow;

/// `text` cut to `max_chars` characters, with `…` at the cut: for showing a long id or value in a
/// message or a table. Text that fits is borrowed as it is.
pub(crate) fn shorten(text: &str, max_chars: usize) -> Cow<'_, str> {
    match text.char_indices().nth(max_chars) {
        None => Cow::Borrowed(text),
        Some((cut, _)) => Cow::Owned(format!("{}…", &text[..cut])),
    }
}

/// `1 MiB`, `64 KiB`, `10 bytes`: a size as messages show it (whole units only).
pub(crate) fn bytes_text(bytes: usize) -> String {
    const KIB: usize = 1024;
    const MIB: usize = 1024 * KIB;
    const GIB: usize = 1024 * MIB;
    match bytes {
        0 => "0 bytes".to_owned(),
        1 => "1 byte".to_owned(),
        _ if bytes.is_multiple_of(GIB) => format!("{} GiB", bytes / GIB),
        _ if bytes.is_multiple_of(MIB) => format!("{} MiB", bytes / MIB),
        _ if bytes.is_multiple_of(KIB) => format!("{} KiB", bytes / KIB),
        _ => format!("{bytes} bytes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_shortening_read_well() {
        assert_eq!(bytes_text(1024 * 1024), "1 MiB");
        assert_eq!(bytes_text(256 * 1024 * 1024), "256 MiB");
        assert_eq!(bytes_text(2048), "2 KiB");
        assert_eq!(bytes_text(1000), "1000 bytes");
        assert_eq!(bytes_text(1), "1 byte");
        assert_eq!(shorten("run-1", 8), "run-1");
        assert_eq!(shorten("run-5f1c9a2e", 8), "run-5f1c…");
        assert_eq!(shorten("ééééé", 2), "éé…");
        assert_eq!(shorten("", 0), "");
        assert_eq!(shorten("ab", 0), "…");
        assert_eq!(shorten("a\u{1F600}b", 2), "a\u{1F600}…");
    }
}
