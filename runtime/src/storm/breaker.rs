//! The circuit breaker of one target (a provider and its model): its settings, its states, and the
//! state machine a `Runtime` with fallbacks asks before each call (docs/design.md §10).
//!
//! Closed: calls go, and their outcomes fill a sliding window (ten slots of a tenth of it). Once
//! the window holds at least `min_calls` calls of which at least `failure_percent` % failed, the
//! breaker opens: calls are skipped at no cost for `open_for`. Then it is half-open: one probe call
//! is let through; its answer closes the breaker (with an empty window), its failure opens it for
//! another `open_for`. A probe that never reports is forgotten after `open_for`, and another goes.
//!
//! Long because its unit tests are, at its end: every transition of the state
//! machine, and the seeded sequences the Lua twin in the Redis store is compared with.

use std::fmt;
use std::time::Duration;

use tokio::time::Instant;

use super::ledger::WINDOW_SLOTS;
use crate::error::PolicyError;
use crate::policy::rules::{format_ms, millis};

/// When a target's breaker opens and for how long: at least `failure_percent` % of at least
/// `min_calls` calls in the last `window` failed; it stays open for `open_for`.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// use agentic_runtime::storm::BreakerSettings;
///
/// let standard = BreakerSettings::standard();
/// assert_eq!((standard.failure_percent(), standard.min_calls()), (50, 20));
/// let eager = BreakerSettings::new(25, 5, Duration::from_secs(10), Duration::from_secs(5))?;
/// assert_eq!(eager.open_for(), Duration::from_secs(5));
/// # Ok::<(), agentic_runtime::policy::PolicyError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BreakerSettings {
    failure_percent: u32,
    min_calls: u32,
    window: Duration,
    open_for: Duration,
}

impl Default for BreakerSettings {
    fn default() -> Self {
        Self::standard()
    }
}

impl BreakerSettings {
    /// The longest `window` and `open_for`: an hour-old failure says nothing of now, and a target
    /// skipped for longer is as good as removed.
    pub const MAX_DURATION: Duration = Duration::from_secs(3600);

    /// Opens when at least 50 % of at least 20 calls in 10 s failed; open for 30 s
    /// (docs/design.md §10 compares them with Polly's, resilience4j's and Finagle's).
    pub const fn standard() -> Self {
        Self { failure_percent: 50, min_calls: 20, window: Duration::from_secs(10), open_for: Duration::from_secs(30) }
    }

    /// Settings of your own.
    ///
    /// # Errors
    ///
    /// A [`PolicyError`] naming the setting and its valid range when `failure_percent` is not in
    /// 1..=100, `min_calls` is 0, or `window` or `open_for` is zero or longer than
    /// [`MAX_DURATION`](Self::MAX_DURATION) (1 h).
    pub fn new(
        failure_percent: u32,
        min_calls: u32,
        window: Duration,
        open_for: Duration,
    ) -> Result<Self, PolicyError> {
        if !(1..=100).contains(&failure_percent) {
            return Err(invalid("failure_percent", format!("{failure_percent}"), "from 1 to 100"));
        }
        if min_calls == 0 {
            return Err(invalid("min_calls", "0".to_owned(), "at least 1"));
        }
        for (name, value) in [("window", window), ("open_for", open_for)] {
            if value.is_zero() || value > Self::MAX_DURATION {
                let shown = format!("{} ms", value.as_millis());
                return Err(invalid(name, shown, "from 1 ms to 1 h (3600000 ms)"));
            }
        }
        Ok(Self { failure_percent, min_calls, window, open_for })
    }

    /// The share of the window's calls, in percent, whose failure opens the breaker.
    pub const fn failure_percent(&self) -> u32 {
        self.failure_percent
    }

    /// The fewest calls in the window before their failures can open the breaker.
    pub const fn min_calls(&self) -> u32 {
        self.min_calls
    }

    /// How long a call's outcome counts.
    pub const fn window(&self) -> Duration {
        self.window
    }

