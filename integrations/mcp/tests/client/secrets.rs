//! The secrets of an MCP server's URL (its userinfo, its query, in any encoding, its fragment) are
//! sent to that server as the URL says, and shown nowhere: not in an error's Display or Debug, not
//! in what the model reads, not in any line logged at TRACE, ours or the libraries' we drive.
//!
//! These tests run the client on a current-thread runtime on the test's thread, where the log
//! capture is, and the HTTP server on a runtime of its own (its own logs are not the client's).

use agentic_mcp::{McpError, McpServer};
use agentic_runtime::tool::{ToolContext, ToolSource as _};
use agentic_test_support::captured_log::capture;
use agentic_test_support::mcp::{HttpServer, Options, serve_http};
use serde_json::json;

use crate::common::GENEROUS;

/// A URL with a secret in one place, the secret as written, and as a URL encoder writes it.
struct Form {
    name: &'static str,
    url: fn(&str) -> String,
    secret: &'static str,
    encoded: &'static str,
}

const FORMS: [Form; 5] = [
    Form {
        name: "userinfo",
        url: |address| format!("http://ann:pw-SECRET-1x@{address}/mcp"),
        secret: "pw-SECRET-1x",
        encoded: "pw-SECRET-1x",
    },
    Form {
        name: "query",
        url: |address| format!("http://{address}/mcp?token=tok-SECRET-2x"),
        secret: "tok-SECRET-2x",
        encoded: "tok-SECRET-2x",
    },
    Form {
        name: "query to encode",
        url: |address| format!("http://{address}/mcp?token=Q TOKEN|SECRET-3x"),
        secret: "Q TOKEN|SECRET-3x",
        encoded: "Q%20TOKEN|SECRET-3x",
    },
    Form {
        name: "userinfo to encode",
        url: |address| format!("http://ann:p@ss SECRET-4x@{address}/mcp"),
        secret: "p@ss SECRET-4x",
        encoded: "p%40ss%20SECRET-4x",
    },
    Form {
        name: "fragment",
        url: |address| format!("http://{address}/mcp#frag-SECRET-5x"),
        secret: "frag-SECRET-5x",
        encoded: "frag-SECRET-5x",
    },
];

/// Fails if any 6 bytes of `form`'s secret, as written or encoded, are in `text`.
fn assert_hidden(form: &Form, text: &str) {
    for secret in [form.secret, form.encoded] {
        for window in secret.as_bytes().windows(6) {
            let window = std::str::from_utf8(window).expect("the secrets are ASCII");
            assert!(!text.contains(window), "{}: `{window}` of the secret shows in:\n{text}", form.name);
        }
    }
}

/// A runtime on the test's thread, where the log capture is.
fn here() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime")
}

/// An address on loopback where nothing listens (a port just freed).
fn nothing_listens() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    listener.local_addr().expect("a bound listener has an address").to_string()
}

/// The test server on a runtime of its own, whose threads are not the test's.
struct Elsewhere {
    server: Option<HttpServer>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Elsewhere {
    fn start() -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        let server = runtime.block_on(serve_http(Options::default()));
        Self { server: Some(server), runtime: Some(runtime) }
    }

    fn server(&self) -> &HttpServer {
        self.server.as_ref().expect("running")
    }

    /// Stops the server: every connection is closed.
    fn stop(&mut self) {
        drop(self.server.take());
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl Drop for Elsewhere {
    fn drop(&mut self) {
        self.stop();
    }
}

#[test]
fn no_secret_shows_when_the_server_cannot_be_reached() {
    for form in FORMS {
        let url = (form.url)(&nothing_listens());
        let (guard, logs) = capture(tracing::Level::TRACE);
        let error = here().block_on(async {
            let error = McpServer::http(url).name("files").connect().await.unwrap_err();
            // rmcp's worker logs as it quits, on this thread: let it finish.
            for _ in 0..16 {
                tokio::task::yield_now().await;
            }
            error
        });
        drop(guard);
        assert!(matches!(error, McpError::Unreachable { .. }), "{}: {error:?}", form.name);
        let text = format!("{error}\n{error:?}\n{}", logs.text());
        assert_hidden(&form, &text);
        assert!(!logs.text().is_empty(), "{}: the client logged something", form.name);
    }
}

#[test]
fn the_server_gets_the_url_as_written_and_no_log_or_error_shows_its_secrets() {
    for form in FORMS {
        let mut elsewhere = Elsewhere::start();
        let address = elsewhere.server().url().trim_start_matches("http://").trim_end_matches("/mcp").to_owned();
        let url = (form.url)(&address);
        let (guard, logs) = capture(tracing::Level::TRACE);
        let runtime = here();
        let toolbox = runtime.block_on(McpServer::http(url).name("files").connect()).expect("the server answers");
        let context = || ToolContext::new("call_1", "run-1/call_1", GENEROUS);
        let echoed = runtime.block_on(toolbox.call("echo", json!({"text": "hi"}), context()));
        assert_eq!(echoed, Ok("hi".to_owned()), "{}", form.name);
        let seen = elsewhere.server().requests();
        elsewhere.stop();
        let gone = runtime.block_on(async {
            let gone = toolbox.call("echo", json!({"text": "again"}), context()).await.unwrap_err();
            drop(toolbox);
            for _ in 0..16 {
                tokio::task::yield_now().await;
            }
            gone
        });
        drop(guard);
        let text = format!("{gone:?}\n{}", logs.text());
        assert_hidden(&form, &text);
        // The server got what the URL says: the query as encoded, the userinfo as Basic auth.
        let expected_target = match form.name {
            "query" | "query to encode" => format!("/mcp?token={}", form.encoded),
            _ => "/mcp".to_owned(),
        };
        assert!(seen.iter().all(|request| request.target == expected_target), "{}: {seen:?}", form.name);
        let basic =
            seen.iter().all(|request| request.authorization.as_deref().is_some_and(|a| a.starts_with("Basic ")));
        assert_eq!(basic, form.name.starts_with("userinfo"), "{}: {seen:?}", form.name);
    }
}
