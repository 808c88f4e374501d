//! The Responses stream, read: typed events until `response.completed`, `.incomplete` or
//! `.failed` (text, tool calls by output index, the answering model, the usage), `error` events,
//! and a whole Response object from a server that ignored streaming. Long for its tests: a stream
//! of this wire can end five ways, and each is pinned here with the events that lead to it.

use serde::Deserialize;
use serde_json::Value;

use super::super::super::http::{self, DecodeError, Decoder, ErrorFacts, ModelName, Out};
use super::super::super::sse::SseEvent;
use super::errors::{content_filtered, error_event, error_facts, failure, vocabulary};
use crate::message::StopReason;
use crate::message::usage::Usage;

/// A string field, read without failing the event when it is of another type (then `None`):
/// an event this wire does not read may use a field name for something else.
type Text<'a> = ModelName<'a>;

/// One event, every field this wire reads in any of them: a single borrowed parse, whatever the
/// event's type, and a field of an unexpected type in an event this wire ignores fails nothing.
#[derive(Deserialize)]
struct Event<'a> {
    /// The event's type; the SSE `event:` field says the same and stands in when it is missing.
    #[serde(default, borrow, rename = "type")]
    kind: Text<'a>,
    /// Text (`response.output_text.delta`) or arguments (`response.function_call_arguments.delta`).
    #[serde(default, borrow)]
    delta: Text<'a>,
    /// The output item an event is about: a tool call's index.
    #[serde(default)]
    output_index: Option<u32>,
    /// `response.output_item.added` / `.done`.
    #[serde(default, borrow)]
    item: Option<Item<'a>>,
    /// `response.function_call_arguments.done`: the whole arguments.
    #[serde(default, borrow)]
    arguments: Text<'a>,
    /// `response.created`, `.completed`, `.incomplete`, `.failed`.
    #[serde(default, borrow)]
    response: Option<ResponseBody<'a>>,
    /// An `error` event's code and message (read as any JSON: cold, and of varying shape).
    #[serde(default)]
    code: Value,
    #[serde(default)]
    message: Value,
    /// An error object: the nested form of an `error` event, or a gateway's `{"error": ..}` data.
    #[serde(default)]
    error: Value,
}

/// An output item, as far as a tool call needs it.
#[derive(Deserialize)]
struct Item<'a> {
    #[serde(default, borrow, rename = "type")]
    kind: Text<'a>,
    #[serde(default, borrow)]
    call_id: Text<'a>,
    #[serde(default, borrow)]
    name: Text<'a>,
    #[serde(default, borrow)]
    arguments: Text<'a>,
}

/// The response an event carries: its model, usage and how it ended (its `output` is not read: the
/// events before brought it).
#[derive(Deserialize, Default)]
struct ResponseBody<'a> {
    #[serde(default, borrow)]
    model: Text<'a>,
    /// Read as any JSON: a usage of an unexpected shape is left out, not a failed call.
    #[serde(default)]
    usage: Value,
    #[serde(default)]
    error: Value,
    #[serde(default)]
    incomplete_details: Value,
    /// Its output items, counted only (not read): a completed response with none is no answer.
    #[serde(default)]
    output: Vec<serde::de::IgnoredAny>,
}

/// The Responses stream: typed events until `response.completed`, `.incomplete` or `.failed`.
#[derive(Debug, Default)]
pub(crate) struct ResponsesDecoder {
    /// How the response ended, once one of its final events came.
    finish: Option<StopReason>,
    /// The tool calls started, by output index.
    calls: Vec<Call>,
    /// Text came.
    texted: bool,
}

/// What came of one tool call: whether its start had its id and name, whether its arguments came
/// (streamed or whole: a later `.done` or `output_item.done` repeats them).
#[derive(Debug)]
struct Call {
    index: u32,
    named: bool,
    argued: bool,
}

impl ResponsesDecoder {
    /// The call at output index `index`, started (unnamed) if it was not.
    fn call_at(&mut self, index: u32) -> (&mut Call, bool) {
        match self.calls.iter().position(|call| call.index == index) {
            Some(at) => (&mut self.calls[at], false),
            None => {
                self.calls.push(Call { index, named: false, argued: false });
                (self.calls.last_mut().expect("just pushed"), true)
            }
        }
    }

