//! Connecting: the listing (pages, bounds, refused names) and the errors of a server that cannot
//! be used.

use std::time::Duration;

use agentic_mcp::{MCP_MAX_LIST_PAGES, McpError, McpServer};
use agentic_runtime::tool::ToolSource as _;
use agentic_test_support::mcp::{Options, serve_http};

use crate::common::{Connected, TOOLS, names, stdio_server};

#[tokio::test]
async fn the_listing_follows_every_page_over_stdio() {
    let server = Connected::stdio(&["--page-size", "2"]).await;
    assert_eq!(names(&server), TOOLS);
    assert_eq!(server.toolbox.name(), "MCP server `files`");
    let echo = &server.toolbox.specs()[0];
    assert_eq!(echo.description, "Repeats `text`.");
    assert_eq!(echo.parameters["required"], serde_json::json!(["text"]));
}

#[tokio::test]
async fn the_listing_follows_every_page_over_http() {
    let server = Connected::http(Options { page_size: Some(3), ..Options::default() }).await;
    assert_eq!(names(&server), TOOLS);
}

#[tokio::test]
async fn a_server_that_pages_forever_is_an_error() {
    let error = stdio_server(&["--endless-pages", "--page-size", "5"]).connect().await.unwrap_err();
    assert!(matches!(error, McpError::List { .. }), "{error:?}");
    assert_eq!(
        error.to_string(),
        format!(
            "listing the tools of MCP server `files` failed: it still had more pages after {MCP_MAX_LIST_PAGES} (`MCP_MAX_LIST_PAGES`)"
        )
    );
}

// The bound must run out on the wall clock: the server is a real process.
#[tokio::test]
async fn a_server_that_never_answers_initialize_is_cut_by_the_init_timeout() {
    let started = stdio_server(&["--never-initialize"]).init_timeout(Duration::from_millis(300)).connect().await;
    let error = started.unwrap_err();
    assert!(matches!(error, McpError::InitTimeout { .. }), "{error:?}");
    assert_eq!(
        error.to_string(),
        "the MCP server `files` did not finish initializing within 0.3 s; check that it is an MCP server speaking on \
         stdio, or raise `McpServer::init_timeout`"
    );
}

#[tokio::test]
async fn an_http_server_that_never_answers_initialize_is_cut_too() {
    let server = serve_http(Options { never_initialize: true, ..Options::default() }).await;
    let error = McpServer::http(server.url()).init_timeout(Duration::from_millis(300)).connect().await.unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "the MCP server `127.0.0.1` did not finish initializing within 0.3 s; check that it is an MCP server speaking \
             on streamable HTTP at {}, or raise `McpServer::init_timeout`",
            server.url()
        )
    );
}

#[tokio::test]
async fn a_missing_program_is_named() {
    let error = McpServer::stdio("/no/such/mcp-server").connect().await.unwrap_err();
    assert!(matches!(error, McpError::Spawn { .. }), "{error:?}");
    assert_eq!(error.server(), Some("mcp-server"));
    assert_eq!(
        error.to_string(),
        "could not start MCP server `mcp-server`: the program `/no/such/mcp-server` was not found; install it or give its full path"
    );
}

#[tokio::test]
async fn a_server_that_exits_during_initialize_is_reported_with_its_status_and_stderr() {
    let started = stdio_server(&["--stderr", "config file /etc/files.toml: no such file", "--exit-at-start", "5"])
        .connect()
        .await;
    let error = started.unwrap_err();
    let McpError::Closed { status, stderr, .. } = &error else { panic!("{error:?}") };
    assert_eq!(status.and_then(|status| status.code()), Some(5));
    assert_eq!(stderr, &["config file /etc/files.toml: no such file"]);
    let message = error.to_string();
    assert!(message.starts_with("the MCP server `files` closed the connection during initialize ("), "{message}");
    assert!(
        message.ends_with(
            "; it exited with status 5; the end of its stderr:\n  config file /etc/files.toml: no such file"
        ),
        "{message}"
    );
}

#[tokio::test]
async fn credentials_in_an_http_url_never_show_in_errors() {
    // Nothing listens on port 9 of loopback (discard): the connection is refused at once.
    let error = McpServer::http("http://ann:s3cret@127.0.0.1:9/mcp?token=abc").connect().await.unwrap_err();
    let message = error.to_string();
    assert!(!message.contains("s3cret") && !message.contains("token=abc") && !message.contains("ann:"), "{message}");
    assert!(matches!(error, McpError::Unreachable { .. }), "{error:?}");
    assert!(
        message
            .starts_with("could not reach MCP server `127.0.0.1` at http://127.0.0.1:9/mcp (error sending request: "),
        "{message}"
    );
    assert!(message.ends_with("; check the URL and that the server is running"), "{message}");
}
