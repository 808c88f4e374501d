//! `agentic ask`'s tool flags: the MCP servers whose tools the model is offered, how long one tool
//! call may run, and how many tool turns one exec may take.

use std::sync::Arc;
use std::time::Duration;

use agentic_runtime::Toolbox;
use agentic_runtime::tool::{ToolContext, ToolFuture, ToolSource, ToolSpec};
use serde_json::Value;

use crate::terminal::shown;

/// The tools `agentic ask` offers the model.
#[derive(Debug, clap::Args)]
pub(crate) struct ToolFlags {
    /// An MCP server to start over stdio and offer the tools of, as one shell-quoted command line,
    /// e.g. --mcp "npx -y @modelcontextprotocol/server-filesystem /tmp" (repeatable; a tool name
    /// two servers have is offered from the first).
    #[arg(long, value_name = "\"CMD ARGS...\"")]
    mcp: Vec<String>,
    /// How long one tool call may run; one that does not answer in time is cancelled and the model
    /// is told so [default: 120000].
    #[arg(long, value_name = "MS")]
    tool_timeout_ms: Option<u64>,
    /// The most tool turns one exec may take before it fails with kind max_iterations [default: 20].
    #[arg(long, value_name = "N")]
    max_iterations: Option<u32>,
}

/// One `--mcp` command line, split as a shell would.
#[cfg_attr(not(feature = "mcp"), allow(dead_code))]
pub(crate) struct McpCommand {
    pub(crate) program: String,
    pub(crate) args: Vec<String>,
}

impl ToolFlags {
    /// The `--mcp` command lines, or what is wrong with one of them.
    pub(crate) fn mcp_commands(&self) -> Result<Vec<McpCommand>, String> {
        if !self.mcp.is_empty() && !cfg!(feature = "mcp") {
            return Err("--mcp: this `agentic` was built without the `mcp` feature; build it with \
                        `cargo install agentic-cli --features mcp`"
                .to_owned());
        }
        self.mcp
            .iter()
            .map(|line| {
                let words = shlex::split(line).ok_or_else(|| {
                    format!("--mcp {line:?}: unbalanced quotes; quote the command line as a shell would")
                })?;
                let mut words = words.into_iter();
                let program = words.next().ok_or("--mcp: the command line is empty; name the server's program")?;
                Ok(McpCommand { program, args: words.collect() })
            })
            .collect()
    }

    /// The tool timeout, or why it is refused.
    pub(crate) fn tool_timeout(&self) -> Result<Option<Duration>, String> {
        match self.tool_timeout_ms {
            Some(0) => {
                Err("--tool-timeout-ms must be at least 1 (a tool call that may not wait cannot do anything)".into())
            }
            other => Ok(other.map(Duration::from_millis)),
        }
    }

    /// The most tool turns of one exec, when set.
    pub(crate) fn max_iterations(&self) -> Option<u32> {
        self.max_iterations
    }

    /// True when tools are offered.
    pub(crate) fn any(&self) -> bool {
        !self.mcp.is_empty()
    }
}

/// A source whose calls and results `--verbose` prints on stderr as they happen.
pub(crate) struct Shown {
    pub(crate) inner: Arc<dyn ToolSource>,
}

/// The most characters of a tool's arguments or result `--verbose` prints.
const SHOWN_CHARS: usize = 300;

/// `text` cut to [`SHOWN_CHARS`] characters, control characters escaped.
fn excerpt(text: &str) -> String {
    let mut cut: String = text.chars().take(SHOWN_CHARS).collect();
    if cut.len() < text.len() {
        cut.push('…');
    }
    shown(cut)
}

/// What `--verbose` prints when the model calls a tool: "tool call: NAME ARGUMENTS".
pub(crate) fn call_line(name: &str, arguments: &Value) -> String {
    format!("tool call: {} {}", excerpt(name), excerpt(&arguments.to_string()))
}

/// What `--verbose` prints when a tool returns: "tool result: NAME → TEXT", or "tool error: NAME →
/// MESSAGE" when it failed.
pub(crate) fn result_line(name: &str, content: &str, is_error: bool) -> String {
    let what = if is_error { "error" } else { "result" };
    format!("tool {what}: {} → {}", excerpt(name), excerpt(content))
}

impl ToolSource for Shown {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn specs(&self) -> Arc<[ToolSpec]> {
        self.inner.specs()
    }

    fn call<'a>(&'a self, name: &'a str, input: Value, context: ToolContext) -> ToolFuture<'a> {
        eprintln!("{} ({})", call_line(name, &input), shown(self.inner.name()));
        Box::pin(async move {
            let result = self.inner.call(name, input, context).await;
            match &result {
                Ok(text) => eprintln!("{}", result_line(name, text, false)),
                Err(error) => eprintln!("{}", result_line(name, error.message(), true)),
            }
            result
        })
    }
}

/// The toolbox of `sources` with the flags' timeout; each source shown when `verbose`.
pub(crate) fn toolbox(sources: Vec<Arc<dyn ToolSource>>, timeout: Option<Duration>, verbose: bool) -> Toolbox {
    let mut toolbox = Toolbox::new();
    if let Some(timeout) = timeout {
        toolbox = toolbox.with_timeout(timeout);
    }
    sources.into_iter().fold(toolbox, |toolbox, source| {
        if verbose {
            toolbox.with_shared_source(Arc::new(Shown { inner: source }))
        } else {
            toolbox.with_shared_source(source)
        }
    })
}

/// Starts the `--mcp` servers, in order, and lists their tools: the first that fails is the
/// error, naming it (the servers started before it are stopped as their toolboxes drop). A tool a
/// server lists that the model is not offered (a schema too large, none, a name refused) is a
/// warning on stderr.
#[cfg(feature = "mcp")]
pub(crate) async fn connect(commands: Vec<McpCommand>) -> Result<Vec<Arc<dyn ToolSource>>, String> {
    let mut sources: Vec<Arc<dyn ToolSource>> = Vec::new();
    for McpCommand { program, args } in commands {
        let server = agentic_mcp::McpServer::stdio(program).args(args);
        let toolbox = server.connect().await.map_err(|error| format!("--mcp: {error}"))?;
        for skipped in toolbox.skipped().iter() {
            eprintln!("warning: {}", shown(skipped));
        }
        sources.push(Arc::new(toolbox));
    }
    Ok(sources)
}

/// Without the `mcp` feature there are no servers to start ([`ToolFlags::mcp_commands`] refused
/// any).
#[cfg(not(feature = "mcp"))]
pub(crate) async fn connect(_commands: Vec<McpCommand>) -> Result<Vec<Arc<dyn ToolSource>>, String> {
    Ok(Vec::new())
}
