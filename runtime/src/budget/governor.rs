//! Storm control shared by every call of a `Runtime`: the retry budget and the cooldown a
//! server's Retry-After sets for everyone.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use super::ledger::Ledger;
use super::quota::RetryQuota;
use super::refusal::Refusal;
use super::store::{SharedStore, StoreFuture};

/// The shared state of one `Runtime` (and its clones) for one provider scope.
pub(crate) struct Governor {
    scope: String,
    /// The retry budget: its settings, and its window (read on the failure path and by
    /// `Runtime::retry_budget`). `None` when the budget is off.
    budget: Option<RetryBudget>,
    /// Successes not yet placed in the window: the success path counts here without a clock.
    unplaced: AtomicU64,
    cooldown: Mutex<Option<Instant>>,
    /// Set while a cooldown is noted and not seen to have ended, so the success path skips the
    /// lock otherwise. Written under the `cooldown` lock.
    cooled: AtomicBool,
    store: Option<Arc<dyn SharedStore>>,
    /// Set while the shared store is taken for down: it failed, and is asked again only when
    /// `offline_until` has passed.
    offline: AtomicBool,
    /// Until when the store is not asked, once it failed ([`SharedStore::offline_backoff`]).
    offline_until: Mutex<Option<Instant>>,
}

impl std::fmt::Debug for Governor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Governor")
            .field("scope", &self.scope)
            .field("quota", &self.budget.as_ref().map(|budget| budget.quota))
            .field("unplaced_successes", &self.unplaced.load(Ordering::Relaxed))
            .field("shared_store", &self.store.is_some())
            .finish()
    }
}

/// A retry budget's settings and its window.
struct RetryBudget {
    quota: RetryQuota,
    ledger: Mutex<Ledger>,
}

/// The longest cooldown a server's hint sets (100 years): longer waits would overflow the clocks.
pub(crate) const MAX_COOLDOWN: Duration = Duration::from_secs(100 * 365 * 24 * 60 * 60);

impl Governor {
    pub(crate) fn new(scope: String, quota: Option<RetryQuota>, store: Option<Arc<dyn SharedStore>>) -> Self {
        Self {
            scope,
            // Read from now: successes counted before a first retry are spread over the time since.
            budget: quota
                .map(|quota| RetryBudget { quota, ledger: Mutex::new(Ledger::new(quota.window(), Instant::now())) }),
            unplaced: AtomicU64::new(0),
            cooldown: Mutex::new(None),
            cooled: AtomicBool::new(false),
            store,
            offline: AtomicBool::new(false),
            offline_until: Mutex::new(None),
        }
    }

    /// A governor of nothing: no retry budget, no shared store, no cooldowns from other calls. What
    /// a resilient call runs under (it belongs to no `Runtime`), so that the retry rules have one
    /// path.
    pub(crate) fn unlimited() -> Self {
        Self::new(String::new(), None, None)
    }

    /// Withdraws one retry from the budget, as the retry is about to be sent; `Err` says why the
    /// budget refused it. Always `Ok` without a quota.
    pub(crate) async fn withdraw(&self) -> Result<(), Refusal> {
        let Some(budget) = &self.budget else { return Ok(()) };
        let quota = budget.quota;
        let shared = self.shared(|store, scope| store.try_withdraw(scope, &quota)).await;
        let (granted, successes, retries) = match shared {
            Some(withdrawal) => (withdrawal.granted, withdrawal.successes as f64, withdrawal.retries),
            None => self.withdraw_local(budget),
        };
        if granted {
            Ok(())
        } else {
            Err(Refusal::RetryBudget {
                successes: successes.round() as u64,
                retries,
                window: quota.window(),
                retry_percent: quota.retry_percent(),
                min_retries: quota.min_retries(),
            })
        }
    }

    /// Counts a successful model call. `false` when there is a shared store, whose deposit is to be
    /// awaited ([`Governor::deposit_shared`]). Synchronous, and reads no clock, so that an exec's
    /// success path awaits nothing for it.
    #[inline]
    pub(crate) fn deposit(&self) -> bool {
        if self.store.is_some() {
            return false;
        }
        if self.budget.is_some() {
            self.unplaced.fetch_add(1, Ordering::Relaxed);
        }
        true
    }

