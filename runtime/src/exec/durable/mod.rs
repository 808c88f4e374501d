//! Durable runs: every model call and every tool call of the execs inside a [`scope`] is a step of
//! a durable engine's journal, so that a run whose process died goes on, in the next process, from
//! the first step that did not complete, and no step that completed is paid for or run twice
//! (docs/design.md §24).
//!
//! The engine is behind [`StepLog`]: `agentic-restate` implements it on Restate's journal, and
//! [`MemoryLog`] in memory (for tests: a "crash" is a new scope on the records so far). What a
//! step is, and what it records:
//!
//! - **A model step** is one attempt of a model turn through layer 1: the call and its in-session
//!   retries, as without a journal. It records the final message (the answer, the tool calls or
//!   the typed failure), the exec's calls, tokens and spend after it, its target and how long it
//!   took. Replayed, it makes no call: the exec counts its calls against `max_calls`, its time
//!   against the deadlines and its tokens against the spend limits, and goes on at its target.
//!   A marker that the call starts comes first: a process that dies inside the call leaves a marker
//!   that no record follows, and the next one counts that call against `max_calls` before it makes
//!   it again (only where a retry would be allowed, so a call lost at every restart stops at the cap).
//! - **A tool step** is one tool call: its result. Replayed, the tool does not run. A durable tool
//!   turn runs its calls one at a time, in the model's order, so that every replay journals them in
//!   the same order. A tool of [`Delivery::AtMostOnce`](crate::tool::Delivery) (the default) first
//!   records that it starts: if its process dies before its result is recorded, the next process
//!   does not run it again and the model gets an error result saying its outcome is unknown.
//! - **A compaction** of the conversation after a context overflow is a step: the shorter
//!   conversation (or why the compactor made none), and the exec's calls, tokens and spend after it
//!   (a compactor may call the model, as [`Summarize`](crate::compact::Summarize) does). Replayed,
//!   the compactor does not run: its calls are not paid again, and the next model step is sent the
//!   conversation it was sent.
//! - **Layer 2's wait** between two attempts (its backoff, or the server's Retry-After) is a step:
//!   a durable timer where the engine has one ([`StepLog::sleep`]). A replayed wait that ended
//!   returns at once; its time counts against the deadlines. A durable exec's jitter is drawn from
//!   its run id, so a replay draws the waits it drew.
//!
//! Each record carries a fingerprint of what the step was asked (a model step: the system
//! instruction, the conversation and the tools' names; a tool step: the tool, its arguments and its
//! idempotency key). A replayed step whose request differs ends the exec with
//! [`ExecErrorKind::ReplayMismatch`](crate::ExecErrorKind::ReplayMismatch), naming the step.
//!
//! The retry layers stay the runtime's: a step's failure is recorded as the failure it is, and the
//! engine is never asked to retry it (the double-retry rule, docs/design.md §24).

pub(crate) mod compaction_step;
pub(crate) mod model_step;
pub(crate) mod tool_steps;

pub use crate::durable::log::{Begun, Step, StepFuture, StepLog, StepLogError, StepSink};
pub use crate::durable::memory::MemoryLog;
pub use crate::durable::scope;
