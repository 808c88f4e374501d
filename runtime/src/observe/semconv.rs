//! The names of what the core tells `tracing`, and which edition of the GenAI semantic conventions
//! they follow.
//!
//! The core never talks to OpenTelemetry: it opens spans (an exec's [`INVOKE_AGENT`], a model
//! call's `chat`, a tool call's [`EXECUTE_TOOL`]) and emits one metric event per measurement on the
//! target [`METRICS_TARGET`], with the instrument's name in `metric` (one of the names below), the
//! measurement in `value` and the attributes as the other fields. An exporter (the `agentic-otel`
//! crate, or a layer of your own) turns them into OpenTelemetry data; these names are the contract
//! between the two.
//!
//! The edition: today's names, or the latest experimental ones, which
//! `OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental` asks for (OpenTelemetry's opt-in
//! variable, a comma-separated list, as for `http` and `database`). In the core, because the spans'
//! attributes follow it too.

use std::sync::OnceLock;

/// The `tracing` target of the core's metric events. They are emitted with no parent span, so that
/// no subscriber shows them as events of a span; an exporter keeps them out of its spans.
pub const METRICS_TARGET: &str = "agentic::metrics";

/// The name of an exec's span (`invoke_agent {function}` to OpenTelemetry), and its
/// `gen_ai.operation.name`.
pub const INVOKE_AGENT: &str = "invoke_agent";
/// The name of a tool call's span (`execute_tool {name}` to OpenTelemetry), and its
/// `gen_ai.operation.name`.
pub const EXECUTE_TOOL: &str = "execute_tool";

/// The duration of each model call, in seconds (a histogram).
pub const OPERATION_DURATION: &str = "gen_ai.client.operation.duration";
/// The input and output tokens of each model call (a histogram, by `gen_ai.token.type`, one of
/// [`TOKEN_TYPES`]: today's conventions know the first two).
pub const TOKEN_USAGE: &str = "gen_ai.client.token.usage";
/// The `gen_ai.token.type` of the [`TOKEN_USAGE`] events, in the order of [`INFERENCE_USAGE`]:
/// the cache kinds only when the server reported cached tokens.
pub const TOKEN_TYPES: [&str; 4] = ["input", "output", "cache_read", "cache_write"];
/// With [`Semconv::LatestExperimental`]: the name of the duration of each model call, in seconds
/// (a histogram), for the events named [`OPERATION_DURATION`].
pub const INFERENCE_DURATION: &str = "gen_ai.client.inference.duration";
/// The time from each streamed model call's start to its first content (text or a tool call), in
/// seconds: only the latest conventions ([`Semconv::LatestExperimental`]) have an instrument for it.
pub const TIME_TO_FIRST_CHUNK: &str = "gen_ai.client.inference.time_to_first_chunk";
/// With [`Semconv::LatestExperimental`]: the token counters, one per [`TOKEN_TYPES`] entry, for the
/// events named [`TOKEN_USAGE`].
pub const INFERENCE_USAGE: [&str; 4] = [
    "gen_ai.client.inference.usage.input_tokens",
    "gen_ai.client.inference.usage.output_tokens",
    "gen_ai.client.inference.usage.cache_read.input_tokens",
    "gen_ai.client.inference.usage.cache_write.input_tokens",
];
/// With [`Semconv::LatestExperimental`]: the duration of each exec (its [`INVOKE_AGENT`] span), in
/// seconds (a histogram; no event: an exporter times the span).
pub const INVOKE_AGENT_DURATION: &str = "gen_ai.invoke_agent.duration";
/// With [`Semconv::LatestExperimental`]: the duration of each tool call (its [`EXECUTE_TOOL`]
/// span), in seconds (a histogram; no event: an exporter times the span).
pub const EXECUTE_TOOL_DURATION: &str = "gen_ai.execute_tool.duration";

/// The decisions of either retry layer (a counter, by `agentic.layer` and `agentic.verdict`).
pub const RETRY_DECISIONS: &str = "agentic.retry.decisions";
/// The retries a cap refused (a counter, by `agentic.layer` and `agentic.refusal`).
pub const RETRY_REFUSED: &str = "agentic.retry.refused";
/// The cooldowns a provider's error started (a counter, by `gen_ai.provider.name`).
pub const COOLDOWNS: &str = "agentic.cooldowns";
/// The transitions of the targets' circuit breakers (a counter, by `agentic.target` and
/// `agentic.breaker.state`, the new state: `open`, `half_open` or `closed`).
pub const BREAKER_TRANSITIONS: &str = "agentic.breaker.transitions";
/// The circuit breakers open now (an up-down counter, by `agentic.target`: +1 when one opens, -1
/// when it closes; in a fleet, summed over its processes).
pub const BREAKER_OPEN: &str = "agentic.breaker.open";
/// The calls the pacer admitted (a counter, by `gen_ai.provider.name` and `agentic.paced`:
/// `at_once` or `waited`), once the scope's rate limits are known (`RuntimeBuilder::with_pacing`).
pub const PACER_ADMITTED: &str = "agentic.pacer.admitted";
/// The time calls waited for a rate limit before they were sent, in seconds (a histogram, by
/// `gen_ai.provider.name`).
pub const PACER_WAIT: &str = "agentic.pacer.wait";

