//! [`McpToolbox`]: a connected server's tools as a [`ToolSource`], its list kept fresh.

use std::fmt;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use agentic_runtime::tool::{ToolContext, ToolError, ToolFuture, ToolSource, ToolSpec};
use rmcp::RoleClient;
use rmcp::service::{Peer, RunningService, ServiceError};
use serde_json::Value;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::call::{self, Target};
use crate::cancel::CancelOnDrop;
use crate::child::{ChildProcess, StopOnDrop};
use crate::client::Client;
use crate::http::Endpoint;
use crate::list::{Listing, SkippedTool, list_tools};

/// A connected MCP server's tools, a [`ToolSource`] for a toolbox
/// ([`Toolbox::with_source`](agentic_runtime::tool::Toolbox::with_source)). Made by
/// [`McpServer::connect`](crate::server::McpServer::connect). Cloning is cheap: clones share the
/// connection, which closes (and a stdio server's process is stopped and reaped) when the last
/// clone is dropped.
///
/// The list is the server's at connect time, then refreshed in the background each time the server
/// sends `notifications/tools/list_changed`: the next model turn offers the new list. A call whose
/// answer comes after such a notification waits (within its own timeout) for the new list, so a
/// tool that installs tools is followed by a turn that sees them.
///
/// A server that died stays dead: every later call is an error naming it (and its exit status),
/// nothing is restarted; connect again to get its tools back.
#[derive(Clone)]
pub struct McpToolbox {
    connection: Arc<Connection>,
}

/// One connection; dropping it closes it (field order: the service first, then the process).
struct Connection {
    /// `MCP server `name``, for the toolbox's messages.
    source_name: String,
    server: String,
    running: RunningService<RoleClient, Client>,
    listed_tools: Arc<RwLock<Listed>>,
    /// How many `tools/list_changed` the transport has seen.
    changes: watch::Receiver<u64>,
    /// The count of changes the current list reflects.
    listed: watch::Receiver<u64>,
    refresher: JoinHandle<()>,
    refresh_bound: Duration,
    endpoint: Option<Endpoint>,
    process: Option<ChildProcess>,
    _stop: Option<StopOnDrop>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.refresher.abort();
    }
}

/// The last listing: the tools offered, the tools skipped.
struct Listed {
    tools: Arc<[ToolSpec]>,
    skipped: Arc<[SkippedTool]>,
}

impl From<Listing> for Listed {
    fn from(listing: Listing) -> Self {
        Self { tools: Arc::from(listing.specs), skipped: Arc::from(listing.skipped) }
    }
}

/// What [`McpToolbox::new`] is made of.
pub(crate) struct Parts {
    pub server: String,
    pub running: RunningService<RoleClient, Client>,
    pub listing: Listing,
    pub changes: watch::Receiver<u64>,
    pub refresh_bound: Duration,
    pub endpoint: Option<Endpoint>,
    pub process: Option<(ChildProcess, StopOnDrop)>,
}

impl McpToolbox {
    /// The toolbox of a connection that is initialised and listed; starts the refresher.
    pub(crate) fn new(parts: Parts) -> Self {
        let Parts { server, running, listing, changes, refresh_bound, endpoint, process } = parts;
        let listed_tools = Arc::new(RwLock::new(Listed::from(listing)));
        let (listed_tx, listed) = watch::channel(*changes.borrow());
        let refresher = tokio::spawn(refresh(
            running.peer().clone(),
            server.clone(),
            listed_tools.clone(),
            changes.clone(),
            listed_tx,
            refresh_bound,
        ));
        let (process, stop) = process.map_or((None, None), |(process, stop)| (Some(process), Some(stop)));
        let connection = Connection {
            source_name: format!("MCP server `{server}`"),
            server,
            running,
            listed_tools,
            changes,
            listed,
            refresher,
            refresh_bound,
            endpoint,
            process,
            _stop: stop,
        };
        Self { connection: Arc::new(connection) }
    }

    /// The server's name ([`McpServer::name`](crate::server::McpServer::name)).
    pub fn server(&self) -> &str {
        &self.connection.server
    }

    /// The tools the server offers now (a shared snapshot).
    pub fn tools(&self) -> Arc<[ToolSpec]> {
        self.listed().tools.clone()
    }

    /// The tools the server lists that are not offered, and why (a shared snapshot of the last
    /// listing): each was logged as a warning when first seen; a program that shows its own
    /// warnings (the `agentic` CLI does) shows these.
    pub fn skipped(&self) -> Arc<[SkippedTool]> {
        self.listed().skipped.clone()
    }

