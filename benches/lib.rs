//! What the benchmarks (`benches/`) share.

use agentic_runtime::message::StopReason;
use agentic_runtime::provider::{EventStream, Provider, Request, StreamEvent};
use futures_util::stream;

/// A provider that answers at once and records nothing: what a benchmark measures is the
/// machinery, not the provider.
#[derive(Debug, Clone, Copy)]
pub struct Instant;

impl Provider for Instant {
    fn name(&self) -> &str {
        "instant"
    }

    fn stream<'a>(&'a self, _request: &'a Request<'a>) -> EventStream<'a> {
        Box::pin(stream::iter([
            Ok(StreamEvent::TextDelta("the answer".to_owned())),
            Ok(StreamEvent::Done { stop_reason: StopReason::Stop }),
        ]))
    }
}
