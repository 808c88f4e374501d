//! The chat completions stream, read: chunks until `[DONE]` (a usage chunk after the finish
//! reason), a whole completion from a server that ignored streaming, and the finish reasons of
//! OpenAI and of the servers that speak its wire.

use serde::Deserialize;
use serde_json::Value;

use super::super::super::http::{self, DecodeError, Decoder, ErrorFacts, ModelName, Out};
use super::super::super::sse::SseEvent;
use super::super::finish;
use super::super::parts::Content;
use crate::message::StopReason;
use crate::message::usage::Usage;

#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(default, borrow)]
    choices: Option<Vec<Choice<'a>>>,
    #[serde(default)]
    error: Option<Value>,
    #[serde(default, borrow)]
    model: ModelName<'a>,
    /// Read as any JSON: a usage of an unexpected shape is left out, not a failed call.
    #[serde(default)]
    usage: Option<Value>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(default)]
    index: u32,
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
    #[serde(default)]
    finish_reason: Option<String>,
}

/// A string field read without failing the chunk when it is of another type (then `None`).
type Text<'a> = ModelName<'a>;

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(default)]
    content: Option<Content>,
    /// The reasoning shown (DeepSeek, SGLang, vLLM before 0.10): never the answer.
    #[serde(default, borrow)]
    reasoning_content: Text<'a>,
    /// The same, as OpenRouter and vLLM name it; a server that sends both sends the same text twice.
    #[serde(default, borrow)]
    reasoning: Text<'a>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCallChunk>>,
}

#[derive(Deserialize)]
struct ToolCallChunk {
    #[serde(default)]
    index: Option<u32>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionChunk>,
}

#[derive(Deserialize)]
struct FunctionChunk {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

/// The chat completions stream: chunks until `[DONE]`.
///
/// The usage chunk comes after the `finish_reason` chunk: the call ends at `[DONE]` (or at the end
/// of the body, once a `finish_reason` came), never at the `finish_reason`, so it is read.
#[derive(Debug, Default)]
pub(crate) struct OpenAiDecoder {
    /// The `finish_reason` of choice 0, once sent.
    finish: Option<StopReason>,
    /// The tool-call indices seen so far.
    tool_calls: Vec<u32>,
}

impl OpenAiDecoder {
    fn stop_reason(&self) -> StopReason {
        self.finish.unwrap_or(if self.tool_calls.is_empty() { StopReason::Stop } else { StopReason::ToolUse })
    }
}

/// A `usage` object (`null` in every chunk but the last when the server sends usage): the prompt
/// and completion tokens, with the cached ones; `None` when it has neither count.
fn usage(usage: Option<&Value>) -> Option<Usage> {
    let usage = usage?;
    let (input, output) = (http::tokens(usage, "prompt_tokens"), http::tokens(usage, "completion_tokens"));
    if input.is_none() && output.is_none() {
        return None;
    }
    let cached = usage.get("prompt_tokens_details").and_then(|details| http::tokens(details, "cached_tokens"));
    Some(Usage::new(input.unwrap_or(0), output.unwrap_or(0)).with_cache_read(cached.unwrap_or(0)))
}

impl Decoder for OpenAiDecoder {
    const ANSWER: &'static str = "a chat completion (an object with `choices`)";

    fn event(&mut self, event: &SseEvent, out: &mut Out<'_>) -> Result<(), DecodeError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            out.done(self.stop_reason());
            return Ok(());
        }
        if data.is_empty() {
            return Ok(());
        }
        let chunk: Chunk = http::parse(data)?;
        if let Some(error) = chunk.error.filter(|error| !error.is_null()) {
            out.error(ErrorFacts::from_error(&error).unwrap_or_default());
            return Ok(());
        }
        out.model(chunk.model.get().unwrap_or_default());
        for choice in chunk.choices.into_iter().flatten().filter(|choice| choice.index == 0) {
            if let Some(delta) = choice.delta {
                self.delta(delta, out, true);
            }
            if self.finish_with(choice.finish_reason, out)? {
                return Ok(());
            }
        }
        if let Some(usage) = usage(chunk.usage.as_ref()) {
            out.usage(usage);
        }
        Ok(())
    }

