//! Helpers shared by the tests, benches and fuzz targets of the agentic crates. Not published: the
//! crates take it as a path-only dev-dependency, which `cargo package` leaves out of the published
//! manifests.
//!
//! - [`temp_file`]: a file in the temp directory for one test, removed when dropped.
//! - `captured_log` (with `log`): a `tracing` writer that keeps what it is given, and a
//!   subscriber for one thread that writes into it.
//! - `counting_alloc` (with `alloc`): a global allocator that counts this thread's allocations.
//! - `peak_alloc` (with `alloc`): a global allocator that keeps the live heap bytes and their peak.
//! - [`fuzz`]: the fuzz corpus replayer and the fuzz targets' checks, shared by `fuzz/` and the
//!   crates' `fuzz_corpus` tests.
//! - `tls_server` (with `tls`): a TLS server with a self-signed certificate on 127.0.0.1.
//! - `http` (with `http`): a reqwest client for a test's own requests, whatever TLS the build has.
//! - `mcp` (with `mcp`): a scriptable MCP server, over stdio (the binary
//!   `agentic-mcp-test-server`) and over streamable HTTP on 127.0.0.1.
//! - `restate` (with `restate`): a Restate server and services in child processes a test can
//!   SIGKILL, and the server's ingress and admin API, for `agentic-restate`.
//! - `wires` (with `providers` and `chaos`): every wire of both registries, so a fault test runs on
//!   each.
//! - `written` (with `runtime`): what the runtime wrote to a trace or a journal, read strictly.
//!
//! The plain helpers need no workspace crate. The fuzz checks exercise the public API of
//! `agentic-runtime` or `agentic-chaos`, so each sits behind a feature named after its crate
//! (`runtime`, `chaos`): a crate whose tests only want a temp file does not build the runtime
//! through this crate. `runtime` builds the runtime's core alone; `providers` adds the checks of
//! its HTTP providers' decoders. `agentic-runtime`'s own tests turn `runtime` on, and its
//! `providers` feature turns `providers` on: a dev-dependency cycle, which cargo allows, and its
//! integration tests link one copy of the runtime, the same one this crate uses. The attribute's
//! check stays in `fuzz/checks/attribute.rs`: it runs the private modules of the proc-macro crate,
//! which cannot export them, so its includers compile those modules themselves.

#![warn(missing_docs)]

#[cfg(feature = "log")]
pub mod captured_log;
#[cfg(feature = "alloc")]
pub mod counting_alloc;
pub mod fuzz;
#[cfg(feature = "http")]
pub mod http;
#[cfg(feature = "mcp")]
pub mod mcp;
#[cfg(feature = "alloc")]
pub mod peak_alloc;
#[cfg(feature = "restate")]
pub mod restate;
pub mod temp_file;
#[cfg(feature = "tls")]
pub mod tls_server;
#[cfg(all(feature = "providers", feature = "chaos"))]
pub mod wires;
#[cfg(feature = "runtime")]
pub mod written;
