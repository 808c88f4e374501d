//! One limit's bucket: it refills continuously at the limit's rate, up to its size; a call takes
//! its need from it, and a call that finds too little reserves its need anyway (the level goes
//! below zero) and waits until the refill has paid for it, so that later callers wait behind it.
//!
//! The same rules run in Lua for a fleet (`RedisStore`); a change here is a change there.

use std::time::Duration;

use tokio::time::Instant;

use super::limits::Limit;

/// How long a limit takes to refill from empty when nothing says otherwise: a minute, the window of
/// every per-minute limit the providers state (RPM, TPM). A fleet's pacer in a
/// [`SharedStore`](crate::storm::store::SharedStore) refills such a limit the same.
pub const DEFAULT_WINDOW: Duration = Duration::from_secs(60);

/// The longest wait a bucket computes (a day): a limit of 1 a minute and a call of a million tokens
/// would otherwise overflow the clocks. Every deadline is shorter. A fleet's pacer in a
/// [`SharedStore`](crate::storm::store::SharedStore) computes no longer wait.
pub const MAX_WAIT: Duration = Duration::from_secs(24 * 60 * 60);

/// One limit's state.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Bucket {
    /// The bucket's size.
    size: f64,
    /// What is in it at `at`; below zero while callers wait for what they reserved.
    level: f64,
    /// Refill per second.
    rate: f64,
    at: Instant,
    /// When the server said the limit is full again, and what was taken since it said so: the
    /// level at that instant is at least `size - taken`, whatever the rate. Only for a limit whose
    /// rate is derived from its reset (OpenAI's durations): a limit with a stated window has an
    /// exact rate, and its reset is an instant on the server's clock, which a client's may not
    /// match by seconds.
    full_at: Option<Instant>,
    taken: f64,
}

impl Bucket {
    /// A bucket of `size` that is full at `now` and refills in `window`.
    pub(crate) fn full(size: u64, window: Duration, now: Instant) -> Self {
        let size = size.max(1) as f64;
        Self { size, level: size, rate: size / secs(window), at: now, full_at: None, taken: 0.0 }
    }

    /// A bucket learnt from `limit`, stated by a response received at `received`.
    pub(crate) fn learnt(limit: &Limit, received: Instant, now: Instant) -> Self {
        let mut bucket = Self::full(limit.limit, DEFAULT_WINDOW, received);
        bucket.rate = rate_of(limit).unwrap_or(bucket.rate);
        bucket.level = limit.remaining as f64;
        bucket.full_at = if limit.window.is_some() { None } else { received.checked_add(limit.reset) };
        bucket.refill(now);
        bucket
    }

    /// Takes in what a response received at `received` stated: the limit's size and rate are the
    /// server's; the level is the lower of this bucket's and the server's (a call this process
    /// reserved may not have reached the server yet; another process's call may have).
    pub(crate) fn learn(&mut self, limit: &Limit, received: Instant, now: Instant) {
        self.refill(now);
        let server = Self::learnt(limit, received, now);
        self.size = server.size;
        self.rate = rate_of(limit).unwrap_or(self.rate);
        self.level = self.level.min(server.level);
        self.full_at = server.full_at;
        self.taken = 0.0;
    }

    /// Moves the bucket to `now`: the refill since, up to its size; at the server's reset, at
    /// least its size less what was taken since the server said so.
    pub(crate) fn refill(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.at);
        self.level = (self.level + self.rate * elapsed.as_secs_f64()).min(self.size);
        if self.full_at.is_some_and(|full| full <= now) {
            self.level = self.level.max(self.size - self.taken);
            self.full_at = None;
        }
        self.at = self.at.max(now);
    }

    /// How long after `now` a call that needs `need` may go, behind every call that reserved
    /// before it; never past the server's reset when the bucket then holds the need.
    pub(crate) fn wait_for(&mut self, need: u64, now: Instant) -> Duration {
        self.refill(now);
        // A call larger than the bucket goes once it is full: it can never find more.
        let need = (need as f64).min(self.size);
        let short = need - self.level;
        if short <= 0.0 {
            return Duration::ZERO;
        }
        // Rounded up to the microsecond: a wait a float's rounding put a hair before the refill
        // would reach the server before the request's share is there.
        let micros = (short / self.rate * 1e6).ceil();
        let by_rate =
            if micros < MAX_WAIT.as_micros() as f64 { Duration::from_micros(micros as u64) } else { MAX_WAIT };
        match self.full_at {
            Some(full) if self.size - self.taken >= need => by_rate.min(full.saturating_duration_since(now)),
            _ => by_rate,
        }
    }

    /// Takes `need` (the bucket was moved to now by [`Bucket::wait_for`]).
    pub(crate) fn take(&mut self, need: u64) {
        let need = (need as f64).min(self.size);
        self.level -= need;
        self.taken += need;
    }

    /// Reconciles a call that reserved `reserved` of this limit with the `used` its answer
    /// reported: what it did not use goes back (up to the size), what it used beyond is taken.
    ///
    /// Usage is the server's word, so both are bounded by the bucket's size: [`Bucket::take`]
    /// never took more than that, and one call cannot have used more than its limit allows in a
    /// whole window (a server refuses a request larger than its limit), so a reported `u64::MAX`
    /// costs one bucket at most. And a settle never takes the level below minus the size (nor
    /// lower than it already was, by reservations that wait): one answer delays the next calls
    /// by two windows at most, and a bucket untouched for two windows is full again, whatever
    /// was reported.
    pub(crate) fn settle(&mut self, reserved: u64, used: u64) {
        let amount = (reserved as f64).min(self.size) - (used as f64).min(self.size);
        let floor = self.level.min(-self.size);
        self.level = (self.level + amount).max(floor).min(self.size);
        self.taken = (self.taken - amount).max(0.0);
    }

    /// How long after `now` the limit is full again: as the server said, or at its rate (every
    /// reservation's share included), for a bucket moved to `now`.
    pub(crate) fn resets_in(&self, now: Instant) -> Option<Duration> {
        if let Some(full) = self.full_at {
            return Some(full.saturating_duration_since(now));
        }
        let micros = ((self.size - self.level).max(0.0) / self.rate * 1e6).ceil();
        Some(if micros < MAX_WAIT.as_micros() as f64 { Duration::from_micros(micros as u64) } else { MAX_WAIT })
    }

    /// The bucket's size.
    pub(crate) fn size(&self) -> u64 {
        self.size as u64
    }

    /// What is in it at the last move (below zero while callers wait).
    #[cfg(test)]
    pub(crate) fn level(&self) -> f64 {
        self.level
    }
}