    /// How long the breaker stays open before a probe call is let through.
    pub const fn open_for(&self) -> Duration {
        self.open_for
    }

    /// Whether `failures` of `calls` open the breaker.
    pub(crate) const fn trips(&self, failures: u64, calls: u64) -> bool {
        calls >= self.min_calls as u64 && failures.saturating_mul(100) >= (self.failure_percent as u64) * calls
    }
}

fn invalid(name: &'static str, value: String, range: &str) -> PolicyError {
    PolicyError::new(name, format!("breaker `{name}` ({value}) must be {range}"))
}

/// Why a breaker opened: "20 failures of 20 calls in 10 s".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Opened {
    /// The failed calls in the window when it opened.
    pub failures: u64,
    /// The calls in the window when it opened.
    pub calls: u64,
    /// The window's length.
    pub window: Duration,
}

impl fmt::Display for Opened {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self { failures, calls, window } = self;
        write!(f, "{failures} failures of {calls} calls in {}", format_ms(millis(*window)))
    }
}

/// A breaker's state, as [`Runtime`](crate::Runtime)'s targets report it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum BreakerState {
    /// Calls go.
    Closed,
    /// Calls are skipped for `left` more.
    Open {
        /// What is left of the open period.
        left: Duration,
        /// Why it opened.
        opened: Opened,
    },
    /// One probe call is in flight; the others are skipped until it reports.
    HalfOpen {
        /// Why it opened.
        opened: Opened,
    },
}

impl BreakerState {
    /// `"closed"`, `"open"` or `"half_open"` (the metric's `agentic.breaker.state`).
    pub const fn name(&self) -> &'static str {
        match self {
            Self::Closed => "closed",
            Self::Open { .. } => "open",
            Self::HalfOpen { .. } => "half_open",
        }
    }
}

impl fmt::Display for BreakerState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Closed => f.write_str("closed"),
            Self::Open { left, opened } => {
                // In tenths of a second, rounded up: "0 s more" would read as closed.
                let tenths = millis(*left).div_ceil(100) * 100;
                write!(f, "open for {} more, after {opened}", format_ms(tenths))
            }
            Self::HalfOpen { .. } => f.write_str("half-open: one probe call let through"),
        }
    }
}

/// The mark of one admission, which the probe it may become keeps: only the admission that took a
/// breaker's probe gives it back ([`SharedStore::breaker_release`]), so that a late give-back of a
/// probe taken for lost never frees the probe another caller took since (docs/design.md §10).
///
/// [`SharedStore::breaker_release`]: crate::storm::store::SharedStore::breaker_release
///
/// # Examples
///
/// ```
/// use agentic_runtime::storm::ProbeToken;
///
/// assert_eq!(ProbeToken::new(7).get(), 7);
/// assert_ne!(ProbeToken::random(), ProbeToken::random());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ProbeToken(u64);

impl ProbeToken {
    /// The token `value`, as a store reads it back from what it wrote.
    pub const fn new(value: u64) -> Self {
        Self(value)
    }

    /// A token drawn at random: two admissions of a fleet draw the same one once in 2^64.
    pub fn random() -> Self {
        Self(fastrand::u64(..))
    }

    /// Its value, as a store writes it.
    pub const fn get(self) -> u64 {
        self.0
    }
}

/// What a breaker says to a call about to be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Closed: the call goes.
    Call,
    /// The open period is over: this call is the probe whose outcome decides.
    Probe,
    /// Open, or half-open with the probe in flight: the call is skipped.
    Skip(BreakerState),
}

/// What a call to a target came to, for its breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CallOutcome {
    /// The target answered (an answer, or an error of the request's own: a 400, an overflow).
    Answered,
    /// The call failed for the target's reasons (a transient failure, or its own permanent one).
    Failed,
}

/// What a shared breaker says to a call about to be made ([`SharedStore::breaker_admit`]).
///
/// [`SharedStore::breaker_admit`]: crate::storm::store::SharedStore::breaker_admit
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SharedAdmission {
    /// Closed: the call goes.
    Call,
    /// The open period is over and this caller took the fleet's one probe.
    Probe(Opened),
    /// Open, or half-open with another caller's probe in flight: the call is skipped.
    Skip(BreakerState),
}

