//! Google's error details (`google.rpc`), which Gemini sends in every error body, natively and
//! through its OpenAI-compatible endpoint: `{"error": {"code": 429, "message", "status":
//! "RESOURCE_EXHAUSTED", "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo",
//! "retryDelay": "34s"}, ...]}}`. What the runtime reads of them: the server's requested wait
//! (`RetryInfo`), and whether a quota is spent for the day or for good (`QuotaFailure`,
//! `ErrorInfo`), which no wait of ours refills.

use std::time::Duration;

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
