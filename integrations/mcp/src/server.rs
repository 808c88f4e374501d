//! [`McpServer`]: where an MCP server is (a program to start, or a URL) and how long it may take
//! to be ready; [`McpServer::connect`] makes its [`McpToolbox`].

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rmcp::service::{ClientInitializeError, RunningService, ServiceExt as _};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::{ClientCacheConfig, RoleClient};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::changes::CountChanges;
use crate::child::{self, ChildProcess, Launch, StopOnDrop};
use crate::client::Client;
use crate::error::{McpError, transport_words};
use crate::http::Endpoint;
use crate::list::{Listing, list_tools};
use crate::stdio::{MAX_LINE_BYTES, screened};
use crate::toolbox::{McpToolbox, Parts};

/// How long a server has to answer `initialize` and list its tools, unless
/// [`McpServer::init_timeout`] says otherwise: 30 s. Also the bound of each later re-listing.
///
/// A stdio server started with `npx` or `uvx` may first download its package, which takes
/// seconds to tens of seconds on a cold cache; past 30 s it is stuck, or not an MCP server at all
/// (a program that waits for a terminal never answers). Claude Code waits 30 s too
/// (`MCP_TIMEOUT`).
pub const DEFAULT_MCP_INIT_TIMEOUT: Duration = Duration::from_secs(30);

/// An MCP server to connect to: a program speaking MCP on its stdin and stdout
/// ([`McpServer::stdio`]), or a streamable HTTP endpoint ([`McpServer::http`]).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// use agentic_mcp::{DEFAULT_MCP_INIT_TIMEOUT, McpServer};
///
/// let files = McpServer::stdio("/usr/local/bin/mcp-server-files").arg("--root").arg("/srv/data");
/// assert_eq!(files.server_name(), "mcp-server-files");
/// assert_eq!(files.initialization_timeout(), DEFAULT_MCP_INIT_TIMEOUT);
///
/// let search = McpServer::http("https://key:secret@search.example.com/mcp").init_timeout(Duration::from_secs(5));
/// assert_eq!(search.server_name(), "search.example.com");
/// assert_eq!(search.name("search").server_name(), "search");
/// ```
#[derive(Debug, Clone)]
pub struct McpServer {
    place: Place,
    name: Option<String>,
    init_timeout: Duration,
}

#[derive(Debug, Clone)]
enum Place {
    Stdio(Launch),
    Http(String),
}

impl McpServer {
    /// A server that is the program `program` (a path, or a name looked up in `PATH`), started
    /// with piped stdin, stdout and stderr when connecting, and stopped when its toolbox is
    /// dropped.
    pub fn stdio(program: impl Into<PathBuf>) -> Self {
        let launch = Launch { program: program.into(), args: Vec::new(), envs: Vec::new(), current_dir: None };
        Self { place: Place::Stdio(launch), name: None, init_timeout: DEFAULT_MCP_INIT_TIMEOUT }
    }

    /// A server at the streamable HTTP endpoint `url` (`http://` or `https://`; TLS with the
    /// Mozilla roots). Credentials in the URL (its userinfo, as Basic auth, and its query) are
    /// sent, to this URL only, and never shown in errors or logs; a redirect is never followed.
    pub fn http(url: impl Into<String>) -> Self {
        Self { place: Place::Http(url.into()), name: None, init_timeout: DEFAULT_MCP_INIT_TIMEOUT }
    }

    /// A stdio server's program gets `arg` too (an HTTP server has no arguments: ignored).
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        if let Place::Stdio(launch) = &mut self.place {
            launch.args.push(arg.as_ref().to_owned());
        }
        self
    }

    /// A stdio server's program gets `args` too (ignored for HTTP).
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        if let Place::Stdio(launch) = &mut self.place {
            launch.args.extend(args.into_iter().map(|arg| arg.as_ref().to_owned()));
        }
        self
    }

    /// A stdio server's program gets the environment variable `key` = `value`, on top of this
    /// process's environment (ignored for HTTP).
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        if let Place::Stdio(launch) = &mut self.place {
            launch.envs.push((key.as_ref().to_owned(), value.as_ref().to_owned()));
        }
        self
    }

    /// A stdio server's program starts in `dir` (ignored for HTTP).
    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        if let Place::Stdio(launch) = &mut self.place {
            launch.current_dir = Some(dir.into());
        }
        self
    }

    /// Calls the server `name` in messages, for the model and in errors (``MCP server `files` ``).
    ///
    /// # Default
    ///
    /// The program's file name (`mcp-server-files` for `/usr/bin/mcp-server-files`), or the URL's
    /// host.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Gives the server `timeout` to answer `initialize` and list its tools (each later
    /// re-listing too).
    ///
    /// # Default
    ///
    /// [`DEFAULT_MCP_INIT_TIMEOUT`] (30 s; the reason is there).
    pub fn init_timeout(mut self, timeout: Duration) -> Self {
        self.init_timeout = timeout;
        self
    }

    /// The bound of initialising and listing ([`McpServer::init_timeout`]).
    pub fn initialization_timeout(&self) -> Duration {
        self.init_timeout
    }

    /// What the server is called in messages ([`McpServer::name`]).
    pub fn server_name(&self) -> String {
        if let Some(name) = &self.name {
            return name.clone();
        }
        match &self.place {
            Place::Stdio(launch) => program_name(&launch.program),
            Place::Http(url) => Endpoint::parse(url).map(|endpoint| endpoint.host().to_owned()).unwrap_or_default(),
        }
    }

    /// Starts (stdio) or reaches (HTTP) the server, initialises the MCP session and lists the
    /// tools (every page), all within [`McpServer::init_timeout`].
    ///
    /// Needs a tokio runtime with IO and timers enabled (the connection's tasks run on it).
    ///
    /// # Errors
    ///
    /// [`McpError`]: the program could not be started, the server did not answer in time, it
    /// exited or hung up during initialize (with its exit status and the end of its stderr), it
    /// refused to initialize, or its list could not be read within the bounds.
    pub async fn connect(self) -> Result<McpToolbox, McpError> {
        let server = self.server_name();
        let deadline = Instant::now() + self.init_timeout;
        let mut setup =
            Setup { server, bound: self.init_timeout, deadline, transport_name: "stdio".to_owned(), endpoint: None };
        match &self.place {
            Place::Stdio(launch) => {
                let started = child::start(&setup.server, launch)?;
                let output = screened(started.stdout, setup.server.clone());
                let transport =
                    AsyncRwTransport::new_client(output, started.stdin).with_max_line_length(MAX_LINE_BYTES);
                setup.run(transport, Some((started.process, started.stop))).await
            }
            Place::Http(url) => {
                let endpoint = Endpoint::parse(url)?;
                let transport = endpoint.transport(&setup.server)?;
                setup.transport_name = format!("streamable HTTP at {}", endpoint.shown());
                setup.endpoint = Some(endpoint);
                setup.run(transport, None).await
            }
        }
    }
}