    /// [`Governor::deposit`] into the shared store; into this process's window when it does not
    /// answer.
    pub(crate) async fn deposit_shared(&self) {
        let Some(budget) = &self.budget else { return };
        if self.store.is_some() && self.shared(|store, scope| store.deposit(scope, &budget.quota)).await.is_none() {
            self.unplaced.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Counts a successful model call, wherever the budget lives.
    pub(crate) async fn on_success(&self) {
        if !self.deposit() {
            self.deposit_shared().await;
        }
    }

    /// How many retries this process's window allows now (`None` without a quota).
    pub(crate) fn local_allowance(&self) -> Option<u64> {
        let budget = self.budget.as_ref()?;
        let (successes, retries) = self.read(&mut lock(&budget.ledger));
        Some(budget.quota.allowance(successes, retries))
    }

    /// Withdraws one retry from this process's window: whether it was granted, and the window's
    /// successes and retries before it.
    fn withdraw_local(&self, budget: &RetryBudget) -> (bool, f64, u64) {
        let mut ledger = lock(&budget.ledger);
        let (successes, retries) = self.read(&mut ledger);
        let granted = budget.quota.allowance(successes, retries) > 0;
        if granted {
            ledger.add_retry();
        }
        (granted, successes, retries)
    }

    /// Moves the window to now, with the successes counted since its latest reading.
    fn read(&self, ledger: &mut Ledger) -> (f64, u64) {
        ledger.read(Instant::now(), self.unplaced.swap(0, Ordering::Relaxed));
        ledger.totals()
    }

    /// Whether a call may have to wait for a cooldown ([`Governor::cooldown_remaining`]): `false`
    /// with no shared store while no server has asked for one (one load).
    #[inline]
    pub(crate) fn may_cool_down(&self) -> bool {
        self.store.is_some() || self.cooled.load(Ordering::Acquire)
    }

    /// Records a server hint: nobody sends a request for this scope before `now + wait`.
    ///
    /// A wait longer than [`MAX_COOLDOWN`] (a server can send `Retry-After: 1e19`) counts as that:
    /// the clocks cannot represent `now + wait` much further out.
    ///
    /// The caller bounds `wait` by what it would honour (layer 1 notes only a retryable failure's
    /// hint within `retry_after_cap_ms`): a cooldown holds every later call of the scope, so it may
    /// not last longer than a call would have waited for it.
    pub(crate) async fn note_hint(&self, wait: Duration) {
        let wait = wait.min(MAX_COOLDOWN);
        let until = Instant::now() + wait;
        {
            let mut cooldown = lock(&self.cooldown);
            if cooldown.is_none_or(|current| current < until) {
                *cooldown = Some(until);
            }
            self.cooled.store(true, Ordering::Release);
        }
        if self.store.is_some() {
            let until = SystemTime::now() + wait;
            self.shared(|store, scope| store.extend_cooldown(scope, until)).await;
        }
    }

    /// How long to wait before the next request, if the scope is cooling down.
    pub(crate) async fn cooldown_remaining(&self) -> Option<Duration> {
        if !self.may_cool_down() {
            return None;
        }
        let now = Instant::now();
        let local = self.local_cooldown(now);
        let shared = self
            .shared(|store, scope| store.cooldown_until(scope))
            .await
            .flatten()
            .and_then(|until| until.duration_since(SystemTime::now()).ok())
            .filter(|d| !d.is_zero());
        local.max(shared)
    }

    /// What is left of this process's cooldown at `now`. One that has ended is forgotten, so that
    /// the success path takes no lock again until the next hint.
    fn local_cooldown(&self, now: Instant) -> Option<Duration> {
        let mut cooldown = lock(&self.cooldown);
        let left = cooldown.and_then(|until| until.checked_duration_since(now)).filter(|d| !d.is_zero());
        if left.is_none() {
            *cooldown = None;
            self.cooled.store(false, Ordering::Release);
        }
        left
    }

    /// Runs a store operation (made only when the store is asked); `None` without a store, when the
    /// store failed (fail open), or while it is taken for down.
    ///
    /// After a failure the store is not asked for its back-off period
    /// ([`SharedStore::offline_backoff`]): a store that accepts and never answers would otherwise
    /// cost every call its timeout. Then one call asks it again (the others stay local meanwhile).
    /// A warning says when it fails, and another when it answers again.
    async fn shared<'a, T>(
        &'a self,
        operation: impl FnOnce(&'a dyn SharedStore, &'a str) -> StoreFuture<'a, T>,
    ) -> Option<T> {
        let store = self.store.as_deref()?;
        if self.offline.load(Ordering::Acquire) {
            let now = Instant::now();
            let mut until = lock(&self.offline_until);
            if until.is_some_and(|until| now < until) {
                return None;
            }
            // This call asks the store again; the others stay local until it has answered or not.
            *until = now.checked_add(store.offline_backoff());
        }
        match operation(store, &self.scope).await {
            Ok(value) => {
                if self.offline.swap(false, Ordering::AcqRel) {
                    tracing::warn!(scope = %self.scope,
                        "shared retry store answering again; sharing the retry budget and cooldowns again");
                }
                Some(value)
            }
            Err(error) => {
                let backoff = store.offline_backoff();
                *lock(&self.offline_until) = Instant::now().checked_add(backoff);
                if !self.offline.swap(true, Ordering::AcqRel) {
                    tracing::warn!(scope = %self.scope, %error, backoff_ms = backoff.as_millis() as u64,
                        "shared retry store unavailable; using this process's retry budget and cooldowns, \
                         and asking the store again after the back-off");
                }
                None
            }
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn an_ended_cooldown_is_forgotten_so_the_success_path_skips_the_lock_again() {
        let governor = Governor::unlimited();
        assert!(!governor.may_cool_down());
        governor.note_hint(Duration::from_secs(20)).await;
        assert!(governor.may_cool_down());
        assert_eq!(governor.cooldown_remaining().await, Some(Duration::from_secs(20)));
        tokio::time::advance(Duration::from_secs(20)).await;
        assert_eq!(governor.cooldown_remaining().await, None);
        assert!(!governor.may_cool_down(), "ended: no lock for the next call");
        // A later hint cools it down again; a shorter one does not cut a longer one.
        governor.note_hint(Duration::from_secs(5)).await;
        governor.note_hint(Duration::from_secs(1)).await;
        assert_eq!(governor.cooldown_remaining().await, Some(Duration::from_secs(5)));
    }
}
