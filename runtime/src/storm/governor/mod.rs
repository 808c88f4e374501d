//! Storm control shared by every call of a `Runtime`: the retry quota, the cooldown a
//! server's Retry-After sets for everyone, and (with fallbacks) the target's circuit breaker.
//!
//! Long because its unit tests are, at its end: the quota, the cooldowns, the
//! pacer and the breaker through one governor, as a `Runtime` and a fleet drive them.

mod permit;

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use super::breaker::{Admission, BreakerSettings, BreakerState, CallOutcome, ProbeToken};
use super::ledger::Ledger;
use super::quota::RetryQuota;
use super::refusal::Refusal;
use super::store::{BeforeCall, SharedStore, StoreFuture, StoreKey};
use super::target::TargetBreaker;
use crate::message::usage::Usage;
use crate::storm::account::Account;
use crate::storm::account::{AccountRefused, Amounts, Held, SpendAccount};
use crate::storm::pace::{Demand, Pace, PaceRefused, Paced, Pacer, Pacing, Place, RateLimits, Reservation};
pub(crate) use permit::Permit;

/// The shared state of one `Runtime` (and its clones) for one provider scope.
pub(crate) struct Governor {
    scope: String,
    /// The target's model (`""` when unknown): a shared store keeps the cooldowns, the breaker and
    /// the pacer's limits per model of the scope, as this process keeps them per target.
    model: String,
    /// The retry quota: its settings, and its window (read on the failure path and by
    /// `Runtime::retry_quota_left`). `None` when the quota is off.
    quota: Option<QuotaWindow>,
    /// Successes not yet placed in the window: the success path counts here without a clock.
    unplaced: AtomicU64,
    cooldown: Mutex<Option<Instant>>,
    /// [`COOLING`] while a cooldown is noted and not seen to have ended (written under the
    /// `cooldown` lock), [`PACING`] once the pacer knows a limit: the success path of a scope with
    /// neither skips both with one load.
    attention: AtomicU8,
    /// The scope's pacer (`None` when pacing is off).
    pacer: Option<Pacer>,
    store: Option<Arc<dyn SharedStore>>,
    /// Set while the shared store is taken for down: it failed, and is asked again only when
    /// `offline_until` has passed.
    offline: AtomicBool,
    /// Until when the store is not asked, once it failed ([`SharedStore::offline_backoff`]).
    offline_until: Mutex<Option<Instant>>,
    /// The target's circuit breaker, when the runtime has fallbacks.
    breaker: Option<Box<TargetBreaker>>,
    /// The runtime's spend account (`RuntimeBuilder::with_spend_account`), one for every target.
    account: Option<Arc<Account>>,
    /// `store.is_some() || breaker.is_some()`: a success is counted by an await
    /// ([`Governor::deposit_shared`]) and every call asks before it goes
    /// ([`Governor::may_cool_down`]). One load on the success path, as with neither.
    slow: bool,
}

impl std::fmt::Debug for Governor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Governor")
            .field("scope", &self.scope)
            .field("quota", &self.quota.as_ref().map(|budget| budget.quota))
            .field("unplaced_successes", &self.unplaced.load(Ordering::Relaxed))
            .field("shared_store", &self.store.is_some())
            .field("breaker", &self.breaker.as_deref().map(|breaker| &breaker.target))
            .finish()
    }
}

/// [`Governor::attention`]: a cooldown is noted.
const COOLING: u8 = 1;
/// [`Governor::attention`]: the pacer knows a limit of the scope.
const PACING: u8 = 2;

/// [`Governor::attention`]: the shared store said, at the latest call, that it knows a limit of
/// the target (its pacer is asked then; when not, a call neither reserves nor settles there).
const FLEET_PACING: u8 = 4;

/// A retry quota's settings and its window.
struct QuotaWindow {
    quota: RetryQuota,
    ledger: Mutex<Ledger>,
}

/// The longest cooldown a server's hint sets (100 years): longer waits would overflow the clocks.
/// A [`SharedStore`] reads a cooldown that ends later as malformed (the `agentic-redis` store
/// deletes it).
pub const MAX_COOLDOWN: Duration = Duration::from_secs(100 * 365 * 24 * 60 * 60);

impl Governor {
    pub(crate) fn new(scope: String, quota: Option<RetryQuota>, store: Option<Arc<dyn SharedStore>>) -> Self {
        let slow = store.is_some();
        Self {
            scope,
            model: String::new(),
            // Read from now: successes counted before a first retry are spread over the time since.
            quota: quota
                .map(|quota| QuotaWindow { quota, ledger: Mutex::new(Ledger::new(quota.window(), Instant::now())) }),
            unplaced: AtomicU64::new(0),
            cooldown: Mutex::new(None),
            attention: AtomicU8::new(0),
            pacer: None,
            store,
            offline: AtomicBool::new(false),
            offline_until: Mutex::new(None),
            breaker: None,
            account: None,
            slow,
        }
    }

    /// Every call of the scope reserves against `account` too (docs/design.md §23).
    pub(crate) fn with_account(mut self, account: Option<Arc<Account>>) -> Self {
        self.account = account;
        self
    }

    /// The runtime's spend account, if it has one.
    pub(crate) fn account(&self) -> Option<&Arc<Account>> {
        self.account.as_ref()
    }

    /// Reserves `needed` in the fleet's spend account: `None` without a store that keeps accounts,
    /// or while the store is taken for down (the caller reserves in this process's book then).
    pub(crate) async fn account_reserve(
        &self,
        account: &SpendAccount,
        needed: Amounts,
    ) -> Option<Result<Held, AccountRefused>> {
        self.store.as_ref()?;
        self.shared(|store, _| store.account_reserve(account, needed)).await.flatten()
    }

