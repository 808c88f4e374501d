//! OpenTelemetry for `agentic ask`: export its spans and metrics when `OTEL_EXPORTER_OTLP_ENDPOINT`
//! (or a signal's own endpoint) is set, and flush them before the command returns.

use std::process::ExitCode;

/// The `agentic ask --help` paragraph on the variables.
#[cfg(feature = "otel")]
pub(crate) const HELP: &str = "\
OpenTelemetry: with OTEL_EXPORTER_OTLP_ENDPOINT set (the collector's OTLP/HTTP base URL, e.g. \
http://localhost:4318), the exec's spans (invoke_agent, one CLIENT span `chat {model}` per model \
call) and its metrics (gen_ai.client.operation.duration, gen_ai.client.token.usage, \
agentic.retry.decisions, agentic.retry.refused, agentic.cooldowns) are exported over OTLP/HTTP \
with protobuf, and flushed before exit (waiting at most 5 s for the collector). \
OTEL_EXPORTER_OTLP_TRACES_ENDPOINT / OTEL_EXPORTER_OTLP_METRICS_ENDPOINT set one signal's full URL; \
OTEL_SERVICE_NAME names the service [default: agentic]; OTEL_EXPORTER_OTLP_HEADERS adds headers \
(key=value,..); OTEL_SDK_DISABLED=true turns it off. OTEL_EXPORTER_OTLP_PROTOCOL, if set, must be \
http/protobuf (no gRPC): a bad setting exits 2.";

/// The `agentic ask --help` paragraph without the `otel` feature.
#[cfg(not(feature = "otel"))]
pub(crate) const HELP: &str = "OpenTelemetry: this agentic was built without the `otel` feature; \
OTEL_EXPORTER_OTLP_ENDPOINT is not used.";

/// The export started for one command; [`finish`](Self::finish) flushes it.
#[derive(Debug)]
#[must_use = "dropping it at once would flush before anything is traced"]
pub(crate) struct Telemetry {
    #[cfg(feature = "otel")]
    guard: Option<agentic_otel::OtelGuard>,
}

impl Telemetry {
    /// Starts the export the environment asks for, or prints why it cannot and returns the
    /// usage exit code.
    #[cfg(feature = "otel")]
    pub(crate) fn start() -> Result<Self, ExitCode> {
        match agentic_otel::init_from_env() {
            Ok(guard) => Ok(Self { guard }),
            Err(error) => Err(crate::input::usage_error(format!("OpenTelemetry: {error}"))),
        }
    }

    /// Without the `otel` feature: says that an endpoint set in the environment is not used.
    #[cfg(not(feature = "otel"))]
    pub(crate) fn start() -> Result<Self, ExitCode> {
        let set = |name| std::env::var_os(name).is_some_and(|value| !value.is_empty());
        if ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"]
            .into_iter()
            .any(set)
        {
            eprintln!("warning: this agentic was built without the `otel` feature: nothing is exported");
        }
        Ok(Self {})
    }

    /// Exports what is left and stops; a collector that failed is a warning on stderr, not a
    /// different exit code (the command itself did its work).
    pub(crate) fn finish(self) {
        #[cfg(feature = "otel")]
        if let Some(Err(error)) = self.guard.map(agentic_otel::OtelGuard::shutdown) {
            eprintln!("warning: {}", crate::terminal::shown(error));
        }
    }
}
