//! The Gemini stream, read: whole `GenerateContentResponse`s until the body ends (the last
//! `finishReason` and usage count), a whole answer or an array of them, Google's error objects in
//! a 200, and what a blocked prompt, a filtered answer or a broken function call come to.

use serde::Deserialize;
use serde_json::Value;

use super::super::super::http::{self, DecodeError, Decoder, ErrorFacts, ModelName, Out};
use super::super::super::sse::SseEvent;
use super::super::finish;
use crate::message::StopReason;
use crate::message::usage::Usage;

/// One `GenerateContentResponse`: a chunk of the stream, or a whole answer.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Chunk<'a> {
    #[serde(default)]
    candidates: Option<Vec<Candidate>>,
    #[serde(default)]
    prompt_feedback: Option<PromptFeedback>,
    /// Read as any JSON: a usage of an unexpected shape is left out, not a failed call.
    #[serde(default)]
    usage_metadata: Option<Value>,
    #[serde(default, borrow)]
    model_version: ModelName<'a>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Candidate {
    #[serde(default)]
    index: u32,
    #[serde(default)]
    content: Option<Content>,
    #[serde(default)]
    finish_reason: Option<String>,
    #[serde(default)]
    finish_message: Option<String>,
}

#[derive(Deserialize)]
struct Content {
    #[serde(default)]
    parts: Option<Vec<Part>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Part {
    #[serde(default)]
    text: Option<String>,
    /// A thought summary (asked with `includeThoughts`): reasoning, not the answer.
    #[serde(default)]
    thought: Option<bool>,
    #[serde(default)]
    function_call: Option<FunctionCall>,
}

#[derive(Deserialize)]
struct FunctionCall {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    args: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PromptFeedback {
    #[serde(default)]
    block_reason: Option<String>,
    #[serde(default)]
    block_reason_message: Option<String>,
}

/// The Gemini stream: whole responses until the body ends.
#[derive(Debug, Default)]
pub(crate) struct GeminiDecoder {
    /// The last `finishReason` of candidate 0 that ends an answer (`STOP`, `MAX_TOKENS`, ...).
    finish: Option<StopReason>,
    /// The function calls read so far: the next one's index.
    calls: u32,
    /// The last usage reported: a chunk that repeats it reports nothing.
    usage: Option<Usage>,
    /// An error object or a block ended the answer: as explicit an end as a finish reason.
    failed: bool,
}

/// What a `finishReason` means for the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Finish {
    /// The answer is complete (so far: a later chunk may go on).
    Ends(StopReason),
    /// A filter stopped the answer: permanent, for the reason given.
    Blocked(&'static str),
    /// The model's answer could not be read (a broken function call): asking again may do better.
    Unreadable(&'static str),
}

/// The meaning of a candidate's `finishReason`, in any case (Google's are upper case; a proxy's
/// `"safety"` is the same filter); `Ok(None)` when it is unset, `Err` for a reason Google does not
/// document, which is no answer.
///
/// `OTHER` is among those: Google documents it as "unknown reason", not as a filter's block and
/// not as a finish, so whether the answer is complete cannot be told. It is read as a reason this
/// client does not know: asked once more, and the same `OTHER` again stops the exec, naming it.
fn finish(reason: &str) -> Result<Option<Finish>, DecodeError> {
    const FINISHES: &[(&str, Finish)] = &[
        ("STOP", Finish::Ends(StopReason::Stop)),
        ("MAX_TOKENS", Finish::Ends(StopReason::Length)),
        ("SAFETY", Finish::Blocked("the answer was flagged by the safety filters")),
        ("RECITATION", Finish::Blocked("the answer recited training data too closely")),
        ("LANGUAGE", Finish::Blocked("the answer is in a language the model does not support")),
        ("BLOCKLIST", Finish::Blocked("the answer contained terms of a blocklist")),
        ("PROHIBITED_CONTENT", Finish::Blocked("the answer may contain prohibited content")),
        ("SPII", Finish::Blocked("the answer may contain sensitive personally identifiable information")),
        ("IMAGE_SAFETY", Finish::Blocked(IMAGE_FLAGGED)),
        ("IMAGE_PROHIBITED_CONTENT", Finish::Blocked(IMAGE_FLAGGED)),
        ("IMAGE_RECITATION", Finish::Blocked(IMAGE_FLAGGED)),
        ("IMAGE_OTHER", Finish::Blocked(IMAGE_FLAGGED)),
        ("NO_IMAGE", Finish::Blocked("the model was asked for an image and made none")),
        ("MODEL_ARMOR", Finish::Blocked("the answer was blocked by Model Armor")),
        ("MALFORMED_FUNCTION_CALL", Finish::Unreadable("the model's function call was malformed")),
        ("UNEXPECTED_TOOL_CALL", Finish::Unreadable("the model called a tool that was not offered")),
        ("TOO_MANY_TOOL_CALLS", Finish::Unreadable("the model made too many tool calls in a row")),
        ("MALFORMED_RESPONSE", Finish::Unreadable("the model's answer was malformed")),
        ("MISSING_THOUGHT_SIGNATURE", Finish::Unreadable("the model's turn lacked its thought signature")),
    ];
    if reason.is_empty() || reason.eq_ignore_ascii_case("FINISH_REASON_UNSPECIFIED") {
        return Ok(None);
    }
    match FINISHES.iter().find(|(name, _)| name.eq_ignore_ascii_case(reason)) {
        Some((_, finish)) => Ok(Some(*finish)),
        None => Err(finish::unknown("finishReason", reason)),
    }
}

/// What an image filter's `finishReason` says.
const IMAGE_FLAGGED: &str = "an image of the answer was flagged by the safety filters";

/// Why a prompt was blocked (`promptFeedback.blockReason`, in any case); `None` when it is unset.
/// Any other reason, `OTHER` included, blocks the prompt: Google documents `OTHER` as "blocked due
/// to unknown reasons", a block all the same (and the same prompt is blocked again).
fn prompt_blocked(reason: &str) -> Option<&'static str> {
    const REASONS: &[(&str, &str)] = &[
        ("SAFETY", "the prompt was flagged by the safety filters"),
        ("BLOCKLIST", "the prompt contains terms of a blocklist"),
        ("PROHIBITED_CONTENT", "the prompt may contain prohibited content"),
        ("IMAGE_SAFETY", "an image of the prompt was flagged by the safety filters"),
        ("OTHER", "the prompt was blocked for a reason Google does not name"),
    ];
    if reason.is_empty() || reason.eq_ignore_ascii_case("BLOCK_REASON_UNSPECIFIED") {
        return None;
    }
    let known = REASONS.iter().find(|(name, _)| name.eq_ignore_ascii_case(reason));
    Some(known.map_or("the prompt was blocked", |(_, what)| *what))
}

/// A prompt or an answer a filter blocked: permanent (the same request is blocked the same way), as
/// the 400 the API answers an invalid request with, coded by the reason (`SAFETY`).
#[cold]
fn blocked(what: &str, field: &str, reason: &str, detail: Option<&str>) -> ErrorFacts {
    let mut text = format!("Gemini blocked the call: {what} ({field} {reason})");
    if let Some(detail) = detail.map(str::trim).filter(|detail| !detail.is_empty()) {
        text.push_str(": ");
        text.push_str(detail);
    }
    text.push_str("; rephrase the prompt or adjust the request's safety settings, asking again gets the same");
    ErrorFacts {
        message: Some(text),
        code: Some(reason.to_owned()),
        status: Some(400),
        typed: Some(("ContentBlockedError", 400)),
        ..ErrorFacts::default()
    }
}

/// An answer whose function call could not be read: the chunk is unusable, as a malformed one is
/// (a corrupted stream, asked again: another sample may do better).
#[cold]
fn unreadable(what: &str, reason: &str) -> DecodeError {
    let error =
        serde::de::Error::custom(format_args!("Gemini's answer cannot be used: {what} (finishReason {reason})"));
    DecodeError::Corrupted(error)
}

/// `usageMetadata` as the call's usage; `None` when it has no count.
fn usage(usage: Option<&Value>) -> Option<Usage> {
    let usage = usage?;
    let count = |key| http::tokens(usage, key);
    let [prompt, tool_prompt, candidates, thoughts, cached] = [
        count("promptTokenCount"),
        count("toolUsePromptTokenCount"),
        count("candidatesTokenCount"),
        count("thoughtsTokenCount"),
        count("cachedContentTokenCount"),
    ];
    if [prompt, tool_prompt, candidates, thoughts, cached].iter().all(Option::is_none) {
        return None;
    }
    let sum = |a: Option<u64>, b: Option<u64>| a.unwrap_or(0).saturating_add(b.unwrap_or(0));
    Some(Usage::new(sum(prompt, tool_prompt), sum(candidates, thoughts)).with_cache_read(cached.unwrap_or(0)))
}

impl GeminiDecoder {
    fn stop_reason(&self) -> StopReason {
        match self.finish {
            Some(StopReason::Stop) | None if self.calls > 0 => StopReason::ToolUse,
            Some(reason) => reason,
            None => StopReason::Stop,
        }
    }

