//! Entry points for the fuzz targets in `fuzz/` and the corpus replay tests into the HTTP
//! providers (feature `providers`): their wire formats, error bodies and retry headers, reachable
//! with plain inputs. Not an API (re-exported as `agentic_runtime::__fuzz`).

use std::time::{Duration, SystemTime};

use reqwest::header::{HeaderMap, HeaderValue};

use super::StreamEvent;
use super::http::{self, Hints, Secret};
use super::wire::WireKind;
use crate::error::ModelError;

/// The wire formats the HTTP providers read: the registry's ([`WireKind::ALL`]).
pub type WireFormat = WireKind;

/// What a provider's call yields for a response body that arrives in `reads`: an event stream, or
/// with `whole` one JSON answer. Texts that could hold `api_key` are redacted as in a real call.
pub fn stream(
    format: WireFormat,
    reads: &[&[u8]],
    whole: bool,
    api_key: Option<&str>,
) -> Vec<Result<StreamEvent, ModelError>> {
    format.replay(reads, whole, Secret::new(api_key.map(str::to_owned)))
}

/// The error of an HTTP response with `status` and `body` (`cut`: the body was longer than read).
pub fn http_error(status: u16, body: &[u8], cut: bool, api_key: Option<&str>) -> ModelError {
    http::http_error(status, body, cut, Secret::new(api_key.map(str::to_owned)).as_ref())
}

/// The retry hints of a response with these header values (`None`: header absent; a value that
/// is not a valid header value is left out), measured from `now`: the wait and `x-should-retry`.
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
