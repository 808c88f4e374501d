//! The scriptable MCP server: its tools, each one behaviour a test needs, and its options.

use std::borrow::Cow;
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData, Implementation,
    InitializeRequestParams, InitializeResult, JsonObject, ListToolsResult, PaginatedRequestParams, ProtocolVersion,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler};
use serde_json::{Value, json};

use super::record::Record;

/// The key of `_meta` where the MCP client (`agentic_mcp`) sends a call's idempotency key.
pub const IDEMPOTENCY_KEY_META: &str = "io.agentic/idempotency_key";

/// The exit status of the process when the tool `exit` is called.
pub const EXIT_STATUS: i32 = 3;

/// How the server behaves, beyond its tools.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Tools per `tools/list` page; `None`: all on one page.
    pub page_size: Option<usize>,
    /// Every page says there is a next one: a server that pages forever.
    pub endless_pages: bool,
    /// `initialize` is never answered.
    pub never_initialize: bool,
    /// Over stdio: the process keeps running after its stdin closes (a server that must be killed).
    pub ignore_eof: bool,
    /// Lists the malformed tools too: `no_schema` (no `inputSchema`), `string_schema` (a string
    /// for one) and `huge_schema` (a schema over the client's 64 KiB), after the others.
    pub bad_tools: bool,
    /// Lists this many more tools (`tool_0`, `tool_1`, ...) after the others.
    pub many_tools: usize,
    /// Lists one more tool, `wordy`, whose description is this many bytes (0: none): a listing
    /// past the client's bound for one message.
    pub wordy_description: usize,
    /// Over HTTP: the requests this server answers with a redirect instead (see [`Redirect`]).
    pub redirect: Option<Redirect>,
    /// Over HTTP: no sessions, and each answer a JSON body rather than an event stream (rmcp's
    /// stateless mode with `json_response`).
    pub json_answers: bool,
}

/// A redirect the HTTP server answers with: `status` and `Location: location`, to every request,
/// or to those whose JSON-RPC method is `only` (`tools/call`).
#[derive(Debug, Clone)]
pub struct Redirect {
    /// The status: 301, 302, 303, 307 or 308.
    pub status: u16,
    /// The `Location` header.
    pub location: String,
    /// The JSON-RPC method redirected; `None`: every request.
    pub only: Option<String>,
}

/// The server: the same tools and record for every session (an HTTP server makes one per session).
///
/// Its tools:
/// - `echo {text}`: returns `text`;
/// - `fail`: returns `isError: true` with "the disk is full";
/// - `hang`: never answers; its cancel (`notifications/cancelled`) is recorded as `cancelled hang`;
/// - `cancelled {at_least}`: waits (at most [`EVENT_WAIT`](super::EVENT_WAIT)) for that many recorded cancels, returns their count;
/// - `exit`: the process exits with [`EXIT_STATUS`] mid-call (over HTTP: see [`Options`] of
///   `serve_http`: the server stops);
/// - `add_tool {name}`: adds an `echo`-like tool `name` and sends `notifications/tools/list_changed`;
/// - `side_effect`: records `key KEY`, the idempotency key in its `_meta`, and returns it;
/// - `strict {n}`: refuses an `n` that is not a positive integer with a JSON-RPC error (-32602);
/// - `ghost`: listed, but the server answers its calls as an unknown tool (-32602);
/// - `picture`: an image (PNG, 12 KiB), a resource link and a text;
/// - `structured`: no text, only `structuredContent`;
/// - `bad name!`: a name the runtime's toolbox refuses;
/// - `big {bytes}`: a text of `bytes` bytes (a tool result past the client's bound for one message);
/// - with [`Options`]: malformed tools, many tools, a tool with a long description.
///
/// Every call is recorded as `call NAME` before it runs, every session's start as `initialize`.
#[derive(Clone)]
pub struct TestServer {
    options: Arc<Options>,
    tools: Arc<Mutex<Vec<Tool>>>,
    record: Arc<Record>,
    on_exit: Arc<dyn Fn() + Send + Sync>,
}

