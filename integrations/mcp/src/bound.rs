//! The bound of one message from a server, kept where its bytes arrive (a stdio line, an HTTP body,
//! an SSE event), before rmcp parses them: an answer over [`MCP_MAX_MESSAGE_BYTES`], or a page of
//! more than [`MCP_MAX_TOOLS`] tools, is replaced by an error answer to the same request that says
//! so ([`Dropped`]). The request then ends at once with the reason, instead of waiting for an
//! answer that was dropped until its timeout, and a page too long is refused without ever being
//! parsed (rmcp's parse of a 10 MB page of 100 000 tools peaks at hundreds of MB).

use rmcp::model::{ErrorCode, ErrorData, RequestId, ServerJsonRpcMessage};
use serde::Deserialize;
use serde::de::{IgnoredAny, SeqAccess, Visitor};
use serde_json::json;

/// The largest message taken from a server, in bytes: 16 MiB (a stdio line, an HTTP response body,
/// an SSE event). rmcp's own bound, kept here so a larger one is named rather than dropped: the
/// request it answers fails with "the server's answer was larger than 16 MiB, the limit for one
/// message". A tool's answer that large is no answer a model can read anyway.
pub const MCP_MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// The most tools taken from one server: 1024; a longer list is an error. A model is offered 128
/// tools at most by OpenAI and chooses badly among far fewer; a server listing thousands is
/// misconfigured or hostile, and every tool costs tokens in every request. A page listing more is
/// refused before it is parsed (its tools are counted, not kept).
pub const MCP_MAX_TOOLS: usize = 1024;

/// The key of the error's `data` that marks an answer the client made itself, for a dropped one.
const MARK: &str = "io.agentic/dropped";

/// Why the client answered a request itself, in place of the server's answer it dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dropped {
    /// The answer was over [`MCP_MAX_MESSAGE_BYTES`].
    TooLarge,
    /// The answer was a page of more than [`MCP_MAX_TOOLS`] tools.
    TooManyTools,
}

impl Dropped {
    fn name(self) -> &'static str {
        match self {
            Self::TooLarge => "too_large",
            Self::TooManyTools => "too_many_tools",
        }
    }

    /// What happened, in words a person reads.
    pub(crate) fn words(self) -> String {
        match self {
            Self::TooLarge => "the server's answer was larger than 16 MiB, the limit for one message".to_owned(),
            Self::TooManyTools => format!("it lists more than {MCP_MAX_TOOLS} tools (`MCP_MAX_TOOLS`)"),
        }
    }

    /// The error answer to `id` that stands in for the dropped one.
    pub(crate) fn answer(self, id: RequestId) -> ServerJsonRpcMessage {
        let error = ErrorData::new(ErrorCode::INTERNAL_ERROR, self.words(), Some(json!({ MARK: self.name() })));
        ServerJsonRpcMessage::error(error, Some(id))
    }

    /// The same answer as the text of one message.
    pub(crate) fn answer_text(self, id: RequestId) -> String {
        serde_json::to_string(&self.answer(id)).expect("an error answer serializes")
    }

    /// Which stand-in `error` is, if it is one.
    pub(crate) fn of(error: &ErrorData) -> Option<Self> {
        match error.data.as_ref()?.get(MARK)?.as_str()? {
            "too_large" => Some(Self::TooLarge),
            "too_many_tools" => Some(Self::TooManyTools),
            _ => None,
        }
    }
}

/// The stand-in for `message` (a whole message, within the bound), if it must not reach rmcp: an
/// answer whose `result.tools` lists more than [`MCP_MAX_TOOLS`]. Reading it keeps nothing but the
/// `id` and a count.
pub(crate) fn screen(message: &[u8]) -> Option<String> {
    let peek: Peek = serde_json::from_slice(message).ok()?;
    let tools = peek.result?.tools?;
    if tools.0 <= MCP_MAX_TOOLS {
        return None;
    }
    Some(Dropped::TooManyTools.answer_text(peek.id?))
}

/// A message's `id` and, if it is an answer with `tools`, how many; the rest is skipped unread.
#[derive(Deserialize)]
struct Peek {
    id: Option<RequestId>,
    result: Option<PeekResult>,
}

#[derive(Deserialize)]
struct PeekResult {
    tools: Option<Count>,
}

/// The length of a JSON array, read without keeping its elements.
struct Count(usize);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Counting;
        impl<'de> Visitor<'de> for Counting {
            type Value = Count;

            fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                formatter.write_str("a list")
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Count, A::Error> {
                let mut count = 0;
                while seq.next_element::<IgnoredAny>()?.is_some() {
                    count += 1;
                }
                Ok(Count(count))
            }
        }
        // Anything else where a list should be fails the peek: the message passes, for the
        // listing to judge.
        deserializer.deserialize_seq(Counting)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    #[test]
    fn a_page_of_too_many_tools_is_replaced_and_others_pass() {
        let tools: Vec<Value> = (0..=MCP_MAX_TOOLS).map(|index| json!({"name": format!("t{index}")})).collect();
        let page = json!({"jsonrpc": "2.0", "id": 4, "result": {"tools": tools}}).to_string();
        let replaced = screen(page.as_bytes()).expect("replaced");
        let ServerJsonRpcMessage::Error(answer) = serde_json::from_str(&replaced).unwrap() else {
            panic!("{replaced}")
        };
        assert_eq!(answer.id, Some(RequestId::Number(4)));
        assert_eq!(Dropped::of(&answer.error), Some(Dropped::TooManyTools));
        assert_eq!(answer.error.message, "it lists more than 1024 tools (`MCP_MAX_TOOLS`)");

        let short = json!({"jsonrpc": "2.0", "id": 4, "result": {"tools": [{"name": "t"}]}}).to_string();
        assert_eq!(screen(short.as_bytes()), None);
        for other in
            [r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#, r#"{"result":{"tools":"many"}}"#, "[1,2]", "{"]
        {
            assert_eq!(screen(other.as_bytes()), None, "{other}");
        }
    }

    #[test]
    fn a_server_error_is_no_stand_in() {
        assert_eq!(Dropped::of(&ErrorData::internal_error("boom", None)), None);
        assert_eq!(Dropped::of(&ErrorData::internal_error("boom", Some(json!({MARK: "other"})))), None);
        let ServerJsonRpcMessage::Error(answer) = Dropped::TooLarge.answer(RequestId::Number(1)) else { panic!() };
        assert_eq!(Dropped::of(&answer.error), Some(Dropped::TooLarge));
    }
}