/// What a call's outcome did to a breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Recorded {
    /// No change of state.
    Unchanged,
    /// The window's failures opened it.
    Opened(Opened),
    /// The probe failed: open for another period (for the reason it first opened).
    Reopened(Opened),
    /// The probe was answered: closed, with an empty window.
    Closed,
}

/// One breaker's state machine, on this process's clock.
#[derive(Debug)]
pub struct Breaker {
    settings: BreakerSettings,
    window: Window,
    phase: Phase,
}

#[derive(Debug, Clone, Copy)]
enum Phase {
    Closed,
    Open {
        until: Instant,
        opened: Opened,
    },
    /// `probe_until`: when the probe is taken for lost, and another one goes; `probe`: the token
    /// of the admission that took it (`None`: another process's, seen in the store).
    HalfOpen {
        opened: Opened,
        probe_until: Instant,
        probe: Option<ProbeToken>,
    },
}

impl Breaker {
    /// A closed breaker whose window starts at `now`.
    pub fn new(settings: BreakerSettings, now: Instant) -> Self {
        Self { settings, window: Window::new(settings.window, now), phase: Phase::Closed }
    }

    /// Whether a call may go at `now`; the first after the open period is the probe, which keeps
    /// the admission's `token`.
    pub fn admit(&mut self, now: Instant, token: ProbeToken) -> Admission {
        match self.phase {
            Phase::Closed => {
                self.window.admit(now);
                Admission::Call
            }
            Phase::Open { until, opened } if now < until => {
                Admission::Skip(BreakerState::Open { left: until - now, opened })
            }
            Phase::HalfOpen { opened, probe_until, .. } if now < probe_until => {
                Admission::Skip(BreakerState::HalfOpen { opened })
            }
            Phase::Open { opened, .. } | Phase::HalfOpen { opened, .. } => {
                self.phase = Phase::HalfOpen { opened, probe_until: self.after_open(now), probe: Some(token) };
                Admission::Probe
            }
        }
    }

    /// Counts a call's outcome at `now`; `probe` when the call was let through as the probe.
    /// Outcomes that arrive while open change nothing, and while half-open only the probe's decides:
    /// a call let through before the breaker opened (a long stream) may answer while the probe is
    /// out, and must not close it over a target that is still down.
    pub fn record(&mut self, outcome: CallOutcome, probe: bool, now: Instant) -> Recorded {
        match (self.phase, outcome) {
            (Phase::Closed, _) => {
                let (failures, calls) = self.window.add(now, outcome == CallOutcome::Failed);
                if !self.settings.trips(failures, calls) {
                    return Recorded::Unchanged;
                }
                let opened = Opened { failures, calls, window: self.settings.window };
                self.open(opened, now);
                Recorded::Opened(opened)
            }
            (Phase::Open { .. }, _) => Recorded::Unchanged,
            (Phase::HalfOpen { .. }, _) if !probe => Recorded::Unchanged,
            (Phase::HalfOpen { opened, .. }, CallOutcome::Failed) => {
                self.open(opened, now);
                Recorded::Reopened(opened)
            }
            (Phase::HalfOpen { .. }, CallOutcome::Answered) => {
                self.close();
                Recorded::Closed
            }
        }
    }

    /// Gives back the probe the admission of `token` took, which will report nothing (its exec was
    /// dropped, or stopped before the call went): the next call is the probe, at once. Only while
    /// half-open with that probe still out: one already decided has nothing to give back, one
    /// taken for lost is gone (the next call probes anyway), and one replaced by another
    /// admission's is not its to give. Whether it was given back.
    pub fn release(&mut self, now: Instant, token: ProbeToken) -> bool {
        match self.phase {
            Phase::HalfOpen { opened, probe_until, probe: Some(probe) } if probe == token && now < probe_until => {
                self.phase = Phase::Open { until: now, opened };
                true
            }
            _ => false,
        }
    }