    /// Settles a reservation the fleet's spend account made (lost when the store fails: its room
    /// is held until its window ends).
    pub(crate) async fn account_settle(&self, account: &SpendAccount, held: Held, used: Amounts) {
        self.shared(|store, _| store.account_settle(account, held, used)).await;
    }

    /// Paces this scope's calls as `pacing` says (docs/design.md §10, "Pacing"); a limit it sets is
    /// known from now.
    pub(crate) fn with_pacing(mut self, pacing: &Pacing) -> Self {
        self.pacer = Pacer::new(pacing);
        if self.pacer.as_ref().is_some_and(Pacer::is_active) {
            *self.attention.get_mut() |= PACING;
        }
        self
    }

    /// Names the target's model (`""` when unknown): in a shared store its cooldowns, breaker and
    /// rate limits are the model's of the scope ([`StoreKey`]).
    pub(crate) fn with_model(mut self, model: &str) -> Self {
        model.clone_into(&mut self.model);
        self
    }

    /// Gives this governor a breaker for target `target` (`"openai/gpt-4o-mini"`, for logs and the
    /// metric) of model `model` (`""` when unknown): its key in a shared store is the scope and the
    /// model.
    pub(crate) fn with_breaker(mut self, target: String, model: &str, settings: BreakerSettings) -> Self {
        self = self.with_model(model);
        self.breaker = Some(Box::new(TargetBreaker::new(target, settings, self.store.is_some())));
        self.slow = true;
        self
    }

