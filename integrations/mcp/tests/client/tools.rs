//! A tool the toolbox cannot offer (no `inputSchema`, a string for one, a schema over
//! `MCP_MAX_SCHEMA_BYTES`, a name it refuses) is skipped with a warning naming it and why; the
//! server's other tools are offered.

use agentic_mcp::{MCP_MAX_SCHEMA_BYTES, SkippedTool};
use agentic_test_support::captured_log::capture;
use agentic_test_support::mcp::Options;
use serde_json::json;

use crate::common::{Connected, TOOLS, names};

/// What the toolbox says of the test server's malformed tools, in the server's order.
fn expected_skips() -> Vec<SkippedTool> {
    let huge = json!({"type": "object", "description": "s".repeat(70 * 1024)}).to_string().len();
    [
        ("bad name!", "its name is not 1 to 64 ASCII letters, digits, `_` or `-`".to_owned()),
        ("no_schema", "it has no `inputSchema`".to_owned()),
        ("string_schema", "its `inputSchema` is a string, not an object".to_owned()),
        (
            "huge_schema",
            format!("its input schema is {huge} bytes, more than {MCP_MAX_SCHEMA_BYTES} (`MCP_MAX_SCHEMA_BYTES`)"),
        ),
    ]
    .into_iter()
    .map(|(name, reason)| SkippedTool { server: "files".to_owned(), name: name.to_owned(), reason })
    .collect()
}

async fn malformed_tools_are_skipped_with_a_warning(connect: impl Future<Output = Connected>) {
    let (guard, logs) = capture(tracing::Level::WARN);
    let server = connect.await;
    drop(guard);
    assert_eq!(names(&server), TOOLS);
    let skipped = server.toolbox.skipped();
    assert_eq!(*skipped, *expected_skips());
    let logs = logs.text();
    for skip in expected_skips() {
        let line = format!("skipping the tool `{}` of MCP server `files`: {}", skip.name, skip.reason);
        assert!(logs.contains(&line), "{line:?} not in:\n{logs}");
        assert_eq!(skip.to_string(), line);
    }
}

#[tokio::test]
async fn malformed_tools_are_skipped_with_a_warning_over_stdio() {
    malformed_tools_are_skipped_with_a_warning(Connected::stdio(&["--bad-tools"])).await;
}

#[tokio::test]
async fn malformed_tools_are_skipped_with_a_warning_over_http() {
    malformed_tools_are_skipped_with_a_warning(Connected::http(Options { bad_tools: true, ..Options::default() }))
        .await;
}

#[tokio::test]
async fn a_malformed_tool_on_a_later_page_is_skipped_too() {
    let server = Connected::stdio(&["--bad-tools", "--page-size", "2"]).await;
    assert_eq!(names(&server), TOOLS);
    assert_eq!(*server.toolbox.skipped(), *expected_skips());
}
