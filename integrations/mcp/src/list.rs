//! Listing a server's tools: `tools/list` page after page (`nextCursor`), within bounds, each
//! tool read from its JSON and made a [`ToolSpec`] the toolbox accepts, or skipped with the reason
//! ([`SkippedTool`]): one malformed tool never refuses the server's others.
//!
//! rmcp reads a page into its strict `Tool` type; a page with one tool it cannot read (no
//! `inputSchema`, a string for one) reaches us as the page's plain JSON, which is read here tool by
//! tool.

use std::collections::HashSet;
use std::fmt;
use std::time::Duration;

use agentic_runtime::tool::ToolSpec;
use rmcp::RoleClient;
use rmcp::model::{ClientRequest, CustomResult, ListToolsRequest, PaginatedRequestParams, ServerResult};
use rmcp::service::{Peer, PeerRequestOptions, ServiceError};
use serde_json::{Map, Value};

use crate::bound::{Dropped, MCP_MAX_TOOLS};
use crate::cancel::CancelOnDrop;
use crate::error::seconds;
use crate::text::shorten;

/// The most `tools/list` pages read from one server: 128; a server that pages past it is an
/// error, not a hang. Enough for [`MCP_MAX_TOOLS`] at 8 a page.
pub const MCP_MAX_LIST_PAGES: usize = 128;

/// The longest tool description kept, in characters (longer ones are cut with `…`): 2048, the
/// cut Claude Code applies to MCP tool descriptions. A description is sent in every request.
pub const MCP_MAX_DESCRIPTION_CHARS: usize = 2048;

/// The largest input schema kept, in bytes of JSON: 64 KiB. A tool with a larger one is skipped
/// with a warning (a schema cannot be cut); a real tool's schema is a few KiB.
pub const MCP_MAX_SCHEMA_BYTES: usize = 64 * 1024;

/// The most characters of a skipped tool's name kept for its warning: 80.
const SHOWN_NAME_CHARS: usize = 80;

/// A tool a server listed that its toolbox does not offer, and why
/// ([`McpToolbox::skipped`](crate::toolbox::McpToolbox::skipped)): no `inputSchema` or one that is not an
/// object, a schema over [`MCP_MAX_SCHEMA_BYTES`], a name the toolbox refuses (not 1 to 64 of
/// `[A-Za-z0-9_-]`) or already listed, no name. Its Display is the warning logged for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedTool {
    /// The server's name.
    pub server: String,
    /// The tool's name as listed (cut to 80 characters); empty when it has none.
    pub name: String,
    /// Why it is skipped.
    pub reason: String,
}

impl fmt::Display for SkippedTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self { server, name, reason } = self;
        match name.as_str() {
            "" => write!(f, "skipping a tool of MCP server `{server}`: {reason}"),
            name => write!(f, "skipping the tool `{}` of MCP server `{server}`: {reason}", name.escape_debug()),
        }
    }
}

/// What a listing gives: the tools offered, and those skipped.
#[derive(Debug, Default)]
pub(crate) struct Listing {
    pub specs: Vec<ToolSpec>,
    pub skipped: Vec<SkippedTool>,
}

impl Listing {
    /// Logs a warning for each tool skipped that `before` (the previous listing's) did not skip.
    pub(crate) fn warn(&self, before: &[SkippedTool]) {
        for skipped in self.skipped.iter().filter(|skipped| !before.contains(skipped)) {
            tracing::warn!(target: "agentic_mcp", server = %skipped.server, "{skipped}");
        }
    }
}

/// Lists every tool of the server behind `peer`, within `bound` for the whole listing; the error
/// says what went wrong, for [`McpError::List`](crate::error::McpError::List).
pub(crate) async fn list_tools(peer: &Peer<RoleClient>, server: &str, bound: Duration) -> Result<Listing, String> {
    let pages = async {
        let mut tools = Vec::new();
        let mut cursor = None;
        for _page in 0..MCP_MAX_LIST_PAGES {
            let page = list_page(peer, cursor).await?;
            tools.extend(page.tools);
            if tools.len() > MCP_MAX_TOOLS {
                return Err(Dropped::TooManyTools.words());
            }
            match page.next {
                Some(next) => cursor = Some(next),
                None => return Ok(tools),
            }
        }
        Err(format!("it still had more pages after {MCP_MAX_LIST_PAGES} (`MCP_MAX_LIST_PAGES`)"))
    };
    let tools = match tokio::time::timeout(bound, pages).await {
        Ok(listed) => listed?,
        Err(_elapsed) => return Err(format!("`tools/list` did not finish within {}", seconds(bound))),
    };
    Ok(to_specs(server, tools))
}