    /// A call counted as answered at its first content failed afterwards (its stream was cut): one
    /// more failure, the same number of calls. Closed only: the probe's first content decided.
    pub(crate) fn amend_failed(&mut self, now: Instant) -> Recorded {
        if !matches!(self.phase, Phase::Closed) {
            return Recorded::Unchanged;
        }
        let (failures, calls) = self.window.amend(now);
        if !self.settings.trips(failures, calls) {
            return Recorded::Unchanged;
        }
        let opened = Opened { failures, calls, window: self.settings.window };
        self.open(opened, now);
        Recorded::Opened(opened)
    }

    /// Whether calls go without asking for a probe: what the `agentic.breaker.open` gauge counts
    /// the opposite of.
    pub(crate) fn is_closed(&self) -> bool {
        matches!(self.phase, Phase::Closed)
    }

    /// The state at `now` (an open period that has passed reads as open with nothing left: the
    /// next call is the probe).
    pub fn state(&self, now: Instant) -> BreakerState {
        match self.phase {
            Phase::Closed => BreakerState::Closed,
            Phase::Open { until, opened } => BreakerState::Open { left: until.saturating_duration_since(now), opened },
            Phase::HalfOpen { opened, .. } => BreakerState::HalfOpen { opened },
        }
    }

    /// Takes on the state a shared store reported at `now`, so that this breaker reads as the
    /// fleet's and goes on from there when the store stops answering.
    pub(crate) fn adopt(&mut self, state: BreakerState, now: Instant) {
        match state {
            BreakerState::Closed => {
                if !matches!(self.phase, Phase::Closed) {
                    self.close();
                }
            }
            BreakerState::Open { left, opened } => {
                self.window.clear();
                self.phase = Phase::Open { until: now + left, opened };
            }
            BreakerState::HalfOpen { opened } => {
                self.window.clear();
                // Half-open already with a probe of this process: it is still this process's.
                let probe = match self.phase {
                    Phase::HalfOpen { probe, .. } => probe,
                    _ => None,
                };
                self.phase = Phase::HalfOpen { opened, probe_until: self.after_open(now), probe };
            }
        }
    }

    /// Takes on the shared breaker's answer that the admission of `token` took its probe at `now`.
    pub(crate) fn adopt_probe(&mut self, opened: Opened, token: ProbeToken, now: Instant) {
        self.window.clear();
        self.phase = Phase::HalfOpen { opened, probe_until: self.after_open(now), probe: Some(token) };
    }

    fn open(&mut self, opened: Opened, now: Instant) {
        self.window.clear();
        self.phase = Phase::Open { until: self.after_open(now), opened };
    }

    fn close(&mut self) {
        self.window.clear();
        self.phase = Phase::Closed;
    }

    fn after_open(&self, now: Instant) -> Instant {
        now + self.settings.open_for
    }
}

/// How many slots the window is cut into: an outcome is forgotten at most a tenth of a window
/// early.
const SLOTS: usize = WINDOW_SLOTS;

/// The calls and failures of the last `window`, by slot.
#[derive(Debug)]
struct Window {
    slot: Duration,
    origin: Instant,
    /// The slot of the latest outcome or admission, counted from `origin`.
    head: u64,
    /// Outcomes, by the slot they arrived in.
    calls: [u64; SLOTS],
    failures: [u64; SLOTS],
    /// Calls let through, by the slot they went in.
    admitted: [u64; SLOTS],
}

impl Window {
    fn new(window: Duration, now: Instant) -> Self {
        let slot = (window / SLOTS as u32).max(Duration::from_nanos(1));
        Self { slot, origin: now, head: 0, calls: [0; SLOTS], failures: [0; SLOTS], admitted: [0; SLOTS] }
    }

