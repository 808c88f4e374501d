//! The server's retry hints in the response headers: `retry-after-ms`, `Retry-After` (seconds or
//! an HTTP-date) and `x-should-retry`. A hint in the error body (Gemini's `RetryInfo`) comes as
//! [`ErrorFacts::retry_after`](super::errors::ErrorFacts::retry_after); the headers' win over it.

use std::time::{Duration, SystemTime};

use reqwest::header::HeaderMap;

use super::super::google_rpc::parse_seconds;
use crate::error::ModelError;

/// The server's retry hints, from the response headers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Hints {
    /// `retry-after-ms`, else `Retry-After` (seconds or an HTTP-date relative to `now`).
    pub(crate) retry_after: Option<Duration>,
    /// `x-should-retry: true|false`.
    pub(crate) should_retry: Option<bool>,
}

impl Hints {
    /// Reads the hints from `headers`; an HTTP-date is measured from `now` (a past date is 0 s).
    pub(crate) fn from_headers(headers: &HeaderMap, now: SystemTime) -> Self {
        let header = |name: &str| headers.get(name).and_then(|value| value.to_str().ok()).map(str::trim);
        let retry_after = header("retry-after-ms")
            .and_then(|ms| parse_seconds(ms, 1000.0))
            .or_else(|| header("retry-after").and_then(|value| parse_retry_after(value, now)));
        let should_retry = header("x-should-retry").and_then(|value| match value.to_ascii_lowercase().as_str() {
            "true" => Some(true),
            "false" => Some(false),
            _ => None,
        });
        Self { retry_after, should_retry }
    }

    /// `error` with these hints.
    pub(crate) fn apply(self, mut error: ModelError) -> ModelError {
        if let Some(wait) = self.retry_after {
            error = error.with_retry_after(wait);
        }
        if let Some(should_retry) = self.should_retry {
            error = error.with_should_retry(should_retry);
        }
        error
    }
}

/// `Retry-After`: delay-seconds, or an HTTP-date.
fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    parse_seconds(value, 1.0).or_else(|| {
        let date = httpdate::parse_http_date(value).ok()?;
        Some(date.duration_since(now).unwrap_or(Duration::ZERO))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, value.parse().unwrap());
        }
        map
    }

    #[test]
    fn retry_after_ms_wins_then_seconds_then_an_http_date() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let hints = |pairs: &[(&'static str, &str)]| Hints::from_headers(&headers(pairs), now);
        assert_eq!(
            hints(&[("retry-after-ms", "1500.5"), ("retry-after", "9")]).retry_after,
            Some(Duration::from_micros(1_500_500))
        );
        assert_eq!(hints(&[("retry-after", " 7 ")]).retry_after, Some(Duration::from_secs(7)));
        assert_eq!(hints(&[("retry-after", "0.25")]).retry_after, Some(Duration::from_millis(250)));
        let later = httpdate::fmt_http_date(now + Duration::from_secs(30));
        assert_eq!(hints(&[("retry-after", &later)]).retry_after, Some(Duration::from_secs(30)));
        let earlier = httpdate::fmt_http_date(now - Duration::from_secs(30));
        assert_eq!(hints(&[("retry-after", &earlier)]).retry_after, Some(Duration::ZERO));
        assert_eq!(hints(&[("retry-after", "soon"), ("retry-after-ms", "-1")]).retry_after, None);
        assert_eq!(hints(&[("retry-after-ms", "NaN")]).retry_after, None);
        assert_eq!(hints(&[("retry-after-ms", "1e300")]).retry_after, Some(Duration::MAX));
        assert_eq!(hints(&[("retry-after", "99999999999999999999999")]).retry_after, Some(Duration::MAX));
        assert_eq!(hints(&[("retry-after", "inf")]).retry_after, Some(Duration::MAX));
    }

    #[test]
    fn should_retry_is_true_false_or_absent() {
        let now = SystemTime::now();
        let should = |value: &str| Hints::from_headers(&headers(&[("x-should-retry", value)]), now).should_retry;
        assert_eq!(should("true"), Some(true));
        assert_eq!(should("FALSE"), Some(false));
        assert_eq!(should("maybe"), None);
        assert_eq!(Hints::from_headers(&HeaderMap::new(), now), Hints::default());
    }
}