    fn listed(&self) -> std::sync::RwLockReadGuard<'_, Listed> {
        self.connection.listed_tools.read().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A stdio server's process: its id, its exit status, its stderr's last lines; `None` for a
    /// server over HTTP.
    pub fn process(&self) -> Option<&ChildProcess> {
        self.connection.process.as_ref()
    }

    /// Whether the connection is closed (the server exited or hung up): every call now fails.
    pub fn is_closed(&self) -> bool {
        self.connection.running.is_closed() || self.connection.running.peer().is_transport_closed()
    }

    /// Waits until the list reflects every `tools/list_changed` seen so far, at most `bound`.
    /// Returns whether it does.
    pub async fn refreshed(&self, bound: Duration) -> bool {
        let wanted = *self.connection.changes.borrow();
        let mut listed = self.connection.listed.clone();
        let caught_up = listed.wait_for(|seen| *seen >= wanted);
        matches!(tokio::time::timeout(bound, caught_up).await, Ok(Ok(_)))
    }

    async fn call_tool(&self, name: &str, input: Value, context: ToolContext) -> Result<String, ToolError> {
        let connection = &*self.connection;
        let target = Target { server: &connection.server, tool: name, endpoint: connection.endpoint.as_ref() };
        let peer = connection.running.peer();
        let started = tokio::time::Instant::now();
        let (request, options) = call::request(name, input, &context);
        let handle = match peer.send_request_with_option(request, options).await {
            Ok(handle) => handle,
            Err(_not_sent) => return Err(target.gone(self.exit_status().await)),
        };
        // Dropped by the toolbox past its grace, the call still tells the server it is cancelled.
        let guard = CancelOnDrop::new(peer.clone(), handle.id.clone());
        let answer = handle.await_response().await;
        guard.disarm();
        let exit = match &answer {
            Err(ServiceError::TransportClosed) => self.exit_status().await,
            _ => None,
        };
        let outcome = target.outcome(answer, exit);
        self.await_refresh(call::remaining(started, context.timeout())).await;
        outcome
    }

    /// After an answer that followed a `tools/list_changed`, waits for the new list, at most
    /// `left` (what remains of the call's time) and the refresh's own bound.
    async fn await_refresh(&self, left: Duration) {
        if *self.connection.changes.borrow() > *self.connection.listed.borrow() {
            self.refreshed(left.min(self.connection.refresh_bound)).await;
        }
    }

    /// A dead stdio server's exit status, waited for a little ([`MCP_EXIT_REPORT_WAIT`](crate::child::MCP_EXIT_REPORT_WAIT)).
    async fn exit_status(&self) -> Option<std::process::ExitStatus> {
        match &self.connection.process {
            Some(process) => process.settle().await.0,
            None => None,
        }
    }
}

impl ToolSource for McpToolbox {
    fn name(&self) -> &str {
        &self.connection.source_name
    }

    fn specs(&self) -> Arc<[ToolSpec]> {
        self.tools()
    }

    fn call<'a>(&'a self, name: &'a str, input: Value, context: ToolContext) -> ToolFuture<'a> {
        Box::pin(self.call_tool(name, input, context))
    }
}

impl fmt::Debug for McpToolbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<String> = self.tools().iter().map(|spec| spec.name.clone()).collect();
        f.debug_struct("McpToolbox")
            .field("server", &self.connection.server)
            .field("tools", &names)
            .field("closed", &self.is_closed())
            .finish()
    }
}

/// Lists the tools again after each change the transport counted, until the connection closes.
async fn refresh(
    peer: Peer<RoleClient>,
    server: String,
    listed_tools: Arc<RwLock<Listed>>,
    mut changes: watch::Receiver<u64>,
    listed: watch::Sender<u64>,
    bound: Duration,
) {
    while changes.changed().await.is_ok() {
        let wanted = *changes.borrow_and_update();
        match list_tools(&peer, &server, bound).await {
            Ok(listing) => {
                let mut listed_tools = listed_tools.write().unwrap_or_else(|poisoned| poisoned.into_inner());
                listing.warn(&listed_tools.skipped);
                *listed_tools = Listed::from(listing);
            }
            Err(reason) => tracing::warn!(
                target: "agentic_mcp",
                server = %server,
                "the tools of MCP server `{server}` changed but could not be listed again ({reason}); keeping the previous list"
            ),
        }
        listed.send_replace(wanted);
    }
}
