use std::time::Duration;

use super::patterns::RETRY_AFTER_TIME;
use super::scan::Scan;
use crate::error::ModelError;

/// The server's requested wait: the typed hint (`retry-after-ms`, then `Retry-After`) when there is
/// one, else a "retry in 2.5s" / "try again in 20 seconds" in the text.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use agentic_runtime::classify::retry_hint;
///
/// assert_eq!(retry_hint("Rate limit reached. Please try again in 2.5s.", None), Some(Duration::from_millis(2500)));
/// assert_eq!(retry_hint("retry in 300ms", None), Some(Duration::from_millis(300)));
/// assert_eq!(retry_hint("overloaded", None), None);
/// ```
pub fn retry_hint(text: &str, error: Option<&ModelError>) -> Option<Duration> {
    if let Some(wait) = error.and_then(ModelError::retry_after) {
        return Some(wait);
    }
    stated_wait(text)
}

/// [`retry_hint`] on a scanned text: the text is read only when the scan found a "retry in".
pub(crate) fn retry_hint_of(scan: &Scan<'_>, error: Option<&ModelError>) -> Option<Duration> {
    if let Some(wait) = error.and_then(ModelError::retry_after) {
        return Some(wait);
    }
    scan.may_state_a_wait().then(|| stated_wait(scan.text())).flatten()
}

/// The wait a text states: "retry in 2.5s", "try again in 20 seconds".
fn stated_wait(text: &str) -> Option<Duration> {
    let captures = RETRY_AFTER_TIME.captures(text)?;
    let amount: f64 = captures[1].parse().ok()?;
    let unit_ms = match captures.get(2).map(|unit| unit.as_str().to_ascii_lowercase()) {
        Some(unit) if unit.starts_with("ms") || unit.starts_with("milli") => 1.0,
        Some(unit) if unit.starts_with('m') => 60_000.0,
        _ => 1000.0,
    };
    let ms = amount * unit_ms;
    (ms.is_finite() && ms >= 0.0 && ms < u64::MAX as f64).then(|| Duration::from_millis(ms.round() as u64))
}