/// One page: its tools as JSON, and the cursor of the next.
struct Page {
    tools: Vec<Value>,
    next: Option<String>,
}

/// Asks for the page after `cursor` (the first when `None`); a call dropped before its answer (the
/// listing's bound) is cancelled at the server.
async fn list_page(peer: &Peer<RoleClient>, cursor: Option<String>) -> Result<Page, String> {
    let params = PaginatedRequestParams::default().with_cursor(cursor);
    let request = ClientRequest::ListToolsRequest(ListToolsRequest::with_param(params));
    let handle =
        peer.send_request_with_option(request, PeerRequestOptions::no_options()).await.map_err(|e| e.to_string())?;
    let guard = CancelOnDrop::new(peer.clone(), handle.id.clone());
    let answer = handle.await_response().await;
    guard.disarm();
    match answer {
        Ok(ServerResult::ListToolsResult(page)) => {
            let tools = page.tools.iter().map(|tool| serde_json::to_value(tool).unwrap_or(Value::Null)).collect();
            Ok(Page { tools, next: page.next_cursor })
        }
        // A page rmcp could not read as its `Tool`s: read here, tool by tool.
        Ok(ServerResult::CustomResult(CustomResult(Value::Object(mut page)))) => {
            let tools = match page.remove("tools") {
                Some(Value::Array(tools)) => tools,
                _ => return Err("its answer to `tools/list` has no `tools` list".to_owned()),
            };
            let next = match page.remove("nextCursor") {
                Some(Value::String(next)) => Some(next),
                _ => None,
            };
            Ok(Page { tools, next })
        }
        Ok(_) => Err("its answer to `tools/list` is not a list of tools".to_owned()),
        Err(ServiceError::McpError(error)) => Err(match Dropped::of(&error) {
            Some(dropped) => dropped.words(),
            None => format!("it refused `tools/list`: {} ({})", shorten(error.message.trim(), 1000), error.code.0),
        }),
        Err(error) => Err(error.to_string()),
    }
}

/// The specs of `tools`, each tool the toolbox would refuse skipped, with the reason.
fn to_specs(server: &str, tools: Vec<Value>) -> Listing {
    let mut seen = HashSet::new();
    let mut listing = Listing::default();
    for tool in tools {
        match to_spec(tool, &mut seen) {
            Ok(spec) => listing.specs.push(spec),
            Err((name, reason)) => listing.skipped.push(SkippedTool {
                server: server.to_owned(),
                name: shorten(&name, SHOWN_NAME_CHARS).into_owned(),
                reason,
            }),
        }
    }
    listing
}

/// `tool` as a spec, or its name and why it is skipped. `seen`: the names taken so far.
fn to_spec(tool: Value, seen: &mut HashSet<String>) -> Result<ToolSpec, (String, String)> {
    let Value::Object(mut tool) = tool else { return Err((String::new(), "it is not a JSON object".to_owned())) };
    let name = match tool.remove("name") {
        Some(Value::String(name)) => name,
        Some(other) => return Err((String::new(), format!("its `name` is {}, not a string", kind(&other)))),
        None => return Err((String::new(), "it has no `name`".to_owned())),
    };
    if !valid_name(&name) {
        return Err((name, "its name is not 1 to 64 ASCII letters, digits, `_` or `-`".to_owned()));
    }
    if seen.contains(&name) {
        return Err((name, "a tool of the same name was listed before it".to_owned()));
    }
    let schema = match tool.remove("inputSchema") {
        Some(Value::Object(schema)) => schema,
        Some(other) => return Err((name, format!("its `inputSchema` is {}, not an object", kind(&other)))),
        None => return Err((name, "it has no `inputSchema`".to_owned())),
    };
    let size = json_len(&schema);
    if size > MCP_MAX_SCHEMA_BYTES {
        let reason =
            format!("its input schema is {size} bytes, more than {MCP_MAX_SCHEMA_BYTES} (`MCP_MAX_SCHEMA_BYTES`)");
        return Err((name, reason));
    }
    let description = [tool.get("description"), tool.get("title")]
        .into_iter()
        .find_map(|text| text.and_then(Value::as_str))
        .unwrap_or_default();
    let spec = ToolSpec::new(&name, shorten(description, MCP_MAX_DESCRIPTION_CHARS), Value::Object(schema));
    seen.insert(name);
    Ok(spec)
}

