//! The start of each line, kept as the lines stream past, so that the run of a line too long to be
//! read can still be told: the runtime writes `run_id` third, in the first hundred bytes.

use std::cell::RefCell;
use std::io::{self, BufRead};
use std::rc::Rc;

/// How much of each line [`HeadKeeper`] keeps: room for the `event`, `ts_ms` and `run_id` the
/// runtime writes first.
const HEAD_BYTES: usize = 256;

/// The first [`HEAD_BYTES`] of the line being read and of the line before it.
#[derive(Debug, Default)]
pub(super) struct LineHead {
    current: Vec<u8>,
    last: Vec<u8>,
}

impl LineHead {
    /// The head of the line just read: it ended with a `\n` (`ended`), or it is the last line.
    pub(super) fn of_last(&self, ended: bool) -> &[u8] {
        if ended { &self.last } else { &self.current }
    }
}

/// A reader that keeps the start of each line it gives out, so that the run of a line too long to
/// be read can still be told.
pub(super) struct HeadKeeper<R> {
    inner: R,
    head: Rc<RefCell<LineHead>>,
}

impl<R> HeadKeeper<R> {
    /// `inner`, the start of whose lines goes to `head`.
    pub(super) fn new(inner: R, head: Rc<RefCell<LineHead>>) -> Self {
        Self { inner, head }
    }
}

impl<R: io::Read> io::Read for HeadKeeper<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read(buf)
    }
}

impl<R: BufRead> BufRead for HeadKeeper<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.inner.fill_buf()
    }

    fn consume(&mut self, amount: usize) {
        // What is consumed was just given by `fill_buf`, so asking again reads nothing.
        if let Ok(buffer) = self.inner.fill_buf() {
            let mut head = self.head.borrow_mut();
            let mut rest = &buffer[..amount.min(buffer.len())];
            while !rest.is_empty() {
                let newline = rest.iter().position(|&byte| byte == b'\n');
                let part = &rest[..newline.unwrap_or(rest.len())];
                let room = HEAD_BYTES.saturating_sub(head.current.len());
                head.current.extend_from_slice(&part[..part.len().min(room)]);
                match newline {
                    Some(at) => {
                        head.last = std::mem::take(&mut head.current);
                        rest = &rest[at + 1..];
                    }
                    None => rest = &[],
                }
            }
        }
        self.inner.consume(amount);
    }
}
