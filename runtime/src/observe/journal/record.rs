//! One journal line: a final failure or a retry, as data.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::answer::exec_error::ExecError;
use crate::decision::{Decision, Verdict};
use crate::message::usage::Usage;

/// Whether a record is a final failure or a retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Event {
    /// A call that gave up: the error its caller got.
    Failure,
    /// A failure that was retried (written only by a journal [`with_retries`](super::Journal::with_retries)).
    Retry,
}

impl Event {
    /// `"failure"` or `"retry"`.
    pub const fn name(self) -> &'static str {
        match self {
            Event::Failure => "failure",
            Event::Retry => "retry",
        }
    }
}

impl std::fmt::Display for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One decision about one failed model call, as the journal keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AttemptRecord {
    /// The layer that decided: `"session"` or `"exec"`.
    pub layer: String,
    /// The exec attempt (from 1) the failure belongs to.
    pub attempt: u32,
    /// The model call (from 1, across both layers) that failed.
    pub call: u32,
    /// The failure, as `"<Kind>: <text>"`.
    pub error: String,
    /// What the layer did: `"retry"`, `"give_up"`, `"fail_permanently"`, `"exhausted"`, ... (see
    /// [`Verdict::name`]).
    pub verdict: String,
    /// Why: the rule that decided.
    #[serde(default)]
    pub reason: String,
    /// The sleep before the next call, in milliseconds, when the verdict is `"retry"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
}

impl From<&Decision> for AttemptRecord {
    fn from(decision: &Decision) -> Self {
        Self {
            layer: decision.layer.name().to_owned(),
            attempt: decision.attempt,
            call: decision.call,
            error: decision.error.clone(),
            verdict: decision.verdict.name().to_owned(),
            reason: decision.reason.to_string(),
            delay_ms: decision.delay.map(duration_ms),
        }
    }
}

/// One line of the failure journal: a call that gave up (or, optionally, a retry), with every
/// decision that led there.
///
/// It is written as one JSON object on one line; the fields, in order:
///
/// | field | type | meaning |
/// |---|---|---|
/// | `time_ms` | integer | when it was recorded, in milliseconds since the Unix epoch (UTC) |
/// | `event` | `"failure"` or `"retry"` | a final failure, or a retried failure |
/// | `op` | string | what failed: `"exec"` for [`Runtime::exec`](crate::Runtime::exec) |
/// | `name` | string | the agent function's name, or `"exec"` when there is none |
/// | `kind` | string | why it gave up: [`ExecErrorKind::name`](crate::ExecErrorKind::name), or `"retry"` |
/// | `attempts` | array | one [`AttemptRecord`] per decision: error, verdict, reason, `delay_ms` |
/// | `last_error` | string | the last failure, as `"<Kind>: <text>"` |
/// | `status` | integer, optional | the HTTP status of the last failure, from its typed error |
/// | `code` | string, optional | the provider's error code of the last failure |
/// | `stopped_by` | string, optional | for kinds `refused` and `usage_limit`: the cap or the spend limit that stopped the call |
/// | `calls` | integer | model calls made |
/// | `elapsed_ms` | integer | time from the start of the call to the failure |
/// | `usage` | object, optional | the tokens spent: a failure's, every call of the exec; a retry's, the failed call's (`input_tokens`, `output_tokens`, and the cache counts when reported) |
/// | `target` | string, optional | for a runtime with fallbacks: the target of the last attempt, `"<provider>/<model>"` (the moves are attempts with verdict `fallback`) |
///
/// Optional fields are left out when empty; a reader ignores fields it does not know, so newer
/// writers can add some.
///
/// # Examples
///
/// ```
/// use agentic_runtime::observe::journal::FailureRecord;
///
/// let mut record = FailureRecord::new("summarize", "exhausted", "RateLimitError: 429 Too Many Requests");
/// record.status = Some(429);
/// let line = serde_json::to_string(&record).unwrap();
/// assert!(line.contains(r#""name":"summarize","kind":"exhausted""#) && line.contains(r#""status":429,"#));
/// assert_eq!(serde_json::from_str::<FailureRecord>(&line).unwrap(), record);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct FailureRecord {
    /// When the record was made, in milliseconds since the Unix epoch (UTC).
    pub time_ms: u64,
    /// A final failure or a retry.
    #[serde(default = "failure")]
    pub event: Event,
    /// What failed: `"exec"` for `Runtime::exec`; other operations name themselves.
    #[serde(default = "exec")]
    pub op: String,
    /// The function's name, or `"exec"` when the exec came from no named function.
    pub name: String,
    /// Why it gave up ([`ExecErrorKind::name`](crate::ExecErrorKind::name)), or `"retry"` for a
    /// retry record. Journals written before kind `refused` had its name say `"budget"`.
    pub kind: String,
    /// Every decision of every layer, in order: each attempt's verdict and delay.
    #[serde(default)]
    pub attempts: Vec<AttemptRecord>,
    /// The last failure, as `"<Kind>: <text>"`.
    pub last_error: String,
    /// The HTTP status of the last failure, when it was an HTTP response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The provider's error code of the last failure, e.g. `"insufficient_quota"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// Which cap stopped the call, for kind `refused`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_by: Option<String>,
    /// Model calls made.
    #[serde(default)]
    pub calls: u32,
    /// Time from the start of the call to the failure, in milliseconds.
    #[serde(default)]
    pub elapsed_ms: u64,
    /// The tokens spent, when the server reported them: for a failure, every call of the exec; for
    /// a retry, the failed call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// For a runtime with fallbacks (`RuntimeBuilder::with_fallback`): the target of the last attempt,
    /// `"<provider>/<model>"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

