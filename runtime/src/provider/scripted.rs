use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_util::StreamExt as _;
use futures_util::stream;

use super::{EventStream, Provider, Request, ResponseSchema, StreamEvent};
use crate::error::{ModelError, TransportKind};
use crate::message::usage::Usage;
use crate::message::{Message, StopReason};
use crate::storm::pace::RateLimits;

/// One scripted model call: what the [`ScriptedProvider`] answers the next time it is called.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use agentic_runtime::Scripted;
///
/// let script = [
///     Scripted::http(429, "Too Many Requests").with_retry_after(Duration::from_secs(1)),
///     Scripted::error(""),                        // a dropped stream: an empty error message
///     Scripted::tool_call("get_weather", serde_json::json!({"city": "Paris"})),
///     Scripted::ok("done").with_latency(Duration::from_millis(300)),
/// ];
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Scripted {
    outcome: Outcome,
    latency: Duration,
    usage: Option<Usage>,
    /// How many heartbeats come before the outcome, and how far apart.
    heartbeats: (u32, Duration),
    /// The rate limits the call's response states (boxed: most steps state none).
    limits: Option<Box<RateLimits>>,
    /// How long after its first events the last one comes (a long answer, streamed).
    streamed: Duration,
    /// How many text deltas the answer's text comes in.
    chunks: u32,
    /// The reasoning the model shows before its outcome.
    reasoning: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
enum Outcome {
    Ok(String),
    /// An answer cut by the token limit.
    Truncated(String),
    /// Text shown, then the stream breaks.
    Cut(String),
    /// Tool calls: each tool's name and its arguments as JSON text.
    ToolCalls(Vec<(String, String)>),
    ErrorEvent {
        message: String,
        error: Option<ModelError>,
    },
    Raise(ModelError),
    Hang,
}

impl Scripted {
    /// The call succeeds with `text`.
    pub fn ok(text: impl Into<String>) -> Self {
        Self::new(Outcome::Ok(text.into()))
    }

    /// The answer `text`, cut by the token limit: stop reason [`StopReason::Length`].
    pub fn truncated(text: impl Into<String>) -> Self {
        Self::new(Outcome::Truncated(text.into()))
    }

    /// The call streams `shown`, then its stream drops (a `StreamDroppedError`, retryable): a
    /// failure after text reached a streaming caller ([`Runtime::exec_stream`]).
    ///
    /// [`Runtime::exec_stream`]: crate::Runtime::exec_stream
    pub fn cut(shown: impl Into<String>) -> Self {
        Self::new(Outcome::Cut(shown.into()))
    }

    /// The model answers with one call of the tool `name` with the arguments `input`.
    ///
    /// The call streams like a real one: a `ToolCallStart` (id `call_N`, where N counts the tool
    /// calls this provider has played, from 1, so ids are unique and deterministic), the arguments'
    /// JSON text in two `ToolCallDelta` fragments, and `Done` with [`StopReason::ToolUse`].
    pub fn tool_call(name: impl Into<String>, input: serde_json::Value) -> Self {
        Self::tool_calls([(name, input)])
    }

    /// The model answers with several tool calls in one turn, in this order (see
    /// [`Scripted::tool_call`]).
    pub fn tool_calls<N: Into<String>>(calls: impl IntoIterator<Item = (N, serde_json::Value)>) -> Self {
        Self::new(Outcome::ToolCalls(calls.into_iter().map(|(name, input)| (name.into(), input.to_string())).collect()))
    }

    /// The model answers with one call of the tool `name` whose arguments are the text
    /// `arguments`, as it is: use it to send arguments that are not valid JSON.
    pub fn tool_call_raw(name: impl Into<String>, arguments: impl Into<String>) -> Self {
        Self::new(Outcome::ToolCalls(vec![(name.into(), arguments.into())]))
    }

    /// The stream ends in an error event whose text is `message`, as it is (possibly empty, as when
    /// a stream drops).
    pub fn error(message: impl Into<String>) -> Self {
        Self::new(Outcome::ErrorEvent { message: message.into(), error: None })
    }

    /// The call fails with an HTTP error response: `"RateLimitError: 429 Too Many Requests"`.
    pub fn http(status: u16, message: impl AsRef<str>) -> Self {
        Self::raise(ModelError::http(status, message))
    }

    /// The call fails with a transport error (connect, timeout, reset, a broken stream).
    pub fn transport(kind: TransportKind, message: impl Into<String>) -> Self {
        Self::raise(ModelError::transport(kind, message))
    }

    /// The call raises `error` while streaming. A programming error
    /// ([`ModelError::is_programming`]) goes straight to the caller; any other becomes an error message.
    pub fn raise(error: ModelError) -> Self {
        Self::new(Outcome::Raise(error))
    }

    /// The call raises a programming error, e.g. `Scripted::programming("TypeError", "bad argument")`.
    pub fn programming(kind: &'static str, message: impl Into<String>) -> Self {
        Self::raise(ModelError::programming(kind, message))
    }

    /// The call never answers (only a timeout or the budget ends it).
    pub fn hang() -> Self {
        Self::new(Outcome::Hang)
    }

    /// This step `count` times, e.g. `ScriptedProvider::new(Scripted::error("overloaded").times(12))`.
    pub fn times(self, count: usize) -> impl Iterator<Item = Scripted> + Clone {
        std::iter::repeat_n(self, count)
    }

    /// The step's text comes in `count` deltas of about equal size (at least 1; at most one per
    /// character), as a streamed answer does.
    ///
    /// # Default
    /// 1: the whole text in one delta.
    pub fn in_chunks(mut self, count: u32) -> Self {
        self.chunks = count.max(1);
        self
    }

    /// The call takes `latency` before its first event.
    pub fn with_latency(mut self, latency: Duration) -> Self {
        self.latency = latency;
        self
    }

    /// The call's events up to its last come after the latency, and the last one (an answer's end)
    /// `streamed` later: a long answer whose first content is known long before it ends.
    pub fn with_stream_time(mut self, streamed: Duration) -> Self {
        self.streamed = streamed;
        self
    }

    /// Before its outcome, the call sends `count` heartbeats ([`StreamEvent::Heartbeat`]: what a wire
    /// that pings while the model thinks sends), the first after the latency, each next one `every`
    /// later; the outcome follows the last at once. `Scripted::hang().with_heartbeats(1, Duration::ZERO)`
    /// is a stream that started and then went silent; `Scripted::hang().with_heartbeats(u32::MAX, every)`
    /// pings forever.
    pub fn with_heartbeats(mut self, count: u32, every: Duration) -> Self {
        self.heartbeats = (count, every);
        self
    }

    /// Before its outcome (after its rate limits), the call shows `reasoning` as one
    /// [`StreamEvent::ReasoningDelta`], as a reasoning model's wire streams its thinking: never part
    /// of the answer. Any outcome takes it: `Scripted::error("").with_reasoning("..")` is a stream
    /// that showed reasoning and dropped, `Scripted::hang().with_reasoning("..")` one that showed
    /// reasoning and fell silent.
    ///
    /// ```
    /// use agentic_runtime::Scripted;
    ///
    /// let thought = Scripted::ok("4").with_reasoning("Two and two make four.");
    /// ```
    pub fn with_reasoning(mut self, reasoning: impl Into<String>) -> Self {
        self.reasoning = Some(reasoning.into());
        self
    }

    /// The call reports `usage` (as a server's usage chunk would), just before it ends: an answer, a
    /// tool call, an error event or an error raised while streaming alike.
    pub fn with_usage(mut self, usage: Usage) -> Self {
        self.usage = Some(usage);
        self
    }

    /// The call's response states `limits` (as a server's rate-limit headers would): its first
    /// event, after the latency ([`StreamEvent::RateLimits`]), for an answer and a failure alike.
    pub fn with_rate_limits(mut self, limits: RateLimits) -> Self {
        self.limits = Some(Box::new(limits));
        self
    }

    /// The failure carries the server's requested wait (as a `Retry-After` header would).
    pub fn with_retry_after(self, wait: Duration) -> Self {
        self.map_error(|error| error.with_retry_after(wait))
    }

    /// The failure carries an HTTP status (an error event keeps its text as it is).
    pub fn with_status(self, status: u16) -> Self {
        self.map_error(|error| error.with_status(status))
    }

    /// The failure carries the server's `x-should-retry`.
    pub fn with_should_retry(self, should_retry: bool) -> Self {
        self.map_error(|error| error.with_should_retry(should_retry))
    }

    /// The failure carries a provider error code, e.g. `"insufficient_quota"`.
    pub fn with_code(self, code: impl Into<String>) -> Self {
        let code = code.into();
        self.map_error(|error| error.with_code(code))
    }

    fn new(outcome: Outcome) -> Self {
        Self {
            outcome,
            latency: Duration::ZERO,
            usage: None,
            heartbeats: (0, Duration::ZERO),
            limits: None,
            streamed: Duration::ZERO,
            chunks: 1,
            reasoning: None,
        }
    }

    fn map_error(mut self, change: impl FnOnce(ModelError) -> ModelError) -> Self {
        self.outcome = match self.outcome {
            Outcome::Raise(error) => Outcome::Raise(change(error)),
            Outcome::ErrorEvent { message, error } => {
                let typed = error.unwrap_or_else(|| ModelError::parse(&message));
                Outcome::ErrorEvent { message, error: Some(change(typed)) }
            }
            other => other,
        };
        self
    }

    /// The events of this step; tool calls take their ids from `next_call_id`.
    fn events(self, next_call_id: &AtomicU64) -> Vec<Result<StreamEvent, ModelError>> {
        let mut events = self.outcome.events(next_call_id, self.chunks);
        if let Some(usage) = self.usage {
            // Before the last event: a hang has none, and then no usage either.
            if let Some(last) = events.len().checked_sub(1) {
                events.insert(last, Ok(StreamEvent::Usage(usage)));
            }
        }
        if let Some(reasoning) = self.reasoning {
            events.insert(0, Ok(StreamEvent::ReasoningDelta(reasoning)));
        }
        if let Some(limits) = self.limits {
            events.insert(0, Ok(StreamEvent::RateLimits(limits)));
        }
        events
    }

    /// A hang's events: its reasoning, if any, then silence.
    fn hang_stream(self) -> EventStream<'static> {
        let reasoning = self.reasoning.map(|reasoning| Ok(StreamEvent::ReasoningDelta(reasoning)));
        Box::pin(stream::iter(reasoning).chain(stream::pending()))
    }
}

