//! Which edition of the GenAI semantic conventions the telemetry follows: today's names, or the
//! latest experimental ones, which `OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental` asks
//! for (OpenTelemetry's opt-in variable, a comma-separated list, as for `http` and `database`).
//! In the core (no OpenTelemetry in it), because the spans' attributes follow it too; the `otel`
//! feature re-exports it as `otel::Semconv`.

use std::sync::OnceLock;

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
/// The metrics layer takes the edition it is given (`otel::MetricsLayer::with_semconv`); the
/// spans' attributes follow the environment ([`Semconv::from_env`]).
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