fn failure() -> Event {
    Event::Failure
}

fn exec() -> String {
    "exec".to_owned()
}

impl FailureRecord {
    /// A final failure of `name` with `kind` and `last_error`, made now, with no attempts, calls or
    /// status (set the public fields for those). For failures of operations other than `exec`, set
    /// [`op`](Self::op) too.
    pub fn new(name: impl Into<String>, kind: impl Into<String>, last_error: impl Into<String>) -> Self {
        Self {
            time_ms: now_ms(),
            event: Event::Failure,
            op: exec(),
            name: name.into(),
            kind: kind.into(),
            attempts: Vec::new(),
            last_error: last_error.into(),
            status: None,
            code: None,
            stopped_by: None,
            calls: 0,
            elapsed_ms: 0,
            usage: None,
            target: None,
        }
    }

    /// The record of a failed `exec`, made now.
    ///
    /// `last_error` is the last attempt's `"<Kind>: <text>"` (for an invalid policy, which made no
    /// attempt, the error's Display); `status` and `code` come from the last attempt's typed error.
    ///
    /// # Examples
    ///
    /// ```
    /// use agentic_runtime::observe::journal::FailureRecord;
    /// use agentic_runtime::{Runtime, Scripted, ScriptedProvider};
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let runtime = Runtime::new(ScriptedProvider::new([Scripted::http(401, "invalid api key")]));
    /// let error = runtime.exec("hello").await.unwrap_err();
    /// let record = FailureRecord::from_exec_error(&error);
    /// assert_eq!((record.name.as_str(), record.kind.as_str()), ("exec", "permanent"));
    /// assert_eq!((record.last_error.as_str(), record.status), ("AuthenticationError: 401 invalid api key", Some(401)));
    /// # }
    /// ```
    pub fn from_exec_error(error: &ExecError) -> Self {
        let model_error = error.model_error();
        let last_error = match (error.attempt_errors().last(), model_error) {
            (Some(text), _) => text.clone(),
            (None, Some(model_error)) => model_error.to_string(),
            (None, None) => error.to_string(),
        };
        Self {
            time_ms: now_ms(),
            event: Event::Failure,
            op: exec(),
            name: error.function().unwrap_or("exec").to_owned(),
            kind: error.kind().name().to_owned(),
            attempts: error.decisions().iter().map(AttemptRecord::from).collect(),
            status: model_error.and_then(|e| e.status()),
            code: model_error.and_then(|e| e.code()).map(str::to_owned),
            stopped_by: error.stopped_by().map(str::to_owned),
            last_error,
            calls: error.calls(),
            elapsed_ms: duration_ms(error.elapsed()),
            usage: Some(error.usage()).filter(|usage| !usage.is_zero()),
            target: error.target().map(str::to_owned),
        }
    }

    /// The record of one retried failure of the function `name` (`None`: `"exec"`), made now: kind
    /// `"retry"`, the decision as its only attempt, its call number as `calls` and its time in the
    /// exec as `elapsed_ms`. A decision has no typed error, so there is no `status` or `code`; a
    /// reader finds the status in the error text (`"RateLimitError: 429 ..."`).
    ///
    /// Meant for decisions whose verdict is [`Verdict::Retry`]; see [`FailureRecord::is_retry`].
    pub fn retry(name: Option<&str>, decision: &Decision) -> Self {
        Self {
            time_ms: now_ms(),
            event: Event::Retry,
            op: exec(),
            name: name.unwrap_or("exec").to_owned(),
            kind: "retry".to_owned(),
            attempts: vec![AttemptRecord::from(decision)],
            last_error: decision.error.clone(),
            status: None,
            code: None,
            stopped_by: None,
            calls: decision.call,
            elapsed_ms: duration_ms(decision.at),
            usage: decision.usage,
            target: None,
        }
    }

    /// Whether `decision` is a retry (the only decisions [`FailureRecord::retry`] is meant for): a
    /// retry of the same target ([`Verdict::Retry`]) or a move to the next ([`Verdict::Fallback`]).
    pub fn is_retry(decision: &Decision) -> bool {
        matches!(decision.verdict, Verdict::Retry | Verdict::Fallback)
    }

    /// The same record, made at `time_ms` (milliseconds since the Unix epoch) instead of now.
    pub fn with_time_ms(mut self, time_ms: u64) -> Self {
        self.time_ms = time_ms;
        self
    }
}

/// Milliseconds since the Unix epoch, now (0 if the clock is before 1970).
pub fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, duration_ms)
}

fn duration_ms(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_optional_fields_read_as_defaults() {
        let record: FailureRecord =
            serde_json::from_str(r#"{"time_ms":5,"name":"f","kind":"exhausted","last_error":"x","future":1}"#).unwrap();
        assert_eq!((record.event, record.op.as_str(), record.calls), (Event::Failure, "exec", 0));
        assert!(record.attempts.is_empty());
    }
}