    /// A `function_call` item at `index`: its start (once, and again if its id and name come late)
    /// and its arguments, unless they came already.
    fn call(&mut self, index: u32, id: Option<&str>, name: Option<&str>, arguments: Option<&str>, out: &mut Out<'_>) {
        let (id, name) = (id.unwrap_or_default(), name.unwrap_or_default());
        let (call, new) = self.call_at(index);
        let names = !call.named && (!id.is_empty() || !name.is_empty());
        call.named |= !id.is_empty() && !name.is_empty();
        if new || names {
            out.tool_start(index, id.to_owned(), name.to_owned());
        }
        if let Some(arguments) = arguments.filter(|arguments| !arguments.is_empty()) {
            self.arguments(index, arguments, true, out);
        }
    }

    /// Arguments of the call at `index`: more of them (`whole` false), or all of them, left out
    /// when some came already.
    fn arguments(&mut self, index: u32, arguments: &str, whole: bool, out: &mut Out<'_>) {
        let (call, _) = self.call_at(index);
        if (whole && call.argued) || arguments.is_empty() {
            return;
        }
        call.argued = true;
        out.tool_args(index, arguments.to_owned());
    }

    /// The response is complete: its usage, then the end. A response with neither content nor an
    /// output item says it finished with nothing: no answer (the driver's truncated stream), where
    /// one whose message is empty is an empty answer.
    fn completed(&mut self, response: &ResponseBody<'_>, out: &mut Out<'_>) {
        report(&response.usage, out);
        let stop_reason = if self.calls.is_empty() { StopReason::Stop } else { StopReason::ToolUse };
        if self.texted || !self.calls.is_empty() || !response.output.is_empty() {
            self.finish = Some(stop_reason);
        }
        out.done(stop_reason);
    }

    /// The response stopped early: cut at `max_output_tokens` (or for a reason this wire does not
    /// know: the answer is incomplete either way), or stopped by the content filter, which the
    /// same request meets again.
    fn incomplete(&mut self, details: &Value, usage: &Value, out: &mut Out<'_>) {
        report(usage, out);
        if details.get("reason").and_then(Value::as_str) == Some("content_filter") {
            self.finish = Some(StopReason::Stop);
            out.error(content_filtered());
        } else {
            self.finish = Some(StopReason::Length);
            out.done(StopReason::Length);
        }
    }

    /// The response failed: the usage it had, then its error.
    fn failed(&mut self, error: &Value, usage: &Value, out: &mut Out<'_>) {
        report(usage, out);
        self.finish = Some(StopReason::Stop);
        out.error(failure(error));
    }

    /// How a response ends, by its final event (or a whole response's `status`: one still
    /// `in_progress`, or of no status, ends without a finish).
    fn end(&mut self, kind: &str, response: &ResponseBody<'_>, out: &mut Out<'_>) {
        out.model(response.model.get().unwrap_or_default());
        match kind {
            "response.incomplete" | "incomplete" => self.incomplete(&response.incomplete_details, &response.usage, out),
            "response.failed" | "failed" => self.failed(&response.error, &response.usage, out),
            "response.completed" | "completed" => self.completed(response, out),
            _ => {
                report(&response.usage, out);
                out.done(if self.calls.is_empty() { StopReason::Stop } else { StopReason::ToolUse });
            }
        }
    }
}

/// The usage of a response, when it has one.
fn report(usage: &Value, out: &mut Out<'_>) {
    if let Some(usage) = self::usage(usage) {
        out.usage(usage);
    }
}

/// The usage of a response: `input_tokens` (the cached ones included), `output_tokens` (the
/// reasoning ones included: `output_tokens_details.reasoning_tokens` is a part of it, not more) and
/// `input_tokens_details.cached_tokens`; `None` when it has neither count.
fn usage(usage: &Value) -> Option<Usage> {
    let (input, output) = (http::tokens(usage, "input_tokens"), http::tokens(usage, "output_tokens"));
    if input.is_none() && output.is_none() {
        return None;
    }
    let cached = usage.get("input_tokens_details").and_then(|details| http::tokens(details, "cached_tokens"));
    Some(Usage::new(input.unwrap_or(0), output.unwrap_or(0)).with_cache_read(cached.unwrap_or(0)))
}

impl Decoder for ResponsesDecoder {
    const ANSWER: &'static str = "a response (an object with `\"object\": \"response\"` and `output`)";

