//! What `agentic ask --json` prints: the exec's outcome as one JSON object, each decision of
//! either layer as an attempt (`ask --stream --json` prints the same objects as its `decision` and
//! `done` events).

use agentic_runtime::decision::Decision;
use agentic_runtime::message::Usage;
use agentic_runtime::policy::rules::millis;
use agentic_runtime::{ExecError, Reply};
use serde::Serialize;

/// The `--json` line.
#[derive(Serialize)]
pub(crate) struct JsonOutcome<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    answer: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error_kind: Option<&'static str>,
    /// With fallbacks: `"<provider>/<model>"`, the target that answered, or of the last attempt.
    #[serde(skip_serializing_if = "Option::is_none")]
    target: Option<&'a str>,
    calls: u32,
    elapsed_ms: u64,
    usage: Usage,
    attempts: Vec<JsonAttempt<'a>>,
}

/// One decision of either layer, as `--json` prints it in `attempts`.
#[derive(Serialize)]
pub(crate) struct JsonAttempt<'a> {
    layer: &'static str,
    attempt: u32,
    call: u32,
    error: &'a str,
    verdict: &'static str,
    reason: String,
    delay_ms: u64,
}

impl<'a> JsonOutcome<'a> {
    pub(crate) fn of(result: &'a Result<Reply, ExecError>) -> Self {
        let (calls, elapsed, decisions, usage) = match result {
            Ok(reply) => (reply.calls(), reply.elapsed(), reply.decisions(), reply.total_usage()),
            Err(error) => (error.calls(), error.elapsed(), error.decisions(), error.usage()),
        };
        Self {
            answer: result.as_ref().ok().map(Reply::text),
            error: result.as_ref().err().map(ToString::to_string),
            error_kind: result.as_ref().err().map(|error| error.kind().name()),
            target: result.as_ref().map_or_else(ExecError::target, Reply::target),
            calls,
            elapsed_ms: millis(elapsed),
            usage,
            attempts: decisions.iter().map(JsonAttempt::of).collect(),
        }
    }
}

impl<'a> JsonAttempt<'a> {
    pub(crate) fn of(decision: &'a Decision) -> Self {
        Self {
            layer: decision.layer().name(),
            attempt: decision.attempt(),
            call: decision.call(),
            error: decision.error(),
            verdict: decision.verdict().name(),
            reason: decision.reason().to_string(),
            delay_ms: decision.delay().map_or(0, millis),
        }
    }
}
