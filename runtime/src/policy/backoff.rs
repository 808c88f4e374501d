//! Backoff schedules (docs/design.md §8): both layers' doubling delays, jitter, and the cap
//! (applied after jitter).

use std::time::Duration;

use crate::policy::{Jitter, RetryPolicy};

/// A seedable random source for jitter. Same seed, same delays: tests and simulations replay exactly.
#[derive(Debug, Clone)]
pub struct Rng(Option<fastrand::Rng>);

impl Rng {
    /// A generator that replays the same sequence for the same seed.
    pub fn with_seed(seed: u64) -> Self {
        Self(Some(fastrand::Rng::with_seed(seed)))
    }

    /// A generator seeded at random when it is first used: a success that needs no jitter draws no
    /// seed.
    pub(crate) const fn unseeded() -> Self {
        Self(None)
    }

    /// A uniform duration in `[low, high]`.
    fn between(&mut self, low: Duration, high: Duration) -> Duration {
        if high <= low {
            return low;
        }
        let (low_ns, high_ns) = (saturating_nanos(low), saturating_nanos(high));
        let rng = self.0.get_or_insert_with(|| fastrand::Rng::with_seed(fastrand::u64(..)));
        Duration::from_nanos(rng.u64(low_ns..=high_ns))
    }
}

fn saturating_nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

/// The delays of one retry layer: `base * 2^index`, jittered, then capped.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use agentic_runtime::policy::backoff::{Rng, Schedule};
/// use agentic_runtime::RetryPolicy;
/// use agentic_runtime::policy::Jitter;
///
/// // Without jitter the schedule is exactly the doubling one.
/// let mut session = Schedule::session(&RetryPolicy::new().with_jitter(Jitter::None));
/// let mut rng = Rng::with_seed(7);
/// let delays: Vec<_> = (0..3).map(|n| session.delay(n, &mut rng)).collect();
/// assert_eq!(delays, [2, 4, 8].map(Duration::from_secs));
/// ```
#[derive(Debug, Clone)]
pub struct Schedule {
    base: Duration,
    cap: Option<Duration>,
    jitter: Jitter,
    previous: Duration,
}

impl Schedule {
    /// Layer 1's schedule: before retry `n` (from 1) it waits `session_base_delay * 2^(n-1)`; call
    /// [`Schedule::delay`] with `index = n - 1`.
    pub fn session(policy: &RetryPolicy) -> Self {
        Self::new(policy.session_base_delay(), policy.max_delay(), policy.jitter())
    }

    /// Layer 2's schedule: after failed attempt `k` (from 0) it waits `exec_base_delay * 2^k`.
    pub fn exec(policy: &RetryPolicy) -> Self {
        Self::new(policy.exec_base_delay(), policy.max_delay(), policy.jitter())
    }

    /// A schedule from its parts.
    pub fn new(base: Duration, cap: Option<Duration>, jitter: Jitter) -> Self {
        Self { base, cap, jitter, previous: base }
    }

    /// The un-jittered, uncapped delay of step `index`: `base * 2^index`, saturating.
    pub fn nominal(&self, index: u32) -> Duration {
        let nanos = (index < 64).then(|| self.base.as_nanos().checked_mul(1u128 << index)).flatten();
        nanos
            .and_then(|nanos| {
                let secs = u64::try_from(nanos / 1_000_000_000).ok()?;
                Some(Duration::new(secs, (nanos % 1_000_000_000) as u32))
            })
            .unwrap_or(Duration::MAX)
    }

    /// The wait after a failure whose server named it (`hint`: Retry-After, `retry-after-ms`,
    /// Google's `RetryInfo`, "try again in 2 s"): the hint itself, and with any jitter but
    /// [`Jitter::None`] up to a quarter more, only above it, so that clients told the same instant do
    /// not all come back at it. `max_delay_ms` does not cut it: the server said when; the caller
    /// refuses a hint above `retry_after_cap_ms` or past the deadline instead.
    pub fn after_hint(&mut self, hint: Duration, rng: &mut Rng) -> Duration {
        let delay = match self.jitter {
            Jitter::None => hint,
            _ => hint.checked_add(rng.between(Duration::ZERO, hint / 4)).unwrap_or(Duration::MAX),
        };
        self.previous = delay;
        delay
    }