    fn completed(&self) -> Option<StopReason> {
        self.finish
    }

    fn whole(&mut self, answer: &Value, out: &mut Out<'_>) -> Result<(), DecodeError> {
        let completion: Completion = http::read(answer)?;
        out.model(completion.model.get().unwrap_or_default());
        for choice in completion.choices.into_iter().flatten().filter(|choice| choice.index == 0) {
            if let Some(message) = choice.message {
                self.delta(message, out, false);
            }
            if self.finish_with(choice.finish_reason, out)? {
                return Ok(());
            }
        }
        if let Some(usage) = usage(completion.usage.as_ref()) {
            out.usage(usage);
        }
        out.done(self.stop_reason());
        Ok(())
    }

    fn is_answer(answer: &Value) -> bool {
        answer.get("choices").is_some() || answer.get("object").and_then(Value::as_str) == Some("chat.completion")
    }

    fn finished(&self) -> bool {
        self.finish.is_some()
    }
}

/// A whole chat completion (not streamed): its message reads like one big delta.
#[derive(Deserialize)]
struct Completion<'a> {
    #[serde(default, borrow)]
    choices: Option<Vec<WholeChoice<'a>>>,
    #[serde(default, borrow)]
    model: ModelName<'a>,
    #[serde(default)]
    usage: Option<Value>,
}

#[derive(Deserialize)]
struct WholeChoice<'a> {
    #[serde(default)]
    index: u32,
    #[serde(default, borrow)]
    message: Option<Delta<'a>>,
    #[serde(default)]
    finish_reason: Option<String>,
}

impl OpenAiDecoder {
    /// A delta's (or a whole message's) reasoning, text and tool calls; `streamed`: a thinking
    /// part without text is a sign of life (a whole answer has no idle bound to restart).
    fn delta(&mut self, delta: Delta<'_>, out: &mut Out<'_>, streamed: bool) {
        // One of the two names, never both: a server that fills both means one text.
        let reasoning = delta.reasoning_content.get().filter(|text| !text.is_empty()).or(delta.reasoning.get());
        out.reasoning(reasoning.unwrap_or_default());
        if let Some(content) = delta.content {
            if content.thinking && content.reasoning.is_empty() && streamed {
                out.heartbeat();
            }
            out.reasoning(content.reasoning);
            out.text(content.text);
        }
        for (position, call) in delta.tool_calls.into_iter().flatten().enumerate() {
            self.tool_call(call, position, out);
        }
    }

    fn tool_call(&mut self, call: ToolCallChunk, position: usize, out: &mut Out<'_>) {
        let index = call.index.unwrap_or(u32::try_from(position).unwrap_or(u32::MAX));
        let (name, arguments) = call.function.map(|function| (function.name, function.arguments)).unwrap_or_default();
        let id = call.id.filter(|id| !id.is_empty());
        let name = name.filter(|name| !name.is_empty());
        let new = !self.tool_calls.contains(&index);
        if new {
            self.tool_calls.push(index);
        }
        if new || id.is_some() || name.is_some() {
            out.tool_start(index, id.unwrap_or_default(), name.unwrap_or_default());
        }
        if let Some(arguments) = arguments {
            out.tool_args(index, arguments);
        }
    }
}

