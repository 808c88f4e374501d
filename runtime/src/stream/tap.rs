//! The tap an exec writes its stream to: a bounded queue the [`ExecStream`] drains, and the rules
//! of the commit point (docs/design.md §22).
//!
//! The exec runs inside the stream's own `poll_next`, never on a task of its own: it makes progress
//! only while the caller asks for events, so a slow caller slows the read of the provider's stream
//! (no unbounded buffer), and dropping the stream drops the exec, cancelling the call at once.
//!
//! [`ExecStream`]: crate::exec::ExecStream

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard};
use std::task::{Poll, ready};

use futures_core::Stream;
use futures_util::stream::poll_fn;

use crate::decision::{Decision, Verdict, Why};
use crate::error::ModelError;
use crate::provider::{EventStream, StreamEvent};
use crate::stream::event::{ExecEvent, StreamMode};
use crate::tool::ToolOutcome;

/// The most deltas waiting for the caller: a delta past them waits (and so the provider's stream
/// is not read) until the caller takes one. Control events (decisions, tool calls and results,
/// rewinds) are never held back: each is bounded by the exec's own caps (`max_calls`,
/// `max_iterations`, the toolbox's calls per turn).
pub(crate) const MAX_QUEUED_DELTAS: usize = 32;

/// The most reasoning a buffered turn holds, in bytes: a turn's text is bounded by the call's
/// `max_answer_bytes`, its reasoning (not part of the answer) by this; past it, reasoning is not
/// kept for the caller.
const MAX_HELD_REASONING: usize = 1 << 20;

/// One item of a call's event stream.
type EventItem = Result<StreamEvent, ModelError>;

/// The exec's side of a stream.
#[derive(Debug)]
pub(crate) struct Tap {
    mode: StreamMode,
    state: Mutex<TapState>,
}

#[derive(Debug, Default)]
struct TapState {
    queue: VecDeque<ExecEvent>,
    /// Deltas in the queue.
    deltas: usize,
    /// Something of the current turn reached the queue (replay and fail modes).
    shown: bool,
    /// The current call's text and reasoning, held until its turn is accepted (buffer mode).
    held_text: String,
    held_reasoning: String,
}

impl Tap {
    pub(crate) fn new(mode: StreamMode) -> Self {
        Self { mode, state: Mutex::new(TapState::default()) }
    }

    fn state(&self) -> MutexGuard<'_, TapState> {
        // A panic while holding the lock leaves nothing half-written that matters: the queue is
        // only pushed and popped.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The next event for the caller.
    pub(crate) fn pop(&self) -> Option<ExecEvent> {
        let mut state = self.state();
        let event = state.queue.pop_front()?;
        if matches!(event, ExecEvent::TextDelta(_) | ExecEvent::ReasoningDelta(_)) {
            state.deltas -= 1;
        }
        Some(event)
    }

    /// Whether the caller has taken every event.
    pub(crate) fn is_empty(&self) -> bool {
        self.state().queue.is_empty()
    }

    /// Puts `event` last, whatever the queue holds (control events, and the exec's end).
    pub(crate) fn push(&self, event: ExecEvent) {
        self.state().queue.push_back(event);
    }

    /// A call's event stream whose text and reasoning the caller sees as the call reads them: a
    /// copy of each delta is held (buffer mode) or queued, and while the queue is full the call's
    /// stream is not read. (Pending then with no waker: the exec's future is polled again by the
    /// [`ExecStream`] once the caller has emptied the queue.)
    ///
    /// [`ExecStream`]: crate::exec::ExecStream
    pub(crate) fn tapped<'a>(&'a self, mut events: EventStream<'a>) -> impl Stream<Item = EventItem> + Send + 'a {
        poll_fn(move |cx| {
            if self.mode != StreamMode::Buffer && self.state().deltas >= MAX_QUEUED_DELTAS {
                return Poll::Pending;
            }
            let item = ready!(events.as_mut().poll_next(cx));
            match &item {
                Some(Ok(StreamEvent::TextDelta(delta))) => self.delta(delta, false),
                Some(Ok(StreamEvent::ReasoningDelta(delta))) => self.delta(delta, true),
                _ => {}
            }
            Poll::Ready(item)
        })
    }

