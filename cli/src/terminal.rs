//! Text for people: control characters escaped, so that nothing a server, a model or a file says
//! can drive the terminal it is printed on.
//!
//! A server's error text, a model's answer (which may echo a fetched page), a journal's function
//! name or a trace's run id can hold terminal control sequences: `ESC ] 0 ; title BEL` sets the
//! window title, `ESC ] 52 ; c ; data BEL` writes the clipboard, `ESC [ 2K` with `\r` rewrites the
//! line being read. Every human-readable line the CLI writes goes through [`shown`]; `--json`
//! output is JSON, whose strings escape control characters already, and keeps the exact text for
//! scripts.
//!
//! The answer of `agentic ask` is escaped too, on a terminal or not: it is text for a person, and
//! a pipe today is a terminal later (`agentic ask .. > out.txt; cat out.txt`). `\n` and `\t` are
//! kept, being layout and harmless; a script that needs the model's exact bytes reads `--json`.

use std::borrow::Cow;
use std::fmt::Display;

/// `text` with every control character (C0, DEL, C1) other than `\n` and `\t` written as Rust
/// writes it in a string literal: `\u{1b}`, `\r`, `\u{7}`, `\u{9b}`. Text without any is borrowed.
pub(crate) fn escape_controls(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_escaped) {
        return Cow::Borrowed(text);
    }
    let mut escaped = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_escaped(c) {
            escaped.extend(c.escape_debug());
        } else {
            escaped.push(c);
        }
    }
    Cow::Owned(escaped)
}

/// `value` as text for a terminal ([`escape_controls`]).
pub(crate) fn shown(value: impl Display) -> String {
    let text = value.to_string();
    match escape_controls(&text) {
        Cow::Borrowed(_) => text,
        Cow::Owned(escaped) => escaped,
    }
}

fn is_escaped(c: char) -> bool {
    c.is_control() && c != '\n' && c != '\t'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_sequences_are_escaped_and_layout_is_kept() {
        assert_eq!(escape_controls("a\tb\nc"), Cow::Borrowed("a\tb\nc"));
        assert_eq!(escape_controls("\x1b]0;pwned\x07"), "\\u{1b}]0;pwned\\u{7}");
        assert_eq!(escape_controls("ok\x1b[2K\rfake"), "ok\\u{1b}[2K\\rfake");
        assert_eq!(escape_controls("\x1b]52;c;cm0gLXJm\x07"), "\\u{1b}]52;c;cm0gLXJm\\u{7}");
        // C1 controls (the 8-bit CSI and OSC) and DEL, and a NUL.
        assert_eq!(escape_controls("\u{9b}2J\u{9d}0;x\u{9c}\x7f\0"), "\\u{9b}2J\\u{9d}0;x\\u{9c}\\u{7f}\\0");
        // Text that is not control characters stays as it is, non-ASCII included.
        assert_eq!(escape_controls("résumé → 日本 \u{a0}"), Cow::Borrowed("résumé → 日本 \u{a0}"));
        assert_eq!(shown(format_args!("{}:{}", "f\x1b", 3)), "f\\u{1b}:3");
        assert!(!shown("\x1b\u{9b}\r").chars().any(|c| c.is_control()));
    }
}
