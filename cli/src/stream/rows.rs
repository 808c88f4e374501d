//! Where a turn's text sits on a terminal: the rows it took since it began, wrapped lines
//! included, so that a rewind can move the cursor back to its start and erase it.
//!
//! A terminal wraps a line at its width and holds the cursor on the last column of a full row
//! until the next character (xterm's "pending wrap", which every common terminal follows); a
//! character of the East Asian wide class or an emoji takes two columns; a tab moves to the next
//! multiple of 8. The widths are counted as written, the rows at erase time from the width then
//! (a terminal resized in between rewraps what it shows).

use unicode_width::UnicodeWidthChar as _;

/// The columns of each line a turn wrote on the terminal.
#[derive(Debug, Default)]
pub(crate) struct Written {
    /// The width of each line ended by a newline.
    ended: Vec<usize>,
    /// The width of the line the cursor is on.
    column: usize,
}

/// The columns a tab moves to the next multiple of.
const TAB: usize = 8;

impl Written {
    /// Counts `text`, which has no control character other than `\n` and `\t` (it went through
    /// [`shown`](crate::terminal::shown)).
    pub(crate) fn push(&mut self, text: &str) {
        for c in text.chars() {
            match c {
                '\n' => self.ended.push(std::mem::take(&mut self.column)),
                '\t' => self.column = (self.column / TAB + 1) * TAB,
                c => self.column += c.width().unwrap_or(0),
            }
        }
    }

    /// Whether nothing was written.
    pub(crate) fn is_empty(&self) -> bool {
        self.ended.is_empty() && self.column == 0
    }

    /// Whether the cursor is at the start of a line.
    pub(crate) fn at_line_start(&self) -> bool {
        self.column == 0
    }

    /// How many rows above the cursor's the text began, on a terminal `width` columns wide.
    pub(crate) fn rows_up(&self, width: usize) -> usize {
        let width = width.max(1);
        let ended: usize = self.ended.iter().map(|&columns| columns.div_ceil(width).max(1)).sum();
        // A full last row holds the cursor on it (pending wrap): `width` columns are one row.
        ended + self.column.saturating_sub(1) / width
    }

    /// The bytes that move the cursor to where the text began and erase from there to the end of
    /// the screen: carriage return, "cursor up N" (CUU) when it took more than one row, "erase in
    /// display" (ED 0). Then nothing is written.
    pub(crate) fn erase(&mut self, width: usize) -> String {
        let up = self.rows_up(width);
        *self = Self::default();
        if up == 0 { "\r\x1b[J".to_owned() } else { format!("\r\x1b[{up}A\x1b[J") }
    }
}

/// The terminal's width in columns: the terminal's own (stdout's window size), else `COLUMNS`,
/// else 80.
pub(crate) fn terminal_width() -> usize {
    window_columns()
        .or_else(|| std::env::var("COLUMNS").ok()?.trim().parse().ok().filter(|&columns| columns > 0))
        .unwrap_or(80)
}

/// The columns of stdout's window, when it is a terminal that knows them.
#[cfg(unix)]
fn window_columns() -> Option<usize> {
    // SAFETY: `winsize` is plain integers, for which all zeroes is a valid value.
    let mut size: libc::winsize = unsafe { std::mem::zeroed() };
    // SAFETY: TIOCGWINSZ writes one `winsize` through the pointer, which points at one; a
    // descriptor that is not a terminal makes it fail (ENOTTY) without writing.
    let read = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut size) };
    (read == 0 && size.ws_col > 0).then_some(usize::from(size.ws_col))
}

#[cfg(not(unix))]
fn window_columns() -> Option<usize> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(text: &str) -> Written {
        let mut written = Written::default();
        written.push(text);
        written
    }

    #[test]
    fn wrapped_lines_count_as_the_rows_they_take() {
        assert!(written("").is_empty());
        assert_eq!(written("").rows_up(10), 0);
        assert_eq!(written("hello").rows_up(10), 0);
        // A full row keeps the cursor on it; one more column wraps.
        assert_eq!(written("0123456789").rows_up(10), 0);
        assert_eq!(written("0123456789a").rows_up(10), 1);
        // A newline after a full row moves one row down, not two.
        assert_eq!(written("0123456789\n").rows_up(10), 1);
        assert_eq!(written("a\n\nb").rows_up(10), 2);
        // 21 columns take three rows; the next line starts below them.
        assert_eq!(written("0123456789abcdefghijk\nxy").rows_up(10), 3);
        // Pushed in pieces as deltas arrive: the same.
        let mut pieces = written("01234");
        pieces.push("56789abcdefghijk\n");
        pieces.push("xy");
        assert_eq!(pieces.rows_up(10), 3);
        assert_eq!(pieces.rows_up(80), 1);
    }

    #[test]
    fn wide_characters_and_tabs_take_their_columns() {
        // Five CJK characters are ten columns: one full row, then the sixth wraps.
        assert_eq!(written("日本語日本").rows_up(10), 0);
        assert_eq!(written("日本語日本語").rows_up(10), 1);
        assert_eq!(written("a\tb").rows_up(9), 0);
        assert_eq!(written("a\tbc").rows_up(9), 1);
    }

    #[test]
    fn erasing_goes_back_to_the_first_row_and_forgets_it() {
        let mut text = written("0123456789abc");
        assert!(!text.at_line_start());
        assert_eq!(text.erase(10), "\r\x1b[1A\x1b[J");
        assert!(text.is_empty() && text.at_line_start());
        assert_eq!(written("abc").erase(10), "\r\x1b[J");
    }
}