    /// The text of a call replayed from a durable run's journal (docs/design.md §24), as one
    /// delta: the caller sees the answer as if the call had been read now.
    pub(crate) fn replayed(&self, text: &str) {
        self.delta(text, false);
    }

    /// More text (`reasoning` false) or reasoning of the current call: held (buffer mode) or
    /// queued.
    fn delta(&self, delta: &str, reasoning: bool) {
        if delta.is_empty() {
            return;
        }
        let mut state = self.state();
        if self.mode == StreamMode::Buffer {
            if !reasoning {
                state.held_text.push_str(delta);
            } else if state.held_reasoning.len() + delta.len() <= MAX_HELD_REASONING {
                state.held_reasoning.push_str(delta);
            }
            return;
        }
        let event = if reasoning {
            ExecEvent::ReasoningDelta(delta.to_owned())
        } else {
            ExecEvent::TextDelta(delta.to_owned())
        };
        state.queue.push_back(event);
        state.deltas += 1;
        state.shown = true;
    }

    /// A decision of either layer: queued, and when it makes another call after a call whose
    /// text or reasoning was shown, followed by the rewind that voids it. A buffered call's held
    /// deltas are dropped: nothing of them was shown.
    pub(crate) fn decision(&self, decision: &Decision) {
        let mut state = self.state();
        state.queue.push_back(ExecEvent::Decision(decision.clone()));
        if !matches!(decision.verdict(), Verdict::Retry | Verdict::Fallback | Verdict::Compacted) {
            return;
        }
        state.held_text.clear();
        state.held_reasoning.clear();
        if !std::mem::take(&mut state.shown) {
            return;
        }
        let target = match decision.reason() {
            Why::Fallback(fallback) => Some(fallback.to.clone()),
            _ => decision.target().map(str::to_owned),
        };
        state.queue.push_back(ExecEvent::Rewind {
            attempt: decision.attempt(),
            call: decision.call(),
            error: decision.error().to_owned(),
            wait: decision.delay(),
            target,
        });
    }

    /// The current call's turn was accepted (an answer that passed, or a call for tools): what it
    /// held is shown, and the next turn starts with nothing shown.
    pub(crate) fn accept(&self) {
        let mut state = self.state();
        state.shown = false;
        if self.mode != StreamMode::Buffer {
            return;
        }
        let reasoning = std::mem::take(&mut state.held_reasoning);
        let text = std::mem::take(&mut state.held_text);
        // Held deltas are bounded by the call's answer bound, not by the queue's room.
        if !reasoning.is_empty() {
            state.queue.push_back(ExecEvent::ReasoningDelta(reasoning));
            state.deltas += 1;
        }
        if !text.is_empty() {
            state.queue.push_back(ExecEvent::TextDelta(text));
            state.deltas += 1;
        }
    }

    /// Whether the exec may make no other call of this turn: the mode is [`StreamMode::Fail`] and
    /// something of the turn was shown.
    pub(crate) fn committed(&self) -> bool {
        self.mode == StreamMode::Fail && self.state().shown
    }

    /// A tool call the model asked for, before it runs.
    pub(crate) fn tool_call(&self, id: &str, name: &str, arguments: &serde_json::Value) {
        self.push(ExecEvent::ToolCall { id: id.to_owned(), name: name.to_owned(), arguments: arguments.clone() });
    }

    /// A tool's outcome, as it returns.
    pub(crate) fn tool_result(&self, outcome: &ToolOutcome) {
        self.push(ExecEvent::ToolResult {
            id: outcome.call_id.clone(),
            name: outcome.tool.clone(),
            content: outcome.content.clone(),
            is_error: outcome.is_error,
        });
    }
}
