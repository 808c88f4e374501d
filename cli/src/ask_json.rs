//! What `agentic ask --json` prints: the exec's outcome as one JSON object, each decision of
//! either layer as an attempt (`ask --stream --json` prints the same objects as its `decision` and
//! `done` events).

use agentic_runtime::decision::Decision;
use agentic_runtime::message::Usage;
use agentic_runtime::policy::rules::millis;
use agentic_runtime::spend::{Limit, Spent};
use agentic_runtime::storm::Refusal;
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
    /// With spend limits: what the exec spent against them.
    #[serde(skip_serializing_if = "Option::is_none")]
    spent: Option<JsonSpent>,
    /// On a failure of kind `usage_limit`: the limit that stopped the exec.
    #[serde(skip_serializing_if = "Option::is_none")]
    limit: Option<JsonLimit>,
    attempts: Vec<JsonAttempt<'a>>,
}

/// What an exec spent against its limits, as `--json` prints it in `spent`.
#[derive(Serialize)]
struct JsonSpent {
    input_tokens: u64,
    output_tokens: u64,
    total_tokens: u64,
    tool_calls: u64,
    cost_usd: f64,
}

/// The limit that stopped an exec, as `--json` prints it in `limit`: tokens or calls, or dollars
/// for `max_cost_usd`.
#[derive(Serialize)]
struct JsonLimit {
    limit: &'static str,
    max: Amount,
    used: Amount,
    needed: Amount,
}

/// A limit's amount: a count, or US dollars.
#[derive(Serialize)]
#[serde(untagged)]
enum Amount {
    Count(u64),
    Usd(f64),
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
        let (calls, elapsed, decisions, usage, spent) = match result {
            Ok(reply) => (reply.calls(), reply.elapsed(), reply.decisions(), reply.total_usage(), reply.spent()),
            Err(error) => (error.calls(), error.elapsed(), error.decisions(), error.usage(), error.spent()),
        };
        Self {
            answer: result.as_ref().ok().map(Reply::text),
            error: result.as_ref().err().map(ToString::to_string),
            error_kind: result.as_ref().err().map(|error| error.kind().name()),
            target: result.as_ref().map_or_else(ExecError::target, Reply::target),
            calls,
            elapsed_ms: millis(elapsed),
            usage,
            spent: spent.map(JsonSpent::of),
            limit: result.as_ref().err().and_then(ExecError::refusal).and_then(JsonLimit::of),
            attempts: decisions.iter().map(JsonAttempt::of).collect(),
        }
    }
}

impl JsonSpent {
    fn of(spent: Spent) -> Self {
        Self {
            input_tokens: spent.input_tokens,
            output_tokens: spent.output_tokens,
            total_tokens: spent.total_tokens(),
            tool_calls: spent.tool_calls,
            cost_usd: spent.cost_usd,
        }
    }
}

impl JsonLimit {
    /// The limit of a refusal by a spend limit; `None` for the other refusals.
    fn of(refusal: &Refusal) -> Option<Self> {
        let &Refusal::UsageLimit { limit, max, used, needed, .. } = refusal else { return None };
        // A dollar refusal counts millionths of a dollar, so that it compares exactly.
        let amount = |value: u64| match limit {
            Limit::MaxCostUsd => Amount::Usd(value as f64 / 1e6),
            _ => Amount::Count(value),
        };
        Some(Self { limit: limit.name(), max: amount(max), used: amount(used), needed: amount(needed) })
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
