//! A scriptable MCP server for the tests of `agentic-mcp`: the same tools over stdio (the
//! binary `agentic-mcp-test-server`, found or built by [`server_binary`]) and over streamable HTTP
//! in the test's process ([`serve_http`]). [`TestServer`] lists the tools, [`Options`] the rest.
//!
//! The binary takes the options as arguments: `--page-size N`, `--endless-pages`,
//! `--never-initialize`, `--ignore-eof`, `--bad-tools`, `--many-tools N`, `--wordy-description BYTES`,
//! and `--record PATH`, the file it appends what it sees to (one event a line, see [`Record`]),
//! which a test reads with [`read_record`] even after the process exited.

mod binary;
mod http;
mod record;
mod server;

pub use binary::{BINARY, server_binary};
pub use http::{HttpServer, SeenRequest, serve_http};
pub use record::{EVENT_WAIT, Record, read_file as read_record};
pub use server::{EXIT_STATUS, IDEMPOTENCY_KEY_META, Options, Redirect, TestServer, malformed};

/// Serves the test server with `options` over this process's stdin and stdout until the client
/// closes them, appending what it sees to `record` (if any). The binary's body.
pub async fn serve_stdio(options: Options, record: Option<std::path::PathBuf>) {
    use rmcp::ServiceExt as _;

    let on_exit: std::sync::Arc<dyn Fn() + Send + Sync> = std::sync::Arc::new(|| std::process::exit(EXIT_STATUS));
    let ignore_eof = options.ignore_eof;
    let server = TestServer::new(options, std::sync::Arc::new(Record::new(record)), on_exit);
    // The server writes its lines to a pipe; each goes out on stdout with its malformed tools
    // patched in (see `malformed`).
    let (lines_in, lines_out) = tokio::io::duplex(64 * 1024);
    let out = tokio::spawn(write_patched(lines_out));
    if let Ok(running) = server.serve((tokio::io::stdin(), lines_in)).await {
        let _ = running.waiting().await;
    }
    let _ = out.await;
    if ignore_eof {
        std::future::pending::<()>().await;
    }
}

/// Copies the server's lines from `lines` to stdout, each patched by [`malformed`], until the
/// server closes its end.
async fn write_patched(lines: tokio::io::DuplexStream) {
    use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};

    let mut lines = tokio::io::BufReader::new(lines);
    let mut stdout = tokio::io::stdout();
    let mut line = String::new();
    while matches!(lines.read_line(&mut line).await, Ok(read) if read > 0) {
        if stdout.write_all(malformed(&line).as_bytes()).await.is_err() || stdout.flush().await.is_err() {
            return;
        }
        line.clear();
    }
}