/// One connection attempt's facts.
struct Setup {
    server: String,
    bound: Duration,
    deadline: Instant,
    transport_name: String,
    endpoint: Option<Endpoint>,
}

impl Setup {
    /// Initialises over `transport` and lists the tools, before the deadline.
    async fn run<T>(self, transport: T, process: Option<(ChildProcess, StopOnDrop)>) -> Result<McpToolbox, McpError>
    where
        T: Transport<RoleClient> + 'static,
    {
        let (changes_tx, changes) = watch::channel(0);
        let transport = CountChanges::new(transport, changes_tx);
        let running = match tokio::time::timeout_at(self.deadline, Client.serve(transport)).await {
            Err(_elapsed) => return Err(self.timed_out()),
            Ok(Ok(running)) => running,
            Ok(Err(error)) => return Err(self.init_failed(error, process.as_ref().map(|(process, _)| process)).await),
        };
        let listing = self.list(&running).await?;
        listing.warn(&[]);
        let Self { server, bound: refresh_bound, endpoint, .. } = self;
        Ok(McpToolbox::new(Parts { server, running, listing, changes, refresh_bound, endpoint, process }))
    }

    async fn list(&self, running: &RunningService<RoleClient, Client>) -> Result<Listing, McpError> {
        // Our list is the cache: rmcp's would answer a re-listing with the page it had.
        running.peer().set_response_cache_config(ClientCacheConfig::disabled()).await;
        let left = self.deadline.saturating_duration_since(Instant::now());
        list_tools(running.peer(), &self.server, left)
            .await
            .map_err(|reason| McpError::List { server: self.server.clone(), reason: self.redact(&reason) })
    }

    fn timed_out(&self) -> McpError {
        McpError::InitTimeout {
            server: self.server.clone(),
            elapsed: self.bound,
            transport: self.transport_name.clone(),
        }
    }

    /// A stdio server that went away is reported with its exit status and stderr.
    async fn init_failed(&self, error: ClientInitializeError, process: Option<&ChildProcess>) -> McpError {
        let server = self.server.clone();
        if let (ClientInitializeError::TransportError { error, .. }, Some(endpoint)) = (&error, &self.endpoint) {
            let words = transport_words(error);
            let url = endpoint.shown().to_owned();
            if let Some((status, target)) = words.redirect {
                return McpError::Redirected { server, url, status, target };
            }
            if words.unreached {
                return McpError::Unreachable { server, url, reason: endpoint.redact(&words.text) };
            }
        }
        let words = match &error {
            ClientInitializeError::TransportError { error, context } => {
                format!("{} (when {context})", transport_words(error).text)
            }
            other => other.to_string(),
        };
        let reason = self.redact(&words);
        let went_away =
            matches!(error, ClientInitializeError::ConnectionClosed(_) | ClientInitializeError::TransportError { .. });
        match process {
            Some(process) if went_away => {
                let (status, stderr) = process.settle().await;
                McpError::Closed { server, reason, status, stderr }
            }
            _ => McpError::Initialize { server, reason },
        }
    }

    fn redact(&self, text: &str) -> String {
        match &self.endpoint {
            Some(endpoint) => endpoint.redact(text),
            None => text.to_owned(),
        }
    }
}

/// The file name of `program`, the server's default name.
fn program_name(program: &Path) -> String {
    program.file_name().map_or_else(|| program.display().to_string(), |name| name.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_name_is_the_program_or_the_host() {
        assert_eq!(McpServer::stdio("npx").server_name(), "npx");
        assert_eq!(McpServer::stdio("/opt/bin/files-server").server_name(), "files-server");
        assert_eq!(McpServer::http("http://127.0.0.1:8080/mcp").server_name(), "127.0.0.1");
        assert_eq!(McpServer::http("https://u:p@mcp.example.com/x").name("x").server_name(), "x");
    }
}
