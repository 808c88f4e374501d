//! One `tools/call`: the request (the idempotency key in its `_meta`, the call's timeout), and
//! what the model reads of its outcome, a result or an error worded for it.

use std::process::ExitStatus;
use std::time::Duration;

use agentic_runtime::tool::{ToolContext, ToolError};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest, ContentBlock, ErrorData, RequestMetaObject,
    ResourceContents, ServerResult,
};
use rmcp::service::{PeerRequestOptions, ServiceError};
use serde_json::Value;

use crate::bound::Dropped;
use crate::error::{describe_status, seconds, transport_words};
use crate::http::Endpoint;
use crate::text::shorten;

/// The key of a `tools/call` request's `_meta` that carries the call's idempotency key
/// ([`ToolContext::idempotency_key`]): `io.agentic/idempotency_key`. A server with side effects
/// keeps the keys it has acted on and answers a repeated one with its first result. The name
/// follows MCP's rule for `_meta` keys: a reverse-DNS prefix of our own, then a name.
pub const IDEMPOTENCY_KEY_META: &str = "io.agentic/idempotency_key";

/// The most characters of a server's error message the model reads: 1000. A JSON-RPC error's
/// message is meant to be one sentence; a longer one is a server dumping something.
const MAX_REFUSAL_CHARS: usize = 1000;

/// The `tools/call` request for `name` with `input`, and rmcp's options for it: the call's
/// timeout (rmcp sends `notifications/cancelled` when it is up) and its idempotency key.
pub(crate) fn request(name: &str, input: Value, context: &ToolContext) -> (ClientRequest, PeerRequestOptions) {
    let mut params = CallToolRequestParams::new(name.to_owned());
    params.arguments = match input {
        Value::Object(arguments) => Some(arguments),
        // The toolbox checked the input against an object schema; nothing else reaches here.
        _ => None,
    };
    let mut meta = RequestMetaObject::new();
    meta.insert(IDEMPOTENCY_KEY_META.to_owned(), Value::String(context.idempotency_key().to_owned()));
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    (request, PeerRequestOptions::with_timeout(context.timeout()).with_meta(meta))
}

/// Who a call went to, for the words of its errors.
pub(crate) struct Target<'a> {
    /// The server's name.
    pub server: &'a str,
    /// The tool's name.
    pub tool: &'a str,
    /// An HTTP server's URL, whose secrets the words of its errors must not show.
    pub endpoint: Option<&'a Endpoint>,
}

impl Target<'_> {
    /// What the model reads of the server's answer.
    pub(crate) fn outcome(
        &self,
        answer: Result<ServerResult, ServiceError>,
        exit: Option<ExitStatus>,
    ) -> Result<String, ToolError> {
        match answer {
            Ok(ServerResult::CallToolResult(result)) => self.result(result),
            Ok(ServerResult::EmptyResult(_)) => Ok(String::new()),
            Ok(other) => Err(ToolError::new(format!(
                "the MCP server `{}` answered `{}` with a {} instead of a tool result; the runtime cannot use it",
                self.server,
                self.tool,
                kind_of(&other)
            ))),
            Err(error) => Err(self.failure(error, exit)),
        }
    }

    fn result(&self, result: CallToolResult) -> Result<String, ToolError> {
        let text = result_text(&result);
        if result.is_error != Some(true) {
            return Ok(text);
        }
        if text.is_empty() {
            return Err(ToolError::new(format!(
                "the tool `{}` on MCP server `{}` failed without saying why",
                self.tool, self.server
            )));
        }
        Err(ToolError::new(text))
    }

    fn failure(&self, error: ServiceError, exit: Option<ExitStatus>) -> ToolError {
        let Self { server, tool, .. } = self;
        let message = match error {
            ServiceError::McpError(error) => match Dropped::of(&error) {
                Some(dropped) => format!(
                    "the tool `{tool}` on MCP server `{server}` answered, but {}, so it was dropped; ask for less at \
                     a time",
                    dropped.words()
                ),
                None => self.refused(&error),
            },
            ServiceError::Timeout { timeout } => {
                format!(
                    "the tool `{tool}` on MCP server `{server}` did not answer within {}; the call was cancelled",
                    seconds(timeout)
                )
            }
            ServiceError::TransportClosed | ServiceError::Cancelled { .. } => {
                let exited = exit
                    .map(|status| format!(" (the server exited with {})", describe_status(status)))
                    .unwrap_or_default();
                format!(
                    "the connection to MCP server `{server}` closed while `{tool}` was running{exited}: it may or may not \
                     have taken effect; check before calling it again"
                )
            }
            ServiceError::TransportSend(error) => {
                let words = transport_words(&error);
                let text = shorten(&self.redact(&words.text), MAX_REFUSAL_CHARS).into_owned();
                if let Some((status, target)) = words.redirect {
                    format!(
                        "the MCP server `{server}` answered the call of `{tool}` with {status}, a redirect to {target}, \
                         which is not followed: the call was not sent there; if the server moved, connect to its new URL"
                    )
                } else if words.unreached {
                    format!("the MCP server `{server}` could not be reached ({text}), so `{tool}` was not called")
                } else {
                    format!(
                        "the call of `{tool}` to MCP server `{server}` failed in transit ({text}): it may or may not \
                         have taken effect; check before calling it again"
                    )
                }
            }
            other => format!("the call of `{tool}` on MCP server `{server}` failed: {other}"),
        };
        ToolError::new(message)
    }

    fn redact(&self, text: &str) -> String {
        match self.endpoint {
            Some(endpoint) => endpoint.redact(text),
            None => text.to_owned(),
        }
    }

    fn refused(&self, error: &ErrorData) -> String {
        let words = shorten(error.message.trim(), MAX_REFUSAL_CHARS);
        format!("the MCP server `{}` refused the call: {words} ({})", self.server, error.code.0)
    }

    /// The error of a call made after the connection was gone: nothing was sent.
    pub(crate) fn gone(&self, exit: Option<ExitStatus>) -> ToolError {
        let why = match exit {
            Some(status) => format!("its process exited with {}", describe_status(status)),
            None => "its connection is closed".to_owned(),
        };
        ToolError::new(format!(
            "the MCP server `{}` is not running ({why}), so `{}` was not called; its tools stay unavailable until \
             the program connects to it again",
            self.server, self.tool
        ))
    }
}

