//! OpenTelemetry export of `agentic-runtime`'s spans and metrics, over OTLP/HTTP.
//!
//! The runtime describes what it does through `tracing` only (docs/design.md §14): a span per
//! exec (`invoke_agent ..`), a CLIENT span per model call (`chat {model}`) and per tool call
//! (`execute_tool {name}`), retry decisions as events inside them, and metric events on the
//! target [`METRICS_TARGET`]. The field names are the OpenTelemetry GenAI semantic conventions'
//! (`gen_ai.operation.name`, `gen_ai.provider.name`, `gen_ai.usage.input_tokens`, `error.type`,
//! ..); the span and metric names are [`agentic_runtime::observe::semconv`]'s. The runtime builds
//! nothing of OpenTelemetry; this crate turns those spans and events into OpenTelemetry data:
//!
//! - spans, with their events, through [`tracing-opentelemetry`](tracing_opentelemetry);
//! - metrics through [`MetricsLayer`]: the histograms `gen_ai.client.operation.duration` (s) and
//!   `gen_ai.client.token.usage` (`{token}`), with the GenAI conventions' buckets, and the
//!   counters `agentic.retry.decisions`, `agentic.retry.refused`, `agentic.cooldowns` and
//!   `agentic.breaker.transitions`, the up-down counter `agentic.breaker.open`, and the pacer's
//!   counter `agentic.pacer.admitted` and histogram `agentic.pacer.wait` (s).
//!
//! No prompt or answer text is recorded, and never a key.
//!
//! # Configured by the environment
//!
//! [`init_from_env`] reads the standard variables and installs a global subscriber:
//!
//! | variable | meaning |
//! |---|---|
//! | `OTEL_EXPORTER_OTLP_ENDPOINT` | the collector's OTLP/HTTP base URL, e.g. `http://localhost:4318` (`/v1/traces` and `/v1/metrics` are appended); unset: no export |
//! | `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT` | one signal's full URL, used as is; only the signals with an endpoint are exported |
//! | `OTEL_EXPORTER_OTLP_PROTOCOL` (and `.._TRACES_..`, `.._METRICS_..`) | `http/protobuf`, or unset; anything else (`grpc`, `http/json`) is an error |
//! | `OTEL_SERVICE_NAME` | `service.name` [default: the program's file name] |
//! | `OTEL_RESOURCE_ATTRIBUTES` | more resource attributes, `key=value,..` |
//! | `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_EXPORTER_OTLP_TIMEOUT` | headers (e.g. an API key for a hosted collector) and the export timeout in ms [default: 10000] |
//! | `OTEL_SDK_DISABLED=true` | no export, whatever else is set |
//!
//! ```no_run
//! fn main() -> Result<(), agentic_otel::OtelError> {
//!     let otel = agentic_otel::init_from_env()?; // None: no endpoint set
//!     // .. run execs ..
//!     if let Some(otel) = otel {
//!         otel.shutdown()?; // or let it drop: the last spans and metrics are sent either way
//!     }
//!     Ok(())
//! }
//! ```
//!
//! # With a subscriber of your own
//!
//! Add [`layer`] (providers you built) or [`OtelGuard::layer`] (providers from the environment)
//! to it, next to your other layers. Keep the `agentic::metrics` target enabled at `INFO` in any
//! filter in front of it, and keep the HTTP client's own spans out (`hyper`, `h2`, `reqwest` at
//! `DEBUG` and below), or exporting spans makes more spans.
//!
//! ```no_run
//! use agentic_otel::opentelemetry_otlp::SpanExporter;
//! use agentic_otel::opentelemetry_sdk::{metrics::SdkMeterProvider, trace::SdkTracerProvider};
//! use tracing_subscriber::layer::SubscriberExt as _;
//!
//! let exporter = SpanExporter::builder().with_http().build().unwrap();
//! let tracer_provider = SdkTracerProvider::builder().with_batch_exporter(exporter).build();
//! let meter_provider = SdkMeterProvider::builder().build(); // add your reader or exporter
//! let subscriber = tracing_subscriber::registry()
//!     .with(agentic_otel::layer(&tracer_provider, &meter_provider))
//!     .with(tracing_subscriber::fmt::layer());
//! tracing::subscriber::set_global_default(subscriber).unwrap();
//! // .. run execs, then flush before exiting:
//! tracer_provider.shutdown().unwrap();
//! meter_provider.shutdown().unwrap();
//! ```
#![deny(missing_docs)]
#![deny(unsafe_code)]
#![warn(unreachable_pub, missing_debug_implementations)]