    /// Reads one response: calls `out` for what it says. An error object, a blocked prompt or a
    /// blocked answer ends the call with an error; a broken function call is a malformed chunk.
    fn chunk(&mut self, chunk: Chunk<'_>, out: &mut Out<'_>) -> Result<(), DecodeError> {
        if let Some(error) = chunk.error.filter(|error| !error.is_null()) {
            return self.fail(out, ErrorFacts::from_error(&error).unwrap_or_default());
        }
        if let Some(model) = chunk.model_version.get() {
            out.model(model);
        }
        if let Some(usage) = usage(chunk.usage_metadata.as_ref()).filter(|usage| self.usage != Some(*usage)) {
            self.usage = Some(usage);
            out.usage(usage);
        }
        if let Some(feedback) = chunk.prompt_feedback {
            let reason = feedback.block_reason.unwrap_or_default();
            if let Some(what) = prompt_blocked(&reason) {
                let detail = feedback.block_reason_message.as_deref();
                return self.fail(out, blocked(what, "promptFeedback.blockReason", &reason, detail));
            }
        }
        for candidate in chunk.candidates.into_iter().flatten().filter(|candidate| candidate.index == 0) {
            for part in candidate.content.and_then(|content| content.parts).into_iter().flatten() {
                self.part(part, out);
            }
            let reason = candidate.finish_reason.unwrap_or_default();
            match finish(&reason)? {
                None => {}
                Some(Finish::Ends(stop)) => self.finish = Some(stop),
                Some(Finish::Blocked(what)) => {
                    let detail = candidate.finish_message.as_deref();
                    return self.fail(out, blocked(what, "finishReason", &reason, detail));
                }
                Some(Finish::Unreadable(what)) => return Err(unreadable(what, &reason)),
            }
        }
        Ok(())
    }