impl Outcome {
    fn events(self, next_call_id: &AtomicU64, chunks: u32) -> Vec<Result<StreamEvent, ModelError>> {
        let text_then = |text: String, last: Result<StreamEvent, ModelError>| {
            let mut events = deltas(&text, chunks);
            events.push(last);
            events
        };
        match self {
            Outcome::Ok(text) => text_then(text, Ok(StreamEvent::Done { stop_reason: StopReason::Stop })),
            Outcome::Truncated(text) => text_then(text, Ok(StreamEvent::Done { stop_reason: StopReason::Length })),
            Outcome::Cut(text) => text_then(
                text,
                Err(ModelError::transport(TransportKind::StreamDropped, "the stream dropped mid-answer")),
            ),
            Outcome::ToolCalls(calls) => {
                let mut events = Vec::with_capacity(calls.len() * 3 + 1);
                for (index, (name, arguments)) in (0u32..).zip(calls) {
                    let id = format!("call_{}", next_call_id.fetch_add(1, Ordering::Relaxed) + 1);
                    events.push(Ok(StreamEvent::ToolCallStart { index, id, name }));
                    let middle = arguments.char_indices().nth(arguments.chars().count() / 2).map_or(0, |(at, _)| at);
                    let (head, tail) = arguments.split_at(middle);
                    for fragment in [head, tail].into_iter().filter(|fragment| !fragment.is_empty()) {
                        events.push(Ok(StreamEvent::ToolCallDelta { index, arguments: fragment.to_owned() }));
                    }
                }
                events.push(Ok(StreamEvent::Done { stop_reason: StopReason::ToolUse }));
                events
            }
            Outcome::ErrorEvent { message, error } => vec![Ok(StreamEvent::Error { message, error })],
            Outcome::Raise(error) => vec![Err(error)],
            Outcome::Hang => Vec::new(),
        }
    }
}

