//! Calls, the same over stdio and HTTP: what the model reads of each outcome.

use agentic_mcp::IDEMPOTENCY_KEY_META;
use agentic_test_support::mcp::IDEMPOTENCY_KEY_META as SERVER_KEY_META;
use serde_json::json;

use crate::common::{Connected, GENEROUS, SHORT, both_transports};

both_transports!(
    a_call_that_works_returns_its_text,
    is_error_is_an_error_result_with_the_servers_text,
    a_json_rpc_error_is_worded_for_the_model,
    a_call_past_its_timeout_is_cancelled_at_the_server,
    list_changed_is_seen_by_the_next_turn,
    the_idempotency_key_reaches_the_server,
    non_text_content_is_described_and_structured_content_used,
);

async fn a_call_that_works_returns_its_text(server: Connected) {
    assert_eq!(server.call("echo", json!({"text": "hello"}), GENEROUS).await, Ok("hello".to_owned()));
    assert_eq!(server.count("call echo"), 1);
}

async fn is_error_is_an_error_result_with_the_servers_text(server: Connected) {
    let error = server.call("fail", json!({}), GENEROUS).await.unwrap_err();
    assert_eq!(error.message(), "the disk is full");
}

async fn a_json_rpc_error_is_worded_for_the_model(server: Connected) {
    let error = server.call("strict", json!({"n": 0}), GENEROUS).await.unwrap_err();
    assert_eq!(error.message(), "the MCP server `files` refused the call: `n` must be a positive integer (-32602)");
    // Listed, but unknown to the server when called (a list gone stale).
    let error = server.call("ghost", json!({}), GENEROUS).await.unwrap_err();
    assert_eq!(error.message(), "the MCP server `files` refused the call: unknown tool `ghost` (-32602)");
    // The connection is still good.
    assert_eq!(server.call("strict", json!({"n": 7}), GENEROUS).await, Ok("7".to_owned()));
}

async fn a_call_past_its_timeout_is_cancelled_at_the_server(server: Connected) {
    let error = server.call("hang", json!({}), SHORT).await.unwrap_err();
    assert_eq!(
        error.message(),
        "the tool `hang` on MCP server `files` did not answer within 0.2 s; the call was cancelled"
    );
    // The server's `cancelled` tool answers once it has seen the cancel (it waits for it, bounded).
    assert_eq!(server.call("cancelled", json!({"at_least": 1}), GENEROUS).await, Ok("1".to_owned()));
    assert_eq!(server.count("cancelled hang"), 1);
}

async fn list_changed_is_seen_by_the_next_turn(server: Connected) {
    let before: Vec<String> = server.toolbox.tools().iter().map(|spec| spec.name.clone()).collect();
    assert!(!before.contains(&"lookup".to_owned()));
    assert_eq!(server.call("add_tool", json!({"name": "lookup"}), GENEROUS).await, Ok("added `lookup`".to_owned()));
    // The answer came after the notification: the call waited for the new list.
    let after: Vec<String> = server.toolbox.tools().iter().map(|spec| spec.name.clone()).collect();
    assert_eq!(after.last().map(String::as_str), Some("lookup"), "{after:?}");
    assert_eq!(after.len(), before.len() + 1);
    assert_eq!(server.call("lookup", json!({"text": "found"}), GENEROUS).await, Ok("found".to_owned()));
}

async fn the_idempotency_key_reaches_the_server(server: Connected) {
    assert_eq!(IDEMPOTENCY_KEY_META, SERVER_KEY_META);
    assert_eq!(server.call("side_effect", json!({}), GENEROUS).await, Ok("run-1/call_1".to_owned()));
    assert_eq!(server.count("key run-1/call_1"), 1);
}

async fn non_text_content_is_described_and_structured_content_used(server: Connected) {
    assert_eq!(
        server.call("picture", json!({}), GENEROUS).await,
        Ok("[image: image/png, 12 KiB]\na red square".to_owned())
    );
    assert_eq!(server.call("structured", json!({}), GENEROUS).await, Ok(r#"{"temperature":21}"#.to_owned()));
}
