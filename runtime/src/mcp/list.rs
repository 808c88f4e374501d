//! Listing a server's tools: `tools/list` page after page (`nextCursor`), within bounds, and each
//! MCP tool made a [`ToolSpec`] the toolbox accepts.

use std::collections::HashSet;
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::{PaginatedRequestParams, Tool};
use rmcp::service::Peer;
use serde_json::Value;

use super::error::seconds;
use crate::lines::shorten;
use crate::tool::ToolSpec;

/// The most tools taken from one server: 1024; a longer list is an error. A model is offered 128
/// tools at most by OpenAI and chooses badly among far fewer; a server listing thousands is
/// misconfigured or hostile, and every tool costs tokens in every request.
pub const MCP_MAX_TOOLS: usize = 1024;

/// The most `tools/list` pages read from one server: 128; a server that pages past it is an
/// error, not a hang. Enough for [`MCP_MAX_TOOLS`] at 8 a page.
pub const MCP_MAX_LIST_PAGES: usize = 128;

/// The longest tool description kept, in characters (longer ones are cut with `…`): 2048, the
/// cut Claude Code applies to MCP tool descriptions. A description is sent in every request.
pub const MCP_MAX_DESCRIPTION_CHARS: usize = 2048;

/// The largest input schema kept, in bytes of JSON: 64 KiB. A tool with a larger one is skipped
/// with a warning (a schema cannot be cut); a real tool's schema is a few KiB.
pub const MCP_MAX_SCHEMA_BYTES: usize = 64 * 1024;

/// Lists every tool of the server behind `peer`, within `bound` for the whole listing; the error
/// says what went wrong, for [`McpError::List`](super::McpError::List).
pub(crate) async fn list_tools(
    peer: &Peer<RoleClient>,
    server: &str,
    bound: Duration,
) -> Result<Vec<ToolSpec>, String> {
    let pages = async {
        let mut tools = Vec::new();
        let mut cursor = None;
        for _page in 0..MCP_MAX_LIST_PAGES {
            let params = PaginatedRequestParams::default().with_cursor(cursor);
            let page = peer.list_tools(Some(params)).await.map_err(|error| error.to_string())?;
            tools.extend(page.tools);
            if tools.len() > MCP_MAX_TOOLS {
                return Err(format!("it lists more than {MCP_MAX_TOOLS} tools (`MCP_MAX_TOOLS`)"));
            }
            match page.next_cursor {
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

/// The specs of `tools`, skipping (with a warning) each the toolbox would refuse: a name that is
/// not 1 to 64 of `[A-Za-z0-9_-]`, a name listed twice, a schema over [`MCP_MAX_SCHEMA_BYTES`].
fn to_specs(server: &str, tools: Vec<Tool>) -> Vec<ToolSpec> {
    let mut seen = HashSet::new();
    let mut specs = Vec::with_capacity(tools.len());
    for tool in tools {
        let name = tool.name.as_ref();
        if !valid_name(name) {
            tracing::warn!(
                target: "agentic_runtime::mcp",
                server,
                "skipping the tool {:?}: a tool name must be 1 to 64 ASCII letters, digits, `_` or `-`",
                shorten(name, 80)
            );
            continue;
        }
        if !seen.insert(name.to_owned()) {
            tracing::warn!(target: "agentic_runtime::mcp", server, "skipping the second tool named `{name}`");
            continue;
        }
        let schema = Value::Object((*tool.input_schema).clone());
        let size = serde_json::to_string(&schema).map_or(usize::MAX, |text| text.len());
        if size > MCP_MAX_SCHEMA_BYTES {
            tracing::warn!(
                target: "agentic_runtime::mcp",
                server,
                "skipping the tool `{name}`: its input schema is {size} bytes, more than {MCP_MAX_SCHEMA_BYTES}"
            );
            continue;
        }
        let description = tool.description.as_deref().or(tool.title.as_deref()).unwrap_or_default();
        specs.push(ToolSpec::new(name, shorten(description, MCP_MAX_DESCRIPTION_CHARS), schema));
    }
    specs
}

/// What the toolbox accepts as a name (and both providers' APIs).
fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name.bytes().all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-')
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;

    fn tool(name: &str, description: &str, schema: Value) -> Tool {
        let Value::Object(schema) = schema else { panic!("an object schema") };
        Tool::new(name.to_owned(), description.to_owned(), Arc::new(schema))
    }

    #[test]
    fn names_the_toolbox_refuses_are_skipped_and_descriptions_cut() {
        let long = "d".repeat(MCP_MAX_DESCRIPTION_CHARS + 10);
        let huge = json!({"type": "object", "description": "s".repeat(MCP_MAX_SCHEMA_BYTES)});
        let specs = to_specs(
            "files",
            vec![
                tool("read_file", &long, json!({"type": "object"})),
                tool("bad name!", "", json!({"type": "object"})),
                tool(&"n".repeat(65), "", json!({"type": "object"})),
                tool("read_file", "again", json!({"type": "object"})),
                tool("huge", "", huge),
            ],
        );
        assert_eq!(specs.iter().map(|spec| spec.name.as_str()).collect::<Vec<_>>(), ["read_file"]);
        assert_eq!(specs[0].description.chars().count(), MCP_MAX_DESCRIPTION_CHARS + 1);
        assert!(specs[0].description.ends_with('…'));
    }
}