    /// The call ends with the error `facts` say.
    fn fail(&mut self, out: &mut Out<'_>, facts: ErrorFacts) -> Result<(), DecodeError> {
        self.failed = true;
        out.error(facts);
        Ok(())
    }

    fn part(&mut self, part: Part, out: &mut Out<'_>) {
        if let Some(call) = part.function_call {
            let index = self.calls;
            self.calls = self.calls.saturating_add(1);
            out.tool_start(index, call.id.unwrap_or_default(), call.name.unwrap_or_default());
            if let Some(args) = call.args.filter(|args| !args.is_null()) {
                out.tool_args(index, args.to_string());
            }
        } else if let Some(text) = part.text {
            // A thought summary is reasoning to show, never the answer's text.
            if part.thought == Some(true) { out.reasoning(text) } else { out.text(text) }
        }
    }

    /// Reads responses that come as a JSON array (Google's one-element error array, or a body
    /// without `alt=sse`): each in turn, until one ends the call. Rare, so read through a `Value`.
    #[cold]
    fn all(&mut self, items: &[Value], out: &mut Out<'_>) -> Result<(), DecodeError> {
        for item in items {
            self.chunk(http::read(item)?, out)?;
            if self.failed {
                break;
            }
        }
        Ok(())
    }
}

impl Decoder for GeminiDecoder {
    const ANSWER: &'static str = "a Gemini response (an object with `candidates`, or an array of them)";

