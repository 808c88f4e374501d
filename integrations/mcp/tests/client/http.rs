//! What only streamable HTTP does: a session that expires.

use serde_json::json;

use crate::common::{Connected, GENEROUS};

#[tokio::test]
async fn an_expired_session_is_initialised_again_and_the_call_sent_once_more() {
    let server = Connected::http(Default::default()).await;
    let http = server.http_server().expect("an HTTP server");
    assert_eq!(server.call("echo", json!({"text": "one"}), GENEROUS).await, Ok("one".to_owned()));
    assert_eq!(http.expire_sessions().await, 1);

    assert_eq!(server.call("echo", json!({"text": "two"}), GENEROUS).await, Ok("two".to_owned()));
    // One new session, and the call ran once in it (the 404 ran nothing).
    assert_eq!(server.count("initialize"), 2);
    assert_eq!(server.count("call echo"), 2);
    assert_eq!(http.session_count().await, 1);
}

// The server stops (its sockets closed) with the call unanswered; the client's event stream
// reconnects `MCP_SSE_RECONNECTS` times (0.5 s, 1 s) before it gives the call up.
#[tokio::test]
async fn a_server_that_stops_mid_call_is_not_called_again() {
    let server = Connected::http(Default::default()).await;
    let error = server.call("exit", json!({}), GENEROUS).await.unwrap_err();
    assert_eq!(
        error.message(),
        "the connection to MCP server `files` closed while `exit` was running: it may or may not have taken effect; \
         check before calling it again"
    );
    assert_eq!(server.count("call exit"), 1);
    let later = server.call("echo", json!({"text": "hi"}), GENEROUS).await.unwrap_err();
    let message = later.message();
    assert!(message.starts_with("the MCP server `files` could not be reached (error sending request: "), "{message}");
    assert!(message.ends_with("), so `echo` was not called"), "{message}");
    assert_eq!(server.count("call echo"), 0);
}

// A call the toolbox drops (past its grace) still tells the server it is cancelled. Over HTTP the
// server is in this process, so the test can wait for the call to have reached it.
#[tokio::test]
async fn a_dropped_call_is_cancelled_at_the_server() {
    let server = Connected::http(Default::default()).await;
    let http = server.http_server().expect("an HTTP server");
    tokio::select! {
        answer = server.call("hang", json!({}), GENEROUS) => panic!("`hang` answered: {answer:?}"),
        seen = http.record().wait_for("call hang", 1) => assert_eq!(seen, 1),
    }
    // The call's future is dropped: its guard sent `notifications/cancelled`.
    assert_eq!(server.call("cancelled", json!({"at_least": 1}), GENEROUS).await, Ok("1".to_owned()));
}
