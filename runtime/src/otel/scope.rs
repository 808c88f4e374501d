//! The instrumentation scope the tracer and the meter share: a leaf, so that the trace layer and
//! the metrics layer each depend on it and not on each other.

use opentelemetry::InstrumentationScope;

/// The instrumentation scope of the tracer and the meter: this crate, at this version.
pub(super) fn scope() -> InstrumentationScope {
    InstrumentationScope::builder("agentic-runtime").with_version(env!("CARGO_PKG_VERSION")).build()
}