/// `text` as `chunks` text deltas of about equal size, cut at character boundaries (none for no
/// text).
fn deltas(text: &str, chunks: u32) -> Vec<Result<StreamEvent, ModelError>> {
    let characters = text.chars().count();
    let chunks = (chunks as usize).clamp(1, characters.max(1));
    let mut bounds: Vec<usize> = text.char_indices().map(|(at, _)| at).collect();
    bounds.push(text.len());
    (0..chunks)
        .map(|chunk| (bounds[chunk * characters / chunks], bounds[(chunk + 1) * characters / chunks]))
        .filter(|(start, end)| end > start)
        .map(|(start, end)| Ok(StreamEvent::TextDelta(text[start..end].to_owned())))
        .collect()
}

/// What a [`ScriptedProvider`] was asked in one call.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RecordedRequest {
    /// The system instruction sent.
    pub system: Option<String>,
    /// The conversation sent.
    pub messages: Vec<Message>,
    /// The call's timeout.
    pub timeout: Option<Duration>,
    /// The agent function that made the call.
    pub function: Option<String>,
    /// The names of the tools offered, in order.
    pub tools: Vec<String>,
    /// The shape the answer was asked to have, if any.
    pub schema: Option<ResponseSchema>,
    /// The most output tokens the call was allowed (the exec's spend limits), if bounded.
    pub max_tokens: Option<u64>,
}

