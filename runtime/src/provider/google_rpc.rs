//! Google's error details (`google.rpc`), which Gemini sends in every error body, natively and
//! through its OpenAI-compatible endpoint: `{"error": {"code": 429, "message", "status":
//! "RESOURCE_EXHAUSTED", "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo",
//! "retryDelay": "34s"}, ...]}}`. What the runtime reads of them: the server's requested wait
//! (`RetryInfo`), and whether a quota is spent for the day or for good (`QuotaFailure`,
//! `ErrorInfo`), which no wait of ours refills.

use std::sync::LazyLock;
use std::time::Duration;

use regex::Regex;
use serde_json::Value;

use crate::classify::patterns::{DAILY_QUOTA, QUOTA_EXHAUSTED};

/// What an error's `details` say.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Details {
    /// `RetryInfo.retryDelay`: the server's requested wait.
    pub(crate) retry_delay: Option<Duration>,
    /// [`DAILY_QUOTA`] or [`QUOTA_EXHAUSTED`] when a detail says the quota is spent.
    pub(crate) quota: Option<&'static str>,
}

impl Details {
    /// Reads the `details` array of a Google error; nothing for anything else. Each detail is
    /// judged by the end of its `@type` (`...google.rpc.RetryInfo`), so a proxy's prefix does not
    /// matter; unknown details and malformed values are skipped.
    pub(crate) fn read(details: Option<&Value>) -> Self {
        let mut read = Self::default();
        let Some(Value::Array(details)) = details else { return read };
        for detail in details {
            let kind = detail.get("@type").and_then(Value::as_str).unwrap_or("");
            let kind = kind.rsplit(['.', '/']).next().unwrap_or("");
            match kind {
                "RetryInfo" => {
                    let delay = detail.get("retryDelay").and_then(Value::as_str).and_then(proto_duration);
                    read.retry_delay = read.retry_delay.or(delay);
                }
                "QuotaFailure" if names_a_daily_quota(detail) => read.quota = Some(DAILY_QUOTA),
                "ErrorInfo" if detail.get("reason").and_then(Value::as_str) == Some("QUOTA_EXHAUSTED") => {
                    read.quota = read.quota.or(Some(QUOTA_EXHAUSTED));
                }
                _ => {}
            }
        }
        read
    }
}

/// Whether a `QuotaFailure`'s violations name a daily quota: a `quotaId` (or `quotaMetric`) with
/// `PerDay` or `Daily` in it, e.g. `GenerateRequestsPerDayPerProjectPerModel-FreeTier`.
fn names_a_daily_quota(detail: &Value) -> bool {
    let Some(Value::Array(violations)) = detail.get("violations") else { return false };
    violations.iter().any(|violation| {
        ["quotaId", "quotaMetric"].iter().filter_map(|key| violation.get(*key).and_then(Value::as_str)).any(|id| {
            let id = id.to_ascii_lowercase();
            id.contains("perday") || id.contains("daily")
        })
    })
}

/// A protobuf `Duration` in its JSON form (`"34.074824224s"`, `"0s"`), or in milliseconds
/// (`"900ms"`, which some gateways write). A value too large for a `Duration` is `Duration::MAX`:
/// above any cap, so the caller stops at once rather than taking it for no hint.
pub(crate) fn proto_duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    let (number, per_second) = match text.strip_suffix("ms") {
        Some(number) => (number, 1000.0),
        None => (text.strip_suffix('s')?, 1.0),
    };
    parse_seconds(number.trim(), per_second)
}

/// A non-negative number of units (`per_second` units make a second) as a duration: every server
/// hint's number, `RetryInfo`'s here and the headers' (`retry-after-ms`, `Retry-After`) in
/// `http/hints.rs`. A number too large for a `Duration` (`1e300`, `inf`) is `Duration::MAX`: above any
/// cap, so the caller stops at once and says the server asked for longer than the cap, rather than
/// taking it for no hint.
pub(super) fn parse_seconds(value: &str, per_second: f64) -> Option<Duration> {
    let amount: f64 = value.parse().ok()?;
    if amount.is_nan() || amount < 0.0 {
        return None;
    }
    Some(Duration::try_from_secs_f64(amount / per_second).unwrap_or(Duration::MAX))
}

/// `RetryInfo` as an error's text quotes it: `"retryDelay": "34s"` from a JSON error body (whole,
/// cut, or escaped inside another string), or `retry_delay { seconds: 34 nanos: 74824224 }` from
/// google-api-core's exceptions (`google.api_core.exceptions.ResourceExhausted: 429 ...`). The
/// numbers are read as [`proto_duration`] and [`parse_seconds`] read them.
static QUOTED_RETRY_DELAY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"\\?"retryDelay\\?"\s*:\s*\\?"([0-9.]{1,32}m?s)\\?"|retry_delay\s*\{\s*seconds:\s*([0-9]{1,20})(?:\s+nanos:\s*([0-9]{1,9}))?"#,
    )
    .expect("the quoted RetryInfo pattern is a valid regex")
});

