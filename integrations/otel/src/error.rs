//! What can go wrong setting up or shutting down the export, each with what to do about it.

/// The export could not be set up or shut down: a configuration the environment asks for that
/// this build cannot do, a collector URL that is not one, or an exporter that failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OtelError {
    /// `OTEL_EXPORTER_OTLP_PROTOCOL` (or a signal's own `..._PROTOCOL`) asks for a protocol other
    /// than `http/protobuf`: `grpc` or `http/json`.
    #[error(
        "{variable}={value} is not supported: agentic exports OTLP over HTTP with protobuf only; \
         unset {variable} or set it to http/protobuf, and point the endpoint at the collector's \
         OTLP/HTTP port (4318 by default), not its gRPC port (4317)"
    )]
    UnsupportedProtocol {
        /// The environment variable.
        variable: &'static str,
        /// Its value.
        value: String,
    },
    /// An endpoint variable holds something that is not an http(s) URL.
    #[error("{variable}={value} is not an http(s) URL: set it to e.g. http://localhost:4318")]
    InvalidEndpoint {
        /// The environment variable.
        variable: &'static str,
        /// Its value.
        value: String,
    },
    /// The OTLP exporter could not be built (e.g. `OTEL_EXPORTER_OTLP_COMPRESSION` asks for a
    /// compression this build lacks).
    #[error("cannot build the OTLP {signal} exporter: {message}")]
    Exporter {
        /// `traces` or `metrics`.
        signal: &'static str,
        /// The exporter's error.
        message: String,
    },
    /// [`init_from_env`](crate::init_from_env) found a global `tracing` subscriber already set.
    #[error(
        "a global tracing subscriber is already set: add agentic_otel::layer(..) (or \
         OtelGuard::layer()) to that subscriber instead of calling init_from_env"
    )]
    SubscriberAlreadySet,
    /// Flushing or shutting down failed or timed out: some spans or metrics may not have been
    /// exported.
    #[error("OpenTelemetry: not every span and metric reached the collector ({0})")]
    Shutdown(String),
}