/// A provider that plays a list of [`Scripted`]s, one per call, and records every request.
///
/// Use it to test agent functions without a network. Clones share the script and the record. When
/// the script runs out, the `otherwise` step answers (set it with [`ScriptedProvider::otherwise`]);
/// without one, the call fails with a programming error that says the script ran out.
///
/// # Examples
///
/// ```
/// use agentic_runtime::{Runtime, Scripted, ScriptedProvider};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let provider = ScriptedProvider::new([Scripted::error("503 Service Unavailable"), Scripted::ok("hello")]);
/// let runtime = Runtime::new(provider.clone());
/// let reply = runtime.exec("say hello").await.unwrap();
/// assert_eq!(reply.text(), "hello");
/// assert_eq!(provider.calls(), 2);
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct ScriptedProvider {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    /// The model it says it is (`Provider::model`), so that two scripted targets of one runtime
    /// have names of their own (`scripted/<model>`).
    model: Option<String>,
    /// The context window it declares (`Provider::context_window`).
    context_window: Option<u64>,
    /// The answer's token limit it declares (`Provider::max_output_tokens`).
    max_output_tokens: Option<u64>,
    script: Mutex<Script>,
    requests: Mutex<Vec<RecordedRequest>>,
    /// How many tool calls have been played (the last id is `call_N`).
    tool_calls: AtomicU64,
}

#[derive(Debug, Clone)]
struct Script {
    steps: VecDeque<Scripted>,
    otherwise: Option<Scripted>,
    played: usize,
}

impl ScriptedProvider {
    /// A provider that answers with `steps` in order.
    pub fn new(steps: impl IntoIterator<Item = Scripted>) -> Self {
        let script = Script { steps: steps.into_iter().collect(), otherwise: None, played: 0 };
        Self {
            shared: Arc::new(Shared {
                model: None,
                context_window: None,
                max_output_tokens: None,
                script: Mutex::new(script),
                requests: Mutex::new(Vec::new()),
                tool_calls: AtomicU64::new(0),
            }),
        }
    }

    /// What answers every call after the script ran out (as the chaos server's `Scenario::otherwise`).
    ///
    /// # Default
    /// An error: a call past the script is a programming error of the test.
    pub fn otherwise(self, step: Scripted) -> Self {
        lock(&self.shared.script).otherwise = Some(step);
        self
    }

    /// The model this provider says it is: its target is named `scripted/<model>` and its retry
    /// budget, cooldowns and breaker are its own (its scope is `scripted/<model>` too). Set it before
    /// cloning the provider.
    ///
    /// # Default
    /// None: the name and scope are `scripted`.
    pub fn with_model(self, model: impl Into<String>) -> Self {
        self.with_shared(|shared| shared.model = Some(model.into()))
    }

    /// The context window this provider declares, in tokens ([`Provider::context_window`]). Set it
    /// before cloning the provider.
    pub fn with_context_window(self, tokens: u64) -> Self {
        self.with_shared(|shared| shared.context_window = Some(tokens))
    }

