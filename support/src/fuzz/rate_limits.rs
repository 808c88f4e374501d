//! The `rate_limits` check: both families of rate-limit headers (OpenAI's `x-ratelimit-*`,
//! Anthropic's `anthropic-ratelimit-*`) on any values against any clock, then what the pacer makes
//! of them over a few calls. Shared by `fuzz/fuzz_targets/rate_limits.rs` and
//! `runtime/tests/fuzz_corpus.rs`.
//!
//! Input: bytes 0-3 the clock (seconds after 2023-11-14), bytes 4-6 which of [`HEADERS`] are
//! present (a bit each), byte 7 how many calls follow the statement (at most 8) and the size of
//! their tokens; the rest is the present headers' values, separated by `'\n'`.

use std::time::{Duration, SystemTime};

use agentic_runtime::__fuzz;
use agentic_runtime::storm::pace::{LimitKind, RateLimits};

/// Every header the parser reads: OpenAI's two limits, then Anthropic's four, each its limit,
/// remaining and reset.
pub const HEADERS: [&str; 18] = [
    "x-ratelimit-limit-requests",
    "x-ratelimit-remaining-requests",
    "x-ratelimit-reset-requests",
    "x-ratelimit-limit-tokens",
    "x-ratelimit-remaining-tokens",
    "x-ratelimit-reset-tokens",
    "anthropic-ratelimit-requests-limit",
    "anthropic-ratelimit-requests-remaining",
    "anthropic-ratelimit-requests-reset",
    "anthropic-ratelimit-tokens-limit",
    "anthropic-ratelimit-tokens-remaining",
    "anthropic-ratelimit-tokens-reset",
    "anthropic-ratelimit-input-tokens-limit",
    "anthropic-ratelimit-input-tokens-remaining",
    "anthropic-ratelimit-input-tokens-reset",
    "anthropic-ratelimit-output-tokens-limit",
    "anthropic-ratelimit-output-tokens-remaining",
    "anthropic-ratelimit-output-tokens-reset",
];

/// The longest wait the pacer may give a call (a day, its bound).
const MAX_WAIT: Duration = Duration::from_secs(24 * 60 * 60);

/// Never panics; a limit is stated only when all three of its headers are; what is left is never
/// more than the limit, nor a limit zero; every wait is within the pacer's bound.
pub fn check(data: &[u8]) {
    let [a, b, c, d, p0, p1, p2, calls, values @ ..] = data else { return };
    let now =
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000 + u64::from(u32::from_be_bytes([*a, *b, *c, *d])));
    let present = u32::from_le_bytes([*p0, *p1, *p2, 0]);
    let mut values = values.split(|&byte| byte == b'\n');
    let stated: Vec<(&str, String)> = HEADERS
        .iter()
        .enumerate()
        .filter_map(|(bit, name)| {
            let value = values.next().unwrap_or_default();
            (present & (1 << bit) != 0).then(|| (*name, String::from_utf8_lossy(value).into_owned()))
        })
        .collect();
    let header = |name: &str| stated.iter().find(|(stated, _)| *stated == name).map(|(_, value)| value.as_str());
    let limits = RateLimits::from_headers(header, now);
    for (kind, limit) in limits.iter() {
        assert!(limit.limit >= 1 && limit.remaining <= limit.limit, "{kind:?}: {limit:?}");
    }
    let all_three = |names: &[&str]| names.iter().all(|name| header(name).is_some());
    if !all_three(&HEADERS[0..3]) && !all_three(&HEADERS[6..9]) {
        assert!(limits.get(LimitKind::Requests).is_none(), "{limits:?}");
    }
    let size = u64::from(calls >> 3) * 997;
    let steps: Vec<(RateLimits, [u64; 4])> =
        (0..u64::from(calls & 7)).map(|n| (limits, [size + n, size / 2, size / 3, size * n])).collect();
    for wait in __fuzz::pace(&steps) {
        assert!(wait <= MAX_WAIT, "{wait:?}");
    }
}
