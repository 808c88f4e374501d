//! Where the retry quota and the cooldowns live when a fleet of processes shares them.

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, SystemTime};

use super::breaker::{BreakerSettings, CallOutcome, ProbeToken, Recorded, SharedAdmission};
use super::quota::RetryQuota;
use crate::storm::account::{AccountRefused, Amounts, Held, SpendAccount};
use crate::storm::pace::{Demand, PaceRefused, RateLimits, Reserved};

/// How long the runtime works without a shared store that failed before it asks the store again,
/// unless the store says otherwise ([`SharedStore::offline_backoff`]): 10 s.
///
/// A store that accepts connections and never answers costs each operation its timeout (250 ms for
/// `RedisStore`): asked on every call, it would hold every call that long. Asked once per 10 s,
/// it costs one call 250 ms in 10 s, and the process shares its state again within 10 s of the
/// store's return (a Redis failover takes about as long); a sixth of the budget's 60 s window is
/// spent on local counts at most.
pub const DEFAULT_OFFLINE_BACKOFF: Duration = Duration::from_secs(10);

/// A future returned by a [`SharedStore`].
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// A store of retry quotas, cooldowns, circuit breakers and rate limits shared by many processes
/// (e.g. Redis: the `agentic-redis` crate's `RedisStore`). Every update is atomic. A `scope` names
/// one provider and API key (`"openai:3f9a..."`, a fingerprint, never the key itself); a
/// [`StoreKey`] names one model of a scope, a target.
///
/// The budget's window is the store's and the scope's: every process's successes pay for every
/// process's retries, by the rule of [`RetryQuota`] (docs/design.md §10), counted on the store's
/// clock. The cooldowns, the breakers and the pacer's limits are the target's: providers state
/// limits per model, and a runtime keeps each target's apart in one process too.
///
/// The runtime asks once before each call ([`before_call`](SharedStore::before_call): the
/// cooldown, the breaker's admission, whether the pacer knows a limit), counts each answer once
/// after it ([`after_answer`](SharedStore::after_answer): the budget's deposit and the breaker's
/// outcome), withdraws as a retry is about to be sent, and reserves and settles pace only for a
/// target whose limits are known. When a call fails or takes too long, the runtime goes on with its
/// in-process state (fail open) and does not ask the store again for
/// [`offline_backoff`](SharedStore::offline_backoff), logging a warning when the store fails and
/// another when it answers again.
///
/// A store that does not implement the breaker methods keeps no breakers: each process keeps its
/// own; one that does not implement the pacer's leaves pacing to each process. The two combined
/// operations have defaults made of the single ones.
pub trait SharedStore: Send + Sync + 'static {
    /// Counts one successful model call in the window of `scope`.
    fn deposit<'a>(&'a self, scope: &'a str, quota: &'a RetryQuota) -> StoreFuture<'a, ()>;

    /// Withdraws one retry from the window of `scope` when `quota` allows one, and says whether
    /// it did, with the window's counts before the withdrawal.
    fn try_withdraw<'a>(&'a self, scope: &'a str, quota: &'a RetryQuota) -> StoreFuture<'a, Withdrawal>;

    /// The instant before which no request for the target `key` should be sent, if one is set and
    /// not past.
    fn cooldown_until<'a>(&'a self, key: StoreKey<'a>) -> StoreFuture<'a, Option<SystemTime>>;

    /// Moves the cooldown of the target `key` to `until` unless it already ends later.
    fn extend_cooldown<'a>(&'a self, key: StoreKey<'a>, until: SystemTime) -> StoreFuture<'a, ()>;

    /// How long the runtime goes on without the store after an operation failed, before it asks
    /// again.
    ///
    /// # Default
    ///
    /// [`DEFAULT_OFFLINE_BACKOFF`] (10 s).
    fn offline_backoff(&self) -> Duration {
        DEFAULT_OFFLINE_BACKOFF
    }

    /// Whether a call to the target `key` may go now, under `settings`: at most one caller in the
    /// fleet gets [`SharedAdmission::Probe`] per open period, and the probe keeps the caller's
    /// `token` (the one [`breaker_release`](Self::breaker_release) names). `None` when this store
    /// keeps no breakers: each process then keeps its own.
    ///
    /// # Default
    ///
    /// `None`: this store keeps no breakers.
    fn breaker_admit<'a>(
        &'a self,
        key: StoreKey<'a>,
        settings: &'a BreakerSettings,
        token: ProbeToken,
    ) -> StoreFuture<'a, Option<SharedAdmission>> {
        let _ = (key, settings, token);
        Box::pin(std::future::ready(Ok(None)))
    }

    /// Counts one call's outcome in the breaker of the target `key` under `settings`, and says
    /// what it changed; `probe` when the call was let through as the probe, the only call whose
    /// outcome decides while the breaker is half-open. `None` when this store keeps no breakers.
    ///
    /// # Default
    ///
    /// `None`: this store keeps no breakers.
    fn breaker_record<'a>(
        &'a self,
        key: StoreKey<'a>,
        outcome: CallOutcome,
        probe: bool,
        settings: &'a BreakerSettings,
    ) -> StoreFuture<'a, Option<Recorded>> {
        let _ = (key, outcome, probe, settings);
        Box::pin(std::future::ready(Ok(None)))
    }

    /// Gives back the probe of breaker `key` that the admission of `token` took and that will report
    /// nothing (its call was never sent, or its exec was dropped): the next caller may probe at
    /// once, instead of after the open period. Only that probe: one taken for lost meanwhile, and
    /// replaced by another caller's, is left to the other (compare and delete).
    ///
    /// # Default
    ///
    /// Nothing: the probe is taken for lost after the open period, as one of a process that died.
    fn breaker_release<'a>(&'a self, key: StoreKey<'a>, token: ProbeToken) -> StoreFuture<'a, ()> {
        let _ = (key, token);
        Box::pin(std::future::ready(Ok(())))
    }

    /// Everything a call to the target `key` asks before it goes: its cooldown, its breaker's
    /// admission under `breaker`'s settings for the caller's token (when the runtime has a breaker
    /// for it), and whether the store's pacer knows a limit of it (when not, the call neither
    /// reserves nor settles in the store).
    ///
    /// # Default
    ///
    /// [`cooldown_until`](Self::cooldown_until), then [`breaker_admit`](Self::breaker_admit) when
    /// `breaker` is set; `paces` is `true` (a store that cannot tell is asked by each call).
    fn before_call<'a>(
        &'a self,
        key: StoreKey<'a>,
        breaker: Option<(&'a BreakerSettings, ProbeToken)>,
    ) -> StoreFuture<'a, BeforeCall> {
        Box::pin(async move {
            let cooldown_until = self.cooldown_until(key).await?;
            let admission = match breaker {
                Some((settings, token)) => self.breaker_admit(key, settings, token).await?,
                None => None,
            };
            Ok(BeforeCall { cooldown_until, admission, paces: true })
        })
    }

    /// Everything an answer of the target `key` changes: one success in the budget of its scope
    /// under `quota` (when the runtime has a retry quota), and the answer in its breaker under
    /// `breaker`'s settings (`true`: the call was the probe). What the breaker's record changed,
    /// `None` when no breaker was asked or this store keeps none.
    ///
    /// # Default
    ///
    /// [`deposit`](Self::deposit), then [`breaker_record`](Self::breaker_record).
    fn after_answer<'a>(
        &'a self,
        key: StoreKey<'a>,
        quota: Option<&'a RetryQuota>,
        breaker: Option<(&'a BreakerSettings, bool)>,
    ) -> StoreFuture<'a, Option<Recorded>> {
        Box::pin(async move {
            if let Some(quota) = quota {
                self.deposit(key.scope, quota).await?;
            }
            match breaker {
                Some((settings, probe)) => self.breaker_record(key, CallOutcome::Answered, probe, settings).await,
                None => Ok(None),
            }
        })
    }

    /// Takes in the rate limits a response of the target `key` stated, received now (each limit's
    /// `reset` counts from now on the store's clock), by the rules of the in-process pacer: a
    /// limit's size and rate are the server's, its level the lower of the store's and the
    /// server's. `false` when this store keeps no pacer.
    ///
    /// # Default
    ///
    /// `false`: this store keeps no pacer.
    fn pace_learn<'a>(&'a self, key: StoreKey<'a>, limits: &'a RateLimits) -> StoreFuture<'a, bool> {
        let _ = (key, limits);
        Box::pin(std::future::ready(Ok(false)))
    }

    /// Reserves `demand` in every limit the store knows for the target `key`, if the wait for them
    /// is shorter than `left` (the time before the caller's deadline, `None`: no deadline): the
    /// reservation, or why not (nothing reserved then). `None` when this store keeps no pacer or
    /// knows no limit of `key` (the process paces by its own then).
    ///
    /// # Default
    ///
    /// `None`: this store keeps no pacer.
    fn pace_reserve<'a>(
        &'a self,
        key: StoreKey<'a>,
        demand: &'a Demand,
        left: Option<Duration>,
    ) -> StoreFuture<'a, Option<Result<Reserved, PaceRefused>>> {
        let _ = (key, demand, left);
        Box::pin(std::future::ready(Ok(None)))
    }

    /// Reconciles a call of the target `key` that reserved `reserved` and used `used` (its
    /// counted tokens): each token limit gets `reserved - used` back (less than zero: takes more),
    /// up to its size. Requests are not given back: the call was sent.
    ///
    /// # Default
    ///
    /// Nothing: this store keeps no pacer.
    fn pace_settle<'a>(&'a self, key: StoreKey<'a>, reserved: &'a Demand, used: &'a Demand) -> StoreFuture<'a, ()> {
        let _ = (key, reserved, used);
        Box::pin(std::future::ready(Ok(())))
    }

    /// Reserves `needed` in the fleet's spend `account` (named by [`SpendAccount::name`], over
    /// its window on the store's clock) if what the window has used and holds leaves room for it,
    /// by the rules of [`AccountBook::reserve`](crate::storm::account::AccountBook::reserve): the
    /// reservation, or why not (nothing reserved then). `None` when this store keeps no accounts
    /// (each process keeps its own then).
    ///
    /// # Default
    ///
    /// `None`: this store keeps no accounts.
    fn account_reserve<'a>(
        &'a self,
        account: &'a SpendAccount,
        needed: Amounts,
    ) -> StoreFuture<'a, Option<Result<Held, AccountRefused>>> {
        let _ = (account, needed);
        Box::pin(std::future::ready(Ok(None)))
    }

    /// Settles a reservation `held` of the fleet's spend `account` to what the call `used`, by the
    /// rules of [`AccountBook::settle`](crate::storm::account::AccountBook::settle): the reservation leaves
    /// its window, and `used`, at most [`MAX_SETTLE_FACTOR`](crate::storm::account::MAX_SETTLE_FACTOR)
    /// times the reservation, counts in it.
    ///
    /// # Default
    ///
    /// Nothing: this store keeps no accounts.
    fn account_settle<'a>(&'a self, account: &'a SpendAccount, held: Held, used: Amounts) -> StoreFuture<'a, ()> {
        let _ = (account, held, used);
        Box::pin(std::future::ready(Ok(())))
    }
}