    /// The token limit this provider declares for an answer ([`Provider::max_output_tokens`]):
    /// what a pacer reserves for a call's output. Set it before cloning the provider.
    ///
    /// # Default
    /// None: no limit declared.
    pub fn with_max_output_tokens(self, tokens: u64) -> Self {
        self.with_shared(|shared| shared.max_output_tokens = Some(tokens))
    }

    /// Changes a setting of a provider no clone of which was made yet (a clone made before keeps
    /// the settings it had).
    fn with_shared(self, change: impl FnOnce(&mut Shared)) -> Self {
        let mut shared = Arc::try_unwrap(self.shared).unwrap_or_else(|shared| Shared {
            model: shared.model.clone(),
            context_window: shared.context_window,
            max_output_tokens: shared.max_output_tokens,
            script: Mutex::new(lock(&shared.script).clone()),
            requests: Mutex::new(lock(&shared.requests).clone()),
            tool_calls: AtomicU64::new(shared.tool_calls.load(Ordering::Relaxed)),
        });
        change(&mut shared);
        Self { shared: Arc::new(shared) }
    }

    /// Appends steps to the script.
    pub fn push(&self, steps: impl IntoIterator<Item = Scripted>) {
        lock(&self.shared.script).steps.extend(steps);
    }

    /// How many calls were made.
    pub fn calls(&self) -> usize {
        lock(&self.shared.requests).len()
    }

    /// Every request, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.requests).clone()
    }

    fn next_step(&self) -> Result<Scripted, ModelError> {
        let mut script = lock(&self.shared.script);
        script.played += 1;
        match script.steps.pop_front().or_else(|| script.otherwise.clone()) {
            Some(step) => Ok(step),
            None => Err(ModelError::programming(
                "ScriptExhausted",
                format!(
                    "ScriptedProvider has no step for call {}; add steps or set one with `otherwise`",
                    script.played
                ),
            )),
        }
    }
}

impl Provider for ScriptedProvider {
    fn name(&self) -> &str {
        "scripted"
    }

    fn model(&self) -> Option<&str> {
        self.shared.model.as_deref()
    }

    fn scope(&self) -> String {
        match &self.shared.model {
            Some(model) => format!("scripted/{model}"),
            None => "scripted".to_owned(),
        }
    }

    fn context_window(&self) -> Option<u64> {
        self.shared.context_window
    }

    fn max_output_tokens(&self) -> Option<u64> {
        self.shared.max_output_tokens
    }

    fn stream<'a>(&'a self, request: &'a Request<'a>) -> EventStream<'a> {
        lock(&self.shared.requests).push(RecordedRequest {
            system: request.system.map(str::to_owned),
            messages: request.messages.to_vec(),
            timeout: request.timeout,
            function: request.function.map(str::to_owned),
            tools: request.tools.iter().map(|tool| tool.name.clone()).collect(),
            schema: request.schema.cloned(),
            max_tokens: request.max_tokens,
        });
        let step = match self.next_step() {
            Ok(step) => step,
            Err(error) => return Box::pin(stream::iter([Err(error)])),
        };
        let latency = step.latency;
        let (count, every) = step.heartbeats;
        if count > 0 {
            return Box::pin(heartbeats(count, latency, every).chain(outcome(step, &self.shared.tool_calls)));
        }
        if step.outcome == Outcome::Hang {
            return step.hang_stream();
        }
        let streamed = step.streamed;
        let mut events = step.events(&self.shared.tool_calls);
        if !streamed.is_zero() {
            let last = events.pop();
            let first = stream::once(async move {
                tokio::time::sleep(latency).await;
                stream::iter(events)
            });
            let last = stream::once(async move {
                tokio::time::sleep(streamed).await;
                stream::iter(last)
            });
            return Box::pin(first.flatten().chain(last.flatten()));
        }
        let events = stream::iter(events);
        if latency.is_zero() {
            return Box::pin(events);
        }
        Box::pin(
            stream::once(async move {
                tokio::time::sleep(latency).await;
                events
            })
            .flatten(),
        )
    }
}

/// `count` heartbeats, the first after `first`, each next one `every` later.
fn heartbeats(
    count: u32,
    first: Duration,
    every: Duration,
) -> impl futures_core::Stream<Item = Result<StreamEvent, ModelError>> + Send {
    stream::unfold(0, move |sent| async move {
        if sent == count {
            return None;
        }
        let wait = if sent == 0 { first } else { every };
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
        Some((Ok(StreamEvent::Heartbeat), sent + 1))
    })
}

