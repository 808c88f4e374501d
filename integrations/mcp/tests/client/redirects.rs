//! A server that answers with a redirect: it is never followed. The session, the tools' arguments
//! and the idempotency key stay with the server the URL names, the other origin receives nothing,
//! and the error names the status and the origin the redirect pointed to (never its path or query).

use agentic_mcp::{McpError, McpServer};
use agentic_runtime::tool::{ToolContext, ToolSource as _};
use agentic_test_support::mcp::{HttpServer, Options, Redirect, serve_http};
use serde_json::json;

use crate::common::GENEROUS;

/// A test server that answers `only` (every request when `None`) with `status` and a `Location` on
/// `to`'s endpoint, with a token in its query.
async fn redirecting(status: u16, to: &HttpServer, only: Option<&str>) -> HttpServer {
    let location = format!("{}?token=sk-in-the-location", to.url());
    let redirect = Redirect { status, location, only: only.map(str::to_owned) };
    serve_http(Options { redirect: Some(redirect), ..Options::default() }).await
}

#[tokio::test]
async fn a_redirect_at_initialize_is_not_followed_for_any_status() {
    for status in [301, 302, 303, 307, 308] {
        let other = serve_http(Options::default()).await;
        let front = redirecting(status, &other, None).await;
        let error = McpServer::http(front.url()).name("files").connect().await.unwrap_err();
        assert!(matches!(error, McpError::Redirected { .. }), "{status}: {error:?}");
        assert_eq!(
            error.to_string(),
            format!(
                "the MCP server `files` at {} answered {status}, a redirect to {}, which is not followed: an MCP \
                 server answers at its own URL, and following would send the session and the tools' arguments to \
                 another server; give the URL that answers, if you trust that server",
                front.url(),
                other.origin()
            )
        );
        assert!(!format!("{error:?}").contains("sk-in-the-location"), "{error:?}");
        assert_eq!(front.requests().len(), 1, "{status}: one request, never repeated");
        assert_eq!(other.requests(), [], "{status}: the other origin received nothing");
    }
}

#[tokio::test]
async fn a_redirected_tool_call_is_not_sent_to_the_other_origin() {
    for status in [302, 307] {
        let other = serve_http(Options::default()).await;
        let front = redirecting(status, &other, Some("tools/call")).await;
        let toolbox = McpServer::http(front.url()).name("files").connect().await.expect("the listing is answered");
        let context = ToolContext::new("call_1", "run-1/call_1", GENEROUS);
        let error = toolbox.call("side_effect", json!({"secret": "argument"}), context).await.unwrap_err();
        assert_eq!(
            error.message(),
            format!(
                "the MCP server `files` answered the call of `side_effect` with {status}, a redirect to {}, which is \
                 not followed: the call was not sent there; if the server moved, connect to its new URL",
                other.origin()
            )
        );
        let calls = front.requests().into_iter().filter(|seen| seen.rpc_method.as_deref() == Some("tools/call"));
        assert_eq!(calls.count(), 1, "{status}: the call was sent once");
        assert_eq!(front.record().count("call side_effect"), 0, "{status}: the server redirected it");
        assert_eq!(other.requests(), [], "{status}: the other origin received nothing");
    }
}
