//! A page of too many tools is refused in memory bounded by the page itself: its tools are counted,
//! never parsed (rmcp's parse of a page of 100 000 tools peaked at 432 MB before it was refused).
//!
//! Alone in its binary: it installs a global allocator that keeps the peak of live heap bytes.
//! `MCP_MEMORY_TOOLS=N` lists N tools instead (the figure in the report: 100 000).

use agentic_mcp::{MCP_MAX_TOOLS, McpServer};
use agentic_test_support::mcp::server_binary;
use agentic_test_support::peak_alloc::{PeakBytes, live, peak, reset_peak};
use serde_json::json;

#[global_allocator]
static ALLOCATOR: PeakBytes = PeakBytes;

/// Enough tools that rmcp's parse of them would hold tens of MB; far from the hundreds of MB of
/// the page that was reported.
const TOOLS: usize = 20_000;

#[tokio::test]
async fn a_page_of_too_many_tools_is_refused_within_a_few_times_its_size() {
    let tools = std::env::var("MCP_MEMORY_TOOLS").ok().and_then(|count| count.parse().ok()).unwrap_or(TOOLS);
    // The page as the server writes it (its first tools are the usual dozen, left out: the page is larger).
    let listed: Vec<_> = (0..tools)
        .map(|index| {
            json!({"name": format!("tool_{index}"), "description": "One of many.", "inputSchema": {"type": "object", "properties": {}}})
        })
        .collect();
    let page_bytes = json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": listed}}).to_string().len();
    drop(listed);
    let binary = server_binary();
    let count = tools.to_string();

    reset_peak();
    let before = live();
    let error = McpServer::stdio(binary).args(["--many-tools", &count]).name("many").connect().await.unwrap_err();
    let held = peak() - before;

    assert_eq!(
        error.to_string(),
        format!(
            "listing the tools of MCP server `many` failed: it lists more than {MCP_MAX_TOOLS} tools (`MCP_MAX_TOOLS`)"
        )
    );
    println!("a page of {tools} tools ({page_bytes} bytes) was refused holding at most {held} bytes");
    // The line is read into a buffer that doubles: while it grows, the old and the new are both live.
    assert!(held < 4 * page_bytes, "{held} bytes held for a page of {page_bytes}");
}
