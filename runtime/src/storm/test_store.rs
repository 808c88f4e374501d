//! The one store of the budget's tests, [`TestStore`]: it keeps the retry quota (every retry
//! granted, nothing counted) and, as a test builds it, the fleet's breakers in memory (each a
//! [`Breaker`] on the test's clock) and a pacer that is down or lends at once; what it does not keep
//! it answers as the trait's defaults do. It can be taken down.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use super::breaker::{
    Admission, Breaker, BreakerSettings, BreakerState, CallOutcome, ProbeToken, Recorded, SharedAdmission,
};
use super::quota::RetryQuota;
use super::store::{SharedStore, StoreError, StoreFuture, StoreKey, Withdrawal};
use crate::storm::pace::{Demand, PaceRefused, RateLimits, Reserved};

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A shared store for tests.
#[derive(Default)]
pub(crate) struct TestStore {
    /// The fleet's breakers, by key; `None`: it keeps none (the trait's default answers).
    breakers: Option<Mutex<HashMap<String, Breaker>>>,
    pacer: Pacer,
    /// Set: every operation but the budget's fails (the store is down).
    pub(crate) down: AtomicBool,
    /// Every settle the pacer was sent: what was reserved, and what was used.
    settles: Mutex<Vec<(Demand, Demand)>>,
}

/// What a [`TestStore`]'s pacer does.
#[derive(Default)]
enum Pacer {
    /// It keeps none (the trait's default answers).
    #[default]
    None,
    /// It never answers (Redis down).
    Down,
    /// It knows a limit and lends at once.
    Lends,
}

impl TestStore {
    /// A store of the retry quota only: no breakers, no pacer.
    pub(crate) fn budget_only() -> Self {
        Self::default()
    }

    /// A store that keeps the fleet's breakers.
    pub(crate) fn with_breakers() -> Self {
        Self { breakers: Some(Mutex::default()), ..Self::default() }
    }

    /// A store whose pacer never answers.
    pub(crate) fn pacer_down() -> Self {
        Self { pacer: Pacer::Down, ..Self::default() }
    }

    /// A store whose pacer knows a limit and lends at once, and keeps every settle it is sent.
    pub(crate) fn lending_pacer() -> Self {
        Self { pacer: Pacer::Lends, ..Self::default() }
    }

    /// The keys of the breakers it keeps, sorted.
    pub(crate) fn keys(&self) -> Vec<String> {
        let mut keys: Vec<String> =
            self.breakers.as_ref().map(|b| lock(b).keys().cloned().collect()).unwrap_or_default();
        keys.sort();
        keys
    }

    /// The settles its pacer was sent.
    pub(crate) fn settles(&self) -> Vec<(Demand, Demand)> {
        lock(&self.settles).clone()
    }

    /// `value`, or a failure when the store is down.
    fn answer<T: Send + 'static>(&self, value: T) -> StoreFuture<'_, T> {
        let down = self.down.load(Ordering::Relaxed);
        Box::pin(async move { if down { Err(StoreError("down".to_owned())) } else { Ok(value) } })
    }

    /// `f` on the breaker of `key` (made closed under `settings` the first time); `None` when the
    /// store keeps no breakers.
    fn with<T: Send + 'static>(
        &self,
        key: StoreKey<'_>,
        settings: &BreakerSettings,
        f: impl FnOnce(&mut Breaker) -> T,
    ) -> StoreFuture<'_, Option<T>> {
        let answer = self.breakers.as_ref().filter(|_| !self.down.load(Ordering::Relaxed)).map(|breakers| {
            let mut breakers = lock(breakers);
            f(breakers.entry(key.to_string()).or_insert_with(|| Breaker::new(*settings, Instant::now())))
        });
        self.answer(answer)
    }

    /// What the pacer answers: `kept` when it lends, the trait's default `absent` when it keeps
    /// none, a failure when it is down.
    fn pacer<T: Send + 'static>(&self, kept: T, absent: T) -> StoreFuture<'_, T> {
        match self.pacer {
            Pacer::None => Box::pin(async { Ok(absent) }),
            Pacer::Down => Box::pin(async { Err(StoreError("down".to_owned())) }),
            Pacer::Lends => self.answer(kept),
        }
    }
}

impl SharedStore for TestStore {
    fn deposit<'a>(&'a self, _: &'a str, _: &'a RetryQuota) -> StoreFuture<'a, ()> {
        Box::pin(async { Ok(()) })
    }
    fn try_withdraw<'a>(&'a self, _: &'a str, _: &'a RetryQuota) -> StoreFuture<'a, Withdrawal> {
        Box::pin(async { Ok(Withdrawal { granted: true, successes: 0, retries: 0 }) })
    }
    fn cooldown_until<'a>(&'a self, _: StoreKey<'a>) -> StoreFuture<'a, Option<SystemTime>> {
        self.answer(None)
    }
    fn extend_cooldown<'a>(&'a self, _: StoreKey<'a>, _: SystemTime) -> StoreFuture<'a, ()> {
        self.answer(())
    }
    fn breaker_admit<'a>(
        &'a self,
        key: StoreKey<'a>,
        settings: &'a BreakerSettings,
        token: ProbeToken,
    ) -> StoreFuture<'a, Option<SharedAdmission>> {
        self.with(key, settings, |breaker| {
            let now = Instant::now();
            match breaker.admit(now, token) {
                Admission::Call => SharedAdmission::Call,
                Admission::Skip(state) => SharedAdmission::Skip(state),
                Admission::Probe => match breaker.state(now) {
                    BreakerState::HalfOpen { opened } => SharedAdmission::Probe(opened),
                    other => panic!("a probe in state {other:?}"),
                },
            }
        })
    }
    fn breaker_record<'a>(
        &'a self,
        key: StoreKey<'a>,
        outcome: CallOutcome,
        probe: bool,
        settings: &'a BreakerSettings,
    ) -> StoreFuture<'a, Option<Recorded>> {
        self.with(key, settings, |breaker| breaker.record(outcome, probe, Instant::now()))
    }
    fn breaker_release<'a>(&'a self, key: StoreKey<'a>, token: ProbeToken) -> StoreFuture<'a, ()> {
        if let Some(breakers) = self.breakers.as_ref().filter(|_| !self.down.load(Ordering::Relaxed)) {
            if let Some(breaker) = lock(breakers).get_mut(&key.to_string()) {
                breaker.release(Instant::now(), token);
            }
        }
        self.answer(())
    }
    fn pace_learn<'a>(&'a self, _: StoreKey<'a>, _: &'a RateLimits) -> StoreFuture<'a, bool> {
        self.pacer(true, false)
    }
    fn pace_reserve<'a>(
        &'a self,
        _: StoreKey<'a>,
        _: &'a Demand,
        _: Option<Duration>,
    ) -> StoreFuture<'a, Option<Result<Reserved, PaceRefused>>> {
        self.pacer(Some(Ok(Reserved::NOW)), None)
    }
    fn pace_settle<'a>(&'a self, _: StoreKey<'a>, reserved: &'a Demand, used: &'a Demand) -> StoreFuture<'a, ()> {
        if !matches!(self.pacer, Pacer::Lends) {
            return Box::pin(async { Ok(()) });
        }
        if !self.down.load(Ordering::Relaxed) {
            lock(&self.settles).push((*reserved, *used));
        }
        self.answer(())
    }
}
