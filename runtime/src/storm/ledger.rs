//! The successes and retries of the retry quota's sliding window, in slots of a tenth of it.
//!
//! Successes are counted without reading the clock (the success path reads none): they wait in a
//! counter until a retry reads the clock. Those that came in since the previous retry are then
//! spread evenly over the time between the two, so a burst's successes count as recent and a long
//! calm's as a rate (how many of them fell in the window). A retry is placed at the moment it is
//! sent.
//!
//! Only a retry moves the window ([`Ledger::read`]). Someone asking for the budget (a metrics
//! scrape, `Runtime::retry_quota`) gets what a retry sent now would see ([`Ledger::peek`]), on a
//! copy: were a reading to place the successes, it would choose the span they are spread over, and
//! a scrape would change which retries are sent.

use std::time::Duration;

use tokio::time::Instant;

/// How many slots the runtime's sliding windows (the retry quota's, and each circuit breaker's) are
/// cut into: a count is forgotten at most a tenth of a window late (a breaker's outcome, at most a
/// tenth early).
///
/// A [`SharedStore`](crate::storm::store::SharedStore) that keeps these windows for a fleet cuts
/// them the same (the `agentic-redis` store does), so that a fleet forgets as one process does.
pub const WINDOW_SLOTS: usize = 10;

/// The slots of this window.
const SLOTS: usize = WINDOW_SLOTS;

/// One window's counts, by slot. Small (about 200 bytes) and plain, so that a reading copies it.
#[derive(Debug, Clone)]
pub struct Ledger {
    window: Duration,
    slot: Duration,
    /// The start of slot 0.
    origin: Instant,
    /// The slot of the latest reading, counted from `origin`.
    head: u64,
    successes: [f64; SLOTS],
    retries: [u64; SLOTS],
    /// The latest reading: successes counted since then are placed between it and the next one.
    placed_until: Instant,
}

impl Ledger {
    /// An empty window of `window`, read first at `now`.
    pub fn new(window: Duration, now: Instant) -> Self {
        Self {
            window,
            slot: window / SLOTS as u32,
            origin: now,
            head: 0,
            successes: [0.0; SLOTS],
            retries: [0; SLOTS],
            placed_until: now,
        }
    }

    /// Moves the window to `now` (forgetting what fell out of it) and places `successes` counted
    /// since the latest reading.
    pub fn read(&mut self, now: Instant, successes: u64) {
        // A clock never runs back, but an instant taken before `origin` must not wrap.
        let now = now.max(self.placed_until);
        self.advance(self.slot_of(now));
        self.place(successes, now);
        self.placed_until = now;
    }

    /// The successes and retries a [`Ledger::read`] at `now` with `successes` would leave, without
    /// reading: the ledger is unchanged, so the answer does not depend on whether, or how often, it
    /// was asked before.
    pub(crate) fn peek(&self, now: Instant, successes: u64) -> (f64, u64) {
        let mut copy = self.clone();
        copy.read(now, successes);
        copy.totals()
    }

    /// The successes and retries in the window (as of the latest reading).
    pub fn totals(&self) -> (f64, u64) {
        (self.successes.iter().sum(), self.retries.iter().sum())
    }

    /// Counts a retry sent at the latest reading.
    pub fn add_retry(&mut self) {
        self.retries[self.index(self.head)] += 1;
    }

    fn slot_of(&self, at: Instant) -> u64 {
        let since = at.saturating_duration_since(self.origin).as_nanos();
        u64::try_from(since / self.slot.as_nanos().max(1)).unwrap_or(u64::MAX)
    }

    fn index(&self, slot: u64) -> usize {
        (slot % SLOTS as u64) as usize
    }

    /// Makes `slot` the newest, emptying the slots it passes (all of them after a whole window).
    fn advance(&mut self, slot: u64) {
        if slot <= self.head {
            return;
        }
        let passed = (slot - self.head).min(SLOTS as u64);
        for step in 1..=passed {
            let index = self.index(self.head + step);
            self.successes[index] = 0.0;
            self.retries[index] = 0;
        }
        self.head = slot;
    }