    fn event(&mut self, event: &SseEvent, out: &mut Out<'_>) -> Result<(), DecodeError> {
        let data = event.data.trim();
        // No `[DONE]` on this wire; a server that adds one ends nothing by it.
        if data.is_empty() || data == "[DONE]" {
            return Ok(());
        }
        let parsed: Event = http::parse(data)?;
        let kind = parsed.kind.get().unwrap_or(&event.event);
        let index = parsed.output_index.unwrap_or(0);
        match kind {
            "response.output_text.delta" => {
                let text = parsed.delta.get().unwrap_or_default();
                self.texted |= !text.is_empty();
                out.text(text);
            }
            // The reasoning summary (`reasoning.summary` asked), or the raw reasoning of a model
            // that shows it: never the answer.
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                out.reasoning(parsed.delta.get().unwrap_or_default());
            }
            "response.output_item.added" | "response.output_item.done" => {
                if let Some(item) = parsed.item.filter(|item| item.kind.get() == Some("function_call")) {
                    self.call(index, item.call_id.get(), item.name.get(), item.arguments.get(), out);
                }
            }
            "response.function_call_arguments.delta" => {
                self.arguments(index, parsed.delta.get().unwrap_or_default(), false, out);
            }
            "response.function_call_arguments.done" => {
                self.arguments(index, parsed.arguments.get().unwrap_or_default(), true, out);
            }
            "response.created" | "response.in_progress" => {
                out.model(parsed.response.as_ref().and_then(|response| response.model.get()).unwrap_or_default());
            }
            "response.completed" | "response.incomplete" | "response.failed" => {
                self.end(kind, &parsed.response.unwrap_or_default(), out);
            }
            "error" => out.error(error_event(&parsed.error, &parsed.code, &parsed.message)),
            // A gateway's error object in a data line, whatever the event.
            _ if parsed.error.is_object() => out.error(error_facts(&parsed.error)),
            // `response.content_part.*`, `.output_text.done`, the reasoning's `.done` and part
            // events (their text came in the deltas), refusal events, and any event added later.
            _ => {}
        }
        Ok(())
    }

    fn whole(&mut self, answer: &Value, out: &mut Out<'_>) -> Result<(), DecodeError> {
        let response: ResponseBody = http::read(answer)?;
        out.model(response.model.get().unwrap_or_default());
        for (index, item) in (0u32..).zip(answer.get("output").and_then(Value::as_array).into_iter().flatten()) {
            let field = |key| item.get(key).and_then(Value::as_str);
            match field("type") {
                Some("message") => {
                    let parts = item.get("content").and_then(Value::as_array).into_iter().flatten();
                    for part in parts.filter(|part| part.get("type").and_then(Value::as_str) == Some("output_text")) {
                        let text = part.get("text").and_then(Value::as_str).unwrap_or_default();
                        self.texted |= !text.is_empty();
                        out.text(text);
                    }
                }
                Some("function_call") => self.call(index, field("call_id"), field("name"), field("arguments"), out),
                Some("reasoning") => {
                    // Its summary parts, else its raw reasoning parts; encrypted content shows nothing.
                    let summary = item.get("summary").and_then(Value::as_array).filter(|parts| !parts.is_empty());
                    let parts = summary.or_else(|| item.get("content").and_then(Value::as_array));
                    for part in parts.into_iter().flatten() {
                        out.reasoning(part.get("text").and_then(Value::as_str).unwrap_or_default());
                    }
                }
                _ => {}
            }
        }
        // A failed response's error object is the driver's before this; one without is the server's.
        self.end(answer.get("status").and_then(Value::as_str).unwrap_or_default(), &response, out);
        Ok(())
    }

    fn is_answer(answer: &Value) -> bool {
        answer.get("object").and_then(Value::as_str) == Some("response")
            || answer.get("output").is_some_and(Value::is_array)
    }

    fn finished(&self) -> bool {
        self.finish.is_some()
    }

    fn error_body(body: &Value) -> Option<ErrorFacts> {
        ErrorFacts::parse(body).map(|facts| facts.typed_by(vocabulary))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::classify::{ExecAction, verdicts};
    use crate::error::{ModelError, TransportKind};
    use crate::message::AssistantMessage;
    use crate::provider::StreamEvent;
    use crate::provider::http::Secret;

    type Items = Vec<Result<StreamEvent, ModelError>>;

    /// The items a streamed body of `events` (each a JSON data line) yields.
    fn replay(events: &[&str]) -> Items {
        let body: String = events.iter().map(|event| format!("data: {event}\n\n")).collect();
        http::replay(ResponsesDecoder::default(), &[body.as_bytes()], false, None)
    }

    fn text(items: &Items) -> String {
        items
            .iter()
            .filter_map(|item| match item {
                Ok(StreamEvent::TextDelta(text)) => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The typed error a call ends with, and both layers' verdicts on the message it becomes.
    fn failure(items: &Items) -> (ModelError, bool, ExecAction) {
        let Some(Ok(StreamEvent::Error { message, error: Some(error) })) = items.last() else {
            panic!("no typed error event last: {items:?}");
        };
        let (session, exec) = verdicts(&AssistantMessage::error_event(message.clone(), Some(error.clone())));
        (error.clone(), session.retryable, exec.action)
    }

    const CREATED: &str = r#"{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","model":"gpt-4o-2024-08-06","output":[],"usage":null,"error":null}}"#;

    fn delta(text: &str) -> String {
        json!({"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": text}).to_string()
    }

    fn terminal(kind: &str, response: Value) -> String {
        json!({"type": kind, "response": response}).to_string()
    }

    fn failed(code: &str, message: &str) -> String {
        terminal(
            "response.failed",
            json!({"status": "failed", "error": {"code": code, "message": message}, "usage": null}),
        )
    }

    #[test]
    fn an_answer_reports_its_model_once_and_its_usage_cached_and_reasoning_included() {
        let completed = terminal(
            "response.completed",
            json!({"status": "completed", "model": "gpt-4o-2024-08-06", "usage": {
                "input_tokens": 120, "input_tokens_details": {"cached_tokens": 100},
                "output_tokens": 40, "output_tokens_details": {"reasoning_tokens": 32}, "total_tokens": 160}}),
        );
        let items = replay(&[
            CREATED,
            r#"{"type":"response.in_progress","response":{"model":"gpt-4o-2024-08-06"}}"#,
            r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"message","role":"assistant","content":[]}}"#,
            r#"{"type":"response.content_part.added","output_index":0,"content_index":0,"part":{"type":"output_text","text":""}}"#,
            &delta("Hel"),
            &delta(""),
            &delta("lo"),
            r#"{"type":"response.output_text.done","output_index":0,"content_index":0,"text":"Hello"}"#,
            r#"{"type":"response.output_item.done","output_index":0,"item":{"type":"message","content":[{"type":"output_text","text":"Hello"}]}}"#,
            &completed,
        ]);
        assert_eq!(
            items,
            [
                Ok(StreamEvent::Model("gpt-4o-2024-08-06".into())),
                Ok(StreamEvent::TextDelta("Hel".into())),
                Ok(StreamEvent::TextDelta("lo".into())),
                // The 32 reasoning tokens are part of the 40 output tokens: counted once.
                Ok(StreamEvent::Usage(Usage::new(120, 40).with_cache_read(100))),
                Ok(StreamEvent::Done { stop_reason: StopReason::Stop }),
            ]
        );
    }

    #[test]
    fn usage_of_an_unexpected_shape_is_left_out() {
        for (usage, expected) in [
            (json!(null), None),
            (json!({}), None),
            (json!("lots"), None),
            (json!({"input_tokens": -1, "output_tokens": "2"}), None),
            (json!({"output_tokens": 7}), Some(Usage::new(0, 7))),
            (json!({"input_tokens": 5, "output_tokens": 2, "input_tokens_details": null}), Some(Usage::new(5, 2))),
            (
                json!({"input_tokens": 5, "output_tokens": 2, "input_tokens_details": {"cached_tokens": "x"}}),
                Some(Usage::new(5, 2)),
            ),
        ] {
            let items = replay(&[&delta("ok"), &terminal("response.completed", json!({"usage": usage}))]);
            let reported = items.iter().find_map(|item| match item {
                Ok(StreamEvent::Usage(usage)) => Some(*usage),
                _ => None,
            });
            assert_eq!(reported, expected, "{usage}");
            assert_eq!(items.last(), Some(&Ok(StreamEvent::Done { stop_reason: StopReason::Stop })), "{usage}");
        }
    }

    #[test]
    fn tool_calls_start_with_their_call_id_and_stream_their_arguments_once() {
        let items = replay(&[
            CREATED,
            &delta("Checking."),
            r#"{"type":"response.output_item.added","output_index":1,"item":{"type":"function_call","id":"fc_1","call_id":"call_a","name":"get_weather","arguments":""}}"#,
            r#"{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":1,"delta":"{\"city\":"}"#,
            r#"{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":1,"delta":"\"Paris\"}"}"#,
            r#"{"type":"response.function_call_arguments.done","item_id":"fc_1","output_index":1,"arguments":"{\"city\":\"Paris\"}"}"#,
            r#"{"type":"response.output_item.done","output_index":1,"item":{"type":"function_call","id":"fc_1","call_id":"call_a","name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}"#,
            // A second call whose arguments come whole, only in its `done` events.
            r#"{"type":"response.output_item.added","output_index":2,"item":{"type":"function_call","call_id":"call_b","name":"get_time"}}"#,
            r#"{"type":"response.function_call_arguments.done","output_index":2,"arguments":"{}"}"#,
            r#"{"type":"response.output_item.done","output_index":2,"item":{"type":"function_call","call_id":"call_b","name":"get_time","arguments":"{}"}}"#,
            &terminal("response.completed", json!({"usage": {"input_tokens": 9, "output_tokens": 3}})),
        ]);
        let start =
            |index, id: &str, name: &str| Ok(StreamEvent::ToolCallStart { index, id: id.into(), name: name.into() });
        let args = |index, arguments: &str| Ok(StreamEvent::ToolCallDelta { index, arguments: arguments.into() });
        assert_eq!(
            items[1..],
            [
                Ok(StreamEvent::TextDelta("Checking.".into())),
                start(1, "call_a", "get_weather"),
                args(1, r#"{"city":"#),
                args(1, r#""Paris"}"#),
                start(2, "call_b", "get_time"),
                args(2, "{}"),
                Ok(StreamEvent::Usage(Usage::new(9, 3))),
                Ok(StreamEvent::Done { stop_reason: StopReason::ToolUse }),
            ]
        );
        // A call known from its `done` item alone (a server that streams no call events) still counts.
        let late = replay(&[
            r#"{"type":"response.output_item.done","output_index":0,"item":{"type":"function_call","call_id":"c","name":"f","arguments":"{\"n\":1}"}}"#,
            &terminal("response.completed", json!({})),
        ]);
        assert_eq!(
            late,
            [start(0, "c", "f"), args(0, r#"{"n":1}"#), Ok(StreamEvent::Done { stop_reason: StopReason::ToolUse })]
        );
    }

    #[test]
    fn an_answer_cut_at_max_output_tokens_ends_as_length() {
        let incomplete = terminal(
            "response.incomplete",
            json!({"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"},
                   "usage": {"input_tokens": 10, "output_tokens": 64}}),
        );
        let items = replay(&[&delta("a long"), &incomplete]);
        assert_eq!(
            items[1..],
            [Ok(StreamEvent::Usage(Usage::new(10, 64))), Ok(StreamEvent::Done { stop_reason: StopReason::Length })]
        );
        // Cut before any text (a reasoning model spent the budget thinking): an answer all the same.
        let items = replay(&[CREATED, &incomplete]);
        assert_eq!(items.last(), Some(&Ok(StreamEvent::Done { stop_reason: StopReason::Length })));
    }

    #[test]
    fn an_answer_stopped_by_the_content_filter_is_a_permanent_error_that_says_so() {
        let filtered = terminal("response.incomplete", json!({"incomplete_details": {"reason": "content_filter"}}));
        let items = replay(&[&delta("Here is how to"), &filtered]);
        let (error, retryable, action) = failure(&items);
        assert_eq!(
            (error.kind(), error.status(), error.code()),
            ("ContentFilterError", Some(400), Some("content_filter"))
        );
        assert!(error.message().contains("stopped by the content filter"), "{error}");
        assert_eq!((retryable, action), (false, ExecAction::FailPermanently));
    }

    #[test]
    fn a_failed_response_is_typed_like_the_same_http_error() {
        for (code, message, kind, status, action) in [
            (
                "server_error",
                "The server had an error while processing your request.",
                "InternalServerError",
                500,
                ExecAction::Retry,
            ),
            ("server_is_overloaded", "The server is overloaded.", "ServiceUnavailableError", 503, ExecAction::Retry),
            (
                "rate_limit_exceeded",
                "Rate limit reached for gpt-4o. Please try again in 1.5s.",
                "RateLimitError",
                429,
                ExecAction::Retry,
            ),
            ("vector_store_timeout", "The vector store timed out.", "GatewayTimeoutError", 504, ExecAction::Retry),
            ("invalid_prompt", "Invalid prompt: flagged.", "BadRequestError", 400, ExecAction::FailPermanently),
            ("invalid_image_url", "Could not download the image.", "BadRequestError", 400, ExecAction::FailPermanently),
            (
                "context_length_exceeded",
                "Your input exceeds the context window.",
                "BadRequestError",
                400,
                ExecAction::ContextOverflow,
            ),
            (
                "insufficient_quota",
                "You exceeded your current quota.",
                "RateLimitError",
                429,
                ExecAction::FailPermanently,
            ),
        ] {
            let items = replay(&[CREATED, &delta("partial "), &failed(code, message)]);
            assert_eq!(text(&items), "partial ", "{code}");
            let (error, retryable, exec) = failure(&items);
            assert_eq!((error.kind(), error.status(), error.code()), (kind, Some(status), Some(code)), "{code}");
            assert_eq!(error.message(), message, "{code}");
            assert_eq!((retryable, exec), (action == ExecAction::Retry, action), "{code}");
        }
        // The hint in the text is read as it is behind a 429.
        let items = replay(&[&failed("rate_limit_exceeded", "Please try again in 1.5s.")]);
        let (error, ..) = failure(&items);
        assert_eq!(crate::classify::retry_hint(error.message(), Some(&error)), Some(Duration::from_millis(1500)));
        // A failure that says nothing more is the server's.
        let items = replay(&[&terminal("response.failed", json!({"status": "failed", "error": null}))]);
        let (error, retryable, exec) = failure(&items);
        assert_eq!((error.status(), retryable, exec), (Some(500), true, ExecAction::Retry));
        assert_eq!(error.message(), "the response failed (`response.failed`) without a message");
    }

    #[test]
    fn a_failed_response_reports_the_usage_it_had() {
        let failed = terminal(
            "response.failed",
            json!({"error": {"code": "server_error", "message": "boom"}, "usage": {"input_tokens": 50, "output_tokens": 0}}),
        );
        let items = replay(&[&failed]);
        assert_eq!(items[0], Ok(StreamEvent::Usage(Usage::new(50, 0))));
        assert_eq!(failure(&items).0.status(), Some(500));
    }

    #[test]
    fn error_events_of_every_shape_are_typed() {
        let flat = r#"{"type":"error","code":"rate_limit_exceeded","message":"Rate limit reached","param":null,"sequence_number":3}"#;
        let (error, retryable, _) = failure(&replay(&[&delta("x"), flat]));
        assert_eq!(
            (error.kind(), error.status(), error.code(), retryable),
            ("RateLimitError", Some(429), Some("rate_limit_exceeded"), true)
        );
        let nested = r#"{"type":"error","error":{"type":"invalid_request_error","code":"context_length_exceeded","message":"too long","param":"input"}}"#;
        let (error, retryable, action) = failure(&replay(&[nested]));
        assert_eq!((error.status(), retryable, action), (Some(400), false, ExecAction::ContextOverflow));
        // The type from the SSE `event:` field, when the data has none.
        let named = "event: error\ndata: {\"code\":\"server_is_overloaded\",\"message\":\"Overloaded\"}\n\n";
        let items = http::replay(ResponsesDecoder::default(), &[named.as_bytes()], false, None);
        assert_eq!(failure(&items).0.status(), Some(503));
        // No code: the text decides.
        let bare = r#"{"type":"error","code":null,"message":"The server is overloaded, try again later","param":null}"#;
        let (error, retryable, _) = failure(&replay(&[bare]));
        assert_eq!((error.status(), error.code(), retryable), (None, None, true));
        // A gateway's error object in a data line.
        let gateway = r#"{"error":{"message":"Upstream overloaded","type":"overloaded_error"}}"#;
        let (error, retryable, _) = failure(&replay(&[CREATED, gateway]));
        assert_eq!((error.kind(), error.status(), retryable), ("OverloadedError", Some(529), true));
    }

    #[test]
    fn the_key_never_reaches_an_error() {
        let secret = Secret::new(Some("sk-canary-SECRET123".to_owned()));
        let failed = failed("sk-canary-SECRET123", "bad key sk-canary-SECRET123");
        let body = format!("data: {failed}\n\ndata: {{\"type\":\"error\",\"message\":\"sk-canary-SECRET123\"}}\n\n");
        for items in [
            http::replay(ResponsesDecoder::default(), &[body.as_bytes()], false, secret.clone()),
            http::replay(ResponsesDecoder::default(), &[b"data: {sk-canary-SECRET123\n\n"], false, secret.clone()),
        ] {
            let everything = format!("{items:?}");
            assert!(!everything.contains("SECRET123") && everything.contains("<redacted>"), "{everything}");
        }
    }

    #[test]
    fn a_stream_that_ends_before_its_final_event_is_no_answer() {
        // Text, then the body ends: no `Done`, so the agent reports a truncated stream.
        let items = replay(&[CREATED, &delta("Hello, wor")]);
        assert_eq!(
            items,
            [Ok(StreamEvent::Model("gpt-4o-2024-08-06".into())), Ok(StreamEvent::TextDelta("Hello, wor".into()))]
        );
        // Nothing but the opening events: a truncated stream, retryable.
        let items = replay(&[CREATED]);
        let Some(Err(error)) = items.last() else { panic!("{items:?}") };
        assert_eq!(error.transport_kind(), Some(TransportKind::Truncated), "{error}");
        // A `[DONE]` ends nothing.
        let items = replay(&[&delta("Hi"), "[DONE]"]);
        assert!(!items.iter().any(|item| matches!(item, Ok(StreamEvent::Done { .. }))), "{items:?}");
    }

    #[test]
    fn a_completion_with_nothing_in_it_is_no_answer_and_an_empty_message_is_an_empty_answer() {
        for nothing in [
            vec![CREATED.to_owned(), terminal("response.completed", json!({"output": []}))],
            vec![CREATED.to_owned(), delta(""), terminal("response.completed", json!({"output": []}))],
        ] {
            let items = replay(&nothing.iter().map(String::as_str).collect::<Vec<_>>());
            let Some(Err(error)) = items.last() else { panic!("{items:?}") };
            assert_eq!(error.transport_kind(), Some(TransportKind::Truncated), "{error}");
        }
        let empty = terminal("response.completed", json!({"output": [{"type": "message", "content": []}]}));
        assert_eq!(replay(&[&empty]), [Ok(StreamEvent::Done { stop_reason: StopReason::Stop })]);
        // Whole: no output item, or a response still in progress, is no answer either.
        for unfinished in [
            json!({"object": "response", "status": "completed", "output": []}),
            json!({"object": "response", "status": "in_progress", "output": []}),
        ] {
            let items = whole(unfinished.clone());
            let Some(Err(error)) = items.last() else { panic!("{unfinished}: {items:?}") };
            assert_eq!(error.transport_kind(), Some(TransportKind::Truncated), "{error}");
        }
    }

    #[test]
    fn unknown_events_and_fields_of_other_shapes_are_ignored_and_bad_json_is_corrupt() {
        let items = replay(&[
            r#"{"type":"response.output_text.annotation.added","output_index":0,"annotation":{"type":"url_citation"},"delta":{"odd":1}}"#,
            r#"{"type":"response.reasoning_summary_text.delta","output_index":0,"delta":"thinking"}"#,
            r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"reasoning","content":7,"name":[]}}"#,
            r#"{"type":"response.created","response":{"model":42}}"#,
            &delta("ok"),
            &terminal("response.completed", json!({"model": "m-1"})),
        ]);
        assert_eq!(
            items,
            [
                // The summary's delta is reasoning (see the test below).
                Ok(StreamEvent::ReasoningDelta("thinking".into())),
                Ok(StreamEvent::TextDelta("ok".into())),
                Ok(StreamEvent::Model("m-1".into())),
                Ok(StreamEvent::Done { stop_reason: StopReason::Stop })
            ]
        );
        let items = replay(&[&delta("a"), "{not json"]);
        let Some(Err(error)) = items.last() else { panic!("{items:?}") };
        assert_eq!(error.transport_kind(), Some(TransportKind::Corrupted), "{error}");
    }

    /// The items a whole JSON answer yields.
    fn whole(answer: Value) -> Items {
        http::replay(ResponsesDecoder::default(), &[answer.to_string().as_bytes()], true, None)
    }

    #[test]
    fn a_whole_response_reads_like_its_stream() {
        let items = whole(json!({
            "id": "resp_1", "object": "response", "status": "completed", "model": "m-1", "error": null,
            "output": [
                {"type": "reasoning", "summary": []},
                {"type": "message", "role": "assistant", "content": [
                    {"type": "output_text", "text": "Let me check.", "annotations": []}, {"type": "refusal", "refusal": "no"}]},
                {"type": "function_call", "call_id": "call_a", "name": "get_time", "arguments": "{}"},
            ],
            "usage": {"input_tokens": 3, "output_tokens": 1, "input_tokens_details": {"cached_tokens": 2}},
        }));
        assert_eq!(
            items,
            [
                Ok(StreamEvent::Model("m-1".into())),
                Ok(StreamEvent::TextDelta("Let me check.".into())),
                Ok(StreamEvent::ToolCallStart { index: 2, id: "call_a".into(), name: "get_time".into() }),
                Ok(StreamEvent::ToolCallDelta { index: 2, arguments: "{}".into() }),
                Ok(StreamEvent::Usage(Usage::new(3, 1).with_cache_read(2))),
                Ok(StreamEvent::Done { stop_reason: StopReason::ToolUse }),
            ]
        );
        let cut = whole(json!({"object": "response", "status": "incomplete", "output": [],
            "incomplete_details": {"reason": "max_output_tokens"}}));
        assert_eq!(cut, [Ok(StreamEvent::Done { stop_reason: StopReason::Length })]);
        let failed = whole(json!({"object": "response", "status": "failed", "output": [], "error": null}));
        assert_eq!(failure(&failed).0.status(), Some(500));
        let error = whole(json!({"object": "response", "status": "failed", "output": [],
            "error": {"code": "server_error", "message": "boom"}}));
        assert_eq!(failure(&error).2, ExecAction::Retry);
        // Not a response at all: a wrong base URL.
        let items = whole(json!({"data": [{"id": "gpt-4o"}]}));
        let Some(Err(error)) = items.last() else { panic!("{items:?}") };
        assert!(error.message().contains("is not a response"), "{error}");
    }

    /// The reasoning summary's deltas (and the raw reasoning's) are reasoning, never the answer;
    /// their `.done` events repeat nothing. A whole response's reasoning item reads the same.
    #[test]
    fn reasoning_deltas_are_reasoning_and_never_the_answer() {
        let items = replay(&[
            r#"{"type":"response.created","response":{"model":"o4-mini"}}"#,
            r#"{"type":"response.output_item.added","output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[]}}"#,
            r#"{"type":"response.reasoning_summary_part.added","item_id":"rs_1","output_index":0,"summary_index":0,"part":{"type":"summary_text","text":""}}"#,
            r#"{"type":"response.reasoning_summary_text.delta","item_id":"rs_1","output_index":0,"summary_index":0,"delta":"**Adding**"}"#,
            r#"{"type":"response.reasoning_summary_text.done","item_id":"rs_1","output_index":0,"summary_index":0,"text":"**Adding**"}"#,
            r#"{"type":"response.reasoning_text.delta","item_id":"rs_1","output_index":0,"content_index":0,"delta":" 2+2"}"#,
            r#"{"type":"response.output_item.done","output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"**Adding**"}]}}"#,
            r#"{"type":"response.output_text.delta","output_index":1,"content_index":0,"delta":"4"}"#,
            r#"{"type":"response.completed","response":{"output":[{"type":"reasoning"},{"type":"message"}]}}"#,
        ]);
        assert_eq!(
            items,
            [
                Ok(StreamEvent::Model("o4-mini".into())),
                Ok(StreamEvent::ReasoningDelta("**Adding**".into())),
                Ok(StreamEvent::ReasoningDelta(" 2+2".into())),
                Ok(StreamEvent::TextDelta("4".into())),
                Ok(StreamEvent::Done { stop_reason: StopReason::Stop }),
            ]
        );
        assert_eq!(text(&items), "4");
        let whole = json!({"object": "response", "status": "completed", "output": [
            {"type": "reasoning", "summary": [{"type": "summary_text", "text": "2+2"}], "encrypted_content": "gAAA"},
            {"type": "message", "content": [{"type": "output_text", "text": "4"}]}]});
        let items = http::replay(ResponsesDecoder::default(), &[whole.to_string().as_bytes()], true, None);
        assert_eq!(
            items,
            [
                Ok(StreamEvent::ReasoningDelta("2+2".into())),
                Ok(StreamEvent::TextDelta("4".into())),
                Ok(StreamEvent::Done { stop_reason: StopReason::Stop }),
            ]
        );
    }
}