impl OpenAiDecoder {
    /// Reads choice 0's `finish_reason`, when it has one: an end is kept for the call's last event;
    /// a filter's or the server's failure ends the call with its error (`true`: nothing more of the
    /// chunk is read); a reason this wire does not know is an answer it cannot read.
    fn finish_with(&mut self, reason: Option<String>, out: &mut Out<'_>) -> Result<bool, DecodeError> {
        let Some(reason) = reason.filter(|reason| !reason.is_empty()) else { return Ok(false) };
        match finish_reason(&reason) {
            Some(Finish::Ends(stop)) => {
                self.finish = Some(stop);
                Ok(false)
            }
            Some(Finish::Filtered) => {
                out.error(finish::filtered(&format!("`finish_reason` {reason:?}")));
                Ok(true)
            }
            Some(Finish::Failed) => {
                out.error(finish::server_failed(&format!("`finish_reason` {reason:?}")));
                Ok(true)
            }
            None => Err(finish::unknown("finish_reason", &reason)),
        }
    }
}

/// What a `finish_reason` says of the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Finish {
    /// It is complete, cut by the token limit, or asks for tools.
    Ends(StopReason),
    /// A content filter stopped it: permanent.
    Filtered,
    /// The server says it failed: transient.
    Failed,
}

/// The `finish_reason`s of OpenAI and of the servers that speak its wire, in any case; `None`
/// for one none of them sends, which is no answer: "stop" means stopped, "eos" too, but a reason
/// nobody documents could as well mean cut or refused.
fn finish_reason(reason: &str) -> Option<Finish> {
    const ENDS: &[(&str, Finish)] = &[
        ("stop", Finish::Ends(StopReason::Stop)),
        ("length", Finish::Ends(StopReason::Length)),
        ("tool_calls", Finish::Ends(StopReason::ToolUse)),
        ("function_call", Finish::Ends(StopReason::ToolUse)),
        ("content_filter", Finish::Filtered),
        // OpenRouter and Mistral: the model behind them broke off.
        ("error", Finish::Failed),
        // Mistral: the model's context window, not `max_tokens`, cut the answer.
        ("model_length", Finish::Ends(StopReason::Length)),
        // Text Generation Inference and llama.cpp's older builds.
        ("eos", Finish::Ends(StopReason::Stop)),
        ("eos_token", Finish::Ends(StopReason::Stop)),
        ("stop_sequence", Finish::Ends(StopReason::Stop)),
        // Gateways that pass Anthropic's reasons through.
        ("end_turn", Finish::Ends(StopReason::Stop)),
        ("max_tokens", Finish::Ends(StopReason::Length)),
        ("tool_use", Finish::Ends(StopReason::ToolUse)),
        ("refusal", Finish::Filtered),
        // DeepSeek: its inference system ran out of resources mid-answer; vLLM: the request was aborted.
        ("insufficient_system_resource", Finish::Failed),
        ("abort", Finish::Failed),
    ];
    ENDS.iter().find(|(name, _)| name.eq_ignore_ascii_case(reason)).map(|(_, finish)| *finish)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::error::ModelError;
    use crate::provider::StreamEvent;

    /// The events a streamed body yields.
    fn replay(body: &str) -> Vec<Result<StreamEvent, ModelError>> {
        http::replay(OpenAiDecoder::default(), &[body.as_bytes()], false, None)
    }

    #[test]
    fn the_model_once_and_the_usage_chunk_after_the_finish_reason() {
        let body = [
            r#"data: {"model":"gpt-4o-2024","choices":[{"index":0,"delta":{"content":"Hi"}}],"usage":null}"#,
            r#"data: {"model":"gpt-4o-2024","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}"#,
            r#"data: {"model":"gpt-4o-2024","choices":[],"usage":{"prompt_tokens":120,"completion_tokens":40,"total_tokens":160,"prompt_tokens_details":{"cached_tokens":100}}}"#,
            "data: [DONE]",
        ]
        .join("\n\n")
            + "\n\n";
        let usage = Usage::new(120, 40).with_cache_read(100);
        assert_eq!(
            replay(&body),
            [
                Ok(StreamEvent::Model("gpt-4o-2024".into())),
                Ok(StreamEvent::TextDelta("Hi".into())),
                Ok(StreamEvent::Usage(usage)),
                Ok(StreamEvent::Done { stop_reason: StopReason::Stop }),
            ]
        );
        // The body ends after the usage chunk, without `[DONE]`: the call is complete all the same.
        let cut = body.trim_end_matches("data: [DONE]\n\n");
        assert_eq!(
            replay(cut)[2..],
            [Ok(StreamEvent::Usage(usage)), Ok(StreamEvent::Done { stop_reason: StopReason::Stop })]
        );
    }

    #[test]
    fn a_model_that_is_not_a_string_is_left_out_and_an_escaped_one_is_read() {
        for model in ["12", "null", "true", r#"{"id": [1, {"a": "b"}]}"#, r#"["m"]"#, r#""""#] {
            let chunk = format!(r#"data: {{"model":{model},"choices":[{{"index":0,"delta":{{"content":"Hi"}}}}]}}"#);
            let events = replay(&format!("{chunk}\n\ndata: [DONE]\n\n"));
            assert_eq!(events[0], Ok(StreamEvent::TextDelta("Hi".into())), "model {model}");
        }
        let escaped = r#"data: {"model":"gpt\u002d4o","choices":[]}"#;
        assert_eq!(replay(&format!("{escaped}\n\ndata: [DONE]\n\n"))[0], Ok(StreamEvent::Model("gpt-4o".into())));
    }

    #[test]
    fn missing_and_malformed_usage_is_left_out() {
        let done = r#"data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#;
        let with = |usage: &str| {
            format!("{done}\n\ndata: {{\"choices\":null,\"model\":7,\"usage\":{usage}}}\n\ndata: [DONE]\n\n")
        };
        for (usage, expected) in [
            ("null", None),
            ("{}", None),
            ("\"lots\"", None),
            ("[1, 2]", None),
            (r#"{"prompt_tokens":-1,"completion_tokens":"2"}"#, None),
            (r#"{"completion_tokens":7}"#, Some(Usage::new(0, 7))),
            (r#"{"prompt_tokens":5,"completion_tokens":1.5,"prompt_tokens_details":null}"#, Some(Usage::new(5, 0))),
            (
                r#"{"prompt_tokens":5,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":"x"}}"#,
                Some(Usage::new(5, 2)),
            ),
        ] {
            let events = replay(&with(usage));
            let reported = events.iter().find_map(|event| match event {
                Ok(StreamEvent::Usage(usage)) => Some(*usage),
                _ => None,
            });
            assert_eq!(reported, expected, "{usage}");
            assert_eq!(events.last(), Some(&Ok(StreamEvent::Done { stop_reason: StopReason::Stop })), "{usage}");
            assert!(!events.iter().any(|event| matches!(event, Ok(StreamEvent::Model(_)))), "{usage}");
        }
    }

    #[test]
    fn a_whole_completion_reports_its_model_and_usage() {
        let answer = json!({"model": "m-1", "choices": [{"index": 0, "message": {"content": "ok"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}});
        let events = http::replay(OpenAiDecoder::default(), &[answer.to_string().as_bytes()], true, None);
        assert_eq!(
            events,
            [
                Ok(StreamEvent::Model("m-1".into())),
                Ok(StreamEvent::TextDelta("ok".into())),
                Ok(StreamEvent::Usage(Usage::new(3, 1))),
                Ok(StreamEvent::Done { stop_reason: StopReason::Stop }),
            ]
        );
    }

    /// A gateway (LiteLLM, OpenRouter) that re-emits Anthropic's error types on the OpenAI wire: still
    /// typed, through the shared spellings consulted after OpenAI's own codes.
    #[test]
    fn a_gateways_anthropic_type_on_the_openai_wire_is_typed() {
        let body = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n\
                    data: {\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
        let events = replay(body);
        let [Ok(StreamEvent::TextDelta(_)), Ok(StreamEvent::Error { message, error: Some(error) })] = &events[..]
        else {
            panic!("{events:?}")
        };
        assert_eq!(message, "Overloaded");
        assert_eq!(
            (error.kind(), error.status(), error.code()),
            ("OverloadedError", Some(529), Some("overloaded_error"))
        );
        let openai =
            "data: {\"error\":{\"message\":\"slow down\",\"type\":\"requests\",\"code\":\"rate_limit_exceeded\"}}\n\n";
        let [Ok(StreamEvent::Error { error: Some(error), .. })] = &replay(openai)[..] else { panic!() };
        assert_eq!(
            (error.kind(), error.status(), error.code()),
            ("RateLimitError", Some(429), Some("rate_limit_exceeded"))
        );
    }

    #[test]
    fn finish_reasons() {
        assert_eq!(finish_reason("stop"), Some(Finish::Ends(StopReason::Stop)));
        assert_eq!(finish_reason("STOP"), Some(Finish::Ends(StopReason::Stop)));
        assert_eq!(finish_reason("length"), Some(Finish::Ends(StopReason::Length)));
        assert_eq!(finish_reason("tool_calls"), Some(Finish::Ends(StopReason::ToolUse)));
        assert_eq!(finish_reason("content_filter"), Some(Finish::Filtered));
        assert_eq!(finish_reason("error"), Some(Finish::Failed));
        assert_eq!(finish_reason("sleepy"), None);
    }

    /// `content_filter` is the filter's stop, not the model's: a permanent error that says so,
    /// whatever text came before it (the Responses wire fails it alike).
    #[test]
    fn a_content_filter_finish_is_a_permanent_error() {
        let body = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Here is how to\"}}]}\n\n\
                    data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"content_filter\"}]}\n\n\
                    data: [DONE]\n\n";
        let events = replay(body);
        let [Ok(StreamEvent::TextDelta(_)), Ok(StreamEvent::Error { message, error: Some(error) })] = &events[..]
        else {
            panic!("{events:?}")
        };
        assert_eq!(
            (error.kind(), error.status(), error.code()),
            ("ContentFilterError", Some(400), Some("content_filter"))
        );
        assert_eq!(
            message,
            "the answer was stopped by the content filter (`finish_reason` \"content_filter\"): the same request \
             would be stopped again; change the prompt"
        );
        let verdict = crate::classify::exec_verdict(&format!("{}: {message}", error.kind()), Some(error));
        assert_eq!(verdict.action, crate::classify::ExecAction::FailPermanently);
        // Not streamed: the same.
        let whole =
            json!({"choices": [{"index": 0, "message": {"content": "Here"}, "finish_reason": "content_filter"}]});
        let events = http::replay(OpenAiDecoder::default(), &[whole.to_string().as_bytes()], true, None);
        assert!(
            matches!(events.last(), Some(Ok(StreamEvent::Error { error: Some(error), .. })) if error.kind() == "ContentFilterError"),
            "{events:?}"
        );
    }

    /// OpenRouter's `finish_reason: "error"` is the server's failure (transient); a reason no server
    /// documents is no answer: a shape this client does not read, naming it.
    #[test]
    fn an_error_or_unknown_finish_is_not_an_answer() {
        let finish = |reason: &str| {
            format!(
                "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"Hi\"}}}}]}}\n\n\
                 data: {{\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"{reason}\"}}]}}\n\ndata: [DONE]\n\n"
            )
        };
        let events = replay(&finish("error"));
        let Some(Ok(StreamEvent::Error { error: Some(error), .. })) = events.last() else { panic!("{events:?}") };
        assert_eq!((error.kind(), error.status()), ("BadGatewayError", Some(502)));
        let events = replay(&finish("sleepy"));
        let Some(Err(error)) = events.last() else { panic!("{events:?}") };
        assert_eq!(error.transport_kind(), Some(crate::error::TransportKind::Corrupted));
        assert_eq!(error.code(), Some("unreadable_answer"));
        assert!(
            error.message().starts_with(
                "malformed chunk: `finish_reason` \"sleepy\" is not a finish reason this client knows: \"{"
            ),
            "{error}"
        );
    }

    /// Mistral's reasoning models stream `content` as a list of parts: the text parts are the
    /// answer, a thinking part's text reasoning; not streamed, the same message reads the same.
    #[test]
    fn mistrals_content_parts_are_read() {
        let body = [
            r#"data: {"model":"magistral-medium-2509","choices":[{"index":0,"delta":{"role":"assistant","content":[{"type":"thinking","thinking":[{"type":"text","text":"The user wants"}]}]}}]}"#,
            r#"data: {"choices":[{"index":0,"delta":{"content":[{"type":"text","text":"Par"}]}}]}"#,
            r#"data: {"choices":[{"index":0,"delta":{"content":"is"},"finish_reason":"stop"}]}"#,
            "data: [DONE]",
        ]
        .join("\n\n")
            + "\n\n";
        assert_eq!(
            replay(&body),
            [
                Ok(StreamEvent::Model("magistral-medium-2509".into())),
                Ok(StreamEvent::ReasoningDelta("The user wants".into())),
                Ok(StreamEvent::TextDelta("Par".into())),
                Ok(StreamEvent::TextDelta("is".into())),
                Ok(StreamEvent::Done { stop_reason: StopReason::Stop }),
            ]
        );
        let whole = json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": [
            {"type": "thinking", "thinking": [{"type": "text", "text": "Hmm"}]}, {"type": "text", "text": "Paris"}]},
            "finish_reason": "stop"}]});
        let events = http::replay(OpenAiDecoder::default(), &[whole.to_string().as_bytes()], true, None);
        assert_eq!(
            events,
            [
                Ok(StreamEvent::ReasoningDelta("Hmm".into())),
                Ok(StreamEvent::TextDelta("Paris".into())),
                Ok(StreamEvent::Done { stop_reason: StopReason::Stop })
            ]
        );
        // A thinking part without text is a sign of life.
        let empty =
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":[{\"type\":\"thinking\",\"thinking\":[]}]}}]}\n\n";
        assert_eq!(replay(empty)[0], Ok(StreamEvent::Heartbeat));
    }

    /// DeepSeek's and vLLM's `reasoning_content`, OpenRouter's `reasoning`: reasoning, never the
    /// answer; a server that fills both with the same text shows it once; a value of another type
    /// shows nothing and fails nothing.
    #[test]
    fn reasoning_content_and_reasoning_are_reasoning_and_never_the_answer() {
        let body = [
            r#"data: {"choices":[{"index":0,"delta":{"role":"assistant","content":null,"reasoning_content":"Two"}}]}"#,
            r#"data: {"choices":[{"index":0,"delta":{"reasoning":" and two"}}]}"#,
            r#"data: {"choices":[{"index":0,"delta":{"reasoning_content":" is","reasoning":" is"}}]}"#,
            r#"data: {"choices":[{"index":0,"delta":{"reasoning":{"effort":"low"},"reasoning_content":null,"content":"4"}}]}"#,
            r#"data: {"choices":[{"index":0,"delta":{"reasoning_content":"","reasoning":null,"content":"."},"finish_reason":"stop"}]}"#,
            "data: [DONE]",
        ]
        .join("\n\n")
            + "\n\n";
        let reasoning = |text: &str| Ok(StreamEvent::ReasoningDelta(text.into()));
        let text = |text: &str| Ok(StreamEvent::TextDelta(text.into()));
        assert_eq!(
            replay(&body),
            [
                reasoning("Two"),
                reasoning(" and two"),
                reasoning(" is"),
                text("4"),
                text("."),
                Ok(StreamEvent::Done { stop_reason: StopReason::Stop }),
            ]
        );
        let whole = json!({"choices": [{"index": 0, "message": {"role": "assistant", "reasoning_content": "2+2",
            "content": "4"}, "finish_reason": "stop"}]});
        let events = http::replay(OpenAiDecoder::default(), &[whole.to_string().as_bytes()], true, None);
        assert_eq!(events, [reasoning("2+2"), text("4"), Ok(StreamEvent::Done { stop_reason: StopReason::Stop })]);
    }
}
