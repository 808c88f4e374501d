//! One model call: drives the provider's stream into an [`AssistantMessage`], within the call's
//! time and size bounds.
//!
//! Long because its unit tests are, at its end: each bound of a call, cut at its
//! own instant on the paused clock, is a test here, beside the rule.

use std::future::{Future as _, poll_fn};
use std::pin::{Pin, pin};
use std::task::Poll;
use std::time::Duration;

use futures_core::Stream;
use tokio::time::{Instant, Sleep};

use crate::error::{ModelError, TransportKind};
use crate::message::{AssistantMessage, ContentBlock};
use crate::observe::telemetry::{self, FirstChunk};
use crate::policy::rules::{format_ms, millis};
use crate::provider::{CallBounds, Provider, Request, StreamEvent};
use crate::retry::budget::CallLimit;
use crate::storm::Permit;
use crate::storm::pace::{RateLimits, Reservation};
use crate::stream::tap::Tap;

/// Runs one streamed call and returns its final message.
///
/// Every failure becomes a message with `stop_reason == Error`: an error raised while streaming is
/// converted to `"<Kind>: <text>"` (with its typed facts kept), an error event is kept as it is, a
/// stream that ends without its final event and a call that outlives `timeout` become transport
/// errors. Only a programming error ([`ModelError::is_programming`]) is returned as `Err`, unchanged.
/// `timeout` of `None` takes the request's own `timeout`, if any.
///
/// The request's [`CallBounds`] apply too: a call with no content within `first_token`, or none new
/// for `idle` once content flows, is cut as a timeout that names the bound; an answer past
/// `max_answer_bytes` ends the call with an `AnswerTooLargeError`. Keep-alive comments, pings and
/// empty chunks are not content. On a wire that sends heartbeats ([`StreamEvent::Heartbeat`]), a
/// stream that started and then sends nothing at all for `idle` before its first content is cut too:
/// heartbeats prove the call alive, but never past `first_token`.
pub async fn run(
    provider: &dyn Provider,
    request: &Request<'_>,
    timeout: Option<Duration>,
) -> Result<AssistantMessage, ModelError> {
    let deadline = timeout.or(request.timeout).and_then(|limit| {
        let at = Instant::now().checked_add(limit)?;
        Some(CallDeadline::After { at, limit })
    });
    let mut meta = CallMeta::default();
    let outcome = drive(provider, request, deadline, &mut meta).await;
    meta.finish(outcome).0
}

/// [`run`] within a limit the budget computed, whose message names the bound that set it: the
/// call's future, whose bookkeeping goes to `meta` (the caller's: no future wraps this one, which
/// would move its message once more), and which [`CallMeta::finish`] then makes the call's final
/// message of. A limit not set yet (`at: None`) counts from the call's first wait.
pub(crate) fn run_within<'a>(
    provider: &'a dyn Provider,
    request: &'a Request<'a>,
    limit: Option<CallLimit>,
    meta: &'a mut CallMeta<'_>,
) -> impl Future<Output = Result<AssistantMessage, ModelError>> + 'a {
    drive(provider, request, limit.map(CallDeadline::Limit), meta)
}

/// What the server said about the call besides its content: kept apart from the answer so that a
/// call that fails mid-stream still reports the tokens it used; when the call first waited, and
/// when its first content came.
#[derive(Default)]
pub(crate) struct CallMeta<'g> {
    usage: Option<crate::message::Usage>,
    clock: CallClock,
    /// What the pacer reserved for the call and the rate limits its response stated (boxed: most
    /// servers state none, and every call's future holds this).
    pacing: Option<Box<CallPacing>>,
    /// The target's admission of the call (a runtime with fallbacks): its breaker hears of the
    /// call's first content the moment it arrives.
    pub(crate) permit: Option<Permit<'g>>,
    /// Where a streamed exec shows the call's deltas as they come.
    pub(crate) tap: Option<&'g Tap>,
}