/// What `value` is, for a reason: `a string`, `an array`.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The length of `schema` written as JSON, counted without writing it.
fn json_len(schema: &Map<String, Value>) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    match serde_json::to_writer(&mut count, schema) {
        Ok(()) => count.0,
        Err(_) => usize::MAX,
    }
}

/// What the toolbox accepts as a name (and both providers' APIs).
fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name.bytes().all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-')
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn reasons(listing: &Listing) -> Vec<(&str, &str)> {
        listing.skipped.iter().map(|skipped| (skipped.name.as_str(), skipped.reason.as_str())).collect()
    }

    #[test]
    fn tools_the_toolbox_refuses_are_skipped_with_the_reason_and_descriptions_cut() {
        let long = "d".repeat(MCP_MAX_DESCRIPTION_CHARS + 10);
        let huge = json!({"type": "object", "description": "s".repeat(MCP_MAX_SCHEMA_BYTES)});
        let huge_len = huge.to_string().len();
        let listing = to_specs(
            "files",
            vec![
                json!({"name": "read_file", "description": long, "inputSchema": {"type": "object"}}),
                json!({"name": "bad name!", "inputSchema": {"type": "object"}}),
                json!({"name": "n".repeat(100), "inputSchema": {"type": "object"}}),
                json!({"name": "read_file", "description": "again", "inputSchema": {"type": "object"}}),
                json!({"name": "huge", "inputSchema": huge}),
                json!({"name": "no_schema"}),
                json!({"name": "string_schema", "inputSchema": "object"}),
                json!({"inputSchema": {"type": "object"}}),
                json!({"name": 7, "inputSchema": {"type": "object"}}),
                json!("a tool"),
                json!({"name": "titled", "title": "Titled.", "inputSchema": {}}),
            ],
        );
        let names: Vec<&str> = listing.specs.iter().map(|spec| spec.name.as_str()).collect();
        assert_eq!(names, ["read_file", "titled"]);
        assert_eq!(listing.specs[0].description.chars().count(), MCP_MAX_DESCRIPTION_CHARS + 1);
        assert!(listing.specs[0].description.ends_with('…'));
        assert_eq!(listing.specs[1].description, "Titled.");
        let huge_reason = format!("its input schema is {huge_len} bytes, more than 65536 (`MCP_MAX_SCHEMA_BYTES`)");
        let long_name = format!("{}…", "n".repeat(SHOWN_NAME_CHARS));
        assert_eq!(
            reasons(&listing),
            [
                ("bad name!", "its name is not 1 to 64 ASCII letters, digits, `_` or `-`"),
                (long_name.as_str(), "its name is not 1 to 64 ASCII letters, digits, `_` or `-`"),
                ("read_file", "a tool of the same name was listed before it"),
                ("huge", huge_reason.as_str()),
                ("no_schema", "it has no `inputSchema`"),
                ("string_schema", "its `inputSchema` is a string, not an object"),
                ("", "it has no `name`"),
                ("", "its `name` is a number, not a string"),
                ("", "it is not a JSON object"),
            ]
        );
        assert_eq!(
            listing.skipped[4].to_string(),
            "skipping the tool `no_schema` of MCP server `files`: it has no `inputSchema`"
        );
        assert_eq!(listing.skipped[6].to_string(), "skipping a tool of MCP server `files`: it has no `name`");
    }

    #[test]
    fn a_schemas_length_is_its_json_length() {
        let schema = json!({"type": "object", "properties": {"a": {"type": "string"}}});
        let Value::Object(map) = &schema else { unreachable!() };
        assert_eq!(json_len(map), schema.to_string().len());
    }
}