impl TestServer {
    /// A server with `options` that notes what it sees in `record`; the tool `exit` runs `on_exit`
    /// (the binary exits the process, the HTTP server stops).
    pub fn new(options: Options, record: Arc<Record>, on_exit: Arc<dyn Fn() + Send + Sync>) -> Self {
        let tools = initial_tools().into_iter().chain(optional_tools(&options)).collect();
        Self { options: Arc::new(options), tools: Arc::new(Mutex::new(tools)), record, on_exit }
    }

    /// What the server saw.
    pub fn record(&self) -> &Arc<Record> {
        &self.record
    }

    fn tools(&self) -> Vec<Tool> {
        self.tools.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
    }

    async fn run(
        &self,
        params: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let name = params.name.to_string();
        let arguments = params.arguments.unwrap_or_default();
        self.record.push(format!("call {name}"));
        match name.as_str() {
            "echo" => Ok(text(arguments.get("text").and_then(Value::as_str).unwrap_or_default())),
            "fail" => Ok(CallToolResult::error(vec![ContentBlock::text("the disk is full")])),
            "hang" => {
                context.ct.cancelled().await;
                self.record.push("cancelled hang".to_owned());
                Ok(text("cancelled"))
            }
            "cancelled" => {
                let at_least = arguments.get("at_least").and_then(Value::as_u64).unwrap_or(1) as usize;
                let seen = self.record.wait_for("cancelled hang", at_least).await;
                Ok(text(&seen.to_string()))
            }
            "exit" => {
                (self.on_exit)();
                // The HTTP server stops instead of the process: this call never answers.
                std::future::pending().await
            }
            "add_tool" => {
                let Some(added) = arguments.get("name").and_then(Value::as_str) else {
                    return Err(ErrorData::invalid_params("`name` must be a string", None));
                };
                self.tools.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push(tool(
                    added,
                    "Repeats `text` (added at run time).",
                    text_schema(),
                ));
                context
                    .peer
                    .notify_tool_list_changed()
                    .await
                    .map_err(|error| ErrorData::internal_error(error.to_string(), None))?;
                Ok(text(&format!("added `{added}`")))
            }
            "side_effect" => {
                let key = context.meta.get(IDEMPOTENCY_KEY_META).and_then(Value::as_str).unwrap_or("<none>").to_owned();
                self.record.push(format!("key {key}"));
                Ok(text(&key))
            }
            "strict" => match arguments.get("n").and_then(Value::as_u64) {
                Some(n) if n > 0 => Ok(text(&n.to_string())),
                _ => Err(ErrorData::invalid_params("`n` must be a positive integer", None)),
            },
            "picture" => Ok(CallToolResult::success(vec![
                ContentBlock::image("A".repeat(16 * 1024), "image/png"),
                ContentBlock::text("a red square"),
            ])),
            "big" => {
                let bytes = arguments.get("bytes").and_then(Value::as_u64).unwrap_or_default();
                Ok(text(&"x".repeat(usize::try_from(bytes).unwrap_or(usize::MAX))))
            }
            "structured" => {
                let mut result = CallToolResult::success(Vec::new());
                result.structured_content = Some(json!({"temperature": 21}));
                Ok(result)
            }
            other if self.tools().iter().any(|tool| tool.name == other && other != "ghost") => {
                Ok(text(arguments.get("text").and_then(Value::as_str).unwrap_or_default()))
            }
            other => Err(ErrorData::invalid_params(format!("unknown tool `{other}`"), None)),
        }
    }
}

impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_tool_list_changed().build())
            .with_server_info(Implementation::new("agentic-mcp-test-server", env!("CARGO_PKG_VERSION")))
    }

    // The versions with a session (`initialize`, `Mcp-Session-Id`): the ones deployed servers speak.
    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::LATEST_WITH_INITIALIZE))
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        if self.options.never_initialize {
            std::future::pending::<()>().await;
        }
        self.record.push("initialize".to_owned());
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self.tools();
        let start = match request.and_then(|request| request.cursor) {
            None => 0,
            Some(cursor) => cursor.parse::<usize>().map_err(|_| ErrorData::invalid_params("bad cursor", None))?,
        };
        let size = self.options.page_size.unwrap_or(tools.len().max(1));
        let page: Vec<Tool> = tools.iter().skip(start).take(size).cloned().collect();
        let next = start + size;
        let mut result = ListToolsResult::with_all_items(page);
        if self.options.endless_pages || next < tools.len() {
            result.next_cursor = Some(next.min(tools.len()).to_string());
        }
        Ok(result)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.run(request, context).await.map(CallToolResponse::Complete)
    }
}

fn text(text: &str) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(text)])
}

fn tool(name: &str, description: &str, schema: Value) -> Tool {
    let Value::Object(schema) = schema else { unreachable!("the schemas here are objects") };
    Tool::new(name.to_owned(), description.to_owned(), Arc::new(schema as JsonObject))
}

fn text_schema() -> Value {
    json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
}

fn no_arguments() -> Value {
    json!({"type": "object", "properties": {}})
}

fn initial_tools() -> Vec<Tool> {
    vec![
        tool("echo", "Repeats `text`.", text_schema()),
        tool("fail", "Always fails.", no_arguments()),
        tool("hang", "Never answers.", no_arguments()),
        tool(
            "cancelled",
            "How many `hang` calls were cancelled, once there are `at_least`.",
            json!({"type": "object", "properties": {"at_least": {"type": "integer"}}}),
        ),
        tool("exit", "The server exits mid-call.", no_arguments()),
        tool(
            "add_tool",
            "Adds a tool and tells the client the list changed.",
            json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
        ),
        tool("side_effect", "Records its idempotency key and returns it.", no_arguments()),
        tool("strict", "Wants a positive `n`.", json!({"type": "object", "properties": {"n": {}}})),
        tool("ghost", "Listed, but unknown to the server.", no_arguments()),
        tool("picture", "An image and a caption.", no_arguments()),
        tool("structured", "Structured content only.", no_arguments()),
        tool("bad name!", "A name the client refuses.", no_arguments()),
        tool(
            "big",
            "A text of `bytes` bytes.",
            json!({"type": "object", "properties": {"bytes": {"type": "integer"}}, "required": ["bytes"]}),
        ),
    ]
}

/// The schema of `no_schema`, which [`malformed`] removes from the wire.
const NO_SCHEMA_MARK: &str = r#","inputSchema":{"agentic-test":"no inputSchema"}"#;
/// The schema of `string_schema`, which [`malformed`] makes a string on the wire.
const STRING_SCHEMA_MARK: &str = r#"{"agentic-test":"a string"}"#;

/// The tools [`Options`] adds after the others.
fn optional_tools(options: &Options) -> Vec<Tool> {
    let mut tools = Vec::new();
    if options.bad_tools {
        tools.push(tool("no_schema", "No input schema.", json!({"agentic-test": "no inputSchema"})));
        tools.push(tool("string_schema", "A string for a schema.", json!({"agentic-test": "a string"})));
        let huge = json!({"type": "object", "description": "s".repeat(70 * 1024)});
        tools.push(tool("huge_schema", "A schema over 64 KiB.", huge));
    }
    tools.extend((0..options.many_tools).map(|index| tool(&format!("tool_{index}"), "One of many.", no_arguments())));
    if options.wordy_description > 0 {
        tools.push(tool("wordy", &"w".repeat(options.wordy_description), no_arguments()));
    }
    tools
}

/// `text`, a message the server sends, with the malformed tools' marks made what they stand for: no
/// `inputSchema` for `no_schema`, a string for `string_schema`. rmcp's server types cannot list
/// such tools, so the wire is patched; the marks are our own JSON, written as serde_json writes
/// it (no spaces), and never split: each message is one line, one SSE event.
pub fn malformed(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains("agentic-test") {
        return std::borrow::Cow::Borrowed(text);
    }
    std::borrow::Cow::Owned(text.replace(NO_SCHEMA_MARK, "").replace(STRING_SCHEMA_MARK, r#""object""#))
}