/// A call's business with the pacer, for after the call (docs/design.md §10, "Pacing").
#[derive(Default)]
pub(crate) struct CallPacing {
    /// What the call reserved of the scope's limits, and where.
    pub(crate) paced: Option<Reservation>,
    /// The rate limits its response stated, and when it came.
    pub(crate) stated: Option<(RateLimits, Instant)>,
}

/// What the call's clock saw: one borrow of it in the call's future, for both.
#[derive(Default)]
struct CallClock {
    /// When the call first waited: its first reading of the clock.
    waited: Option<Instant>,
    first: FirstChunk,
}

/// The call's own deadline. Its message is written only when the call runs out: the success path
/// allocates nothing for it.
#[derive(Clone, Copy)]
enum CallDeadline {
    /// [`run`]'s `timeout`.
    After { at: Instant, limit: Duration },
    /// The limit the budget computed.
    Limit(CallLimit),
}

impl CallDeadline {
    /// When the call runs out, for a call that first waited at `waited`: a limit not set yet counts
    /// from then. `None` past what the clock can represent.
    fn at(&mut self, waited: Instant) -> Option<Instant> {
        match self {
            Self::After { at, .. } => Some(*at),
            Self::Limit(limit) => {
                if limit.at.is_none() {
                    limit.at = waited.checked_add(limit.limit);
                }
                limit.at
            }
        }
    }

    fn timed_out(&self) -> String {
        match self {
            Self::After { limit, .. } => format!("model call timed out after {}", format_ms(millis(*limit))),
            Self::Limit(limit) => limit.timed_out(),
        }
    }
}

impl<'g> CallMeta<'g> {
    /// The call's final message, when the call first waited (its first reading of the clock), if
    /// it did, and when its first content came. `drive` puts the usage on the messages it makes;
    /// an error raised while streaming gets it here. The answer passes through unchanged (not
    /// moved again for the usage).
    /// The meta of a call that reserved `reservation` of its scope's rate limits.
    pub(crate) fn paced(reservation: Reservation) -> Self {
        Self { pacing: Some(Box::new(CallPacing { paced: Some(reservation), stated: None })), ..Self::default() }
    }

    /// The call's outcome with its usage, when it first waited, when its first content came, and
    /// its business with the pacer.
    pub(crate) fn finish(self, outcome: Result<AssistantMessage, ModelError>) -> CallEnd<'g> {
        let message = match outcome {
            Err(error) if error.is_programming() => Err(error),
            Err(error) => Ok(AssistantMessage { usage: self.usage, ..AssistantMessage::from_error(error) }),
            Ok(message) => Ok(message),
        };
        (message, self.clock.waited, self.clock.first, self.pacing, self.permit)
    }
}

/// What [`CallMeta::finish`] hands back: the outcome, when the call first waited, when its first
/// content came, its business with the pacer, and its admission (its outcome still owed when the
/// call failed).
pub(crate) type CallEnd<'g> =
    (Result<AssistantMessage, ModelError>, Option<Instant>, FirstChunk, Option<Box<CallPacing>>, Option<Permit<'g>>);

/// What ends a wait for the next event: the call's own deadline, or the progress clock.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Watch {
    Call,
    FirstToken,
    Idle,
    /// Silence before the first content, on a wire that sends heartbeats.
    Silent,
}

/// The progress clock of one call. It is read only when the stream makes the call wait: a provider
/// whose events are ready at once (in memory, or already buffered) never reads the clock nor sets a
/// timer, and events that arrive together cost one reading.
struct Progress<'r> {
    /// The request's: borrowed, not copied, to keep every call's future small.
    bounds: &'r CallBounds,
    /// When the call first waited (its first reading of the clock), and when its content came.
    clock: &'r mut CallClock,
    /// The call's deadline.
    call: Option<CallDeadline>,
    /// Content arrived since the timer was last set.
    moved: bool,
    /// Content has arrived at all.
    started: bool,
    /// A heartbeat came before the first content: the wire sends them, so silence is bounded.
    beating: bool,
    /// A heartbeat came since the timer was last set (before the first content).
    beat: bool,
    /// What the timer, once set, is waiting for.
    armed: Option<Watch>,
}

