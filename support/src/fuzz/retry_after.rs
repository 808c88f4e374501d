//! The `retry_after` check: the `retry-after-ms`, `Retry-After` and `x-should-retry` headers of an
//! error response, and what the runtime does with the wait they ask for. Shared by
//! `fuzz/fuzz_targets/retry_after.rs` and `runtime/tests/fuzz_corpus.rs`.
//!
//! Input: bytes 0-3 the clock (seconds after 2023-11-14), byte 4 which headers are present; the
//! rest is their values, separated by `'\n'` (which a header value cannot hold).

use std::time::{Duration, SystemTime};

use agentic_runtime::__fuzz;
use agentic_runtime::classify::{exec_verdict, retry_hint};
use agentic_runtime::provider::ModelError;

/// Never panics; a wait is what the typed error carries, and the runtime can note it as a cooldown.
pub fn check(data: &[u8]) {
    let [a, b, c, d, present, values @ ..] = data else { return };
    let now =
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000 + u64::from(u32::from_be_bytes([*a, *b, *c, *d])));
    let mut values = values.split(|&byte| byte == b'\n');
    let mut header = |bit: u8| {
        let value = values.next().unwrap_or_default();
        (present & bit != 0).then_some(value)
    };
    let (ms, seconds, should) = (header(1), header(2), header(4));
    let (wait, should_retry) = __fuzz::retry_hints(ms, seconds, should, now);
    if should.is_none() {
        assert_eq!(should_retry, None);
    }
    if ms.is_none() && seconds.is_none() {
        assert_eq!(wait, None);
    }
    let mut error = ModelError::http(429, "Too Many Requests");
    if let Some(wait) = wait {
        error = error.with_retry_after(wait);
        assert_eq!(retry_hint(error.message(), Some(&error)), Some(wait));
        let cooldown = __fuzz::cooldown(wait);
        assert!(cooldown <= Some(wait), "a cooldown of {cooldown:?} for a wait of {wait:?}");
    }
    if let Some(should_retry) = should_retry {
        error = error.with_should_retry(should_retry);
    }
    let _ = exec_verdict(&error.to_string(), Some(&error));
}