    /// Moves the window to `now` and returns the index of now's slot.
    fn roll(&mut self, now: Instant) -> usize {
        let slot = u64::try_from(now.saturating_duration_since(self.origin).as_nanos() / self.slot.as_nanos())
            .unwrap_or(u64::MAX);
        if slot > self.head {
            // Empties the slots passed since the latest count (all of them after a window).
            for step in 1..=(slot - self.head).min(SLOTS as u64) {
                let index = ((self.head + step) % SLOTS as u64) as usize;
                self.calls[index] = 0;
                self.failures[index] = 0;
                self.admitted[index] = 0;
            }
            self.head = slot;
        }
        (self.head % SLOTS as u64) as usize
    }

    /// Counts one call let through at `now`.
    fn admit(&mut self, now: Instant) {
        let index = self.roll(now);
        self.admitted[index] += 1;
    }

    /// Counts one outcome at `now` and returns the window's failures and calls. The calls are the
    /// outcomes or, when more, the calls let through: a call still out counts as not failed, so
    /// that a burst's first outcomes, which are its fast failures (a 503 comes back in
    /// milliseconds, an answer is counted at the end of its stream), do not open the breaker alone.
    fn add(&mut self, now: Instant, failed: bool) -> (u64, u64) {
        let index = self.roll(now);
        self.calls[index] += 1;
        self.failures[index] += u64::from(failed);
        let calls = self.calls.iter().sum::<u64>().max(self.admitted.iter().sum());
        (self.failures.iter().sum(), calls)
    }

    /// Turns one answered outcome counted earlier into a failure, at `now`'s slot; returns the
    /// window's failures and calls as [`Window::add`] does. A failure is never counted above the
    /// calls (the answer's own slot may have left the window meanwhile).
    fn amend(&mut self, now: Instant) -> (u64, u64) {
        let index = self.roll(now);
        self.failures[index] += 1;
        let calls = self.calls.iter().sum::<u64>().max(self.admitted.iter().sum());
        (self.failures.iter().sum::<u64>().min(calls), calls)
    }