    fn event(&mut self, event: &SseEvent, out: &mut Out<'_>) -> Result<(), DecodeError> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(());
        }
        if data.starts_with('[') {
            return self.all(&http::parse::<Vec<Value>>(data)?, out);
        }
        self.chunk(http::parse(data)?, out)
    }

    /// The stream has no final event: the body's end finishes the answer with the last
    /// `finishReason`, and without one it was cut.
    fn completed(&self) -> Option<StopReason> {
        self.finish.map(|_| self.stop_reason())
    }

    fn whole(&mut self, answer: &Value, out: &mut Out<'_>) -> Result<(), DecodeError> {
        match answer {
            Value::Array(items) => self.all(items, out)?,
            answer => self.all(std::slice::from_ref(answer), out)?,
        }
        if !self.failed {
            out.done(self.stop_reason());
        }
        Ok(())
    }

    fn is_answer(answer: &Value) -> bool {
        let one = |item: &Value| {
            ["candidates", "promptFeedback", "usageMetadata", "error"].iter().any(|key| item.get(key).is_some())
        };
        match answer {
            Value::Array(items) => !items.is_empty() && items.iter().all(one),
            answer => one(answer),
        }
    }

    fn finished(&self) -> bool {
        self.finish.is_some() || self.failed
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::classify::{ExecAction, exec_verdict};
    use crate::error::{ModelError, TransportKind};
    use crate::provider::StreamEvent;
    use crate::provider::http::Secret;

    type Items = Vec<Result<StreamEvent, ModelError>>;

    /// The items a streamed body of these `data:` lines yields.
    fn replay(lines: &[&str]) -> Items {
        let body: String = lines.iter().map(|line| format!("data: {line}\r\n\r\n")).collect();
        http::replay(GeminiDecoder::default(), &[body.as_bytes()], false, None)
    }

    fn whole(answer: &str, key: Option<&str>) -> Items {
        let secret = Secret::new(key.map(str::to_owned));
        http::replay(GeminiDecoder::default(), &[answer.as_bytes()], true, secret)
    }

    fn error_of(items: &Items) -> &ModelError {
        match items.last() {
            Some(Ok(StreamEvent::Error { error: Some(error), .. })) | Some(Err(error)) => error,
            other => panic!("not an error: {other:?} in {items:?}"),
        }
    }

    fn text(text: &str) -> Result<StreamEvent, ModelError> {
        Ok(StreamEvent::TextDelta(text.into()))
    }

    fn done(stop_reason: StopReason) -> Result<StreamEvent, ModelError> {
        Ok(StreamEvent::Done { stop_reason })
    }

    #[test]
    fn the_last_usage_counts_and_the_model_is_reported_once() {
        let items = replay(&[
            r#"{"candidates":[{"content":{"role":"model","parts":[{"text":"Hel"}]},"index":0}],"usageMetadata":{"promptTokenCount":120,"candidatesTokenCount":1,"totalTokenCount":121},"modelVersion":"gemini-2.5-flash-001"}"#,
            r#"{"candidates":[{"content":{"parts":[{"text":"thinking...","thought":true},{"text":"lo"}]}}],"usageMetadata":{"promptTokenCount":120,"candidatesTokenCount":1,"totalTokenCount":121},"modelVersion":"gemini-2.5-flash-001"}"#,
            r#"{"candidates":[{"content":{"parts":[{"text":"!"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":120,"candidatesTokenCount":3,"thoughtsTokenCount":40,"cachedContentTokenCount":100,"toolUsePromptTokenCount":5},"modelVersion":"gemini-2.5-flash-001"}"#,
        ]);
        assert_eq!(
            items,
            [
                Ok(StreamEvent::Model("gemini-2.5-flash-001".into())),
                Ok(StreamEvent::Usage(Usage::new(120, 1))),
                text("Hel"),
                Ok(StreamEvent::ReasoningDelta("thinking...".into())),
                text("lo"),
                Ok(StreamEvent::Usage(Usage::new(125, 43).with_cache_read(100))),
                text("!"),
                done(StopReason::Stop),
            ]
        );
    }

    /// A part marked `"thought": true` is reasoning, shown and never the answer, streamed or whole.
    #[test]
    fn thought_parts_are_reasoning_and_never_the_answer() {
        let items = replay(&[
            r#"{"candidates":[{"content":{"parts":[{"text":"**Adding**","thought":true}]}}]}"#,
            r#"{"candidates":[{"content":{"parts":[{"text":" two and two","thought":true},{"text":"4"}]}}]}"#,
            r#"{"candidates":[{"content":{"parts":[{"text":"","thought":true},{"text":"."}]},"finishReason":"STOP"}]}"#,
        ]);
        let reasoning = |text: &str| Ok(StreamEvent::ReasoningDelta(text.into()));
        assert_eq!(
            items,
            [reasoning("**Adding**"), reasoning(" two and two"), text("4"), text("."), done(StopReason::Stop)]
        );
        let one = r#"{"candidates":[{"content":{"parts":[{"text":"hmm","thought":true},{"text":"ok"}]},"finishReason":"STOP"}]}"#;
        assert_eq!(whole(one, None), [reasoning("hmm"), text("ok"), done(StopReason::Stop)]);
        // Reasoning alone is no answer: the body was cut before it.
        let thinking_only = replay(&[r#"{"candidates":[{"content":{"parts":[{"text":"hmm","thought":true}]}}]}"#]);
        assert_eq!(thinking_only[0], reasoning("hmm"));
        assert_eq!(error_of(&thinking_only).transport_kind(), Some(TransportKind::Truncated), "{thinking_only:?}");
    }

    #[test]
    fn the_call_ends_at_the_end_of_the_body_with_the_last_finish_reason() {
        // An intermediate finish reason (a code execution round) does not end the answer.
        let items = replay(&[
            r#"{"candidates":[{"content":{"parts":[{"text":"a"}]},"finishReason":"STOP"}]}"#,
            r#"{"candidates":[{"content":{"parts":[{"text":"b"}]},"finishReason":"MAX_TOKENS"}]}"#,
        ]);
        assert_eq!(items, [text("a"), text("b"), done(StopReason::Length)]);
        // No finish reason at all: the body was cut before its last chunk, never a short answer.
        let cut = replay(&[r#"{"candidates":[{"content":{"parts":[{"text":"a"}]}}]}"#]);
        assert_eq!(cut, [text("a")]);
        let nothing = replay(&[r#"{"usageMetadata":{"promptTokenCount":3}}"#]);
        assert_eq!(error_of(&nothing).transport_kind(), Some(TransportKind::Truncated), "{nothing:?}");
    }

    #[test]
    fn function_calls_become_tool_calls_in_order() {
        let items = replay(&[
            r#"{"candidates":[{"content":{"parts":[{"text":"Let me look."},{"functionCall":{"name":"search","args":{"q":"rust"}}}]}}]}"#,
            r#"{"candidates":[{"content":{"parts":[{"functionCall":{"name":"time","id":"fc-7"}}]},"finishReason":"STOP"}]}"#,
        ]);
        assert_eq!(
            items,
            [
                text("Let me look."),
                Ok(StreamEvent::ToolCallStart { index: 0, id: String::new(), name: "search".into() }),
                Ok(StreamEvent::ToolCallDelta { index: 0, arguments: r#"{"q":"rust"}"#.into() }),
                Ok(StreamEvent::ToolCallStart { index: 1, id: "fc-7".into(), name: "time".into() }),
                done(StopReason::ToolUse),
            ]
        );
    }

    #[test]
    fn an_error_in_the_stream_is_typed_as_its_http_twin() {
        let quota = r#"{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"34.5s"}]}}"#;
        for line in [quota.to_owned(), format!("[{quota}]")] {
            let items = replay(&[r#"{"candidates":[{"content":{"parts":[{"text":"partial"}]}}]}"#, &line]);
            assert_eq!(items[0], text("partial"));
            let error = error_of(&items);
            assert_eq!((error.kind(), error.status()), ("RateLimitError", Some(429)), "{line}");
            assert_eq!(error.retry_after(), Some(Duration::from_millis(34_500)));
            assert_eq!(error.code(), Some("RESOURCE_EXHAUSTED"));
            assert_eq!(items.len(), 2, "{items:?}");
        }
        let unavailable = r#"{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}"#;
        let error = error_of(&replay(&[unavailable])).clone();
        assert_eq!((error.kind(), error.status()), ("ServiceUnavailableError", Some(503)));
        assert_eq!(exec_verdict(&error.to_string(), Some(&error)).action, ExecAction::Retry);
        let invalid = r#"{"error":{"code":400,"message":"API key not valid.","status":"INVALID_ARGUMENT"}}"#;
        let error = error_of(&replay(&[invalid])).clone();
        assert_eq!(exec_verdict(&error.to_string(), Some(&error)).action, ExecAction::FailPermanently);
    }

    #[test]
    fn a_blocked_prompt_or_answer_is_permanent_and_says_why() {
        let prompt = replay(&[
            r#"{"promptFeedback":{"blockReason":"PROHIBITED_CONTENT"},"usageMetadata":{"promptTokenCount":9}}"#,
        ]);
        let error = error_of(&prompt).clone();
        assert_eq!(
            error.message(),
            "Gemini blocked the call: the prompt may contain prohibited content (promptFeedback.blockReason \
             PROHIBITED_CONTENT); rephrase the prompt or adjust the request's safety settings, asking again gets the same"
        );
        assert_eq!(
            (error.kind(), error.status(), error.code()),
            ("ContentBlockedError", Some(400), Some("PROHIBITED_CONTENT"))
        );
        assert_eq!(exec_verdict(&error.to_string(), Some(&error)).action, ExecAction::FailPermanently);
        assert_eq!(prompt[0], Ok(StreamEvent::Usage(Usage::new(9, 0))));

        let answer = replay(&[
            r#"{"candidates":[{"content":{"parts":[{"text":"Once upon"}]}}]}"#,
            r#"{"candidates":[{"finishReason":"SAFETY","finishMessage":"harassment","safetyRatings":[]}]}"#,
            r#"{"candidates":[{"content":{"parts":[{"text":"never read"}]},"finishReason":"STOP"}]}"#,
        ]);
        assert_eq!(answer.len(), 2, "{answer:?}");
        let error = error_of(&answer);
        assert!(
            error.message().contains("flagged by the safety filters (finishReason SAFETY): harassment;"),
            "{error}"
        );
        assert_eq!(error.code(), Some("SAFETY"));
        for reason in ["RECITATION", "BLOCKLIST", "SPII", "LANGUAGE", "IMAGE_SAFETY"] {
            let line = format!(r#"{{"candidates":[{{"finishReason":"{reason}"}}]}}"#);
            assert_eq!(error_of(&replay(&[&line])).kind(), "ContentBlockedError", "{reason}");
        }
    }

    /// Google's reasons are upper case; a proxy's lower-case `"safety"` is the same filter, not a
    /// stop. `OTHER` is "unknown reason" in Google's documentation: no answer, and a reason Google
    /// does not document is none either. A prompt blocked for `OTHER` is blocked all the same.
    #[test]
    fn finish_reasons_are_read_in_any_case_and_an_unknown_one_is_no_answer() {
        let safety = replay(&[r#"{"candidates":[{"content":{"parts":[{"text":"Once"}]},"finishReason":"safety"}]}"#]);
        let error = error_of(&safety);
        assert_eq!((error.kind(), error.code()), ("ContentBlockedError", Some("safety")));
        assert_eq!(exec_verdict(&error.to_string(), Some(error)).action, ExecAction::FailPermanently);
        let stop = replay(&[r#"{"candidates":[{"content":{"parts":[{"text":"ok"}]},"finishReason":"Stop"}]}"#]);
        assert_eq!(stop, [text("ok"), done(StopReason::Stop)]);
        for reason in ["OTHER", "SLEEPY"] {
            let line =
                format!(r#"{{"candidates":[{{"content":{{"parts":[{{"text":"Hi"}}]}},"finishReason":"{reason}"}}]}}"#);
            let items = replay(&[&line]);
            let error = error_of(&items);
            assert_eq!(
                (error.transport_kind(), error.code()),
                (Some(TransportKind::Corrupted), Some("unreadable_answer"))
            );
            let what = format!("`finishReason` \"{reason}\" is not a finish reason this client knows");
            assert!(error.message().contains(&what), "{error}");
        }
        let other = replay(&[r#"{"promptFeedback":{"blockReason":"OTHER"}}"#]);
        let error = error_of(&other);
        assert!(error.message().contains("blocked for a reason Google does not name"), "{error}");
        assert_eq!(exec_verdict(&error.to_string(), Some(error)).action, ExecAction::FailPermanently);
    }

    #[test]
    fn a_broken_function_call_is_a_corrupted_answer() {
        let items = replay(&[
            r#"{"candidates":[{"content":{"parts":[{"text":"x"}]},"finishReason":"MALFORMED_FUNCTION_CALL"}]}"#,
        ]);
        let error = error_of(&items);
        assert_eq!(error.transport_kind(), Some(TransportKind::Corrupted));
        assert!(
            error.message().contains("the model's function call was malformed (finishReason MALFORMED_FUNCTION_CALL)")
        );
        assert_eq!(exec_verdict(&error.to_string(), Some(error)).action, ExecAction::Retry);
    }

    #[test]
    fn whole_answers_an_object_or_an_array() {
        let one = r#"{"candidates":[{"content":{"parts":[{"text":"ok"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":1},"modelVersion":"m-1"}"#;
        let expected = [
            Ok(StreamEvent::Model("m-1".into())),
            Ok(StreamEvent::Usage(Usage::new(3, 1))),
            text("ok"),
            done(StopReason::Stop),
        ];
        assert_eq!(whole(one, None), expected);
        let array = format!(
            r#"[{{"candidates":[{{"content":{{"parts":[{{"text":"o"}}]}}}}]}}, {}]"#,
            one.replace(r#""ok""#, r#""k""#)
        );
        let items = whole(&array, None);
        assert_eq!(items[..2], [text("o"), Ok(StreamEvent::Model("m-1".into()))]);
        assert_eq!(items.last(), Some(&done(StopReason::Stop)));

        let key = "AIza-SECRET123";
        let error =
            format!(r#"[{{"error":{{"code":403,"message":"key {key} is denied","status":"PERMISSION_DENIED"}}}}]"#);
        let items = whole(&error, Some(key));
        let typed = error_of(&items);
        assert_eq!((typed.kind(), typed.status()), ("PermissionDeniedError", Some(403)));
        assert!(!format!("{items:?}").contains("SECRET"), "{items:?}");
        assert_eq!(items.len(), 1);

        let other = whole(r#"{"models":[]}"#, None);
        assert_eq!(error_of(&other).kind(), "NotAnAnswerError");
        assert!(error_of(&other).message().contains("is not a Gemini response"), "{other:?}");
        assert_eq!(error_of(&whole("[]", None)).kind(), "NotAnAnswerError");
    }

    #[test]
    fn a_body_of_bare_json_is_read_as_a_whole_answer() {
        // Without `alt=sse` Gemini streams one JSON array; a server that does so is read all the same.
        let body = r#"[{"candidates":[{"content":{"parts":[{"text":"hi"}]},"finishReason":"STOP"}]}]"#;
        let items = http::replay(GeminiDecoder::default(), &[body.as_bytes()], false, None);
        assert_eq!(items, [text("hi"), done(StopReason::Stop)]);
    }

    #[test]
    fn malformed_chunks_and_counts_of_the_wrong_type() {
        let items = replay(&["{not json"]);
        assert_eq!(error_of(&items).transport_kind(), Some(TransportKind::Corrupted));
        let odd = replay(&[
            r#"{"candidates":[{"content":{"parts":[{"text":"a"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":"9","candidatesTokenCount":-1},"modelVersion":7}"#,
        ]);
        assert_eq!(odd, [text("a"), done(StopReason::Stop)]);
    }
}
