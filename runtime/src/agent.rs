//! One model call: drives the provider's stream into an [`AssistantMessage`].

use std::time::Duration;

use futures_util::StreamExt as _;

use crate::error::{ModelError, TransportKind};
use crate::message::{AssistantMessage, ContentBlock};
use crate::provider::{Provider, Request, StreamEvent};

/// Runs one streamed call and returns its final message.
///
/// Every failure becomes a message with `stop_reason == Error`: an error raised while streaming is
/// converted to `"<Kind>: <text>"` (with its typed facts kept), an error event is kept as it is, a
/// stream that ends without its final event and a call that outlives `timeout` become transport
/// errors. Only a programming error ([`ModelError::is_programming`]) is returned as `Err`, unchanged.
pub async fn run(
    provider: &dyn Provider,
    request: &Request<'_>,
    timeout: Option<Duration>,
) -> Result<AssistantMessage, ModelError> {
    let call = drive(provider, request);
    let outcome = match timeout {
        None => call.await,
        Some(limit) => match tokio::time::timeout(limit, call).await {
            Ok(outcome) => outcome,
            Err(_) => Ok(AssistantMessage::from_error(ModelError::transport(
                TransportKind::Timeout,
                format!("model call timed out after {} ms", limit.as_millis()),
            ))),
        },
    };
    match outcome {
        Err(error) if error.is_programming() => Err(error),
        Err(error) => Ok(AssistantMessage::from_error(error)),
        Ok(message) => Ok(message),
    }
}

async fn drive(provider: &dyn Provider, request: &Request<'_>) -> Result<AssistantMessage, ModelError> {
    let mut stream = provider.stream(request);
    let mut text = String::new();
    let mut tool_calls: Vec<ToolCall> = Vec::new();
    while let Some(event) = stream.next().await {
        match event? {
            StreamEvent::TextDelta(delta) if text.is_empty() => text = delta,
            StreamEvent::TextDelta(delta) => text.push_str(&delta),
            StreamEvent::ToolCallStart { index, id, name } => {
                let call = ToolCall::find(&mut tool_calls, index);
                if call.id.is_empty() {
                    call.id = id;
                }
                if call.name.is_empty() {
                    call.name = name;
                }
            }
            StreamEvent::ToolCallDelta { index, arguments } => {
                ToolCall::find(&mut tool_calls, index).arguments.push_str(&arguments);
            }
            StreamEvent::Done { stop_reason } => {
                let mut content = if text.is_empty() { Vec::new() } else { vec![ContentBlock::Text { text }] };
                content.extend(tool_calls.into_iter().map(ToolCall::into_block));
                return Ok(AssistantMessage { content, stop_reason, error_message: None, error: None });
            }
            StreamEvent::Error { message, error } => {
                let mut failed = AssistantMessage::error_event(message, error);
                if !text.is_empty() {
                    failed.content.push(ContentBlock::Text { text });
                }
                return Ok(failed);
            }
        }
    }
    Err(ModelError::transport(TransportKind::Truncated, "stream ended unexpectedly, before its final event"))
}

/// A tool call being streamed: its arguments arrive as fragments of JSON text.
struct ToolCall {
    index: u32,
    id: String,
    name: String,
    arguments: String,
}

impl ToolCall {
    /// The call with `index`, started now if it was not.
    fn find(calls: &mut Vec<ToolCall>, index: u32) -> &mut ToolCall {
        let position = match calls.iter().position(|call| call.index == index) {
            Some(position) => position,
            None => {
                calls.push(ToolCall { index, id: String::new(), name: String::new(), arguments: String::new() });
                calls.len() - 1
            }
        };
        &mut calls[position]
    }