impl Progress<'_> {
    /// The deadline and its cause for a wait that starts now, or `None` to keep the timer as set.
    fn rearm(&mut self) -> Option<(Instant, Watch)> {
        if self.armed.is_some() && !self.moved && !self.beat {
            return None;
        }
        self.moved = false;
        self.beat = false;
        let now = Instant::now();
        let waited = *self.clock.waited.get_or_insert(now);
        let progress = if self.started {
            now.checked_add(self.bounds.idle).map(|at| (at, Watch::Idle))
        } else {
            // The first-token bound counts from the call's first wait, heartbeats or not.
            let first = waited.checked_add(self.bounds.first_token).map(|at| (at, Watch::FirstToken));
            let silent = now.checked_add(self.bounds.idle).filter(|_| self.beating).map(|at| (at, Watch::Silent));
            match (first, silent) {
                (Some(first), Some(silent)) if silent.0 < first.0 => Some(silent),
                (None, silent) => silent,
                (first, _) => first,
            }
        };
        let call = self.call.as_mut().and_then(|call| call.at(waited));
        let chosen = match (call, progress) {
            (Some(call), Some(progress)) if call <= progress.0 => (call, Watch::Call),
            (_, Some(progress)) => progress,
            (Some(call), None) => (call, Watch::Call),
            (None, None) => return None,
        };
        self.armed = Some(chosen.1);
        Some(chosen)
    }

    /// A heartbeat: before the first content, the wire is one that sends them, and one came.
    #[inline]
    fn heartbeat(&mut self) {
        if !self.started {
            self.beating = true;
            self.beat = true;
        }
    }

    fn expired(&mut self) -> ModelError {
        let text = match self.armed {
            Some(Watch::Call) | None => self.call.as_ref().map(CallDeadline::timed_out).unwrap_or_default(),
            Some(Watch::FirstToken) => format!(
                "model call timed out: no content after {} (`first_token_timeout_ms` = {})",
                format_ms(millis(self.bounds.first_token)),
                millis(self.bounds.first_token)
            ),
            Some(Watch::Idle) => format!(
                "model call timed out: no new content for {} (`idle_timeout_ms` = {})",
                format_ms(millis(self.bounds.idle)),
                millis(self.bounds.idle)
            ),
            Some(Watch::Silent) => format!(
                "model call timed out: the stream started, then nothing came for {}, not even a heartbeat \
                 (`idle_timeout_ms` = {}): this wire sends heartbeats while the model thinks, so the stream is dead",
                format_ms(millis(self.bounds.idle)),
                millis(self.bounds.idle)
            ),
        };
        ModelError::transport(TransportKind::Timeout, text)
    }
}

/// The next event of `stream`, or the timeout that came first.
async fn next_event<S>(
    stream: &mut S,
    progress: &mut Progress<'_>,
    timer: &mut Pin<&mut Option<Sleep>>,
) -> Result<Option<S::Item>, ModelError>
where
    S: Stream + Unpin,
{
    poll_fn(|cx| {
        if let Poll::Ready(item) = Pin::new(&mut *stream).poll_next(cx) {
            return Poll::Ready(Ok(item));
        }
        if let Some((at, _)) = progress.rearm() {
            match timer.as_mut().as_pin_mut() {
                Some(sleep) => sleep.reset(at),
                None => timer.set(Some(tokio::time::sleep_until(at))),
            }
        }
        match timer.as_mut().as_pin_mut().map(|sleep| sleep.poll(cx)) {
            Some(Poll::Ready(())) => Poll::Ready(Err(progress.expired())),
            _ => Poll::Pending,
        }
    })
    .await
}

/// A usage that cannot be one call's is dropped, and said at WARN: `None`.
#[cold]
fn implausible(usage: &crate::message::Usage) -> Option<crate::message::Usage> {
    tracing::warn!(usage = ?usage, "the server reported more tokens than one call can use; its usage is ignored");
    None
}

