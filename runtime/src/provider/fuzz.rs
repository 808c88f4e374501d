//! Entry points for the fuzz targets in `fuzz/` and the corpus replay tests: the crate-private
//! decoders, reachable with plain inputs. Not an API (re-exported as `agentic_runtime::__fuzz`).
//! Those of the HTTP providers are in `fuzz_http.rs` (feature `providers`).

use std::time::Duration;

use super::sse::SseDecoder;
use crate::error::ModelError;

/// The SSE decoder over a body that arrives in `reads`: the `(event, data)` pairs dispatched,
/// whether the body ended inside an event, and the error that stopped the decoder, if any.
pub fn sse(reads: &[&[u8]]) -> (Vec<(String, String)>, bool, Option<ModelError>) {
    let mut decoder = SseDecoder::new();
    let mut events = Vec::new();
    let mut error = None;
    for read in reads {
        if let Err(failed) = decoder.feed(read, &mut events) {
            error = Some(failed);
            break;
        }
    }
    let events = events.into_iter().map(|event| (event.event, event.data)).collect();
    (events, decoder.has_partial_event(), error)
}

/// What the storm control makes of a server's requested `wait`: the cooldown it sets for every
/// call of the runtime, as [`Conversation`](crate::exec::Conversation) notes it after a failed call.
pub fn cooldown(wait: Duration) -> Option<Duration> {
    use futures_util::FutureExt as _;
    let governor = crate::storm::Governor::new("fuzz".to_owned(), None, None);
    governor.note_hint(wait).now_or_never().expect("no shared store: nothing to wait for");
    governor.cooldown_remaining().now_or_never().expect("no shared store: nothing to wait for")
}

/// What the pacer makes of a sequence of stated `limits`, each followed by one call of
/// `(input, output, used input, used output)` tokens: the wait each call was given (none refused:
/// no deadline), after learning, reserving and settling as a runtime does. Outside a runtime:
/// tokio's clock is the system's then, and no wait is slept.
pub fn pace(steps: &[(crate::storm::pace::RateLimits, [u64; 4])]) -> Vec<Duration> {
    use crate::storm::pace::{Pacer, Pacing};
    let pacer = Pacer::new(&Pacing::from_headers()).expect("on by default");
    let mut waits = Vec::with_capacity(steps.len());
    for (limits, [input, output, used_input, used_output]) in steps {
        pacer.learn(limits, tokio::time::Instant::now());
        let demand = pacer.demand(*input, Some(*output));
        let reserved = pacer.reserve(&demand, None).expect("no deadline: never refused");
        waits.push(reserved.wait);
        pacer.settle(&demand, Some(&crate::message::Usage::new(*used_input, *used_output)));
    }
    waits
}
