//! A scriptable MCP server for the tests of `agentic_runtime::mcp`: the same tools over stdio (the
//! binary `agentic-mcp-test-server`, found or built by [`server_binary`]) and over streamable HTTP
//! in the test's process ([`serve_http`]). [`TestServer`] lists the tools, [`Options`] the rest.
//!
//! The binary takes the options as arguments: `--page-size N`, `--endless-pages`,
//! `--never-initialize`, `--ignore-eof`, and `--record PATH`, the file it appends what it sees to (one event a
//! line, see [`Record`]), which a test reads with [`read_record`] even after the process exited.

mod binary;
mod http;
mod record;
mod server;

pub use binary::{BINARY, server_binary};
pub use http::{HttpServer, serve_http};
pub use record::{EVENT_WAIT, Record, read_file as read_record};
pub use server::{EXIT_STATUS, IDEMPOTENCY_KEY_META, Options, TestServer};

/// Serves the test server with `options` over this process's stdin and stdout until the client
/// closes them, appending what it sees to `record` (if any). The binary's body.
pub async fn serve_stdio(options: Options, record: Option<std::path::PathBuf>) {
    use rmcp::ServiceExt as _;

    let on_exit: std::sync::Arc<dyn Fn() + Send + Sync> = std::sync::Arc::new(|| std::process::exit(EXIT_STATUS));
    let ignore_eof = options.ignore_eof;
    let server = TestServer::new(options, std::sync::Arc::new(Record::new(record)), on_exit);
    if let Ok(running) = server.serve(rmcp::transport::stdio()).await {
        let _ = running.waiting().await;
    }
    if ignore_eof {
        std::future::pending::<()>().await;
    }
}