/// The windows providers state their limits over: a minute (RPM, TPM) and a day (RPD, TPD).
const DOCUMENTED_WINDOWS: [f64; 2] = [60.0, 24.0 * 60.0 * 60.0];

/// The refill rate `limit` implies, per second: its size over its window, the window stated or
/// derived from the reset (what was used refills by then); `None` when neither tells (a full limit
/// without a window, one used, or a reset of zero).
///
/// A derived window is a range, not a number: a server states what is left as a whole number,
/// rounded down, and its reset to the millisecond, so `2 used, full in 0.3 s` may be 1.2 used, a
/// window two thirds longer (and `1 used` any window at all: no rate). Within the range, a window
/// providers state limits over (a minute, a day) is taken, exactly; else the longest the range
/// allows, never faster than the server.
fn rate_of(limit: &Limit) -> Option<f64> {
    let size = limit.limit.max(1) as f64;
    if let Some(window) = limit.window {
        return Some(size / secs(window));
    }
    let used = limit.limit.saturating_sub(limit.remaining) as f64;
    if used < 2.0 || limit.reset.is_zero() {
        return None;
    }
    let reset = limit.reset.as_secs_f64();
    let shortest = size * (reset - 0.001).max(0.0) / used;
    let longest = size * reset / (used - 1.0);
    let window = DOCUMENTED_WINDOWS.into_iter().find(|window| (shortest..=longest).contains(window));
    Some(size / window.unwrap_or(longest).max(0.001))
}