/// The variable that opts in to newer semantic conventions, a comma-separated list.
pub const OPT_IN_VAR: &str = "OTEL_SEMCONV_STABILITY_OPT_IN";
/// The entry of [`OPT_IN_VAR`] that asks for the latest experimental GenAI conventions.
pub const GEN_AI_LATEST_EXPERIMENTAL: &str = "gen_ai_latest_experimental";

/// The edition of the GenAI semantic conventions the metrics are named after, and which span
/// attributes the core records.
///
/// | [`Semconv::Current`] | [`Semconv::LatestExperimental`] |
/// |---|---|
/// | `gen_ai.client.operation.duration` (histogram, s) | `gen_ai.client.inference.duration` (histogram, s) |
/// | `gen_ai.client.token.usage` (histogram, by `gen_ai.token.type` `input` / `output`) | the counters `gen_ai.client.inference.usage.input_tokens`, `.output_tokens`, `.cache_read.input_tokens`, `.cache_write.input_tokens` (`{token}`) |
/// | none | `gen_ai.invoke_agent.duration` and `gen_ai.execute_tool.duration` (histograms, s): each exec's and each tool call's span, from its start to its end |
/// | none | `gen_ai.client.inference.time_to_first_chunk` (histogram, s): from a call's start to its first content, text or a tool call (every call streams) |
/// | a call's span: `gen_ai.usage.input_tokens`, `gen_ai.usage.output_tokens` | also `gen_ai.usage.cache_read.input_tokens` and `gen_ai.usage.cache_write.input_tokens` when the server reported cached tokens, `http.request.resend_count` (the calls of the exec before it) on a retried call, `gen_ai.response.time_to_first_chunk` (s) on a call whose content came, and `gen_ai.conversation.compacted` = `true` on the calls after the exec compacted its conversation (never `false`: the conventions leave it unset) |
///
/// An exporter's metrics take the edition it is given (`agentic-otel`'s
/// `MetricsLayer::with_semconv`); the spans' attributes follow the environment
/// ([`Semconv::from_env`]).
///
/// The `agentic.*` counters are the same in both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Semconv {
    /// Today's names, unchanged: what a dashboard built on them keeps reading.
    #[default]
    Current,
    /// The latest experimental names, asked for with `gen_ai_latest_experimental`.
    LatestExperimental,
}

impl Semconv {
    /// The edition a value of [`OPT_IN_VAR`] asks for: `LatestExperimental` when one of its
    /// comma-separated entries is `gen_ai_latest_experimental` (spaces around an entry ignored),
    /// else `Current` (unset, empty, or other conventions' entries such as `http`).
    pub fn from_opt_in(value: Option<&str>) -> Self {
        let latest =
            value.is_some_and(|value| value.split(',').any(|entry| entry.trim() == GEN_AI_LATEST_EXPERIMENTAL));
        if latest { Semconv::LatestExperimental } else { Semconv::Current }
    }

    /// The edition [`OPT_IN_VAR`] asks for, read from the environment once per process (as the
    /// OpenTelemetry SDKs read it): later changes to the variable are not seen.
    pub fn from_env() -> Self {
        static READ: OnceLock<Semconv> = OnceLock::new();
        *READ.get_or_init(|| Semconv::from_opt_in(std::env::var(OPT_IN_VAR).ok().as_deref()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_opt_in_is_one_entry_of_a_comma_separated_list() {
        for latest in
            ["gen_ai_latest_experimental", "http, gen_ai_latest_experimental", " gen_ai_latest_experimental ,database"]
        {
            assert_eq!(Semconv::from_opt_in(Some(latest)), Semconv::LatestExperimental, "{latest}");
        }
        for current in [None, Some(""), Some("http"), Some("gen_ai_latest"), Some("gen_ai_latest_experimental_x")] {
            assert_eq!(Semconv::from_opt_in(current), Semconv::Current, "{current:?}");
        }
    }
}
