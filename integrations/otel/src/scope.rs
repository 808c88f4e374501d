//! The instrumentation scope the tracer and the meter share: a leaf, so that the trace layer and
//! the metrics layer each depend on it and not on each other.

use opentelemetry::InstrumentationScope;

/// The instrumentation scope of the tracer and the meter: the instrumented library,
/// `agentic-runtime`, at its version (this crate's: it depends on the runtime of its own version
/// exactly, `=x.y.z`).
pub(super) fn scope() -> InstrumentationScope {
    InstrumentationScope::builder("agentic-runtime").with_version(env!("CARGO_PKG_VERSION")).build()
}
