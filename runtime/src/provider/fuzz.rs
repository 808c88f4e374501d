//! Entry points for the fuzz targets in `fuzz/` and the corpus replay tests: the crate-private
//! decoders, reachable with plain inputs. Not an API (re-exported as `agentic_runtime::__fuzz`).

//! The SSE decoder's and the storm control's are in the core; those of the HTTP providers' wire
//! formats, error bodies and retry headers need the feature `providers`.

use std::time::Duration;
#[cfg(feature = "providers")]
use std::time::SystemTime;

#[cfg(feature = "providers")]
use reqwest::header::{HeaderMap, HeaderValue};

#[cfg(feature = "providers")]
use super::StreamEvent;
#[cfg(feature = "providers")]
use super::anthropic::AnthropicWire;
#[cfg(feature = "providers")]
use super::http::{self, Hints, Secret};
#[cfg(feature = "providers")]
use super::openai::OpenAiWire;
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

/// The wire formats the HTTP providers read.
#[cfg(feature = "providers")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireFormat {
    /// OpenAI chat completions.
    OpenAi,
    /// Anthropic messages.
    Anthropic,
}

/// What a provider's call yields for a response body that arrives in `reads`: an event stream, or
/// with `whole` one JSON answer. Texts that could hold `api_key` are redacted as in a real call.
#[cfg(feature = "providers")]
pub fn stream(
    format: WireFormat,
    reads: &[&[u8]],
    whole: bool,
    api_key: Option<&str>,
) -> Vec<Result<StreamEvent, ModelError>> {
    let secret = Secret::new(api_key.map(str::to_owned));
    match format {
        WireFormat::OpenAi => http::replay(OpenAiWire::default(), reads, whole, secret),
        WireFormat::Anthropic => http::replay(AnthropicWire::default(), reads, whole, secret),
    }
}

/// The error of an HTTP response with `status` and `body` (`cut`: the body was longer than read).
#[cfg(feature = "providers")]
pub fn http_error(status: u16, body: &[u8], cut: bool, api_key: Option<&str>) -> ModelError {
    http::http_error(status, body, cut, Secret::new(api_key.map(str::to_owned)).as_ref())
}

/// The retry hints of a response with these header values (`None`: header absent; a value that
/// is not a valid header value is left out), measured from `now`: the wait and `x-should-retry`.
#[cfg(feature = "providers")]
pub fn retry_hints(
    retry_after_ms: Option<&[u8]>,
    retry_after: Option<&[u8]>,
    should_retry: Option<&[u8]>,
    now: SystemTime,
) -> (Option<Duration>, Option<bool>) {
    let mut headers = HeaderMap::new();
    for (name, value) in
        [("retry-after-ms", retry_after_ms), ("retry-after", retry_after), ("x-should-retry", should_retry)]
    {
        if let Some(value) = value.and_then(|value| HeaderValue::from_bytes(value).ok()) {
            headers.insert(name, value);
        }
    }
    let hints = Hints::from_headers(&headers, now);
    (hints.retry_after, hints.should_retry)
}

/// What the storm control makes of a server's requested `wait`: the cooldown it sets for every
/// call of the runtime, as [`AgentSession`](crate::AgentSession) notes it after a failed call.
pub fn cooldown(wait: Duration) -> Option<Duration> {
    use futures_util::FutureExt as _;
    let governor = crate::budget::Governor::new("fuzz".to_owned(), None, None);
    governor.note_hint(wait).now_or_never().expect("no shared store: nothing to wait for");
    governor.cooldown_remaining().now_or_never().expect("no shared store: nothing to wait for")
}
