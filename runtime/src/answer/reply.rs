//! The answer of one successful `exec`, with what it cost.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::decision::Decision;
use crate::message::StopReason;
use crate::message::usage::{Usage, UsageTotals};

/// The answer of one `exec`: its text, and how many calls, attempts and how much time it took.
///
/// Displays as its text; `AsRef<str>` gives the text too.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    text: String,
    stop_reason: StopReason,
    calls: u32,
    attempts: u32,
    elapsed: Duration,
    iterations: u32,
    decisions: Vec<Decision>,
    /// Boxed, as the retry state keeps it: a reply is moved through every layer on the way out.
    usage: Option<Box<UsageTotals>>,
    /// The target that answered, for a runtime with fallbacks.
    target: Option<Arc<String>>,
    exec_id: u64,
}

impl Reply {
    #[inline]
    pub(crate) fn new(text: String, stop_reason: StopReason, calls: u32, attempts: u32, elapsed: Duration) -> Self {
        Self {
            text,
            stop_reason,
            calls,
            attempts,
            elapsed,
            iterations: 0,
            decisions: Vec::new(),
            usage: None,
            target: None,
            exec_id: 0,
        }
    }

    /// With the exec's number in the process.
    #[inline]
    pub(crate) fn with_exec_id(mut self, exec_id: u64) -> Self {
        self.exec_id = exec_id;
        self
    }

    /// The exec's number in this process, as its decisions' [`Decision::exec_id`]: tells the
    /// decisions of concurrent execs apart when one observer hears them all.
    pub fn exec_id(&self) -> u64 {
        self.exec_id
    }

    /// With the target that answered (a runtime with fallbacks).
    pub(crate) fn with_target(mut self, target: Arc<String>) -> Self {
        self.target = Some(target);
        self
    }

    /// The target that answered, `"<provider>/<model>"` (as [`Runtime::targets`](crate::Runtime::targets)
    /// names it), for a runtime with fallbacks (`RuntimeBuilder::with_fallback`); `None` for a runtime with
    /// one provider, which is the one that answered.
    pub fn target(&self) -> Option<&str> {
        self.target.as_deref().map(String::as_str)
    }

    #[inline]
    pub(crate) fn with_usage(mut self, usage: Option<Box<UsageTotals>>) -> Self {
        self.usage = usage;
        self
    }

    /// The token counts, taken back (for the next attempt, when the validator rejected the reply).
    pub(crate) fn take_usage(&mut self) -> Option<Box<UsageTotals>> {
        self.usage.take()
    }

    /// The tokens of the call that gave this answer, when the server reported them.
    pub fn usage(&self) -> Option<Usage> {
        self.usage.as_ref().and_then(|totals| totals.answer)
    }

    /// The tokens of every call of the exec that reported usage: failed calls, rejected answers and
    /// tool turns included.
    pub fn total_usage(&self) -> Usage {
        self.usage.as_ref().map_or(Usage::ZERO, |totals| totals.total)
    }

    /// What the exec spent against its spend limits (tokens, tool calls, dollars), failed calls
    /// included; `None` for an exec without limits
    /// ([`UsageLimits`](crate::spend::UsageLimits)).
    pub fn spent(&self) -> Option<crate::spend::Spent> {
        self.usage.as_ref().and_then(|totals| totals.spent)
    }

    /// The tokens spent on attempts that failed: failed calls that reported usage, and answers the
    /// validator rejected. Part of [`Reply::total_usage`].
    pub fn failed_usage(&self) -> Usage {
        self.usage.as_ref().map_or(Usage::ZERO, |totals| totals.failed)
    }

    #[inline]
    pub(crate) fn with_iterations(mut self, iterations: u32) -> Self {
        self.iterations = iterations;
        self
    }

    /// Tool turns the model took before its final answer (0 without tools).
    pub fn iterations(&self) -> u32 {
        self.iterations
    }

    /// Takes `decisions`, leaving the reply's own (empty) list in their place: swapped, so that
    /// the empty list is dropped once, with the run, not here too. Nothing to do without decisions
    /// (the success path): the swap's loads would wait on the reply's list, just written.
    #[inline]
    pub(crate) fn take_decisions(&mut self, decisions: &mut Vec<Decision>) {
        if !decisions.is_empty() {
            std::mem::swap(&mut self.decisions, decisions);
        }
    }

    /// The answer's text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The answer's text, moved out.
    pub fn into_text(self) -> String {
        self.text
    }

    /// Why the model stopped (`Stop`, or `Length` when the answer hit the token limit).
    pub fn stop_reason(&self) -> StopReason {
        self.stop_reason
    }

    /// Model calls made across both layers, the successful one included.
    pub fn calls(&self) -> u32 {
        self.calls
    }

    /// Exec attempts made (layer 2) across every model turn, the successful one included.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// Time from the start of the exec to the answer. The exec's clock is first read when its first
    /// call first waits (docs/design.md §7): an exec whose calls all finish without waiting (an
    /// in-memory provider) reads no clock and reports zero.
    pub fn elapsed(&self) -> Duration {
        self.elapsed
    }

    /// What the layers decided about each failure on the way (empty when the first call succeeded).
    pub fn decisions(&self) -> &[Decision] {
        &self.decisions
    }
}

impl fmt::Display for Reply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl AsRef<str> for Reply {
    fn as_ref(&self) -> &str {
        &self.text
    }
}

/// A reply as it serializes (serde): its facts, for a durable run's journal, a handler's answer or a
/// log (docs/design.md §24). The decisions are not among them: they are what this process saw of
/// the exec, and a reply read back has none.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(rename = "Reply")]
struct ReplyFacts {
    text: String,
    stop_reason: StopReason,
    calls: u32,
    attempts: u32,
    elapsed_ms: u64,
    #[serde(default)]
    iterations: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    usage: Option<UsageTotals>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    target: Option<String>,
    #[serde(default)]
    exec_id: u64,
}

impl serde::Serialize for Reply {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        ReplyFacts {
            text: self.text.clone(),
            stop_reason: self.stop_reason,
            calls: self.calls,
            attempts: self.attempts,
            elapsed_ms: crate::policy::rules::millis(self.elapsed),
            iterations: self.iterations,
            usage: self.usage.as_deref().copied(),
            target: self.target.as_deref().cloned(),
            exec_id: self.exec_id,
        }
        .serialize(serializer)
    }
}

impl<'de> serde::Deserialize<'de> for Reply {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let facts = ReplyFacts::deserialize(deserializer)?;
        Ok(Self {
            text: facts.text,
            stop_reason: facts.stop_reason,
            calls: facts.calls,
            attempts: facts.attempts,
            elapsed: Duration::from_millis(facts.elapsed_ms),
            iterations: facts.iterations,
            decisions: Vec::new(),
            usage: facts.usage.map(Box::new),
            target: facts.target.map(Arc::new),
            exec_id: facts.exec_id,
        })
    }
}
