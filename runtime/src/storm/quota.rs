//! The retry quota's settings: a time window, a share of the window's successes that may be
//! retried, and a floor of retries for quiet clients (docs/design.md §10).

use std::time::Duration;

/// The retry quota shared by every call of a `Runtime`: how many retries the provider is sent,
/// judged by how many of its calls succeed.
///
/// Over a sliding window (60 s), every successful model call deposits into the budget and every
/// retry withdraws from it, at the moment the retry is about to be sent (after its backoff, when
/// the calls that succeeded meanwhile have been counted). A retry is sent while the retries of the
/// window stay below `retry_percent` % of the window's successes plus a floor of `min_retries`;
/// otherwise it is refused and the exec ends with kind `refused`. First attempts always go through.
///
/// So the budget tells a wobble from an outage by what the provider answers: while at least as
/// many calls succeed as are retried (an error rate up to 50 % with the standard settings), every
/// retry goes; in an outage nothing succeeds and only the floor's retries are sent, about one
/// request per logical call however many calls fail together. Successes and retries older than the
/// window are forgotten, so retries resume within one window after an outage ends, and at once
/// when calls succeed again.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// use agentic_runtime::storm::RetryQuota;
/// use agentic_runtime::{Runtime, ScriptedProvider};
///
/// let quota = RetryQuota::standard().with_retry_percent(50).with_window(Duration::from_secs(60));
/// let runtime = Runtime::builder(ScriptedProvider::new([])).with_retry_quota(Some(quota)).build().unwrap();
/// let unbounded = Runtime::builder(ScriptedProvider::new([])).with_retry_quota(None).build().unwrap(); // the off switch
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryQuota {
    window: Duration,
    retry_percent: u32,
    min_retries: u32,
}

impl Default for RetryQuota {
    fn default() -> Self {
        Self::standard()
    }
}

impl RetryQuota {
    /// The shortest window: shorter ones count as this (a retry's own backoff is longer).
    pub const MIN_WINDOW: Duration = Duration::from_secs(1);

    /// The longest window: longer ones count as this (an hour-old success says nothing of now).
    pub const MAX_WINDOW: Duration = Duration::from_secs(3600);

    /// A 60 s window, 100 retries per 100 successes, and a floor of 100 retries.
    pub const fn standard() -> Self {
        Self { window: Duration::from_secs(60), retry_percent: 100, min_retries: 100 }
    }

    /// How long a success or a retry counts, between [`MIN_WINDOW`](Self::MIN_WINDOW) and
    /// [`MAX_WINDOW`](Self::MAX_WINDOW) (a value outside counts as the nearer one).
    ///
    /// # Default
    /// 60 s: long enough to hold the successes of a burst whose failures come late (calls that time
    /// out, more than once) and retry after a backoff of seconds; short enough that an outage's
    /// retries are forgotten a minute after it ends, and that the successes of the minute before an
    /// outage pay for at most that many of its retries.
    pub const fn with_window(mut self, window: Duration) -> Self {
        self.window = window;
        self
    }

    /// Retries allowed per 100 successes in the window (beyond the floor). 0 leaves the floor only.
    ///
    /// # Default
    /// `100`: one retry per success, so every retry goes while at most half the calls fail, and a
    /// provider that fails more is sent at most twice the requests it answers.
    pub const fn with_retry_percent(mut self, percent: u32) -> Self {
        self.retry_percent = percent;
        self
    }

    /// Retries allowed in any window whatever succeeded, so that a quiet client (one call now and
    /// then) keeps its retries. 0: only successes pay for retries.
    ///
    /// # Default
    /// `100`: a lone exec's 11 retries several times over, and at most a tenth of a request more
    /// per call in an outage of 1 000 calls.
    pub const fn with_min_retries(mut self, retries: u32) -> Self {
        self.min_retries = retries;
        self
    }

    /// The window, within [`MIN_WINDOW`](Self::MIN_WINDOW) and [`MAX_WINDOW`](Self::MAX_WINDOW).
    pub const fn window(&self) -> Duration {
        if self.window.as_nanos() < Self::MIN_WINDOW.as_nanos() {
            Self::MIN_WINDOW
        } else if self.window.as_nanos() > Self::MAX_WINDOW.as_nanos() {
            Self::MAX_WINDOW
        } else {
            self.window
        }
    }

    /// Retries allowed per 100 successes in the window.
    pub const fn retry_percent(&self) -> u32 {
        self.retry_percent
    }

    /// Retries allowed in any window whatever succeeded.
    pub const fn min_retries(&self) -> u32 {
        self.min_retries
    }

    /// How many more retries a window with `successes` and `retries` allows (0 when none).
    pub fn allowance(&self, successes: f64, retries: u64) -> u64 {
        let earned = successes.max(0.0) * f64::from(self.retry_percent) / 100.0;
        let allowed = (f64::from(self.min_retries) + earned).floor();
        // Saturating: a float beyond u64 converts to u64::MAX.
        (allowed as u64).saturating_sub(retries)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_standard_budget_allows_the_floor_plus_one_retry_per_success() {
        let quota = RetryQuota::standard();
        assert_eq!(quota.min_retries(), 100);
        assert_eq!(quota.window(), Duration::from_secs(60));
        assert_eq!(quota.allowance(0.0, 0), 100);
        assert_eq!(quota.allowance(0.0, 100), 0);
        assert_eq!(quota.allowance(250.0, 100), 250);
        assert_eq!(quota.allowance(2.5, 0), 102, "part of a success earns nothing yet");
        assert_eq!(quota.allowance(0.0, 1_000), 0);
    }

    #[test]
    fn a_window_outside_the_bounds_counts_as_the_nearer_one() {
        assert_eq!(RetryQuota::standard().with_window(Duration::ZERO).window(), RetryQuota::MIN_WINDOW);
        assert_eq!(RetryQuota::standard().with_window(Duration::MAX).window(), RetryQuota::MAX_WINDOW);
        let huge = RetryQuota::standard().with_min_retries(u32::MAX).with_retry_percent(u32::MAX);
        assert_eq!(huge.allowance(f64::MAX, 0), u64::MAX);
    }

    #[test]
    fn the_ratio_and_the_floor_are_settings() {
        let quota = RetryQuota::standard().with_retry_percent(50).with_min_retries(0);
        assert_eq!(quota.allowance(10.0, 0), 5);
        assert_eq!(quota.allowance(10.0, 5), 0);
    }
}
