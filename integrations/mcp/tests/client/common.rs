//! The servers the tests connect to, and what the servers saw.

use std::time::Duration;

use agentic_mcp::{McpServer, McpToolbox};
use agentic_runtime::tool::{ToolContext, ToolError, ToolSource as _};
use agentic_test_support::mcp::{HttpServer, Options, read_record, serve_http, server_binary};
use agentic_test_support::temp_file::TempFile;
use serde_json::Value;

/// The time limit of a call that is not meant to run out: far beyond what a loopback call takes.
pub const GENEROUS: Duration = Duration::from_secs(30);

/// The time limit of a call that is meant to run out (`hang`): short, since it is waited for in
/// full on the wall clock (paused time cannot drive a real process or socket).
pub const SHORT: Duration = Duration::from_millis(200);

/// The test server's tools the toolbox keeps (`bad name!` is refused), in the server's order.
pub const TOOLS: [&str; 12] = [
    "echo",
    "fail",
    "hang",
    "cancelled",
    "exit",
    "add_tool",
    "side_effect",
    "strict",
    "ghost",
    "picture",
    "structured",
    "big",
];

/// The names of the tools `server`'s toolbox offers, in order.
pub fn names(server: &Connected) -> Vec<String> {
    server.toolbox.specs().iter().map(|spec| spec.name.clone()).collect()
}

/// A connected test server, over stdio or HTTP, and a way to read what it saw.
pub struct Connected {
    pub toolbox: McpToolbox,
    seen: Seen,
}

enum Seen {
    /// The child's record file.
    File(TempFile),
    /// The in-process server.
    Http(HttpServer),
}

impl Connected {
    /// The test server as the child process `agentic-mcp-test-server ARGS`, named `files`.
    pub async fn stdio(args: &[&str]) -> Self {
        let record = TempFile::new("mcp-record");
        let toolbox =
            stdio_server(args).arg("--record").arg(record.path()).connect().await.expect("the test server starts");
        Self { toolbox, seen: Seen::File(record) }
    }

    /// The test server over HTTP with `options`, named `files`.
    pub async fn http(options: Options) -> Self {
        let server = serve_http(options).await;
        let toolbox = McpServer::http(server.url()).name("files").connect().await.expect("the test server answers");
        Self { toolbox, seen: Seen::Http(server) }
    }

    /// The in-process HTTP server (`None` over stdio).
    pub fn http_server(&self) -> Option<&HttpServer> {
        match &self.seen {
            Seen::Http(server) => Some(server),
            Seen::File(_) => None,
        }
    }

    /// The server's events so far (`call echo`, `cancelled hang`, `key K`, `initialize`).
    pub fn events(&self) -> Vec<String> {
        match &self.seen {
            Seen::File(file) => read_record(file.path()),
            Seen::Http(server) => server.record().events(),
        }
    }

    /// How many events are `event`.
    pub fn count(&self, event: &str) -> usize {
        self.events().iter().filter(|seen| *seen == event).count()
    }

    /// Calls `name` with `input` through the toolbox's `ToolSource` face, within `timeout`.
    pub async fn call(&self, name: &str, input: Value, timeout: Duration) -> Result<String, ToolError> {
        self.toolbox.call(name, input, ToolContext::new("call_1", "run-1/call_1", timeout)).await
    }
}

/// The test server's binary with `args`, named `files`.
pub fn stdio_server(args: &[&str]) -> McpServer {
    McpServer::stdio(server_binary()).args(args).name("files")
}

/// Runs the test `$body(Connected)` against a server over stdio and over HTTP (default options).
macro_rules! both_transports {
    ($($body:ident),* $(,)?) => {$(
        mod $body {
            #[tokio::test]
            async fn stdio() {
                super::$body(crate::common::Connected::stdio(&[]).await).await;
            }

            #[tokio::test]
            async fn http() {
                super::$body(crate::common::Connected::http(Default::default()).await).await;
            }
        }
    )*};
}
pub(crate) use both_transports;