    fn clear(&mut self) {
        self.calls = [0; SLOTS];
        self.failures = [0; SLOTS];
        self.admitted = [0; SLOTS];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    /// The admissions' token, where which admission took the probe does not matter.
    const TOKEN: ProbeToken = ProbeToken::new(1);

    fn breaker() -> Breaker {
        Breaker::new(BreakerSettings::standard(), Instant::now())
    }

    /// Records `failures` failures and `answered` answers, interleaved, and returns each change.
    fn record_many(breaker: &mut Breaker, failures: u32, answered: u32) -> Vec<Recorded> {
        let now = Instant::now();
        let total = failures + answered;
        (0..total)
            .map(|i| {
                // Spreads the failures evenly among the calls.
                let failed = (i + 1) * failures / total > i * failures / total;
                breaker.record(if failed { CallOutcome::Failed } else { CallOutcome::Answered }, true, now)
            })
            .filter(|recorded| *recorded != Recorded::Unchanged)
            .collect()
    }

    fn opened(failures: u64, calls: u64) -> Opened {
        Opened { failures, calls, window: Duration::from_secs(10) }
    }

    /// Opens a standard breaker with 20 failures.
    fn open(breaker: &mut Breaker) {
        assert_eq!(record_many(breaker, 20, 0), [Recorded::Opened(opened(20, 20))]);
    }

    #[tokio::test(start_paused = true)]
    async fn calls_still_out_count_as_not_failed_so_a_bursts_fast_failures_do_not_open_it() {
        let now = Instant::now();
        // A burst of 40 calls into a 30 % wobble: its 503s come back first, the answers later.
        let mut wobble = breaker();
        for _ in 0..40 {
            assert_eq!(wobble.admit(now, TOKEN), Admission::Call);
        }
        for _ in 0..12 {
            assert_eq!(wobble.record(CallOutcome::Failed, false, now), Recorded::Unchanged, "12 of 40 calls");
        }
        assert_eq!(record_many(&mut wobble, 0, 28), []);
        assert_eq!(wobble.state(now), BreakerState::Closed);
        // A burst of 40 into an outage: it opens once half the calls let through have failed.
        let mut outage = breaker();
        for _ in 0..40 {
            outage.admit(now, TOKEN);
        }
        for _ in 0..19 {
            assert_eq!(outage.record(CallOutcome::Failed, false, now), Recorded::Unchanged);
        }
        assert_eq!(outage.record(CallOutcome::Failed, false, now), Recorded::Opened(opened(20, 40)));
    }

    #[tokio::test(start_paused = true)]
    async fn a_30_percent_wobble_over_100_calls_stays_closed() {
        let mut breaker = breaker();
        for _ in 0..10 {
            assert_eq!(record_many(&mut breaker, 3, 7), [], "10 calls a second, 3 of them failing");
            tokio::time::advance(SECOND).await;
        }
        assert_eq!(breaker.admit(Instant::now(), TOKEN), Admission::Call);
        assert_eq!(breaker.state(Instant::now()), BreakerState::Closed);
    }

    #[tokio::test(start_paused = true)]
    async fn opens_at_50_percent_once_the_window_holds_20_calls() {
        let mut breaker = breaker();
        // 19 failures: not yet 20 calls.
        for _ in 0..19 {
            assert_eq!(breaker.record(CallOutcome::Failed, true, Instant::now()), Recorded::Unchanged);
        }
        assert_eq!(breaker.admit(Instant::now(), TOKEN), Admission::Call);
        assert_eq!(breaker.record(CallOutcome::Failed, true, Instant::now()), Recorded::Opened(opened(20, 20)));

        // Half of 20 opens; 9 of 20 does not, and the 21st call's failure (10 of 21, under 50 %)
        // neither; 11 of 22 does.
        let mut half = super::Breaker::new(BreakerSettings::standard(), Instant::now());
        assert_eq!(record_many(&mut half, 10, 10), [Recorded::Opened(opened(10, 20))]);
        let mut under = super::Breaker::new(BreakerSettings::standard(), Instant::now());
        assert_eq!(record_many(&mut under, 9, 11), []);
        assert_eq!(under.record(CallOutcome::Failed, true, Instant::now()), Recorded::Unchanged);
        assert_eq!(under.record(CallOutcome::Failed, true, Instant::now()), Recorded::Opened(opened(11, 22)));
    }

    #[tokio::test(start_paused = true)]
    async fn open_skips_with_what_is_left_of_the_open_period() {
        let mut breaker = breaker();
        open(&mut breaker);
        tokio::time::advance(Duration::from_millis(17_700)).await;
        let left = Duration::from_millis(12_300);
        let skipped = BreakerState::Open { left, opened: opened(20, 20) };
        assert_eq!(breaker.admit(Instant::now(), TOKEN), Admission::Skip(skipped));
        assert_eq!(breaker.state(Instant::now()), skipped);
        assert_eq!(skipped.to_string(), "open for 12.3 s more, after 20 failures of 20 calls in 10 s");
        assert_eq!(skipped.name(), "open");
        // Outcomes of calls let through before it opened change nothing.
        assert_eq!(breaker.record(CallOutcome::Answered, true, Instant::now()), Recorded::Unchanged);
        assert_eq!(breaker.record(CallOutcome::Failed, true, Instant::now()), Recorded::Unchanged);
        assert_eq!(breaker.admit(Instant::now(), TOKEN), Admission::Skip(skipped));
    }

    #[tokio::test(start_paused = true)]
    async fn after_the_open_period_exactly_one_probe_among_concurrent_admits() {
        let breaker = std::sync::Arc::new(std::sync::Mutex::new(breaker()));
        open(&mut breaker.lock().unwrap());
        tokio::time::advance(Duration::from_secs(30)).await;
        let threads: Vec<_> = (0..16)
            .map(|_| {
                let breaker = breaker.clone();
                let now = Instant::now();
                std::thread::spawn(move || breaker.lock().unwrap().admit(now, TOKEN))
            })
            .collect();
        let admissions: Vec<Admission> = threads.into_iter().map(|thread| thread.join().unwrap()).collect();
        let probes = admissions.iter().filter(|admission| **admission == Admission::Probe).count();
        assert_eq!(probes, 1, "{admissions:?}");
        let half_open = Admission::Skip(BreakerState::HalfOpen { opened: opened(20, 20) });
        assert_eq!(admissions.iter().filter(|admission| **admission == half_open).count(), 15);
        let state = breaker.lock().unwrap().state(Instant::now());
        assert_eq!(
            (state.name(), state.to_string()),
            ("half_open", "half-open: one probe call let through".to_owned())
        );
    }

    #[tokio::test(start_paused = true)]
    async fn the_probes_answer_closes_with_an_empty_window() {
        let mut breaker = breaker();
        open(&mut breaker);
        tokio::time::advance(Duration::from_secs(30)).await;
        assert_eq!(breaker.admit(Instant::now(), TOKEN), Admission::Probe);
        // Calls let through before it opened may answer (or fail) while the probe is out: only the
        // probe's outcome decides.
        assert_eq!(breaker.record(CallOutcome::Answered, false, Instant::now()), Recorded::Unchanged);
        assert_eq!(breaker.record(CallOutcome::Failed, false, Instant::now()), Recorded::Unchanged);
        assert_eq!(breaker.state(Instant::now()), BreakerState::HalfOpen { opened: opened(20, 20) });
        assert_eq!(breaker.record(CallOutcome::Answered, true, Instant::now()), Recorded::Closed);
        assert_eq!(breaker.admit(Instant::now(), TOKEN), Admission::Call);
        assert_eq!(breaker.state(Instant::now()), BreakerState::Closed);
        // The 20 failures that opened it are gone: 19 more do not open it again.
        assert_eq!(record_many(&mut breaker, 19, 0), []);
        assert_eq!(breaker.record(CallOutcome::Failed, true, Instant::now()), Recorded::Opened(opened(20, 20)));
    }

    #[tokio::test(start_paused = true)]
    async fn the_probes_failure_opens_it_for_another_period() {
        let mut breaker = breaker();
        open(&mut breaker);
        tokio::time::advance(Duration::from_secs(30)).await;
        assert_eq!(breaker.admit(Instant::now(), TOKEN), Admission::Probe);
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(breaker.record(CallOutcome::Failed, true, Instant::now()), Recorded::Reopened(opened(20, 20)));
        let again = BreakerState::Open { left: Duration::from_secs(30), opened: opened(20, 20) };
        assert_eq!(breaker.admit(Instant::now(), TOKEN), Admission::Skip(again));
        tokio::time::advance(Duration::from_secs(29)).await;
        assert!(matches!(breaker.admit(Instant::now(), TOKEN), Admission::Skip(BreakerState::Open { .. })));
        tokio::time::advance(SECOND).await;
        assert_eq!(breaker.admit(Instant::now(), TOKEN), Admission::Probe);
    }

    #[tokio::test(start_paused = true)]
    async fn a_lost_probe_is_replaced_after_the_open_period() {
        let mut breaker = breaker();
        open(&mut breaker);
        tokio::time::advance(Duration::from_secs(30)).await;
        assert_eq!(breaker.admit(Instant::now(), TOKEN), Admission::Probe);
        // Its exec was dropped: no outcome ever comes.
        tokio::time::advance(Duration::from_millis(29_999)).await;
        assert_eq!(
            breaker.admit(Instant::now(), TOKEN),
            Admission::Skip(BreakerState::HalfOpen { opened: opened(20, 20) })
        );
        tokio::time::advance(Duration::from_millis(1)).await;
        assert_eq!(breaker.admit(Instant::now(), TOKEN), Admission::Probe);
        assert_eq!(
            breaker.admit(Instant::now(), TOKEN),
            Admission::Skip(BreakerState::HalfOpen { opened: opened(20, 20) })
        );
    }

    #[tokio::test(start_paused = true)]
    async fn only_the_admission_that_took_the_probe_gives_it_back() {
        let mut breaker = breaker();
        open(&mut breaker);
        tokio::time::advance(Duration::from_secs(30)).await;
        let (first, second, third) = (ProbeToken::new(1), ProbeToken::new(2), ProbeToken::new(3));
        assert_eq!(breaker.admit(Instant::now(), first), Admission::Probe);
        // Taken for lost after the open period: another admission's probe goes.
        tokio::time::advance(Duration::from_secs(30)).await;
        assert_eq!(breaker.admit(Instant::now(), second), Admission::Probe);
        // The first's give-back comes late: it does not free the second's probe (before, it did,
        // and a third probe went while the second was out).
        assert!(!breaker.release(Instant::now(), first));
        let half_open = Admission::Skip(BreakerState::HalfOpen { opened: opened(20, 20) });
        assert_eq!(breaker.admit(Instant::now(), third), half_open);
        // The second's own give-back does.
        assert!(breaker.release(Instant::now(), second));
        assert_eq!(breaker.admit(Instant::now(), third), Admission::Probe);
        // A decided breaker has nothing to give back.
        assert_eq!(breaker.record(CallOutcome::Answered, true, Instant::now()), Recorded::Closed);
        assert!(!breaker.release(Instant::now(), third));
        assert_eq!(breaker.state(Instant::now()), BreakerState::Closed);
    }

    #[tokio::test(start_paused = true)]
    async fn the_window_forgets_failures_older_than_it() {
        let mut breaker = breaker();
        assert_eq!(record_many(&mut breaker, 19, 0), []);
        tokio::time::advance(Duration::from_secs(10)).await;
        // A window later the 19 are forgotten: 19 more do not open it, the 20th of them does.
        assert_eq!(record_many(&mut breaker, 19, 0), []);
        assert_eq!(breaker.record(CallOutcome::Failed, true, Instant::now()), Recorded::Opened(opened(20, 20)));
    }

    #[tokio::test(start_paused = true)]
    async fn failures_within_the_window_count_together() {
        let mut breaker = breaker();
        assert_eq!(record_many(&mut breaker, 19, 0), []);
        tokio::time::advance(Duration::from_millis(9_999)).await;
        assert_eq!(breaker.record(CallOutcome::Failed, true, Instant::now()), Recorded::Opened(opened(20, 20)));
    }

    #[test]
    fn settings_are_checked_and_say_the_valid_range() {
        let ten = Duration::from_secs(10);
        let error = |result: Result<BreakerSettings, PolicyError>| {
            let error = result.unwrap_err();
            (error.key(), error.to_string())
        };
        assert_eq!(
            error(BreakerSettings::new(0, 20, ten, ten)),
            ("failure_percent", "breaker `failure_percent` (0) must be from 1 to 100".to_owned())
        );
        assert_eq!(
            error(BreakerSettings::new(101, 20, ten, ten)).1,
            "breaker `failure_percent` (101) must be from 1 to 100"
        );
        assert_eq!(
            error(BreakerSettings::new(50, 0, ten, ten)),
            ("min_calls", "breaker `min_calls` (0) must be at least 1".to_owned())
        );
        assert_eq!(
            error(BreakerSettings::new(50, 20, Duration::ZERO, ten)),
            ("window", "breaker `window` (0 ms) must be from 1 ms to 1 h (3600000 ms)".to_owned())
        );
        assert_eq!(
            error(BreakerSettings::new(50, 20, ten, Duration::from_secs(3601))),
            ("open_for", "breaker `open_for` (3601000 ms) must be from 1 ms to 1 h (3600000 ms)".to_owned())
        );
        let hour = BreakerSettings::MAX_DURATION;
        let edge = BreakerSettings::new(100, 1, Duration::from_millis(1), hour).unwrap();
        assert_eq!(
            (edge.failure_percent(), edge.min_calls(), edge.window(), edge.open_for()),
            (100, 1, Duration::from_millis(1), hour)
        );
        assert_eq!(BreakerSettings::new(50, 20, ten, Duration::from_secs(30)), Ok(BreakerSettings::standard()));
        assert_eq!(BreakerSettings::default(), BreakerSettings::standard());
    }
}
