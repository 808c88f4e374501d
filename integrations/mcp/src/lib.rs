//! MCP toolboxes: an MCP server's tools in agentic's tool loop, like any other tool (on rmcp 3.11;
//! this crate needs Rust 1.88, `agentic-runtime` 1.85).
//!
//! [`McpServer`] says where the server is, a program speaking MCP over its stdio
//! ([`McpServer::stdio`]) or a streamable HTTP endpoint ([`McpServer::http`]);
//! [`McpServer::connect`] starts or reaches it, initialises the session and lists its tools
//! (following `nextCursor`, within [`MCP_MAX_LIST_PAGES`] and [`MCP_MAX_TOOLS`]), all within
//! [`DEFAULT_MCP_INIT_TIMEOUT`]. The [`McpToolbox`] it gives is a
//! [`ToolSource`](agentic_runtime::tool::ToolSource): add it to a toolbox with
//! [`Toolbox::with_source`](agentic_runtime::tool::Toolbox::with_source).
//!
//! ```toml
//! [dependencies]
//! agentic-runtime = "0.1"
//! agentic-mcp = "0.1"
//! ```
//!
//! # What the model sees
//!
//! - A result's texts, one content block a line; an image, audio or binary resource as a short
//!   bracket (`[image: image/png, 12 KiB]`); the `structuredContent` when there is no text.
//! - A result with `isError: true`: an error result (`is_error`) with the server's text, as a
//!   tool's own error.
//! - A JSON-RPC error (unknown tool, invalid params): ``the MCP server `files` refused the call:
//!   unknown tool `x` (-32602)``.
//! - A call past its timeout (the toolbox's tool timeout, the request's timeout here): rmcp sends
//!   the server `notifications/cancelled` and the model reads ``the tool `x` on MCP server `files`
//!   did not answer within 30 s; the call was cancelled``.
//! - An answer over [`MCP_MAX_MESSAGE_BYTES`] (16 MiB): ``the tool `x` on MCP server `files`
//!   answered, but the server's answer was larger than 16 MiB, the limit for one message, so it
//!   was dropped; ask for less at a time``, as soon as it is seen (not at the timeout).
//! - A connection that closed after the call was sent: the call is not sent again (it may have
//!   acted); the model reads ``the connection to MCP server `files` closed while `x` was running:
//!   it may or may not have taken effect; check before calling it again``.
//! - A server that is gone (its process exited): every later call says so, with the exit status;
//!   nothing is restarted.
//!
//! An expired streamable HTTP session (HTTP 404 for its `Mcp-Session-Id`) is initialised again and
//! the call sent once more, by rmcp's transport (`reinit_on_expired_session`): the server never
//! ran a call it answered with 404. Each call carries its idempotency key in its `_meta`, under
//! [`IDEMPOTENCY_KEY_META`].
//!
//! None of this is retried by the runtime's retry layers: tool errors are the model's business.
//!
//! # Over HTTP
//!
//! - No redirect is followed: a 3xx to `initialize` is [`McpError::Redirected`], naming the status
//!   and the origin it pointed to; to a call, the model reads the same. The session, the tools'
//!   arguments and the idempotency keys go to the URL given and nowhere else.
//! - A URL's secrets (its userinfo, sent as Basic auth, and its query) are sent to that URL only,
//!   and shown nowhere, in any encoding: rmcp, which logs URLs, is given the URL without them; the
//!   client that sends (ours) keeps them, and its errors carry no URL. The fragment is never sent.
//! - TLS: rustls on ring with the Mozilla roots, a configuration of this crate's own that reqwest
//!   0.13 is handed whole. No process-wide crypto provider is installed: the program's other
//!   rustls users choose theirs as they would without this crate. The crate turns on reqwest
//!   0.13's `rustls` feature (its default TLS), so another reqwest 0.13 client of the program, even
//!   one with no TLS feature of its own, still starts: reqwest gives it aws-lc-rs, as by default
//!   (its `rustls-no-provider` would make that client panic at `Client::new()`).
//!
//! # Bounds
//!
//! Initialising and listing: [`DEFAULT_MCP_INIT_TIMEOUT`]. One message: [`MCP_MAX_MESSAGE_BYTES`]
//! (a stdio line, an HTTP response body, an SSE event), kept where its bytes arrive; a larger
//! answer ends its request with the reason at once. A listing: [`MCP_MAX_TOOLS`] tools (a page
//! listing more is refused before it is parsed: its tools are counted, not kept) and
//! [`MCP_MAX_LIST_PAGES`] pages. A tool's description: [`MCP_MAX_DESCRIPTION_CHARS`]; a tool with
//! a schema over [`MCP_MAX_SCHEMA_BYTES`], with no `inputSchema` or one that is not an object, or
//! with a name the toolbox refuses is skipped with a warning ([`SkippedTool`],
//! [`McpToolbox::skipped`]), and the server's other tools are offered. A stdio server's stderr: the
//! last [`MCP_STDERR_TAIL_LINES`] lines, kept for its errors; its process: stopped
//! [`MCP_CHILD_EXIT_GRACE`] after the last toolbox clone is dropped, and reaped.
//!
//! # Examples
//!
//! ```no_run
//! use agentic_mcp::McpServer;
//! use agentic_runtime::tool::Toolbox;
//! use agentic_runtime::{Runtime, Scripted, ScriptedProvider};
//!
//! # #[tokio::main]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let files = McpServer::stdio("npx")
//!     .args(["-y", "@modelcontextprotocol/server-filesystem", "/srv/data"])
//!     .name("files")
//!     .connect()
//!     .await?;
//! let search = McpServer::http("https://search.example.com/mcp").connect().await?;
//! println!("{} tools from `files`", files.tools().len());
//!
//! let toolbox = Toolbox::new().with_source(files).with_source(search);
//! # let provider = ScriptedProvider::new([Scripted::ok("invoice-2026-11.txt")]); // any provider
//! let runtime = Runtime::builder(provider).with_tools(toolbox).build().unwrap();
//! let reply = runtime.exec("Which files mention the invoice?").await?;
//! println!("{}", reply.text());
//! # Ok(())
//! # }
//! ```

#![deny(missing_docs)]
#![deny(unsafe_code)]
#![warn(unreachable_pub, missing_debug_implementations)]

mod bound;
mod call;
mod cancel;
mod changes;
mod child;
mod client;
mod error;
mod http;
mod http_client;
mod http_error;
mod list;
mod scan;
mod server;
mod sse;
mod stdio;
mod text;
mod tls;
mod toolbox;

pub use bound::{MCP_MAX_MESSAGE_BYTES, MCP_MAX_TOOLS};
pub use call::IDEMPOTENCY_KEY_META;
pub use child::{
    ChildProcess, MCP_CHILD_EXIT_GRACE, MCP_EXIT_REPORT_WAIT, MCP_STDERR_LINE_BYTES, MCP_STDERR_TAIL_LINES,
};
pub use error::McpError;
pub use http::MCP_SSE_RECONNECTS;
pub use list::{MCP_MAX_DESCRIPTION_CHARS, MCP_MAX_LIST_PAGES, MCP_MAX_SCHEMA_BYTES, SkippedTool};
pub use server::{DEFAULT_MCP_INIT_TIMEOUT, McpServer};
pub use toolbox::McpToolbox;
