//! The `sse` check: the SSE decoder and every wire's stream reader ([`WireFormat::ALL`]) on any
//! body, split into reads at points the input chooses, and the error-body parser. Shared by
//! `fuzz/fuzz_targets/sse.rs` and `runtime/tests/fuzz_corpus.rs`.
//!
//! Input: byte 0 picks the reader, byte 1 how to split; the rest is the body. Byte 0 modulo 6
//! picks the check; for a stream, the wire is `ALL[(mode / 6 * 2 + mode % 6 - 2) % ALL.len()]`,
//! so modes 2 and 3 stay OpenAI and Anthropic, as in the corpus written before there were more
//! wires, and a wire appended to the registry is reached with no edit here.

use agentic_runtime::__fuzz::{self, WireFormat};
use agentic_runtime::provider::StreamEvent;

/// The API key the readers redact; a body that contains it must not leak it into an error.
const KEY: &str = "sk-fuzz-KEY";

/// Never panics; the same events whatever the split; a stream ends at its first final event; the
/// key never appears in an error.
pub fn check(data: &[u8]) {
    let [mode, split, body @ ..] = data else { return };
    let reads = split_reads(body, *split);
    match mode % 6 {
        0 | 1 => {
            let whole = __fuzz::sse(&[body]);
            let split = __fuzz::sse(&reads);
            if whole.2.is_none() && split.2.is_none() {
                assert_eq!(whole.0, split.0, "the events depend on how the body was split: {reads:?}");
                assert_eq!(whole.1, split.1);
            }
        }
        2 | 3 => {
            let format = wire(usize::from(mode / 6) * 2 + usize::from(mode % 6 - 2));
            let whole = __fuzz::stream(format, &[body], false, Some(KEY));
            let split = __fuzz::stream(format, &reads, false, Some(KEY));
            assert_eq!(whole, split, "the items depend on how the body was split: {reads:?}");
            check_items(&whole);
        }
        4 => {
            let format = wire(usize::from(*split));
            check_items(&__fuzz::stream(format, &[body], true, Some(KEY)));
        }
        _ => {
            let status = u16::from(*split) * 3;
            for cut in [false, true] {
                let error = __fuzz::http_error(status, body, cut, Some(KEY));
                assert!(!format!("{error} {error:?}").contains(KEY), "the key leaked: {error:?}");
            }
        }
    }
}

/// The registry's wire at `index`, wrapping.
fn wire(index: usize) -> WireFormat {
    WireFormat::ALL[index % WireFormat::ALL.len()]
}

/// `body` in reads: at most 8 cut points, from the bits of `split` and the body's own bytes.
fn split_reads(body: &[u8], split: u8) -> Vec<&[u8]> {
    if split == 0 || body.is_empty() {
        return vec![body];
    }
    let mut reads = Vec::new();
    let mut rest = body;
    let mut step = usize::from(split);
    while !rest.is_empty() && reads.len() < 8 {
        let at = (step % rest.len()).max(1);
        reads.push(&rest[..at]);
        rest = &rest[at..];
        step = step.wrapping_mul(31).wrapping_add(7);
    }
    if !rest.is_empty() {
        reads.push(rest);
    }
    reads
}

/// At most one final item (`Done`, an error event or an `Err`), and last; no key in an error.
fn check_items(items: &[Result<StreamEvent, agentic_runtime::provider::ModelError>]) {
    let finals = items
        .iter()
        .filter(|item| matches!(item, Err(_) | Ok(StreamEvent::Done { .. } | StreamEvent::Error { .. })))
        .count();
    assert!(finals <= 1, "more than one final item: {items:?}");
    if finals == 1 {
        assert!(
            matches!(items.last(), Some(Err(_) | Ok(StreamEvent::Done { .. } | StreamEvent::Error { .. }))),
            "items after the final one: {items:?}"
        );
    }
    for item in items {
        let text = match item {
            Err(error) => format!("{error} {error:?}"),
            Ok(StreamEvent::Error { message, error }) => format!("{message} {error:?}"),
            Ok(_) => continue,
        };
        assert!(!text.contains(KEY), "the key leaked: {text}");
    }
}