async fn drive(
    provider: &dyn Provider,
    request: &Request<'_>,
    call: Option<CallDeadline>,
    meta: &mut CallMeta<'_>,
) -> Result<AssistantMessage, ModelError> {
    let CallMeta { usage: meta_usage, clock, pacing, permit, tap } = meta;
    let bounds = &request.bounds;
    let mut stream = provider.stream(request);
    if let Some(tap) = *tap {
        // A streamed exec sees the deltas as the call reads them (docs/design.md §22).
        stream = Box::pin(tap.tapped(stream));
    }
    let mut progress =
        Progress { bounds, clock, call, moved: false, started: false, beating: false, beat: false, armed: None };
    let mut timer = pin!(None::<Sleep>);
    let mut answer = Answer::new(bounds.max_answer_bytes, request.max_tokens);
    let mut text = String::new();
    let mut tool_calls = ToolCalls::default();
    while let Some(event) = next_event(&mut stream, &mut progress, &mut timer).await? {
        let before = answer.bytes;
        match event? {
            StreamEvent::TextDelta(delta) => {
                answer.add(delta.len())?;
                if text.is_empty() {
                    text = delta;
                } else {
                    text.push_str(&delta);
                }
            }
            StreamEvent::ToolCallStart { index, id, name } => {
                ToolCall::start(&mut tool_calls, &mut answer, index, id, name)?
            }
            StreamEvent::ToolCallDelta { index, arguments } => {
                answer.add(arguments.len())?;
                tool_calls.find(index).0.arguments.push_str(&arguments);
            }
            StreamEvent::Done { stop_reason } => {
                let mut content = if text.is_empty() { Vec::new() } else { vec![ContentBlock::Text { text }] };
                content.extend(tool_calls.calls.into_iter().map(ToolCall::into_block));
                return Ok(AssistantMessage {
                    content,
                    stop_reason,
                    error_message: None,
                    error: None,
                    usage: *meta_usage,
                });
            }
            // The one place a call's usage enters, whatever the wire: a count no call can have
            // is no usage (docs/design.md §10, "Pacing").
            StreamEvent::Usage(usage) => *meta_usage = usage.plausible().or_else(|| implausible(&usage)),
            StreamEvent::Model(model) => telemetry::record_response_model(&model),
            StreamEvent::RateLimits(stated) => {
                pacing.get_or_insert_with(Box::default).stated = Some((*stated, Instant::now()));
            }
            // Once content flows, only content resets the idle clock.
            StreamEvent::Heartbeat => progress.heartbeat(),
            // Reasoning is not the answer (a streaming caller saw it as it came): a heartbeat.
            StreamEvent::ReasoningDelta(reasoning) => {
                drop(reasoning);
                progress.heartbeat();
            }
            StreamEvent::Error { message, error } => {
                let mut failed = AssistantMessage::error_event(message, error);
                failed.usage = *meta_usage;
                if !text.is_empty() {
                    failed.content.push(ContentBlock::Text { text });
                }
                return Ok(failed);
            }
        }
        if answer.bytes > before {
            if !progress.started {
                // A call that waited read the clock already: once more, for its first content.
                let clock = &mut *progress.clock;
                clock.first = if clock.waited.is_some() { FirstChunk::At(Instant::now()) } else { FirstChunk::AtOnce };
                if let Some(permit) = permit {
                    permit.first_content();
                }
            }
            progress.moved = true;
            progress.started = true;
        }
    }
    Err(ModelError::transport(TransportKind::Truncated, "stream ended unexpectedly, before its final event"))
}

/// What a new tool call counts against the answer's size bound besides its id, name and arguments.
const TOOL_CALL_OVERHEAD: usize = 64;

/// The size of the answer so far, against its bound.
struct Answer {
    bytes: usize,
    limit: u64,
    /// The bytes past which the answer has passed the output the exec's spend limits allowed it
    /// (`u64::MAX` without limits).
    spend_cap: u64,
}

