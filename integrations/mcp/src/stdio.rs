//! A stdio server's output as rmcp reads it: line by line, each line within the bound of one
//! message ([`MCP_MAX_MESSAGE_BYTES`]) or replaced by its stand-in (see `bound.rs`), before rmcp's
//! transport parses it.
//!
//! rmcp's transport drops a line over its bound and logs it, and the request it answered waits for
//! its timeout. A task of ours reads the child's stdout first: a line over the bound is scanned as it
//! is dropped (its `id`, [`Scan`]), and the request it answered gets an error answer saying why.

use tokio::io::{AsyncBufReadExt as _, AsyncRead, AsyncWriteExt as _, BufReader, DuplexStream};

use crate::bound::{Dropped, MCP_MAX_MESSAGE_BYTES, screen};
use crate::scan::Scan;

/// The longest line rmcp's transport is given: a message at the bound, its line ending and the
/// carriage return a server may put before it. Nothing longer reaches it.
pub(crate) const MAX_LINE_BYTES: usize = MCP_MAX_MESSAGE_BYTES + 2;

/// How much of the output is in flight between the task and rmcp's transport: 64 KiB.
const PIPE_BYTES: usize = 64 * 1024;

/// The lines of `output` as rmcp's transport should read them: a task copies them, each within the
/// bound or replaced, until `output` ends (the server closed it, or exited) or the reader is
/// dropped. `server` names the server in the warning of a message dropped with no request to tell.
pub(crate) fn screened(output: impl AsyncRead + Unpin + Send + 'static, server: String) -> DuplexStream {
    let (ours, theirs) = tokio::io::duplex(PIPE_BYTES);
    tokio::spawn(copy_lines(output, ours, server));
    theirs
}

/// One line's bytes: kept while within the bound, else only scanned.
enum Line {
    Kept(Vec<u8>),
    Dropped(Scan),
}

async fn copy_lines(output: impl AsyncRead + Unpin, mut to: DuplexStream, server: String) {
    let mut output = BufReader::with_capacity(PIPE_BYTES, output);
    let mut line = Line::Kept(Vec::new());
    loop {
        let (taken, ended) = match output.fill_buf().await {
            Ok([]) | Err(_) => break,
            Ok(available) => {
                let end = available.iter().position(|byte| *byte == b'\n');
                let piece = &available[..end.map_or(available.len(), |at| at + 1)];
                match &mut line {
                    Line::Kept(kept) if kept.len() + piece.len() > MAX_LINE_BYTES => {
                        let mut scan = Scan::default();
                        scan.feed(kept);
                        scan.feed(piece);
                        line = Line::Dropped(scan);
                    }
                    Line::Kept(kept) => kept.extend_from_slice(piece),
                    Line::Dropped(scan) => scan.feed(piece),
                }
                (piece.len(), end.is_some())
            }
        };
        output.consume(taken);
        if ended {
            let done = std::mem::replace(&mut line, Line::Kept(Vec::new()));
            if let Some(out) = passed_on(done, &server)
                && to.write_all(&out).await.is_err()
            {
                return;
            }
        }
    }
    // A last line without its newline is no message (rmcp would drop it too); the end of the
    // pipe is the end of the output.
    let _ = to.shutdown().await;
}

/// What rmcp reads for one whole line: the line, its stand-in, or nothing.
fn passed_on(line: Line, server: &str) -> Option<Vec<u8>> {
    match line {
        Line::Kept(kept) => match screen(&kept) {
            Some(stand_in) => Some(format!("{stand_in}\n").into_bytes()),
            None => Some(kept),
        },
        Line::Dropped(scan) => match scan.answer_id() {
            Some(id) => Some(format!("{}\n", Dropped::TooLarge.answer_text(id)).into_bytes()),
            None => {
                tracing::warn!(
                    target: "agentic_mcp",
                    server,
                    "the MCP server `{server}` sent a message larger than 16 MiB (the limit for one message) that \
                     answers no request; it was dropped"
                );
                None
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::{RequestId, ServerJsonRpcMessage};
    use tokio::io::AsyncReadExt as _;

    use super::*;

    async fn through(input: Vec<u8>) -> String {
        let mut read = screened(std::io::Cursor::new(input), "files".to_owned());
        let mut out = String::new();
        read.read_to_string(&mut out).await.unwrap();
        out
    }

    #[tokio::test]
    async fn lines_within_the_bound_pass_and_a_longer_answer_becomes_its_stand_in() {
        let small = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n";
        let text = "x".repeat(MCP_MAX_MESSAGE_BYTES);
        let big = format!(
            "{{\"result\":{{\"content\":[{{\"type\":\"text\",\"text\":\"{text}\"}}]}},\"jsonrpc\":\"2.0\",\"id\":2}}\n"
        );
        let notification =
            format!("{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":\"{text}\"}}\n");
        let out = through([small, &big, &notification, small, "{\"no\":\"newline\"}"].concat().into_bytes()).await;
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 3, "{}", out.len());
        assert_eq!((lines[0], lines[2]), (small.trim_end(), small.trim_end()));
        let ServerJsonRpcMessage::Error(answer) = serde_json::from_str(lines[1]).unwrap() else {
            panic!("{}", lines[1])
        };
        assert_eq!(answer.id, Some(RequestId::Number(2)));
        assert_eq!(answer.error.message, "the server's answer was larger than 16 MiB, the limit for one message");
    }
}