    /// Spreads `successes` evenly over `[placed_until, now]`, keeping the part inside the window.
    fn place(&mut self, successes: u64, now: Instant) {
        if successes == 0 {
            return;
        }
        let count = successes as f64;
        let span = now.saturating_duration_since(self.placed_until);
        // The window's start, never before slot 0 (nothing was counted before it).
        let window_start = now.checked_sub(self.window).map_or(self.origin, |start| start.max(self.origin));
        let start = self.placed_until.max(window_start);
        let inside = now.saturating_duration_since(start);
        if inside.is_zero() {
            // All at one instant (or too long ago to matter, when `span` is not zero).
            if span.is_zero() {
                let head = self.index(self.head);
                self.successes[head] += count;
            }
            return;
        }
        // The share of the successes that fell inside the window, spread over its slots.
        let share = count * inside.as_secs_f64() / span.as_secs_f64();
        for slot in self.slot_of(start)..=self.head {
            let offset = u32::try_from(slot).ok().and_then(|slot| self.slot.checked_mul(slot));
            let Some(slot_start) = offset.and_then(|offset| self.origin.checked_add(offset)) else { continue };
            let from = slot_start.max(start);
            let to = (slot_start + self.slot).min(now);
            let overlap = to.saturating_duration_since(from);
            let index = self.index(slot);
            self.successes[index] += share * overlap.as_secs_f64() / inside.as_secs_f64();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WINDOW: Duration = Duration::from_secs(10);

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    #[test]
    fn a_burst_counts_at_once_and_is_forgotten_a_window_later() {
        let start = Instant::now();
        let mut ledger = Ledger::new(WINDOW, start);
        ledger.read(start, 700);
        ledger.add_retry();
        assert_eq!(ledger.totals(), (700.0, 1));
        ledger.read(start + secs(9.5), 0);
        assert_eq!(ledger.totals(), (700.0, 1), "still inside the window");
        ledger.read(start + secs(10.0), 0);
        assert_eq!(ledger.totals(), (0.0, 0), "a window later both are forgotten");
    }

    #[test]
    fn successes_counted_between_readings_are_spread_over_the_time_between() {
        let start = Instant::now();
        let mut ledger = Ledger::new(WINDOW, start);
        // 1 000 successes over 100 s of calm: 100 of them fell in the last 10 s.
        ledger.read(start + secs(100.0), 1_000);
        let (successes, _) = ledger.totals();
        assert!((successes - 100.0).abs() < 1e-6, "{successes}");
        // And they leave the window slot by slot, not at once.
        ledger.read(start + secs(105.0), 0);
        let (successes, _) = ledger.totals();
        assert!((successes - 50.0).abs() < 1e-6, "{successes}");
    }

    #[test]
    fn successes_between_two_close_readings_all_count() {
        let start = Instant::now();
        let mut ledger = Ledger::new(WINDOW, start);
        ledger.read(start + secs(3.0), 0);
        ledger.read(start + secs(3.02), 300);
        assert_eq!(ledger.totals().0, 300.0);
    }

    #[test]
    fn a_long_silence_empties_every_slot() {
        let start = Instant::now();
        let mut ledger = Ledger::new(WINDOW, start);
        for second in 0..10 {
            ledger.read(start + secs(f64::from(second)), 10);
            ledger.add_retry();
        }
        ledger.read(start + Duration::from_secs(3_600 * 24 * 365), 0);
        assert_eq!(ledger.totals(), (0.0, 0));
        ledger.add_retry();
        assert_eq!(ledger.totals(), (0.0, 1));
    }

    #[test]
    fn an_instant_before_the_first_reading_is_taken_as_it() {
        let start = Instant::now() + secs(5.0);
        let mut ledger = Ledger::new(WINDOW, start);
        ledger.read(start - secs(1.0), 4);
        assert_eq!(ledger.totals(), (4.0, 0));
    }
}
