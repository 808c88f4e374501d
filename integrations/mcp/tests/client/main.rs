//! MCP toolboxes against the test MCP server (`agentic_test_support::mcp`), over stdio (its
//! binary, a child process) and over streamable HTTP (in this process, on 127.0.0.1 port 0).
//!
//! No test here uses tokio's paused time: the server is a real process or a real socket, whose IO
//! a paused clock would not wait for. The waits are on events (a call's answer, the server's
//! record, a process's end), each with a bound; the one timeout a test needs to expire is short
//! (200 ms) and stated where it is used.

mod bounds;
mod calls;
mod common;
mod connect;
mod exec;
mod http;
mod redirects;
mod secrets;
mod stdio;
mod tls;
mod tools;
