//! The test MCP server's binary: built by `cargo test` with this crate's tests (so the runtime's and
//! the CLI's MCP tests find it fresh, with the workspace's features, and build nothing of their
//! own), and refusing what it does not know with a usage message.

#![cfg(feature = "mcp")]

use std::process::Command;

#[test]
fn an_unknown_argument_is_a_usage_error() {
    let output = Command::new(env!("CARGO_BIN_EXE_agentic-mcp-test-server")).arg("--colour").output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("unknown argument `--colour`") && stderr.contains("usage:"), "{stderr}");
}

#[test]
fn the_runtimes_tests_find_this_binary() {
    let found = agentic_test_support::mcp::server_binary();
    assert_eq!(found, std::path::Path::new(env!("CARGO_BIN_EXE_agentic-mcp-test-server")));
}
