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
