//! A message over the bound of one message (`MCP_MAX_MESSAGE_BYTES`, 16 MiB) is named as what it
//! is: too large, not too slow. The model reads it of a tool's answer, `McpError` of a listing; the
//! connection still serves.

use std::time::Duration;

use agentic_mcp::{MCP_MAX_MESSAGE_BYTES, MCP_MAX_TOOLS, McpError};
use agentic_test_support::mcp::Options;
use serde_json::json;

use crate::common::{Connected, GENEROUS, both_transports, stdio_server};

/// Long enough to answer 16 MiB on loopback, short enough that a failure to say "too large" is seen
/// as the timeout it used to be.
const TIME_TO_ANSWER: Duration = Duration::from_secs(10);

both_transports!(an_answer_over_the_bound_is_named_to_the_model);

async fn an_answer_over_the_bound_is_named_to_the_model(server: Connected) {
    let error = server.call("big", json!({"bytes": MCP_MAX_MESSAGE_BYTES}), TIME_TO_ANSWER).await.unwrap_err();
    assert_eq!(
        error.message(),
        "the tool `big` on MCP server `files` answered, but the server's answer was larger than 16 MiB, the limit \
         for one message, so it was dropped; ask for less at a time"
    );
    assert_eq!(server.count("call big"), 1);
    assert_eq!(server.call("echo", json!({"text": "still here"}), GENEROUS).await, Ok("still here".to_owned()));
}

// Answers as JSON bodies, not events: the bound is kept on the body.
#[tokio::test]
async fn an_answer_over_the_bound_in_a_json_body_is_named_to_the_model() {
    let server = Connected::http(Options { json_answers: true, ..Options::default() }).await;
    assert_eq!(server.call("echo", json!({"text": "as json"}), GENEROUS).await, Ok("as json".to_owned()));
    an_answer_over_the_bound_is_named_to_the_model(server).await;
}

fn too_large_listing(error: &McpError) {
    assert!(matches!(error, McpError::List { .. }), "{error:?}");
    assert_eq!(
        error.to_string(),
        "listing the tools of MCP server `files` failed: the server's answer was larger than 16 MiB, the limit for \
         one message"
    );
}

#[tokio::test]
async fn a_listing_over_the_bound_is_named_over_stdio() {
    let wordy = MCP_MAX_MESSAGE_BYTES.to_string();
    let started = stdio_server(&["--wordy-description", &wordy]).init_timeout(TIME_TO_ANSWER).connect().await;
    too_large_listing(&started.unwrap_err());
}

#[tokio::test]
async fn a_listing_over_the_bound_is_named_over_http() {
    let server = agentic_test_support::mcp::serve_http(Options {
        wordy_description: MCP_MAX_MESSAGE_BYTES,
        ..Options::default()
    })
    .await;
    let started = agentic_mcp::McpServer::http(server.url()).name("files").init_timeout(TIME_TO_ANSWER).connect().await;
    too_large_listing(&started.unwrap_err());
}

#[tokio::test]
async fn a_page_of_too_many_tools_is_refused() {
    let many = (MCP_MAX_TOOLS + 1).to_string();
    let error = stdio_server(&["--many-tools", &many]).connect().await.unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "listing the tools of MCP server `files` failed: it lists more than {MCP_MAX_TOOLS} tools (`MCP_MAX_TOOLS`)"
        )
    );
}
