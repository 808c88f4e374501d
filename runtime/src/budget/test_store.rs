//! Stores for the budget's tests: one that keeps the retry budget only (no breakers), and one that
//! keeps a fleet's breakers in memory, each a [`Breaker`] on the test's clock.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::SystemTime;

use tokio::time::Instant;

use super::breaker::{Admission, Breaker, BreakerSettings, BreakerState, CallOutcome, Recorded, SharedAdmission};
use super::quota::RetryQuota;
use super::store::{SharedStore, StoreError, StoreFuture, StoreKey, Withdrawal};

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A store of the retry budget only: no breaker methods (the trait's defaults).
pub(crate) struct BudgetOnly;

impl SharedStore for BudgetOnly {
    fn deposit<'a>(&'a self, _: &'a str, _: &'a RetryQuota) -> StoreFuture<'a, ()> {
        Box::pin(async { Ok(()) })
    }
    fn try_withdraw<'a>(&'a self, _: &'a str, _: &'a RetryQuota) -> StoreFuture<'a, Withdrawal> {
        Box::pin(async { Ok(Withdrawal { granted: true, successes: 0, retries: 0 }) })
    }
    fn cooldown_until<'a>(&'a self, _: StoreKey<'a>) -> StoreFuture<'a, Option<SystemTime>> {
        Box::pin(async { Ok(None) })
    }
    fn extend_cooldown<'a>(&'a self, _: StoreKey<'a>, _: SystemTime) -> StoreFuture<'a, ()> {
        Box::pin(async { Ok(()) })
    }
}

/// A fleet's breakers in memory: each key's a [`Breaker`] on the test's clock.
#[derive(Default)]
pub(crate) struct MemoryStore {
    breakers: Mutex<HashMap<String, Breaker>>,
    /// Set: every breaker operation fails (the store is down).
    pub(crate) down: AtomicBool,
}

impl MemoryStore {
    pub(crate) fn keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = lock(&self.breakers).keys().cloned().collect();
        keys.sort();
        keys
    }

    fn with<T>(
        &self,
        key: StoreKey<'_>,
        settings: &BreakerSettings,
        f: impl FnOnce(&mut Breaker) -> T,
    ) -> StoreFuture<'_, T>
    where
        T: Send + 'static,
    {
        if self.down.load(Ordering::Relaxed) {
            return Box::pin(async { Err(StoreError("down".to_owned())) });
        }
        let mut breakers = lock(&self.breakers);
        let breaker = breakers.entry(key.to_string()).or_insert_with(|| Breaker::new(*settings, Instant::now()));
        let answer = f(breaker);
        Box::pin(async { Ok(answer) })
    }
}

impl SharedStore for MemoryStore {
    fn deposit<'a>(&'a self, scope: &'a str, quota: &'a RetryQuota) -> StoreFuture<'a, ()> {
        BudgetOnly.deposit(scope, quota)
    }
    fn try_withdraw<'a>(&'a self, scope: &'a str, quota: &'a RetryQuota) -> StoreFuture<'a, Withdrawal> {
        BudgetOnly.try_withdraw(scope, quota)
    }
    fn cooldown_until<'a>(&'a self, _: StoreKey<'a>) -> StoreFuture<'a, Option<SystemTime>> {
        Box::pin(async { Ok(None) })
    }
    fn extend_cooldown<'a>(&'a self, _: StoreKey<'a>, _: SystemTime) -> StoreFuture<'a, ()> {
        Box::pin(async { Ok(()) })
    }
    fn breaker_admit<'a>(
        &'a self,
        key: StoreKey<'a>,
        settings: &'a BreakerSettings,
    ) -> StoreFuture<'a, Option<SharedAdmission>> {
        self.with(key, settings, |breaker| {
            let now = Instant::now();
            Some(match breaker.admit(now) {
                Admission::Call => SharedAdmission::Call,
                Admission::Skip(state) => SharedAdmission::Skip(state),
                Admission::Probe => match breaker.state(now) {
                    BreakerState::HalfOpen { opened } => SharedAdmission::Probe(opened),
                    other => panic!("a probe in state {other:?}"),
                },
            })
        })
    }
    fn breaker_record<'a>(
        &'a self,
        key: StoreKey<'a>,
        outcome: CallOutcome,
        probe: bool,
        settings: &'a BreakerSettings,
    ) -> StoreFuture<'a, Option<Recorded>> {
        self.with(key, settings, |breaker| Some(breaker.record(outcome, probe, Instant::now())))
    }
    fn breaker_release<'a>(&'a self, key: StoreKey<'a>) -> StoreFuture<'a, ()> {
        if let Some(breaker) = lock(&self.breakers).get_mut(&key.to_string()) {
            breaker.release(Instant::now());
        }
        Box::pin(async { Ok(()) })
    }
}