/// Bytes per output token past which a call's answer has surely passed the `max_tokens` it was
/// sent: a server that honours it stops long before (English runs about 4 bytes a token; 32 leaves
/// room for whitespace, code and long words), one that ignores it is cut here.
const SPEND_CAP_BYTES_PER_TOKEN: u64 = 32;

/// The kind of the error of a call cut at its spend cap: the exec stops with kind `usage_limit`.
pub(crate) const USAGE_LIMIT_ERROR: &str = "UsageLimitError";

impl Answer {
    /// The bound of an answer of a call whose bytes may not pass `max_answer_bytes`, nor, under
    /// spend limits, `max_tokens` output tokens (one bound to test per delta: the smaller).
    #[inline]
    fn new(max_answer_bytes: u64, max_tokens: Option<u64>) -> Self {
        let spend_cap = max_tokens.map_or(u64::MAX, |tokens| tokens.saturating_mul(SPEND_CAP_BYTES_PER_TOKEN));
        Self { bytes: 0, limit: max_answer_bytes.min(spend_cap), spend_cap }
    }

    fn add(&mut self, bytes: usize) -> Result<(), ModelError> {
        self.bytes = self.bytes.saturating_add(bytes);
        if self.bytes as u64 > self.limit {
            return Err(self.passed());
        }
        Ok(())
    }

    /// The error of an answer past its bound: the spend cap's, or `max_answer_bytes`'.
    #[cold]
    fn passed(&self) -> ModelError {
        if self.limit == self.spend_cap {
            return ModelError::new(
                USAGE_LIMIT_ERROR,
                format!(
                    "the answer passed the {} output tokens the exec's spend limits left it ({} bytes, \
                     the server did not stop at the `max_tokens` it was sent): the stream was cut",
                    self.spend_cap / SPEND_CAP_BYTES_PER_TOKEN,
                    self.bytes
                ),
            );
        }
        ModelError::new(
            "AnswerTooLargeError",
            format!(
                "the answer passed {} bytes (`max_answer_bytes`): the stream was cut there; raise \
                 `max_answer_bytes` or ask for a shorter answer",
                self.limit
            ),
        )
    }
}

/// A tool call being streamed: its arguments arrive as fragments of JSON text.
struct ToolCall {
    index: u32,
    id: String,
    name: String,
    arguments: String,
}

/// The tool calls of one answer, in the order they started. A stream sends each call's pieces
/// under the call's index, in practice in order: the last call, or a new highest index, is found at
/// once. Any other index is looked up in a map built the first time one is needed, so that a server
/// that interleaves or reverses tens of thousands of calls (as many as `max_answer_bytes` holds)
/// costs no search over every call for each piece.
#[derive(Default)]
struct ToolCalls {
    calls: Vec<ToolCall>,
    highest: Option<u32>,
    positions: Option<std::collections::HashMap<u32, usize>>,
}

impl ToolCalls {
    /// The call with `index`, started now if it was not (then the flag is true).
    fn find(&mut self, index: u32) -> (&mut ToolCall, bool) {
        let last = self.calls.len().checked_sub(1);
        if let Some(last) = last.filter(|&last| self.calls[last].index == index) {
            return (&mut self.calls[last], false);
        }
        if self.highest.is_none_or(|highest| index > highest) {
            self.highest = Some(index);
            return (self.push(index), true);
        }
        let calls = &self.calls;
        let positions = self
            .positions
            .get_or_insert_with(|| calls.iter().enumerate().map(|(position, call)| (call.index, position)).collect());
        match positions.get(&index) {
            Some(&position) => (&mut self.calls[position], false),
            None => (self.push(index), true),
        }
    }

    /// Starts the call with `index` (not started yet).
    fn push(&mut self, index: u32) -> &mut ToolCall {
        if let Some(positions) = &mut self.positions {
            positions.insert(index, self.calls.len());
        }
        let position = self.calls.len();
        self.calls.push(ToolCall { index, id: String::new(), name: String::new(), arguments: String::new() });
        &mut self.calls[position]
    }
}