/// One target of a [`SharedStore`]: a model of a provider scope. Its cooldown, breaker and rate
/// limits are its own; its retry quota is its scope's.
///
/// # Examples
///
/// ```
/// use agentic_runtime::storm::store::StoreKey;
///
/// let key = StoreKey::new("openai:3f9a0c", "gpt-4o-mini");
/// assert_eq!(key.to_string(), "openai:3f9a0c/gpt-4o-mini");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StoreKey<'a> {
    /// The provider scope (endpoint and API key fingerprint).
    pub scope: &'a str,
    /// The model, `""` when the provider names none.
    pub model: &'a str,
}

impl<'a> StoreKey<'a> {
    /// The target `model` of `scope`.
    pub const fn new(scope: &'a str, model: &'a str) -> Self {
        Self { scope, model }
    }
}

impl std::fmt::Display for StoreKey<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.scope, self.model)
    }
}

/// What [`SharedStore::before_call`] came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct BeforeCall {
    /// The end of the target's cooldown, if one is set.
    pub cooldown_until: Option<SystemTime>,
    /// The breaker's admission, when one was asked and the store keeps breakers.
    pub admission: Option<SharedAdmission>,
    /// Whether the store's pacer knows a limit of the target: when not, the call neither reserves
    /// nor settles in the store (until this process or the next answer learns one).
    pub paces: bool,
}

impl BeforeCall {
    /// What a store answers: the cooldown's end, the admission, and whether it paces the target.
    pub const fn new(cooldown_until: Option<SystemTime>, admission: Option<SharedAdmission>, paces: bool) -> Self {
        Self { cooldown_until, admission, paces }
    }
}

/// What a [`SharedStore::try_withdraw`] came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Withdrawal {
    /// The retry may be sent (and was counted).
    pub granted: bool,
    /// Successful model calls in the window, before this withdrawal.
    pub successes: u64,
    /// Retries in the window, before this withdrawal.
    pub retries: u64,
}

/// A [`SharedStore`] that could not answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("shared store unavailable: {0}")]
pub struct StoreError(pub String);