/// The server's requested wait that Google's `RetryInfo` gives, as a text quotes it: a JSON error
/// body's `"retryDelay": "34s"`, or google-api-core's `retry_delay { seconds: 34 }`. For tools that
/// only have an error's text (`agentic classify`); a call's own hint comes from the body it read.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use agentic_runtime::provider::quoted_retry_delay;
///
/// let body = r#"{"error": {"code": 429, "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "34s"}]}}"#;
/// assert_eq!(quoted_retry_delay(body), Some(Duration::from_secs(34)));
/// assert_eq!(quoted_retry_delay("429 quota [retry_delay {\n  seconds: 20\n}\n]"), Some(Duration::from_secs(20)));
/// assert_eq!(quoted_retry_delay("RESOURCE_EXHAUSTED"), None);
/// ```
pub fn quoted_retry_delay(text: &str) -> Option<Duration> {
    let captures = QUOTED_RETRY_DELAY.captures(text)?;
    if let Some(delay) = captures.get(1) {
        return proto_duration(delay.as_str());
    }
    let seconds = captures.get(2)?.as_str();
    let nanos = captures.get(3).map_or(0, |nanos| nanos.as_str().parse::<u32>().unwrap_or(0));
    parse_seconds(&format!("{seconds}.{nanos:09}"), 1.0)
}

/// The SDK-style kind and HTTP status of a Google error `status` (the canonical gRPC code names),
/// as the API gives them over HTTP: so an error that carries only its status (in a stream, or with
/// a status its proxy changed) is judged as the same error with its HTTP status would be.
pub(crate) fn status_kind(status: &str) -> Option<(&'static str, u16)> {
    Some(match status {
        "RESOURCE_EXHAUSTED" => ("RateLimitError", 429),
        "UNAVAILABLE" => ("ServiceUnavailableError", 503),
        "INTERNAL" => ("InternalServerError", 500),
        "DEADLINE_EXCEEDED" => ("GatewayTimeoutError", 504),
        "INVALID_ARGUMENT" | "FAILED_PRECONDITION" => ("BadRequestError", 400),
        "UNAUTHENTICATED" => ("AuthenticationError", 401),
        "PERMISSION_DENIED" => ("PermissionDeniedError", 403),
        "NOT_FOUND" => ("NotFoundError", 404),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn proto_durations_in_seconds_or_milliseconds() {
        assert_eq!(proto_duration("34.074824224s"), Some(Duration::from_nanos(34_074_824_224)));
        assert_eq!(proto_duration("0s"), Some(Duration::ZERO));
        assert_eq!(proto_duration("900ms"), Some(Duration::from_millis(900)));
        assert_eq!(proto_duration(" 2s "), Some(Duration::from_secs(2)));
        assert_eq!(proto_duration("1e300s"), Some(Duration::MAX));
        for bad in ["34", "s", "-1s", "NaNs", "soon", ""] {
            assert_eq!(proto_duration(bad), None, "{bad}");
        }
    }

    #[test]
    fn retry_info_quoted_in_a_text_is_read() {
        let body = r#"{"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "34.074824224s"}]}}"#;
        assert_eq!(quoted_retry_delay(body), Some(Duration::from_nanos(34_074_824_224)));
        assert_eq!(
            quoted_retry_delay(r#"ResourceExhausted: {\"retryDelay\": \"900ms\"}"#),
            Some(Duration::from_millis(900))
        );
        let api_core = "google.api_core.exceptions.ResourceExhausted: 429 Resource has been exhausted \
                        [violations {\n  quota_id: \"PerMinute\"\n}\n, retry_delay {\n  seconds: 20\n  nanos: 500000000\n}\n]";
        assert_eq!(quoted_retry_delay(api_core), Some(Duration::from_millis(20_500)));
        for none in ["RESOURCE_EXHAUSTED", r#""retryDelay": "soon""#, "retry_delay { }", r#""retryDelay": "-1s""#] {
            assert_eq!(quoted_retry_delay(none), None, "{none}");
        }
    }

    #[test]
    fn retry_info_daily_quotas_and_error_info_are_read() {
        let details = json!([
            {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [
                {"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                 "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}]},
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "34s"},
        ]);
        let read = Details::read(Some(&details));
        assert_eq!(read, Details { retry_delay: Some(Duration::from_secs(34)), quota: None });

        let daily = json!([{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [
            {"quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier"}]}]);
        assert_eq!(Details::read(Some(&daily)).quota, Some(DAILY_QUOTA));
        let info = json!([{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "QUOTA_EXHAUSTED"}]);
        assert_eq!(Details::read(Some(&info)).quota, Some(QUOTA_EXHAUSTED));
        let rate = json!([{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "RATE_LIMIT_EXCEEDED"}]);
        assert_eq!(Details::read(Some(&rate)), Details::default());

        for junk in [json!(null), json!({}), json!("x"), json!([1, {"@type": 3}, {"retryDelay": "1s"}])] {
            assert_eq!(Details::read(Some(&junk)), Details::default(), "{junk}");
        }
        assert_eq!(Details::read(None), Details::default());
    }
}