/// `duration` in seconds, at least a millisecond (a rate over zero time is no rate).
fn secs(duration: Duration) -> f64 {
    duration.as_secs_f64().max(0.001)
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[tokio::test(start_paused = true)]
    async fn a_full_bucket_admits_then_waits_at_its_rate_in_arrival_order() {
        let now = Instant::now();
        let mut bucket = Bucket::full(120, DEFAULT_WINDOW, now);
        for _ in 0..120 {
            assert_eq!(bucket.wait_for(1, now), Duration::ZERO);
            bucket.take(1);
        }
        // 2 a second: each later caller waits half a second more than the one before.
        let waits: Vec<Duration> = (0..3)
            .map(|_| {
                let wait = bucket.wait_for(1, now);
                bucket.take(1);
                wait
            })
            .collect();
        assert_eq!(waits, [S / 2, S, S * 3 / 2]);
        assert_eq!(bucket.level(), -3.0);
    }

    #[tokio::test(start_paused = true)]
    async fn the_rate_is_the_window_stated_or_what_was_used_over_the_reset() {
        let now = Instant::now();
        // OpenAI: 59 of 100 left, full in 24 s: 41 (or, rounded, 40) in 24 s: a window of 58.5 s to
        // 60 s, so the minute: 100 a minute.
        let openai = Limit::new(100, 59, S * 24);
        let mut bucket = Bucket::learnt(&openai, now, now);
        assert_eq!(bucket.level(), 59.0);
        bucket.take(59);
        assert_eq!(bucket.wait_for(5, now), S * 3);
        // One used may have been a fraction of one: any window from 0.6 s on, no rate (a minute's).
        // 5 used of 10 in 40 s: 80 s to 100 s, no documented one: the longest, 1 in 10 s.
        let odd = Bucket::learnt(&Limit::new(10, 5, S * 40), now, now);
        assert_eq!(odd.rate, 0.1);
        let one = Bucket::learnt(&Limit::new(100, 99, Duration::from_millis(600)), now, now);
        assert_eq!(one.rate, 100.0 / 60.0);
        // Anthropic: per minute, whatever the reset says.
        let anthropic = Limit::new(50, 0, S * 7).with_window(S * 60);
        let mut bucket = Bucket::learnt(&anthropic, now, now);
        assert_eq!(bucket.wait_for(1, now), Duration::from_millis(1200));
    }

    #[tokio::test(start_paused = true)]
    async fn never_past_the_servers_reset_and_a_reset_in_the_past_is_full() {
        let now = Instant::now();
        // 5 of 10 used, full in 40 s: 1 in 10 s (the longest window that allows). A later response
        // says it is full, and full again in 2 s (no rate in that: the one before stays): 40 s by
        // the rate for 4, 2 s by the reset.
        let mut bucket = Bucket::learnt(&Limit::new(10, 5, S * 40), now, now);
        bucket.learn(&Limit::new(10, 10, S * 2), now, now);
        bucket.take(5);
        assert_eq!(bucket.wait_for(4, now), S * 2);
        // Once 9 are taken, the reset holds 1, not the 4: the rate decides.
        bucket.take(4);
        assert_eq!(bucket.wait_for(4, now), S * 80);
        // A stated window (Anthropic's minute) is exact: its reset, an instant on the server's
        // clock, neither caps a wait nor fills the bucket.
        let mut stated = Bucket::learnt(&Limit::new(10, 2, S * 5).with_window(S * 60), now, now);
        assert_eq!(stated.wait_for(5, now), S * 18);
        assert_eq!(stated.resets_in(now), Some(S * 48));
        let mut past = Bucket::learnt(&Limit::new(10, 0, Duration::ZERO), now, now);
        assert_eq!(past.wait_for(10, now), Duration::ZERO, "the server says it is full by now");
    }

    #[tokio::test(start_paused = true)]
    async fn learning_keeps_the_lower_level_and_a_shrunk_size() {
        let now = Instant::now();
        let mut bucket = Bucket::full(100, DEFAULT_WINDOW, now);
        bucket.take(30);
        // The server has seen only 10 of them: this process's 70 stays.
        bucket.learn(&Limit::new(100, 90, S * 6), now, now);
        assert_eq!(bucket.level(), 70.0);
        // Another process used more: the server's 20 wins; then the limit shrinks to 10.
        bucket.learn(&Limit::new(100, 20, S * 48), now, now);
        assert_eq!(bucket.level(), 20.0);
        bucket.learn(&Limit::new(10, 10, Duration::ZERO), now, now);
        assert_eq!((bucket.size(), bucket.level()), (10, 10.0));
        assert_eq!(bucket.wait_for(50, now), Duration::ZERO, "a call larger than the bucket goes once it is full");
    }

    #[tokio::test(start_paused = true)]
    async fn settling_refills_up_to_the_size_and_takes_down_to_minus_the_size() {
        let now = Instant::now();
        let mut bucket = Bucket::full(1000, DEFAULT_WINDOW, now);
        bucket.take(900);
        bucket.settle(900, 50);
        assert_eq!(bucket.level(), 950.0);
        bucket.settle(500, 0);
        assert_eq!(bucket.level(), 1000.0);
        bucket.settle(0, 1100);
        assert_eq!(bucket.level(), 0.0, "one call uses one bucket at most");
        bucket.settle(0, 700);
        assert_eq!(bucket.level(), -700.0);
        bucket.settle(0, 700);
        assert_eq!(bucket.level(), -1000.0, "never below minus the size");
        assert!(bucket.wait_for(1, now) <= MAX_WAIT);
    }

    #[tokio::test(start_paused = true)]
    async fn a_hostile_usage_costs_two_windows_at_most() {
        let now = Instant::now();
        // 1 000 tokens a minute, ten calls of 100 reserved; their answers say u64::MAX, 1e19, or
        // Gemini's thoughts of 2^64 - 1 added to the output.
        for used in [u64::MAX, 10_000_000_000_000_000_000, u64::MAX - 1] {
            let mut bucket = Bucket::full(1000, DEFAULT_WINDOW, now);
            for _ in 0..10 {
                bucket.take(100);
            }
            for _ in 0..10 {
                bucket.settle(100, used);
            }
            assert_eq!(bucket.level(), -1000.0, "{used}");
            // The next call of 100 waits for 1 100 (66 s), and the bucket is full in two windows.
            assert_eq!(bucket.wait_for(100, now), S * 66, "{used}");
            assert_eq!(bucket.resets_in(now), Some(S * 120));
        }
        // Reservations that wait keep their place: a settle takes nothing of theirs.
        let mut bucket = Bucket::full(10, DEFAULT_WINDOW, now);
        for _ in 0..30 {
            bucket.take(1);
        }
        bucket.settle(1, u64::MAX);
        assert_eq!(bucket.level(), -20.0);
    }
}