    /// This target's key in a shared store.
    fn key(&self) -> StoreKey<'_> {
        StoreKey::new(&self.scope, &self.model)
    }

    /// Whether a call to this target may go now: a [`Permit`] the call's outcome is to be recorded
    /// with (always, without a breaker), or the state of the breaker that skips it. With a shared
    /// store that keeps breakers, the fleet's breaker answers, with the target's cooldown and
    /// whether the fleet knows its limits (one store operation: the call asks nothing else before
    /// it goes); when the store fails, or keeps none, this process's.
    pub(crate) async fn admit(&self) -> Result<Permit<'_>, BreakerState> {
        let Some(breaker) = self.breaker.as_deref() else { return Ok(Permit::new(self, None)) };
        // The mark of this admission, which the probe keeps if it becomes it: only this admission
        // gives that probe back.
        let token = ProbeToken::random();
        let before = self.shared_breaker(breaker, |store, b| {
            Box::pin(async move {
                let before = store.before_call(self.key(), Some((&b.settings, token))).await?;
                Ok(before.admission.map(|admission| (admission, before)))
            })
        });
        let admission = match before.await {
            Some((shared, before)) => {
                self.adopt_before(&before);
                breaker.adopt_admission(shared, token)
            }
            None => breaker.admit_local(token),
        };
        match admission {
            Admission::Call => Ok(Permit::new(self, None)),
            Admission::Probe => Ok(Permit::new(self, Some(token))),
            Admission::Skip(state) => Err(state),
        }
    }

    /// Takes in what the store said before a call: its cooldown (mirrored into this process's, so
    /// that the call's own wait reads it without asking again) and whether it knows a limit.
    fn adopt_before(&self, before: &BeforeCall) {
        if let Some(left) = before.cooldown_until.and_then(|until| until.duration_since(SystemTime::now()).ok()) {
            self.cool_down_locally(left);
        }
        if before.paces {
            self.attention.fetch_or(FLEET_PACING, Ordering::Release);
        } else {
            self.attention.fetch_and(!FLEET_PACING, Ordering::Release);
        }
    }

    /// Counts a model call's outcome in the breaker (a no-op without one); `probe` when the call
    /// was let through as the probe, whose outcome alone decides while half-open. Reached through
    /// [`Permit::record`].
    pub(super) async fn record_call(&self, outcome: CallOutcome, probe: bool) {
        let Some(breaker) = self.breaker.as_deref() else { return };
        let shared =
            self.shared_breaker(breaker, |store, b| store.breaker_record(self.key(), outcome, probe, &b.settings));
        match shared.await {
            Some(recorded) => breaker.adopt_recorded(recorded),
            None => breaker.record_local(outcome, probe),
        }
    }

    /// A call's first content arrived ([`Permit::first_content`]): counted as answered now in this
    /// process's breaker, when this process's breaker decides; `false` when it is left for the
    /// call's end (no breaker, or the fleet's breaker decides).
    pub(super) fn answered_locally(&self, probe: bool) -> bool {
        let Some(breaker) = self.breaker.as_deref().filter(|breaker| !breaker.is_shared()) else { return false };
        breaker.record_local(CallOutcome::Answered, probe);
        true
    }

    /// A call counted as answered at its first content failed afterwards.
    pub(super) fn amend_failed(&self) {
        if let Some(breaker) = self.breaker.as_deref() {
            breaker.amend_local_failed();
        }
    }

    /// Gives back the probe the admission of `token` took, which will report nothing ([`Permit`]'s
    /// drop): this process's breaker lets the next call probe at once, and the fleet's is told so,
    /// by the token, on a task of its own (a drop cannot
    /// wait for the store; a store that keeps no such operation, or does not answer, lets its probe
    /// expire after the open period, as one of a process that died does).
    pub(super) fn release_probe(&self, token: ProbeToken) {
        let Some(breaker) = self.breaker.as_deref() else { return };
        breaker.release_local(token);
        let Some(store) = self.store.clone().filter(|_| breaker.is_shared()) else { return };
        if self.offline.load(Ordering::Acquire) {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let (scope, model) = (self.scope.clone(), self.model.clone());
            runtime.spawn(async move {
                if let Err(error) = store.breaker_release(StoreKey::new(&scope, &model), token).await {
                    tracing::debug!(%error, "the shared store did not take back a probe; it expires after the open period");
                }
            });
        }
    }

    /// The name of the target whose breaker this is (`None` without a breaker).
    pub(crate) fn breaker_target(&self) -> Option<&str> {
        self.breaker.as_deref().map(|breaker| breaker.target.as_str())
    }

    /// The breaker's state as this process last saw it (`None` without a breaker).
    pub(crate) fn breaker_state(&self) -> Option<BreakerState> {
        self.breaker.as_deref().map(TargetBreaker::state)
    }

    /// The breaker's settings (`None` without a breaker).
    #[cfg(test)]
    pub(crate) fn breaker_settings(&self) -> Option<BreakerSettings> {
        self.breaker.as_deref().map(|breaker| breaker.settings)
    }

    /// A breaker operation of the shared store; `None` when the store is not asked (failed, taken
    /// for down, or keeping no breakers: then it is not asked again).
    async fn shared_breaker<'a, T>(
        &'a self,
        breaker: &'a TargetBreaker,
        operation: impl FnOnce(&'a dyn SharedStore, &'a TargetBreaker) -> StoreFuture<'a, Option<T>>,
    ) -> Option<T> {
        if !breaker.is_shared() {
            return None;
        }
        let answer = self.shared(|store, _| operation(store, breaker)).await?;
        if answer.is_none() {
            breaker.unshare();
        }
        answer
    }

    /// A governor of nothing: no retry quota, no shared store, no cooldowns from other calls. What
    /// a resilient call runs under (it belongs to no `Runtime`), so that the retry rules have one
    /// path.
    pub(crate) fn unlimited() -> Self {
        Self::new(String::new(), None, None)
    }

    /// Withdraws one retry from the budget, as the retry is about to be sent; `Err` says why the
    /// budget refused it. Always `Ok` without a quota.
    pub(crate) async fn withdraw(&self) -> Result<(), Refusal> {
        let Some(budget) = &self.quota else { return Ok(()) };
        let quota = budget.quota;
        let shared = self.shared(|store, scope| store.try_withdraw(scope, &quota)).await;
        let (granted, successes, retries) = match shared {
            Some(withdrawal) => (withdrawal.granted, withdrawal.successes as f64, withdrawal.retries),
            None => self.withdraw_local(budget),
        };
        if granted {
            Ok(())
        } else {
            Err(Refusal::RetryQuota {
                successes: successes.round() as u64,
                retries,
                window: quota.window(),
                retry_percent: quota.retry_percent(),
                min_retries: quota.min_retries(),
            })
        }
    }

    /// Counts a successful model call. `false` when there is a shared store or a breaker, whose
    /// count is to be awaited ([`Governor::deposit_shared`]). Synchronous, and reads no clock, so
    /// that an exec's success path awaits nothing for it.
    #[inline]
    pub(crate) fn deposit(&self) -> bool {
        if self.slow {
            return false;
        }
        if self.quota.is_some() {
            self.unplaced.fetch_add(1, Ordering::Relaxed);
        }
        true
    }

    /// [`Governor::deposit`] into the shared store (into this process's window when it does not
    /// answer), and the answer into the breaker through the call's `permit` (the current target's,
    /// when the runtime has fallbacks). With a store, one operation for both: one round trip.
    pub(crate) async fn deposit_shared(&self, permit: Option<Permit<'_>>) {
        let quota = self.quota.as_ref().map(|budget| &budget.quota);
        let shared_breaker = self.breaker.as_deref().filter(|breaker| breaker.is_shared() && permit.is_some());
        let asked = match (quota.is_some() || shared_breaker.is_some()) && self.store.is_some() {
            true => {
                let probe = permit.as_ref().is_some_and(Permit::is_probe);
                let with_breaker = shared_breaker.map(|breaker| (&breaker.settings, probe));
                // Boxed: the store's future would otherwise grow the future of every exec.
                Box::pin(self.shared(|store, _| store.after_answer(self.key(), quota, with_breaker))).await
            }
            false => None,
        };
        if asked.is_none() && quota.is_some() {
            self.unplaced.fetch_add(1, Ordering::Relaxed);
        }
        let Some(permit) = permit else { return };
        match (shared_breaker, asked) {
            (Some(breaker), Some(Some(recorded))) => {
                breaker.adopt_recorded(recorded);
                permit.recorded();
            }
            (Some(breaker), Some(None)) => {
                // The store answered and keeps no breakers: this process's decides from now on.
                breaker.unshare();
                Box::pin(permit.record(CallOutcome::Answered)).await;
            }
            // No breaker, this process's, or a store that failed: the permit records it here.
            _ => Box::pin(permit.record(CallOutcome::Answered)).await,
        }
    }

    /// How many retries this process's window allows now (`None` without a quota): what a retry
    /// sent now would be allowed, and nothing is changed by asking (a scrape must not change which
    /// retries go, [`Ledger::peek`]).
    pub(crate) fn local_allowance(&self) -> Option<u64> {
        let budget = self.quota.as_ref()?;
        let unplaced = self.unplaced.load(Ordering::Relaxed);
        let (successes, retries) = lock(&budget.ledger).peek(Instant::now(), unplaced);
        Some(budget.quota.allowance(successes, retries))
    }

    /// The retry quota's refusal of a retry asked now, read without changing anything, when this
    /// process's window decides (no shared store): a retry it would refuse is refused before its
    /// wait, not after (the successes of the wait could pay for it only if other calls succeed
    /// meanwhile, and a decision that says "retry" should not then be taken back). With a shared
    /// store the fleet's quota is asked after the wait, as it is about to be sent.
    pub(crate) fn refuses_retry_now(&self) -> Option<Refusal> {
        let window = self.quota.as_ref()?;
        if self.store.is_some() {
            return None;
        }
        let unplaced = self.unplaced.load(Ordering::Relaxed);
        let (successes, retries) = lock(&window.ledger).peek(Instant::now(), unplaced);
        let quota = window.quota;
        (quota.allowance(successes, retries) == 0).then(|| Refusal::RetryQuota {
            successes: successes.round() as u64,
            retries,
            window: quota.window(),
            retry_percent: quota.retry_percent(),
            min_retries: quota.min_retries(),
        })
    }

    /// Withdraws one retry from this process's window: whether it was granted, and the window's
    /// successes and retries before it.
    fn withdraw_local(&self, budget: &QuotaWindow) -> (bool, f64, u64) {
        let mut ledger = lock(&budget.ledger);
        let (successes, retries) = self.read(&mut ledger);
        let granted = budget.quota.allowance(successes, retries) > 0;
        if granted {
            ledger.add_retry();
        }
        (granted, successes, retries)
    }

    /// Moves the window to now, with the successes counted since its latest reading: for a retry
    /// only (a reading that places successes would change what later retries see).
    fn read(&self, ledger: &mut Ledger) -> (f64, u64) {
        ledger.read(Instant::now(), self.unplaced.swap(0, Ordering::Relaxed));
        ledger.totals()
    }

    /// Whether a call may have to wait for a cooldown ([`Governor::cooldown_remaining`]) or ask its
    /// breaker ([`Governor::admit`]): `false` with no shared store and no breaker while no server
    /// has asked for a cooldown (one load).
    #[inline]
    pub(crate) fn may_cool_down(&self) -> bool {
        self.slow || self.attention.load(Ordering::Acquire) != 0
    }

    /// Whether calls are to be paced: this process's pacer knows a limit, or the shared store said
    /// at the call's admission or cooldown reading that it knows one (one load, on the path of
    /// calls that asked [`Governor::may_cool_down`]). A target whose server states no limits is
    /// never paced, in the store or here.
    #[inline]
    pub(crate) fn paces(&self) -> bool {
        self.pacer.is_some() && self.attention.load(Ordering::Acquire) & (PACING | FLEET_PACING) != 0
    }

    /// After a call: takes in the limits its response `stated` (and when it came), and reconciles
    /// what it reserved (`paced`) with its `usage`.
    pub(crate) async fn after_call(
        &self,
        stated: Option<&(RateLimits, Instant)>,
        paced: Option<&Paced>,
        usage: Option<&Usage>,
    ) {
        if let Some((limits, received)) = stated {
            self.learn(limits, *received).await;
        }
        match paced {
            Some(Paced::Reserved(reservation)) => self.settle(reservation, usage).await,
            Some(Paced::Unpaced(demand)) => {
                if let Some(pacer) = self.pacer.as_ref() {
                    pacer.calibrate(demand, usage);
                }
            }
            None => {}
        }
    }

    /// What a call of about `input()` tokens (estimated from its request, only when pacing is on)
    /// would need of the scope's limits, whether or not it is to be paced ([`Governor::paces`]);
    /// `None` when pacing is off.
    pub(crate) fn estimate(&self, input: impl FnOnce() -> u64, max_output: Option<u64>) -> Option<Demand> {
        Some(self.pacer.as_ref()?.demand(input(), max_output))
    }

    /// Reserves `demand` in the scope's limits if the wait fits in `left` and in `cap`
    /// (`retry_after_cap_ms`): the fleet's (one store operation) with a shared store that keeps a
    /// pacer and knows a limit, else this process's; the reservation says which, for its settle.
    ///
    /// A wait longer than `cap` is not made and nothing is reserved ([`Pace::OverCap`]): no
    /// statement of a server holds a call longer than a `Retry-After` could, and the server's own
    /// answer to the call decides (its 429 and `Retry-After` cool the scope). A wait within the cap
    /// that does not fit in `left` is refused, as a `Retry-After` within the cap past the deadline.
    pub(crate) async fn pace(
        &self,
        demand: &Demand,
        left: Option<Duration>,
        cap: Duration,
    ) -> Result<Pace, PaceRefused> {
        let Some(pacer) = self.pacer.as_ref() else { return Ok(Pace::Unknown) };
        // The buckets refuse a wait of `within` or longer, and take nothing then: one past the cap
        // (a wait of the cap exactly is made), or the time left.
        let over_cap = cap.saturating_add(Duration::from_micros(1));
        let within = Some(left.map_or(over_cap, |left| left.min(over_cap)));
        let shared = match self.store {
            Some(_) => self.shared(|store, _| store.pace_reserve(self.key(), demand, within)).await.flatten(),
            None => None,
        };
        let (answer, place) = match shared {
            Some(answer) => (answer, Place::Shared),
            None if !pacer.is_active() => return Ok(Pace::Unknown),
            None => (pacer.reserve(demand, within), Place::Local),
        };
        match answer {
            Ok(reserved) => Ok(Pace::Reserved(reserved, Reservation { demand: *demand, place })),
            Err(refused) if refused.wait > cap => Ok(Pace::OverCap { wait: refused.wait, limit: refused.limit, cap }),
            Err(refused) => Err(refused),
        }
    }

    /// Takes in the rate limits a response of this scope stated, received at `received`: this
    /// process's pacer learns them (it paces by them when the store is down), and the store's.
    pub(crate) async fn learn(&self, limits: &RateLimits, received: Instant) {
        let Some(pacer) = self.pacer.as_ref().filter(|_| !limits.is_empty()) else { return };
        pacer.learn(limits, received);
        self.attention.fetch_or(PACING, Ordering::Release);
        if self.store.is_some() {
            self.shared(|store, _| store.pace_learn(self.key(), limits)).await;
        }
    }

    /// Reconciles a paced call's reservation with the `usage` it reported (`None`: it failed),
    /// where it was reserved: this process's buckets, or the fleet's (the estimates learn from it
    /// either way). A reservation in the fleet's buckets whose settle the store does not take keeps
    /// what it reserved there: an over-count of one call, refilled within its window.
    pub(crate) async fn settle(&self, reservation: &Reservation, usage: Option<&Usage>) {
        let Some(pacer) = self.pacer.as_ref() else { return };
        let Reservation { demand, place } = reservation;
        match place {
            Place::Local => pacer.settle(demand, usage),
            Place::Shared => {
                let used = pacer.calibrate(demand, usage);
                self.shared(|store, _| store.pace_settle(self.key(), demand, &used)).await;
            }
        }
    }

    /// Records a server hint: nobody sends a request for this target before `now + wait`.
    ///
    /// A wait longer than [`MAX_COOLDOWN`] (a server can send `Retry-After: 1e19`) counts as that:
    /// the clocks cannot represent `now + wait` much further out.
    ///
    /// The caller bounds `wait` by what it would honour (layer 1 notes only a retryable failure's
    /// hint within `retry_after_cap_ms`): a cooldown holds every later call of the scope, so it may
    /// not last longer than a call would have waited for it.
    pub(crate) async fn note_hint(&self, wait: Duration) {
        let wait = wait.min(MAX_COOLDOWN);
        self.cool_down_locally(wait);
        if self.store.is_some() {
            let until = SystemTime::now() + wait;
            self.shared(|store, _| store.extend_cooldown(self.key(), until)).await;
        }
    }

    /// This process's cooldown lasts at least `wait` from now.
    fn cool_down_locally(&self, wait: Duration) {
        let until = Instant::now() + wait.min(MAX_COOLDOWN);
        let mut cooldown = lock(&self.cooldown);
        if cooldown.is_none_or(|current| current < until) {
            *cooldown = Some(until);
        }
        self.attention.fetch_or(COOLING, Ordering::Release);
    }

    /// How long to wait before the next request, if the target is cooling down.
    ///
    /// With a breaker the store shares, the fleet's cooldown comes with each admission
    /// ([`Governor::admit`]) and is read here from this process's mirror of it, without a round
    /// trip; without one, the store is asked here (one operation, which also says whether it knows
    /// the target's limits).
    pub(crate) async fn cooldown_remaining(&self) -> Option<Duration> {
        if !self.may_cool_down() {
            return None;
        }
        let mirrored = self.breaker.as_deref().is_some_and(TargetBreaker::is_shared);
        if self.store.is_some() && !mirrored {
            if let Some(before) = self.shared(|store, _| store.before_call(self.key(), None)).await {
                self.adopt_before(&before);
            }
        }
        self.local_cooldown(Instant::now())
    }

    /// What is left of this process's cooldown at `now`. One that has ended is forgotten, so that
    /// the success path takes no lock again until the next hint.
    fn local_cooldown(&self, now: Instant) -> Option<Duration> {
        let mut cooldown = lock(&self.cooldown);
        let left = cooldown.and_then(|until| until.checked_duration_since(now)).filter(|d| !d.is_zero());
        if left.is_none() {
            *cooldown = None;
            self.attention.fetch_and(!COOLING, Ordering::Release);
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
                        "shared retry store answering again; sharing the retry quota, cooldowns, breakers and spend account again");
                }
                Some(value)
            }
            Err(error) => {
                let backoff = store.offline_backoff();
                *lock(&self.offline_until) = Instant::now().checked_add(backoff);
                if !self.offline.swap(true, Ordering::AcqRel) {
                    tracing::warn!(scope = %self.scope, %error, backoff_ms = backoff.as_millis() as u64,
                        "shared retry store unavailable; using this process's retry quota, cooldowns, \
                         breakers and spend account, and asking the store again after the back-off");
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
    use crate::storm::breaker::Opened;
    use crate::storm::pace::{Demand, Pace, PaceRefused, Paced, Pacing, Place, RateLimits};
    use crate::storm::test_store::TestStore;

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

    const TARGET: &str = "openai/gpt-4o-mini";

    fn with_breaker(store: Option<Arc<dyn SharedStore>>) -> Governor {
        Governor::new("openai:3f9a0c".to_owned(), Some(RetryQuota::standard()), store).with_breaker(
            TARGET.to_owned(),
            "gpt-4o-mini",
            BreakerSettings::standard(),
        )
    }

    fn opened(failures: u64, calls: u64) -> Opened {
        Opened { failures, calls, window: Duration::from_secs(10) }
    }

    /// Once the open period of the breaker A and B share is over: of their concurrent admissions one
    /// is the probe, the others skip; the probe's answer closes the breaker for both.
    async fn one_probe_then_closed_for_both(a: &Governor, b: &Governor) {
        let admitted = futures_util::future::join_all([a.admit(), b.admit(), a.admit(), b.admit()]).await;
        let admissions: Vec<Admission> = admitted.iter().map(kind).collect();
        let half_open = Admission::Skip(BreakerState::HalfOpen { opened: opened(20, 20) });
        assert_eq!(admissions.iter().filter(|admission| **admission == Admission::Probe).count(), 1, "{admissions:?}");
        assert_eq!(admissions.iter().filter(|admission| **admission == half_open).count(), 3);
        let probe = admitted.into_iter().find_map(|admitted| admitted.ok().filter(Permit::is_probe)).unwrap();
        probe.record(CallOutcome::Answered).await;
        assert_eq!((ask(a).await, ask(b).await), (Admission::Call, Admission::Call));
        assert_eq!((a.breaker_state(), b.breaker_state()), (Some(BreakerState::Closed), Some(BreakerState::Closed)));
    }

    /// What an admission says, its permit aside.
    fn kind(admitted: &Result<Permit<'_>, BreakerState>) -> Admission {
        match admitted {
            Ok(permit) if permit.is_probe() => Admission::Probe,
            Ok(_) => Admission::Call,
            Err(state) => Admission::Skip(*state),
        }
    }

    /// The governor's admission, its permit dropped (a probe's given back).
    async fn ask(governor: &Governor) -> Admission {
        kind(&governor.admit().await)
    }

    /// `times` calls admitted and failed (those the breaker skips once open fail nothing).
    async fn fail(governor: &Governor, times: usize) {
        for _ in 0..times {
            if let Ok(permit) = governor.admit().await {
                permit.record(CallOutcome::Failed).await;
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn without_a_breaker_every_call_goes_and_the_success_path_is_unchanged() {
        let governor = Governor::new("openai:3f9a0c".to_owned(), Some(RetryQuota::standard()), None);
        fail(&governor, 100).await;
        assert_eq!(ask(&governor).await, Admission::Call);
        assert_eq!((governor.breaker_state(), governor.breaker_settings()), (None, None));
        assert!(governor.deposit(), "counted without an await");
        assert!(!governor.may_cool_down(), "no lock, no admission");
    }

    #[tokio::test(start_paused = true)]
    async fn with_a_breaker_deposit_defers_and_the_success_reaches_the_breaker() {
        let governor = with_breaker(None);
        assert!(governor.may_cool_down(), "every call asks the breaker");
        assert_eq!(governor.breaker_settings(), Some(BreakerSettings::standard()));
        fail(&governor, 19).await;
        let permit = governor.admit().await.unwrap();
        assert!(!permit.is_probe());
        assert!(!governor.deposit(), "the success is to be awaited");
        governor.deposit_shared(Some(permit)).await;
        // The answer was the window's 20th call: 19 failures of 20 open it, and the budget has it.
        let open = BreakerState::Open { left: Duration::from_secs(30), opened: opened(19, 20) };
        assert_eq!(governor.breaker_state(), Some(open));
        assert_eq!(ask(&governor).await, Admission::Skip(open));
        assert_eq!(governor.local_allowance(), Some(101), "the floor and the success");
        governor.deposit_shared(None).await;
        assert_eq!(governor.local_allowance(), Some(102));
    }

    #[tokio::test(start_paused = true)]
    async fn the_key_in_a_shared_store_is_the_scope_and_the_model() {
        let store = Arc::new(TestStore::with_breakers());
        let governor = with_breaker(Some(store.clone()));
        ask(&governor).await;
        assert_eq!(store.keys(), ["openai:3f9a0c/gpt-4o-mini"]);
        let unknown = Governor::new("anthropic:77aa".to_owned(), None, Some(store.clone())).with_breaker(
            "anthropic".to_owned(),
            "",
            BreakerSettings::standard(),
        );
        fail(&unknown, 1).await;
        assert_eq!(store.keys(), ["anthropic:77aa/", "openai:3f9a0c/gpt-4o-mini"]);
    }

    /// A store is input, as a server is: an open period longer than the settings' (a stored
    /// `until` of 9e18 ms) is one open period here, not 285 million years (nor an overflow).
    #[tokio::test(start_paused = true)]
    async fn two_governors_share_one_breaker_through_a_store() {
        let store: Arc<dyn SharedStore> = Arc::new(TestStore::with_breakers());
        let (a, b) = (with_breaker(Some(store.clone())), with_breaker(Some(store)));
        fail(&a, 20).await;
        let open = BreakerState::Open { left: Duration::from_secs(30), opened: opened(20, 20) };
        assert_eq!(ask(&b).await, Admission::Skip(open), "B failed nothing and skips");
        assert_eq!(b.breaker_state(), Some(open), "B reads the fleet's state");
        tokio::time::advance(Duration::from_secs(30)).await;
        one_probe_then_closed_for_both(&a, &b).await;
    }

    #[tokio::test(start_paused = true)]
    async fn each_transition_is_logged_once_by_the_process_whose_call_caused_it() {
        let (_guard, captured) = agentic_test_support::captured_log::capture(tracing::Level::INFO);
        let store: Arc<dyn SharedStore> = Arc::new(TestStore::with_breakers());
        let (a, b) = (with_breaker(Some(store.clone())), with_breaker(Some(store)));
        fail(&a, 25).await;
        ask(&b).await;
        tokio::time::advance(Duration::from_secs(30)).await;
        let probe = b.admit().await.unwrap();
        assert!(probe.is_probe());
        assert_eq!(ask(&a).await, Admission::Skip(BreakerState::HalfOpen { opened: opened(20, 20) }));
        b.deposit_shared(Some(probe)).await;
        a.deposit_shared(None).await;
        let log = captured.text();
        let lines: Vec<&str> = log.lines().filter(|line| line.contains("circuit breaker")).collect();
        assert_eq!(lines.len(), 3, "{log}");
        assert!(lines[0].contains(" WARN ") && lines[0].contains(
            "circuit breaker of openai/gpt-4o-mini open: its calls are skipped for 30 s, after 20 failures of 20 calls in 10 s"
        ), "{log}");
        assert!(lines[1].contains(" INFO ") && lines[1].contains("half-open: one probe call let through"), "{log}");
        assert!(lines[2].contains(" INFO ") && lines[2].contains("closed: its probe call was answered"), "{log}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_dropped_probe_is_given_back_here_and_in_the_fleet_so_the_next_call_probes_at_once() {
        let store = Arc::new(TestStore::with_breakers());
        let (a, b) = (with_breaker(Some(store.clone())), with_breaker(Some(store.clone())));
        fail(&a, 20).await;
        tokio::time::advance(Duration::from_secs(30)).await;
        let probe = a.admit().await.unwrap();
        assert!(probe.is_probe());
        let half_open = Admission::Skip(BreakerState::HalfOpen { opened: opened(20, 20) });
        assert_eq!(ask(&b).await, half_open, "one probe in the fleet");
        // Its call never goes (or its exec is dropped): the permit is dropped unrecorded.
        drop(probe);
        assert_eq!(a.breaker_state(), Some(BreakerState::Open { left: Duration::ZERO, opened: opened(20, 20) }));
        // The store hears of it on a task of its own.
        tokio::task::yield_now().await;
        let probe = b.admit().await.unwrap();
        assert!(probe.is_probe(), "B probes at once, not an open period later");
        probe.record(CallOutcome::Answered).await;
        assert_eq!(ask(&a).await, Admission::Call);

        // In one process, the same without a store.
        let local = with_breaker(None);
        fail(&local, 20).await;
        tokio::time::advance(Duration::from_secs(30)).await;
        drop(local.admit().await.unwrap());
        assert_eq!(ask(&local).await, Admission::Probe);
    }

    /// A probe taken for lost (its exec held it past the open period) and replaced: its permit,
    /// dropped late, gives back nothing, here or in the fleet, and the next probe stays the only
    /// one out. Before, the late drop freed the second probe, and a third went beside it.
    #[tokio::test(start_paused = true)]
    async fn a_late_drop_of_a_probe_taken_for_lost_leaves_the_next_probe_out() {
        let half_open = Admission::Skip(BreakerState::HalfOpen { opened: opened(20, 20) });
        for store in [None, Some(Arc::new(TestStore::with_breakers()) as Arc<dyn SharedStore>)] {
            let shared = store.is_some();
            let governor = with_breaker(store);
            fail(&governor, 20).await;
            tokio::time::advance(Duration::from_secs(30)).await;
            let lost = governor.admit().await.unwrap();
            assert!(lost.is_probe());
            tokio::time::advance(Duration::from_secs(30)).await;
            let next = governor.admit().await.unwrap();
            assert!(next.is_probe(), "shared {shared}: the lost probe is replaced");
            drop(lost);
            tokio::task::yield_now().await;
            assert_eq!(ask(&governor).await, half_open, "shared {shared}: the next probe is still out");
            drop(next);
            tokio::task::yield_now().await;
            assert_eq!(ask(&governor).await, Admission::Probe, "shared {shared}: given back by its own admission");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn an_answer_is_counted_at_first_content_and_a_failure_after_it_counts_as_a_failure() {
        let governor = &with_breaker(None);
        let call = |cut: bool| async move {
            let mut permit = governor.admit().await.unwrap();
            permit.first_content();
            permit.record(if cut { CallOutcome::Failed } else { CallOutcome::Answered }).await;
        };
        // A long answer: counted at its first content, its stream still going.
        let mut long = governor.admit().await.unwrap();
        long.first_content();
        // Ten answers (each counted once, at its first content) and nine streams cut after theirs.
        for n in 0..19 {
            call(n % 2 == 1 && n < 18).await;
        }
        assert_eq!(governor.breaker_state(), Some(BreakerState::Closed), "9 failures of 20 calls");
        // The long answer's stream is cut too: its answer becomes a failure, 10 of 20.
        long.record(CallOutcome::Failed).await;
        let open = BreakerState::Open { left: Duration::from_secs(30), opened: opened(10, 20) };
        assert_eq!(governor.breaker_state(), Some(open));
    }

    #[tokio::test(start_paused = true)]
    async fn a_store_that_keeps_no_breakers_leaves_them_to_each_process() {
        let store: Arc<dyn SharedStore> = Arc::new(TestStore::budget_only());
        let (a, b) = (with_breaker(Some(store.clone())), with_breaker(Some(store)));
        fail(&a, 20).await;
        assert!(matches!(ask(&a).await, Admission::Skip(BreakerState::Open { .. })));
        assert_eq!(ask(&b).await, Admission::Call, "not shared: B's own breaker is closed");
    }

    #[tokio::test(start_paused = true)]
    async fn a_store_that_fails_leaves_the_breaker_to_this_process_for_its_back_off() {
        let store = Arc::new(TestStore::with_breakers());
        let governor = with_breaker(Some(store.clone()));
        fail(&governor, 5).await;
        store.down.store(true, Ordering::Relaxed);
        // The store fails (and is left alone for its back-off): the local breaker counts on.
        fail(&governor, 20).await;
        assert!(matches!(ask(&governor).await, Admission::Skip(BreakerState::Open { .. })));
        store.down.store(false, Ordering::Relaxed);
        tokio::time::advance(DEFAULT_BACKOFF).await;
        // Back: the fleet's breaker (5 failures, closed) answers again, and this one mirrors it.
        assert_eq!(ask(&governor).await, Admission::Call);
        assert_eq!(governor.breaker_state(), Some(BreakerState::Closed));
    }

    const DEFAULT_BACKOFF: Duration = crate::storm::store::DEFAULT_OFFLINE_BACKOFF;

    /// What `Governor::pace` reserved: its wait, its limit, and where (panics on anything else).
    fn reserved(pace: Result<Pace, PaceRefused>) -> (Duration, Option<crate::storm::pace::LimitKind>, Place) {
        match pace {
            Ok(Pace::Reserved(reserved, reservation)) => (reserved.wait, reserved.limit, reservation.place),
            other => panic!("not a reservation: {other:?}"),
        }
    }

    const CAP: Duration = Duration::from_secs(60);

    #[tokio::test(start_paused = true)]
    async fn with_the_fleets_pacer_down_this_process_paces_by_what_it_heard() {
        use crate::storm::pace::{Limit, LimitKind};
        let governor = Governor::new("openai:3f9a0c".to_owned(), None, Some(Arc::new(TestStore::pacer_down())))
            .with_pacing(&Pacing::from_headers());
        assert!(!governor.paces(), "nothing known yet");
        assert_eq!(governor.cooldown_remaining().await, None);
        assert!(governor.paces(), "a store that cannot say whether it knows a limit is asked by every call");
        let demand = governor.estimate(|| 10, None).unwrap();
        assert_eq!(governor.pace(&demand, None, CAP).await, Ok(Pace::Unknown), "nothing known: at once, unreserved");
        let limits = RateLimits::new().with(LimitKind::Requests, Limit::new(10, 1, Duration::from_secs(54)));
        governor.learn(&limits, Instant::now()).await;
        assert_eq!(reserved(governor.pace(&demand, None, CAP).await), (Duration::ZERO, None, Place::Local));
        let second = reserved(governor.pace(&demand, None, CAP).await);
        assert_eq!(second, (Duration::from_secs(6), Some(LimitKind::Requests), Place::Local));
        // A wait longer than the cap is not made, and nothing is reserved: the next wait is the same.
        let over = governor.pace(&demand, None, Duration::from_secs(5)).await;
        assert_eq!(
            over,
            Ok(Pace::OverCap {
                wait: Duration::from_secs(12),
                limit: LimitKind::Requests,
                cap: Duration::from_secs(5)
            })
        );
        let third = reserved(governor.pace(&demand, Some(Duration::from_secs(20)), CAP).await);
        assert_eq!(third.0, Duration::from_secs(12));
        // Within the cap, past the deadline: refused, with the time that was left.
        let refused = governor.pace(&demand, Some(Duration::from_secs(3)), CAP).await.unwrap_err();
        assert_eq!((refused.wait, refused.left), (Duration::from_secs(18), Duration::from_secs(3)));
    }

    #[tokio::test(start_paused = true)]
    async fn a_reservation_is_settled_where_it_was_made() {
        use crate::storm::pace::{Limit, LimitKind};
        let store = Arc::new(TestStore::lending_pacer());
        let governor =
            Governor::new("openai:3f9a0c".to_owned(), None, Some(store.clone())).with_pacing(&Pacing::from_headers());
        let tokens = RateLimits::new().with(LimitKind::Tokens, Limit::new(1000, 1000, Duration::ZERO).with_window(CAP));
        governor.learn(&tokens, Instant::now()).await;
        let demand = governor.estimate(|| 400, None).unwrap();
        let usage = Usage::new(100, 0);
        // The store is down: the call reserves in this process's buckets. It is back before the
        // answer: the settle still goes to this process's buckets, not to the fleet's, which lent
        // nothing.
        store.down.store(true, Ordering::Relaxed);
        let Ok(Pace::Reserved(_, offline)) = governor.pace(&demand, None, CAP).await else { panic!("reserved") };
        assert_eq!(offline.place, Place::Local);
        store.down.store(false, Ordering::Relaxed);
        tokio::time::advance(DEFAULT_BACKOFF).await;
        governor.after_call(None, Some(&Paced::Reserved(offline)), Some(&usage)).await;
        assert!(store.settles().is_empty(), "the fleet is credited nothing: {:?}", store.settles());
        // This process's bucket has its 300 back: a call of 700 more goes at once there.
        store.down.store(true, Ordering::Relaxed);
        tokio::time::advance(DEFAULT_BACKOFF).await;
        let big = governor.estimate(|| 700, None).unwrap();
        assert_eq!(reserved(governor.pace(&big, None, CAP).await), (Duration::ZERO, None, Place::Local));
        // Reserved in the fleet's buckets: settled there, and this process's are left alone.
        store.down.store(false, Ordering::Relaxed);
        tokio::time::advance(DEFAULT_BACKOFF).await;
        let Ok(Pace::Reserved(_, shared)) = governor.pace(&demand, None, CAP).await else { panic!("reserved") };
        assert_eq!(shared.place, Place::Shared);
        governor.after_call(None, Some(&Paced::Reserved(shared)), Some(&usage)).await;
        assert_eq!(store.settles(), [(demand, Demand::new(100, 0))]);
    }
}
