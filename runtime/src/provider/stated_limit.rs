//! A rate limit a server states in its error body rather than in the response's headers:
//! OpenRouter's `{"error": {"code": 429, "message": "Rate limit exceeded: free-models-per-day. ...",
//! "metadata": {"headers": {"X-RateLimit-Limit": "50", "X-RateLimit-Remaining": "0",
//! "X-RateLimit-Reset": "1741305600000"}, "provider_name": null}}}`, the reset in milliseconds since
//! the UNIX epoch. What the runtime reads of it: a limit spent (none remaining) and when it refills,
//! which is the server's wait (docs/design.md §4, "A limit stated in the body").
//!
//! Every number is input: a count that is not a whole number, a reset that is not one or is in the
//! past, is no statement; a reset further than [`MAX_STATED_WAIT`] counts as that far.

use std::time::{Duration, SystemTime};

use serde_json::Value;

/// A reset this far away or further: a quota spent until then (a day's, as OpenRouter's free models
/// have), not a rate limit to wait out: final for the exec, a move for fallbacks.
pub(crate) const QUOTA_HORIZON: Duration = Duration::from_secs(60 * 60);

/// The furthest reset a statement is taken to say: a month, the longest period a provider's quota
/// runs. A reset further away (`9e15` ms) counts as a month from now.
pub(crate) const MAX_STATED_WAIT: Duration = Duration::from_secs(31 * 24 * 60 * 60);

/// A limit the body states as spent: none remaining until `reset_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BodyLimit {
    /// When the limit refills, in ms since the UNIX epoch.
    reset_ms: u64,
}

/// What a spent limit means for the call, at the moment its error is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Spent {
    /// How long until the limit refills, at most [`MAX_STATED_WAIT`]: the server's wait.
    pub(crate) wait: Duration,
    /// The reset is [`QUOTA_HORIZON`] or more away: a quota spent, not a wait.
    pub(crate) quota: bool,
}

impl BodyLimit {
    /// Reads the `metadata.headers` of an error object: a statement only when `X-RateLimit-Remaining`
    /// is 0 and `X-RateLimit-Reset` a whole number of milliseconds (names in any case, values as
    /// text or as numbers). Anything else, a limit with requests left included, says nothing.
    pub(crate) fn read(metadata: Option<&Value>) -> Option<Self> {
        let Some(Value::Object(headers)) = metadata?.get("headers") else { return None };
        let header = |name: &str| {
            headers.iter().find(|(key, _)| key.eq_ignore_ascii_case(name)).map(|(_, value)| value).and_then(whole)
        };
        if header("x-ratelimit-remaining")? != 0 {
            return None;
        }
        Some(Self { reset_ms: header("x-ratelimit-reset")? })
    }

    /// What the statement means at `now`: `None` when its reset has passed (the limit refilled,
    /// or the clocks disagree: either way the server asks for no wait).
    pub(crate) fn at(self, now: SystemTime) -> Option<Spent> {
        let since_epoch = now.duration_since(SystemTime::UNIX_EPOCH).ok()?;
        let wait = Duration::from_millis(self.reset_ms).checked_sub(since_epoch).filter(|wait| !wait.is_zero())?;
        let wait = wait.min(MAX_STATED_WAIT);
        Some(Spent { wait, quota: wait >= QUOTA_HORIZON })
    }
}

/// A whole, non-negative number, written as a JSON number or as text: `"1741305600000"`, `0`.
/// Fractions, signs, exponents and numbers past `u64` are not one.
fn whole(value: &Value) -> Option<u64> {
    match value {
        Value::Number(number) => number.as_u64(),
        Value::String(text) => {
            let text = text.trim();
            (!text.is_empty() && text.bytes().all(|byte| byte.is_ascii_digit())).then(|| text.parse().ok()).flatten()
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// 2025-03-07T00:00:00Z, as OpenRouter would write a reset.
    const MIDNIGHT_MS: u64 = 1_741_305_600_000;

    fn at(ms: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_millis(ms)
    }

    fn read(metadata: Value) -> Option<BodyLimit> {
        BodyLimit::read(Some(&metadata))
    }

    #[test]
    fn openrouters_daily_quota_is_spent_until_its_reset() {
        let metadata = json!({"headers": {"X-RateLimit-Limit": "50", "X-RateLimit-Remaining": "0",
            "X-RateLimit-Reset": MIDNIGHT_MS.to_string()}, "provider_name": null});
        let limit = read(metadata).unwrap();
        let five_hours = Duration::from_secs(5 * 3600);
        let now = at(MIDNIGHT_MS - 5 * 3_600_000);
        assert_eq!(limit.at(now), Some(Spent { wait: five_hours, quota: true }));
        // Its per-minute limit: a wait.
        let per_minute = json!({"headers": {"x-ratelimit-remaining": 0, "x-ratelimit-reset": MIDNIGHT_MS}});
        let now = at(MIDNIGHT_MS - 40_000);
        assert_eq!(read(per_minute).unwrap().at(now), Some(Spent { wait: Duration::from_secs(40), quota: false }));
        // Just under the horizon is a wait; at it, a quota.
        let at_horizon = at(MIDNIGHT_MS - 3_600_000);
        assert!(limit.at(at_horizon).unwrap().quota);
        assert!(!limit.at(at(MIDNIGHT_MS - 3_599_999)).unwrap().quota);
    }

    #[test]
    fn a_reset_past_or_far_away_is_bounded() {
        let limit = read(json!({"headers": {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1000"}})).unwrap();
        assert_eq!(limit.at(at(MIDNIGHT_MS)), None, "a reset in the past asks for no wait");
        assert_eq!(limit.at(at(1000)), None, "nor one that is now");
        let far = json!({"headers": {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": u64::MAX.to_string()}});
        assert_eq!(read(far).unwrap().at(at(MIDNIGHT_MS)), Some(Spent { wait: MAX_STATED_WAIT, quota: true }));
        assert_eq!(limit.at(SystemTime::UNIX_EPOCH - Duration::from_secs(1)), None, "a clock before 1970");
    }

    #[test]
    fn anything_else_states_nothing() {
        let reset = MIDNIGHT_MS.to_string();
        for metadata in [
            json!({"headers": {"X-RateLimit-Remaining": "3", "X-RateLimit-Reset": reset}}),
            json!({"headers": {"X-RateLimit-Remaining": "0"}}),
            json!({"headers": {"X-RateLimit-Reset": reset}}),
            json!({"headers": {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "soon"}}),
            json!({"headers": {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "-5"}}),
            json!({"headers": {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1e300"}}),
            json!({"headers": {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": 1.5e12}}),
            json!({"headers": {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "99999999999999999999999"}}),
            json!({"headers": {"X-RateLimit-Remaining": "0.0", "X-RateLimit-Reset": reset}}),
            json!({"headers": {"X-RateLimit-Remaining": -1, "X-RateLimit-Reset": reset}}),
            json!({"headers": {"X-RateLimit-Remaining": "", "X-RateLimit-Reset": reset}}),
            json!({"headers": "X-RateLimit-Remaining: 0"}),
            json!({"headers": null}),
            json!({"provider_name": "Chutes", "raw": "rate-limited upstream"}),
            json!("metadata"),
        ] {
            assert_eq!(read(metadata.clone()), None, "{metadata}");
        }
        assert_eq!(BodyLimit::read(None), None);
    }
}
