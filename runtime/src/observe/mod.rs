//! What the runtime tells about its execs besides the reply: `tracing` spans and metrics events
//! ([`semconv`] names them), the JSONL task trace ([`trace`]) and the failure journal ([`journal`]).

pub mod journal;
pub mod semconv;
pub(crate) mod telemetry;
pub mod trace;