    /// The finished call as a block. Its arguments are parsed as JSON (none: an empty object); text
    /// that is not valid JSON is kept as a JSON string of the raw text, for the model to see and fix.
    fn into_block(self) -> ContentBlock {
        let input = if self.arguments.trim().is_empty() {
            serde_json::Value::Object(serde_json::Map::new())
        } else {
            serde_json::from_str(&self.arguments).unwrap_or(serde_json::Value::String(self.arguments))
        };
        let id = if self.id.is_empty() { format!("call_{}", self.index) } else { self.id };
        ContentBlock::ToolUse { id, name: self.name, input }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{Message, StopReason};
    use crate::provider::{ScriptedProvider, Step};

    async fn one(step: Step, timeout: Option<Duration>) -> Result<AssistantMessage, ModelError> {
        let provider = ScriptedProvider::new([step]);
        let history = [Message::user("hi")];
        run(&provider, &Request::new(&history), timeout).await
    }

    #[tokio::test(start_paused = true)]
    async fn raised_errors_become_kind_colon_text_and_keep_their_facts() {
        let message = one(Step::http(503, "Service Unavailable"), None).await.unwrap();
        assert_eq!(message.stop_reason, StopReason::Error);
        assert_eq!(message.error_text(), "ServiceUnavailableError: 503 Service Unavailable");
        assert_eq!(message.error.unwrap().status(), Some(503));

        let bare = one(Step::raise(ModelError::new("ValueError", "")), None).await.unwrap();
        assert_eq!(bare.error_text(), "ValueError");
    }

    #[tokio::test(start_paused = true)]
    async fn error_events_are_kept_as_they_are_even_empty() {
        let message = one(Step::error(""), None).await.unwrap();
        assert_eq!(message.error_message.as_deref(), Some(""));
    }

    #[tokio::test(start_paused = true)]
    async fn programming_errors_are_not_converted() {
        let error = one(Step::programming("TypeError", "bad"), None).await.unwrap_err();
        assert_eq!(error.to_string(), "TypeError: bad");
    }

    /// A provider that plays fixed events.
    struct Events(Vec<StreamEvent>);

    impl Provider for Events {
        fn name(&self) -> &str {
            "events"
        }

        fn stream<'a>(&'a self, _: &'a Request<'a>) -> crate::provider::EventStream<'a> {
            Box::pin(futures_util::stream::iter(self.0.clone().into_iter().map(Ok)))
        }
    }

    #[tokio::test]
    async fn tool_call_events_become_tool_use_blocks_after_the_text() {
        let start =
            |index, id: &str, name: &str| StreamEvent::ToolCallStart { index, id: id.into(), name: name.into() };
        let delta = |index, arguments: &str| StreamEvent::ToolCallDelta { index, arguments: arguments.into() };
        let provider = Events(vec![
            StreamEvent::TextDelta("Let me check.".into()),
            start(1, "call_a", "weather"),
            delta(1, "{\"city\":"),
            start(2, "", ""),
            delta(2, "{\"broken"),
            delta(1, " \"Paris\"}"),
            start(2, "call_b", "time"),
            start(3, "", "noop"),
            StreamEvent::Done { stop_reason: StopReason::ToolUse },
        ]);
        let history = [Message::user("hi")];
        let message = run(&provider, &Request::new(&history), None).await.unwrap();
        assert_eq!(message.stop_reason, StopReason::ToolUse);
        assert_eq!(
            message.content,
            [
                ContentBlock::text("Let me check."),
                ContentBlock::ToolUse {
                    id: "call_a".into(),
                    name: "weather".into(),
                    input: serde_json::json!({"city": "Paris"})
                },
                ContentBlock::ToolUse {
                    id: "call_b".into(),
                    name: "time".into(),
                    input: serde_json::json!("{\"broken")
                },
                ContentBlock::ToolUse { id: "call_3".into(), name: "noop".into(), input: serde_json::json!({}) },
            ]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_hang_ends_at_the_timeout() {
        let start = tokio::time::Instant::now();
        let message = one(Step::hang(), Some(Duration::from_millis(250))).await.unwrap();
        assert_eq!(start.elapsed(), Duration::from_millis(250));
        assert_eq!(message.error.unwrap().transport_kind(), Some(TransportKind::Timeout));
    }
}