impl ToolCall {
    /// A call's start (its id and name), counted against the answer's bound. A provider may repeat
    /// the start of a call: the first id and name stay.
    fn start(
        calls: &mut ToolCalls,
        answer: &mut Answer,
        index: u32,
        id: String,
        name: String,
    ) -> Result<(), ModelError> {
        answer.add(id.len() + name.len())?;
        let (call, new) = calls.find(index);
        if new {
            // A call of its own is content, and each one costs memory: count it.
            answer.add(TOOL_CALL_OVERHEAD)?;
        }
        if call.id.is_empty() {
            call.id = id;
        }
        if call.name.is_empty() {
            call.name = name;
        }
        Ok(())
    }

    /// The finished call as a block. Its arguments are parsed as JSON (none: an empty object); text
    /// that is not valid JSON is kept as a JSON string of the raw text, for the model to see and fix.
    fn into_block(self) -> ContentBlock {
        let input = if self.arguments.trim().is_empty() {
            serde_json::Value::Object(serde_json::Map::new())
        } else {
            serde_json::from_str(&self.arguments).unwrap_or(serde_json::Value::String(self.arguments))
        };
        let id = if self.id.is_empty() { crate::message::minted_call_id(self.index) } else { self.id };
        ContentBlock::ToolUse { id, name: self.name, input }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{Message, StopReason};
    use crate::provider::{Scripted, ScriptedProvider};

    async fn one(step: Scripted, timeout: Option<Duration>) -> Result<AssistantMessage, ModelError> {
        let provider = ScriptedProvider::new([step]);
        let history = [Message::user("hi")];
        run(&provider, &Request::new(&history), timeout).await
    }

    #[tokio::test(start_paused = true)]
    async fn raised_errors_become_kind_colon_text_and_keep_their_facts() {
        let message = one(Scripted::http(503, "Service Unavailable"), None).await.unwrap();
        assert_eq!(message.stop_reason, StopReason::Error);
        assert_eq!(message.error_text(), "ServiceUnavailableError: 503 Service Unavailable");
        assert_eq!(message.error.unwrap().status(), Some(503));

        let bare = one(Scripted::raise(ModelError::new("ValueError", "")), None).await.unwrap();
        assert_eq!(bare.error_text(), "ValueError");
    }

    #[tokio::test(start_paused = true)]
    async fn error_events_are_kept_as_they_are_even_empty() {
        let message = one(Scripted::error(""), None).await.unwrap();
        assert_eq!(message.error_message.as_deref(), Some(""));
    }

    #[tokio::test(start_paused = true)]
    async fn programming_errors_are_not_converted() {
        let error = one(Scripted::programming("TypeError", "bad"), None).await.unwrap_err();
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

    /// Calls whose pieces come in reverse or interleaved order are assembled by index, each kept
    /// where it started: through the map the out-of-order path builds, not a search per piece.
    #[tokio::test]
    async fn tool_calls_out_of_order_are_assembled_by_index_in_the_order_they_started() {
        const CALLS: u32 = 2_000;
        let mut events = Vec::new();
        for index in (0..CALLS).rev() {
            events.push(StreamEvent::ToolCallStart { index, id: format!("call_{index}"), name: "f".into() });
        }
        for index in 0..CALLS {
            events.push(StreamEvent::ToolCallDelta { index, arguments: format!("{{\"n\":{index}") });
        }
        for index in (0..CALLS).rev() {
            events.push(StreamEvent::ToolCallDelta { index, arguments: "}".into() });
        }
        // A start repeated for a call seen before, after the map exists: the first id stays.
        events.push(StreamEvent::ToolCallStart { index: 7, id: "again".into(), name: "g".into() });
        events.push(StreamEvent::Done { stop_reason: StopReason::ToolUse });
        let history = [Message::user("hi")];
        let message = run(&Events(events), &Request::new(&history), None).await.unwrap();
        assert_eq!(message.content.len(), CALLS as usize);
        for (position, block) in message.content.iter().enumerate() {
            let index = CALLS - 1 - position as u32;
            assert_eq!(
                block,
                &ContentBlock::ToolUse {
                    id: format!("call_{index}"),
                    name: "f".into(),
                    input: serde_json::json!({"n": index})
                }
            );
        }
    }

    /// One call of `step` with the default bounds (first token 300 s, idle 60 s): its message and
    /// how long it took.
    async fn timed(step: Scripted) -> (AssistantMessage, Duration) {
        let start = tokio::time::Instant::now();
        let message = one(step, None).await.unwrap();
        (message, start.elapsed())
    }

    #[tokio::test(start_paused = true)]
    async fn silence_after_a_heartbeat_ends_at_the_idle_bound() {
        let (message, elapsed) = timed(Scripted::hang().with_heartbeats(1, Duration::ZERO)).await;
        assert_eq!(elapsed, Duration::from_secs(60));
        assert_eq!(
            message.error_text(),
            "TimeoutError: model call timed out: the stream started, then nothing came for 60 s, not even a \
             heartbeat (`idle_timeout_ms` = 60000): this wire sends heartbeats while the model thinks, so the \
             stream is dead"
        );
        assert_eq!(message.error.unwrap().transport_kind(), Some(TransportKind::Timeout));
        // The idle clock counts from the last heartbeat.
        let (_, elapsed) = timed(Scripted::hang().with_heartbeats(3, Duration::from_secs(50))).await;
        assert_eq!(elapsed, Duration::from_secs(160));
    }

    #[tokio::test(start_paused = true)]
    async fn heartbeats_alone_end_at_the_first_token_bound() {
        let (message, elapsed) = timed(Scripted::hang().with_heartbeats(u32::MAX, Duration::from_secs(15))).await;
        assert_eq!(elapsed, Duration::from_secs(300));
        assert_eq!(
            message.error_text(),
            "TimeoutError: model call timed out: no content after 300 s (`first_token_timeout_ms` = 300000)"
        );
        // Without heartbeats, silence before the first content has the first-token bound alone.
        let (_, elapsed) = timed(Scripted::hang()).await;
        assert_eq!(elapsed, Duration::from_secs(300));
    }

    #[tokio::test(start_paused = true)]
    async fn heartbeats_keep_a_thinking_model_alive_and_stop_counting_once_content_flows() {
        let (message, elapsed) =
            timed(Scripted::ok("thought it over").with_heartbeats(5, Duration::from_secs(55))).await;
        assert_eq!((message.text_content().as_str(), elapsed), ("thought it over", Duration::from_secs(220)));

        /// Content, then heartbeats only: they do not reset the idle clock.
        struct ThenPings;
        impl Provider for ThenPings {
            fn name(&self) -> &str {
                "then-pings"
            }
            fn stream<'a>(&'a self, _: &'a Request<'a>) -> crate::provider::EventStream<'a> {
                let pings = futures_util::stream::unfold((), |()| async {
                    tokio::time::sleep(Duration::from_secs(10)).await;
                    Some((Ok(StreamEvent::Heartbeat), ()))
                });
                Box::pin(futures_util::StreamExt::chain(
                    futures_util::stream::iter([Ok(StreamEvent::TextDelta("Hel".into()))]),
                    pings,
                ))
            }
        }
        let history = [Message::user("hi")];
        let start = tokio::time::Instant::now();
        let message = run(&ThenPings, &Request::new(&history), None).await.unwrap();
        assert_eq!(start.elapsed(), Duration::from_secs(60));
        assert!(message.error_text().contains("no new content for 60 s (`idle_timeout_ms` = 60000)"), "{message:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_hang_ends_at_the_timeout() {
        let start = tokio::time::Instant::now();
        let message = one(Scripted::hang(), Some(Duration::from_millis(250))).await.unwrap();
        assert_eq!(start.elapsed(), Duration::from_millis(250));
        assert_eq!(message.error.unwrap().transport_kind(), Some(TransportKind::Timeout));
    }
}
