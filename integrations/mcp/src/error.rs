//! What can go wrong connecting to an MCP server: [`McpError`].

use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::Duration;

use agentic_runtime::policy::rules::format_ms;
use rmcp::transport::DynamicTransportError;
use rmcp::transport::streamable_http_client::StreamableHttpError;

use crate::http_error::HttpError;
use crate::text::{describe, with_causes};

/// Why [`McpServer::connect`](crate::server::McpServer::connect) failed. Each message names the server and
/// says what to do; a URL in it has no credentials, no query and no fragment.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// The server's program could not be started.
    #[error("{}", spawn_message(server, program, source))]
    Spawn {
        /// The server's name.
        server: String,
        /// The program that was started.
        program: PathBuf,
        /// Why it could not be.
        #[source]
        source: std::io::Error,
    },
    /// The server did not answer `initialize` (or the first `tools/list`) in time.
    #[error(
        "the MCP server `{server}` did not finish initializing within {}; check that it is an MCP server \
         speaking on {transport}, or raise `McpServer::init_timeout`",
        seconds(*elapsed)
    )]
    InitTimeout {
        /// The server's name.
        server: String,
        /// The bound that was reached.
        elapsed: Duration,
        /// `stdio`, or `streamable HTTP at URL` (the URL without its secrets).
        transport: String,
    },
    /// The server went away (its process exited, or the connection closed) before it was ready.
    #[error("{}", closed_message(server, reason, status, stderr))]
    Closed {
        /// The server's name.
        server: String,
        /// What the client saw.
        reason: String,
        /// The child process's exit status, when it has exited.
        status: Option<ExitStatus>,
        /// The last lines of its stderr (bounded, [`MCP_STDERR_TAIL_LINES`](crate::child::MCP_STDERR_TAIL_LINES)).
        stderr: Vec<String>,
    },
    /// The HTTP server could not be reached: nothing answers at its URL.
    #[error("could not reach MCP server `{server}` at {url} ({reason}); check the URL and that the server is running")]
    Unreachable {
        /// The server's name.
        server: String,
        /// The URL, without credentials or query.
        url: String,
        /// What the HTTP stack said (the URL in it redacted).
        reason: String,
    },
    /// The server answered with a redirect (3xx), which is never followed: the request went
    /// nowhere else.
    #[error(
        "the MCP server `{server}` at {url} answered {status}, a redirect to {target}, which is not followed: an MCP \
         server answers at its own URL, and following would send the session and the tools' arguments to another \
         server; give the URL that answers, if you trust that server"
    )]
    Redirected {
        /// The server's name.
        server: String,
        /// The URL, without credentials or query.
        url: String,
        /// The status, 301 to 308.
        status: u16,
        /// The origin the redirect pointed to (`scheme://host:port`: never its path or query).
        target: String,
    },
    /// The server answered `initialize` with an error, or the exchange failed.
    #[error("the MCP server `{server}` refused to initialize: {reason}")]
    Initialize {
        /// The server's name.
        server: String,
        /// The server's or the transport's words (a URL in them redacted).
        reason: String,
    },
    /// Listing the server's tools failed, or did not end within the bounds.
    #[error("listing the tools of MCP server `{server}` failed: {reason}")]
    List {
        /// The server's name.
        server: String,
        /// What went wrong.
        reason: String,
    },
    /// The URL given to [`McpServer::http`](crate::server::McpServer::http) cannot be used.
    #[error(
        "invalid MCP server URL `{url}`: {reason}; give an `http://` or `https://` URL such as `https://example.com/mcp`"
    )]
    Url {
        /// The URL, without credentials or query.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
}

fn spawn_message(server: &str, program: &std::path::Path, source: &std::io::Error) -> String {
    let program = program.display();
    match source.kind() {
        std::io::ErrorKind::NotFound => format!(
            "could not start MCP server `{server}`: the program `{program}` was not found; install it or give its full path"
        ),
        std::io::ErrorKind::PermissionDenied => format!(
            "could not start MCP server `{server}`: the program `{program}` is not executable (permission denied)"
        ),
        _ => format!("could not start MCP server `{server}` (`{program}`): {source}"),
    }
}

fn closed_message(server: &str, reason: &str, status: &Option<ExitStatus>, stderr: &[String]) -> String {
    let mut message = format!("the MCP server `{server}` closed the connection during initialize ({reason})");
    if let Some(status) = status {
        message.push_str(&format!("; it exited with {}", describe_status(*status)));
    }
    if stderr.is_empty() {
        message.push_str("; it wrote nothing to stderr");
    } else {
        message.push_str("; the end of its stderr:");
        for line in stderr {
            message.push_str("\n  ");
            message.push_str(line);
        }
    }
    message
}

/// `status 3`, `signal 9`: an exit status in words.
pub(crate) fn describe_status(status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("status {code}");
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt as _;
        if let Some(signal) = status.signal() {
            return format!("signal {signal}");
        }
    }
    status.to_string()
}

impl McpError {
    /// The server's name, as given to [`McpServer::name`](crate::server::McpServer::name) or derived;
    /// `None` for a URL that could not be read.
    pub fn server(&self) -> Option<&str> {
        let server = match self {
            Self::Spawn { server, .. }
            | Self::InitTimeout { server, .. }
            | Self::Closed { server, .. }
            | Self::Unreachable { server, .. }
            | Self::Redirected { server, .. }
            | Self::Initialize { server, .. }
            | Self::List { server, .. } => server,
            Self::Url { .. } => return None,
        };
        Some(server)
    }
}

/// `30 s`, `0.2 s`: a bound in the words of the toolbox's own timeouts.
pub(crate) fn seconds(duration: Duration) -> String {
    format_ms(u64::try_from(duration.as_millis()).unwrap_or(u64::MAX))
}

/// What a transport error says, in words a person reads: the error and its causes joined by
/// `: ` (rmcp's wrapper and its type names left out), whether the server was never reached (a
/// refused or failed connection: nothing was sent), and the redirect it answered, if it did.
pub(crate) struct TransportWords {
    pub text: String,
    pub unreached: bool,
    /// The status and the origin of a redirect, not followed.
    pub redirect: Option<(u16, String)>,
}

/// The words of `error`, a transport's error inside rmcp's [`DynamicTransportError`].
pub(crate) fn transport_words(error: &DynamicTransportError) -> TransportWords {
    let inner: &(dyn std::error::Error + 'static) = error.error.as_ref();
    // rmcp's HTTP error keeps our client's error as a field, not as its source.
    match inner.downcast_ref::<StreamableHttpError<HttpError>>() {
        Some(StreamableHttpError::Client(HttpError::Redirect { status, target })) => {
            TransportWords { text: inner.to_string(), unreached: false, redirect: Some((*status, target.clone())) }
        }
        Some(StreamableHttpError::Client(client)) => {
            TransportWords { text: describe(client), unreached: client.is_connect(), redirect: None }
        }
        _ => TransportWords { text: with_causes(inner.to_string(), inner.source()), unreached: false, redirect: None },
    }
}
