//! What only a child process does: exit mid-call, and be reaped when its toolbox is dropped.

use std::os::unix::process::ExitStatusExt as _;
use std::path::Path;

use agentic_runtime::tool::{ToolContext, ToolSource as _};
use agentic_test_support::mcp::EVENT_WAIT;
use serde_json::json;

use crate::common::{Connected, GENEROUS};

#[tokio::test]
async fn a_server_that_exits_mid_call_is_not_called_again() {
    let server = Connected::stdio(&[]).await;
    let error = server.call("exit", json!({}), GENEROUS).await.unwrap_err();
    assert_eq!(
        error.message(),
        "the connection to MCP server `files` closed while `exit` was running (the server exited with status 3): it \
         may or may not have taken effect; check before calling it again"
    );
    // The server saw the call once: nothing replayed it.
    assert_eq!(server.count("call exit"), 1);
    assert!(server.toolbox.is_closed());

    let later = server.call("echo", json!({"text": "hi"}), GENEROUS).await.unwrap_err();
    assert_eq!(
        later.message(),
        "the MCP server `files` is not running (its process exited with status 3), so `echo` was not called; its \
         tools stay unavailable until the program connects to it again"
    );
    assert_eq!(server.count("call echo"), 0);
}

#[tokio::test]
async fn the_child_is_reaped_when_the_last_clone_drops() {
    let server = Connected::stdio(&[]).await;
    let process = server.toolbox.process().expect("a stdio server has a process").clone();
    let proc_entry = format!("/proc/{}", process.id());
    assert!(Path::new(&proc_entry).exists());
    let clone = server.toolbox.clone();
    drop(server);
    assert_eq!(process.exit_status(), None, "a clone keeps the server alive");
    let context = ToolContext::new("call_2", "run-1/call_2", GENEROUS);
    assert_eq!(clone.call("echo", json!({"text": "still here"}), context).await, Ok("still here".to_owned()));
    drop(clone);
    let status =
        tokio::time::timeout(EVENT_WAIT, process.exited()).await.expect("the child exits once its toolbox is gone");
    // It exits by itself when its stdin closes (status 0), within the grace.
    assert_eq!(status.and_then(|status| status.code()), Some(0));
    assert!(!Path::new(&proc_entry).exists(), "the child was reaped");
}

// The grace (`MCP_CHILD_EXIT_GRACE`, 2 s) runs out on the wall clock: the child is a real process.
#[tokio::test]
async fn a_child_that_ignores_its_closed_stdin_is_killed_after_the_grace() {
    let server = Connected::stdio(&["--ignore-eof"]).await;
    let process = server.toolbox.process().expect("a stdio server has a process").clone();
    drop(server);
    let status = tokio::time::timeout(EVENT_WAIT, process.exited()).await.expect("the child is killed");
    let status = status.expect("the child was waited for");
    assert_eq!((status.code(), status.signal()), (None, Some(9)), "killed: {status:?}");
    assert!(!Path::new(&format!("/proc/{}", process.id())).exists(), "the child was reaped");
}