mod config;
mod error;
mod guard;
mod layers;
mod metrics;
mod scope;
#[cfg(test)]
mod tests;

pub use error::OtelError;
pub use guard::{OtelGuard, SHUTDOWN_TIMEOUT};
pub use metrics::MetricsLayer;
/// The OpenTelemetry API crate this crate is built with (for its types in your code).
pub use opentelemetry;
/// The OTLP exporter crate this crate is built with (to build exporters of your own).
pub use opentelemetry_otlp;
/// The OpenTelemetry SDK crate this crate is built with (for the providers [`layer`] takes).
pub use opentelemetry_sdk;

use agentic_runtime::observe::semconv::METRICS_TARGET;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::{Level, Metadata, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::filter::filter_fn;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::registry::LookupSpan;

use layers::{not_a_metric, trace_layer};

/// The layer exporting spans through `tracer_provider` and metric events through
/// `meter_provider`: `tracing-opentelemetry`'s layer (spans and their events; the metric events
/// are left out of it) and a [`MetricsLayer`]. See the [crate docs](self) for an example.
pub fn layer<S>(tracer_provider: &SdkTracerProvider, meter_provider: &SdkMeterProvider) -> impl Layer<S> + use<S>
where
    S: Subscriber + for<'span> LookupSpan<'span>,
{
    trace_layer(tracer_provider).with_filter(not_a_metric()).and_then(MetricsLayer::new(meter_provider))
}

/// When `OTEL_EXPORTER_OTLP_ENDPOINT` (or a signal's own endpoint) is set: builds the tracer and
/// meter providers exporting OTLP over HTTP/protobuf, installs a global `tracing` subscriber
/// feeding them, and returns the guard that flushes them when dropped. `Ok(None)`, with nothing
/// installed, when no endpoint is set. The variables are in the [crate docs](self).
///
/// The subscriber exports the spans and events of the `agentic*` crates at every level, and
/// those of other crates at `INFO` and above (so that the HTTP client's own `DEBUG` spans are
/// never exported). For another choice, or to print logs too, build your own subscriber with
/// [`OtelGuard::from_env`] and [`OtelGuard::layer`].
///
/// # Errors
///
/// A protocol other than `http/protobuf`, an endpoint that is not an http(s) URL, an exporter
/// that cannot be built, or a global subscriber already set; each message says what to change.
pub fn init_from_env() -> Result<Option<OtelGuard>, OtelError> {
    let Some(guard) = OtelGuard::from_env()? else { return Ok(None) };
    let traces = guard.tracer_provider().map(|provider| trace_layer(provider).with_filter(filter_fn(exported)));
    let metrics = guard.meter_provider().map(MetricsLayer::new);
    let subscriber = tracing_subscriber::registry().with(traces).with(metrics);
    tracing::subscriber::set_global_default(subscriber).map_err(|_| OtelError::SubscriberAlreadySet)?;
    Ok(Some(guard))
}

/// What [`init_from_env`]'s subscriber exports as spans and span events: the `agentic*` crates'
/// at every level, other crates' at `INFO` and above, never the metric events.
fn exported(metadata: &Metadata<'_>) -> bool {
    let target = metadata.target();
    target != METRICS_TARGET && (target.starts_with("agentic") || *metadata.level() <= Level::INFO)
}