/// The texts of a result's content, one block a line; other content described in a bracket; the
/// structured content when there is no text.
fn result_text(result: &CallToolResult) -> String {
    let parts: Vec<String> = result.content.iter().map(describe).collect();
    if parts.iter().all(String::is_empty)
        && let Some(structured) = &result.structured_content
    {
        return structured.to_string();
    }
    parts.join("\n")
}

fn describe(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(text) => text.text.clone(),
        ContentBlock::Image(image) => format!("[image: {}, {}]", image.mime_type, size(base64_len(&image.data))),
        ContentBlock::Audio(audio) => format!("[audio: {}, {}]", audio.mime_type, size(base64_len(&audio.data))),
        ContentBlock::Resource(embedded) => match &embedded.resource {
            ResourceContents::TextResourceContents { text, .. } => text.clone(),
            ResourceContents::BlobResourceContents { uri, mime_type, blob, .. } => {
                let mime = mime_type.as_deref().unwrap_or("application/octet-stream");
                format!("[resource: {uri}, {mime}, {}]", size(base64_len(blob)))
            }
            _ => "[resource]".to_owned(),
        },
        ContentBlock::ResourceLink(link) => format!("[resource link: {}]", link.uri),
        // A kind of content newer than this crate: say there was something.
        _ => "[content of another kind]".to_owned(),
    }
}

/// The bytes that `data`, base64, stands for.
fn base64_len(data: &str) -> usize {
    let padding = data.bytes().rev().take_while(|byte| *byte == b'=').count();
    (data.len() / 4 * 3 + data.len() % 4 * 3 / 4).saturating_sub(padding)
}

/// `812 B`, `12 KiB`, `3 MiB`.
fn size(bytes: usize) -> String {
    match bytes {
        0..1024 => format!("{bytes} B"),
        1024..1_048_576 => format!("{} KiB", bytes.div_ceil(1024)),
        _ => format!("{} MiB", bytes.div_ceil(1_048_576)),
    }
}

fn kind_of(result: &ServerResult) -> &'static str {
    match result {
        ServerResult::InputRequiredResult(_) => "request for more input",
        ServerResult::CreateTaskResult(_) => "task to poll",
        _ => "different kind of result",
    }
}

/// How long is left of `timeout` from `started`: what a call may still spend after its answer.
pub(crate) fn remaining(started: tokio::time::Instant, timeout: Duration) -> Duration {
    timeout.saturating_sub(started.elapsed())
}

#[cfg(test)]
mod tests {
    use rmcp::model::{ErrorCode, Resource};
    use serde_json::json;

    use super::*;

    const TARGET: Target<'static> = Target { server: "files", tool: "read", endpoint: None };

    #[test]
    fn texts_are_joined_and_other_content_described() {
        let mut link = Resource::new("file:///tmp/a.txt", "a.txt");
        link.mime_type = Some("text/plain".into());
        let result = CallToolResult::success(vec![
            ContentBlock::text("first"),
            ContentBlock::image("A".repeat(16 * 1024), "image/png"),
            ContentBlock::resource_link(link),
            ContentBlock::text("last"),
        ]);
        assert_eq!(result_text(&result), "first\n[image: image/png, 12 KiB]\n[resource link: file:///tmp/a.txt]\nlast");
    }

    #[test]
    fn structured_content_stands_in_for_missing_text() {
        let mut result = CallToolResult::success(Vec::new());
        result.structured_content = Some(json!({"temperature": 21}));
        assert_eq!(TARGET.result(result), Ok(r#"{"temperature":21}"#.to_owned()));
    }

    #[test]
    fn errors_are_worded_for_the_model() {
        let error = TARGET.result(CallToolResult::error(vec![ContentBlock::text("no such file")])).unwrap_err();
        assert_eq!(error.message(), "no such file");
        let silent = TARGET.result(CallToolResult::error(Vec::new())).unwrap_err();
        assert_eq!(silent.message(), "the tool `read` on MCP server `files` failed without saying why");
        let refused = ErrorData::new(ErrorCode::INVALID_PARAMS, "unknown tool `x`", None);
        let error = TARGET.outcome(Err(ServiceError::McpError(refused)), None).unwrap_err();
        assert_eq!(error.message(), "the MCP server `files` refused the call: unknown tool `x` (-32602)");
        let timeout = Duration::from_millis(200);
        let error = TARGET.outcome(Err(ServiceError::Timeout { timeout }), None).unwrap_err();
        assert_eq!(
            error.message(),
            "the tool `read` on MCP server `files` did not answer within 0.2 s; the call was cancelled"
        );
    }

    #[test]
    fn sizes_read_like_a_person_would_write_them() {
        assert_eq!(base64_len("AAAA"), 3);
        assert_eq!(base64_len("AAA="), 2);
        assert_eq!(base64_len("AA=="), 1);
        assert_eq!(size(812), "812 B");
        assert_eq!(size(12 * 1024), "12 KiB");
        assert_eq!(size(3 * 1_048_576), "3 MiB");
    }
}