/// The events of `step`'s outcome, played at once; a hang's never end.
fn outcome(step: Scripted, next_call_id: &AtomicU64) -> EventStream<'static> {
    if step.outcome == Outcome::Hang {
        return step.hang_stream();
    }
    Box::pin(stream::iter(step.events(next_call_id)))
}

/// A poisoned lock only means another test thread panicked; the record is still usable.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::message::ContentBlock;
    use crate::tool::ToolSpec;

    #[test]
    fn the_declared_output_limit_is_none_until_set_and_kept_by_clones() {
        assert_eq!(ScriptedProvider::new([]).max_output_tokens(), None);
        let provider = ScriptedProvider::new([]).with_model("m").with_max_output_tokens(512);
        let clone = provider.clone().with_context_window(8_192);
        assert_eq!((provider.max_output_tokens(), clone.max_output_tokens()), (Some(512), Some(512)));
    }

    #[tokio::test]
    async fn tool_call_steps_stream_calls_with_unique_ids() {
        let provider = ScriptedProvider::new([
            Scripted::tool_calls([("get_weather", json!({"city": "Paris"})), ("get_time", json!({}))]),
            Scripted::tool_call("get_weather", json!({"city": "Rome"})),
            Scripted::tool_call_raw("get_weather", "{\"city\": "),
        ]);
        let history = [Message::user("hi")];
        let tools = [ToolSpec::new("get_weather", "", serde_json::Value::Null)];
        let mut request = Request::new(&history);
        request.tools = &tools;
        let first = crate::retry::call::run(&provider, &request, None).await.unwrap();
        assert_eq!(first.stop_reason, StopReason::ToolUse);
        assert_eq!(
            first.content,
            [
                ContentBlock::ToolUse {
                    id: "call_1".into(),
                    name: "get_weather".into(),
                    input: json!({"city": "Paris"})
                },
                ContentBlock::ToolUse { id: "call_2".into(), name: "get_time".into(), input: json!({}) },
            ]
        );
        let second = crate::retry::call::run(&provider, &Request::new(&history), None).await.unwrap();
        assert!(matches!(&second.content[0], ContentBlock::ToolUse { id, .. } if id == "call_3"));
        let third = crate::retry::call::run(&provider, &Request::new(&history), None).await.unwrap();
        assert!(
            matches!(&third.content[0], ContentBlock::ToolUse { input, .. } if *input == json!("{\"city\": ")),
            "{third:?}"
        );
        let requests = provider.requests();
        assert_eq!(requests[0].tools, ["get_weather"]);
        assert!(requests[1].tools.is_empty());
    }

    /// The reasoning comes before the outcome (after the rate limits), never in the answer; a hang
    /// shows it and falls silent.
    #[tokio::test(start_paused = true)]
    async fn reasoning_comes_first_and_is_never_the_answer() {
        let provider = ScriptedProvider::new([
            Scripted::ok("4").with_reasoning("Two and two.").with_rate_limits(RateLimits::default()),
            Scripted::hang().with_reasoning("Hmm."),
        ]);
        let history = [Message::user("2+2?")];
        let request = Request::new(&history);
        let events: Vec<_> = provider.stream(&request).collect().await;
        assert_eq!(
            events,
            [
                Ok(StreamEvent::RateLimits(Box::default())),
                Ok(StreamEvent::ReasoningDelta("Two and two.".into())),
                Ok(StreamEvent::TextDelta("4".into())),
                Ok(StreamEvent::Done { stop_reason: StopReason::Stop }),
            ]
        );
        let mut hang = provider.stream(&request);
        assert_eq!(hang.next().await, Some(Ok(StreamEvent::ReasoningDelta("Hmm.".into()))));
        let silent = tokio::time::timeout(Duration::from_secs(3600), hang.next()).await;
        assert!(silent.is_err(), "a hang stays silent after its reasoning");
        let reply = crate::retry::call::run(
            &ScriptedProvider::new([Scripted::ok("4").with_reasoning("Two and two.")]),
            &request,
            None,
        )
        .await
        .unwrap();
        assert_eq!(reply.content, [ContentBlock::Text { text: "4".into() }]);
    }
}