    /// The wait before step `index`: the server's hint when it named one
    /// ([`Schedule::after_hint`]), else the schedule's own delay ([`Schedule::delay`]).
    pub fn wait(&mut self, index: u32, hint: Option<Duration>, rng: &mut Rng) -> Duration {
        match hint {
            Some(hint) => self.after_hint(hint, rng),
            None => self.delay(index, rng),
        }
    }

    /// The delay of step `index`: nominal, jittered, then capped.
    pub fn delay(&mut self, index: u32, rng: &mut Rng) -> Duration {
        let nominal = self.nominal(index);
        let jittered = match self.jitter {
            Jitter::None => nominal,
            Jitter::Full => rng.between(Duration::ZERO, nominal),
            Jitter::Equal => {
                let half = nominal / 2;
                half + rng.between(Duration::ZERO, nominal - half)
            }
            Jitter::Decorrelated => {
                let high = self.previous.saturating_mul(3).max(self.base);
                let pick = rng.between(self.base, high);
                self.cap.map_or(pick, |cap| pick.min(cap))
            }
            Jitter::Proportional => {
                let low = nominal.mul_f64(0.75);
                let high = nominal.checked_add(nominal / 4).unwrap_or(Duration::MAX);
                rng.between(low, high)
            }
        };
        let delay = self.cap.map_or(jittered, |cap| jittered.min(cap));
        self.previous = delay;
        delay
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(jitter: Jitter) -> RetryPolicy {
        RetryPolicy::new().with_jitter(jitter)
    }

    #[test]
    fn reference_schedules_without_jitter() {
        let mut rng = Rng::with_seed(1);
        let mut exec = Schedule::exec(&policy(Jitter::None));
        let delays: Vec<u128> = (0..4).map(|k| exec.delay(k, &mut rng).as_millis()).collect();
        assert_eq!(delays, [1500, 3000, 6000, 12000]);
    }

    #[test]
    fn cap_applies_after_jitter() {
        let capped = RetryPolicy::new().with_max_delay_ms(Some(5000)).with_jitter(Jitter::Proportional);
        let mut schedule = Schedule::session(&capped);
        let mut rng = Rng::with_seed(3);
        for index in 0..40 {
            assert!(schedule.delay(index, &mut rng) <= Duration::from_secs(5));
        }
    }

    #[test]
    fn every_jitter_stays_in_its_range_and_replays_with_the_seed() {
        for (jitter, low, high) in
            [(Jitter::Full, 0.0, 1.0), (Jitter::Equal, 0.5, 1.0), (Jitter::Proportional, 0.75, 1.25)]
        {
            let mut schedule = Schedule::session(&policy(jitter));
            let mut rng = Rng::with_seed(42);
            let mut replay = Schedule::session(&policy(jitter));
            let mut replay_rng = Rng::with_seed(42);
            let mut distinct = std::collections::BTreeSet::new();
            for index in 0..8 {
                let nominal = schedule.nominal(index).as_secs_f64();
                let delay = schedule.delay(index, &mut rng);
                assert_eq!(delay, replay.delay(index, &mut replay_rng));
                let ratio = delay.as_secs_f64() / nominal;
                assert!((low..=high).contains(&ratio), "{jitter:?} gave ratio {ratio}");
                distinct.insert((ratio * 1e6) as u64);
            }
            assert!(distinct.len() > 1, "{jitter:?} is not random");
        }
    }

    #[test]
    fn decorrelated_stays_between_base_and_three_times_previous() {
        let mut schedule = Schedule::session(&policy(Jitter::Decorrelated).with_max_delay_ms(Some(30_000)));
        let mut rng = Rng::with_seed(9);
        let mut previous = Duration::from_secs(2);
        for index in 0..20 {
            let delay = schedule.delay(index, &mut rng);
            assert!(delay >= Duration::from_secs(2) && delay <= (previous * 3).min(Duration::from_secs(30)));
            previous = delay;
        }
    }

    #[test]
    fn huge_indexes_saturate() {
        let schedule = Schedule::exec(&RetryPolicy::new());
        assert_eq!(schedule.nominal(200), Duration::MAX);
    }
}
