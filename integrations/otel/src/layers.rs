//! The pieces both the public [`layer`](crate::layer) and [`OtelGuard`](crate::OtelGuard) are
//! made of.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::{SdkTracerProvider, Tracer};
use tracing::{Metadata, Subscriber};
use tracing_opentelemetry::OpenTelemetryLayer;
use tracing_subscriber::filter::{FilterFn, filter_fn};
use tracing_subscriber::registry::LookupSpan;

use agentic_runtime::observe::semconv::METRICS_TARGET;

use crate::scope::scope;

/// The `tracing-opentelemetry` layer on this crate's tracer of `provider`, without the
/// `busy_ns` / `idle_ns` attributes (no convention has them, and they cost two clock reads per
/// poll of every instrumented future).
pub(super) fn trace_layer<S>(provider: &SdkTracerProvider) -> OpenTelemetryLayer<S, Tracer>
where
    S: Subscriber + for<'span> LookupSpan<'span>,
{
    tracing_opentelemetry::layer().with_tracer(provider.tracer_with_scope(scope())).with_tracked_inactivity(false)
}

/// The per-layer filter that keeps the metric events out of the spans: they are measurements,
/// recorded by [`MetricsLayer`](crate::MetricsLayer), not things that happened in the span.
pub(super) fn not_a_metric() -> FilterFn<fn(&Metadata<'_>) -> bool> {
    filter_fn(|metadata| metadata.target() != METRICS_TARGET)
}
