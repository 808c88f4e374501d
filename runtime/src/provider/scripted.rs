use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_util::StreamExt as _;
use futures_util::stream;

use super::{EventStream, Provider, Request, StreamEvent};
use crate::error::{ModelError, TransportKind};
use crate::message::{Message, StopReason};

/// One scripted model call: what the [`ScriptedProvider`] answers the next time it is called.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use agentic_runtime::Step;
///
/// let script = [
///     Step::http(429, "Too Many Requests").with_retry_after(Duration::from_secs(1)),
///     Step::error(""),                        // a dropped stream: an empty error message
///     Step::ok("done").with_latency(Duration::from_millis(300)),
/// ];
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    outcome: Outcome,
    latency: Duration,
}

#[derive(Debug, Clone, PartialEq)]
enum Outcome {
    Ok(String),
    ErrorEvent { message: String, error: Option<ModelError> },
    Raise(ModelError),
    Hang,
}

impl Step {
    /// The call succeeds with `text`.
    pub fn ok(text: impl Into<String>) -> Self {
        Self::new(Outcome::Ok(text.into()))
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

    /// The call raises a programming error, e.g. `Step::programming("TypeError", "bad argument")`.
    pub fn programming(kind: &'static str, message: impl Into<String>) -> Self {
        Self::raise(ModelError::programming(kind, message))
    }

    /// The call never answers (only a timeout or the budget ends it).
    pub fn hang() -> Self {
        Self::new(Outcome::Hang)
    }

    /// This step `count` times, e.g. `ScriptedProvider::new(Step::error("overloaded").times(12))`.
    pub fn times(self, count: usize) -> impl Iterator<Item = Step> + Clone {
        std::iter::repeat_n(self, count)
    }

    /// The call takes `latency` before its first event.
    pub fn with_latency(mut self, latency: Duration) -> Self {
        self.latency = latency;
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
        Self { outcome, latency: Duration::ZERO }
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

    fn events(self) -> Vec<Result<StreamEvent, ModelError>> {
        match self.outcome {
            Outcome::Ok(text) => {
                vec![Ok(StreamEvent::TextDelta(text)), Ok(StreamEvent::Done { stop_reason: StopReason::Stop })]
            }
            Outcome::ErrorEvent { message, error } => vec![Ok(StreamEvent::Error { message, error })],
            Outcome::Raise(error) => vec![Err(error)],
            Outcome::Hang => Vec::new(),
        }
    }
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
}

/// A provider that plays a list of [`Step`]s, one per call, and records every request.
///
/// Use it to test agent functions without a network. Clones share the script and the record. When
/// the script runs out, the fallback step answers (set it with [`ScriptedProvider::with_fallback`]);
/// without one, the call fails with a programming error that says the script ran out.
///
/// # Examples
///
/// ```
/// use agentic_runtime::{Runtime, ScriptedProvider, Step};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let provider = ScriptedProvider::new([Step::error("503 Service Unavailable"), Step::ok("hello")]);
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
    script: Mutex<Script>,
    requests: Mutex<Vec<RecordedRequest>>,
}

#[derive(Debug)]
struct Script {
    steps: VecDeque<Step>,
    fallback: Option<Step>,
    played: usize,
}

impl ScriptedProvider {
    /// A provider that answers with `steps` in order.
    pub fn new(steps: impl IntoIterator<Item = Step>) -> Self {
        let script = Script { steps: steps.into_iter().collect(), fallback: None, played: 0 };
        Self { shared: Arc::new(Shared { script: Mutex::new(script), requests: Mutex::new(Vec::new()) }) }
    }

    /// The step that answers every call after the script ran out.
    pub fn with_fallback(self, step: Step) -> Self {
        lock(&self.shared.script).fallback = Some(step);
        self
    }

    /// Appends steps to the script.
    pub fn push(&self, steps: impl IntoIterator<Item = Step>) {
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

    fn next_step(&self) -> Result<Step, ModelError> {
        let mut script = lock(&self.shared.script);
        script.played += 1;
        match script.steps.pop_front().or_else(|| script.fallback.clone()) {
            Some(step) => Ok(step),
            None => Err(ModelError::programming(
                "ScriptExhausted",
                format!(
                    "ScriptedProvider has no step for call {}; add steps or set one with `with_fallback`",
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

    fn stream<'a>(&'a self, request: &'a Request<'a>) -> EventStream<'a> {
        lock(&self.shared.requests).push(RecordedRequest {
            system: request.system.map(str::to_owned),
            messages: request.messages.to_vec(),
            timeout: request.timeout,
            function: request.function.map(str::to_owned),
        });
        let step = match self.next_step() {
            Ok(step) => step,
            Err(error) => return Box::pin(stream::iter([Err(error)])),
        };
        let latency = step.latency;
        if step.outcome == Outcome::Hang {
            return Box::pin(stream::pending());
        }
        let events = stream::iter(step.events());
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

/// A poisoned lock only means another test thread panicked; the record is still usable.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
